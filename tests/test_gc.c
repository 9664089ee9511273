/*
 * test_gc.c - retention and garbage collection, on the memory store and on LMDB:
 *
 *   - retain 2: after several commits gc removes the nodes only older commits reached (the store
 *     shrinks by exactly what gc reports), every retained commit's tree still reads in full, the
 *     log stops quietly at the horizon, a second gc removes nothing; marking reads one store call
 *     per level and never reads a leaf;
 *   - retain 0 keeps all history and removes only unreachable nodes; refs other than branches
 *     (to a tree or to a commit) keep what they name;
 *   - a txn begun before a gc and committed after it fails with PROLLY_ECONFLICT and publishes
 *     nothing (also when a builder flushed nodes early);
 *   - writers on several threads racing a gc loop: every branch reads in full afterwards;
 *   - a branch naming a missing commit stops the gc with nothing removed; a store without gc;
 *   - what a gc removed is not served from the cache of the handle that ran it, and a read that
 *     a gc of another handle took its tree from says that a gc ran during it.
 *
 * Re-run one test: build/tests/test_gc NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixtures ------------------------------------------------------------------------------ */

typedef tm_db tdb;
static int tdb_open(tdb *t, int lmdb, unsigned retain, size_t flush_bytes)
{
	return tm_db_open(t, lmdb, "gc", 0, retain, flush_bytes);
}
#define tdb_close tm_db_close
#define BOTH_STORES TM_BOTH_STORES

static void stat_of(prolly_db *db, uint64_t *nodes, uint64_t *bytes)
{
	prolly_store *st = prolly_db_store(db);
	*nodes = *bytes = 0;
	if (st->stat)
		st->stat(st, nodes, bytes);
}

/* Applies the model-side edits to m and commits them on branch. */
static int commit_model(prolly_id *out, prolly_db *db, const char *branch, tm_model *m,
                        const prolly_edit *e, size_t n, const char *msg)
{
	tm_model_apply(m, e, n);
	return prolly_commit_edits(out, db, branch, e, n, msg);
}

/* n puts of keys key24(first + i*stride) with values tagged by `tag`. Storage in keys/vals. */
static void make_puts(prolly_edit *e, unsigned char (*keys)[TM_KEY24], char (*vals)[48], size_t n,
                      tm_rng *r, uint64_t range, int tag)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = r ? tm_rng_below(r, range) : i;
		tm_key24(keys[i], k);
		int len = snprintf(vals[i], sizeof(vals[i]), "value-%d-%llu-%zu-padding-padding", tag,
		                   (unsigned long long)k, i);
		e[i].op = PROLLY_PUT;
		e[i].key.data = keys[i];
		e[i].key.size = TM_KEY24;
		e[i].value.data = vals[i];
		e[i].value.size = (size_t)len;
	}
}

typedef struct log_ids {
	prolly_id ids[32];
	int n;
} log_ids;

static int on_log(void *payload, const prolly_commit *c)
{
	log_ids *l = payload;
	if (l->n < 32)
		l->ids[l->n] = c->id;
	l->n++;
	return 0;
}

/* The tree of commit c. */
static int tree_of(prolly_id *tree, prolly_db *db, const prolly_id *c)
{
	prolly_commit *cm = NULL;
	int rc = prolly_commit_read(&cm, db, c);
	if (!rc)
		*tree = cm->tree;
	prolly_commit_free(cm);
	return rc;
}

/* ---- retention ----------------------------------------------------------------------------- */

#define BASE_N 4000
#define EDIT_N 300

