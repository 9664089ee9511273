/*
 * test_sync.c - prolly_sync: history copied between stores.
 *
 * Every direction between memory, LMDB and PostgreSQL (a throwaway cluster when PROLLY_PG_URL is
 * unset, tm_pg_guard; a fresh schema per store); a failure injected at each write of a sync
 * leaves the destination consistent (K6: no object without what it references, no ref at a
 * missing object) and a rerun completes it; two pushes racing for one branch (one wins); a
 * fetch of a branch that moved; the nodes a small push copies bounded by k x height.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/model.h"
#include "lib/passthru.h"
#include "ptest.h"
#include "sync_int.h"

#include <pthread.h>
#include <stdio.h>

static int have_pg;
static char pg_schemas[64][64];
static int n_pg_schemas;
static char *scratch;
static int scratch_n;

enum { K_MEM, K_LMDB, K_PG, N_KINDS };
static const char *const kind_name[N_KINDS] = {"mem", "lmdb", "pg"};

static prolly_store *new_store(int kind)
{
	prolly_store *st = NULL;
	if (kind == K_MEM) {
		if (prolly_store_mem_new(&st))
			return NULL;
	} else if (kind == K_LMDB) {
		char dir[600];
		snprintf(dir, sizeof(dir), "%s/s%d", scratch, scratch_n++);
		if (prolly_store_lmdb_open(&st, dir, 0))
			return NULL;
	} else {
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		if (!have_pg || n_pg_schemas == 64)
			return NULL;
		tm_pg_schema_name(pg_schemas[n_pg_schemas], "sync");
		o.schema = pg_schemas[n_pg_schemas++];
		if (prolly_store_pg_open(&st, getenv("PROLLY_PG_URL"), &o))
			return NULL;
	}
	return st;
}

static prolly_db *new_db(int kind)
{
	prolly_db *db = NULL;
	prolly_store *st = new_store(kind);
	if (!st || prolly_db_new(&db, st, NULL)) {
		fprintf(stderr, "  cannot open a %s store: %s\n", kind_name[kind], prolly_last_error());
		return NULL;
	}
	return db;
}

/* Commits n puts of keys "k<start + i x step>" with values "v<round>-<i>" to branch. */
static int put_step(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int step,
                    int round)
{
	prolly_edit *e = calloc((size_t)n, sizeof(*e));
	char(*kv)[2][32] = calloc((size_t)n, sizeof(*kv));
	int rc = PROLLY_ENOMEM;
	if (e && kv) {
		for (int i = 0; i < n; i++) {
			snprintf(kv[i][0], 32, "k%08d", start + i * step);
			snprintf(kv[i][1], 32, "v%d-%d", round, start + i * step);
			e[i].op = PROLLY_PUT;
			e[i].key = (prolly_slice){kv[i][0], strlen(kv[i][0])};
			e[i].value = (prolly_slice){kv[i][1], strlen(kv[i][1])};
		}
		rc = prolly_commit_edits(out, db, branch, e, (size_t)n, "put");
	}
	free(e);
	free(kv);
	return rc;
}

/* Commits n puts of keys "k<start..start+n)" with values "v<round>-<i>" to branch. */
static int put_range(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int round)
{
	return put_step(out, db, branch, start, n, 1, round);
}

/* A small history: main with 3 commits, feature off it with 2, merged into main. */
static int make_history(prolly_db *db, prolly_id *main_head, prolly_id *feat_head)
{
	prolly_id c;
	int rc;
	if ((rc = put_range(&c, db, "main", 0, 3000, 1)) || (rc = put_range(&c, db, "main", 10, 5, 2)))
		return rc;
	if ((rc = prolly_branch_create(db, "feature", &c)))
		return rc;
	if ((rc = put_range(&c, db, "main", 100, 3, 3)) ||
	    (rc = put_range(&c, db, "feature", 2000, 4, 4)) ||
	    (rc = put_range(&c, db, "feature", 5000, 2, 5)))
		return rc;
	if ((rc = prolly_merge_branches(NULL, NULL, db, "main", "feature", NULL, "merge")))
		return rc;
	if ((rc = prolly_branch_head(main_head, db, "main")))
		return rc;
	return prolly_branch_head(feat_head, db, "feature");
}

static int tree_of(prolly_id *tree, prolly_db *db, const prolly_id *commit);

static int count_log(void *payload, const prolly_commit *c)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

/* The history and trees of commit in b are those in a: the same commits, each tree complete. */
static int same_history(prolly_db *a, prolly_db *b, const prolly_id *commit)
{
	int na = 0, nb = 0;
	if (prolly_log(a, commit, count_log, &na) || prolly_log(b, commit, count_log, &nb) || na != nb)
		return 0;
	prolly_commit *ca = NULL;
	prolly_tree_stats sa = PROLLY_TREE_STATS_INIT, sb = PROLLY_TREE_STATS_INIT;
	int ok = prolly_commit_read(&ca, b, commit) == 0 &&
	         prolly_tree_stats_get(&sb, b, &ca->tree, 1) == 0 &&
	         prolly_tree_stats_get(&sa, a, &ca->tree, 0) == 0 && sa.nodes == sb.nodes &&
	         sa.records == sb.records;
	prolly_commit_free(ca);
	return ok;
}

static int sync_branches(prolly_sync_stats *st, prolly_db *dst, prolly_db *src,
                         const char *const *names, const prolly_id *heads, size_t n,
                         const prolly_sync_options *o)
{
	prolly_ref_update u[4];
	char refname[4][64];
	memset(u, 0, sizeof(u));
	for (size_t i = 0; i < n; i++) {
		snprintf(refname[i], sizeof(refname[i]), "refs/heads/%s", names[i]);
		u[i].name = refname[i];
		u[i].expect = PROLLY_REF_EXPECT_ANY;
		u[i].value = heads[i];
	}
	return prolly_sync(st, dst, src, NULL, 0, u, n, o);
}

/* Moves dst's main from expected to value, copying what it lacks: a fast-forward push, onto a
 * head dst holds (SY7). */
static int push_main(prolly_sync_stats *st, prolly_db *dst, prolly_db *src,
                     const prolly_id *expected, const prolly_id *value,
                     const prolly_sync_options *o)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/main";
	u.expect = PROLLY_REF_EXPECT_VALUE;
	u.expected = *expected;
	u.value = *value;
	return prolly_sync(st, dst, src, NULL, 0, &u, 1, o);
}

/* ---- every direction ---------------------------------------------------------------------- */

static void one_direction(int from, int to)
{
	prolly_db *src = new_db(from), *dst = new_db(to);
	prolly_id heads[2], c;
	const char *names[2] = {"main", "feature"};
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	PT_REQUIRE(src && dst);
	PT_REQUIRE(make_history(src, &heads[0], &heads[1]) == 0);

	PT_CHECK_RC(sync_branches(&st, dst, src, names, heads, 2, NULL), 0);
	PT_CHECKF(st.commits_copied == 6, "%s -> %s: %llu commits", kind_name[from], kind_name[to],
	          (unsigned long long)st.commits_copied);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &heads[0]));
	PT_CHECK(prolly_branch_head(&c, dst, "feature") == 0 && prolly_id_equal(&c, &heads[1]));
	PT_CHECK(same_history(src, dst, &heads[0]));
	PT_CHECK(same_history(src, dst, &heads[1]));
	PT_CHECK_RC(k6_holds(dst), 0);

	/* Again: nothing is missing, one question. */
	prolly_sync_stats again = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sync_branches(&again, dst, src, names, heads, 2, NULL), 0);
	PT_CHECK(again.commits_copied == 0 && again.nodes_copied == 0 && again.has_calls == 1);

	/* And back, after a commit in dst: only the new commit and its path travel. */
	PT_REQUIRE(put_range(&c, dst, "main", 7, 1, 9) == 0);
	prolly_sync_stats back = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sync_branches(&back, src, dst, names, &c, 1, NULL), 0);
	PT_CHECK(back.commits_copied == 1 && back.nodes_copied >= 1 && back.nodes_copied <= 4);
	PT_CHECK(same_history(dst, src, &c));
	PT_CHECK_RC(k6_holds(src), 0);

	/* A push onto the head dst holds (SY7): no question, the same trees. */
	prolly_id c2;
	PT_REQUIRE(put_range(&c2, src, "main", 40, 30, 10) == 0);
	prolly_sync_stats push = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(push_main(&push, dst, src, &c, &c2, NULL), 0);
	PT_CHECKF(push.has_calls == 0 && push.commits_copied == 1 && push.nodes_copied >= 1,
	          "%s -> %s: %llu questions, %llu commits, %llu nodes", kind_name[from], kind_name[to],
	          (unsigned long long)push.has_calls, (unsigned long long)push.commits_copied,
	          (unsigned long long)push.nodes_copied);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &c2));
	PT_CHECK(same_history(src, dst, &c2));
	PT_CHECK_RC(k6_holds(dst), 0);
	prolly_close(src);
	prolly_close(dst);
}

