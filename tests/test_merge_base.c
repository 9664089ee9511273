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
#include "lib/passthru.h"
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

/* ---- skewed clocks ------------------------------------------------------------------------- */

/* A tree of string records (kv: key, value, ..., NULL), built and stored in *out. */
static int tree_of(prolly_id *out, prolly_db *db, const char *const *kv)
{
	tm_model m;
	tm_model_init(&m);
	for (size_t i = 0; kv[i]; i += 2)
		tm_model_put(&m, kv[i], strlen(kv[i]), kv[i + 1], strlen(kv[i + 1]));
	int rc = tm_build_commit(out, db, &m);
	tm_model_dispose(&m);
	return rc;
}

/*
 * A commit whose parent is newer than it (a slow clock, an import, a commit time set by hand):
 * C1 (time 900) <- P1 (100) <- P2 (110) <- C2 (600); X (950) and Y (960) on C1; A = merge(C2, X),
 * B = merge(C2, Y). Both C1 and C2 are common, and C1 is C2's ancestor: the merge base is C2.
 * P1 added the key k, A deleted it. Against C1 (which lacks k) the merge of A and B would see
 * B add k and bring it back.
 */
TM_BOTH_STORES(merge_base_parent_newer_than_child)
{
	tm_db t;
	prolly_id R, C1, P1, P2, C2, X, Y, A, B, p[2], b, m;
	PT_REQUIRE(tm_db_open(&t, lmdb, "commit", 1, 0, 0) == 0);
	static const char *const t0[] = {"x", "1", NULL};
	static const char *const t1[] = {"k", "1", "x", "1", NULL};
	static const char *const ta[] = {"a", "1", "x", "1", NULL};
	static const char *const tb[] = {"b", "1", "k", "1", "x", "1", NULL};
	prolly_id T0, T1, TA, TB;
	PT_REQUIRE(tree_of(&T0, t.db, t0) == 0 && tree_of(&T1, t.db, t1) == 0 &&
	           tree_of(&TA, t.db, ta) == 0 && tree_of(&TB, t.db, tb) == 0);
	PT_REQUIRE(tm_commit_raw(&R, t.db, &T0, NULL, 0, 50, "R") == 0);
	PT_REQUIRE(tm_commit_raw(&C1, t.db, &T0, &R, 1, 900, "C1") == 0);
	PT_REQUIRE(tm_commit_raw(&P1, t.db, &T1, &C1, 1, 100, "P1: slow clock, adds k") == 0);
	PT_REQUIRE(tm_commit_raw(&P2, t.db, &T1, &P1, 1, 110, "P2") == 0);
	PT_REQUIRE(tm_commit_raw(&C2, t.db, &T1, &P2, 1, 600, "C2") == 0);
	PT_REQUIRE(tm_commit_raw(&X, t.db, &T0, &C1, 1, 950, "X") == 0);
	PT_REQUIRE(tm_commit_raw(&Y, t.db, &T0, &C1, 1, 960, "Y") == 0);
	p[0] = C2, p[1] = X;
	PT_REQUIRE(tm_commit_raw(&A, t.db, &TA, p, 2, 1000, "A: deletes k") == 0);
	p[0] = C2, p[1] = Y;
	PT_REQUIRE(tm_commit_raw(&B, t.db, &TB, p, 2, 1001, "B") == 0);

	PT_CHECK_RC(prolly_merge_base(&b, t.db, &A, &B), 0);
	PT_CHECKF(prolly_id_equal(&b, &C2), "base %s, want C2 %s (C1 is %s)", tm_hex(&b), tm_hex(&C2),
	          tm_hex(&C1));
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &B, &A), 0);
	PT_CHECK(prolly_id_equal(&b, &C2));

	PT_CHECK_RC(prolly_branch_create(t.db, "a", &A), 0);
	PT_CHECK_RC(prolly_branch_create(t.db, "b", &B), 0);
	PT_CHECK_RC(prolly_merge_branches(&m, NULL, t.db, "a", "b", NULL, NULL), 0);
	char buf[16];
	PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &m, "k"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &m, "b"), 0);
	tm_db_close(&t);
}

