/*
 * test_sync_cost.c - what prolly_sync costs and holds: the nodes a small push copies (k x
 * height), a long history read ahead, memory bounded by the batch (SY8) and checkpoints bounded
 * in rounds (SY9), the trees compared locally (SY7, diff.c D6: children first), a push onto a
 * known head that asks nothing, a fetch of many moved branches that reads their refs once, and
 * the write size of a clone. The stores and histories: tests/lib/sync_fix.h.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/model.h"
#include "lib/passthru.h"
#include "lib/sync_fix.h"
#include "ptest.h"
#include "sync_int.h"

#include <pthread.h>
#include <stdio.h>

/* ---- cost of a small push ------------------------------------------------------------------ */

PT_TEST(sync_small_push_copies_k_times_height)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_MEM);
	prolly_id h, c;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	prolly_commit *hc = NULL;
	const char *names[1] = {"main"};
	PT_REQUIRE(local && remote);
	PT_REQUIRE(sf_put_range(&h, local, "main", 0, 100000, 1) == 0);
	PT_REQUIRE(sf_sync_branches(NULL, remote, local, names, &h, 1, NULL) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, local, &h) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, local, &hc->tree, 0) == 0);
	prolly_commit_free(hc);
	PT_REQUIRE(ts.height >= 3);
	const int k = 5;
	for (int i = 0; i < k; i++) /* k records far apart: k separate leaves, k paths */
		PT_REQUIRE(sf_put_range(&c, local, "main", 1000 + i * 19000, 1, 7) == 0);
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sf_sync_branches(&st, remote, local, names, &c, 1, NULL), 0);
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
	PT_CHECK(sf_same_history(local, remote, &c));
	prolly_close(local);
	prolly_close(remote);
}

/* A long linear history travels in a few round trips where the source reads ahead (SY5: the
 * memory store has get_ancestors), and correctly where it cannot (LMDB has none). */
PT_TEST(sync_long_history_reads_ahead)
{
	for (int kind = SF_MEM; kind <= SF_LMDB; kind++) {
		prolly_db *src = sf_new_db(kind), *dst = sf_new_db(SF_MEM);
		prolly_id h;
		const char *names[1] = {"main"};
		PT_REQUIRE(src && dst);
		for (int i = 0; i < 300; i++)
			PT_REQUIRE(sf_put_range(&h, src, "main", i, 1, i) == 0);
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sf_sync_branches(&st, dst, src, names, &h, 1, NULL), 0);
		PT_CHECK(st.commits_copied == 300);
		PT_CHECK(sf_same_history(src, dst, &h));
		printf("# 300 commits from %s: %llu questions, %llu reads, %llu writes\n",
		       sf_kind_name[kind], (unsigned long long)st.has_calls,
		       (unsigned long long)st.read_calls, (unsigned long long)st.write_calls);
		/* both stores have get_ancestors: a batch of commits per question and per read */
		PT_CHECKF(st.has_calls <= 6 && st.read_calls <= 6, "%s: %llu questions, %llu reads",
		          sf_kind_name[kind], (unsigned long long)st.has_calls,
		          (unsigned long long)st.read_calls);
		/* and a push of 3 more after it: the walk stops at the commit dst has */
		for (int i = 0; i < 3; i++)
			PT_REQUIRE(sf_put_range(&h, src, "main", 1000 + i, 1, i) == 0);
		prolly_sync_stats more = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sf_sync_branches(&more, dst, src, names, &h, 1, NULL), 0);
		PT_CHECK(more.commits_copied == 3);
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(src);
		prolly_close(dst);
	}
}

/* ---- memory bounded by the batch (SY8) ---------------------------------------------------- */

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

/* A clone of a history 20 and 40 times as long as the batch, then a push onto its head (SY7:
 * trees compared locally, merges past their comparison set asked about) of as many commits
 * again: every copy whole and consistent, and the ids held the same for both lengths. One
 * source serves both: the longer history continues the shorter one's push, so its first 2n
 * steps are built once. 20 batches are enough to reach the level of the ids held: a clone of
 * 320 steps held 48, one of 1280 (the lengths this test had) 50, a push of either 66. */
