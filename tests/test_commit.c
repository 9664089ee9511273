/*
 * test_commit.c - commit objects, branches and commit_edits, on the memory store and on LMDB:
 *
 *   - commit encode/decode round trip; limits; every flipped byte, truncation and extension of a
 *     stored commit is PROLLY_ECORRUPT (never a crash), direct decoding of damaged bytes never
 *     crashes;
 *   - branch names; create/list/delete; BRANCH~N and hex ids; many commits read in one call;
 *   - commit_edits chains and log order.
 *
 * Commits racing on one branch: test_commit_race.c; merge bases and branch merges:
 * test_merge_base.c. Re-run one test: build/tests/test_commit NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- commit objects ------------------------------------------------------------------------ */

PT_TEST(commit_encode_decode_roundtrip)
{
	prolly_id tree = tm_fake_id(7), parents[3] = {tm_fake_id(1), tm_fake_id(2), tm_fake_id(3)}, id;
	const char *msgs[] = {"", "hello", "a longer message\nwith lines\tand tabs"};
	int64_t times[] = {0, 1, -5, INT64_MAX, INT64_MIN, 1700000000000000};
	prolly_buf b = PROLLY_BUF_INIT;
	for (size_t np = 0; np <= 3; np++) {
		for (size_t m = 0; m < 3; m++) {
			for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
				prolly_commit *c = NULL;
				PT_CHECK_RC(prolly__commit_encode(&b, &tree, parents, np, times[t], msgs[m]), 0);
				PT_CHECK(b.size == 53 + 32 * np + strlen(msgs[m]));
				PT_CHECK(memcmp(b.ptr, "PRLC", 4) == 0 && b.ptr[4] == 1);
				prolly__hash(&id, b.ptr, b.size);
				PT_CHECK_RC(prolly__commit_decode(&c, &id, b.ptr, b.size), 0);
				if (!c)
					continue;
				PT_CHECK(prolly_id_equal(&c->id, &id));
				PT_CHECK(prolly_id_equal(&c->tree, &tree));
				PT_CHECK(c->n_parents == np);
				for (size_t i = 0; i < np && i < c->n_parents; i++)
					PT_CHECK(prolly_id_equal(&c->parents[i], &parents[i]));
				PT_CHECK(c->time_us == times[t]);
				PT_CHECK(strcmp(c->message, msgs[m]) == 0);
				prolly_commit_free(c);
			}
		}
	}
	prolly_buf_dispose(&b);
	prolly_commit_free(NULL);
}

PT_TEST(commit_limits)
{
	prolly_id tree = tm_fake_id(7), parents[65];
	prolly_buf b = PROLLY_BUF_INIT;
	char *big = malloc(65537 + 1);
	PT_REQUIRE(big != NULL);
	for (int i = 0; i < 65; i++)
		parents[i] = tm_fake_id((unsigned char)(i + 1));
	memset(big, 'x', 65537);
	big[65537] = 0;
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, parents, 64, 1, "ok"), 0);
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, parents, 65, 1, "too many"), PROLLY_EINVAL);
	big[65536] = 0;
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, NULL, 0, 1, big), 0);
	big[65536] = 'x';
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, NULL, 0, 1, big), PROLLY_ETOOBIG);
	prolly_id dup[2] = {tm_fake_id(4), tm_fake_id(4)};
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, dup, 2, 1, "dup"), PROLLY_EINVAL);
	free(big);
	prolly_buf_dispose(&b);
}

/* Damaged bytes decoded directly: never a crash, and never "success" for a structural change. */
PT_TEST(commit_decode_damage)
{
	prolly_id tree = tm_fake_id(9), parents[2] = {tm_fake_id(1), tm_fake_id(2)}, id;
	prolly_buf b = PROLLY_BUF_INIT;
	PT_REQUIRE(prolly__commit_encode(&b, &tree, parents, 2, 123456, "message") == 0);
	prolly__hash(&id, b.ptr, b.size);
	unsigned char *copy = malloc(b.size + 8);
	PT_REQUIRE(copy != NULL);
	for (size_t len = 0; len < b.size; len++) { /* every truncation */
		prolly_commit *c = NULL;
		memcpy(copy, b.ptr, len);
		PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, len), PROLLY_ECORRUPT);
		prolly_commit_free(c);
	}
	for (size_t extra = 1; extra <= 8; extra++) { /* trailing bytes */
		prolly_commit *c = NULL;
		memcpy(copy, b.ptr, b.size);
		memset(copy + b.size, 0, extra);
		PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, b.size + extra), PROLLY_ECORRUPT);
		prolly_commit_free(c);
	}
	static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x20};
	for (size_t pos = 0; pos < b.size; pos++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			prolly_commit *c = NULL;
			memcpy(copy, b.ptr, b.size);
			copy[pos] ^= masks[m];
			int rc = prolly__commit_decode(&c, &id, copy, b.size);
			/* Flips inside ids, time and message bytes can still decode (the hash check catches
			 * them, see commit_stored_damage); header, counts and lengths must not. */
			int structural = pos < 5 || (pos >= 37 && pos < 41) || (pos >= 113 && pos < 117);
			if (structural)
				PT_CHECKF(rc == PROLLY_ECORRUPT || rc == PROLLY_EVERSION, "pos %zu mask %x rc %d",
				          pos, masks[m], rc);
			else
				PT_CHECKF(rc == 0 || rc == PROLLY_ECORRUPT, "pos %zu mask %x rc %d", pos, masks[m],
				          rc);
			prolly_commit_free(c);
		}
	}
	/* A newer version is PROLLY_EVERSION; a tree node is not a commit. */
	memcpy(copy, b.ptr, b.size);
	copy[4] = 2;
	prolly_commit *c = NULL;
	PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, b.size), PROLLY_EVERSION);
	memcpy(copy, "PRLY", 4);
	copy[4] = 1;
	PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, b.size), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "tree node") != NULL);
	/* A NUL inside the message. */
	memcpy(copy, b.ptr, b.size);
	copy[b.size - 3] = 0;
	PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, b.size), PROLLY_ECORRUPT);
	/* Two equal parents. */
	memcpy(copy, b.ptr, b.size);
	memcpy(copy + 73, copy + 41, 32);
	PT_CHECK_RC(prolly__commit_decode(&c, &id, copy, b.size), PROLLY_ECORRUPT);
	free(copy);
	prolly_buf_dispose(&b);
}

