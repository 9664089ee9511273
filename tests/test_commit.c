/*
 * test_commit.c - commit objects, branches, history walks and branch merges, on the memory store
 * and on LMDB:
 *
 *   - commit encode/decode round trip; limits; every flipped byte, truncation and extension of a
 *     stored commit is PROLLY_ECORRUPT (never a crash), direct decoding of damaged bytes never
 *     crashes;
 *   - branch names; create/list/delete; BRANCH~N and hex ids;
 *   - commit_edits chains and log order; 8 threads committing to one branch (losers get
 *     PROLLY_ECONFLICT with the winner's head; retries end with every edit present and linear
 *     history);
 *   - merge_base on linear, forked, criss-cross, skewed-depth and disjoint histories;
 *   - merge_branches: nothing to do, fast-forward, clean merge, conflict (nothing written).
 *
 * Re-run one test: build/tests/test_commit NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- fixtures ------------------------------------------------------------------------------ */

/* A handle on a fresh memory store (lmdb 0) or LMDB directory (lmdb 1), through a tap. */
typedef tm_db tdb;
static int tdb_open(tdb *t, int lmdb, unsigned retain)
{
	return tm_db_open(t, lmdb, "commit", 1, retain, 0);
}
#define tdb_close tm_db_close
#define BOTH_STORES TM_BOTH_STORES

/* A commit with explicit everything, in its own txn. */
static int mk_commit(prolly_id *out, prolly_db *db, const prolly_id *tree, const prolly_id *parents,
                     size_t np, int64_t time_us, const char *msg)
{
	prolly_txn *txn = NULL;
	int rc = prolly_txn_begin(&txn, db);
	if (!rc)
		rc = prolly_commit_create(out, txn, tree, parents, np, time_us, msg);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

/* commit_edits of one put. */
static int put1(prolly_id *out, prolly_db *db, const char *branch, const char *k, const char *v,
                const char *msg)
{
	prolly_edit e = tm_put(k, v);
	return prolly_commit_edits(out, db, branch, &e, 1, msg);
}

static prolly_id fake_id(unsigned char b)
{
	prolly_id id;
	memset(id.bytes, b, sizeof(id.bytes));
	return id;
}

/* ---- commit objects ------------------------------------------------------------------------ */

PT_TEST(commit_encode_decode_roundtrip)
{
	prolly_id tree = fake_id(7), parents[3] = {fake_id(1), fake_id(2), fake_id(3)}, id;
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
	prolly_id tree = fake_id(7), parents[65];
	prolly_buf b = PROLLY_BUF_INIT;
	char *big = malloc(65537 + 1);
	PT_REQUIRE(big != NULL);
	for (int i = 0; i < 65; i++)
		parents[i] = fake_id((unsigned char)(i + 1));
	memset(big, 'x', 65537);
	big[65537] = 0;
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, parents, 64, 1, "ok"), 0);
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, parents, 65, 1, "too many"), PROLLY_EINVAL);
	big[65536] = 0;
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, NULL, 0, 1, big), 0);
	big[65536] = 'x';
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, NULL, 0, 1, big), PROLLY_ETOOBIG);
	prolly_id dup[2] = {fake_id(4), fake_id(4)};
	PT_CHECK_RC(prolly__commit_encode(&b, &tree, dup, 2, 1, "dup"), PROLLY_EINVAL);
	free(big);
	prolly_buf_dispose(&b);
}

