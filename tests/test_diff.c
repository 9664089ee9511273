/*
 * test_diff.c - prolly_diff against the model: random edit sets with and without ranges,
 * unrelated trees (windowed), trees of different heights, reads proportional to the change.
 */
#include "lib/model.h"
#include "prolly.h"
#include "prolly/store.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random edit sets ---- */

typedef struct edset {
	prolly_edit *e;
	size_t n;
	void **owned;
	size_t nowned;
} edset;

static void *keep(edset *s, const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);
	if (n)
		memcpy(c, p, n);
	s->owned[s->nowned++] = c;
	return c;
}

/* k edits on m: updates, deletes of existing keys, inserts of new ones (mix picked at random). */
static void random_edits(edset *s, tm_rng *r, const tm_model *m, size_t k)
{
	unsigned char key[TM_KEY_MAX];
	static unsigned char v[TM_VAL_BIG];
	s->e = calloc(k ? k : 1, sizeof(*s->e));
	s->owned = calloc(2 * k + 1, sizeof(void *));
	s->n = s->nowned = 0;
	unsigned upd = (unsigned)tm_rng_below(r, 4), del = (unsigned)tm_rng_below(r, 4);
	for (size_t i = 0; i < k; i++) {
		prolly_edit *e = &s->e[s->n++];
		uint64_t what = tm_rng_below(r, 8);
		if (m->n && what < upd) {
			const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
			e->op = PROLLY_PUT;
			e->key.data = rec->k;
			e->key.size = rec->klen;
			size_t vl = tm_gen_value(r, v, 2000);
			e->value.data = keep(s, v, vl);
			e->value.size = vl;
		} else if (m->n && what < upd + del) {
			const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
			e->op = PROLLY_DEL;
			e->key.data = rec->k;
			e->key.size = rec->klen;
		} else {
			size_t kl = tm_gen_key(r, key);
			size_t vl = tm_gen_value(r, v, 2000);
			e->op = PROLLY_PUT;
			e->key.data = keep(s, key, kl);
			e->key.size = kl;
			e->value.data = keep(s, v, vl);
			e->value.size = vl;
		}
	}
}