PT_TEST(sync_every_direction)
{
	for (int from = 0; from < N_KINDS; from++)
		for (int to = 0; to < N_KINDS; to++) {
			if ((from == K_PG || to == K_PG) && !have_pg) {
				PT_CHECKF(0, "no PostgreSQL server");
				continue;
			}
			one_direction(from, to);
		}
}

/* A store without has_nodes is asked with get_nodes. */
PT_TEST(sync_without_has_nodes)
{
	prolly_store *mem = NULL;
	prolly_db *src = new_db(K_MEM), *dst = NULL;
	prolly_id heads[2];
	const char *names[2] = {"main", "feature"};
	PT_REQUIRE(src && prolly_store_mem_new(&mem) == 0);
	tp_store *w = tp_new(sizeof(tp_store), mem);
	PT_REQUIRE(w);
	w->base.has_nodes = NULL;
	PT_REQUIRE(prolly_db_new(&dst, &w->base, NULL) == 0);
	PT_REQUIRE(make_history(src, &heads[0], &heads[1]) == 0);
	PT_CHECK_RC(sync_branches(NULL, dst, src, names, heads, 2, NULL), 0);
	PT_CHECK(same_history(src, dst, &heads[0]));
	prolly_close(src);
	prolly_close(dst);
}

/* ---- failures at each write ------------------------------------------------------------- */

typedef struct failing {
	tp_store tp;
	int writes, fail_at; /* fail the fail_at-th write that carries something (0: never) */
} failing;

static int unlisted; /* references a sync's write neither carried nor listed as required */

/* Is id among the write's nodes or its requires? */
static int listed(const prolly_store_write *w, const prolly_id *id, const prolly_id *empty)
{
	if (prolly_id_equal(id, empty))
		return 1;
	for (size_t i = 0; i < w->n_nodes; i++)
		if (prolly_id_equal(&w->nodes[i].id, id))
			return 1;
	for (size_t i = 0; i < w->n_requires; i++)
		if (prolly_id_equal(&w->requires[i], id))
			return 1;
	return 0;
}

/* Counts in unlisted what the write's objects reference that it neither carries nor requires
 * (prolly_store_write.requires: children of its nodes, trees and parents of its commits). */
static void check_requires(const prolly_store_write *w)
{
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	for (size_t i = 0; i < w->n_nodes; i++) {
		const prolly_store_node *x = &w->nodes[i];
		if (w->n_refs) /* the refs' write: commits rewritten for their trees (SY3) */
			break;
		if (x->size >= 4 && memcmp(x->data, PROLLY_COMMIT_MAGIC, 4) == 0) {
			prolly_commit *c = NULL;
			if (prolly__commit_decode(&c, &x->id, x->data, x->size) == 0) {
				unlisted += !listed(w, &c->tree, &empty);
				for (size_t p = 0; p < c->n_parents; p++)
					unlisted += !listed(w, &c->parents[p], &empty);
			}
			prolly_commit_free(c);
			continue;
		}
		pnode *nd = NULL;
		if (prolly__node_decode(&nd, &x->id, x->data, x->size, 0) != 0)
			continue;
		for (uint32_t j = 0; nd->level && j < nd->n; j++)
			unlisted += !listed(w, prolly__node_child(nd, j), &empty);
		prolly__node_unref(nd);
	}
}

static int failing_write(prolly_store *st, prolly_store_write *w)
{
	failing *f = (failing *)(void *)st;
	check_requires(w);
	if ((w->n_nodes || w->n_refs) && ++f->writes == f->fail_at)
		return prolly_set_error(PROLLY_ESTORE, "injected failure of write %d", f->writes);
	return tp_write(st, w);
}

/* A sync failed at each of its writes in turn (a fresh destination each time, prepared by
 * setup) leaves the destination consistent (K6, main as before: c->main_before, or none), and a
 * rerun completes it (c->heads[0..n_heads) in dst, main at heads[0]); with asks_nothing, no run
 * asks the destination anything. Returns the writes of a whole sync. */
typedef struct fail_case {
	prolly_db *src;
	int (*setup)(struct fail_case *c, prolly_db *dst); /* NULL: nothing to prepare */
	int (*sync)(struct fail_case *c, prolly_db *dst, prolly_sync_stats *st);
	const prolly_id *main_before;
	const prolly_id *heads;
	size_t n_heads;
	int asks_nothing;
	size_t batch; /* the syncs' batch: small, for many writes and windows (SY8) */
} fail_case;

static int fail_at_each_write(fail_case *c)
{
	prolly_id m;
	int total = 0;
	for (int at = 1; at < 10000; at++) {
		prolly_store *mem = NULL;
		prolly_db *dst = NULL;
		failing *f = NULL;
		if (prolly_store_mem_new(&mem) || !(f = tp_new(sizeof(failing), mem))) {
			PT_CHECKF(0, "no store");
			break;
		}
		f->tp.base.write = failing_write;
		if (prolly_db_new(&dst, &f->tp.base, NULL) || (c->setup && c->setup(c, dst))) {
			PT_CHECKF(0, "setup: %s", prolly_last_error());
			prolly_close(dst);
			break;
		}
		f->writes = 0;
		f->fail_at = at;
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT, again = PROLLY_SYNC_STATS_INIT;
		int rc = c->sync(c, dst, &st);
		PT_CHECK(!c->asks_nothing || st.has_calls == 0);
		if (rc == 0) { /* no write left to fail */
			total = f->writes;
			printf("# %d writes: %llu commits, %llu nodes\n", total,
			       (unsigned long long)st.commits_copied, (unsigned long long)st.nodes_copied);
			PT_CHECK(at > 1 && f->writes == at - 1);
			prolly_close(dst);
			break;
		}
		PT_CHECKF(rc == PROLLY_ESTORE, "write %d: %d %s", at, rc, prolly_last_error());
		PT_CHECKF(k6_holds(dst) == 0, "after write %d failed: %s", at, prolly_last_error());
		rc = prolly_branch_head(&m, dst, "main");
		PT_CHECKF(c->main_before ? rc == 0 && prolly_id_equal(&m, c->main_before)
		                         : rc == PROLLY_ENOTFOUND,
		          "main after write %d failed", at);
		f->fail_at = 0;
		PT_CHECK_RC(c->sync(c, dst, &again), 0);
		PT_CHECK(!c->asks_nothing || again.has_calls == 0);
		PT_CHECK(prolly_branch_head(&m, dst, "main") == 0 && prolly_id_equal(&m, &c->heads[0]));
		for (size_t i = 0; i < c->n_heads; i++)
			PT_CHECK(same_history(c->src, dst, &c->heads[i]));
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(dst);
	}
	PT_CHECKF(total > 10, "only %d writes", total);
	PT_CHECKF(unlisted == 0, "%d references neither written nor required", unlisted);
	return total;
}

static int sync_main_feature(fail_case *c, prolly_db *dst, prolly_sync_stats *st)
{
	const char *names[2] = {"main", "feature"};
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.batch = c->batch;
	return sync_branches(st, dst, c->src, names, c->heads, 2, &o);
}

PT_TEST(sync_interrupted_at_each_write_then_rerun)
{
	prolly_db *src = new_db(K_MEM);
	prolly_id heads[2];
	PT_REQUIRE(src && make_history(src, &heads[0], &heads[1]) == 0);
	fail_case c = {src, NULL, sync_main_feature, NULL, heads, 2, 0, 3};
	fail_at_each_write(&c);
	prolly_close(src);
}