/* Damaged bytes decoded directly: never a crash, and never "success" for a structural change. */
PT_TEST(commit_decode_damage)
{
	prolly_id tree = fake_id(9), parents[2] = {fake_id(1), fake_id(2)}, id;
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

BOTH_STORES(commit_create_read)
{
	tdb t;
	prolly_id root, c1, c2, parents[1];
	prolly_commit *c = NULL;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_CHECK_RC(mk_commit(&c1, t.db, &root, NULL, 0, 0, "first"), 0);
	parents[0] = c1;
	PT_CHECK_RC(mk_commit(&c2, t.db, &root, parents, 1, 42, "second"), 0);
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
	prolly_id none = fake_id(0xab);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &none), PROLLY_ENOTFOUND);
	tm_model m;
	tm_model_init(&m);
	tm_model_put(&m, "k", 1, "v", 1);
	prolly_id tr;
	PT_CHECK_RC(tm_build_commit(&tr, t.db, &m), 0);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &tr), PROLLY_ECORRUPT);
	tm_model_dispose(&m);
	/* A commit in an uncommitted txn is not published. */
	prolly_txn *txn = NULL;
	prolly_id c3;
	PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
	PT_CHECK_RC(prolly_commit_create(&c3, txn, &root, NULL, 0, 7, "never"), 0);
	prolly_txn_free(txn);
	PT_CHECK_RC(prolly_commit_read(&c, t.db, &c3), PROLLY_ENOTFOUND);
	tdb_close(&t);
}

static int count_commit(void *payload, const prolly_commit *c)
{
	(void)payload;
	(void)c;
	return 0;
}

/* Every flipped bit pattern, truncation and extension of a stored commit: PROLLY_ECORRUPT. */
BOTH_STORES(commit_stored_damage)
{
	tdb t;
	prolly_id root, p, c1;
	prolly_commit *c = NULL;
	prolly_buf b = PROLLY_BUF_INIT;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_REQUIRE(mk_commit(&p, t.db, &root, NULL, 0, 5, "parent") == 0);
	PT_REQUIRE(mk_commit(&c1, t.db, &root, &p, 1, 6, "the child commit") == 0);
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
	tdb_close(&t);
}

/* ---- branches ------------------------------------------------------------------------------ */

/* prolly_branch_commit: head, commit and root in one store call where the store can (the memory
 * store implements get_ref_objects; the tap and LMDB stores take the three reads in turn), the
 * same answers either way, and the root left in the cache. */
static void branch_tree_check(prolly_db *db, int fast)
{
	prolly_id c1, c2, head, tree, want_tree;
	PT_REQUIRE(put1(&c1, db, "bt", "a", "1", "one") == 0);
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
	tdb t;
	PT_REQUIRE(tdb_open(&t, 1, 0) == 0); /* LMDB through the tap: three reads */
	branch_tree_check(t.db, 0);
	tdb_close(&t);
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
	ids[7] = fake_id(77);
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

BOTH_STORES(branch_create_list_delete)
{
	tdb t;
	prolly_id root, c1, c2, h;
	names_seen s;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&root);
	PT_REQUIRE(mk_commit(&c1, t.db, &root, NULL, 0, 1, "one") == 0);
	PT_REQUIRE(mk_commit(&c2, t.db, &root, &c1, 1, 2, "two") == 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "main", &c2), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "feature/a", &c1), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "dev", &c2), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "main", &c1), PROLLY_ECONFLICT);
	PT_CHECK(strstr(prolly_last_error(), "main") != NULL);
	PT_CHECK_RC(prolly_branch_create(t.db, "bad..name", &c1), PROLLY_EINVAL);
	prolly_id none = fake_id(0x55);
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
	tdb_close(&t);
}