static void edset_free(edset *s)
{
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* ---- expected diff from two models ---- */

typedef struct exp_ent {
	int kind;
	const tm_rec *a, *b;
} exp_ent;

static int cmp_rec(const tm_rec *a, const tm_rec *b)
{
	size_t m = a->klen < b->klen ? a->klen : b->klen;
	int c = m ? memcmp(a->k, b->k, m) : 0;
	if (c)
		return c;
	return a->klen < b->klen ? -1 : a->klen > b->klen;
}

static size_t model_diff(const tm_model *a, const tm_model *b, const prolly_range *rg,
                         exp_ent **out)
{
	exp_ent *v = malloc((a->n + b->n + 1) * sizeof(*v));
	size_t i = 0, j = 0, n = 0;
	while (i < a->n || j < b->n) {
		int c = i >= a->n ? 1 : j >= b->n ? -1 : cmp_rec(&a->r[i], &b->r[j]);
		if (c < 0) {
			if (tm_model_in_range(a, i, rg))
				v[n++] = (exp_ent){PROLLY_DIFF_REMOVED, &a->r[i], NULL};
			i++;
		} else if (c > 0) {
			if (tm_model_in_range(b, j, rg))
				v[n++] = (exp_ent){PROLLY_DIFF_ADDED, NULL, &b->r[j]};
			j++;
		} else {
			const tm_rec *x = &a->r[i], *y = &b->r[j];
			if (tm_model_in_range(a, i, rg) &&
			    (x->vlen != y->vlen || (x->vlen && memcmp(x->v, y->v, x->vlen))))
				v[n++] = (exp_ent){PROLLY_DIFF_CHANGED, x, y};
			i++;
			j++;
		}
	}
	*out = v;
	return n;
}

typedef struct checker {
	exp_ent *want;
	size_t nwant, got;
	int bad;
	uint64_t seed;
	int stop_at; /* > 0: return 77 at this call */
} checker;

static int same(prolly_slice s, const unsigned char *p, size_t n)
{
	return s.size == n && (n == 0 || memcmp(s.data, p, n) == 0);
}

static int check_fn(void *payload, const prolly_diff_entry *e)
{
	checker *c = payload;
	if (c->stop_at && (int)c->got + 1 == c->stop_at) {
		c->got++;
		return 77;
	}
	if (c->bad)
		return 0;
	if (c->got >= c->nwant) {
		fprintf(stderr, "  seed %#llx: extra diff entry kind %d key %s\n",
		        (unsigned long long)c->seed, e->kind, tm_bhex(e->key.data, e->key.size));
		c->bad = 1;
		return 0;
	}
	const exp_ent *w = &c->want[c->got];
	const tm_rec *kr = w->a ? w->a : w->b;
	int ok = (int)e->kind == w->kind && same(e->key, kr->k, kr->klen);
	if (ok && w->a)
		ok = same(e->old_value, w->a->v, w->a->vlen);
	if (ok && w->b)
		ok = same(e->new_value, w->b->v, w->b->vlen);
	if (!ok) {
		fprintf(stderr, "  seed %#llx: entry %zu: got kind %d key %s, want kind %d key %s\n",
		        (unsigned long long)c->seed, c->got, e->kind, tm_bhex(e->key.data, e->key.size),
		        w->kind, tm_bhex(kr->k, kr->klen));
		c->bad = 1;
	}
	c->got++;
	return 0;
}

/* Runs diff(from, to, rg) and compares with the models. 0 when equal. */
static int check_diff(prolly_db *db, const prolly_id *from, const prolly_id *to, const tm_model *ma,
                      const tm_model *mb, const prolly_range *rg, uint64_t seed)
{
	checker c;
	memset(&c, 0, sizeof(c));
	c.seed = seed;
	c.nwant = model_diff(ma, mb, rg, &c.want);
	int rc = prolly_diff(db, from, to, rg, check_fn, &c);
	if (rc) {
		fprintf(stderr, "  seed %#llx: prolly_diff: %d (%s)\n", (unsigned long long)seed, rc,
		        prolly_last_error());
		c.bad = 1;
	}
	if (!c.bad && c.got != c.nwant) {
		fprintf(stderr, "  seed %#llx: %zu entries, want %zu\n", (unsigned long long)seed, c.got,
		        c.nwant);
		c.bad = 1;
	}
	free(c.want);
	return c.bad ? -1 : 0;
}

static size_t random_bound(tm_rng *r, const tm_model *m, unsigned char *out)
{
	if (m->n && tm_rng_chance(r, 3, 4)) {
		const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
		memcpy(out, rec->k, rec->klen);
		return rec->klen;
	}
	return tm_gen_key(r, out);
}

static void random_range(prolly_range *rg, tm_rng *r, const tm_model *m, unsigned char *lo,
                         unsigned char *hi)
{
	prolly_range_init(rg, PROLLY_RANGE_VERSION);
	if (tm_rng_chance(r, 2, 3)) {
		rg->has_lo = 1;
		rg->lo.size = random_bound(r, m, lo);
		rg->lo.data = lo;
		rg->lo_exclusive = (int)tm_rng_below(r, 2);
	}
	if (tm_rng_chance(r, 2, 3)) {
		rg->has_hi = 1;
		rg->hi.size = random_bound(r, m, hi);
		rg->hi.data = hi;
		rg->hi_inclusive = (int)tm_rng_below(r, 2);
	}
}

static void run_random(size_t cache_bytes, size_t base_n, size_t rounds, uint64_t salt)
{
	uint64_t seed = PT_SEED() ^ salt;
	prolly_db *db = tm_open_mem(cache_bytes);
	tm_rng r;
	tm_model base;
	prolly_id broot;
	tm_rng_seed(&r, seed);
	tm_model_init(&base);
	tm_random_model(&base, &r, base_n);
	PT_REQUIRE(tm_build_commit(&broot, db, &base) == 0);
	static const size_t ksizes[] = {1, 2, 5, 20, 100, 500, 2000, 5000};
	for (size_t t = 0; t < rounds; t++) {
		size_t k = ksizes[t % (sizeof(ksizes) / sizeof(ksizes[0]))];
		edset es;
		tm_model m2;
		prolly_id root2;
		prolly_txn *txn = NULL;
		tm_model_init(&m2);
		tm_model_copy(&m2, &base);
		random_edits(&es, &r, &base, k);
		tm_model_apply(&m2, es.e, es.n);
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		PT_CHECK_RC(prolly_edit_tree(&root2, txn, &broot, es.e, es.n), 0);
		/* both directions, whole tree and a few ranges */
		PT_CHECKF(check_diff(db, &broot, &root2, &base, &m2, NULL, seed) == 0,
		          "seed %#llx round %zu k %zu", (unsigned long long)seed, t, k);
		PT_CHECKF(check_diff(db, &root2, &broot, &m2, &base, NULL, seed) == 0,
		          "seed %#llx round %zu k %zu reversed", (unsigned long long)seed, t, k);
		for (int q = 0; q < 4; q++) {
			unsigned char lo[TM_KEY_MAX], hi[TM_KEY_MAX];
			prolly_range rg = PROLLY_RANGE_INIT;
			random_range(&rg, &r, &m2, lo, hi);
			PT_CHECKF(check_diff(db, &broot, &root2, &base, &m2, &rg, seed) == 0,
			          "seed %#llx round %zu k %zu range %d (lo %d/%d hi %d/%d)",
			          (unsigned long long)seed, t, k, q, rg.has_lo, rg.lo_exclusive, rg.has_hi,
			          rg.hi_inclusive);
		}
		prolly_txn_free(txn); /* uncommitted: its nodes go away */
		edset_free(&es);
		tm_model_dispose(&m2);
		if (pt_failed_now)
			break;
	}
	tm_model_dispose(&base);
	prolly_close(db);
}

PT_TEST(diff_random_edits_small_tree)
{
	run_random((size_t)64 << 20, 300, 16, 1);
}

PT_TEST(diff_random_edits)
{
	run_random((size_t)256 << 20, 20000 * tm_scale(), 16, 2);
}

PT_TEST(diff_random_edits_no_cache)
{
	run_random(0, 8000, 8, 3);
}

static int count_fn(void *payload, const prolly_diff_entry *e)
{
	(void)e;
	(*(size_t *)payload)++;
	return 0;
}

PT_TEST(diff_identical_reads_nothing)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_rng r;
	tm_model m;
	prolly_id root, empty;
	tm_rng_seed(&r, PT_SEED());
	tm_model_init(&m);
	tm_random_model(&m, &r, 5000);
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	size_t calls = 0;
	PT_CHECK_RC(prolly_diff(db, &root, &root, NULL, count_fn, &calls), 0);
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_diff(db, &empty, &empty, NULL, count_fn, &calls), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	PT_CHECK(calls == 0);
	PT_CHECK(st.store_reads == 0 && st.nodes_read == 0);
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(diff_one_change_reads_one_path)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_model m;
	prolly_id root, root2;
	char k[32], v[32];
	tm_model_init(&m);
	for (size_t i = 0; i < 200000; i++) {
		int kl = snprintf(k, sizeof(k), "k%08zu", i), vl = snprintf(v, sizeof(v), "v%zu", i);
		tm_model_put(&m, k, (size_t)kl, v, (size_t)vl);
	}
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&ts, db, &root, 0) == 0);
	PT_REQUIRE(ts.height >= 3);
	prolly_txn *txn;
	prolly_edit e = {PROLLY_PUT, {"k00123456", 9}, {"changed", 7}};
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_edit_tree(&root2, txn, &root, &e, 1) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	size_t calls = 0;
	PT_CHECK_RC(prolly_diff(db, &root, &root2, NULL, count_fn, &calls), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	PT_CHECK(calls == 1);
	/* one call per level, two nodes per level */
	PT_CHECKF(st.store_reads <= ts.height, "%llu store calls, height %u",
	          (unsigned long long)st.store_reads, ts.height);
	PT_CHECKF(st.nodes_read <= 2 * (uint64_t)ts.height, "%llu nodes read, height %u",
	          (unsigned long long)st.nodes_read, ts.height);
	tm_model_dispose(&m);
	prolly_close(db);
}