BOTH_STORES(gc_retention)
{
	tdb t;
	tm_rng r;
	tm_model models[6];
	prolly_id c[6];
	static prolly_edit e[BASE_N];
	static unsigned char keys[BASE_N][TM_KEY24];
	static char vals[BASE_N][48];
	PT_REQUIRE(tdb_open(&t, lmdb, 2, 0) == 0);
	tm_rng_seed(&r, PT_SEED());
	for (int i = 0; i < 6; i++)
		tm_model_init(&models[i]);

	/* c0: BASE_N records; c1..c5: EDIT_N random value updates each. dev at c2. */
	make_puts(e, keys, vals, BASE_N, NULL, 0, 0);
	PT_REQUIRE(commit_model(&c[0], t.db, "main", &models[0], e, BASE_N, "base") == 0);
	for (int i = 1; i < 6; i++) {
		tm_model_copy(&models[i], &models[i - 1]);
		make_puts(e, keys, vals, EDIT_N, &r, BASE_N, i);
		PT_REQUIRE(commit_model(&c[i], t.db, "main", &models[i], e, EDIT_N, "update") == 0);
		if (i == 2)
			PT_REQUIRE(prolly_branch_create(t.db, "dev", &c[2]) == 0);
	}

	uint64_t n0, b0, n1, b1;
	stat_of(t.db, &n0, &b0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_db_cache_clear(t.db); /* so that the mark's reads are counted */
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	stat_of(t.db, &n1, &b1);
	fprintf(stderr,
	        "  # gc: %llu -> %llu nodes, removed %llu (%llu bytes), kept %llu; mark: %llu "
	        "store calls, %llu nodes read\n",
	        (unsigned long long)n0, (unsigned long long)n1, (unsigned long long)res.nodes_removed,
	        (unsigned long long)res.bytes_removed, (unsigned long long)res.nodes_kept,
	        (unsigned long long)st.store_reads, (unsigned long long)st.nodes_read);
	PT_CHECK(res.nodes_removed > 2); /* more than the two commit objects */
	PT_CHECK(n1 < n0 && n0 - n1 == res.nodes_removed);
	PT_CHECK(b1 < b0 && b0 - b1 == res.bytes_removed);
	PT_CHECK(res.nodes_kept == n1);
	/* Mark cost: refs, 2 commit generations, then one call per tree level (height <= 3 here),
	 * and only internal nodes and roots are read. */
	PT_CHECKF(st.store_reads <= 8, "%llu store calls", (unsigned long long)st.store_reads);
	uint64_t internal = 0;
	const int kept[] = {5, 4, 2, 1};
	for (int i = 0; i < 4; i++) {
		prolly_id tree;
		prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
		PT_REQUIRE(tree_of(&tree, t.db, &c[kept[i]]) == 0);
		PT_CHECK_RC(prolly_tree_stats_get(&ts, t.db, &tree, 1), 0);
		internal += ts.nodes - ts.leaves;
	}
	PT_CHECKF(st.nodes_read <= internal + 4, "mark read %llu nodes; the trees have %llu internal",
	          (unsigned long long)st.nodes_read, (unsigned long long)internal);

	/* Retained: main c5 c4, dev c2 c1; every record of each reads back. */
	for (int i = 0; i < 4; i++) {
		prolly_id tree;
		char what[32];
		snprintf(what, sizeof(what), "commit %d after gc", kept[i]);
		PT_REQUIRE(tree_of(&tree, t.db, &c[kept[i]]) == 0);
		PT_CHECK(tm_tree_check(t.db, &tree, &models[kept[i]], what) == 0);
	}
	/* Beyond the horizon: c0 is gone; c3 stays as a commit without its tree, because it lies
	 * between main's head and c2, the merge base of main and dev (retention never changes a
	 * merge: docs/commits.md). */
	prolly_commit *gone = NULL;
	PT_CHECK_RC(prolly_commit_read(&gone, t.db, &c[0]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_commit_read(&gone, t.db, &c[3]), 0);
	if (gone) {
		uint64_t cnt;
		PT_CHECK_RC(prolly_count(&cnt, t.db, &gone->tree), PROLLY_ENOTFOUND);
		prolly_commit_free(gone);
		gone = NULL;
	}
	prolly_id x;
	PT_CHECK_RC(prolly_resolve(&x, t.db, "main~1"), 0);
	PT_CHECK(prolly_id_equal(&x, &c[4]));
	PT_CHECK_RC(prolly_resolve(&x, t.db, "main~5"), PROLLY_ENOTFOUND);
	/* The log goes down to the oldest commit kept and stops quietly there. */
	log_ids l;
	memset(&l, 0, sizeof(l));
	PT_CHECK_RC(prolly_log(t.db, &c[5], on_log, &l), 0);
	PT_CHECK(l.n == 5 && prolly_id_equal(&l.ids[0], &c[5]) && prolly_id_equal(&l.ids[2], &c[3]) &&
	         prolly_id_equal(&l.ids[4], &c[1]));
	memset(&l, 0, sizeof(l));
	PT_CHECK_RC(prolly_log(t.db, &c[2], on_log, &l), 0);
	PT_CHECK(l.n == 2 && prolly_id_equal(&l.ids[0], &c[2]) && prolly_id_equal(&l.ids[1], &c[1]));
	/* main and dev still meet at c2, as before the gc. */
	PT_CHECK_RC(prolly_merge_base(&x, t.db, &c[5], &c[2]), 0);
	PT_CHECK(prolly_id_equal(&x, &c[2]));

	/* Nothing more to remove; committing goes on normally. */
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.nodes_removed == 0);
	make_puts(e, keys, vals, 10, &r, BASE_N, 9);
	tm_model m6;
	tm_model_init(&m6);
	tm_model_copy(&m6, &models[5]);
	prolly_id c6, tree6;
	PT_CHECK_RC(commit_model(&c6, t.db, "main", &m6, e, 10, "after gc"), 0);
	PT_REQUIRE(tree_of(&tree6, t.db, &c6) == 0);
	PT_CHECK(tm_tree_check(t.db, &tree6, &m6, "commit after gc") == 0);
	tm_model_dispose(&m6);
	for (int i = 0; i < 6; i++)
		tm_model_dispose(&models[i]);
	tdb_close(&t);
}

/* main and dev from a common base commit (key a), then n commits on each (keys mI, dI). */
static int diverge(prolly_id *base, prolly_id *m, prolly_id *d, prolly_db *db, int n)
{
	char k[16];
	int rc;
	if ((rc = tm_commit_put(base, db, "main", "a", "1", "base")) ||
	    (rc = prolly_branch_create(db, "dev", base)))
		return rc;
	for (int i = 0; i < n && !rc; i++) {
		snprintf(k, sizeof(k), "m%d", i);
		if (!(rc = tm_commit_put(m, db, "main", k, "x", "m"))) {
			snprintf(k, sizeof(k), "d%d", i);
			rc = tm_commit_put(d, db, "dev", k, "x", "d");
		}
	}
	return rc;
}

/* A gc with a small horizon keeps the commits between a merge base and the heads without their
 * trees (K3); a later gc that keeps more (or everything) must leave those trees out, not stop
 * at them as missing nodes (K4 in src/gc_history.c). */
BOTH_STORES(gc_keep_more_after_pruning)
{
	tdb t;
	prolly_id c, base, m, d, x;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(tdb_open(&t, lmdb, 2, 0) == 0);
	PT_REQUIRE(diverge(&base, &m, &d, t.db, 5) == 0);
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.nodes_removed > 0);
	PT_REQUIRE(prolly_resolve(&c, t.db, "main~3") == 0); /* kept as a commit only */
	prolly_id tree;
	PT_REQUIRE(tree_of(&tree, t.db, &c) == 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, t.db, &tree, 1), PROLLY_ENOTFOUND);

	unsigned keeps[] = {0, 4, 2};
	for (size_t i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
		t.db->opts.retain_commits = keeps[i];
		PT_CHECK_RC(prolly_gc(t.db, &res), 0);
		PT_CHECK(res.nodes_removed == 0);
	}
	/* Everything the heads need still reads, and the merge base is the same. */
	PT_CHECK_RC(prolly_merge_base(&x, t.db, &m, &d), 0);
	PT_CHECK(prolly_id_equal(&x, &base));
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "main", "dev", NULL, NULL), 0);
	PT_REQUIRE(tree_of(&tree, t.db, &x) == 0);
	PT_CHECK_RC(prolly_tree_stats_get(&ts, t.db, &tree, 1), 0);
	PT_CHECK(ts.records == 11);
	tdb_close(&t);
}