BOTH_STORES(resolve_specs)
{
	tdb t;
	prolly_id c[6], r;
	char spec[128], hex[PROLLY_ID_HEX_SIZE];
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	for (int i = 0; i < 6; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		PT_REQUIRE(put1(&c[i], t.db, "main", k, "v", k) == 0);
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
	prolly_id none = fake_id(0x42);
	prolly_id_to_hex(hex, &none);
	PT_CHECK_RC(prolly_resolve(&r, t.db, hex), PROLLY_ENOTFOUND);
	const char *bad[] = {"",       "~1",      "main~",
	                     "main~x", "main~1x", "main~-1",
	                     "ma in",  "main~1~", "main~99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		PT_CHECKF(prolly_resolve(&r, t.db, bad[i]) == PROLLY_EINVAL, "'%s'", bad[i]);
	PT_CHECK_RC(prolly_resolve(&r, t.db, "nobranch"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&r, t.db, "nobranch~1"), PROLLY_ENOTFOUND);
	tdb_close(&t);
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

BOTH_STORES(commit_edits_chain_and_log)
{
	tdb t;
	prolly_id c[20], h;
	log_seen s;
	char buf[64];
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	for (int i = 0; i < 20; i++) {
		char k[16], v[16], m[32];
		snprintf(k, sizeof(k), "key%02d", i);
		snprintf(v, sizeof(v), "val%02d", i);
		snprintf(m, sizeof(m), "commit %d", i);
		PT_REQUIRE(put1(&c[i], t.db, "main", k, v, m) == 0);
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
	prolly_id none = fake_id(0x77);
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
	tdb_close(&t);
}

/* ---- concurrent commits -------------------------------------------------------------------- */

#define CT_THREADS 8
#define CT_COMMITS 12

typedef struct ct_arg {
	prolly_db *db;
	int tid;
	int conflicts;
	int bad;
} ct_arg;

static void *ct_run(void *p)
{
	ct_arg *a = p;
	for (int i = 0; i < CT_COMMITS; i++) {
		char k[32], v[32];
		snprintf(k, sizeof(k), "t%d-%03d", a->tid, i);
		snprintf(v, sizeof(v), "value %d %d", a->tid, i);
		for (;;) {
			prolly_id before, out = fake_id(0);
			int rc = prolly_branch_head(&before, a->db, "main");
			if (rc) {
				a->bad++;
				break;
			}
			rc = put1(&out, a->db, "main", k, v, k);
			if (rc == 0)
				break;
			if (rc != PROLLY_ECONFLICT) {
				fprintf(stderr, "  thread %d: %d %s\n", a->tid, rc, prolly_last_error());
				a->bad++;
				break;
			}
			a->conflicts++;
			/* The loser is told the head that won: a real commit, not the zero id. */
			prolly_id zero = fake_id(0);
			prolly_commit *w = NULL;
			if (prolly_id_equal(&out, &zero) || prolly_commit_read(&w, a->db, &out) != 0)
				a->bad++;
			prolly_commit_free(w);
		}
	}
	return NULL;
}

/* A store wrapper whose writes wait a little before reaching the store, widening the race
 * window between reading a head and moving it. (Not the tap: its counters are not atomic.) */
static int slow_write(prolly_store *st, prolly_store_write *w)
{
	struct timespec ts = {0, 100 * 1000};
	if (w->n_refs)
		nanosleep(&ts, NULL);
	return tp_write(st, w);
}

static int open_slow(prolly_db **out, int lmdb, char **dir)
{
	prolly_store *inner = NULL;
	tp_store *s;
	int rc;
	*dir = NULL;
	if (lmdb) {
		if (!(*dir = tm_tmpdir("commit")))
			return PROLLY_ESTORE;
		rc = prolly_store_lmdb_open(&inner, *dir, 0);
	} else {
		rc = prolly_store_mem_new(&inner);
	}
	if (rc)
		return rc;
	if (!(s = tp_new(sizeof(*s), inner)))
		return PROLLY_ENOMEM;
	s->base.kind = "slow";
	s->base.write = slow_write;
	return prolly_db_new(out, &s->base, NULL);
}

/* A store wrapper that counts the store calls made from a thread other than the one that
 * opened it. */
typedef struct thread_store {
	tp_store tp; /* must be first */
	pthread_t owner;
	int foreign; /* calls seen from another thread */
	pthread_mutex_t lock;
} thread_store;

static void note_thread(tp_store *w, const char *what)
{
	thread_store *s = (thread_store *)w;
	(void)what;
	pthread_mutex_lock(&s->lock);
	if (!pthread_equal(pthread_self(), s->owner))
		s->foreign++;
	pthread_mutex_unlock(&s->lock);
}

static void thr_close(prolly_store *st)
{
	thread_store *s = (thread_store *)st;
	pthread_mutex_destroy(&s->lock);
	tp_close(st);
}

/* Builds a tree big enough for several builder flushes and a multi-batch cursor, commits it and
 * reads it back; returns how many store calls came from a thread of the library's own. */
static int count_foreign_calls(unsigned flags)
{
	thread_store *s = NULL;
	prolly_store *inner = NULL;
	prolly_db *db = NULL;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_cursor *cur = NULL;
	prolly_options opts;
	prolly_id root;
	int foreign = -1, n = 0;
	if (prolly_store_mem_new(&inner) || !(s = tp_new(sizeof(*s), inner)))
		return -1;
	s->tp.base.kind = "thread-check";
	s->tp.base.close = thr_close;
	s->tp.on_call = note_thread;
	s->owner = pthread_self();
	pthread_mutex_init(&s->lock, NULL);
	prolly_options_init(&opts, PROLLY_OPTIONS_VERSION);
	opts.flags = flags;
	opts.flush_bytes = 16 << 10;
	opts.cache_bytes = 0; /* every read reaches the store */
	if (prolly_db_new(&db, &s->tp.base, &opts))
		return -1;
	if (prolly_txn_begin(&txn, db) || prolly_builder_new(&b, txn))
		goto cleanup;
	for (int i = 0; i < 20000; i++) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%08d", i);
		snprintf(v, sizeof(v), "value of record %d", i);
		if (prolly_builder_add(b, k, strlen(k), v, strlen(v)))
			goto cleanup;
	}
	if (prolly_builder_finish(b, &root))
		goto cleanup;
	if (prolly_txn_commit(txn, NULL, 0))
		goto cleanup;
	if (prolly_cursor_open(&cur, db, &root, NULL))
		goto cleanup;
	while (prolly_cursor_next(cur, NULL, NULL) == 0)
		n++;
	if (n == 20000)
		foreign = s->foreign;
cleanup:
	prolly_cursor_free(cur);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	prolly_close(db);
	return foreign;
}

/* PROLLY_DB_NO_THREADS: every store call comes from the caller's thread (the builder's flushes
 * run inline, the cursor reads nothing ahead), and the results are the same. Without the flag the
 * same work does use the library's threads, which shows the check can see them. */
/* A txn's queue: a ref moved twice is refused at once, hundreds of refs and raw objects are
 * queued and found, and the reflog entries of a commit that fails are dropped from the txn's
 * raw objects (its own commit stays, found by id) however often it is committed again. */
PT_TEST(txn_queue_and_raw_objects_after_a_failed_commit)
{
	tdb t;
	prolly_id c1, c2, c, tree;
	const void *bytes;
	size_t size;
	PT_CHECK_RC(tdb_open(&t, 0, 0), 0);
	PT_CHECK_RC(put1(&c1, t.db, "main", "k", "1", "one"), 0);
	PT_CHECK_RC(put1(&c2, t.db, "main", "k", "2", "two"), 0);
	prolly_commit *hc = NULL;
	PT_CHECK_RC(prolly_commit_read(&hc, t.db, &c2), 0);
	PT_REQUIRE(hc);
	tree = hc->tree;
	prolly_commit_free(hc);

	prolly_txn *txn = NULL;
	PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
	PT_CHECK_RC(prolly_commit_create(&c, txn, &tree, &c2, 1, 0, "three"), 0);
	for (unsigned i = 0; i < 300; i++) { /* raw objects: found by id among hundreds */
		unsigned char obj[16];
		prolly_id id;
		memset(obj, 0, sizeof(obj));
		memcpy(obj, &i, sizeof(i));
		prolly__hash(&id, obj, sizeof(obj));
		PT_CHECK_RC(prolly__txn_add_raw(txn, &id, obj, sizeof(obj)), 0);
		PT_CHECK_RC(prolly__txn_find_raw(txn, &id, &bytes, &size), 0);
		PT_CHECK(size == sizeof(obj) && memcmp(bytes, obj, sizeof(obj)) == 0);
	}
	size_t raw_before = txn->raw_count;
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &c1, &c), 0); /* a stale expectation */
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &c2, &c), PROLLY_EINVAL); /* moved twice */
	for (unsigned i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof(name), "side/b%03u", i);
		PT_CHECK_RC(prolly_txn_move_branch(txn, name, NULL, &c), 0);
	}
	PT_CHECK_RC(prolly_txn_move_branch(txn, "side/b150", NULL, &c), PROLLY_EINVAL);
	for (int round = 0; round < 2; round++) { /* each commit makes its reflog entries again */
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ECONFLICT);
		PT_CHECK(txn->raw_count == raw_before);
		PT_CHECK_RC(prolly__txn_find_raw(txn, &c, &bytes, &size), 0);
	}
	prolly_txn_free(txn);
	prolly_id h;
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c2));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "side/b000"), PROLLY_ENOTFOUND);
	tdb_close(&t);
}

