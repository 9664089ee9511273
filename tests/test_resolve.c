/*
 * test_resolve.c - revision specs (prolly_resolve):
 *
 *   - short commit ids over 1,500 commits, on the memory store and LMDB (find_ids: one index
 *     range scan) and through a store without find_ids (the walk from the refs): every commit
 *     by its shortest unique prefix (and in upper case); ambiguous prefixes refused naming every
 *     candidate; prefixes too short, of nothing, or of a tree node;
 *   - a short id costs a constant number of store calls when the store has find_ids;
 *   - ^, ^N, ^0, ~N and their combinations over a history with a merge;
 *   - a tree id where a commit is expected is PROLLY_EINVAL, not corruption;
 *   - branch names of 64 hex digits are refused; a short all-hex branch wins over a short id;
 *     more than 64 hex digits name no commit (not the one of the first 64).
 */
#include "lib/model.h"
#include "lib/passthru.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NC 1500

static int make_commit(prolly_id *out, prolly_txn *txn, const prolly_id *parents, size_t np,
                       int64_t t, const char *msg)
{
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	return prolly_commit_create(out, txn, &empty, parents, np, t, msg);
}

static int cmp_hex(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Checks every `every`-th commit (the walk without find_ids reads the whole history). */
static int first_entry(void *payload, const prolly_reflog_entry *e)
{
	*(prolly_id *)payload = e->id;
	return 1;
}

static void short_ids(prolly_db *db, int every)
{
	prolly_txn *txn = NULL;
	static prolly_id ids[NC];
	static char hex[NC][PROLLY_ID_HEX_SIZE], sorted[NC][PROLLY_ID_HEX_SIZE];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	for (int i = 0; i < NC; i++) {
		char msg[32];
		snprintf(msg, sizeof msg, "c%d", i);
		PT_REQUIRE(make_commit(&ids[i], txn, i ? &ids[i - 1] : NULL, i ? 1 : 0, 1000 + i, msg) ==
		           0);
		prolly_id_to_hex(hex[i], &ids[i]);
		memcpy(sorted[i], hex[i], PROLLY_ID_HEX_SIZE);
	}
	/* A tree node in the store too. */
	prolly_builder *b = NULL;
	prolly_id tree;
	PT_REQUIRE(prolly_builder_new(&b, txn) == 0 && prolly_builder_add(b, "k", 1, "v", 1) == 0 &&
	           prolly_builder_finish(b, &tree) == 0);
	prolly_builder_free(b);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &ids[NC - 1]) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	qsort(sorted, NC, sizeof sorted[0], cmp_hex);

	/* Every commit by its shortest unique prefix (at least 4), lower and upper case. */
	int ambiguous_seen = 0;
	for (int i = 0; i < NC && !pt_failed_now; i += every) {
		size_t len = 4;
		for (int j = 0; j < NC; j++)
			while (j != i && len < 64 && strncmp(hex[i], hex[j], len) == 0)
				len++;
		char spec[PROLLY_ID_HEX_SIZE];
		memcpy(spec, hex[i], len);
		spec[len] = 0;
		prolly_id got;
		PT_CHECK_RC(prolly_resolve(&got, db, spec), 0);
		PT_CHECKF(prolly_id_equal(&got, &ids[i]), "%s", spec);
		for (size_t k = 0; k < len; k++)
			if (spec[k] >= 'a')
				spec[k] = (char)(spec[k] - 'a' + 'A');
		PT_CHECK_RC(prolly_resolve(&got, db, spec), 0);
		if (len > 4 &&
		    ambiguous_seen < 20 / every + 1) { /* one digit less: ambiguous, naming both */
			ambiguous_seen++;
			spec[len - 1] = 0;
			PT_CHECK_RC(prolly_resolve(&got, db, spec), PROLLY_EINVAL);
			const char *m = prolly_last_error();
			PT_CHECKF(strstr(m, "ambiguous") && strstr(m, hex[i]), "%s: %s", spec, m);
		}
	}
	PT_CHECK(ambiguous_seen > 0);
	/* Too short, no such commit, a tree node's prefix, a tree's full id, bad characters. */
	prolly_id got;
	char t8[9], thex[PROLLY_ID_HEX_SIZE];
	PT_CHECK_RC(prolly_resolve(&got, db, "abc"), PROLLY_ENOTFOUND);
	prolly_id_to_hex(thex, &tree);
	memcpy(t8, thex, 8);
	t8[8] = 0;
	int tree_prefix_is_commit = 0;
	for (int i = 0; i < NC; i++)
		tree_prefix_is_commit |= strncmp(hex[i], t8, 8) == 0;
	if (!tree_prefix_is_commit)
		PT_CHECK_RC(prolly_resolve(&got, db, t8), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&got, db, thex), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a tree, not a commit"), "%s", prolly_last_error());
	/* A reflog entry's full id: another kind of object, not a damaged commit. */
	prolly_id entry;
	char ehex[PROLLY_ID_HEX_SIZE];
	PT_REQUIRE(prolly_reflog(db, "main", first_entry, &entry) == 1);
	prolly_id_to_hex(ehex, &entry);
	PT_CHECK_RC(prolly_resolve(&got, db, ehex), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a reflog entry, not a commit"), "%s",
	          prolly_last_error());
	/* Its prefix names no commit: a ref's value is a candidate only as a commit (the reflog's
	 * refs hold entries whose ids vary with the clock, so they once made short ids ambiguous). */
	memcpy(t8, ehex, 8);
	int entry_prefix_is_commit = 0;
	for (int i = 0; i < NC; i++)
		entry_prefix_is_commit |= strncmp(hex[i], t8, 8) == 0;
	if (!entry_prefix_is_commit)
		PT_CHECK_RC(prolly_resolve(&got, db, t8), PROLLY_ENOTFOUND);
	/* A 10-digit prefix no commit has. */
	char none[11] = "0000000000";
	for (int v = 0; v < 100; v++) {
		snprintf(none, sizeof none, "%010x", 0x12345u + (unsigned)v * 7919u);
		void *hit = NULL;
		for (int i = 0; i < NC && !hit; i++)
			if (strncmp(hex[i], none, 10) == 0)
				hit = hex[i];
		if (!hit)
			break;
	}
	PT_CHECK_RC(prolly_resolve(&got, db, none), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&got, db, "12g4"), PROLLY_ENOTFOUND);
}