/* Commits made with prolly_commit_create at any time (here older than their parents as often as
 * not, with merges reaching 5 back): the walk may take a commit before a child of its, and
 * takes it again after that child (SY8); windows of 1, 2 and 3 commits, failed at each write
 * and rerun, still copy the whole history, parents first. */
static int sync_main(fail_case *c, prolly_db *dst, prolly_sync_stats *st)
{
	const char *names[1] = {"main"};
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.batch = c->batch;
	return sync_branches(st, dst, c->src, names, c->heads, 1, &o);
}

static void out_of_time_order(void)
{
	prolly_db *src = new_db(K_MEM);
	prolly_id trees[4], c[60], x;
	prolly_txn *txn = NULL;
	PT_REQUIRE(src);
	for (int i = 0; i < 4; i++)
		PT_REQUIRE(put_range(&x, src, "scratch", 100 * i, 50, i) == 0 &&
		           tree_of(&trees[i], src, &x) == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, src) == 0);
	uint32_t r = 12345;
	for (int i = 0; i < 60; i++) {
		prolly_id p[2];
		size_t np = 0;
		if (i)
			p[np++] = c[i - 1];
		if (i >= 5 && i % 4 == 0)
			p[np++] = c[i - 5];
		r = r * 1103515245u + 12345u;
		char msg[16];
		snprintf(msg, sizeof(msg), "c%d", i);
		PT_REQUIRE(prolly_commit_create(&c[i], txn, &trees[i % 4], p, np,
		                                1000000 + (int64_t)(r >> 8) % 100, msg) == 0);
	}
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/main";
	u.expect = PROLLY_REF_EXPECT_ANY;
	u.value = c[59];
	PT_REQUIRE(prolly_txn_set_ref(txn, &u) == 0 && prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	for (size_t batch = 1; batch <= 3; batch++) {
		fail_case fc = {src, NULL, sync_main, NULL, &c[59], 1, 0, batch};
		fail_at_each_write(&fc);
	}
	prolly_close(src);
}

PT_TEST(sync_history_out_of_time_order)
{
	out_of_time_order();
}

/* K6 after a gc: an interrupted sync's nodes are unreferenced, so a gc removes them, never a child
 * and not its parent; a rerun then copies them again. With retention, tree nodes keep their
 * subtrees (commits may lose their trees: that is what retention removes). */
PT_TEST(sync_gc_keeps_k6)
{
	for (int kind = 0; kind < N_KINDS; kind++) {
		if (kind == K_PG && !have_pg)
			continue;
		prolly_db *src = new_db(K_MEM), *inner = NULL;
		prolly_id heads[2], c;
		const char *names[2] = {"main", "feature"};
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		o.batch = 4;
		PT_REQUIRE(src && make_history(src, &heads[0], &heads[1]) == 0);
		prolly_store *st = new_store(kind);
		PT_REQUIRE(st);
		failing *f = tp_new(sizeof(failing), st);
		PT_REQUIRE(f);
		f->tp.base.write = failing_write;
		f->fail_at = 7;
		PT_REQUIRE(prolly_db_new(&inner, &f->tp.base, NULL) == 0);
		PT_CHECK_RC(sync_branches(NULL, inner, src, names, heads, 2, &o), PROLLY_ESTORE);
		f->fail_at = 0;
		prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
		PT_CHECK_RC(prolly_gc(inner, &gr), 0);
		PT_CHECKF(k6_holds(inner) == 0, "%s: %s", kind_name[kind], prolly_last_error());
		PT_CHECK_RC(sync_branches(NULL, inner, src, names, heads, 2, &o), 0);
		PT_CHECK(prolly_branch_head(&c, inner, "main") == 0 && prolly_id_equal(&c, &heads[0]));
		PT_CHECK(same_history(src, inner, &heads[0]));
		PT_CHECK_RC(prolly_gc(inner, &gr), 0);
		PT_CHECKF(k6_holds(inner) == 0, "%s: %s", kind_name[kind], prolly_last_error());
		prolly_close(inner);
		prolly_close(src);
	}
	prolly_options opts = PROLLY_OPTIONS_INIT;
	opts.retain_commits = 1;
	opts.reflog_days = 0;
	prolly_db *db = NULL;
	prolly_store *mem = NULL;
	prolly_id heads[2];
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && prolly_db_new(&db, mem, &opts) == 0);
	PT_REQUIRE(make_history(db, &heads[0], &heads[1]) == 0);
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &gr), 0);
	PT_CHECK(gr.nodes_removed > 0);
	PT_CHECK_RC(k6_holds_ex(db, 1), 0);
	prolly_close(db);
}

/* ---- push race ------------------------------------------------------------------------------- */

typedef struct racer {
	prolly_db *dst, *src;
	prolly_id old, head;
	pthread_barrier_t *go;
	int rc;
} racer;

static void *race(void *arg)
{
	racer *r = arg;
	pthread_barrier_wait(r->go);
	r->rc = push_main(NULL, r->dst, r->src, &r->old, &r->head, NULL);
	return NULL;
}

PT_TEST(sync_push_race_one_wins)
{
	for (int kind = 0; kind < N_KINDS; kind++) {
		if (kind == K_PG && !have_pg)
			continue;
		prolly_db *remote = new_db(kind), *a = new_db(K_MEM), *b = new_db(K_MEM);
		prolly_id base, ha, hb, c;
		PT_REQUIRE(remote && a && b);
		PT_REQUIRE(put_range(&base, remote, "main", 0, 500, 1) == 0);
		const char *names[1] = {"main"};
		PT_REQUIRE(sync_branches(NULL, a, remote, names, &base, 1, NULL) == 0);
		PT_REQUIRE(sync_branches(NULL, b, remote, names, &base, 1, NULL) == 0);
		PT_REQUIRE(put_range(&ha, a, "main", 3, 1, 2) == 0);
		PT_REQUIRE(put_range(&hb, b, "main", 4, 1, 3) == 0);
		pthread_barrier_t go;
		pthread_barrier_init(&go, NULL, 2);
		racer ra = {remote, a, base, ha, &go, 0}, rb = {remote, b, base, hb, &go, 0};
		pthread_t ta, tb;
		pthread_create(&ta, NULL, race, &ra);
		pthread_create(&tb, NULL, race, &rb);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		pthread_barrier_destroy(&go);
		PT_CHECKF((ra.rc == 0) + (rb.rc == 0) == 1, "%s: %d %d", kind_name[kind], ra.rc, rb.rc);
		PT_CHECK(ra.rc == PROLLY_ECONFLICT || rb.rc == PROLLY_ECONFLICT);
		PT_REQUIRE(prolly_branch_head(&c, remote, "main") == 0);
		PT_CHECK(prolly_id_equal(&c, ra.rc == 0 ? &ha : &hb));
		PT_CHECK_RC(k6_holds(remote), 0);
		prolly_close(remote);
		prolly_close(a);
		prolly_close(b);
	}
}

/* ---- fetch of a branch that moved ------------------------------------------------------------ */

PT_TEST(sync_fetch_moved_branch)
{
	prolly_db *remote = new_db(K_LMDB), *local = new_db(K_MEM);
	prolly_id h1, h2, c;
	prolly_ref_update u;
	PT_REQUIRE(remote && local);
	PT_REQUIRE(put_range(&h1, remote, "main", 0, 2000, 1) == 0);
	memset(&u, 0, sizeof(u));
	u.name = "remotes/origin/main";
	u.value = h1;
	PT_CHECK_RC(prolly_sync(NULL, local, remote, NULL, 0, &u, 1, NULL), 0);
	PT_CHECK(prolly__get_ref(local, "remotes/origin/main", &c) == 0 && prolly_id_equal(&c, &h1));
	PT_REQUIRE(put_range(&h2, remote, "main", 50, 10, 2) == 0);
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	u.expect = PROLLY_REF_EXPECT_VALUE;
	u.expected = h1;
	u.value = h2;
	PT_CHECK_RC(prolly_sync(&st, local, remote, NULL, 0, &u, 1, NULL), 0);
	PT_CHECK(st.commits_copied == 1);
	PT_CHECK(st.has_calls == 0); /* the tracking ref's commit is a known head (SY7) */
	PT_CHECK(prolly__get_ref(local, "remotes/origin/main", &c) == 0 && prolly_id_equal(&c, &h2));
	PT_CHECK(same_history(remote, local, &h2));
	/* A stale expectation changes nothing and says what the ref holds. */
	u.expected = h1;
	PT_CHECK_RC(prolly_sync(NULL, local, remote, NULL, 0, &u, 1, NULL), PROLLY_ECONFLICT);
	PT_CHECK(u.conflict && u.current_exists && prolly_id_equal(&u.current, &h2));
	prolly_close(remote);
	prolly_close(local);
}