PT_TEST(no_threads_flag)
{
	PT_CHECK(count_foreign_calls(PROLLY_DB_NO_THREADS) == 0);
	PT_CHECK(count_foreign_calls(0) > 0);
}

BOTH_STORES(commit_edits_concurrent)
{
	tdb t;
	pthread_t th[CT_THREADS];
	ct_arg args[CT_THREADS];
	prolly_id root, h;
	memset(&t, 0, sizeof(t));
	PT_REQUIRE(open_slow(&t.db, lmdb, &t.dir) == 0);
	PT_REQUIRE(put1(&root, t.db, "main", "init", "x", "init") == 0);
	for (int i = 0; i < CT_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].db = t.db;
		args[i].tid = i;
		PT_REQUIRE(pthread_create(&th[i], NULL, ct_run, &args[i]) == 0);
	}
	int conflicts = 0;
	for (int i = 0; i < CT_THREADS; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(args[i].bad == 0, "thread %d had %d bad results", i, args[i].bad);
		conflicts += args[i].conflicts;
	}
	/* Every thread's edits are present; history is one line of 1 + threads*commits commits. */
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	prolly_commit *hc = NULL;
	PT_REQUIRE(prolly_commit_read(&hc, t.db, &h) == 0);
	uint64_t cnt = 0;
	PT_CHECK_RC(prolly_count(&cnt, t.db, &hc->tree), 0);
	PT_CHECK(cnt == 1 + CT_THREADS * CT_COMMITS);
	for (int tid = 0; tid < CT_THREADS; tid++) {
		for (int i = 0; i < CT_COMMITS; i++) {
			char k[32], v[32], buf[64];
			snprintf(k, sizeof(k), "t%d-%03d", tid, i);
			snprintf(v, sizeof(v), "value %d %d", tid, i);
			PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &h, k), 0);
			PT_CHECK(strcmp(buf, v) == 0);
		}
	}
	prolly_commit_free(hc);
	prolly_id cur = h;
	int len = 0;
	for (;;) {
		prolly_commit *c = NULL;
		PT_REQUIRE(prolly_commit_read(&c, t.db, &cur) == 0);
		len++;
		int np = (int)c->n_parents;
		PT_CHECK(np <= 1);
		if (np)
			cur = c->parents[0];
		prolly_commit_free(c);
		if (!np)
			break;
	}
	PT_CHECK(len == 1 + CT_THREADS * CT_COMMITS);
	fprintf(stderr, "  # %d conflicts retried\n", conflicts);
	PT_CHECK(conflicts > 0); /* the race was really run */
	tdb_close(&t);
}