/* Unrelated trees: every record differs; the lists are cut into windows. */
PT_TEST(diff_unrelated_trees_windowed)
{
	uint64_t seed = PT_SEED();
	for (int cache = 0; cache < 2; cache++) {
		prolly_db *db = tm_open_mem(cache ? (size_t)256 << 20 : 0);
		tm_rng r;
		tm_model a, b;
		prolly_id ra, rb, empty;
		tm_rng_seed(&r, seed + 11);
		tm_model_init(&a);
		tm_model_init(&b);
		tm_random_model(&a, &r, 60000);
		tm_random_model(&b, &r, 45000);
		/* share some records so that equal and unequal values meet; in one batch: one
		 * tm_model_put at a time moved b's tail for each of the 20,000 (half the program's
		 * time under ASan) */
		prolly_edit *share = calloc(a.n / 3 + 1, sizeof(*share));
		PT_REQUIRE(share);
		size_t nshare = 0;
		for (size_t i = 0; i < a.n; i += 3)
			share[nshare++] = (prolly_edit){
			    PROLLY_PUT, {a.r[i].k, a.r[i].klen}, {a.r[i].v, a.r[i].vlen}};
		tm_model_apply(&b, share, nshare);
		free(share);
		PT_REQUIRE(tm_build_commit(&ra, db, &a) == 0);
		PT_REQUIRE(tm_build_commit(&rb, db, &b) == 0);
		/* The sizes are what the windowing needs: the two trees' leaves together must be
		 * more than the diff's window (PROLLY_DIFF_WINDOW, 2,048 entries of a level). */
		prolly_tree_stats sa = PROLLY_TREE_STATS_INIT, sb = PROLLY_TREE_STATS_INIT;
		PT_CHECK_RC(prolly_tree_stats_get(&sa, db, &ra, 0), 0);
		PT_CHECK_RC(prolly_tree_stats_get(&sb, db, &rb, 0), 0);
		printf("# %llu + %llu leaves\n", (unsigned long long)sa.leaves,
		       (unsigned long long)sb.leaves);
		PT_CHECKF(sa.leaves + sb.leaves > 2048, "%llu + %llu leaves", (unsigned long long)sa.leaves,
		          (unsigned long long)sb.leaves);
		PT_CHECKF(check_diff(db, &ra, &rb, &a, &b, NULL, seed) == 0, "seed %#llx a->b",
		          (unsigned long long)seed);
		PT_CHECKF(check_diff(db, &rb, &ra, &b, &a, NULL, seed) == 0, "seed %#llx b->a",
		          (unsigned long long)seed);
		for (int q = 0; q < 6; q++) {
			unsigned char lo[TM_KEY_MAX], hi[TM_KEY_MAX];
			prolly_range rg = PROLLY_RANGE_INIT;
			random_range(&rg, &r, &a, lo, hi);
			PT_CHECKF(check_diff(db, &ra, &rb, &a, &b, &rg, seed) == 0, "seed %#llx range %d",
			          (unsigned long long)seed, q);
		}
		/* against the empty tree, both ways, and a single-leaf tree (heights differ) */
		tm_model e, one;
		prolly_id r1;
		tm_model_init(&e);
		tm_model_init(&one);
		for (size_t i = 0; i < a.n; i += a.n / 5)
			tm_model_put(&one, a.r[i].k, a.r[i].klen, "x", 1);
		PT_REQUIRE(tm_build_commit(&r1, db, &one) == 0);
		prolly_id_empty_tree(&empty);
		PT_CHECK(check_diff(db, &empty, &ra, &e, &a, NULL, seed) == 0);
		PT_CHECK(check_diff(db, &ra, &empty, &a, &e, NULL, seed) == 0);
		PT_CHECK(check_diff(db, &r1, &ra, &one, &a, NULL, seed) == 0);
		PT_CHECK(check_diff(db, &ra, &r1, &a, &one, NULL, seed) == 0);
		PT_CHECK(check_diff(db, &r1, &empty, &one, &e, NULL, seed) == 0);
		tm_model_dispose(&e);
		tm_model_dispose(&one);
		tm_model_dispose(&a);
		tm_model_dispose(&b);
		prolly_close(db);
	}
}

