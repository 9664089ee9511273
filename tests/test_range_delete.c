/*
 * test_range_delete.c - prolly_delete_range against the model:
 *
 *   - many random ranges over random trees (binary keys and ordered 24-byte keys, small and
 *     large trees, bounds that are keys, between keys, beyond the ends, or absent): the result's
 *     records equal the model's and its root equals the root bulk-built from the remaining
 *     records (trees are canonical);
 *   - a range over most of a large tree reads O(height) nodes from a cold cache, far fewer than
 *     the leaves it removes (whole subtrees are dropped unread);
 *   - edge cases: empty tree, empty range, from > to, everything, a range delete followed by
 *     edits in the same txn.
 *
 * Re-run with a seed: PROLLY_TEST_SEED=0x... build/tests/test_range_delete [NAME].
 */
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

/* want: the records of m outside [from, to) (NULL bounds: open), borrowed from m: only the
 * array is want's (free(want->r), never tm_model_dispose). [*lo, *hi) are the indexes in m of
 * the records removed. A deep copy of every record each round, through ASan's allocator, was most
 * of this program's time. */
static void model_del_range(tm_model *want, const tm_model *m, const prolly_slice *from,
                            const prolly_slice *to, size_t *lo, size_t *hi)
{
	*lo = from ? tm_model_lower_bound(m, from->data, from->size) : 0;
	*hi = to ? tm_model_lower_bound(m, to->data, to->size) : m->n;
	want->n = 0;
	if (m->n == 0)
		return;
	if (want->cap < m->n) {
		free(want->r);
		want->cap = m->n;
		want->r = malloc(sizeof(tm_rec) * want->cap);
		if (!want->r)
			abort();
	}
	memcpy(want->r, m->r, sizeof(tm_rec) * *lo);
	memcpy(want->r + *lo, m->r + *hi, sizeof(tm_rec) * (m->n - *hi));
	want->n = m->n - (*hi - *lo);
}

static int keycmp(const prolly_slice *a, const prolly_slice *b)
{
	size_t n = a->size < b->size ? a->size : b->size;
	int c = n ? memcmp(a->data, b->data, n) : 0;
	return c ? c : (a->size > b->size) - (a->size < b->size);
}

/* A random bound: a key of the tree, a random key, or the smallest/largest. */
static size_t gen_bound(tm_rng *r, const tm_model *m, int key24, unsigned char *out)
{
	uint64_t w = tm_rng_below(r, 10);
	if (m->n && w < 6) {
		const tm_rec *x = &m->r[tm_rng_below(r, m->n)];
		memcpy(out, x->k, x->klen);
		size_t n = x->klen;
		if (w == 5 && n < TM_KEY_MAX) /* just after a key */
			out[n++] = 0;
		return n;
	}
	if (w == 9)
		return 0; /* the empty key: before everything */
	if (key24) {
		tm_key24(out, tm_rng_below(r, 4 * (m->n + 1)));
		return TM_KEY24;
	}
	return tm_gen_key(r, out);
}

static void random_ranges(uint64_t salt, size_t n, int key24, unsigned rounds)
{
	uint64_t seed = PT_SEED() ^ salt;
	tm_rng r;
	tm_rng_seed(&r, seed);
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	tm_model m, want;
	tm_model_init(&m);
	tm_model_init(&want);
	if (key24) {
		unsigned char k[TM_KEY24], v[64];
		for (size_t i = 0; i < n; i++) {
			tm_key24(k, 3 * i);
			tm_rng_bytes(&r, v, sizeof v);
			tm_model_put(&m, k, sizeof k, v, (size_t)tm_rng_below(&r, sizeof v));
		}
	} else {
		tm_random_model(&m, &r, n);
	}
	prolly_id root, got, expect;
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	for (unsigned i = 0; i < rounds && !pt_failed_now; i++) {
		unsigned char fb[TM_KEY_MAX + 1], tb[TM_KEY_MAX + 1];
		size_t fl = gen_bound(&r, &m, key24, fb), tl = gen_bound(&r, &m, key24, tb);
		prolly_slice f = {fb, fl}, t = {tb, tl};
		const prolly_slice *fp = tm_rng_chance(&r, 1, 8) ? NULL : &f;
		const prolly_slice *tp = tm_rng_chance(&r, 1, 8) ? NULL : &t;
		if (fp && tp && keycmp(fp, tp) > 0) { /* keep from <= to */
			const prolly_slice *x = fp;
			fp = tp;
			tp = x;
		}
		size_t lo, hi;
		model_del_range(&want, &m, fp, tp, &lo, &hi);
		prolly_txn *txn = NULL;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		int rc = prolly_delete_range(&got, txn, &root, fp, tp);
		PT_CHECKF(rc == 0, "seed 0x%llx round %u: %d %s", (unsigned long long)seed, i, rc,
		          prolly_last_error());
		if (rc == 0) {
			PT_CHECKF(tm_tree_check(db, &got, &want, "range delete") == 0, "seed 0x%llx round %u",
			          (unsigned long long)seed, i);
			PT_CHECK_RC(tm_build(&expect, txn, &want), 0);
			PT_CHECKF(prolly_id_equal(&got, &expect),
			          "seed 0x%llx round %u: %zu -> %zu records: root %s, built %s",
			          (unsigned long long)seed, i, m.n, want.n, tm_hex(&got), tm_hex(&expect));
		}
		/* Sometimes keep the result, so later ranges cut an edited tree. */
		if (rc == 0 && want.n > n / 4 && tm_rng_chance(&r, 1, 4)) {
			PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
			root = got;
			tm_model_cut(&m, lo, hi); /* m's records are now want's */
		}
		prolly_txn_free(txn);
		if (tm_rng_chance(&r, 1, 8))
			prolly_db_cache_clear(db);
	}
	tm_model_dispose(&m);
	free(want.r);
	prolly_close(db);
}