TM_BOTH_STORES(commit_create_read)
{
	tm_db t;
	prolly_id root, c1, c2, parents[1];
	prolly_commit *c = NULL;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_CHECK_RC(tm_commit_raw(&c1, t.db, &root, NULL, 0, 0, "first"), 0);
	parents[0] = c1;
	PT_CHECK_RC(tm_commit_raw(&c2, t.db, &root, parents, 1, 42, "second"), 0);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c1), 0);
	if (c) {
		PT_CHECK(c->n_parents == 0 && strcmp(c->message, "first") == 0);
		PT_CHECK(c->time_us > 1600000000000000LL); /* 0 means now */
		prolly_commit_free(c);
		c = NULL;
	}
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c2), 0);
	if (c) {
		PT_CHECK(c->n_parents == 1 && prolly_id_equal(&c->parents[0], &c1));
		PT_CHECK(c->time_us == 42 && prolly_id_equal(&c->tree, &root));
		PT_CHECK(prolly_id_equal(&c->id, &c2));
		prolly_commit_free(c);
		c = NULL;
	}
	/* Missing commit; a tree node is not a commit. */
	prolly_id none = tm_fake_id(0xab);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &none), PROLLY_ENOTFOUND);
	tm_model m;
	tm_model_init(&m);
	tm_model_put(&m, "k", 1, "v", 1);
	prolly_id tr;
	PT_CHECK_RC(tm_build_commit(&tr, t.db, &m), 0);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &tr), PROLLY_ECORRUPT);
	/* says what the object is, though a one-record leaf is shorter than a commit's header */
	PT_CHECKF(strstr(prolly_last_error(), "tree node, not a commit") != NULL, "%s",
	          prolly_last_error());
	/* and the other way round: a commit id where a tree goes */
	uint64_t cnt;
	PT_CHECK_RC(prolly_count(&cnt, t.db, &c2), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "a commit, not a tree node") != NULL, "%s",
	          prolly_last_error());
	tm_model_dispose(&m);
	/* A commit in an uncommitted txn is not published. */
	prolly_txn *txn = NULL;
	prolly_id c3;
	PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
	PT_CHECK_RC(prolly_commit_create(&c3, txn, &root, NULL, 0, 7, "never"), 0);
	prolly_txn_free(txn);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c3), PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

/* A commit's parents must be in the store: prolly_commit_create used to publish a commit over a
 * parent the store lacked (then log, merge-base, gc and sync failed on it later). Now that is
 * PROLLY_ENOTFOUND naming the parent, and nothing is made; a parent made in the same txn or read
 * as a head at the txn's epoch is known without a store call, any other one costs one call. */