/* ---- merge base ---------------------------------------------------------------------------- */

BOTH_STORES(merge_base_shapes)
{
	tdb t;
	prolly_id e, r, b;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&e);
	/* Linear: R <- L1 <- L2 <- L3. */
	prolly_id L[4];
	PT_REQUIRE(mk_commit(&L[0], t.db, &e, NULL, 0, 100, "R") == 0);
	for (int i = 1; i < 4; i++)
		PT_REQUIRE(mk_commit(&L[i], t.db, &e, &L[i - 1], 1, 100 + i, "L") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[3], &L[1]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[1], &L[3]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[2], &L[2]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[2]));

	/* Forked at L1: A = L1 <- A1 <- A2, B = L1 <- B1. */
	prolly_id A1, A2, B1;
	PT_REQUIRE(mk_commit(&A1, t.db, &e, &L[1], 1, 200, "A1") == 0);
	PT_REQUIRE(mk_commit(&A2, t.db, &e, &A1, 1, 201, "A2") == 0);
	PT_REQUIRE(mk_commit(&B1, t.db, &e, &L[1], 1, 150, "B1") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &A2, &B1), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &B1, &A2), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &B1, &L[3]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));

	/* Criss-cross: X1, Y1 on L3; X2 = merge(X1, Y1), Y2 = merge(Y1, X1); X3 on X2, Y3 on Y2. */
	prolly_id X1, Y1, X2, Y2, X3, Y3, p[2];
	PT_REQUIRE(mk_commit(&X1, t.db, &e, &L[3], 1, 300, "X1") == 0);
	PT_REQUIRE(mk_commit(&Y1, t.db, &e, &L[3], 1, 301, "Y1") == 0);
	p[0] = X1, p[1] = Y1;
	PT_REQUIRE(mk_commit(&X2, t.db, &e, p, 2, 310, "X2") == 0);
	p[0] = Y1, p[1] = X1;
	PT_REQUIRE(mk_commit(&Y2, t.db, &e, p, 2, 311, "Y2") == 0);
	PT_REQUIRE(mk_commit(&X3, t.db, &e, &X2, 1, 320, "X3") == 0);
	PT_REQUIRE(mk_commit(&Y3, t.db, &e, &Y2, 1, 321, "Y3") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &X3, &Y3), 0);
	PT_CHECKF(prolly_id_equal(&b, &Y1), "criss-cross base %s (want the newest of X1, Y1)",
	          tm_hex(&b));
	prolly_id b2;
	PT_CHECK_RC(prolly_merge_base(&b2, t.db, &Y3, &X3), 0);
	PT_CHECK(prolly_id_equal(&b, &b2)); /* deterministic, symmetric */
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &X2, &Y2), 0);
	PT_CHECK(prolly_id_equal(&b, &Y1));

	/* Skewed: F <- G (short side); F <- a1 <- ... <- a12 <- M where M also has parent R (the
	 * root, older than F). A naive first-meeting walk would answer R; the base is F. */
	prolly_id F, G, a[13], M;
	PT_REQUIRE(mk_commit(&F, t.db, &e, &L[3], 1, 400, "F") == 0);
	PT_REQUIRE(mk_commit(&G, t.db, &e, &F, 1, 401, "G") == 0);
	a[0] = F;
	for (int i = 1; i < 13; i++)
		PT_REQUIRE(mk_commit(&a[i], t.db, &e, &a[i - 1], 1, 400 + 10 * i, "a") == 0);
	p[0] = a[12], p[1] = L[0];
	PT_REQUIRE(mk_commit(&M, t.db, &e, p, 2, 600, "M") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &M, &G), 0);
	PT_CHECKF(prolly_id_equal(&b, &F), "got %s", tm_hex(&b));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &G, &M), 0);
	PT_CHECK(prolly_id_equal(&b, &F));
	/* A batch per step, not a store call per commit: the walk from M and G reads 16 commits
	 * (M, G, a12..a1, F, and a little below) in far fewer calls than a commit-at-a-time walk
	 * would need in total on both sides. */
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &M, &G), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	fprintf(stderr, "  # skewed merge base: %llu store calls\n",
	        (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_reads <= 20, "%llu store calls", (unsigned long long)st.store_reads);

	/* Disjoint histories; a missing commit. */
	prolly_id Z;
	PT_REQUIRE(mk_commit(&Z, t.db, &e, NULL, 0, 50, "Z") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &Z, &L[3]), PROLLY_ENOTFOUND);
	r = fake_id(0x31);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &r, &L[3]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[3], &r), PROLLY_ENOTFOUND);
	tdb_close(&t);
}