PT_TEST(range_random_small_trees)
{
	for (size_t n = 0; n < 40 && !pt_failed_now; n++)
		random_ranges(0x100 + n, n * 7, 0, 20);
}

PT_TEST(range_random_binary_keys)
{
	random_ranges(0x201, 3000 * tm_scale(), 0, 300);
}

PT_TEST(range_random_key24)
{
	random_ranges(0x202, 60000 * tm_scale(), 1, 200);
}

PT_TEST(range_random_key24_large)
{
	random_ranges(0x203, 400000 * tm_scale(), 1, 40);
}

/* A range over 80% of a large tree reads only the boundary paths and a few nodes after `to`. */
PT_TEST(range_skips_subtrees)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root, got;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	const uint64_t n = 300000;
	unsigned char k[TM_KEY24], v[40];
	memset(v, 'v', sizeof v);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	for (uint64_t i = 0; i < n; i++) {
		tm_key24(k, i);
		PT_REQUIRE(prolly_builder_add(b, k, sizeof k, v, sizeof v) == 0);
	}
	PT_REQUIRE(prolly_builder_finish(b, &root) == 0 && prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	PT_REQUIRE(prolly_tree_stats_get(&ts, db, &root, 0) == 0);

	unsigned char fk[TM_KEY24], tk[TM_KEY24];
	tm_key24(fk, n / 10);
	tm_key24(tk, n - n / 10);
	prolly_slice f = {fk, sizeof fk}, t = {tk, sizeof tk};
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, &f, &t), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	printf("# %llu records, %llu leaves, height %u: removing 80%% read %llu nodes in %llu store "
	       "calls\n",
	       (unsigned long long)ts.records, (unsigned long long)ts.leaves, ts.height,
	       (unsigned long long)st.nodes_read, (unsigned long long)st.store_reads);
	PT_CHECKF(st.nodes_read <= 2 * (uint64_t)ts.height + 8, "read %llu nodes",
	          (unsigned long long)st.nodes_read);
	PT_CHECK(ts.leaves > 1000);
	uint64_t cnt = 0;
	PT_CHECK_RC(prolly_count(&cnt, db, &got), 0);
	PT_CHECK(cnt == n - (n - n / 10 - n / 10));
	prolly_txn_free(txn);
	prolly_close(db);
}

PT_TEST(range_edges)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	prolly_txn *txn = NULL;
	prolly_id empty, root, got;
	tm_model m, want;
	tm_rng r;
	tm_rng_seed(&r, PT_SEED());
	tm_model_init(&m);
	tm_model_init(&want);
	prolly_id_empty_tree(&empty);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	/* The empty tree, whatever the range. */
	PT_CHECK_RC(prolly_delete_range(&got, txn, &empty, NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &empty));
	tm_random_model(&m, &r, 2000);
	PT_REQUIRE(tm_build(&root, txn, &m) == 0);
	/* Everything: the empty tree. */
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &empty));
	/* from == to, and a range between two keys: no change. */
	prolly_slice a = {m.r[10].k, m.r[10].klen};
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, &a, &a), 0);
	PT_CHECK(prolly_id_equal(&got, &root));
	unsigned char after[TM_KEY_MAX + 1];
	memcpy(after, m.r[10].k, m.r[10].klen);
	after[m.r[10].klen] = 0;
	prolly_slice a0 = {after, m.r[10].klen + 1};
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, &a0, &a0), 0);
	PT_CHECK(prolly_id_equal(&got, &root));
	/* from > to; a bound too long; untouched output. */
	prolly_slice z = {m.r[20].k, m.r[20].klen};
	got = empty;
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, &z, &a), PROLLY_EINVAL);
	PT_CHECK(prolly_id_equal(&got, &empty));
	unsigned char big[PROLLY_MAX_KEY + 1];
	memset(big, 'k', sizeof big);
	prolly_slice bg = {big, sizeof big};
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, NULL, &bg), PROLLY_ETOOBIG);
	/* One record, then edits on the result in the same txn. */
	prolly_slice b11 = {m.r[11].k, m.r[11].klen};
	PT_CHECK_RC(prolly_delete_range(&got, txn, &root, &a, &b11), 0);
	tm_model_copy(&want, &m);
	tm_model_cut(&want, 10, 11); /* [a, b11): record 10 */
	prolly_edit e = {PROLLY_PUT, {"zz-new", 6}, {"v", 1}};
	prolly_id got2, expect;
	PT_CHECK_RC(prolly_edit_tree(&got2, txn, &got, &e, 1), 0);
	tm_model_put(&want, "zz-new", 6, "v", 1);
	PT_CHECK_RC(tm_build(&expect, txn, &want), 0);
	PT_CHECK(prolly_id_equal(&got2, &expect));
	/* A root that is not in the store. */
	prolly_id bogus;
	memset(&bogus, 0x5a, sizeof bogus);
	PT_CHECK_RC(prolly_delete_range(&got, txn, &bogus, NULL, NULL), PROLLY_ENOTFOUND);
	prolly_txn_free(txn);
	tm_model_dispose(&m);
	tm_model_dispose(&want);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