PT_TEST(resolve_short_ids_mem)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	short_ids(db, 1);
	/* With find_ids: a short id is two ref reads, one find_ids call and one commit read. */
	prolly_id head, got;
	char spec[13];
	PT_REQUIRE(prolly_branch_head(&head, db, "main") == 0);
	char h[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(h, &head);
	memcpy(spec, h, 12);
	spec[12] = 0;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_resolve(&got, db, spec), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	/* the branch and the tag of that name (neither exists), find_ids, the commit */
	PT_CHECKF(st.store_round_trips <= 4, "%llu round trips",
	          (unsigned long long)st.store_round_trips);
	prolly_close(db);
}

PT_TEST(resolve_short_ids_lmdb)
{
	tm_db t;
	PT_REQUIRE(tm_db_open(&t, 1, "resolve", 0, 0, 0) == 0);
	short_ids(t.db, 1);
	tm_db_close(&t);
}

PT_TEST(resolve_short_ids_without_find_ids)
{
	tm_db t;
	PT_REQUIRE(tm_db_open(&t, 0, "resolve", 1, 0, 0) == 0); /* the tap has no find_ids */
	short_ids(t.db, 7);
	tm_db_close(&t);
}

/* Without find_ids, a history that many branches share is read once, not once per branch: 40
 * branches along a chain of 600 commits, and a short id reads 781 objects (each ref's own walk
 * read 19,443). Damage in one branch's history hides none of the others': a
 * commit of a side branch made unreadable, a short id of main's history still resolves. */