PT_TEST(commit_parents_must_be_stored)
{
	prolly_db *db = tm_open_mem(64 << 20); /* memory store: get_ref_objects, so heads are seen */
	PT_REQUIRE(db);
	prolly_id root, head, a, b, out, none = tm_fake_id(0xcd);
	prolly_txn *txn = NULL;
	prolly_stats before = PROLLY_STATS_INIT, after = PROLLY_STATS_INIT;
	prolly_commit *c = NULL;
	char hex[PROLLY_ID_HEX_SIZE];
	int exists = 0;
	prolly_id_empty_tree(&root);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", &e, 1, "one") == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	/* absent: refused, named, out untouched */
	out = none;
	prolly_id parents[2] = {head, tm_fake_id(0xee)};
	PT_CHECK_RC(prolly_commit_create(&out, txn, &root, parents, 2, 0, "orphan"), PROLLY_ENOTFOUND);
	prolly_id_to_hex(hex, &parents[1]);
	PT_CHECKF(strstr(prolly_last_error(), hex) != NULL, "%s", prolly_last_error());
	PT_CHECK(prolly_id_equal(&out, &none));
	/* made in this txn, read as a head at its epoch: no store call */
	PT_REQUIRE(prolly__txn_read_head(txn, "refs/heads/main", &a, &exists, &c) == 0 && exists);
	prolly_commit_free(c);
	c = NULL;
	PT_REQUIRE(prolly_commit_create(&a, txn, &root, &head, 1, 0, "two") == 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	parents[0] = a;
	parents[1] = head;
	PT_CHECK_RC(prolly_commit_create(&b, txn, &root, parents, 2, 0, "three"), 0);
	PT_REQUIRE(prolly_db_stats(db, &after) == 0);
	PT_CHECKF(after.store_reads == before.store_reads, "%llu store reads",
	          (unsigned long long)(after.store_reads - before.store_reads));
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	txn = NULL;
	/* stored, not seen by this handle's txn: one call */
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	PT_CHECK_RC(prolly_commit_create(&out, txn, &root, &b, 1, 0, "four"), 0);
	PT_REQUIRE(prolly_db_stats(db, &after) == 0);
	PT_CHECK(after.store_reads == before.store_reads + 1);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	PT_CHECK_RC(prolly_commit_read(&c, db, &out), 0);
	prolly_commit_free(c);
	c = NULL;
	/* a commit this handle's txn moved a branch to (T11 of txn.c): known without a call, in the
	 * next txn; a commit it made and moved no ref to is not */
	prolly_id d, f, g;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_commit_create(&d, txn, &root, &head, 1, 0, "five") == 0);
	PT_REQUIRE(prolly_commit_create(&f, txn, &root, &d, 1, 0, "six") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", &head, &d) == 0);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	PT_CHECK_RC(prolly_commit_create(&g, txn, &root, &d, 1, 0, "seven"), 0);
	PT_REQUIRE(prolly_db_stats(db, &after) == 0);
	PT_CHECKF(after.store_reads == before.store_reads, "%llu store reads",
	          (unsigned long long)(after.store_reads - before.store_reads));
	PT_CHECK_RC(prolly_commit_create(&g, txn, &root, &f, 1, 0, "eight"), 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	PT_CHECK(before.store_reads == after.store_reads + 1);
	prolly_txn_free(txn);
	/* a merge of two branches: both parents are heads it read in its txn, so it makes as many
	 * counted store calls as before parents were checked (the three commits, the base's tree) */
	prolly_id m;
	prolly_edit e2 = {PROLLY_PUT, {"j", 1}, {"w", 1}};
	PT_REQUIRE(prolly_branch_create(db, "dev", &out) == 0);
	PT_REQUIRE(prolly_commit_edits(&m, db, "dev", &e2, 1, "dev") == 0);
	PT_REQUIRE(prolly_commit_edits(&m, db, "main", &e, 1, "main") == 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	PT_CHECK_RC(prolly_merge_branches(&m, NULL, db, "main", "dev", NULL, NULL), 0);
	PT_REQUIRE(prolly_db_stats(db, &after) == 0);
	PT_CHECKF(after.store_reads - before.store_reads == 2, "%llu store reads",
	          (unsigned long long)(after.store_reads - before.store_reads));
	PT_CHECK_RC(prolly_commit_read(&c, db, &m), 0);
	PT_CHECK(c && c->n_parents == 2);
	prolly_commit_free(c);
	prolly_close(db);
}

/* A parent must be a commit, not just an object of the store: prolly_commit_create used to ask
 * the store only whether a parent's id was there, so a tree id given as a parent made (and a
 * branch move published) a commit whose history log, merge-base and verify --history then
 * reported as a corrupt commit. Now a stored tree is PROLLY_EINVAL naming it, nothing is made,
 * and a stored parent still costs one store call. */
PT_TEST(commit_parents_must_be_commits)
{
	prolly_db *db = tm_open_mem(64 << 20);
	PT_REQUIRE(db);
	prolly_id head, tree, fresh, out, none = tm_fake_id(0xcd);
	prolly_txn *txn = NULL;
	prolly_commit *c = NULL;
	prolly_stats before = PROLLY_STATS_INIT, after = PROLLY_STATS_INIT;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	prolly_edit e2 = {PROLLY_PUT, {"j", 1}, {"w", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", &e, 1, "one") == 0);
	PT_REQUIRE(prolly_commit_read(&c, db, &head) == 0);
	tree = c->tree;
	prolly_commit_free(c);
	c = NULL;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	/* a stored tree */
	out = none;
	PT_CHECK_RC(prolly_commit_create(&out, txn, &tree, &tree, 1, 0, "over a tree"), PROLLY_EINVAL);
	prolly_id_to_hex(hex, &tree);
	PT_CHECKF(strstr(prolly_last_error(), hex) != NULL, "%s", prolly_last_error());
	PT_CHECK(prolly_id_equal(&out, &none));
	/* a tree made in this txn: not in the store yet, refused as an absent parent */
	PT_REQUIRE(prolly_edit_tree(&fresh, txn, &tree, &e2, 1) == 0);
	PT_CHECK_RC(prolly_commit_create(&out, txn, &tree, &fresh, 1, 0, "over a new tree"),
	            PROLLY_ENOTFOUND);
	PT_CHECK(prolly_id_equal(&out, &none));
	prolly_txn_free(txn);
	txn = NULL;
	/* a stored commit not seen by the txn: still one store call */
	prolly_db_cache_clear(db);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_db_stats(db, &before) == 0);
	PT_CHECK_RC(prolly_commit_create(&out, txn, &tree, &head, 1, 0, "two"), 0);
	PT_REQUIRE(prolly_db_stats(db, &after) == 0);
	PT_CHECKF(after.store_reads <= before.store_reads + 1, "%llu store reads",
	          (unsigned long long)(after.store_reads - before.store_reads));
	prolly_txn_free(txn);
	prolly_close(db);
}

static int count_commit(void *payload, const prolly_commit *c)
{
	(void)payload;
	(void)c;
	return 0;
}

/* Every flipped bit pattern, truncation and extension of a stored commit: PROLLY_ECORRUPT. */
TM_BOTH_STORES(commit_stored_damage)
{
	tm_db t;
	prolly_id root, p, c1;
	prolly_commit *c = NULL;
	prolly_buf b = PROLLY_BUF_INIT;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_REQUIRE(tm_commit_raw(&p, t.db, &root, NULL, 0, 5, "parent") == 0);
	PT_REQUIRE(tm_commit_raw(&c1, t.db, &root, &p, 1, 6, "the child commit") == 0);
	PT_REQUIRE(prolly__commit_encode(&b, &root, &p, 1, 6, "the child commit") == 0);
	t.tap->target = c1;
	t.tap->mode = TM_TAP_FLIP;
	static const unsigned char masks[] = {0x01, 0x10, 0x80, 0xff};
	for (size_t pos = 0; pos < b.size; pos++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			t.tap->pos = pos;
			t.tap->mask = masks[m];
			int rc = prolly_commit_read(&c, t.db, &c1);
			PT_CHECKF(rc == PROLLY_ECORRUPT, "pos %zu mask %x rc %d", pos, masks[m], rc);
			if (!rc)
				prolly_commit_free(c);
			c = NULL;
		}
	}
	t.tap->mode = TM_TAP_TRUNCATE;
	for (size_t len = 0; len < b.size; len++) {
		t.tap->pos = len;
		PT_CHECK_RC(prolly_commit_read(&c, t.db, &c1), PROLLY_ECORRUPT);
	}
	t.tap->mode = TM_TAP_EXTEND;
	t.tap->pos = 3;
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c1), PROLLY_ECORRUPT);
	{
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, &c1);
		PT_CHECK(strstr(prolly_last_error(), hex) != NULL); /* names the commit */
	}
	/* Walks over a damaged commit fail too, never silently skip it. */
	t.tap->mode = TM_TAP_FLIP;
	t.tap->pos = 10;
	t.tap->mask = 1;
	PT_CHECK_RC(prolly_branch_create(t.db, "b", &p), 0);
	PT_CHECK_RC(prolly_log(t.db, &c1, count_commit, NULL), PROLLY_ECORRUPT);
	prolly_id base;
	PT_CHECK_RC(prolly_merge_base(&base, t.db, &c1, &p), PROLLY_ECORRUPT);
	t.tap->mode = TM_TAP_PASS;
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c1), 0);
	prolly_commit_free(c);
	prolly_buf_dispose(&b);
	tm_db_close(&t);
}