/* No ref may name a commit whose tree a gc pruned: branch, tag, reset and restore refuse it
 * with PROLLY_EPRUNED (a head without its tree could not be read, and would stop every gc). */
BOTH_STORES(gc_pruned_commit_names_no_ref)
{
	tdb t;
	prolly_id base, m, d, old, x;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(tdb_open(&t, lmdb, 2, 0) == 0);
	PT_REQUIRE(diverge(&base, &m, &d, t.db, 4) == 0);
	PT_REQUIRE(prolly_gc(t.db, &res) == 0);
	PT_REQUIRE(prolly_resolve(&old, t.db, "main~3") == 0); /* kept as a commit only */
	PT_CHECK_RC(prolly_branch_create(t.db, "old", &old), PROLLY_EPRUNED);
	PT_CHECK_RC(prolly_tag_create(t.db, "t", &old), PROLLY_EPRUNED);
	PT_CHECK_RC(prolly_branch_reset(NULL, t.db, "dev", &old), PROLLY_EPRUNED);
	PT_CHECK_RC(prolly_resolve(&x, t.db, "old"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&x, t.db, "dev"), 0);
	PT_CHECK(prolly_id_equal(&x, &d));
	/* The base kept its tree (K2): a branch there is fine. */
	PT_CHECK_RC(prolly_branch_create(t.db, "atbase", &base), 0);
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	tdb_close(&t);
}

BOTH_STORES(gc_retain_all_and_other_refs)
{
	tdb t;
	prolly_id c[4], orphan, tagged, h;
	tm_model m, om, tm;
	static prolly_edit e[500];
	static unsigned char keys[500][TM_KEY24];
	static char vals[500][48];
	tm_rng r;
	PT_REQUIRE(tdb_open(&t, lmdb, 0, 0) == 0);
	tm_rng_seed(&r, PT_SEED() + 1);
	tm_model_init(&m);
	tm_model_init(&om);
	tm_model_init(&tm);
	for (int i = 0; i < 4; i++) {
		make_puts(e, keys, vals, 500, &r, 100000, i);
		PT_REQUIRE(commit_model(&c[i], t.db, "main", &m, e, 500, "c") == 0);
	}
	/* A commit whose tree lost a level also wrote the single-child root it collapsed (edit.c,
	 * E5), which nothing references: 1 of 40 seeds swept (2032). A first gc takes those, so
	 * that the second one's count is the orphan tree and the reflog entries alone. */
	prolly_gc_result first = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &first), 0);
	PT_CHECK(first.nodes_removed >= first.reflog_expired);
	/* An orphan tree (no ref reaches it) and a tagged tree (refs/tags/t names its root). */
	for (int i = 0; i < 300; i++) {
		unsigned char k[TM_KEY24];
		tm_key24(k, 1000000 + (uint64_t)i);
		tm_model_put(&om, k, TM_KEY24, "orphan", 6);
		tm_key24(k, 2000000 + (uint64_t)i);
		tm_model_put(&tm, k, TM_KEY24, "tagged", 6);
	}
	PT_REQUIRE(tm_build_commit(&orphan, t.db, &om) == 0);
	PT_REQUIRE(tm_build_commit(&tagged, t.db, &tm) == 0);
	{
		prolly_txn *txn = NULL;
		prolly_ref_update u;
		memset(&u, 0, sizeof(u));
		u.name = "refs/tags/t";
		u.value = tagged;
		PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
		PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
		prolly_txn_free(txn);
	}
	prolly_tree_stats os = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&os, t.db, &orphan, 0) == 0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	/* The orphan tree, and the objects of the reflog entries the gc expired (reflog_days 0). */
	PT_CHECKF(res.nodes_removed == os.nodes + res.reflog_expired,
	          "removed %llu, orphan tree has %llu nodes, %llu reflog entries expired",
	          (unsigned long long)res.nodes_removed, (unsigned long long)os.nodes,
	          (unsigned long long)res.reflog_expired);
	prolly_db_cache_clear(t.db);
	PT_CHECK(prolly_tree_stats_get(&os, t.db, &orphan, 0) != 0); /* really gone */
	PT_CHECK(tm_tree_check(t.db, &tagged, &tm, "tagged tree") == 0);
	log_ids l;
	memset(&l, 0, sizeof(l));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK_RC(prolly_log(t.db, &h, on_log, &l), 0);
	PT_CHECK(l.n == 4);
	prolly_id tree;
	PT_REQUIRE(tree_of(&tree, t.db, &h) == 0);
	PT_CHECK(tm_tree_check(t.db, &tree, &m, "main") == 0);
	tm_model_dispose(&m);
	tm_model_dispose(&om);
	tm_model_dispose(&tm);
	tdb_close(&t);
}