PT_TEST(resolve_short_ids_without_find_ids_read_history_once)
{
	enum { N = 600, BRANCHES = 40 };
	static prolly_id ids[N];
	tm_db t;
	prolly_txn *txn = NULL;
	PT_REQUIRE(tm_db_open(&t, 0, "resolve", 1, 0, 0) == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	for (int i = 0; i < N; i++) {
		char msg[32];
		snprintf(msg, sizeof msg, "c%d", i);
		PT_REQUIRE(make_commit(&ids[i], txn, i ? &ids[i - 1] : NULL, i ? 1 : 0, 1000 + i, msg) ==
		           0);
	}
	prolly_id side;
	PT_REQUIRE(make_commit(&side, txn, &ids[N / 2], 1, 5000, "side") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &ids[N - 1]) == 0);
	for (int b = 0; b < BRANCHES; b++) {
		char name[16];
		snprintf(name, sizeof name, "b%02d", b);
		PT_REQUIRE(prolly_txn_move_branch(txn, name, NULL, &ids[N - 1 - b * 7]) == 0);
	}
	PT_REQUIRE(prolly_txn_move_branch(txn, "side", NULL, &side) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);

	char hex[PROLLY_ID_HEX_SIZE], spec[13];
	prolly_id got;
	prolly_id_to_hex(hex, &ids[3]);
	memcpy(spec, hex, 12);
	spec[12] = 0;
	uint64_t before = t.tap->nodes_served;
	PT_CHECK_RC(prolly_resolve(&got, t.db, spec), 0);
	PT_CHECK(prolly_id_equal(&got, &ids[3]));
	uint64_t served = t.tap->nodes_served - before;
	/* (the read-ahead of get_ancestors may fetch a commit that another head's walk has) */
	PT_CHECKF(served <= 2 * N, "%llu objects read for a history of %d commits",
	          (unsigned long long)served, N);

	/* the side branch's own commit unreadable: the walk falls back to one walk per ref */
	t.tap->mode = TM_TAP_FLIP;
	t.tap->target = side;
	t.tap->pos = 40;
	t.tap->mask = 0x01;
	before = t.tap->nodes_served;
	PT_CHECK_RC(prolly_resolve(&got, t.db, spec), 0);
	PT_CHECK(prolly_id_equal(&got, &ids[3]));
	PT_CHECK(t.tap->nodes_served - before > 2 * N); /* the walks one ref at a time */
	t.tap->mode = TM_TAP_PASS;
	tm_db_close(&t);
}

/* "main~N" over a chain of 20,000 commits: the steps read ahead where the store has
 * get_ancestors (N / 256 store calls, not N; on a server store, reads that double up to 4,096
 * commits: a handful of calls), the step graph starting afresh once on the way (past 16,384
 * commits); and they give the same commits without get_ancestors. */
static void long_steps(prolly_db *db, unsigned max_trips)
{
	enum { N = 20000 };
	static prolly_id ids[N];
	prolly_txn *txn = NULL;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	for (int i = 0; i < N; i++)
		PT_REQUIRE(make_commit(&ids[i], txn, i ? &ids[i - 1] : NULL, i ? 1 : 0, 1000 + i, "c") ==
		           0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &ids[N - 1]) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	prolly_id got;
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_resolve(&got, db, "main~19990"), 0);
	PT_CHECK(prolly_id_equal(&got, &ids[9]));
	prolly_thread_stats(&st);
	if (max_trips)
		PT_CHECKF(st.store_round_trips <= max_trips, "%llu round trips, at most %u",
		          (unsigned long long)st.store_round_trips, max_trips);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~19999"), 0);
	PT_CHECK(prolly_id_equal(&got, &ids[0]));
	PT_CHECK_RC(prolly_resolve(&got, db, "main~9000~9000^1~5"), 0);
	PT_CHECK(prolly_id_equal(&got, &ids[N - 1 - 18006]));
	PT_CHECK_RC(prolly_resolve(&got, db, "main~20000"), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "goes back past root commit") &&
	              strstr(prolly_last_error(), "(19999 steps back)"),
	          "%s", prolly_last_error());
	PT_CHECK_RC(prolly_resolve(&got, db, "main~19999^2"), PROLLY_ENOTFOUND);
}