/* prolly_next_commit_time, the time the CLI and the SQL functions give their commits: the
 * handle's clock, or one past the newest parent when that is not earlier (BR2). */
PT_TEST(next_commit_time)
{
	prolly_db *db = tm_open_mem(0);
	PT_REQUIRE(db);
	prolly_commit a, b, top;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&top, 0, sizeof(top));
	a.time_us = 500;
	b.time_us = 2000;
	top.time_us = INT64_MAX;
	const prolly_commit *ab[] = {&a, &b}, *one[] = {&a}, *gap[] = {NULL, &b}, *max[] = {&top};
	db->opts.clock_us = 1000;
	PT_CHECK(prolly_next_commit_time(db, NULL, 0) == 1000);
	PT_CHECK(prolly_next_commit_time(db, one, 1) == 1000);
	PT_CHECK(prolly_next_commit_time(db, ab, 2) == 2001);
	PT_CHECK(prolly_next_commit_time(db, gap, 2) == 2001);
	PT_CHECK(prolly_next_commit_time(db, max, 1) == INT64_MAX);
	db->opts.clock_us = 2000;
	PT_CHECK(prolly_next_commit_time(db, ab, 2) == 2001);
	db->opts.clock_us = 2002;
	PT_CHECK(prolly_next_commit_time(db, ab, 2) == 2002);
	/* The wall clock: with clock_us 0, and for no handle at all. */
	db->opts.clock_us = 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t before = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	int64_t t1 = prolly_next_commit_time(db, ab, 2), t2 = prolly_next_commit_time(NULL, one, 1);
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t after = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	PT_CHECK(t1 >= before && t1 <= after && t2 >= t1 && t2 <= after);
	PT_CHECK(prolly_next_commit_time(NULL, max, 1) == INT64_MAX);
	prolly_close(db);
}

/* ---- branches ------------------------------------------------------------------------------ */

/* prolly_branch_commit: head, commit and root in one store call where the store can (the memory
 * store implements get_ref_objects; the tap and LMDB stores take the three reads in turn), the
 * same answers either way, and the root left in the cache. */
static void branch_tree_check(prolly_db *db, int fast)
{
	prolly_id c1, c2, head, tree, want_tree;
	PT_REQUIRE(tm_commit_put(&c1, db, "bt", "a", "1", "one") == 0);
	/* a second level: enough records that the tree has a root above its leaves */
	prolly_edit e[2000];
	char keys[2000][16];
	for (int i = 0; i < 2000; i++) {
		snprintf(keys[i], sizeof keys[i], "key%05d", i);
		e[i].op = PROLLY_PUT;
		e[i].key.data = keys[i];
		e[i].key.size = strlen(keys[i]);
		e[i].value.data = "some value that takes room";
		e[i].value.size = 26;
	}
	PT_REQUIRE(prolly_commit_edits(&c2, db, "bt", e, 2000, "many") == 0);
	prolly_commit *cm = NULL;
	PT_REQUIRE(prolly_commit_read(&cm, db, &c2) == 0);
	want_tree = cm->tree;
	prolly_commit_free(cm);

	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	prolly_commit *hc = NULL;
	PT_CHECK_RC(prolly_branch_commit(&hc, db, "bt"), 0);
	PT_REQUIRE(hc);
	PT_CHECK(prolly_id_equal(&hc->id, &c2) && prolly_id_equal(&hc->tree, &want_tree));
	PT_CHECK(hc->n_parents == 1 && prolly_id_equal(&hc->parents[0], &c1));
	PT_CHECK(strcmp(hc->message, "many") == 0);
	head = hc->id;
	tree = hc->tree;
	prolly_commit_free(hc);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_round_trips == (fast ? 1u : 2u), "%llu round trips",
	          (unsigned long long)s.store_round_trips);
	/* the root is cached after the fast path: a get reads only the leaf */
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_get(&v, db, &tree, "key01000", 8), 0);
	PT_CHECK(v.size == 26);
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_reads == (fast ? 1u : 2u), "%llu store reads",
	          (unsigned long long)s.store_reads);
	prolly_buf_dispose(&v);

	hc = (prolly_commit *)&v; /* must be set to NULL on failure */
	PT_CHECK_RC(prolly_branch_commit(&hc, db, "nope"), PROLLY_ENOTFOUND);
	PT_CHECK(hc == NULL && strstr(prolly_last_error(), "no branch 'nope'") != NULL);
	PT_CHECK_RC(prolly_branch_commit(&hc, db, "-bad"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_branch_commit(NULL, db, "bt"), PROLLY_EINVAL);
	PT_CHECK(prolly_id_equal(&head, &c2));
}