/* ---- cost of a small push ------------------------------------------------------------------ */

PT_TEST(sync_small_push_copies_k_times_height)
{
	prolly_db *local = new_db(K_MEM), *remote = new_db(K_MEM);
	prolly_id h, c;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	prolly_commit *hc = NULL;
	const char *names[1] = {"main"};
	PT_REQUIRE(local && remote);
	PT_REQUIRE(put_range(&h, local, "main", 0, 100000, 1) == 0);
	PT_REQUIRE(sync_branches(NULL, remote, local, names, &h, 1, NULL) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, local, &h) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, local, &hc->tree, 0) == 0);
	prolly_commit_free(hc);
	PT_REQUIRE(ts.height >= 3);
	const int k = 5;
	for (int i = 0; i < k; i++) /* k records far apart: k separate leaves, k paths */
		PT_REQUIRE(put_range(&c, local, "main", 1000 + i * 19000, 1, 7) == 0);
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sync_branches(&st, remote, local, names, &c, 1, NULL), 0);
	PT_CHECK(st.commits_copied == (uint64_t)k);
	/* Each commit changed one record: its path, height nodes (a boundary that moved may add a
	 * neighbour per level), so k commits of one change carry at most 2 x k x height. */
	uint64_t bound = (uint64_t)k * ts.height * 2;
	PT_CHECKF(st.nodes_copied <= bound, "%llu nodes copied, bound %llu (height %u)",
	          (unsigned long long)st.nodes_copied, (unsigned long long)bound, ts.height);
	/* One question per level of the walk: commits (k + 1 asked in k + 1 generations at most),
	 * then the trees level by level. */
	PT_CHECKF(st.has_calls <= (uint64_t)(k + 1) + ts.height + 1, "%llu questions",
	          (unsigned long long)st.has_calls);
	printf("# %d commits of one change each, height %u: %llu nodes, %llu questions, %llu reads, "
	       "%llu writes\n",
	       k, ts.height, (unsigned long long)st.nodes_copied, (unsigned long long)st.has_calls,
	       (unsigned long long)st.read_calls, (unsigned long long)st.write_calls);
	PT_CHECK(same_history(local, remote, &c));
	prolly_close(local);
	prolly_close(remote);
}

/* A long linear history travels in a few round trips where the source reads ahead (SY5: the
 * memory store has get_ancestors), and correctly where it cannot (LMDB has none). */
PT_TEST(sync_long_history_reads_ahead)
{
	for (int kind = K_MEM; kind <= K_LMDB; kind++) {
		prolly_db *src = new_db(kind), *dst = new_db(K_MEM);
		prolly_id h;
		const char *names[1] = {"main"};
		PT_REQUIRE(src && dst);
		for (int i = 0; i < 300; i++)
			PT_REQUIRE(put_range(&h, src, "main", i, 1, i) == 0);
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sync_branches(&st, dst, src, names, &h, 1, NULL), 0);
		PT_CHECK(st.commits_copied == 300);
		PT_CHECK(same_history(src, dst, &h));
		printf("# 300 commits from %s: %llu questions, %llu reads, %llu writes\n", kind_name[kind],
		       (unsigned long long)st.has_calls, (unsigned long long)st.read_calls,
		       (unsigned long long)st.write_calls);
		/* both stores have get_ancestors: a batch of commits per question and per read */
		PT_CHECKF(st.has_calls <= 6 && st.read_calls <= 6, "%s: %llu questions, %llu reads",
		          kind_name[kind], (unsigned long long)st.has_calls,
		          (unsigned long long)st.read_calls);
		/* and a push of 3 more after it: the walk stops at the commit dst has */
		for (int i = 0; i < 3; i++)
			PT_REQUIRE(put_range(&h, src, "main", 1000 + i, 1, i) == 0);
		prolly_sync_stats more = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sync_branches(&more, dst, src, names, &h, 1, NULL), 0);
		PT_CHECK(more.commits_copied == 3);
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(src);
		prolly_close(dst);
	}
}

/* ---- memory bounded by the batch (SY8) ---------------------------------------------------- */

/* Adds n steps to main in db: a commit of one change each, and every 8th a branch of two commits
 * (60 records far apart changed) merged after one more commit to main (its tree differs from main's in about 60 leaves,
 * more than a write of 16 objects: the merge's comparison set overflows, SY8). */
static int long_history(prolly_id *head, prolly_db *db, int from, int n)
{
	prolly_id c;
	int rc = 0;
	for (int i = from; i < from + n && !rc; i++) {
		if (i % 8 != 7) {
			rc = put_range(head, db, "main", 20 * i, 1, i);
			continue;
		}
		if ((rc = prolly_branch_create(db, "side", head)) ||
		    (rc = put_step(&c, db, "side", 5 + i, 60, 331, i)) ||
		    (rc = put_range(&c, db, "side", 7 + i, 1, i)) ||
		    (rc = put_range(head, db, "main", 20 * i, 1, i)) ||
		    (rc = prolly_merge_branches(head, NULL, db, "main", "side", NULL, "merge")))
			break;
		rc = prolly_branch_delete(db, "side");
	}
	return rc;
}

/* A base of `records` records on main in src, then long_history(n), cloned into dst with the
 * given batch: *h the head, *total the commits of its log, *st the clone's counters. */
static int clone_long_history(prolly_db *src, prolly_db *dst, int n, int records, size_t batch,
                              prolly_id *h, int *total, prolly_sync_stats *st)
{
	prolly_id base;
	const char *names[1] = {"main"};
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	int rc;
	o.batch = batch;
	*total = 0;
	if ((rc = put_range(&base, src, "main", 0, records, 0)) || (rc = long_history(h, src, 0, n)) ||
	    (rc = prolly_log(src, h, count_log, total)))
		return rc;
	return sync_branches(st, dst, src, names, h, 1, &o);
}

/* What one sync held (prolly__sync_last_held), printed and checked against the batch: a
 * window holds a batch of commits, and the ids held at once (the window and its parents, the
 * frontier, the read-ahead, the trees known, a merge's comparison set) stay under a fixed
 * multiple of the batch, whatever the history's length; the checkpoints hold one id per
 * window, and a merge's side branch one more while it runs beside main. */
static void check_held(const char *what, size_t batch, uint64_t commits)
{
	prolly__sync_held held = prolly__sync_last_held;
	printf("# %s: %llu commits, batch %zu: %zu windows, at most %zu commits a window, %zu ids "
	       "held, %zu in checkpoints\n",
	       what, (unsigned long long)commits, batch, held.windows, held.window_peak, held.ids_peak,
	       held.checkpoints);
	PT_CHECKF(held.window_peak <= batch, "%s: %zu commits in a window", what, held.window_peak);
	PT_CHECKF(held.windows >= commits / batch, "%s: %zu windows", what, held.windows);
	PT_CHECKF(held.ids_peak <= 8 * batch, "%s: %zu ids held", what, held.ids_peak);
	PT_CHECKF(held.checkpoints <= 2 * held.windows, "%s: %zu ids in %zu checkpoints", what,
	          held.checkpoints, held.windows);
}

/* A clone of a history 40 and 80 times as long as the batch, then a push onto its head (SY7:
 * trees compared locally, merges past their comparison set asked about) of as many commits
 * again: every copy whole and consistent, and the ids held the same for both lengths. */