PT_TEST(sync_memory_bounded_by_batch)
{
	const size_t batch = 16;
	const int n = 320;
	size_t peak[4] = {0, 0, 0, 0}; /* clone, clone twice as long, push, push twice as long */
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id base, h[3]; /* main after n, 2n and 4n steps */
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.batch = batch;
	PT_REQUIRE(src && sf_put_range(&base, src, "main", 0, 20000, 0) == 0);
	PT_REQUIRE(sf_long_history(&h[0], src, 0, n) == 0);
	for (int len = 0; len < 2; len++) {
		const int steps = n << len;
		char what[32];
		prolly_db *dst = sf_new_db(SF_MEM);
		prolly_id c;
		PT_REQUIRE(dst);
		int total = 0;
		prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sf_clone_main(&st, dst, src, &h[len], batch, &total), 0);
		PT_CHECKF(st.commits_copied == (uint64_t)total, "%llu of %d commits",
		          (unsigned long long)st.commits_copied, total);
		snprintf(what, sizeof(what), "clone, %d", steps);
		check_held(what, batch, st.commits_copied);
		peak[len] = prolly__sync_last_held.ids_peak;
		PT_CHECK(sf_same_history(src, dst, &h[len]));
		PT_CHECK_RC(k6_holds(dst), 0);

		/* a push onto the head dst holds, of as many steps again */
		PT_REQUIRE(sf_long_history(&h[len + 1], src, steps, steps) == 0);
		prolly_sync_stats ps = PROLLY_SYNC_STATS_INIT;
		PT_CHECK_RC(sf_push_main(&ps, dst, src, &h[len], &h[len + 1], &o), 0);
		snprintf(what, sizeof(what), "push, %d", steps);
		check_held(what, batch, ps.commits_copied);
		peak[2 + len] = prolly__sync_last_held.ids_peak;
		/* only the merges (steps / 8) ask: each is compared with main alone, the nodes its
		 * side changed (about 60 leaves and their parents) asked about 16 at a time, 8
		 * questions at most */
		PT_CHECKF(ps.has_calls > 0 && ps.has_calls <= 8 * (uint64_t)(steps / 8), "%llu questions",
		          (unsigned long long)ps.has_calls);
		PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &h[len + 1]));
		PT_CHECK(sf_same_history(src, dst, &h[len + 1]));
		PT_CHECK_RC(k6_holds(dst), 0);
		prolly_close(dst);
	}
	PT_CHECKF(peak[1] <= peak[0] + batch && peak[3] <= peak[2] + batch,
	          "ids held: clone %zu for %d steps, %zu for %d; push %zu and %zu", peak[0], n, peak[1],
	          2 * n, peak[2], peak[3]);
	prolly_close(src);
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

/* The diff walk cuts its lists into key windows past this many entries (src/diff.c, WINDOW). */
enum { DIFF_WINDOW = 2048 };

