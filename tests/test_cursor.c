/*
 * test_cursor.c - cursors against the model: forward, reverse, bounds, prefixes, empty and
 * single-leaf trees, batched loading and bounded reads.
 */
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROLLY_MIN(a, b) ((a) < (b) ? (a) : (b))

/* A random bound: an existing key, a neighbour of one, or random bytes. */
static size_t random_bound(tm_rng *r, const tm_model *m, unsigned char *out)
{
	if (m->n && tm_rng_chance(r, 2, 3)) {
		const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
		size_t len = rec->klen;
		memcpy(out, rec->k, len);
		uint64_t how = tm_rng_below(r, 4);
		if (how == 1 && len < TM_KEY_MAX)
			out[len++] = 0; /* just after */
		else if (how == 2 && len > 1)
			len--; /* a prefix of it */
		return len;
	}
	return tm_gen_key(r, out);
}

/* Compares the cursor over range with the model. Returns 0 when equal. */
static int check_range(prolly_db *db, const prolly_id *root, const tm_model *m,
                       const prolly_range *rg, uint64_t seed)
{
	size_t *idx = NULL;
	size_t want = tm_model_range(m, rg, &idx), got = 0;
	prolly_cursor *cur = NULL;
	int rc = prolly_cursor_open(&cur, db, root, rg), bad = 0;
	if (rc) {
		fprintf(stderr, "  seed %#llx: cursor_open: %d (%s)\n", (unsigned long long)seed, rc,
		        prolly_last_error());
		free(idx);
		return -1;
	}
	prolly_slice k, v;
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (got >= want) {
			fprintf(stderr, "  seed %#llx: extra record %s\n", (unsigned long long)seed,
			        tm_bhex(k.data, k.size));
			bad = 1;
			break;
		}
		const tm_rec *e = &m->r[idx[got]];
		if (k.size != e->klen || memcmp(k.data, e->k, k.size) || v.size != e->vlen ||
		    (v.size && memcmp(v.data, e->v, v.size))) {
			fprintf(stderr, "  seed %#llx: record %zu is %s, want %s\n", (unsigned long long)seed,
			        got, tm_bhex(k.data, k.size), tm_bhex(e->k, e->klen));
			bad = 1;
			break;
		}
		got++;
	}
	if (!bad && rc != PROLLY_ITEROVER) {
		fprintf(stderr, "  seed %#llx: cursor_next: %d (%s)\n", (unsigned long long)seed, rc,
		        prolly_last_error());
		bad = 1;
	}
	if (!bad && got != want) {
		fprintf(stderr, "  seed %#llx: %zu records, want %zu\n", (unsigned long long)seed, got,
		        want);
		bad = 1;
	}
	if (!bad && prolly_cursor_next(cur, &k, &v) != PROLLY_ITEROVER) {
		fprintf(stderr, "  seed %#llx: next after the end is not ITEROVER\n",
		        (unsigned long long)seed);
		bad = 1;
	}
	prolly_cursor_free(cur);
	free(idx);
	return bad ? -1 : 0;
}

static void random_ranges(prolly_db *db, const prolly_id *root, const tm_model *m, tm_rng *r,
                          int count, uint64_t seed)
{
	unsigned char lo[TM_KEY_MAX + 1], hi[TM_KEY_MAX + 1], pre[TM_KEY_MAX + 1];
	for (int t = 0; t < count; t++) {
		prolly_range rg = PROLLY_RANGE_INIT;
		if (tm_rng_chance(r, 1, 2)) {
			rg.has_lo = 1;
			rg.lo.size = random_bound(r, m, lo);
			rg.lo.data = lo;
			rg.lo_exclusive = (int)tm_rng_below(r, 2);
		}
		if (tm_rng_chance(r, 1, 2)) {
			rg.has_hi = 1;
			rg.hi.size = random_bound(r, m, hi);
			rg.hi.data = hi;
			rg.hi_inclusive = (int)tm_rng_below(r, 2);
		}
		if (tm_rng_chance(r, 1, 4)) {
			size_t len = random_bound(r, m, pre);
			rg.prefix.size = PROLLY_MIN(len, (size_t)tm_rng_range(r, 1, 3));
			rg.prefix.data = pre;
			if (tm_rng_chance(r, 1, 4))
				pre[rg.prefix.size - 1] = 0xff;
		}
		rg.reverse = (int)tm_rng_below(r, 2);
		int rc = check_range(db, root, m, &rg, seed);
		PT_CHECKF(rc == 0, "seed %#llx range %d (lo %d/%d hi %d/%d prefix %zu rev %d)",
		          (unsigned long long)seed, t, rg.has_lo, rg.lo_exclusive, rg.has_hi,
		          rg.hi_inclusive, rg.prefix.size, rg.reverse);
		if (rc)
			return;
	}
}