/* A ref outside refs/heads naming an old commit keeps it (and its tree) under retention. */
BOTH_STORES(gc_tag_keeps_commit)
{
	tdb t;
	prolly_id c[4];
	tm_model models[4];
	static prolly_edit e[400];
	static unsigned char keys[400][TM_KEY24];
	static char vals[400][48];
	tm_rng r;
	PT_REQUIRE(tdb_open(&t, lmdb, 1, 0) == 0);
	tm_rng_seed(&r, PT_SEED() + 2);
	for (int i = 0; i < 4; i++) {
		tm_model_init(&models[i]);
		if (i)
			tm_model_copy(&models[i], &models[i - 1]);
		make_puts(e, keys, vals, 400, &r, 2000, i);
		PT_REQUIRE(commit_model(&c[i], t.db, "main", &models[i], e, 400, "c") == 0);
	}
	{
		prolly_txn *txn = NULL;
		prolly_ref_update u;
		memset(&u, 0, sizeof(u));
		u.name = "refs/tags/v0";
		u.value = c[0];
		PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
		PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
		prolly_txn_free(txn);
	}
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.nodes_removed > 0);
	prolly_db_cache_clear(t.db);
	const int kept[] = {0, 3};
	for (int i = 0; i < 2; i++) {
		prolly_id tree;
		PT_REQUIRE(tree_of(&tree, t.db, &c[kept[i]]) == 0);
		PT_CHECK(tm_tree_check(t.db, &tree, &models[kept[i]], "kept commit") == 0);
	}
	/* c1 and c2 lie between main's head and c0, the merge base of main and the tag: kept as
	 * commits (so the base is still found), without their trees. */
	for (int i = 1; i < 3; i++) {
		prolly_commit *kc = NULL;
		uint64_t cnt;
		PT_CHECK_RC(prolly_commit_read(&kc, t.db, &c[i]), 0);
		if (kc)
			PT_CHECK_RC(prolly_count(&cnt, t.db, &kc->tree), PROLLY_ENOTFOUND);
		prolly_commit_free(kc);
	}
	for (int i = 0; i < 4; i++)
		tm_model_dispose(&models[i]);
	tdb_close(&t);
}

/* ---- gc against writes in flight ----------------------------------------------------------- */

BOTH_STORES(gc_during_write)
{
	tdb t;
	prolly_id c0, c1, head, tree, root, nc, h;
	prolly_txn *txn = NULL;
	prolly_edit e = tm_put("a", "1");
	PT_REQUIRE(tdb_open(&t, lmdb, 1, 0) == 0);
	PT_REQUIRE(prolly_commit_edits(&c0, t.db, "main", &e, 1, "c0") == 0);
	e.key.data = "b";
	PT_REQUIRE(prolly_commit_edits(&c1, t.db, "main", &e, 1, "c1") == 0);

	/* A write begins: reads the head, builds on its tree. */
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_REQUIRE(prolly_branch_head(&head, t.db, "main") == 0);
	PT_REQUIRE(tree_of(&tree, t.db, &head) == 0);
	e.key.data = "c";
	PT_REQUIRE(prolly_edit_tree(&root, txn, &tree, &e, 1) == 0);
	PT_REQUIRE(prolly_commit_create(&nc, txn, &root, &head, 1, 0, "in flight") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "main", &head, &nc) == 0);
	uint64_t n0, b0, n1, b1;
	/* A gc runs meanwhile (it removes c0). */
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.nodes_removed > 0);
	stat_of(t.db, &n0, &b0);
	/* The write fails and publishes nothing. */
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ECONFLICT);
	prolly_txn_free(txn);
	stat_of(t.db, &n1, &b1);
	PT_CHECK(n1 == n0 && b1 == b0);
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c1));
	prolly_commit *none = NULL;
	PT_CHECK_RC(prolly_commit_read(&none, t.db, &nc), PROLLY_ENOTFOUND);
	/* Retrying after the gc works. */
	PT_CHECK_RC(prolly_commit_edits(&h, t.db, "main", &e, 1, "retry"), 0);
	prolly_buf v = PROLLY_BUF_INIT;
	PT_REQUIRE(tree_of(&tree, t.db, &h) == 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &tree, "c", 1), 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &tree, "a", 1), 0);
	prolly_buf_dispose(&v);
	tdb_close(&t);
}

/* A builder that flushed nodes early, then a gc removing them: the commit must fail. */
BOTH_STORES(gc_during_bulk_build)
{
	tdb t;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id e0, root, c;
	PT_REQUIRE(tdb_open(&t, lmdb, 0, 8192) == 0);
	prolly_id_empty_tree(&e0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_REQUIRE(prolly_builder_new(&b, txn) == 0);
	for (uint64_t i = 0; i < 5000; i++) {
		unsigned char k[TM_KEY24];
		tm_key24(k, i);
		PT_REQUIRE(prolly_builder_add(b, k, TM_KEY24, "some value bytes", 16) == 0);
	}
	uint64_t n0, b0;
	stat_of(t.db, &n0, &b0);
	PT_CHECK(n0 > 0); /* flushed early */
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	/* Nothing reaches them yet: the gc removes every node stored by then (at least the n0 seen
	 * above; flushes still in flight in the background may land after it, T4). */
	PT_CHECKF(res.nodes_removed >= n0, "%llu removed, %llu seen before",
	          (unsigned long long)res.nodes_removed, (unsigned long long)n0);
	PT_REQUIRE(prolly_builder_finish(b, &root) == 0);
	prolly_builder_free(b);
	PT_REQUIRE(prolly_commit_create(&c, txn, &root, NULL, 0, 0, "bulk") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "bulk", NULL, &c) == 0);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ECONFLICT);
	prolly_txn_free(txn);
	prolly_id h;
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "bulk"), PROLLY_ENOTFOUND);
	tdb_close(&t);
}

#define GW_THREADS 4
#define GW_COMMITS 25

typedef struct gw_arg {
	prolly_db *db;
	int tid;
	int bad;
	int conflicts;
	atomic_int *stop;
	int gcs;
} gw_arg;