PT_TEST(sync_diff_nodes_children_first)
{
	/* big's records: its leaves alone outnumber a window (2,210 leaves), so that every list of
	 * its leaves is cut, with any other tree's beside it (400,000 records, 2,761 leaves, were
	 * more than that needs) */
	const int n = 320000;
	prolly_db *db = sf_new_db(SF_MEM);
	prolly_id c, a, b, big, big2, odd, small, e;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(db);
	e = db->empty_tree;
	PT_REQUIRE(sf_put_range(&c, db, "a", 0, 30000, 1) == 0 && sf_tree_of(&a, db, &c) == 0);
	for (int i = 0; i < 40; i++) /* scattered changes and inserts */
		PT_REQUIRE(sf_put_range(&c, db, "a", i * 997, 1 + i % 3, 2) == 0);
	PT_REQUIRE(sf_put_range(&c, db, "a", 50000, 500, 2) == 0 && sf_tree_of(&b, db, &c) == 0);
	/* an unrelated tree large enough for the walk's key windows, and a one-leaf tree */
	PT_REQUIRE(sf_put_step(&c, db, "big", 0, n, 2, 3) == 0 && sf_tree_of(&big, db, &c) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, db, &big, 0) == 0);
	PT_REQUIRE(ts.leaves > DIFF_WINDOW);
	PT_REQUIRE(sf_put_range(&c, db, "small", 5, 3, 4) == 0 && sf_tree_of(&small, db, &c) == 0);
	/* keys new to every leaf of big: both sides' lists cut into windows, leaves of one side
	 * straddling the other's */
	PT_REQUIRE(sf_put_step(&c, db, "big", 1, n / 50, 100, 5) == 0 &&
	           sf_tree_of(&big2, db, &c) == 0);
	/* and an unrelated one of the same size, whose leaves end at other keys than big's */
	PT_REQUIRE(sf_put_step(&c, db, "odd", 1, n, 2, 6) == 0 && sf_tree_of(&odd, db, &c) == 0);
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
	for (int from = SF_MEM; from <= SF_LMDB; from++)
		for (int to = 0; to < SF_KINDS; to++) {
			if (to == SF_PG && !sf_have_pg)
				continue;
			prolly_db *local = sf_new_db(from), *remote = NULL;
			prolly_store *st = sf_new_store(to);
			PT_REQUIRE(local && st);
			counting *w = tp_new(sizeof(counting), st);
			PT_REQUIRE(w);
			w->tp.on_call = count_call;
			PT_REQUIRE(prolly_db_new(&remote, &w->tp.base, NULL) == 0);
			prolly_id h, older, c;
			prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
			prolly_id tree;
			PT_REQUIRE(prolly_remote_add(local, "origin", "mem:") == 0);
			PT_REQUIRE(sf_put_range(&older, local, "main", 0, 20000, 1) == 0);
			PT_REQUIRE(sf_put_range(&h, local, "main", 3, 2, 2) == 0);
			PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), 0); /* a clone */
			PT_REQUIRE(sf_tree_of(&tree, local, &h) == 0 &&
			           prolly_tree_stats_get(&ts, local, &tree, 0) == 0);
			const int k = 3;
			for (int i = 0; i < k; i++)
				PT_REQUIRE(sf_put_range(&h, local, "main", 1000 + i * 6000, 1, 5) == 0);
			w->has = 0;
			prolly_sync_stats ps = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_push(&ps, local, remote, "origin", "main", 0), 0);
			PT_CHECKF(ps.has_calls == 0 && w->has == 0, "%s -> %s: %llu questions, %d has_nodes",
			          sf_kind_name[from], sf_kind_name[to], (unsigned long long)ps.has_calls,
			          w->has);
			PT_CHECK(ps.commits_copied == (uint64_t)k);
			printf("# %s -> %s: %d commits of one change each, height %u: %llu nodes, %llu "
			       "questions, %llu reads, %llu writes\n",
			       sf_kind_name[from], sf_kind_name[to], k, ts.height,
			       (unsigned long long)ps.nodes_copied, (unsigned long long)ps.has_calls,
			       (unsigned long long)ps.read_calls, (unsigned long long)ps.write_calls);
			PT_CHECKF(ps.nodes_copied <= (uint64_t)k * ts.height * 2, "%llu nodes, height %u",
			          (unsigned long long)ps.nodes_copied, ts.height);
			PT_CHECK(prolly_branch_head(&c, remote, "main") == 0 && prolly_id_equal(&c, &h));
			PT_CHECK(sf_same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A branch from before the remote's head, merged after it: its commit and the
			 * merge travel; the walk asks once, about the commit the branch left from (and
			 * its tree, which the branch's commit is then compared with). */
			PT_REQUIRE(prolly_branch_create(local, "side", &older) == 0);
			PT_REQUIRE(sf_put_range(&c, local, "side", 9000, 2, 6) == 0);
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
			PT_CHECK(sf_same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A pull's merge: the remote moved (another client's commit r), this store
			 * fetched it, committed l and merged r. Pushed: l with its path, and of the
			 * merge's tree only what neither l's nor r's tree has (the remote has r's). */
			prolly_id r, l;
			PT_REQUIRE(sf_put_range(&r, remote, "main", 15000, 1, 7) == 0);
			PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", NULL, NULL), 0);
			PT_REQUIRE(sf_put_range(&l, local, "main", 500, 1, 8) == 0);
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
			PT_CHECK(sf_same_history(local, remote, &h));
			PT_CHECK_RC(k6_holds(remote), 0);

			/* A forced push of an unrelated history: no parent's tree to compare its root's
			 * with, so that tree is asked about; the remote holds it already (the first
			 * commit's records), and nothing but the commit travels. */
			prolly_id u;
			prolly_txn *txn = NULL;
			PT_REQUIRE(sf_put_range(&u, local, "other", 0, 20000, 1) == 0);
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
			PT_CHECK(sf_same_history(local, remote, &u));
			PT_CHECK_RC(k6_holds(remote), 0);
			prolly_close(local);
			prolly_close(remote);
		}
}