/* More candidates than one 64-bit word holds: 70 commits on a root R, each merged into both A
 * and B (A = merge(A1, A2), B likewise, each of those a merge of 35), so each is a lowest
 * common ancestor, except c3, the newest, which is also a parent of c69: the base is c69. */
PT_TEST(merge_base_many_candidates)
{
	prolly_db *db = tm_open_mem((size_t)1 << 20);
	prolly_id e, R, c[70], half[4], A, B, b, p[2];
	prolly_id_empty_tree(&e);
	PT_REQUIRE(tm_commit_raw(&R, db, &e, NULL, 0, 10, "R") == 0);
	for (int i = 0; i < 70; i++) {
		char msg[16];
		snprintf(msg, sizeof(msg), "c%d", i);
		p[0] = R, p[1] = c[3];
		PT_REQUIRE(tm_commit_raw(&c[i], db, &e, p, i == 69 ? 2 : 1, i == 3 ? 5000 : 100 + i, msg) ==
		           0);
	}
	for (int h = 0; h < 4; h++)
		PT_REQUIRE(tm_commit_raw(&half[h], db, &e, &c[35 * (h % 2)], 35, 6000 + h, "half") == 0);
	p[0] = half[0], p[1] = half[1];
	PT_REQUIRE(tm_commit_raw(&A, db, &e, p, 2, 7000, "A") == 0);
	p[0] = half[2], p[1] = half[3];
	PT_REQUIRE(tm_commit_raw(&B, db, &e, p, 2, 7001, "B") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, db, &A, &B), 0);
	PT_CHECKF(prolly_id_equal(&b, &c[69]), "got %s", tm_hex(&b));
	prolly_close(db);
}

/* The reference: every ancestor by a plain walk of the whole graph, the lowest common ones,
 * the newest of those by (time, id) as prolly_merge_base answers. */
#define RND_MAX 28

typedef struct rdag {
	size_t n, np[RND_MAX], par[RND_MAX][3];
	int64_t time[RND_MAX];
	prolly_id id[RND_MAX];
} rdag;

/* anc[i]: the ancestors of x and x itself, as a bit set over the DAG's nodes. */
static uint32_t ancestors_of(const rdag *d, size_t x)
{
	uint32_t seen = (uint32_t)1 << x, todo = seen;
	while (todo) {
		size_t i = 0;
		while (!(todo >> i & 1))
			i++;
		todo &= ~((uint32_t)1 << i);
		for (size_t p = 0; p < d->np[i]; p++)
			if (!(seen >> d->par[i][p] & 1)) {
				seen |= (uint32_t)1 << d->par[i][p];
				todo |= (uint32_t)1 << d->par[i][p];
			}
	}
	return seen;
}

/* The expected merge base of a and b: its index, or -1 for none. */
static int model_merge_base(const rdag *d, size_t a, size_t b)
{
	uint32_t common = ancestors_of(d, a) & ancestors_of(d, b);
	int best = -1;
	for (size_t i = 0; i < d->n; i++) {
		if (!(common >> i & 1))
			continue;
		int lowest = 1;
		for (size_t j = 0; j < d->n && lowest; j++)
			lowest = j == i || !(common >> j & 1) || !(ancestors_of(d, j) >> i & 1);
		if (!lowest)
			continue;
		if (best < 0 || d->time[i] > d->time[best] ||
		    (d->time[i] == d->time[best] &&
		     memcmp(d->id[i].bytes, d->id[best].bytes, PROLLY_ID_SIZE) > 0))
			best = (int)i;
	}
	return best;
}

/* Random DAGs (up to 3 parents among the earlier commits, a few roots), with times consistent
 * (each commit newer than its parents), skewed at random, or consistent but for a few commits
 * from a slow or a fast clock: prolly_merge_base agrees with the reference on every pair. */