PT_TEST(sync_memory_bounded_by_batch)
{
	const size_t batch = 16;
	size_t peak[4] = {0, 0, 0, 0}; /* clone, clone twice as long, push, push twice as long */
	for (int len = 0; len < 2; len++) {
		const int n = len ? 1280 : 640;
		prolly_db *src = new_db(K_MEM), *dst = new_db(K_MEM);
		prolly_id h, c;
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		o.batch = batch;
		PT_REQUIRE(src && dst);
		int total = 0;
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(clone_long_history(src, dst, n, 20000, batch, &h, &total, &st), 0);
		PT_CHECKF(st.commits_copied == (uint64_t)total, "%llu of %d commits",
		          (unsigned long long)st.commits_copied, total);
		check_held(len ? "clone, 1280" : "clone, 640", batch, st.commits_copied);
		peak[len] = prolly__sync_last_held.ids_peak;
		PT_CHECK(same_history(src, dst, &h));
		PT_CHECK_RC(k6_holds(dst), 0);

		/* a push onto the head dst holds */
		PT_REQUIRE(long_history(&c, src, n, n) == 0);
		prolly_sync_stats ps = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(push_main(&ps, dst, src, &h, &c, &o), 0);
		check_held(len ? "push, 1280" : "push, 640", batch, ps.commits_copied);
		peak[2 + len] = prolly__sync_last_held.ids_peak;
		/* only the merges (n / 8) ask: each is compared with main alone, the nodes its side
		 * changed (about 60 leaves and their parents) asked about 16 at a time, 8 questions at
		 * most */
		PT_CHECKF(ps.has_calls > 0 && ps.has_calls <= 8 * (uint64_t)(n / 8), "%llu questions",
		          (unsigned long long)ps.has_calls);
		PT_CHECK(prolly_branch_head(&h, dst, "main") == 0 && prolly_id_equal(&h, &c));
		PT_CHECK(same_history(src, dst, &c));
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(src);
		prolly_close(dst);
	}
	PT_CHECKF(peak[1] <= peak[0] + batch && peak[3] <= peak[2] + batch,
	          "ids held: clone %zu for 640 steps, %zu for 1280; push %zu and %zu", peak[0], peak[1],
	          peak[2], peak[3]);
}

/* ---- trees compared locally (SY7, diff.c D6) --------------------------------------------- */

/* Every node id of tree root in db, into set (value: 1 + its position in a pre-order walk). */
static int tree_nodes(prolly__idmap *set, prolly_db *db, const prolly_id *root)
{
	prolly__nodeset ws;
	pnode *nd = NULL;
	int rc;
	if (prolly_id_equal(root, &db->empty_tree) || prolly__idmap_get(set, root))
		return 0;
	prolly__nodeset_init(&ws);
	rc = prolly__load(db, &ws, root, 1, &nd);
	if (!rc)
		rc = prolly__idmap_put(set, root, 1);
	for (uint32_t j = 0; !rc && nd->level > 0 && j < nd->n; j++)
		rc = tree_nodes(set, db, prolly__node_child(nd, j));
	prolly__nodeset_dispose(&ws);
	return rc;
}

typedef struct reported {
	prolly__idmap at; /* id -> 1 + position reported */
	size_t n, dups;
} reported;

static int on_reported(void *payload, const prolly_id *id, const pnode *nd)
{
	reported *r = payload;
	(void)nd;
	if (prolly__idmap_get(&r->at, id))
		r->dups++;
	r->n++;
	return prolly__idmap_put(&r->at, id, r->n);
}

/* prolly__diff_nodes(from, to) reports exactly the nodes of to that from lacks, each once,
 * every reported child before its parent. */
static void check_diff_nodes(prolly_db *db, const prolly_id *from, const prolly_id *to,
                             const char *what)
{
	prolly__idmap nf, nt;
	reported r;
	memset(&r, 0, sizeof(r));
	prolly__idmap_init(&nf);
	prolly__idmap_init(&nt);
	prolly__idmap_init(&r.at);
	PT_REQUIRE(tree_nodes(&nf, db, from) == 0 && tree_nodes(&nt, db, to) == 0);
	PT_CHECK_RC(prolly__diff_nodes(db, from, to, on_reported, &r), 0);
	size_t want = 0, missed = 0, extra = 0, order = 0;
	for (size_t i = 0; i < nt.len; i++)
		if (!prolly__idmap_get(&nf, &nt.ids[i])) {
			want++;
			missed += !prolly__idmap_get(&r.at, &nt.ids[i]);
		}
	for (size_t i = 0; i < r.at.len; i++) {
		const prolly_id *id = &r.at.ids[i];
		extra += !prolly__idmap_get(&nt, id) || prolly__idmap_get(&nf, id);
		prolly__nodeset ws;
		pnode *nd = NULL;
		prolly__nodeset_init(&ws);
		PT_REQUIRE(prolly__load(db, &ws, id, 1, &nd) == 0);
		for (uint32_t j = 0; nd->level > 0 && j < nd->n; j++) {
			uintptr_t k = prolly__idmap_get(&r.at, prolly__node_child(nd, j));
			order += k ? k > r.at.vals[i] : !prolly__idmap_get(&nf, prolly__node_child(nd, j));
		}
		prolly__nodeset_dispose(&ws);
	}
	PT_CHECKF(r.n == want && !missed && !extra && !r.dups && !order,
	          "%s: %zu reported, %zu wanted, %zu missed, %zu extra, %zu twice, %zu out of order",
	          what, r.n, want, missed, extra, r.dups, order);
	prolly__idmap_dispose(&nf);
	prolly__idmap_dispose(&nt);
	prolly__idmap_dispose(&r.at);
}

static int tree_of(prolly_id *tree, prolly_db *db, const prolly_id *commit)
{
	prolly_commit *c = NULL;
	int rc = prolly_commit_read(&c, db, commit);
	if (!rc)
		*tree = c->tree;
	prolly_commit_free(c);
	return rc;
}

PT_TEST(sync_diff_nodes_children_first)
{
	prolly_db *db = new_db(K_MEM);
	prolly_id c, a, b, big, big2, odd, small, e;
	PT_REQUIRE(db);
	e = db->empty_tree;
	PT_REQUIRE(put_range(&c, db, "a", 0, 30000, 1) == 0 && tree_of(&a, db, &c) == 0);
	for (int i = 0; i < 40; i++) /* scattered changes and inserts */
		PT_REQUIRE(put_range(&c, db, "a", i * 997, 1 + i % 3, 2) == 0);
	PT_REQUIRE(put_range(&c, db, "a", 50000, 500, 2) == 0 && tree_of(&b, db, &c) == 0);
	/* an unrelated tree large enough for the walk's key windows, and a one-leaf tree */
	PT_REQUIRE(put_step(&c, db, "big", 0, 400000, 2, 3) == 0 && tree_of(&big, db, &c) == 0);
	PT_REQUIRE(put_range(&c, db, "small", 5, 3, 4) == 0 && tree_of(&small, db, &c) == 0);
	/* keys new to every leaf of big: both sides' lists cut into windows, leaves of one side
	 * straddling the other's */
	PT_REQUIRE(put_step(&c, db, "big", 1, 8000, 100, 5) == 0 && tree_of(&big2, db, &c) == 0);
	/* and an unrelated one of the same size, whose leaves end at other keys than big's */
	PT_REQUIRE(put_step(&c, db, "odd", 1, 400000, 2, 6) == 0 && tree_of(&odd, db, &c) == 0);
	check_diff_nodes(db, &big, &odd, "big -> odd");
	check_diff_nodes(db, &odd, &big2, "odd -> big2");
	check_diff_nodes(db, &big, &big2, "big -> big2");
	check_diff_nodes(db, &big2, &big, "big2 -> big");
	check_diff_nodes(db, &a, &b, "a -> b");
	check_diff_nodes(db, &b, &a, "b -> a");
	check_diff_nodes(db, &e, &a, "empty -> a");
	check_diff_nodes(db, &a, &e, "a -> empty");
	check_diff_nodes(db, &a, &big, "a -> big");
	check_diff_nodes(db, &big, &b, "big -> b");
	check_diff_nodes(db, &small, &big, "small -> big");
	check_diff_nodes(db, &big, &small, "big -> small");
	check_diff_nodes(db, &b, &b, "b -> b");
	prolly_close(db);
}

typedef struct counting {
	tp_store tp;
	int has;      /* has_nodes calls */
	int get_ref;  /* get_ref calls */
	int get_refs; /* get_refs calls */
} counting;