/* A fetch of many branches that all moved reads the tracking refs it expects in one store call
 * (get_refs; before, one get_ref each: a round trip per branch on PostgreSQL), for every
 * destination kind, and with a destination store that has no get_refs (one get_ref each). The
 * remote before and after its branches moved is built once, as two stores (the second a copy
 * of the first with a commit more on each branch), and every destination fetches from one then
 * the other: the remote's 600 commits were made again for each of the six. */
PT_TEST(sync_fetch_of_many_moved_branches_reads_refs_once)
{
	enum { B = 300 };
	prolly_db *before = sf_new_db(SF_MEM), *after = sf_new_db(SF_MEM);
	prolly_ref_update *u = calloc(B + 1, sizeof(*u));
	char(*refs)[32] = calloc(B, sizeof(*refs));
	prolly_id h, c;
	char name[32];
	PT_REQUIRE(before && after && u && refs);
	PT_REQUIRE(sf_put_range(&h, before, "main", 0, 2000, 1) == 0);
	for (int i = 0; i < B; i++) { /* each with a head of its own */
		snprintf(refs[i], sizeof(refs[i]), "refs/heads/b%03d", i);
		u[i].name = refs[i];
		PT_REQUIRE(prolly_branch_create(before, refs[i] + 11, &h) == 0 &&
		           sf_put_range(&u[i].value, before, refs[i] + 11, i * 5, 1, 2) == 0);
	}
	u[B].name = "refs/heads/main";
	u[B].value = h;
	PT_REQUIRE(prolly_sync(NULL, after, before, NULL, 0, u, B + 1, NULL) == 0);
	for (int i = 0; i < B; i++)
		PT_REQUIRE(sf_put_range(&c, after, refs[i] + 11, i * 5 + 1, 1, 3) == 0);
	for (int to = 0; to < SF_KINDS; to++)
		for (int without = 0; without < 2; without++) {
			if (to == SF_PG && !sf_have_pg)
				continue;
			prolly_db *remote = after, *local = NULL;
			prolly_store *st = sf_new_store(to);
			PT_REQUIRE(st);
			counting *w = tp_new(sizeof(counting), st);
			PT_REQUIRE(w);
			w->tp.on_call = count_call;
			if (without)
				w->tp.base.get_refs = NULL;
			PT_REQUIRE(prolly_db_new(&local, &w->tp.base, NULL) == 0);
			PT_REQUIRE(prolly_remote_add(local, "origin", "mem:") == 0);
			PT_CHECK_RC(prolly_fetch(NULL, local, before, "origin", NULL, NULL), 0);
			w->get_ref = w->get_refs = w->has = 0;
			prolly_sync_stats fs = PROLLY_SYNC_STATS_INIT;
			PT_CHECK_RC(prolly_fetch(&fs, local, remote, "origin", NULL, NULL), 0);
			/* no question about trees (SY7); into PostgreSQL the fetch takes more than one
			 * write, the first of which is asked about (SY14) */
			PT_CHECKF(fs.commits_copied == B && fs.has_calls <= (to == SF_PG) && w->has <= 1,
			          "%s: %llu commits, %llu questions", sf_kind_name[to],
			          (unsigned long long)fs.commits_copied, (unsigned long long)fs.has_calls);
			if (without)
				PT_CHECKF(w->get_refs == 0 && w->get_ref >= B, "%s without get_refs: %d, %d",
				          sf_kind_name[to], w->get_refs, w->get_ref);
			else
				PT_CHECKF(w->get_refs == 1 && w->get_ref < 8, "%s: %d get_refs, %d get_ref",
				          sf_kind_name[to], w->get_refs, w->get_ref);
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
		}
	free(u);
	free(refs);
	prolly_close(before);
	prolly_close(after);
}