static void *gw_writer(void *p)
{
	gw_arg *a = p;
	char branch[16];
	snprintf(branch, sizeof(branch), "w%d", a->tid);
	for (int i = 0; i < GW_COMMITS; i++) {
		unsigned char keys[20][TM_KEY24];
		char val[32];
		prolly_edit e[20];
		snprintf(val, sizeof(val), "t%d-c%d", a->tid, i);
		for (int j = 0; j < 20; j++) {
			tm_key24(keys[j], (uint64_t)(a->tid * 100000 + i * 20 + j));
			e[j].op = PROLLY_PUT;
			e[j].key.data = keys[j];
			e[j].key.size = TM_KEY24;
			e[j].value.data = val;
			e[j].value.size = strlen(val);
		}
		/* Half the commits go to the thread's branch, half to the shared one. */
		const char *target = (i % 2) ? "shared" : branch;
		for (;;) {
			prolly_id out;
			int rc = prolly_commit_edits(&out, a->db, target, e, 20, val);
			if (!rc)
				break;
			if (rc != PROLLY_ECONFLICT) {
				fprintf(stderr, "  writer %d: %d %s\n", a->tid, rc, prolly_last_error());
				a->bad++;
				break;
			}
			a->conflicts++;
		}
	}
	return NULL;
}

static void *gw_gc(void *p)
{
	gw_arg *a = p;
	while (!atomic_load(a->stop)) {
		prolly_gc_result res = PROLLY_GC_RESULT_INIT;
		int rc = prolly_gc(a->db, &res);
		if (rc) {
			fprintf(stderr, "  gc: %d %s\n", rc, prolly_last_error());
			a->bad++;
			break;
		}
		a->gcs++;
	}
	return NULL;
}

/* A commit whose parent a gc removed after the txn began (the branch had moved on, and the gc
 * kept only its newer commits) is a lost race, PROLLY_ECONFLICT, as its write's epoch check would
 * say; the parent check said PROLLY_ENOTFOUND, which writers racing a gc (gc_races_writers under
 * ThreadSanitizer) took for an error. A parent that was never stored stays PROLLY_ENOTFOUND. */
PT_TEST(parent_removed_by_a_gc_is_a_lost_race_lmdb)
{
	tdb t;
	prolly_store *st2 = NULL;
	prolly_db *b = NULL;
	prolly_txn *txn = NULL;
	prolly_id old, c, cid, empty, none = tm_fake_id(0x5a);
	PT_REQUIRE(tdb_open(&t, 1, 1, 0) == 0);
	PT_REQUIRE(prolly_store_lmdb_open(&st2, t.dir, 0) == 0);
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = 1;
	o.reflog_days = 0;
	PT_REQUIRE(prolly_db_new(&b, st2, &o) == 0);
	PT_REQUIRE(tm_commit_put(&old, b, "main", "a", "1", "old") == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0); /* before the gc */
	for (int i = 0; i < 3; i++)
		PT_REQUIRE(tm_commit_put(&c, b, "main", "a",
		                         i == 0   ? "2"
		                         : i == 1 ? "3"
		                                  : "4",
		                         "new") == 0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(prolly_gc(b, &res) == 0);
	prolly_commit *gone = NULL;
	PT_REQUIRE(prolly_commit_read(&gone, b, &old) == PROLLY_ENOTFOUND); /* the gc removed it */
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_commit_create(&cid, txn, &empty, &old, 1, 0, "on a removed parent"),
	            PROLLY_ECONFLICT);
	PT_CHECK(strstr(prolly_last_error(), "a gc ran") != NULL);
	prolly_txn_free(txn);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_CHECK_RC(prolly_commit_create(&cid, txn, &empty, &none, 1, 0, "never stored"),
	            PROLLY_ENOTFOUND);
	prolly_txn_free(txn);
	prolly_close(b);
	tdb_close(&t);
}

/* A read of a tree that a gc of another handle removed meanwhile (the branch moved on and
 * retention keeps one commit) fails with PROLLY_ECORRUPT naming the node, as any missing node
 * does, and says that a gc ran during the read: the store is not damaged, and reading again (the
 * head) works. It used to say only "node ... is missing from the store", which reads as damage
 * (found by a prolly scan held open while another process rewrote the tree and ran gc --keep 1;
 * verify then passed). */
#define RG_N 20000
static prolly_db *second_handle(prolly_store *inner, unsigned retain);
BOTH_STORES(read_under_a_gc_says_so)
{
	tdb t;
	prolly_db *b = NULL;
	prolly_store *st2 = NULL;
	prolly_id c, old_tree, tree;
	prolly_buf v = PROLLY_BUF_INIT;
	static prolly_edit e[RG_N];
	static unsigned char keys[RG_N][TM_KEY24];
	static char vals[RG_N][48];
	PT_REQUIRE(tdb_open(&t, lmdb, 1, 0) == 0);
	if (lmdb) {
		prolly_options o;
		prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
		o.retain_commits = 1;
		o.reflog_days = 0;
		PT_REQUIRE(prolly_store_lmdb_open(&st2, t.dir, 0) == 0);
		PT_REQUIRE(prolly_db_new(&b, st2, &o) == 0);
	} else {
		PT_REQUIRE((b = second_handle(prolly_db_store(t.db), 1)) != NULL);
	}
	make_puts(e, keys, vals, RG_N, NULL, 0, 1);
	PT_REQUIRE(prolly_commit_edits(&c, b, "main", e, RG_N, "old") == 0);
	PT_REQUIRE(tree_of(&old_tree, b, &c) == 0);
	/* The reader has the old tree's root and one path cached. */
	PT_REQUIRE(prolly_get(&v, t.db, &old_tree, keys[0], TM_KEY24) == 0);
	make_puts(e, keys, vals, RG_N, NULL, 0, 2); /* every value changes: no node is shared */
	PT_REQUIRE(prolly_commit_edits(&c, b, "main", e, RG_N, "new") == 0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(prolly_gc(b, &res) == 0);
	PT_CHECK(res.nodes_removed > 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &old_tree, keys[RG_N - 1], TM_KEY24), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "is missing from the") &&
	              strstr(prolly_last_error(), "a gc ran during this read"),
	          "%s", prolly_last_error());
	PT_REQUIRE(tree_of(&tree, t.db, &c) == 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &tree, keys[RG_N - 1], TM_KEY24), 0);
	prolly_buf_dispose(&v);
	prolly_close(b);
	tdb_close(&t);
}