static void run_sizes(size_t cache_bytes, const size_t *sizes, size_t nsizes, int ranges)
{
	uint64_t seed = PT_SEED();
	prolly_db *db = tm_open_mem(cache_bytes);
	for (size_t s = 0; s < nsizes; s++) {
		tm_rng r;
		tm_model m;
		prolly_id root;
		tm_rng_seed(&r, seed + s);
		tm_model_init(&m);
		tm_random_model_big(&m, &r, sizes[s], 500);
		PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
		PT_CHECKF(check_range(db, &root, &m, NULL, seed) == 0, "seed %#llx size %zu full scan",
		          (unsigned long long)seed, sizes[s]);
		prolly_range rev = PROLLY_RANGE_INIT;
		rev.reverse = 1;
		PT_CHECKF(check_range(db, &root, &m, &rev, seed) == 0, "seed %#llx size %zu reverse scan",
		          (unsigned long long)seed, sizes[s]);
		random_ranges(db, &root, &m, &r, ranges, seed + s);
		tm_model_dispose(&m);
	}
	prolly_close(db);
}

PT_TEST(cursor_small_trees)
{
	static const size_t sizes[] = {0, 1, 2, 3, 10, 50, 200};
	run_sizes((size_t)64 << 20, sizes, sizeof(sizes) / sizeof(sizes[0]), 100);
}

PT_TEST(cursor_random_trees)
{
	size_t sizes[] = {1000, 5000, 20000, 50000};
	for (size_t i = 0; i < 4; i++)
		sizes[i] *= tm_scale();
	run_sizes((size_t)256 << 20, sizes, 4, 60);
}

PT_TEST(cursor_no_cache)
{
	/* With the cache disabled the cursor's own references keep its nodes alive. */
	static const size_t sizes[] = {0, 7, 3000, 20000};
	run_sizes(0, sizes, 4, 40);
}

PT_TEST(cursor_empty_tree)
{
	prolly_db *db = tm_open_mem((size_t)1 << 20);
	prolly_id empty;
	prolly_cursor *cur = NULL;
	prolly_slice k, v;
	prolly_id_empty_tree(&empty);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_cursor_open(&cur, db, &empty, NULL), 0);
	PT_CHECK_RC(prolly_cursor_next(cur, &k, &v), PROLLY_ITEROVER);
	PT_CHECK_RC(prolly_cursor_next(cur, NULL, NULL), PROLLY_ITEROVER);
	prolly_cursor_free(cur);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	PT_CHECK(st.store_reads == 0);
	prolly_cursor_free(NULL);
	prolly_close(db);
}

/* Fixed, ordered keys: "k%08u". */
static void seq_model(tm_model *m, size_t n)
{
	char k[32], v[32];
	for (size_t i = 0; i < n; i++) {
		int kl = snprintf(k, sizeof(k), "k%08zu", i);
		int vl = snprintf(v, sizeof(v), "value-%zu", i);
		tm_model_put(m, k, (size_t)kl, v, (size_t)vl);
	}
}

PT_TEST(cursor_prefix_edges)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_model m;
	prolly_id root;
	tm_model_init(&m);
	static const char *keys[] = {"",         "\x00",   "\x00\x00",   "\x00\xff", "a",
	                             "ab",       "ab\xff", "ab\xff\xff", "ac",       "b",
	                             "\xfe\xff", "\xff",   "\xff\x00",   "\xff\xff", "\xff\xff\xff"};
	size_t lens[] = {0, 1, 2, 2, 1, 2, 3, 4, 2, 1, 2, 1, 2, 2, 3};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		tm_model_put(&m, keys[i], lens[i], "v", 1);
	PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
	static const char *pres[] = {"\x00",     "a",    "ab", "ab\xff",          "\xff",
	                             "\xff\xff", "\xfe", "c",  "\xff\xff\xff\xff"};
	size_t plens[] = {1, 1, 2, 3, 1, 2, 1, 1, 4};
	for (size_t p = 0; p < sizeof(plens) / sizeof(plens[0]); p++) {
		for (int rev = 0; rev < 2; rev++) {
			prolly_range rg = PROLLY_RANGE_INIT;
			rg.prefix.data = pres[p];
			rg.prefix.size = plens[p];
			rg.reverse = rev;
			PT_CHECKF(check_range(db, &root, &m, &rg, 0) == 0, "prefix %s rev %d",
			          tm_bhex(pres[p], plens[p]), rev);
			/* prefix with a lower bound inside and an upper bound inside */
			rg.has_lo = 1;
			rg.lo.data = pres[p];
			rg.lo.size = plens[p];
			rg.lo_exclusive = 1;
			PT_CHECKF(check_range(db, &root, &m, &rg, 0) == 0, "prefix %s excl lo rev %d",
			          tm_bhex(pres[p], plens[p]), rev);
		}
	}
	/* Empty key as an exclusive lower bound and as an inclusive upper bound. */
	prolly_range rg = PROLLY_RANGE_INIT;
	rg.has_lo = 1;
	rg.lo_exclusive = 1;
	PT_CHECK(check_range(db, &root, &m, &rg, 0) == 0);
	prolly_range_init(&rg, PROLLY_RANGE_VERSION);
	rg.has_hi = 1;
	rg.hi_inclusive = 1;
	PT_CHECK(check_range(db, &root, &m, &rg, 0) == 0);
	rg.reverse = 1;
	PT_CHECK(check_range(db, &root, &m, &rg, 0) == 0);
	tm_model_dispose(&m);
	prolly_close(db);
}