static void count_call(tp_store *w, const char *what)
{
	counting *c = (counting *)(void *)w;
	if (strcmp(what, "has_nodes") == 0)
		c->has++;
	else if (strcmp(what, "get_ref") == 0)
		c->get_ref++;
	else if (strcmp(what, "get_refs") == 0)
		c->get_refs++;
}

/* A push onto the head the remote holds asks it nothing (SY7), between every pair of kinds; a
 * merge of a branch that left before that head asks once, about where the branch left. */
PT_TEST(sync_push_onto_known_head_asks_nothing)
{
	for (int from = K_MEM; from <= K_LMDB; from++)
		for (int to = 0; to < N_KINDS; to++) {
			if (to == K_PG && !have_pg)
				continue;
			prolly_db *local = new_db(from), *remote = NULL;
			prolly_store *st = new_store(to);
			PT_REQUIRE(local && st);
			counting *w = tp_new(sizeof(counting), st);
			PT_REQUIRE(w);
			w->tp.on_call = count_call;
			PT_REQUIRE(prolly_db_new(&remote, &w->tp.base, NULL) == 0);
			prolly_id h, older, c;
			prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
			prolly_id tree;
			PT_REQUIRE(put_range(&older, local, "main", 0, 20000, 1) == 0);
			PT_REQUIRE(put_range(&h, local, "main", 3, 2, 2) == 0);
			PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), 0); /* a clone */
			PT_REQUIRE(tree_of(&tree, local, &h) == 0 &&
			           prolly_tree_stats_get(&ts, local, &tree, 0) == 0);
			const int k = 3;
			for (int i = 0; i < k; i++)
				PT_REQUIRE(put_range(&h, local, "main", 1000 + i * 6000, 1, 5) == 0);
			w->has = 0;
			prolly_sync_stats ps = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_push(&ps, local, remote, "origin", "main", 0), 0);
			PT_CHECKF(ps.has_calls == 0 && w->has == 0, "%s -> %s: %llu questions, %d has_nodes",
			          kind_name[from], kind_name[to], (unsigned long long)ps.has_calls, w->has);
			PT_CHECK(ps.commits_copied == (uint64_t)k);
			printf("# %s -> %s: %d commits of one change each, height %u: %llu nodes, %llu "
			       "questions, %llu reads, %llu writes\n",
			       kind_name[from], kind_name[to], k, ts.height,
			       (unsigned long long)ps.nodes_copied, (unsigned long long)ps.has_calls,
			       (unsigned long long)ps.read_calls, (unsigned long long)ps.write_calls);
			PT_CHECKF(ps.nodes_copied <= (uint64_t)k * ts.height * 2, "%llu nodes, height %u",
			          (unsigned long long)ps.nodes_copied, ts.height);
			PT_CHECK(prolly_branch_head(&c, remote, "main") == 0 && prolly_id_equal(&c, &h));
			PT_CHECK(same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A branch from before the remote's head, merged after it: its commit and the
			 * merge travel; the walk asks once, about the commit the branch left from (and
			 * its tree, which the branch's commit is then compared with). */
			PT_REQUIRE(prolly_branch_create(local, "side", &older) == 0);
			PT_REQUIRE(put_range(&c, local, "side", 9000, 2, 6) == 0);
			PT_REQUIRE(prolly_merge_branches(NULL, NULL, local, "main", "side", NULL, "m") == 0);
			PT_REQUIRE(prolly_branch_head(&h, local, "main") == 0);
			w->has = 0;
			prolly_sync_stats ms = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_push(&ms, local, remote, "origin", "main", 0), 0);
			PT_CHECKF(ms.has_calls == 1 && w->has == 1 && ms.commits_copied == 2,
			          "merge: %llu questions (%d has_nodes), %llu commits",
			          (unsigned long long)ms.has_calls, w->has,
			          (unsigned long long)ms.commits_copied);
			/* the side commit's path, and the merge's nodes that neither parent's tree has:
			 * one path each at most (a merge compared with its first parent alone resends
			 * the side's path, and the side commit compared with the remote's head resends
			 * main's paths) */
			PT_CHECKF(ms.nodes_copied <= 2u * ts.height, "merge: %llu nodes",
			          (unsigned long long)ms.nodes_copied);
			PT_CHECK(same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A pull's merge: the remote moved (another client's commit r), this store
			 * fetched it, committed l and merged r. Pushed: l with its path, and of the
			 * merge's tree only what neither l's nor r's tree has (the remote has r's). */
			prolly_id r, l;
			PT_REQUIRE(put_range(&r, remote, "main", 15000, 1, 7) == 0);
			PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", NULL, NULL), 0);
			PT_REQUIRE(put_range(&l, local, "main", 500, 1, 8) == 0);
			PT_REQUIRE(prolly_branch_create(local, "up", &r) == 0);
			PT_REQUIRE(prolly_merge_branches(NULL, NULL, local, "main", "up", NULL, "m") == 0);
			PT_REQUIRE(prolly_branch_head(&h, local, "main") == 0);
			w->has = 0;
			prolly_sync_stats pl = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_push(&pl, local, remote, "origin", "main", 0), 0);
			PT_CHECKF(pl.commits_copied == 2 && pl.nodes_copied <= 2u * ts.height - 1,
			          "pull's merge: %llu commits, %llu nodes, %llu questions",
			          (unsigned long long)pl.commits_copied, (unsigned long long)pl.nodes_copied,
			          (unsigned long long)pl.has_calls);
			PT_CHECK(same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A forced push of an unrelated history: no parent's tree to compare its root's
			 * with, so that tree is asked about; the remote holds it already (the first
			 * commit's records), and nothing but the commit travels. */
			prolly_id u;
			prolly_txn *txn = NULL;
			PT_REQUIRE(put_range(&u, local, "other", 0, 20000, 1) == 0);
			PT_REQUIRE(prolly_txn_begin(&txn, local) == 0);
			PT_REQUIRE(prolly_txn_move_branch(txn, "main", &h, &u) == 0);
			PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
			prolly_txn_free(txn);
			prolly_sync_stats fs = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_push(&fs, local, remote, "origin", "main", 1), 0);
			PT_CHECKF(fs.commits_copied == 1 && fs.nodes_copied == 0 && fs.has_calls == 1,
			          "unrelated: %llu commits, %llu nodes, %llu questions",
			          (unsigned long long)fs.commits_copied, (unsigned long long)fs.nodes_copied,
			          (unsigned long long)fs.has_calls);
			PT_CHECK(same_history(local, remote, &u));
			PT_CHECK_RC(k6_holds(remote), 0);
			prolly_close(local);
			prolly_close(remote);
		}
}

/* A fetch of many branches that all moved reads the tracking refs it expects in one store call
 * (get_refs; before, one get_ref each: a round trip per branch on PostgreSQL), for every
 * destination kind, and with a destination store that has no get_refs (one get_ref each). */