/* A node missing below a branch's root stops the gc (PROLLY_ECORRUPT naming it, nothing
 * removed). On the memory store it hung: the missing node's message asked the store for its
 * epoch (an empty write) while the store held its writers' exclusion for the gc's mark. */
PT_TEST(gc_stops_at_a_missing_node_mem)
{
	tm_tap *tap = NULL;
	prolly_db *db = tm_open_tapped_mem(&tap);
	prolly_id c, tree;
	prolly__nodeset ws;
	pnode *rn = NULL;
	uint64_t n0, b0, n1, b1;
	char hex[PROLLY_ID_HEX_SIZE];
	static prolly_edit e[RG_N];
	static unsigned char keys[RG_N][TM_KEY24];
	static char vals[RG_N][48];
	make_puts(e, keys, vals, RG_N, NULL, 0, 1);
	PT_REQUIRE(prolly_commit_edits(&c, db, "main", e, RG_N, "big") == 0);
	PT_REQUIRE(tree_of(&tree, db, &c) == 0);
	prolly__nodeset_init(&ws);
	PT_REQUIRE(prolly__load_root(db, &ws, &tree, &rn) == 0);
	PT_REQUIRE(rn->level >= 2); /* its children are read by the mark (leaves are not) */
	tap->target = *prolly__node_child(rn, 0);
	prolly__nodeset_dispose(&ws);
	tap->mode = TM_TAP_DROP;
	prolly_id_to_hex(hex, &tap->target);
	stat_of(db, &n0, &b0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &res), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), hex) != NULL, "%s", prolly_last_error());
	stat_of(db, &n1, &b1);
	PT_CHECK(n1 == n0 && b1 == b0);
	tap->mode = TM_TAP_PASS;
	PT_CHECK_RC(prolly_gc(db, &res), 0);
	prolly_close(db);
}

BOTH_STORES(gc_races_writers)
{
	tdb t;
	pthread_t th[GW_THREADS], gth;
	gw_arg args[GW_THREADS], garg;
	atomic_int stop = 0;
	PT_REQUIRE(tdb_open(&t, lmdb, 2, 0) == 0);
	memset(&garg, 0, sizeof(garg));
	garg.db = t.db;
	garg.stop = &stop;
	PT_REQUIRE(pthread_create(&gth, NULL, gw_gc, &garg) == 0);
	for (int i = 0; i < GW_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].db = t.db;
		args[i].tid = i;
		PT_REQUIRE(pthread_create(&th[i], NULL, gw_writer, &args[i]) == 0);
	}
	int conflicts = 0;
	for (int i = 0; i < GW_THREADS; i++) {
		pthread_join(th[i], NULL);
		PT_CHECK(args[i].bad == 0);
		conflicts += args[i].conflicts;
	}
	atomic_store(&stop, 1);
	pthread_join(gth, NULL);
	PT_CHECK(garg.bad == 0);
	fprintf(stderr, "  # %d gcs ran, %d conflicts retried\n", garg.gcs, conflicts);
	/* One more gc, a cold cache, then every branch's head (and its retained parent) must read
	 * in full with every node hash-verified, and hold every key written to it. */
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	prolly_db_cache_clear(t.db);
	const char *branches[] = {"w0", "w1", "w2", "w3", "shared"};
	for (int bi = 0; bi < 5; bi++) {
		prolly_id h, tree;
		prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
		PT_REQUIRE(prolly_branch_head(&h, t.db, branches[bi]) == 0);
		PT_REQUIRE(tree_of(&tree, t.db, &h) == 0);
		PT_CHECK_RC(prolly_tree_stats_get(&ts, t.db, &tree, 1), 0);
		uint64_t want = bi < 4 ? (GW_COMMITS + 1) / 2 * 20 : GW_THREADS * (GW_COMMITS / 2) * 20;
		PT_CHECKF(ts.records == want, "branch %s has %llu records, want %llu", branches[bi],
		          (unsigned long long)ts.records, (unsigned long long)want);
		prolly_id parent;
		char spec[32];
		snprintf(spec, sizeof(spec), "%s~1", branches[bi]);
		if (prolly_resolve(&parent, t.db, spec) == 0) {
			PT_REQUIRE(tree_of(&tree, t.db, &parent) == 0);
			PT_CHECK_RC(prolly_tree_stats_get(&ts, t.db, &tree, 1), 0);
		}
	}
	tdb_close(&t);
}

/* ---- failures ------------------------------------------------------------------------------ */

BOTH_STORES(gc_refuses_dangling_branch)
{
	tdb t;
	prolly_id c0;
	prolly_edit e = tm_put("k", "v");
	PT_REQUIRE(tdb_open(&t, lmdb, 0, 0) == 0);
	PT_REQUIRE(prolly_commit_edits(&c0, t.db, "main", &e, 1, "c0") == 0);
	/* An orphan (would be removed) and a branch naming a commit that does not exist. */
	tm_model om;
	tm_model_init(&om);
	tm_model_put(&om, "orphan", 6, "x", 1);
	prolly_id orphan;
	PT_REQUIRE(tm_build_commit(&orphan, t.db, &om) == 0);
	tm_model_dispose(&om);
	prolly_txn *txn = NULL;
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/broken";
	u.value = tm_fake_id(0x66);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_REQUIRE(prolly_txn_set_ref(txn, &u) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	uint64_t n0, b0, n1, b1;
	stat_of(t.db, &n0, &b0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "broken") != NULL);
	stat_of(t.db, &n1, &b1);
	PT_CHECK(n1 == n0 && b1 == b0);
	tdb_close(&t);
}