/* Builds the 200,000 records of seq_model into m and a tree of them in db (root). Returns the
 * tree's leaves and sets its height; 0 on failure. */
static uint64_t seq_tree(prolly_db *db, tm_model *m, prolly_id *root, unsigned *height)
{
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	tm_model_init(m);
	seq_model(m, 200000);
	if (tm_build_commit(root, db, m) || prolly_tree_stats_get(&ts, db, root, 0))
		return 0;
	*height = ts.height;
	return ts.leaves;
}

/* Sets rg's bounds to [lo, hi), keys of the same form as seq_model's. */
static void range_between(prolly_range *rg, const char *lo, const char *hi)
{
	rg->has_lo = rg->has_hi = 1;
	rg->lo.data = lo;
	rg->lo.size = strlen(lo);
	rg->hi.data = hi;
	rg->hi.size = strlen(hi);
}

/* Scans rg (NULL: everything) of root from a cold cache to its end and puts this thread's
 * counters of the scan in st. Returns the records read, or -1 if the cursor did not open. */
static long cold_scan(prolly_db *db, const prolly_id *root, const prolly_range *rg,
                      prolly_stats *st)
{
	prolly_cursor *cur = NULL;
	prolly_slice k;
	long n = 0;
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	if (prolly_cursor_open(&cur, db, root, rg))
		return -1;
	while (prolly_cursor_next(cur, &k, NULL) == 0)
		n++;
	prolly_cursor_free(cur);
	prolly_thread_stats(st);
	return n;
}

PT_TEST(cursor_full_scan_is_batched)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_model m;
	prolly_id root;
	unsigned height = 0;
	uint64_t leaves = seq_tree(db, &m, &root, &height);
	PT_REQUIRE(leaves > 200);
	prolly_stats st = PROLLY_STATS_INIT;
	long n = cold_scan(db, &root, NULL, &st);
	PT_REQUIRE(n >= 0);
	PT_CHECK((size_t)n == m.n);
	/* about one call per 64 leaves, plus the ramp-up and the levels above */
	PT_CHECKF(st.store_reads <= leaves / 56 + 8 * height, "%llu store calls for %llu leaves",
	          (unsigned long long)st.store_reads, (unsigned long long)leaves);
	PT_CHECKF(st.nodes_read <= leaves + leaves / 8 + 8, "%llu nodes read for %llu leaves",
	          (unsigned long long)st.nodes_read, (unsigned long long)leaves);

	/* Reverse full scan: the same bound. */
	prolly_range rg = PROLLY_RANGE_INIT;
	rg.reverse = 1;
	n = cold_scan(db, &root, &rg, &st);
	PT_REQUIRE(n >= 0);
	PT_CHECK((size_t)n == m.n);
	PT_CHECKF(st.store_reads <= leaves / 56 + 8 * height,
	          "reverse: %llu store calls for %llu leaves", (unsigned long long)st.store_reads,
	          (unsigned long long)leaves);

	/* A short range reads one node per level (nothing past the range end). */
	char lo[32], hi[32];
	snprintf(lo, sizeof(lo), "k%08u", 123456u);
	snprintf(hi, sizeof(hi), "k%08u", 123460u);
	for (int rev = 0; rev < 2; rev++) {
		prolly_range_init(&rg, PROLLY_RANGE_VERSION);
		range_between(&rg, lo, hi);
		rg.reverse = rev;
		n = cold_scan(db, &root, &rg, &st);
		PT_REQUIRE(n >= 0);
		PT_CHECK(n == 4);
		PT_CHECKF(st.nodes_read <= (uint64_t)height + 1, "rev %d: %llu nodes read, height %u", rev,
		          (unsigned long long)st.nodes_read, height);
	}
	tm_model_dispose(&m);
	prolly_close(db);
}