PT_TEST(merge_base_random_skewed_times)
{
	for (unsigned round = 0; round < 150 && !pt_failed_now; round++) {
		uint64_t seed = PT_SEED() + round;
		tm_rng r;
		tm_rng_seed(&r, seed);
		prolly_db *db = tm_open_mem(round % 2 ? 0 : (size_t)1 << 20);
		rdag d;
		prolly_id e;
		unsigned mode = round % 3; /* 0 consistent, 1 random, 2 a few skewed commits */
		prolly_id_empty_tree(&e);
		memset(&d, 0, sizeof(d));
		d.n = 8 + tm_rng_below(&r, RND_MAX - 8 + 1);
		for (size_t i = 0; i < d.n; i++) {
			prolly_id ps[3];
			int64_t newest = 0;
			size_t np = i == 0 || tm_rng_chance(&r, 1, 12) ? 0 : 1 + tm_rng_below(&r, 3);
			for (size_t k = 0; k < np; k++) {
				size_t q;
				int dup;
				do { /* mostly recent commits, so that histories are long */
					q = tm_rng_chance(&r, 2, 3) ? i - 1 - tm_rng_below(&r, PROLLY_MIN(i, 4))
					                            : tm_rng_below(&r, i);
					dup = 0;
					for (size_t z = 0; z < d.np[i]; z++)
						dup |= d.par[i][z] == q;
				} while (dup && d.np[i] < i);
				if (dup)
					break;
				d.par[i][d.np[i]++] = q;
				ps[k] = d.id[q];
				newest = PROLLY_MAX(newest, d.time[q]);
			}
			if (mode == 1 || (mode == 2 && tm_rng_chance(&r, 1, 6)))
				d.time[i] = 1 + (int64_t)tm_rng_below(&r, 40 * RND_MAX);
			else
				d.time[i] = newest + 1 + (int64_t)tm_rng_below(&r, 40);
			char msg[32];
			snprintf(msg, sizeof(msg), "c%zu", i);
			PT_REQUIRE(tm_commit_raw(&d.id[i], db, &e, ps, d.np[i], d.time[i], msg) == 0);
		}
		for (size_t a = 0; a < d.n && !pt_failed_now; a++)
			for (size_t b = a; b < d.n && !pt_failed_now; b++) {
				int want = model_merge_base(&d, a, b);
				prolly_id got;
				int rc = prolly_merge_base(&got, db, &d.id[a], &d.id[b]);
				if (want < 0) {
					PT_CHECKF(rc == PROLLY_ENOTFOUND, "seed %llu: c%zu c%zu: rc %d, want none",
					          (unsigned long long)seed, a, b, rc);
					continue;
				}
				int at = -1;
				for (size_t i = 0; !rc && i < d.n && at < 0; i++)
					at = prolly_id_equal(&got, &d.id[i]) ? (int)i : -1;
				PT_CHECKF(rc == 0 && at == want,
				          "seed %llu mode %u: base of c%zu c%zu is c%d, want c%d",
				          (unsigned long long)seed, mode, a, b, at, want);
				rc = prolly_merge_base(&got, db, &d.id[b], &d.id[a]);
				PT_CHECKF(rc == 0 && prolly_id_equal(&got, &d.id[want]), "seed %llu: not symmetric",
				          (unsigned long long)seed);
			}
		prolly_close(db);
	}
}

/* The cost with consistent times, counted in commits read on a store without get_ancestors
 * (each store call then reads the commits one step needs, so store_read_items counts every
 * commit the walks load): a fork 40 commits back reads its 80 commits and the base; criss-cross
 * tips X1 and Y1 (both lowest common ancestors of X2 and Y2) are told apart by a second walk
 * that reads their two lines down to where they meet, F, and not below it. */