PT_TEST(resolve_long_steps_read_ahead)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	PT_REQUIRE(db);
	long_steps(db, 19990 / 256 + 8);
	prolly_close(db);
	for (int remote = 0; remote < 2; remote++) {
		prolly_store *mem = NULL;
		PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
		tp_store *w = tp_new(sizeof(tp_store), mem);
		PT_REQUIRE(w);
		if (remote) /* reads ahead as a server store does */
			w->base.flags |= PROLLY_STORE_REMOTE;
		else
			w->base.get_ancestors = NULL; /* one commit per step */
		PT_REQUIRE(prolly_db_new(&db, &w->base, NULL) == 0);
		long_steps(db, remote ? 16 : 0);
		prolly_close(db);
	}
}

PT_TEST(resolve_parent_steps)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	prolly_txn *txn = NULL;
	prolly_id c1, c2, c3, s1, m, d, got, mp[2];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(make_commit(&c1, txn, NULL, 0, 10, "c1") == 0);
	PT_REQUIRE(make_commit(&c2, txn, &c1, 1, 20, "c2") == 0);
	PT_REQUIRE(make_commit(&c3, txn, &c2, 1, 30, "c3") == 0);
	PT_REQUIRE(make_commit(&s1, txn, &c2, 1, 31, "s1") == 0);
	mp[0] = c3;
	mp[1] = s1;
	PT_REQUIRE(make_commit(&m, txn, mp, 2, 40, "m") == 0);
	PT_REQUIRE(make_commit(&d, txn, &m, 1, 50, "d") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &d) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	char dh[PROLLY_ID_HEX_SIZE], mh[PROLLY_ID_HEX_SIZE], spec[80];
	prolly_id_to_hex(dh, &d);
	prolly_id_to_hex(mh, &m);
	const struct {
		const char *spec;
		const prolly_id *want;
	} ok[] = {{"main", &d},       {"main^0", &d},      {"main^", &m},     {"main^1", &m},
	          {"main~1", &m},     {"main^^", &c3},     {"main~1^2", &s1}, {"main^^2", &s1},
	          {"main~1^2^", &c2}, {"main~1^2~1", &c2}, {"main~2^", &c2},  {"main^~1^1", &c2},
	          {"main~3", &c2},    {"main~4", &c1},     {"main~0^0~0", &d}};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		PT_CHECK_RC(prolly_resolve(&got, db, ok[i].spec), 0);
		PT_CHECKF(prolly_id_equal(&got, ok[i].want), "%s", ok[i].spec);
	}
	snprintf(spec, sizeof spec, "%.6s^2", mh);
	PT_CHECK_RC(prolly_resolve(&got, db, spec), 0);
	PT_CHECK(prolly_id_equal(&got, &s1));
	snprintf(spec, sizeof spec, "%s~1^2", dh);
	PT_CHECK_RC(prolly_resolve(&got, db, spec), 0);
	PT_CHECK(prolly_id_equal(&got, &s1));
	PT_CHECK_RC(prolly_resolve(&got, db, "main^2"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~1^3"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~5"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, "main^x"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~1x"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, "main~99999999999"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, "^1"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, ""), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_resolve(&got, db, "nosuch^"), PROLLY_ENOTFOUND);
	prolly_close(db);
}

PT_TEST(resolve_branch_names_and_ids)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	prolly_txn *txn = NULL;
	prolly_id a, b, got;
	char ah[PROLLY_ID_HEX_SIZE], short4[5];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(make_commit(&a, txn, NULL, 0, 10, "a") == 0);
	PT_REQUIRE(make_commit(&b, txn, &a, 1, 20, "b") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &b) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	prolly_id_to_hex(ah, &a);
	/* 64 hex digits cannot name a branch; fewer can. */
	PT_CHECK_RC(prolly_branch_name_valid(ah), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_branch_create(db, ah, &b), PROLLY_EINVAL);
	char ah65[PROLLY_ID_HEX_SIZE + 1];
	snprintf(ah65, sizeof ah65, "%sa", ah);
	PT_CHECK_RC(prolly_branch_name_valid(ah65), 0);
	/* More than 64 hex digits is no id and no short id: a's id with a digit more names nothing
	 * (it named a), and 200 digits are refused without writing past the id the prefix fills. */
	PT_CHECK_RC(prolly_resolve(&got, db, ah65), PROLLY_ENOTFOUND);
	char long200[201];
	memset(long200, 'd', 200);
	long200[200] = 0;
	PT_CHECK_RC(prolly_resolve(&got, db, long200), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "no branch"), "%s", prolly_last_error());
	/* a's short id names a; a branch spelled the same wins. */
	memcpy(short4, ah, 4);
	short4[4] = 0;
	PT_CHECK_RC(prolly_resolve(&got, db, short4), 0);
	PT_CHECK(prolly_id_equal(&got, &a));
	PT_CHECK_RC(prolly_branch_create(db, short4, &b), 0);
	PT_CHECK_RC(prolly_resolve(&got, db, short4), 0);
	PT_CHECK(prolly_id_equal(&got, &b));
	PT_CHECK_RC(prolly_resolve(&got, db, ah), 0);
	PT_CHECK(prolly_id_equal(&got, &a));
	prolly_close(db);
}