/* Read-ahead (CU6) never loads leaves past the range, in either direction, and a cursor freed in
 * the middle of a long scan has read at most the read-ahead batches beyond where it stopped. */
PT_TEST(cursor_readahead_stays_in_range)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_model m;
	prolly_id root;
	unsigned height = 0;
	uint64_t leaves = seq_tree(db, &m, &root, &height);
	PT_REQUIRE(leaves > 1000);
	char lo[32], hi[32];
	snprintf(lo, sizeof(lo), "k%08u", 50000u);
	snprintf(hi, sizeof(hi), "k%08u", 100000u); /* a quarter of the records */
	for (int rev = 0; rev < 2; rev++) {
		prolly_range rg = PROLLY_RANGE_INIT;
		range_between(&rg, lo, hi);
		rg.reverse = rev;
		prolly_stats st = PROLLY_STATS_INIT;
		long n = cold_scan(db, &root, &rg, &st);
		PT_REQUIRE(n >= 0);
		PT_CHECK(n == 50000);
		/* the leaves of a quarter of the records, two boundary leaves, and the levels above */
		uint64_t bound = leaves / 4 + leaves / 16 + 2 + 8 * (uint64_t)height;
		PT_CHECKF(st.nodes_read <= bound, "rev %d: %llu nodes read, bound %llu", rev,
		          (unsigned long long)st.nodes_read, (unsigned long long)bound);
	}
	/* stop after 20000 records of a full scan */
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	prolly_cursor *cur = NULL;
	PT_REQUIRE(prolly_cursor_open(&cur, db, &root, NULL) == 0);
	prolly_slice k;
	for (int i = 0; i < 20000; i++)
		PT_REQUIRE(prolly_cursor_next(cur, &k, NULL) == 0);
	prolly_cursor_free(cur);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	uint64_t bound = leaves / 10 + leaves / 40 + 3 * 64 + 8 * (uint64_t)height;
	PT_CHECKF(st.nodes_read <= bound, "early stop: %llu nodes read, bound %llu",
	          (unsigned long long)st.nodes_read, (unsigned long long)bound);
	tm_model_dispose(&m);
	prolly_close(db);
}

/* With PROLLY_DB_NO_THREADS there is no read-ahead: a load on the caller's own thread overlaps
 * nothing, so reading the next batches early would only cost, and a cursor freed early (a scan
 * given a row limit but no upper bound) would have read up to RA_DEPTH batches it did not need.
 * It reads at most the batch it stopped in. */