/* A handle on a memory store without get_ancestors: store_read_items counts the commits read. */
static prolly_db *open_counting(void)
{
	prolly_store *mem = NULL;
	prolly_db *db = NULL;
	tp_store *w = NULL;
	if (prolly_store_mem_new(&mem) != 0 || !(w = tp_new(sizeof(tp_store), mem)))
		return NULL;
	w->base.get_ancestors = NULL;
	return prolly_db_new(&db, &w->base, NULL) == 0 ? db : NULL;
}

PT_TEST(merge_base_cost_consistent_times)
{
	prolly_db *db = open_counting();
	PT_REQUIRE(db);
	prolly_id e, below = {{0}}, F, x, y, p[2], X2, Y2, b;
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 50; i++) /* history below F that no walk should read */
		PT_REQUIRE(tm_commit_raw(&below, db, &e, i ? &below : NULL, i ? 1 : 0, 10 + i, "old") == 0);
	PT_REQUIRE(tm_commit_raw(&F, db, &e, &below, 1, 1000, "F") == 0);
	x = y = F;
	for (int i = 1; i <= 40; i++) {
		PT_REQUIRE(tm_commit_raw(&x, db, &e, &x, 1, 1000 + 2 * i, "x") == 0);
		PT_REQUIRE(tm_commit_raw(&y, db, &e, &y, 1, 1001 + 2 * i, "y") == 0);
	}
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&b, db, &x, &y), 0);
	PT_CHECK(prolly_id_equal(&b, &F));
	prolly_thread_stats(&st);
	printf("# fork 40 back: %llu commits read in %llu calls\n",
	       (unsigned long long)st.store_read_items, (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_read_items <= 84, "%llu commits read",
	          (unsigned long long)st.store_read_items);

	p[0] = x, p[1] = y;
	PT_REQUIRE(tm_commit_raw(&X2, db, &e, p, 2, 2000, "X2") == 0);
	p[0] = y, p[1] = x;
	PT_REQUIRE(tm_commit_raw(&Y2, db, &e, p, 2, 2001, "Y2") == 0);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&b, db, &X2, &Y2), 0);
	PT_CHECK(prolly_id_equal(&b, &y)); /* the newer of the two */
	prolly_thread_stats(&st);
	printf("# criss-cross 40 above their fork: %llu commits read in %llu calls\n",
	       (unsigned long long)st.store_read_items, (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_read_items <= 90, "%llu commits read",
	          (unsigned long long)st.store_read_items);
	prolly_close(db);
}

/* One commit from a slow clock (time 1, its parent F at 1499) just above the fork, on a history
 * of 500 commits: its side used to wait until the other side had walked down to time 1, through
 * all 500; a side held back now moves after waiting as many steps as the walk had made. */
PT_TEST(merge_base_cost_slow_clock)
{
	prolly_db *db = open_counting();
	PT_REQUIRE(db);
	prolly_id e, F = {{0}}, a, b, base;
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 500; i++)
		PT_REQUIRE(tm_commit_raw(&F, db, &e, i ? &F : NULL, i ? 1 : 0, 1000 + i, "c") == 0);
	PT_REQUIRE(tm_commit_raw(&a, db, &e, &F, 1, 1, "slow") == 0);
	PT_REQUIRE(tm_commit_raw(&a, db, &e, &a, 1, 2000, "a") == 0);
	PT_REQUIRE(tm_commit_raw(&b, db, &e, &F, 1, 1600, "b1") == 0);
	PT_REQUIRE(tm_commit_raw(&b, db, &e, &b, 1, 1601, "b2") == 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_base(&base, db, &a, &b), 0);
	PT_CHECK(prolly_id_equal(&base, &F));
	prolly_thread_stats(&st);
	printf("# a slow clock above the fork: %llu commits read in %llu calls\n",
	       (unsigned long long)st.store_read_items, (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_read_items <= 20, "%llu commits read",
	          (unsigned long long)st.store_read_items);
	prolly_close(db);
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