/* The nodes a gc removes are gone through the handle that ran it too, even when its cache holds
 * them: a tree read in full (so every node of it is cached), made unreachable, swept through
 * the same handle, must not be served from the cache (PROLLY_ENOTFOUND, as for any missing
 * root). Retained trees stay readable. */
BOTH_STORES(gc_purges_the_cache)
{
	tdb t;
	tm_model om, km;
	tm_model_init(&om);
	tm_model_init(&km);
	PT_REQUIRE(tdb_open(&t, lmdb, 0, 0) == 0);
	for (int i = 0; i < 3000; i++) {
		unsigned char k[TM_KEY24];
		tm_key24(k, (uint64_t)i);
		tm_model_put(&om, k, TM_KEY24, "swept away by the gc", 20);
		tm_model_put(&km, k, TM_KEY24, "kept by the branch", 18);
	}
	prolly_id orphan, kept, head;
	PT_REQUIRE(tm_build_commit(&orphan, t.db, &om) == 0); /* no ref names it */
	PT_REQUIRE(tm_build_commit(&kept, t.db, &km) == 0);
	{
		prolly_txn *txn = NULL;
		PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
		PT_CHECK_RC(prolly_commit_create(&head, txn, &kept, NULL, 0, 0, "kept"), 0);
		PT_CHECK_RC(prolly_txn_move_branch(txn, "main", NULL, &head), 0);
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
		prolly_txn_free(txn);
	}
	/* Warm: every node of both trees is read (and cached) through this handle. */
	PT_REQUIRE(tm_tree_check(t.db, &orphan, &om, "orphan before gc") == 0);
	PT_REQUIRE(tm_tree_check(t.db, &kept, &km, "kept before gc") == 0);
	prolly_tree_stats os = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&os, t.db, &orphan, 0) == 0);
	PT_REQUIRE(os.nodes > 3); /* a root and several leaves */
	prolly_thread_stats_reset();
	prolly_buf v = PROLLY_BUF_INIT;
	unsigned char k[TM_KEY24];
	tm_key24(k, 1500);
	PT_REQUIRE(prolly_get(&v, t.db, &orphan, k, TM_KEY24) == 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	PT_REQUIRE(st.store_reads == 0); /* served by the cache */

	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	/* The fixture keeps no reflog (reflog_days 0): the entry of main's creation goes too. */
	PT_CHECKF(res.nodes_removed == os.nodes + res.reflog_expired,
	          "removed %llu, the orphan tree has %llu nodes, %llu reflog entries expired",
	          (unsigned long long)res.nodes_removed, (unsigned long long)os.nodes,
	          (unsigned long long)res.reflog_expired);
	/* No cache clear: the same handle, its cache warm before the gc. */
	PT_CHECK_RC(prolly_get(&v, t.db, &orphan, k, TM_KEY24), PROLLY_ENOTFOUND);
	PT_CHECK(prolly_tree_stats_get(&os, t.db, &orphan, 0) == PROLLY_ENOTFOUND);
	prolly_cursor *cur = NULL;
	int rc = prolly_cursor_open(&cur, t.db, &orphan, NULL);
	if (rc == 0) {
		prolly_slice ck, cv;
		rc = prolly_cursor_next(cur, &ck, &cv);
	}
	PT_CHECKF(rc == PROLLY_ENOTFOUND, "cursor over the swept tree: %d", rc);
	prolly_cursor_free(cur);
	PT_CHECK(tm_tree_check(t.db, &kept, &km, "kept after gc") == 0);
	prolly_buf_dispose(&v);
	tm_model_dispose(&om);
	tm_model_dispose(&km);
	tdb_close(&t);
}

/* A handle on the memory store that does not own it (a second handle on the same store). */
static prolly_db *second_handle(prolly_store *inner, unsigned retain)
{
	prolly_db *db = NULL;
	prolly_options o;
	tp_store *w = tp_new(sizeof(tp_store), inner);
	if (!w)
		return NULL;
	w->keep_inner = 1;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = retain;
	o.reflog_days = 0;
	return prolly_db_new(&db, &w->base, &o) == 0 ? db : NULL;
}

static uint64_t calls_since_reset(void)
{
	prolly_stats s = PROLLY_STATS_INIT;
	return prolly_thread_stats(&s) == 0 ? s.store_round_trips : 0;
}

/* A ref creation or reset at a commit the handle has just read as a branch head reads neither
 * the commit nor its tree again (H4 in head_memo.c); once a gc removed that commit, the same
 * creation fails with PROLLY_ENOTFOUND, whether the handle ran that gc (its epoch moved) or
 * another handle did (its write fails the epoch check, and the retry reads). */
