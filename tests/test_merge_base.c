/*
 * test_merge_base.c - merge bases and branch merges, on the memory store and on LMDB: merge_base
 * on linear, forked, criss-cross, skewed-depth and disjoint histories, both sides read in
 * batches; history walks read ahead; merge_branches: nothing to do, fast-forward, clean merge,
 * conflict (nothing written).
 *
 * Re-run one test: build/tests/test_merge_base NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- merge base ---------------------------------------------------------------------------- */

TM_BOTH_STORES(merge_base_shapes)
{
	tm_db t;
	prolly_id e, r, b;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&e);
	/* Linear: R <- L1 <- L2 <- L3. */
	prolly_id L[4];
	PT_REQUIRE(tm_commit_raw(&L[0], t.db, &e, NULL, 0, 100, "R") == 0);
	for (int i = 1; i < 4; i++)
		PT_REQUIRE(tm_commit_raw(&L[i], t.db, &e, &L[i - 1], 1, 100 + i, "L") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[3], &L[1]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[1], &L[3]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[2], &L[2]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[2]));

	/* Forked at L1: A = L1 <- A1 <- A2, B = L1 <- B1. */
	prolly_id A1, A2, B1;
	PT_REQUIRE(tm_commit_raw(&A1, t.db, &e, &L[1], 1, 200, "A1") == 0);
	PT_REQUIRE(tm_commit_raw(&A2, t.db, &e, &A1, 1, 201, "A2") == 0);
	PT_REQUIRE(tm_commit_raw(&B1, t.db, &e, &L[1], 1, 150, "B1") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &A2, &B1), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &B1, &A2), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &B1, &L[3]), 0);
	PT_CHECK(prolly_id_equal(&b, &L[1]));

	/* Criss-cross: X1, Y1 on L3; X2 = merge(X1, Y1), Y2 = merge(Y1, X1); X3 on X2, Y3 on Y2. */
	prolly_id X1, Y1, X2, Y2, X3, Y3, p[2];
	PT_REQUIRE(tm_commit_raw(&X1, t.db, &e, &L[3], 1, 300, "X1") == 0);
	PT_REQUIRE(tm_commit_raw(&Y1, t.db, &e, &L[3], 1, 301, "Y1") == 0);
	p[0] = X1, p[1] = Y1;
	PT_REQUIRE(tm_commit_raw(&X2, t.db, &e, p, 2, 310, "X2") == 0);
	p[0] = Y1, p[1] = X1;
	PT_REQUIRE(tm_commit_raw(&Y2, t.db, &e, p, 2, 311, "Y2") == 0);
	PT_REQUIRE(tm_commit_raw(&X3, t.db, &e, &X2, 1, 320, "X3") == 0);
	PT_REQUIRE(tm_commit_raw(&Y3, t.db, &e, &Y2, 1, 321, "Y3") == 0);
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
	PT_REQUIRE(tm_commit_raw(&F, t.db, &e, &L[3], 1, 400, "F") == 0);
	PT_REQUIRE(tm_commit_raw(&G, t.db, &e, &F, 1, 401, "G") == 0);
	a[0] = F;
	for (int i = 1; i < 13; i++)
		PT_REQUIRE(tm_commit_raw(&a[i], t.db, &e, &a[i - 1], 1, 400 + 10 * i, "a") == 0);
	p[0] = a[12], p[1] = L[0];
	PT_REQUIRE(tm_commit_raw(&M, t.db, &e, p, 2, 600, "M") == 0);
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
	PT_REQUIRE(tm_commit_raw(&Z, t.db, &e, NULL, 0, 50, "Z") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &Z, &L[3]), PROLLY_ENOTFOUND);
	r = tm_fake_id(0x31);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &r, &L[3]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &L[3], &r), PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

/* Two forks with interleaved times advance together: one store call per step for both sides. */
TM_BOTH_STORES(merge_base_batches_both_sides)
{
	tm_db t;
	prolly_id e, base, x = {{0}}, y = {{0}}, b;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&e);
	PT_REQUIRE(tm_commit_raw(&base, t.db, &e, NULL, 0, 1000, "base") == 0);
	prolly_id px = base, py = base;
	for (int i = 1; i <= 30; i++) {
		PT_REQUIRE(tm_commit_raw(&x, t.db, &e, &px, 1, 1000 + 2 * i, "x") == 0);
		PT_REQUIRE(tm_commit_raw(&y, t.db, &e, &py, 1, 1001 + 2 * i, "y") == 0);
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
	tm_db_close(&t);
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

TM_BOTH_STORES(history_walks_read_ahead)
{
	tm_db t;
	prolly_id e, head = {{0}}, prev = {{0}}, side = {{0}}, b;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 300; i++) {
		PT_REQUIRE(tm_commit_raw(&head, t.db, &e, i ? &prev : NULL, i ? 1 : 0, 1000 + i, "c") == 0);
		if (i == 150)
			side = head;
		prev = head;
	}
	prolly_id tip;
	PT_REQUIRE(tm_commit_raw(&tip, t.db, &e, &side, 1, 5000, "side") == 0);
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
	tm_db_close(&t);
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

TM_BOTH_STORES(merge_branches_cases)
{
	tm_db t;
	prolly_id c0, c1, h, m, f;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	char buf[64];
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	PT_REQUIRE(tm_commit_put(&c0, t.db, "main", "a", "1", "a") == 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "feat", &c0), 0);

	/* Nothing to do: same head, then feat behind main. */
	PT_CHECK_RC(prolly_merge_branches(&m, &ms, t.db, "main", "feat", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&m, &c0));
	PT_REQUIRE(tm_commit_put(&c1, t.db, "main", "b", "2", "b") == 0);
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
	PT_REQUIRE(tm_commit_put(&h, t.db, "main", "m", "main-side", "m") == 0);
	PT_REQUIRE(tm_commit_put(&f, t.db, "feat", "f", "feat-side", "f") == 0);
	PT_REQUIRE(tm_commit_put(&f, t.db, "feat", "a", "changed", "a2") == 0);
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
	PT_REQUIRE(tm_commit_put(&mh, t.db, "main", "b", "main-b", "b main") == 0);
	PT_REQUIRE(tm_commit_put(&fh, t.db, "feat", "b", "feat-b", "b feat") == 0);
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
	prolly_id untouched = tm_fake_id(0xee);
	PT_CHECK_RC(prolly_merge_branches(&untouched, NULL, t.db, "main", "feat", &mo, NULL),
	            PROLLY_EMERGE);
	PT_CHECK(cl.n == 1 && strcmp(cl.key, "b") == 0);
	prolly_id ee = tm_fake_id(0xee);
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
	PT_REQUIRE(tm_commit_put(&lone, t.db, "lonely", "z", "z", "z") == 0);
	PT_CHECK_RC(prolly_merge_branches(&now, NULL, t.db, "main", "lonely", NULL, NULL),
	            PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