PT_TEST(sync_fetch_of_many_moved_branches_reads_refs_once)
{
	enum { B = 300 };
	for (int to = 0; to < N_KINDS; to++)
		for (int without = 0; without < 2; without++) {
			if (to == K_PG && !have_pg)
				continue;
			prolly_db *remote = new_db(K_MEM), *local = NULL;
			prolly_store *st = new_store(to);
			PT_REQUIRE(remote && st);
			counting *w = tp_new(sizeof(counting), st);
			PT_REQUIRE(w);
			w->tp.on_call = count_call;
			if (without)
				w->tp.base.get_refs = NULL;
			PT_REQUIRE(prolly_db_new(&local, &w->tp.base, NULL) == 0);
			prolly_id h, c;
			char name[32];
			PT_REQUIRE(put_range(&h, remote, "main", 0, 2000, 1) == 0);
			for (int i = 0; i < B; i++) { /* each with a head of its own */
				snprintf(name, sizeof(name), "b%03d", i);
				PT_REQUIRE(prolly_branch_create(remote, name, &h) == 0 &&
				           put_range(&c, remote, name, i * 5, 1, 2) == 0);
			}
			PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", NULL, NULL), 0);
			for (int i = 0; i < B; i++) {
				snprintf(name, sizeof(name), "b%03d", i);
				PT_REQUIRE(put_range(&c, remote, name, i * 5 + 1, 1, 3) == 0);
			}
			w->get_ref = w->get_refs = w->has = 0;
			prolly_sync_stats fs = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_fetch(&fs, local, remote, "origin", NULL, NULL), 0);
			PT_CHECKF(fs.commits_copied == B && fs.has_calls == 0 && w->has == 0,
			          "%s: %llu commits, %llu questions", kind_name[to],
			          (unsigned long long)fs.commits_copied, (unsigned long long)fs.has_calls);
			if (without)
				PT_CHECKF(w->get_refs == 0 && w->get_ref >= B, "%s without get_refs: %d, %d",
				          kind_name[to], w->get_refs, w->get_ref);
			else
				PT_CHECKF(w->get_refs == 1 && w->get_ref < 8, "%s: %d get_refs, %d get_ref",
				          kind_name[to], w->get_refs, w->get_ref);
			for (int i = 0; i < B; i += 37) {
				snprintf(name, sizeof(name), "remotes/origin/b%03d", i);
				prolly_id mine, theirs;
				PT_CHECK(prolly__get_ref(local, name, &mine) == 0);
				PT_CHECK(prolly_branch_head(&theirs, remote, name + 15) == 0 &&
				         prolly_id_equal(&mine, &theirs));
			}
			PT_CHECK_RC(k6_holds(local), 0);
			/* the engine checks the names it hands get_refs (S3 of prolly/store.h) */
			const char *bad[2] = {"remotes/origin/b000", ""};
			unsigned char fd[2];
			prolly_id got[2];
			w->get_refs = w->get_ref = 0;
			PT_CHECK_RC(prolly__get_refs(local, bad, 2, got, fd), PROLLY_EINVAL);
			PT_CHECK(w->get_refs == 0 && w->get_ref == 0);
			prolly_close(local);
			prolly_close(remote);
		}
}

/* A push onto a known head failed at each of its writes leaves the remote consistent (K6, main
 * where it was), and a rerun, again without questions, completes it. */
static int push_setup(fail_case *c, prolly_db *dst)
{
	const char *names[1] = {"main"};
	return sync_branches(NULL, dst, c->src, names, c->main_before, 1, NULL);
}

static int push_onto_base(fail_case *c, prolly_db *dst, prolly_sync_stats *st)
{
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.batch = c->batch;
	return push_main(st, dst, c->src, c->main_before, &c->heads[0], &o);
}

static void push_interrupted(void)
{
	prolly_db *src = new_db(K_MEM);
	prolly_id base, head;
	PT_REQUIRE(src && put_range(&base, src, "main", 0, 5000, 1) == 0);
	for (int i = 0; i < 12; i++)
		PT_REQUIRE(put_range(&head, src, "main", i * 400, 40, 2 + i) == 0);
	fail_case c = {src, push_setup, push_onto_base, &base, &head, 1, 1, 3};
	fail_at_each_write(&c);
	prolly_close(src);
}

PT_TEST(sync_push_interrupted_at_each_write_then_rerun)
{
	push_interrupted();
}

/* SY9: with the checkpoints limited to a few ids, a long history is copied in rounds, each
 * walking again from the start: the checkpoints stay under the limit (plus the frontier of
 * the window walked) whatever the history's length, every copy is whole and consistent, and
 * the failure tests above (a failure at each write, then a rerun) still hold. */
PT_TEST(sync_checkpoints_bounded_in_rounds)
{
	const size_t batch = 16, limit = 6;
	size_t cps[2] = {0, 0};
	prolly__sync_cp_limit = limit;
	for (int len = 0; len < 2; len++) {
		const int n = len ? 640 : 320;
		prolly_db *src = new_db(K_MEM), *dst = new_db(len ? K_LMDB : K_MEM);
		prolly_id h;
		PT_REQUIRE(src && dst);
		int total = 0;
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(clone_long_history(src, dst, n, 5000, batch, &h, &total, &st), 0);
		prolly__sync_held held = prolly__sync_last_held;
		printf("# %d commits, batch %zu, checkpoint limit %zu: %zu rounds, at most %zu windows "
		       "and %zu checkpoint ids held\n",
		       total, batch, limit, held.rounds, held.windows, held.checkpoints);
		PT_CHECKF(st.commits_copied == (uint64_t)total, "%llu of %d commits",
		          (unsigned long long)st.commits_copied, total);
		PT_CHECKF(held.rounds >= 2, "%zu rounds", held.rounds);
		PT_CHECKF(held.checkpoints <= limit + 2, "%zu checkpoint ids", held.checkpoints);
		PT_CHECKF(held.window_peak <= batch, "%zu commits in a window", held.window_peak);
		cps[len] = held.checkpoints;
		PT_CHECK(same_history(src, dst, &h));
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(src);
		prolly_close(dst);
	}
	PT_CHECKF(cps[1] <= cps[0] + 1,
	          "checkpoint ids: %zu for the short history, %zu for twice "
	          "as long",
	          cps[0], cps[1]);
	out_of_time_order();
	push_interrupted();
	prolly__sync_cp_limit = SYNC_CP_LIMIT;
}

/* ---- remotes, fetch and push ---------------------------------------------------------------- */

static int collect_remote(void *payload, const char *name, const char *url)
{
	char *out = payload;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s=%s;", name, url);
	return 0;
}

static int count_fetched(void *payload, const char *branch, const prolly_id *o, const prolly_id *n)
{
	(void)branch;
	(void)o;
	(void)n;
	++*(int *)payload;
	return 0;
}

/* A remote's URL never stores a password (remote.c RM4): the record would travel with every
 * copy of the store and outlive a password change. Refused, with a message that names the
 * remedy and not the secret; the store is unchanged. */
PT_TEST(remote_url_with_password_refused)
{
	static const char *const refused[] = {
	    "postgresql://me:hunter2@/db?host=/tmp",
	    "POSTGRES://me:hunter2@h:5432/db",
	    "postgresql://h/db?sslmode=require&password=hunter2",
	    "postgresql://h/db?PassWord=hunter2",
	    "postgresql://h/db?sslpassword=hunter2",
	    "host=h dbname=d password=hunter2",
	    "host=h dbname=d PASSWORD = 'hunter2 x'",
	    "host=h SSLPassword=hunter2 dbname=d",
	    /* a password holding a quote or a space, which libpq takes whole (it was not seen) */
	    "postgresql://me:hun\"ter2@h/db",
	    "postgresql://me:hun ter2@h/db",
	    "postgresql://me:hun?ter2@h/db",
	};
	static const char *const allowed[] = {
	    "lmdb:/data/passwords",
	    "postgresql://me@h/db?sslmode=require",
	    "postgresql://me:@h/db",
	    "host=h dbname=d user=me passfile=/home/me/.pgpass",
	};
	prolly_db *db = new_db(K_MEM);
	char listed[512] = "";
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		PT_CHECK_RC(prolly_remote_url_valid(refused[i]), PROLLY_EINVAL);
		PT_CHECKF(prolly_remote_add(db, "r", refused[i]) == PROLLY_EINVAL, "accepted %s",
		          refused[i]);
		const char *msg = prolly_last_error();
		PT_CHECKF(strstr(msg, "password") && strstr(msg, ".pgpass") && strstr(msg, "PGPASSFILE") &&
		              strstr(msg, "PGPASSWORD") && !strstr(msg, "hunter2"),
		          "%s", msg);
	}
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), 0);
	PT_CHECKF(listed[0] == 0, "%s", listed);
	char name[8];
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		snprintf(name, sizeof(name), "ok%zu", i);
		PT_CHECK_RC(prolly_remote_url_valid(allowed[i]), 0);
		PT_CHECKF(prolly_remote_add(db, name, allowed[i]) == 0, "%s: %s", allowed[i],
		          prolly_last_error());
	}
	prolly_close(db);
}

