/*
 * test_sync_fail.c - prolly_sync interrupted: a failure injected at each write of a sync or a
 * push (in turn, a fresh destination each time) leaves the destination consistent (K6: no object
 * without what it references, no ref at a missing object) and a rerun completes it, copying only
 * what the failed run did not write; a history out of time order; gc after an interrupted sync
 * keeps K6; the checkpoints bounded in rounds (SY9), failures included. The stores and
 * histories: tests/lib/sync_fix.h; the other sync tests: test_sync.c.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/passthru.h"
#include "lib/sync_fix.h"
#include "ptest.h"
#include "sync_int.h"

#include <stdio.h>

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
 * rerun completes it (c->heads[0..n_heads) in dst, main at heads[0]), copying only what the failed
 * run did not write; with known_head (SY7), the failed run asks the destination one question
 * (about its first write, SY14) and the rerun one per write that landed before and one more.
 * Returns the writes of a whole sync. */
typedef struct fail_case {
	prolly_db *src;
	int (*setup)(struct fail_case *c, prolly_db *dst); /* NULL: nothing to prepare */
	int (*sync)(struct fail_case *c, prolly_db *dst, prolly_sync_stats *st);
	const prolly_id *main_before;
	const prolly_id *heads;
	size_t n_heads;
	int known_head;
	size_t batch; /* the syncs' batch: small, for many writes and windows (SY8) */
} fail_case;

static unsigned long long copied(const prolly_sync_stats *st)
{
	return (unsigned long long)(st->commits_copied + st->nodes_copied);
}

/* The objects a whole sync copies into a fresh destination (prepared by setup). */
static unsigned long long whole_sync(fail_case *c)
{
	prolly_db *dst = sf_new_db(SF_MEM);
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	int rc = dst && (!c->setup || c->setup(c, dst) == 0) ? c->sync(c, dst, &st) : PROLLY_ESTORE;
	PT_CHECKF(rc == 0, "the whole sync: %s", prolly_last_error());
	prolly_close(dst);
	return copied(&st);
}

static int fail_at_each_write(fail_case *c)
{
	prolly_id m;
	int total = 0;
	unsigned long long whole = whole_sync(c);
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
		PT_CHECK(!c->known_head || st.has_calls <= 1);
		if (rc == 0) { /* no write left to fail */
			total = f->writes;
			printf("# %d writes: %llu commits, %llu nodes, batch %zu, %zu rounds\n", total,
			       (unsigned long long)st.commits_copied, (unsigned long long)st.nodes_copied,
			       c->batch, prolly__sync_last_held.rounds);
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
		PT_CHECKF(!c->known_head || again.has_calls <= (size_t)at,
		          "write %d failed: %llu questions", at, (unsigned long long)again.has_calls);
		/* What the failed run wrote stays written: the rerun copies only the rest. */
		PT_CHECKF(copied(&st) + copied(&again) <= whole,
		          "write %d failed after %llu objects; the rerun copied %llu of %llu", at,
		          copied(&st), copied(&again), whole);
		PT_CHECK(prolly_branch_head(&m, dst, "main") == 0 && prolly_id_equal(&m, &c->heads[0]));
		for (size_t i = 0; i < c->n_heads; i++)
			PT_CHECK(sf_same_history(c->src, dst, &c->heads[i]));
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
	return sf_sync_branches(st, dst, c->src, names, c->heads, 2, &o);
}

PT_TEST(sync_interrupted_at_each_write_then_rerun)
{
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id heads[2];
	PT_REQUIRE(src && sf_make_history(src, &heads[0], &heads[1]) == 0);
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
	return sf_sync_branches(st, dst, c->src, names, c->heads, 1, &o);
}

/* The history above, synced with windows of first..last commits. */
static void out_of_time_order(size_t first, size_t last)
{
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id trees[4], c[60], x;
	prolly_txn *txn = NULL;
	PT_REQUIRE(src);
	for (int i = 0; i < 4; i++)
		PT_REQUIRE(sf_put_range(&x, src, "scratch", 100 * i, 50, i) == 0 &&
		           sf_tree_of(&trees[i], src, &x) == 0);
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
	for (size_t batch = first; batch <= last; batch++) {
		fail_case fc = {src, NULL, sync_main, NULL, &c[59], 1, 0, batch};
		fail_at_each_write(&fc);
	}
	prolly_close(src);
}

PT_TEST(sync_history_out_of_time_order)
{
	out_of_time_order(1, 3);
}

/* K6 after a gc: an interrupted sync's nodes are unreferenced, so a gc removes them, never a child
 * and not its parent; a rerun then copies them again. With retention, tree nodes keep their
 * subtrees (commits may lose their trees: that is what retention removes). */
PT_TEST(sync_gc_keeps_k6)
{
	for (int kind = 0; kind < SF_KINDS; kind++) {
		if (kind == SF_PG && !sf_have_pg)
			continue;
		prolly_db *src = sf_new_db(SF_MEM), *inner = NULL;
		prolly_id heads[2], c;
		const char *names[2] = {"main", "feature"};
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		o.batch = 4;
		PT_REQUIRE(src && sf_make_history(src, &heads[0], &heads[1]) == 0);
		prolly_store *st = sf_new_store(kind);
		PT_REQUIRE(st);
		failing *f = tp_new(sizeof(failing), st);
		PT_REQUIRE(f);
		f->tp.base.write = failing_write;
		f->fail_at = 7;
		PT_REQUIRE(prolly_db_new(&inner, &f->tp.base, NULL) == 0);
		PT_CHECK_RC(sf_sync_branches(NULL, inner, src, names, heads, 2, &o), PROLLY_ESTORE);
		f->fail_at = 0;
		prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
		PT_CHECK_RC(prolly_gc(inner, &gr), 0);
		PT_CHECKF(k6_holds(inner) == 0, "%s: %s", sf_kind_name[kind], prolly_last_error());
		PT_CHECK_RC(sf_sync_branches(NULL, inner, src, names, heads, 2, &o), 0);
		PT_CHECK(prolly_branch_head(&c, inner, "main") == 0 && prolly_id_equal(&c, &heads[0]));
		PT_CHECK(sf_same_history(src, inner, &heads[0]));
		PT_CHECK_RC(prolly_gc(inner, &gr), 0);
		PT_CHECKF(k6_holds(inner) == 0, "%s: %s", sf_kind_name[kind], prolly_last_error());
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
	PT_REQUIRE(sf_make_history(db, &heads[0], &heads[1]) == 0);
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &gr), 0);
	PT_CHECK(gr.nodes_removed > 0);
	PT_CHECK_RC(k6_holds_ex(db, 1), 0);
	prolly_close(db);
}