/* Two forks with interleaved times advance together: one store call per step for both sides. */
BOTH_STORES(merge_base_batches_both_sides)
{
	tdb t;
	prolly_id e, base, x = {{0}}, y = {{0}}, b;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&e);
	PT_REQUIRE(mk_commit(&base, t.db, &e, NULL, 0, 1000, "base") == 0);
	prolly_id px = base, py = base;
	for (int i = 1; i <= 30; i++) {
		PT_REQUIRE(mk_commit(&x, t.db, &e, &px, 1, 1000 + 2 * i, "x") == 0);
		PT_REQUIRE(mk_commit(&y, t.db, &e, &py, 1, 1001 + 2 * i, "y") == 0);
		px = x;
		py = y;
	}
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &x, &y), 0);
	PT_CHECK(prolly_id_equal(&b, &base));
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	fprintf(stderr, "  # interleaved merge base: %llu store calls\n",
	        (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_reads <= 33, "%llu store calls for 2 x 30 commits",
	          (unsigned long long)st.store_reads);
	tdb_close(&t);
}

/* Where the store offers get_ancestors (the memory store and LMDB here, PostgreSQL), a history
 * walk reads ahead: a 300-commit chain is a few store calls; without it, one per commit. */
typedef struct logcount {
	int n;
	int64_t last_time;
	int ordered;
} logcount;