PT_TEST(remotes_fetch_push)
{
	prolly_db *local = new_db(K_MEM), *remote = new_db(K_LMDB);
	prolly_id h, c, r;
	prolly_buf url = PROLLY_BUF_INIT;
	char listed[256] = "";
	PT_REQUIRE(local && remote);
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/somewhere"), 0);
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/else"), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_remote_add(local, "a/b", "lmdb:/x"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_remote_add(local, "zz", ""), PROLLY_EINVAL);
	/* A name far over the limit: the message quotes its start and keeps its reason (it used to
	 * repeat the whole name, cut off by the message's size before the reason). */
	char *longname = malloc(100001);
	PT_REQUIRE(longname);
	memset(longname, 'x', 100000);
	longname[100000] = 0;
	PT_CHECK_RC(prolly_remote_add(local, longname, "lmdb:/x"), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "...' is not a valid remote name") &&
	              strlen(prolly_last_error()) < 200,
	          "%.300s", prolly_last_error());
	free(longname);
	PT_CHECK_RC(prolly_remote_add(local, "up", "postgresql://u@h/db"), 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "origin"), 0);
	PT_CHECK(url.size == 15 && memcmp(url.ptr, "lmdb:/somewhere", 15) == 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "nosuch"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_remote_list(local, collect_remote, listed), 0);
	PT_CHECKF(strcmp(listed, "origin=lmdb:/somewhere;up=postgresql://u@h/db;") == 0, "%s", listed);
	/* gc keeps the record (a tree a ref names) */
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(local, &gr), 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "up"), 0);

	/* fetch: remote-tracking refs, read as origin/BRANCH */
	PT_REQUIRE(put_range(&h, remote, "main", 0, 300, 1) == 0);
	PT_REQUIRE(prolly_branch_create(remote, "dev", &h) == 0);
	int moved = 0;
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", count_fetched, &moved), 0);
	PT_CHECK(moved == 2);
	PT_CHECK(prolly_resolve(&c, local, "origin/main") == 0 && prolly_id_equal(&c, &h));
	PT_CHECK(prolly_resolve(&c, local, "origin/dev~0") == 0 && prolly_id_equal(&c, &h));
	PT_CHECK_RC(prolly_resolve(&c, local, "origin/nosuch"), PROLLY_ENOTFOUND);
	PT_CHECK(prolly_branch_head(&c, local, "main") == PROLLY_ENOTFOUND); /* no local branch */
	moved = 0;
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", count_fetched, &moved), 0);
	PT_CHECK(moved == 0);
	PT_CHECK_RC(prolly_gc(local, &gr), 0); /* keeps what tracking refs name */
	PT_CHECK(same_history(remote, local, &h));

	/* push: fast-forward, then one that is not */
	PT_REQUIRE(prolly_branch_create(local, "main", &h) == 0);
	PT_REQUIRE(put_range(&c, local, "main", 5, 1, 2) == 0);
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), 0);
	PT_CHECK(prolly_branch_head(&r, remote, "main") == 0 && prolly_id_equal(&r, &c));
	PT_CHECK(prolly_resolve(&r, local, "origin/main") == 0 && prolly_id_equal(&r, &c));
	PT_REQUIRE(put_range(&r, remote, "main", 6, 1, 3) == 0);
	PT_REQUIRE(put_range(&c, local, "main", 7, 1, 4) == 0);
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), PROLLY_ECONFLICT);
	prolly_id now;
	PT_CHECK(prolly_branch_head(&now, remote, "main") == 0 && prolly_id_equal(&now, &r));
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 1), 0);
	PT_CHECK(prolly_branch_head(&now, remote, "main") == 0 && prolly_id_equal(&now, &c));
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "nosuch", 0), PROLLY_ENOTFOUND);

	/* remove: the record and the tracking refs */
	PT_CHECK_RC(prolly_remote_remove(local, "origin"), 0);
	PT_CHECK_RC(prolly_resolve(&c, local, "origin/main"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_remote_remove(local, "origin"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(k6_holds(local), 0);
	prolly_buf_dispose(&url);
	prolly_close(local);
	prolly_close(remote);
}

/* ---- errors ---------------------------------------------------------------------------------- */

PT_TEST(sync_errors)
{
	prolly_db *a = new_db(K_MEM), *b = new_db(K_MEM);
	prolly_id h, bogus;
	PT_REQUIRE(a && b && put_range(&h, a, "main", 0, 10, 1) == 0);
	memset(bogus.bytes, 7, sizeof(bogus.bytes));
	PT_CHECK_RC(prolly_sync(NULL, NULL, a, &h, 1, NULL, 0, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync(NULL, b, a, &bogus, 1, NULL, 0, NULL), PROLLY_ENOTFOUND);
	prolly_commit *c = NULL;
	PT_REQUIRE(prolly_commit_read(&c, a, &h) == 0);
	PT_CHECK_RC(prolly_sync(NULL, b, a, &c->tree, 1, NULL, 0, NULL), PROLLY_EINVAL); /* a tree */
	prolly_commit_free(c);
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.version = 99;
	PT_CHECK_RC(prolly_sync(NULL, b, a, &h, 1, NULL, 0, &o), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync_options_init(&o, 2), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync_options_init(&o, PROLLY_SYNC_OPTIONS_VERSION), 0);
	/* Objects only: copied, no ref. */
	PT_CHECK_RC(prolly_sync(NULL, b, a, &h, 1, NULL, 0, NULL), 0);
	prolly_id x;
	PT_CHECK(prolly_branch_head(&x, b, "main") == PROLLY_ENOTFOUND);
	PT_CHECK(prolly_commit_read(&c, b, &h) == 0);
	prolly_commit_free(c);
	prolly_close(a);
	prolly_close(b);
}

/* ---- write size of a clone ---------------------------------------------------------------- */

/* A clone into a local store gathers up to 4096 objects per write when the caller names no batch
 * (SY6): a tree of more than 512 and fewer than 4096 nodes goes in one object write plus the
 * refs' write; into a server store (PostgreSQL), and with batch 512 named, writes carry 512 at
 * most. Every clone is whole and keeps K6. */
PT_TEST(sync_clone_default_write_size)
{
	prolly_db *src = new_db(K_MEM);
	prolly_id h;
	prolly_commit *hc = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	const char *names[1] = {"main"};
	PT_REQUIRE(src);
	PT_REQUIRE(put_range(&h, src, "main", 0, 250000, 1) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, src, &h) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, src, &hc->tree, 0) == 0);
	prolly_commit_free(hc);
	printf("# %llu nodes\n", (unsigned long long)ts.nodes);
	PT_REQUIRE(ts.nodes > 1024 && ts.nodes < 4000);
	for (int kind = K_MEM; kind < N_KINDS; kind++) {
		if (kind == K_PG && !have_pg)
			continue;
		prolly_db *d1 = new_db(kind), *d2 = new_db(kind);
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		prolly_sync_stats s1 = PROLLY_SYNC_STATS_INIT, s2 = PROLLY_SYNC_STATS_INIT;
		PT_REQUIRE(d1 && d2);
		PT_CHECK_RC(sync_branches(&s1, d1, src, names, &h, 1, NULL), 0);
		uint64_t want = kind == K_PG ? (ts.nodes + 1 + 511) / 512 + 1 : 2;
		PT_CHECKF(s1.nodes_copied == ts.nodes && s1.write_calls == want,
		          "%s: %llu nodes in %llu writes", kind_name[kind],
		          (unsigned long long)s1.nodes_copied, (unsigned long long)s1.write_calls);
		o.batch = 512;
		PT_CHECK_RC(sync_branches(&s2, d2, src, names, &h, 1, &o), 0);
		uint64_t objects = s2.nodes_copied + s2.commits_copied;
		PT_CHECKF(s2.write_calls >= (objects + 511) / 512 + 1, "%s: %llu objects in %llu writes",
		          kind_name[kind], (unsigned long long)objects, (unsigned long long)s2.write_calls);
		PT_CHECK(same_history(src, d1, &h) && same_history(src, d2, &h));
		PT_CHECK_RC(k6_holds(d1), 0);
		PT_CHECK_RC(k6_holds(d2), 0);
		prolly_close(d1);
		prolly_close(d2);
	}
	prolly_close(src);
}

int main(int argc, char **argv)
{
	have_pg = tm_pg_guard() == 0;
	scratch = tm_tmpdir("sync");
	if (!scratch)
		return 2;
	int rc = pt_run(argc, argv);
	for (int i = 0; i < n_pg_schemas; i++)
		tm_pg_schema_drop(pg_schemas[i]);
	tm_rmtree(scratch);
	free(scratch);
	return rc;
}