PT_TEST(branch_commit_fast_and_fallback)
{
	prolly_db *db = tm_open_mem(64 << 20); /* memory store: get_ref_objects */
	PT_REQUIRE(db);
	branch_tree_check(db, 1);
	prolly_close(db);
	tm_db t;
	PT_REQUIRE(tm_db_open(&t, 1, "commit", 1, 0, 0) == 0); /* LMDB through the tap: three reads */
	branch_tree_check(t.db, 0);
	tm_db_close(&t);
}

/* prolly_commits_read: many commits in one store call, duplicates in place; an absent one or a
 * node that is not a commit fails the whole call with every out[i] NULL. */
PT_TEST(commits_read_many_in_one_call)
{
	enum { N = 50 };
	prolly_db *db = tm_open_mem(64 << 20);
	PT_REQUIRE(db);
	prolly_id ids[N + 2], tree;
	prolly_commit *c[N + 2];
	char key[16];
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%03d", i);
		prolly_edit e = {PROLLY_PUT, {key, strlen(key)}, {"v", 1}};
		PT_REQUIRE(prolly_commit_edits(&ids[i], db, "main", &e, 1, key) == 0);
	}
	ids[N] = ids[3]; /* a duplicate */
	ids[N + 1] = ids[0];
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_commits_read(c, db, ids, N + 2), 0);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_reads == 1, "%llu store reads", (unsigned long long)s.store_reads);
	for (int i = 0; i < N + 2; i++) {
		PT_REQUIRE(c[i]);
		int at = i == N ? 3 : i == N + 1 ? 0 : i;
		snprintf(key, sizeof(key), "k%03d", at);
		PT_CHECK(prolly_id_equal(&c[i]->id, &ids[i]) && strcmp(c[i]->message, key) == 0);
		PT_CHECK(c[i]->n_parents == (at ? 1u : 0u));
		if (i == N - 1)
			tree = c[i]->tree;
		prolly_commit_free(c[i]);
	}
	/* an absent commit: PROLLY_ENOTFOUND naming it, nothing returned */
	prolly_id saved = ids[7];
	char hex[PROLLY_ID_HEX_SIZE];
	ids[7] = tm_fake_id(77);
	prolly_id_to_hex(hex, &ids[7]);
	memset(c, 0xab, sizeof(c));
	PT_CHECK_RC(prolly_commits_read(c, db, ids, N), PROLLY_ENOTFOUND);
	PT_CHECK(strstr(prolly_last_error(), hex) != NULL);
	for (int i = 0; i < N; i++)
		PT_CHECK(c[i] == NULL);
	/* a tree node is not a commit */
	ids[7] = tree;
	memset(c, 0xab, sizeof(c));
	PT_CHECK_RC(prolly_commits_read(c, db, ids, N), PROLLY_ECORRUPT);
	for (int i = 0; i < N; i++)
		PT_CHECK(c[i] == NULL);
	ids[7] = saved;
	PT_CHECK_RC(prolly_commits_read(c, db, ids, 0), 0);
	PT_CHECK_RC(prolly_commits_read(NULL, db, ids, 1), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_commits_read(c, db, NULL, 1), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_commits_read(c, NULL, ids, 1), PROLLY_EINVAL);
	prolly_close(db);
}

/* A memory store whose main has one commit (k = v): its id in *head, its tree in *tree. */
static prolly_db *one_commit(prolly_id *head, prolly_id *tree)
{
	prolly_db *db = tm_open_mem(64 << 20);
	prolly_commit *c = NULL;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	if (!db || prolly_commit_edits(head, db, "main", &e, 1, "one") ||
	    prolly_commit_read(&c, db, head)) {
		prolly_close(db);
		return NULL;
	}
	*tree = c->tree;
	prolly_commit_free(c);
	return db;
}

/* A branch, a tag or a reset given a tree id where the commit goes: bad input (PROLLY_EINVAL,
 * "is a tree, not a commit"), as prolly_resolve says of such an id, not PROLLY_ECORRUPT: the
 * store is sound, the caller passed the wrong id. They used to read the tree as a commit and
 * report "commit ... is corrupt: shorter than the fixed header". Nothing is created or moved. */