PT_TEST(diff_stop_and_bad_arguments)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_rng r;
	tm_model a, b;
	prolly_id ra, rb;
	tm_rng_seed(&r, PT_SEED() + 5);
	tm_model_init(&a);
	tm_model_init(&b);
	tm_random_model(&a, &r, 3000);
	tm_random_model(&b, &r, 3000);
	PT_REQUIRE(tm_build_commit(&ra, db, &a) == 0);
	PT_REQUIRE(tm_build_commit(&rb, db, &b) == 0);
	checker c;
	memset(&c, 0, sizeof(c));
	c.nwant = model_diff(&a, &b, NULL, &c.want);
	c.stop_at = 10;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, NULL, check_fn, &c), 77);
	PT_CHECK(c.got == 10);
	free(c.want);
	prolly_range rg = PROLLY_RANGE_INIT;
	rg.reverse = 1;
	size_t calls = 0;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, &rg, count_fn, &calls), PROLLY_EINVAL);
	rg.reverse = 0;
	rg.prefix.data = "a";
	rg.prefix.size = 1;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, &rg, count_fn, &calls), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, NULL, NULL, NULL), PROLLY_EINVAL);
	/* empty range */
	prolly_range_init(&rg, PROLLY_RANGE_VERSION);
	rg.has_lo = rg.has_hi = 1;
	rg.lo.data = rg.hi.data = "m";
	rg.lo.size = rg.hi.size = 1;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, &rg, count_fn, &calls), 0);
	PT_CHECK(calls == 0);
	prolly_id bogus;
	memset(&bogus, 0x5a, sizeof(bogus));
	PT_CHECK_RC(prolly_diff(db, &ra, &bogus, NULL, count_fn, &calls), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_diff(db, &bogus, &rb, NULL, count_fn, &calls), PROLLY_ENOTFOUND);
	tm_model_dispose(&a);
	tm_model_dispose(&b);
	prolly_close(db);
}