/* ---- write size of a clone ---------------------------------------------------------------- */

/* A clone into a local store gathers up to 4096 objects per write when the caller names no batch
 * (SY6): a tree of more than 512 and fewer than 4096 nodes goes in one object write plus the
 * refs' write; into a server store (PostgreSQL), and with batch 512 named, writes carry 512 at
 * most. Every clone is whole and keeps K6. */
PT_TEST(sync_clone_default_write_size)
{
	prolly_db *src = sf_new_db(SF_MEM);
	prolly_id h;
	prolly_commit *hc = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	const char *names[1] = {"main"};
	PT_REQUIRE(src);
	/* 1,265 nodes, inside the bounds below: more than two writes of 512, one under 4096
	 * (250,000 records, 1,764 nodes, were more than that needs) */
	PT_REQUIRE(sf_put_range(&h, src, "main", 0, 180000, 1) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, src, &h) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, src, &hc->tree, 0) == 0);
	prolly_commit_free(hc);
	printf("# %llu nodes\n", (unsigned long long)ts.nodes);
	PT_REQUIRE(ts.nodes > 1024 && ts.nodes < 4000);
	for (int kind = SF_MEM; kind < SF_KINDS; kind++) {
		if (kind == SF_PG && !sf_have_pg)
			continue;
		prolly_db *d1 = sf_new_db(kind), *d2 = sf_new_db(kind);
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		prolly_sync_stats s1 = PROLLY_SYNC_STATS_INIT, s2 = PROLLY_SYNC_STATS_INIT;
		PT_REQUIRE(d1 && d2);
		PT_CHECK_RC(sf_sync_branches(&s1, d1, src, names, &h, 1, NULL), 0);
		uint64_t want = kind == SF_PG ? (ts.nodes + 1 + 511) / 512 + 1 : 2;
		PT_CHECKF(s1.nodes_copied == ts.nodes && s1.write_calls == want,
		          "%s: %llu nodes in %llu writes", sf_kind_name[kind],
		          (unsigned long long)s1.nodes_copied, (unsigned long long)s1.write_calls);
		o.batch = 512;
		PT_CHECK_RC(sf_sync_branches(&s2, d2, src, names, &h, 1, &o), 0);
		uint64_t objects = s2.nodes_copied + s2.commits_copied;
		PT_CHECKF(s2.write_calls >= (objects + 511) / 512 + 1, "%s: %llu objects in %llu writes",
		          sf_kind_name[kind], (unsigned long long)objects,
		          (unsigned long long)s2.write_calls);
		PT_CHECK(sf_same_history(src, d1, &h) && sf_same_history(src, d2, &h));
		PT_CHECK_RC(k6_holds(d1), 0);
		PT_CHECK_RC(k6_holds(d2), 0);
		prolly_close(d1);
		prolly_close(d2);
	}
	prolly_close(src);
}

SF_MAIN