PT_TEST(ref_moves_refuse_a_tree_id)
{
	prolly_id head, tree, old, cur;
	prolly_db *db = one_commit(&head, &tree);
	PT_REQUIRE(db);
	PT_CHECK_RC(prolly_branch_create(db, "b", &tree), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a tree, not a commit") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(NULL, db, "b"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_tag_create(db, "t", &tree), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a tree, not a commit") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_tag_get(NULL, db, "t"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_reset(&old, db, "main", &tree), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a tree, not a commit") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(&cur, db, "main"), 0);
	PT_CHECK(prolly_id_equal(&cur, &head));
	prolly_close(db);
}

static int count_value(void *payload, const prolly_commit *c, const void *value, size_t vlen)
{
	(void)c, (void)value, (void)vlen;
	++*(int *)payload;
	return 0;
}

static int newest_entry(void *payload, const prolly_reflog_entry *e)
{
	*(prolly_id *)payload = e->id;
	return 1; /* the newest is enough */
}

/* The history walks given a tree id, or a reflog entry's, where the commit goes: bad input
 * (PROLLY_EINVAL, "is a tree, not a commit"), as the ref moves above say. prolly_log,
 * prolly_key_history and prolly_merge_base read it through the commit graph, whose decoder
 * reported "commit ... is corrupt: it is a tree node, not a commit", PROLLY_ECORRUPT: damage,
 * on a sound store. */
PT_TEST(history_walks_refuse_a_tree_id)
{
	prolly_id head, tree, entry, base;
	int n = 0;
	prolly_db *db = one_commit(&head, &tree);
	PT_REQUIRE(db);
	PT_REQUIRE(prolly_reflog(db, "main", newest_entry, &entry) == 1);
	const prolly_id *bad[] = {&tree, &entry};
	const char *kind[] = {"is a tree, not a commit", "is a reflog entry, not a commit"};
	for (int i = 0; i < 2; i++) {
		PT_CHECK_RC(prolly_log(db, bad[i], count_commit, NULL), PROLLY_EINVAL);
		PT_CHECKF(strstr(prolly_last_error(), kind[i]) != NULL, "%s", prolly_last_error());
		PT_CHECK_RC(prolly_key_history(db, bad[i], "k", 1, count_value, &n), PROLLY_EINVAL);
		PT_CHECKF(strstr(prolly_last_error(), kind[i]) != NULL, "%s", prolly_last_error());
		PT_CHECK_RC(prolly_merge_base(&base, db, &head, bad[i]), PROLLY_EINVAL);
		PT_CHECKF(strstr(prolly_last_error(), kind[i]) != NULL, "%s", prolly_last_error());
		PT_CHECK_RC(prolly_merge_base(&base, db, bad[i], &head), PROLLY_EINVAL);
		PT_CHECKF(strstr(prolly_last_error(), kind[i]) != NULL, "%s", prolly_last_error());
	}
	PT_CHECK(n == 0);
	/* the walks of a commit are untouched */
	PT_CHECK_RC(prolly_log(db, &head, count_commit, NULL), 0);
	PT_CHECK_RC(prolly_merge_base(&base, db, &head, &head), 0);
	PT_CHECK(prolly_id_equal(&base, &head));
	prolly_close(db);
}

PT_TEST(branch_names)
{
	const char *good[] = {"main",  "a",     "feature/x", "v1.2.3", "a-b_c",
	                      "UPPER", "x/y/z", "a.b",       "0"};
	const char *bad[] = {"",    "-x",  "/x", "a..b", "..", "a~1",
	                     "a b", "a:b", "é",  "a\tb", "a*", "a?"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		PT_CHECKF(prolly_branch_name_valid(good[i]) == 0, "'%s': %s", good[i], prolly_last_error());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		PT_CHECKF(prolly_branch_name_valid(bad[i]) == PROLLY_EINVAL, "'%s' accepted", bad[i]);
	PT_CHECK(prolly_branch_name_valid(NULL) == PROLLY_EINVAL);
	char name[202];
	memset(name, 'n', sizeof(name));
	name[200] = 0;
	PT_CHECK(prolly_branch_name_valid(name) == 0);
	name[200] = 'n';
	name[201] = 0;
	PT_CHECK(prolly_branch_name_valid(name) == PROLLY_EINVAL);
}

/* A bad tag name is refused in words about a tag: a 201-byte name, "..", a space, a leading '-'
 * and 64 hex digits each said "branch name '...'" (the tag path checked it with the branch
 * rule's message), so `prolly tag` told a user typing a tag that a branch was wrong. */
PT_TEST(tag_names_say_tag)
{
	prolly_db *db = tm_open_mem(64 << 20);
	PT_REQUIRE(db);
	prolly_id head;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", &e, 1, "one") == 0);
	char name[202], hex64[65];
	memset(hex64, 'a', 64);
	hex64[64] = 0;
	memset(name, 't', sizeof(name));
	name[200] = 0;
	PT_CHECK(prolly_tag_name_valid(name) == 0);
	name[200] = 't';
	name[201] = 0;
	const char *bad[] = {name, "a..b", "a b", "-t", "", hex64};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		PT_CHECK_RC(prolly_tag_name_valid(bad[i]), PROLLY_EINVAL);
		const char *m = prolly_last_error();
		PT_CHECKF(strstr(m, "tag name") && !strstr(m, "branch"), "'%.20s': %s", bad[i], m);
		PT_CHECK_RC(prolly_tag_create(db, bad[i], &head), PROLLY_EINVAL);
		m = prolly_last_error();
		PT_CHECKF(strstr(m, "tag name") && !strstr(m, "branch"), "'%.20s': %s", bad[i], m);
	}
	PT_CHECK_RC(prolly_tag_get(NULL, db, name), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "tag name '") &&
	              strstr(prolly_last_error(), "has 201 bytes; at most 200"),
	          "%s", prolly_last_error());
	PT_CHECK_RC(prolly_tag_delete(NULL, db, "x y"), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "tag name 'x y' holds byte 0x20"), "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_name_valid(name), PROLLY_EINVAL); /* branches keep their words */
	PT_CHECKF(strstr(prolly_last_error(), "branch name '"), "%s", prolly_last_error());
	prolly_close(db);
}

typedef struct names_seen {
	char names[8][32];
	prolly_id ids[8];
	int n;
} names_seen;

static int on_branch(void *payload, const char *name, const prolly_id *commit)
{
	names_seen *s = payload;
	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		s->ids[s->n] = *commit;
	}
	s->n++;
	return 0;
}