static int count_log(void *payload, const prolly_commit *c)
{
	logcount *l = payload;
	if (l->n && c->time_us >= l->last_time)
		l->ordered = 0;
	l->last_time = c->time_us;
	l->n++;
	return 0;
}

BOTH_STORES(history_walks_read_ahead)
{
	tdb t;
	prolly_id e, head = {{0}}, prev = {{0}}, side = {{0}}, b;
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 300; i++) {
		PT_REQUIRE(mk_commit(&head, t.db, &e, i ? &prev : NULL, i ? 1 : 0, 1000 + i, "c") == 0);
		if (i == 150)
			side = head;
		prev = head;
	}
	prolly_id tip;
	PT_REQUIRE(mk_commit(&tip, t.db, &e, &side, 1, 5000, "side") == 0);
	int ahead = t.tap->tp.base.get_ancestors != NULL;
	PT_CHECKF(ahead, "%s has no get_ancestors", lmdb ? "lmdb" : "mem");

	logcount l = {0, 0, 1};
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_log(t.db, &head, count_log, &l), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	printf("# log of 300 commits: %llu store calls\n", (unsigned long long)st.store_reads);
	PT_CHECK(l.n == 300 && l.ordered);
	if (ahead)
		PT_CHECKF(st.store_reads <= 4, "%llu store calls", (unsigned long long)st.store_reads);
	else
		PT_CHECKF(st.store_reads >= 299, "%llu store calls", (unsigned long long)st.store_reads);

	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &head, &tip), 0);
	PT_CHECK(prolly_id_equal(&b, &side));
	prolly_thread_stats(&st);
	printf("# merge base 150 commits back: %llu store calls\n", (unsigned long long)st.store_reads);
	if (ahead)
		PT_CHECKF(st.store_reads <= 4, "%llu store calls", (unsigned long long)st.store_reads);
	tdb_close(&t);
}

/* ---- merge_branches ------------------------------------------------------------------------ */

typedef struct conflict_log {
	int n;
	char key[32];
} conflict_log;

static int on_conflict(void *payload, const prolly_conflict *c)
{
	conflict_log *l = payload;
	if (!l->n)
		snprintf(l->key, sizeof(l->key), "%.*s", (int)c->key.size, (const char *)c->key.data);
	l->n++;
	return 0;
}