PT_TEST(gc_ref_create_trusts_only_the_epoch_it_read_at)
{
	tdb t;
	prolly_id c[3], x, old;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_commit *hc = NULL;
	prolly_db *other;
	PT_REQUIRE(tdb_open(&t, 0, 1, 0) == 0);
	PT_REQUIRE((other = second_handle(prolly_db_store(t.db), 1)) != NULL);
	for (int i = 0; i < 3; i++)
		PT_REQUIRE(tm_commit_put(&c[i], t.db, "main", "k",
		                         i == 0   ? "v0"
		                         : i == 1 ? "v1"
		                                  : "v2",
		                         "c") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &c[0]) == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev2", &c[0]) == 0);

	PT_REQUIRE(prolly_resolve_commit(&hc, t.db, "main") == 0 && prolly_id_equal(&hc->id, &c[2]));
	x = hc->id;
	prolly_commit_free(hc);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_branch_create(t.db, "new", &x), 0);
	PT_CHECKF(calls_since_reset() == 1, "%llu store calls", /* 3 before: ref, commit, write */
	          (unsigned long long)calls_since_reset());
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_tag_create(t.db, "v1", &x), 0);
	PT_CHECKF(calls_since_reset() == 1, "%llu store calls",
	          (unsigned long long)calls_since_reset());
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_branch_reset(&old, t.db, "dev2", &x), 0);
	PT_CHECKF(calls_since_reset() == 2, "%llu store calls", /* the head, the write */
	          (unsigned long long)calls_since_reset());
	PT_CHECK(prolly_id_equal(&old, &c[0]));
	PT_CHECK_RC(prolly_branch_create(t.db, "new", &x), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_tag_create(t.db, "v1", &x), PROLLY_ECONFLICT);

	/* dev's head is read (c[0] remembered at this epoch), dev deleted, c[0] collected by the
	 * other handle: this handle's epoch is stale, its remembered commit is not trusted. */
	PT_REQUIRE(prolly_resolve_commit(&hc, t.db, "dev") == 0 && prolly_id_equal(&hc->id, &c[0]));
	prolly_commit_free(hc);
	PT_REQUIRE(prolly_branch_delete(t.db, "dev") == 0);
	PT_CHECK_RC(prolly_gc(other, &res), 0);
	PT_CHECK(res.nodes_removed > 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "old", &c[0]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_tag_create(t.db, "v0", &c[0]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_head(&x, t.db, "old"), PROLLY_ENOTFOUND);

	/* The same by this handle's own gc. */
	PT_REQUIRE(tm_commit_put(&c[0], t.db, "main", "k", "v3", "c") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &c[0]) == 0);
	PT_REQUIRE(tm_commit_put(&c[1], t.db, "main", "k", "v4", "c") == 0);
	PT_REQUIRE(prolly_resolve_commit(&hc, t.db, "dev") == 0 && prolly_id_equal(&hc->id, &c[0]));
	prolly_commit_free(hc);
	PT_REQUIRE(prolly_branch_delete(t.db, "dev") == 0);
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	/* main's parent: retention keeps the commit, not its tree */
	PT_CHECK_RC(prolly_branch_create(t.db, "old", &c[0]), PROLLY_EPRUNED);
	prolly_close(other);
	tdb_close(&t);
}

/* The memory store's gc, wrapped so that a second thread creates a branch while the mark runs
 * (the epoch bumped, nothing deleted yet) at a commit the sweep then deletes. */
typedef struct racing_store {
	tp_store tp;
	prolly_db *db;
	prolly_id target;
	prolly_gc_mark_fn mark;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in_mark, writing; /* under mu: the mark runs; the creator reached its write */
	pthread_t creator;
	int started, create_rc; /* create_rc: read after joining the creator */
} racing_store;
static racing_store *racing; /* one test at a time */

static int racing_write(prolly_store *st, prolly_store_write *w)
{
	racing_store *r = (racing_store *)(void *)st;
	pthread_mutex_lock(&r->mu);
	if (r->in_mark && !r->writing) {
		r->writing = 1; /* the creator read the commit and its tree; its write waits for the gc */
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return tp_write(st, w);
}

static void *racing_creator(void *arg)
{
	racing_store *r = arg;
	r->create_rc = prolly_branch_create(r->db, "late", &r->target);
	return NULL;
}

static int racing_mark(void *payload)
{
	prolly_id head;
	int rc = racing->mark(payload);
	/* The handle learns the bumped epoch, then the creator starts at it. */
	if (rc || prolly_branch_head(&head, racing->db, "main") != 0)
		return rc ? rc : -1;
	pthread_mutex_lock(&racing->mu);
	racing->in_mark = 1;
	pthread_mutex_unlock(&racing->mu);
	if (pthread_create(&racing->creator, NULL, racing_creator, racing) != 0)
		return -1;
	racing->started = 1;
	pthread_mutex_lock(&racing->mu);
	while (!racing->writing)
		pthread_cond_wait(&racing->cv, &racing->mu);
	racing->in_mark = 0;
	pthread_mutex_unlock(&racing->mu);
	return 0;
}

static int racing_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep,
                     void *payload, prolly_gc_result *out)
{
	racing = (racing_store *)(void *)st;
	racing->mark = mark;
	return tp_inner(st)->gc(tp_inner(st), racing_mark, keep, payload, out);
}

/* A branch created while a gc's mark runs, at a commit no ref keeps, read (with its tree) at the
 * epoch the gc had already raised, its write landing after the sweep deleted the commit: it
 * must fail. The memory store raised its epoch before the mark only, so the write's epoch check
 * passed and the branch named a commit that no longer existed. */
PT_TEST(gc_mem_create_during_mark_fails_after_the_sweep)
{
	prolly_store *inner = NULL;
	prolly_options o;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_id c[3], x;
	PT_REQUIRE(prolly_store_mem_new(&inner) == 0);
	racing_store *r = tp_new(sizeof(*r), inner);
	PT_REQUIRE(r != NULL);
	r->tp.base.gc = racing_gc;
	r->tp.base.write = racing_write;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = 1;
	o.reflog_days = 0;
	PT_REQUIRE(prolly_db_new(&r->db, &r->tp.base, &o) == 0);
	for (int i = 0; i < 3; i++)
		PT_REQUIRE(tm_commit_put(&c[i], r->db, "main", "k",
		                         i == 0   ? "v0"
		                         : i == 1 ? "v1"
		                                  : "v2",
		                         "c") == 0);
	r->target = c[0];
	PT_CHECK_RC(prolly_gc(r->db, &res), 0);
	PT_REQUIRE(r->started);
	pthread_join(r->creator, NULL); /* its write went after the gc, then its retry */
	PT_CHECK_RC(r->create_rc, PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_resolve(&x, r->db, tm_hex(&c[0])), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_head(&x, r->db, "late"), PROLLY_ENOTFOUND);
	racing = NULL;
	prolly_close(r->db);
}

PT_TEST(gc_unsupported)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_store_mem_new(&st) == 0);
	st->gc = NULL; /* a backend without gc */
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &res), PROLLY_EUNSUPPORTED);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