TM_BOTH_STORES(branch_create_list_delete)
{
	tm_db t;
	prolly_id root, c1, c2, h;
	names_seen s;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_REQUIRE(tm_commit_raw(&c1, t.db, &root, NULL, 0, 1, "one") == 0);
	PT_REQUIRE(tm_commit_raw(&c2, t.db, &root, &c1, 1, 2, "two") == 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "main", &c2), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "feature/a", &c1), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "dev", &c2), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "main", &c1), PROLLY_ECONFLICT);
	PT_CHECK(strstr(prolly_last_error(), "main") != NULL);
	PT_CHECK_RC(prolly_branch_create(t.db, "bad..name", &c1), PROLLY_EINVAL);
	prolly_id none = tm_fake_id(0x55);
	PT_CHECK_RC(prolly_branch_create(t.db, "ghost", &none), PROLLY_ENOTFOUND);
	/* A non-branch ref is not listed. */
	{
		prolly_txn *txn = NULL;
		prolly_ref_update u;
		memset(&u, 0, sizeof(u));
		u.name = "refs/tags/v1";
		u.value = c1;
		PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
		PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
		prolly_txn_free(txn);
	}
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(prolly_branch_list(t.db, on_branch, &s), 0);
	PT_CHECK(s.n == 3);
	PT_CHECK(strcmp(s.names[0], "dev") == 0 && strcmp(s.names[1], "feature/a") == 0 &&
	         strcmp(s.names[2], "main") == 0);
	PT_CHECK(prolly_id_equal(&s.ids[1], &c1) && prolly_id_equal(&s.ids[2], &c2));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "feature/a"), 0);
	PT_CHECK(prolly_id_equal(&h, &c1));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "nope"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_delete(t.db, "dev"), 0);
	PT_CHECK_RC(prolly_branch_delete(t.db, "dev"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "dev"), PROLLY_ENOTFOUND);
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(prolly_branch_list(t.db, on_branch, &s), 0);
	PT_CHECK(s.n == 2);
	/* The commit survives its branch; the branch can be made again. */
	PT_CHECK_RC(prolly_branch_create(t.db, "dev", &c2), 0);
	/* txn_move_branch: CAS from an expected head. */
	{
		prolly_txn *txn = NULL;
		PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
		PT_CHECK_RC(prolly_txn_move_branch(txn, "dev", &c1, &c1), 0); /* wrong expectation */
		prolly_ref_update conf;
		memset(&conf, 0, sizeof(conf));
		PT_CHECK_RC(prolly_txn_commit(txn, &conf, 1), PROLLY_ECONFLICT);
		PT_CHECK(conf.conflict && conf.current_exists && prolly_id_equal(&conf.current, &c2));
		prolly_txn_free(txn);
		PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
		PT_CHECK_RC(prolly_txn_move_branch(txn, "dev", &c2, &c1), 0);
		PT_CHECK_RC(prolly_txn_move_branch(txn, "x~", &c2, &c1), PROLLY_EINVAL);
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
		prolly_txn_free(txn);
		PT_CHECK_RC(prolly_branch_head(&h, t.db, "dev"), 0);
		PT_CHECK(prolly_id_equal(&h, &c1));
	}
	tm_db_close(&t);
}

TM_BOTH_STORES(resolve_specs)
{
	tm_db t;
	prolly_id c[6], r;
	char spec[128], hex[PROLLY_ID_HEX_SIZE];
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	for (int i = 0; i < 6; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		PT_REQUIRE(tm_commit_put(&c[i], t.db, "main", k, "v", k) == 0);
	}
	PT_CHECK_RC(prolly_resolve(&r, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&r, &c[5]));
	for (int n = 0; n < 6; n++) {
		snprintf(spec, sizeof(spec), "main~%d", n);
		PT_CHECK_RC(prolly_resolve(&r, t.db, spec), 0);
		PT_CHECKF(prolly_id_equal(&r, &c[5 - n]), "%s", spec);
	}
	PT_CHECK_RC(prolly_resolve(&r, t.db, "main~6"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&r, t.db, "main~99999"), PROLLY_ENOTFOUND);
	prolly_id_to_hex(hex, &c[2]);
	PT_CHECK_RC(prolly_resolve(&r, t.db, hex), 0);
	PT_CHECK(prolly_id_equal(&r, &c[2]));
	snprintf(spec, sizeof(spec), "%s~2", hex);
	PT_CHECK_RC(prolly_resolve(&r, t.db, spec), 0);
	PT_CHECK(prolly_id_equal(&r, &c[0]));
	for (char *p = hex; *p; p++) /* upper case works too */
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	PT_CHECK_RC(prolly_resolve(&r, t.db, hex), 0);
	PT_CHECK(prolly_id_equal(&r, &c[2]));
	prolly_id none = tm_fake_id(0x42);
	prolly_id_to_hex(hex, &none);
	PT_CHECK_RC(prolly_resolve(&r, t.db, hex), PROLLY_ENOTFOUND);
	const char *bad[] = {"",       "~1",      "main~",
	                     "main~x", "main~1x", "main~-1",
	                     "ma in",  "main~1~", "main~99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		PT_CHECKF(prolly_resolve(&r, t.db, bad[i]) == PROLLY_EINVAL, "'%s'", bad[i]);
	PT_CHECK_RC(prolly_resolve(&r, t.db, "nobranch"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&r, t.db, "nobranch~1"), PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

/* ---- commit_edits and log ------------------------------------------------------------------ */

typedef struct log_seen {
	prolly_id ids[64];
	int64_t times[64];
	char msgs[64][32];
	int n;
	int stop_at; /* return 7 at this index (-1 never) */
} log_seen;

static int on_log(void *payload, const prolly_commit *c)
{
	log_seen *s = payload;
	if (s->n < 64) {
		s->ids[s->n] = c->id;
		s->times[s->n] = c->time_us;
		snprintf(s->msgs[s->n], sizeof(s->msgs[0]), "%s", c->message);
	}
	if (s->n++ == s->stop_at)
		return 7;
	return 0;
}

TM_BOTH_STORES(commit_edits_chain_and_log)
{
	tm_db t;
	prolly_id c[20], h;
	log_seen s;
	char buf[64];
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	for (int i = 0; i < 20; i++) {
		char k[16], v[16], m[32];
		snprintf(k, sizeof(k), "key%02d", i);
		snprintf(v, sizeof(v), "val%02d", i);
		snprintf(m, sizeof(m), "commit %d", i);
		PT_REQUIRE(tm_commit_put(&c[i], t.db, "main", k, v, m) == 0);
	}
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c[19]));
	for (int i = 0; i < 20; i++) { /* every commit's tree holds keys 0..i only */
		char k[16];
		snprintf(k, sizeof(k), "key%02d", i);
		PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &c[19], k), 0);
		PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &c[i], k), 0);
		if (i > 0)
			PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &c[i - 1], k), PROLLY_ENOTFOUND);
	}
	memset(&s, 0, sizeof(s));
	s.stop_at = -1;
	PT_CHECK_RC(prolly_log(t.db, &h, on_log, &s), 0);
	PT_CHECK(s.n == 20);
	for (int i = 0; i < 20 && i < s.n; i++) {
		PT_CHECK(prolly_id_equal(&s.ids[i], &c[19 - i]));
		char m[32];
		snprintf(m, sizeof(m), "commit %d", 19 - i);
		PT_CHECK(strcmp(s.msgs[i], m) == 0);
		if (i)
			PT_CHECK(s.times[i] < s.times[i - 1]); /* strictly newer than the parent */
	}
	/* The callback stops the walk with its own value. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 3;
	PT_CHECK_RC(prolly_log(t.db, &h, on_log, &s), 7);
	PT_CHECK(s.n == 4);
	/* The log of a missing commit is PROLLY_ENOTFOUND. */
	prolly_id none = tm_fake_id(0x77);
	PT_CHECK_RC(prolly_log(t.db, &none, on_log, &s), PROLLY_ENOTFOUND);
	/* Deleting and the empty edit list. */
	prolly_edit e;
	memset(&e, 0, sizeof(e));
	e.op = PROLLY_DEL;
	e.key.data = "key05";
	e.key.size = 5;
	prolly_id d, z;
	PT_CHECK_RC(prolly_commit_edits(&d, t.db, "main", &e, 1, "delete"), 0);
	PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &d, "key05"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_commit_edits(&z, t.db, "main", NULL, 0, NULL), 0);
	prolly_commit *zc = NULL, *dc = NULL;
	PT_CHECK_RC(prolly_commit_read(&zc, t.db, &z), 0);
	PT_CHECK_RC(prolly_commit_read(&dc, t.db, &d), 0);
	if (zc && dc) {
		PT_CHECK(prolly_id_equal(&zc->tree, &dc->tree));
		PT_CHECK(zc->n_parents == 1 && prolly_id_equal(&zc->parents[0], &d));
		PT_CHECK(strcmp(zc->message, "") == 0);
	}
	prolly_commit_free(zc);
	prolly_commit_free(dc);
	/* Oversized edits change nothing. */
	static char bigkey[PROLLY_MAX_KEY + 1];
	e.op = PROLLY_PUT;
	e.key.data = bigkey;
	e.key.size = sizeof(bigkey);
	PT_CHECK_RC(prolly_commit_edits(&d, t.db, "main", &e, 1, "big"), PROLLY_ETOOBIG);
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &z));
	PT_CHECK_RC(prolly_commit_edits(&d, t.db, "bad name", &e, 1, "x"), PROLLY_EINVAL);
	tm_db_close(&t);
}