/* ---- a push onto a known head, interrupted -------------------------------------------------- */

static int push_setup(fail_case *c, prolly_db *dst)
{
	const char *names[1] = {"main"};
	return sf_sync_branches(NULL, dst, c->src, names, c->main_before, 1, NULL);
}

static int push_onto_base(fail_case *c, prolly_db *dst, prolly_sync_stats *st)
{
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.batch = c->batch;
	return sf_push_main(st, dst, c->src, c->main_before, &c->heads[0], &o);
}

/* A push onto a known head failed at each of its writes leaves the remote consistent (K6, main
 * where it was), and a rerun completes it, asking about each write's objects (SY14) until it
 * meets those the failed run did not write: before, it copied everything again, unasked. */
PT_TEST(sync_push_interrupted_at_each_write_then_rerun)
{
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id base, head;
	PT_REQUIRE(src && sf_put_range(&base, src, "main", 0, 5000, 1) == 0);
	for (int i = 0; i < 12; i++)
		PT_REQUIRE(sf_put_range(&head, src, "main", i * 400, 40, 2 + i) == 0);
	fail_case c = {src, push_setup, push_onto_base, &base, &head, 1, 1, 3};
	fail_at_each_write(&c);
	prolly_close(src);
}

/* ---- checkpoints bounded in rounds (SY9) -------------------------------------------------- */

/* SY9: with the checkpoints limited to a few ids, a long history is copied in rounds, each
 * walking again from the start: the checkpoints stay under the limit (plus the frontier of
 * the window walked) whatever the history's length, every copy is whole and consistent, and
 * a failure at each write of the history out of time order, then a rerun, still holds. */
PT_TEST(sync_checkpoints_bounded_in_rounds)
{
	const size_t batch = 16, limit = 6;
	const int n = 160;
	size_t cps[2] = {0, 0};
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id base, h;
	prolly__sync_cp_limit = limit;
	/* one source for both lengths: the longer history continues the shorter one; 14 and 28
	 * windows, past the limit (6 ids) as 28 and 56 were: the same 6 checkpoint ids held */
	PT_REQUIRE(src && sf_put_range(&base, src, "main", 0, 5000, 0) == 0);
	for (int len = 0; len < 2; len++) {
		prolly_db *dst = sf_new_db(len ? SF_LMDB : SF_MEM);
		PT_REQUIRE(dst && sf_long_history(&h, src, len * n, n) == 0);
		int total = 0;
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sf_clone_main(&st, dst, src, &h, batch, &total), 0);
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
		PT_CHECK(sf_same_history(src, dst, &h));
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(dst);
	}
	prolly_close(src);
	PT_CHECKF(cps[1] <= cps[0] + 1,
	          "checkpoint ids: %zu for the short history, %zu for twice "
	          "as long",
	          cps[0], cps[1]);
	/* Windows of 3 commits: 20 windows, 9 rounds. Windows of 1 and 2 (12 and 10 rounds) took
	 * the same rounds again at 6 and 3 times the cost (a failure at each of 67 and 34 writes);
	 * their windows are tested without rounds by sync_history_out_of_time_order. And no push
	 * of sync_push_interrupted_at_each_write_then_rerun again: its 4 windows fit the limit, so
	 * it ran in one round, its own case's path. */
	out_of_time_order(3, 3);
	PT_CHECKF(prolly__sync_last_held.rounds >= 2, "%zu rounds", prolly__sync_last_held.rounds);
	prolly__sync_cp_limit = SYNC_CP_LIMIT;
}

SF_MAIN