BOTH_STORES(merge_branches_cases)
{
	tdb t;
	prolly_id c0, c1, h, m, f;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	char buf[64];
	PT_REQUIRE(tdb_open(&t, lmdb, 0) == 0);
	PT_REQUIRE(put1(&c0, t.db, "main", "a", "1", "a") == 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "feat", &c0), 0);

	/* Nothing to do: same head, then feat behind main. */
	PT_CHECK_RC(prolly_merge_branches(&m, &ms, t.db, "main", "feat", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&m, &c0));
	PT_REQUIRE(put1(&c1, t.db, "main", "b", "2", "b") == 0);
	PT_CHECK_RC(prolly_merge_branches(&m, &ms, t.db, "main", "feat", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&m, &c1));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c1));

	/* Fast-forward feat to main: no new commit. */
	PT_CHECK_RC(prolly_merge_branches(&m, &ms, t.db, "feat", "main", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&m, &c1));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "feat"), 0);
	PT_CHECK(prolly_id_equal(&h, &c1));

	/* Clean merge: disjoint keys on both sides. */
	PT_REQUIRE(put1(&h, t.db, "main", "m", "main-side", "m") == 0);
	PT_REQUIRE(put1(&f, t.db, "feat", "f", "feat-side", "f") == 0);
	PT_REQUIRE(put1(&f, t.db, "feat", "a", "changed", "a2") == 0);
	prolly_merge_stats_init(&ms, PROLLY_MERGE_STATS_VERSION);
	PT_CHECK_RC(prolly_merge_branches(&m, &ms, t.db, "main", "feat", NULL, "merge feat"), 0);
	PT_CHECK(ms.applied == 2 && ms.conflicts == 0);
	prolly_commit *mc = NULL;
	PT_REQUIRE(prolly_commit_read(&mc, t.db, &m) == 0);
	PT_CHECK(mc->n_parents == 2);
	PT_CHECK(prolly_id_equal(&mc->parents[0], &h) && prolly_id_equal(&mc->parents[1], &f));
	PT_CHECK(strcmp(mc->message, "merge feat") == 0);
	prolly_commit_free(mc);
	const char *want[][2] = {{"a", "changed"}, {"b", "2"}, {"m", "main-side"}, {"f", "feat-side"}};
	for (int i = 0; i < 4; i++) {
		PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &m, want[i][0]), 0);
		PT_CHECKF(strcmp(buf, want[i][1]) == 0, "%s=%s", want[i][0], buf);
	}
	prolly_id now;
	PT_CHECK_RC(prolly_branch_head(&now, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&now, &m));
	/* Merging again: nothing to do (feat's head is an ancestor of main's). */
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "main", "feat", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&now, &m));
	/* And feat fast-forwards to the merge. */
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "feat", "main", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&now, &m));

	/* Conflict: both change "b" differently. Nothing is written. */
	prolly_id mh, fh;
	PT_REQUIRE(put1(&mh, t.db, "main", "b", "main-b", "b main") == 0);
	PT_REQUIRE(put1(&fh, t.db, "feat", "b", "feat-b", "b feat") == 0);
	uint64_t nodes_before = 0, bytes_before = 0, nodes_after = 0, bytes_after = 0;
	prolly_store *st = prolly_db_store(t.db);
	PT_REQUIRE(st->stat != NULL);
	PT_CHECK_RC(st->stat(st, &nodes_before, &bytes_before), 0);
	conflict_log cl;
	memset(&cl, 0, sizeof(cl));
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	mo.resolve = PROLLY_RESOLVE_FAIL;
	mo.on_conflict = on_conflict;
	mo.payload = &cl;
	prolly_id untouched = fake_id(0xee);
	PT_CHECK_RC(prolly_merge_branches(&untouched, NULL, t.db, "main", "feat", &mo, NULL),
	            PROLLY_EMERGE);
	PT_CHECK(cl.n == 1 && strcmp(cl.key, "b") == 0);
	prolly_id ee = fake_id(0xee);
	PT_CHECK(prolly_id_equal(&untouched, &ee)); /* out untouched on failure */
	PT_CHECK_RC(st->stat(st, &nodes_after, &bytes_after), 0);
	PT_CHECK(nodes_after == nodes_before && bytes_after == bytes_before);
	PT_CHECK_RC(prolly_branch_head(&now, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&now, &mh));
	/* Resolved with theirs: the merge commit takes feat's value. */
	mo.resolve = PROLLY_RESOLVE_THEIRS;
	PT_CHECK_RC(prolly_merge_branches(&now, &ms, t.db, "main", "feat", &mo, NULL), 0);
	PT_CHECK(ms.conflicts == 1);
	PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &now, "b"), 0);
	PT_CHECK(strcmp(buf, "feat-b") == 0);
	prolly_commit *dm = NULL;
	PT_REQUIRE(prolly_commit_read(&dm, t.db, &now) == 0);
	PT_CHECK(strstr(dm->message, "feat") != NULL); /* default message names the branches */
	prolly_commit_free(dm);

	/* Errors: missing branches, unrelated histories. */
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "main", "nope", NULL, NULL),
	            PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "nope", "main", NULL, NULL),
	            PROLLY_ENOTFOUND);
	prolly_id lone;
	PT_REQUIRE(put1(&lone, t.db, "lonely", "z", "z", "z") == 0);
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "main", "lonely", NULL, NULL),
	            PROLLY_ENOTFOUND);
	tdb_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