/* prolly_resolve_commit: the commit prolly_resolve names, decoded, whatever the spec (its round
 * trips on PostgreSQL: test_pg_reads.c, point_read_of_a_branch_round_trips). */
PT_TEST(resolve_commit_decodes_what_resolve_names)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	prolly_txn *txn = NULL;
	prolly_id a, b, t, got;
	prolly_commit *c = NULL;
	prolly_builder *bl = NULL;
	char ah[PROLLY_ID_HEX_SIZE], th[PROLLY_ID_HEX_SIZE], short6[7];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_builder_new(&bl, txn) == 0 && prolly_builder_add(bl, "k", 1, "v", 1) == 0 &&
	           prolly_builder_finish(bl, &t) == 0);
	prolly_builder_free(bl);
	PT_REQUIRE(prolly_commit_create(&a, txn, &t, NULL, 0, 10, "a") == 0);
	PT_REQUIRE(prolly_commit_create(&b, txn, &t, &a, 1, 20, "b") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", NULL, &b) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	PT_REQUIRE(prolly_tag_create(db, "v1", &a) == 0);
	prolly_id_to_hex(ah, &a);
	prolly_id_to_hex(th, &t);
	memcpy(short6, ah, 6);
	short6[6] = 0;
	const char *specs[] = {"main", "main~1", "main^", "v1", ah, short6, "main^0"};
	const prolly_id *want[] = {&b, &a, &a, &a, &a, &a, &b};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		PT_CHECK_RC(prolly_resolve_commit(&c, db, specs[i]), 0);
		PT_CHECKF(c && prolly_id_equal(&c->id, want[i]) && prolly_id_equal(&c->tree, &t), "%s",
		          specs[i]);
		PT_CHECK_RC(prolly_resolve(&got, db, specs[i]), 0);
		PT_CHECK(prolly_id_equal(&got, want[i]));
		prolly_commit_free(c);
	}
	/* Failures leave *out NULL. */
	c = (prolly_commit *)&got; /* not NULL */
	PT_CHECK_RC(prolly_resolve_commit(&c, db, "nosuch"), PROLLY_ENOTFOUND);
	PT_CHECK(c == NULL);
	PT_CHECK_RC(prolly_resolve_commit(&c, db, th), PROLLY_EINVAL); /* a tree */
	PT_CHECK_RC(prolly_resolve_commit(&c, db, "main~2"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve_commit(NULL, db, "main"), PROLLY_EINVAL);
	PT_CHECK(c == NULL);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