PT_TEST(diff_missing_node_is_an_error)
{
	tm_tap *tap;
	prolly_db *db = tm_open_tapped_mem(&tap);
	tm_rng r;
	tm_model a, b;
	prolly_id ra, rb;
	tm_rng_seed(&r, PT_SEED() + 9);
	tm_model_init(&a);
	tm_model_init(&b);
	tm_random_model(&a, &r, 8000);
	tm_random_model(&b, &r, 8000);
	PT_REQUIRE(tm_build_commit(&ra, db, &a) == 0);
	static prolly_id written[4096];
	prolly_id *wp = written;
	tap->on_write = tm_record_id;
	tap->on_write_payload = &wp;
	PT_REQUIRE(tm_build_commit(&rb, db, &b) == 0);
	tap->on_write = NULL;
	size_t nw = (size_t)(wp - written);
	PT_REQUIRE(nw > 5);
	for (size_t t = 0; t < nw; t += nw / 6 + 1) {
		tap->mode = TM_TAP_DROP;
		tap->target = written[t];
		size_t calls = 0;
		int rc = prolly_diff(db, &ra, &rb, NULL, count_fn, &calls);
		int want = prolly_id_equal(&written[t], &rb) ? PROLLY_ENOTFOUND : PROLLY_ECORRUPT;
		PT_CHECKF(rc == want, "node %zu: rc %d", t, rc);
		tap->mode = TM_TAP_FLIP;
		tap->pos = 9;
		tap->mask = 0x40;
		rc = prolly_diff(db, &ra, &rb, NULL, count_fn, &calls);
		PT_CHECKF(rc == PROLLY_ECORRUPT, "node %zu flipped: rc %d", t, rc);
		tap->mode = TM_TAP_PASS;
	}
	/* A root that is not in the store (a tree gc --keep trimmed, docs/commits.md) is
	 * PROLLY_ENOTFOUND, as for every other read, on either side: not a corrupt tree. */
	tap->mode = TM_TAP_DROP;
	tap->target = rb;
	size_t calls = 0;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, NULL, count_fn, &calls), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_diff(db, &rb, &ra, NULL, count_fn, &calls), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "not found"), "%s", prolly_last_error());
	tap->mode = TM_TAP_PASS;
	PT_CHECK_RC(prolly_diff(db, &ra, &rb, NULL, count_fn, &calls), 0);
	tm_model_dispose(&a);
	tm_model_dispose(&b);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