PT_TEST(cursor_no_threads_reads_no_further)
{
	prolly_store *st0;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = (size_t)256 << 20;
	o.flags = PROLLY_DB_NO_THREADS;
	PT_REQUIRE(prolly_store_mem_new(&st0) == 0 && prolly_db_new(&db, st0, &o) == 0);
	tm_model m;
	prolly_id root;
	unsigned height = 0;
	uint64_t leaves = seq_tree(db, &m, &root, &height);
	PT_REQUIRE(leaves > 1000);
	for (int rev = 0; rev < 2; rev++) {
		prolly_range rg = PROLLY_RANGE_INIT;
		rg.reverse = rev;
		prolly_db_cache_clear(db);
		prolly_thread_stats_reset();
		prolly_cursor *cur = NULL;
		PT_REQUIRE(prolly_cursor_open(&cur, db, &root, &rg) == 0);
		prolly_slice k;
		for (int i = 0; i < 20000; i++) /* a tenth of the records */
			PT_REQUIRE(prolly_cursor_next(cur, &k, NULL) == 0);
		prolly_cursor_free(cur);
		prolly_stats st = PROLLY_STATS_INIT;
		prolly_thread_stats(&st);
		/* the leaves of a tenth, their spread, one batch beyond and the levels above */
		uint64_t bound = leaves / 10 + leaves / 40 + 64 + 8 * (uint64_t)height;
		PT_CHECKF(st.nodes_read <= bound, "rev %d: %llu nodes read, bound %llu", rev,
		          (unsigned long long)st.nodes_read, (unsigned long long)bound);
	}
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(cursor_empty_ranges_read_nothing)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_model m;
	prolly_id root;
	tm_model_init(&m);
	seq_model(&m, 1000);
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	prolly_range rg = PROLLY_RANGE_INIT;
	rg.has_lo = rg.has_hi = 1;
	rg.lo.data = "k5";
	rg.lo.size = 2;
	rg.hi.data = "k5";
	rg.hi.size = 2; /* [k5, k5) is empty */
	prolly_cursor *cur = NULL;
	prolly_slice k;
	PT_CHECK_RC(prolly_cursor_open(&cur, db, &root, &rg), 0);
	PT_CHECK_RC(prolly_cursor_next(cur, &k, NULL), PROLLY_ITEROVER);
	prolly_cursor_free(cur);
	rg.hi.data = "k4"; /* lo > hi */
	PT_CHECK_RC(prolly_cursor_open(&cur, db, &root, &rg), 0);
	PT_CHECK_RC(prolly_cursor_next(cur, &k, NULL), PROLLY_ITEROVER);
	prolly_cursor_free(cur);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	PT_CHECK(st.store_reads == 0);
	/* Beyond the last key. */
	prolly_range_init(&rg, PROLLY_RANGE_VERSION);
	rg.has_lo = 1;
	rg.lo.data = "z";
	rg.lo.size = 1;
	PT_CHECK(check_range(db, &root, &m, &rg, 0) == 0);
	rg.reverse = 1;
	PT_CHECK(check_range(db, &root, &m, &rg, 0) == 0);
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(cursor_early_free_and_missing_root)
{
	prolly_db *db = tm_open_mem(0);
	tm_model m;
	prolly_id root, bogus;
	tm_model_init(&m);
	seq_model(&m, 30000);
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	prolly_cursor *cur = NULL;
	prolly_slice k, v;
	PT_REQUIRE(prolly_cursor_open(&cur, db, &root, NULL) == 0);
	for (int i = 0; i < 1000; i++)
		PT_CHECK_RC(prolly_cursor_next(cur, &k, &v), 0);
	prolly_cursor_free(cur); /* holds queued leaves: must release them */
	memset(&bogus, 0xab, sizeof(bogus));
	cur = NULL;
	PT_CHECK(prolly_cursor_open(&cur, db, &bogus, NULL) == PROLLY_ECORRUPT ||
	         prolly_cursor_open(&cur, db, &bogus, NULL) == PROLLY_ENOTFOUND);
	PT_CHECK(cur == NULL);
	tm_model_dispose(&m);
	prolly_close(db);
}

/* A node dropped by the store in the middle of a scan is an error, not a crash. */
PT_TEST(cursor_missing_node_is_an_error)
{
	tm_tap *tap;
	prolly_db *db = tm_open_tapped_mem(&tap);
	static prolly_id written[4096];
	prolly_id *wp = written;
	tap->on_write = tm_record_id;
	tap->on_write_payload = &wp;
	tm_model m;
	prolly_id root;
	tm_model_init(&m);
	seq_model(&m, 20000);
	PT_REQUIRE(tm_build_commit(&root, db, &m) == 0);
	tap->on_write = NULL;
	size_t nw = (size_t)(wp - written);
	PT_REQUIRE(nw > 10);
	for (size_t t = 0; t < nw; t += nw / 7 + 1) {
		tap->mode = TM_TAP_DROP;
		tap->target = written[t];
		prolly_cursor *cur = NULL;
		int rc = prolly_cursor_open(&cur, db, &root, NULL);
		prolly_slice k;
		size_t n = 0;
		while (rc == 0 && (rc = prolly_cursor_next(cur, &k, NULL)) == 0)
			n++;
		PT_CHECKF(rc == PROLLY_ECORRUPT, "node %zu: rc %d after %zu records", t, rc, n);
		if (cur) /* sticky error */
			PT_CHECK(prolly_cursor_next(cur, &k, NULL) == PROLLY_ECORRUPT);
		prolly_cursor_free(cur);
		tap->mode = TM_TAP_PASS;
	}
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(cursor_lmdb_store)
{
	uint64_t seed = PT_SEED();
	char *dir = tm_tmpdir("cursor");
	PT_REQUIRE(dir != NULL);
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = (size_t)1 << 20; /* small: most reads go to LMDB */
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), 0);
	if (st)
		PT_CHECK_RC(prolly_db_new(&db, st, &o), 0);
	if (db) {
		tm_rng r;
		tm_model m;
		prolly_id root;
		tm_rng_seed(&r, seed + 77);
		tm_model_init(&m);
		tm_random_model_big(&m, &r, 20000, 500);
		PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
		PT_CHECKF(check_range(db, &root, &m, NULL, seed) == 0, "seed %#llx lmdb full scan",
		          (unsigned long long)seed);
		random_ranges(db, &root, &m, &r, 30, seed);
		tm_model_dispose(&m);
		prolly_close(db);
	}
	tm_rmtree(dir);
	free(dir);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