/* H5 (head_memo.c) on LMDB, two handles on one store: a handle's next commit of a branch
 * builds on its own last one without reading the ref (one store call: the write), a commit of the
 * other handle in between makes the guess lose and the commit land on top of it (nothing lost,
 * history linear), and a gc in between makes it lose too. */
PT_TEST(commit_edits_guess_two_handles_lmdb)
{
	tm_db t;
	prolly_store *st2 = NULL;
	prolly_db *o = NULL;
	prolly_id c[6], h;
	char buf[64];
	int rc;
	PT_REQUIRE(tm_db_open(&t, 1, "guess", 0, 0, 0) == 0);
	PT_REQUIRE(prolly_store_lmdb_open(&st2, t.dir, 0) == 0 && prolly_db_new(&o, st2, NULL) == 0);
	unsigned long long calls = tm_commit_put_trips(&c[0], t.db, "main", "a", "1", &rc);
	PT_CHECKF(rc == 0 && calls == 2, "first commit: %d, %llu store calls", rc, calls);
	calls = tm_commit_put_trips(&c[1], t.db, "main", "b", "2", &rc);
	PT_CHECKF(rc == 0 && calls == 1, "second commit: %d, %llu store calls", rc, calls);
	PT_REQUIRE(tm_commit_put(&c[2], o, "main", "o", "other", "o") == 0);
	calls = tm_commit_put_trips(&c[3], t.db, "main", "c", "3", &rc);
	PT_CHECKF(rc == 0 && calls >= 3, "after the other's commit: %d, %llu store calls", rc, calls);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(prolly_gc(o, &res) == 0);
	PT_CHECK_RC(tm_commit_put(&c[4], t.db, "main", "d", "4", "d"), 0);
	PT_CHECK_RC(tm_commit_put(&c[5], t.db, "main", "e", "5", "e"), 0);
	PT_CHECK_RC(prolly_branch_head(&h, o, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c[5]));
	for (int i = 5; i > 0; i--) { /* linear: each commit's parent is the one before */
		prolly_commit *cm = NULL;
		PT_REQUIRE(prolly_commit_read(&cm, o, &c[i]) == 0);
		PT_CHECK(cm->n_parents == 1 && prolly_id_equal(&cm->parents[0], &c[i - 1]));
		prolly_commit_free(cm);
	}
	const char *keys[] = {"a", "b", "o", "c", "d", "e"};
	for (int i = 0; i < 6; i++)
		PT_CHECK_RC(tm_value_at(buf, sizeof(buf), o, &c[5], keys[i]), 0);
	prolly_close(o);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
