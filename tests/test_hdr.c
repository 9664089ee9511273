/*
 * test_hdr.c - the HDR latency histogram (bench/lib/hdr.{c,h}):
 *
 *   - values below 2^bits are exact; percentiles on random data (uniform, log-uniform, heavy
 *     tail) against an exact sorted array, within hdr_relative_error() and never below;
 *     every significant-digit setting 1..5;
 *   - exact count, min, max, mean (including sums beyond 64 bits);
 *   - merging per-thread histograms equals recording into one; incompatible merges refused;
 *   - edge values: 0, 1, the highest trackable value, above it (saturation), UINT64_MAX; empty;
 *     reset;
 *   - text round trip; every truncation and many corruptions of the text are rejected.
 *
 * Re-run one test: build/tests/test_hdr NAME; PROLLY_TEST_SEED changes the random data.
 */
#include "../bench/lib/hdr.h"
#include "prolly.h"
#include "ptest.h"
#include "rng.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A value from one of several shapes, within [0, max]. */
static uint64_t sample(uint64_t *rng, int shape, uint64_t max)
{
	double u = (double)(bench_splitmix64(rng) >> 11) / 9007199254740992.0;
	switch (shape) {
	case 0: return bench_splitmix64(rng) % (max + 1);                /* uniform */
	case 1: return (uint64_t)exp(u * log((double)max));              /* log-uniform */
	case 2: return 50000 + (uint64_t)(-log(1 - u) * 200000.0) % max; /* exponential */
	default:
		return u < 0.99 ? 1000 + bench_splitmix64(rng) % 9000
		                : bench_splitmix64(rng) % max; /* tail */
	}
}

static const double pcts[] = {0, 0.001, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 99.999, 100};

/* Checks every percentile of h against the sorted samples. */
static int check_percentiles(const hdr_hist *h, uint64_t *v, size_t n, const char *what)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		double p = pcts[i], r = p / 100.0 * (double)n;
		uint64_t rank = (uint64_t)r;
		if ((double)rank < r)
			rank++;
		if (rank < 1)
			rank = 1;
		uint64_t exact = p == 0 ? v[0] : v[rank - 1], got = hdr_percentile(h, p);
		double bound = (double)exact * hdr_relative_error(h);
		if (got < exact || (double)(got - exact) > bound) {
			fprintf(stderr, "  %s: p%g = %" PRIu64 ", exact %" PRIu64 " (bound %g)\n", what, p, got,
			        exact, bound);
			return 0;
		}
	}
	return hdr_min(h) == v[0] && hdr_max(h) == v[n - 1] && hdr_count(h) == n;
}

PT_TEST(exact_below_sub_bucket_range)
{
	hdr_hist *h;
	PT_REQUIRE(hdr_new(&h, 0, 0) == 0);
	PT_CHECK(hdr_digits(h) == 3 && hdr_highest(h) == HDR_DEFAULT_HIGHEST);
	PT_CHECK(hdr_relative_error(h) <= 0.001 && hdr_relative_error(h) == 1.0 / 1024);
	for (uint64_t v = 1; v <= 2047; v++)
		hdr_record(h, v);
	for (uint64_t v = 1; v <= 2047; v++)
		PT_CHECKF(hdr_percentile(h, 100.0 * ((double)v - 0.5) / 2047.0) == v, "v %" PRIu64, v);
	PT_CHECK(hdr_min(h) == 1 && hdr_max(h) == 2047 && hdr_mean(h) == 1024.0);
	hdr_free(h);
}

PT_TEST(percentiles_random_within_error)
{
	uint64_t rng = PT_SEED();
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	PT_REQUIRE(v != NULL);
	for (int shape = 0; shape < 4; shape++) {
		hdr_hist *h;
		PT_REQUIRE(hdr_new(&h, 0, 3) == 0);
		long double sum = 0;
		for (size_t i = 0; i < n; i++) {
			v[i] = sample(&rng, shape, HDR_DEFAULT_HIGHEST);
			sum += v[i];
			hdr_record(h, v[i]);
		}
		PT_CHECKF(fabs(hdr_mean(h) - (double)(sum / n)) <= 1e-9 * (double)(sum / n),
		          "shape %d mean %f want %f", shape, hdr_mean(h), (double)(sum / n));
		PT_CHECKF(check_percentiles(h, v, n, "3 digits"), "shape %d seed 0x%" PRIx64, shape,
		          PT_SEED());
		hdr_free(h);
	}
	free(v);
}

PT_TEST(percentiles_every_digit_setting)
{
	uint64_t rng = PT_SEED() ^ 0x77;
	size_t n = 20000;
	uint64_t *v = malloc(n * sizeof(*v));
	PT_REQUIRE(v != NULL);
	for (int digits = 1; digits <= 5; digits++) {
		hdr_hist *h;
		PT_REQUIRE(hdr_new(&h, 10000000000ULL, digits) == 0);
		PT_CHECK(hdr_relative_error(h) <= pow(10, -digits));
		PT_CHECK(hdr_relative_error(h) > pow(10, -digits) / 2);
		for (size_t i = 0; i < n; i++) {
			v[i] = sample(&rng, (int)(i % 4), 10000000000ULL);
			hdr_record(h, v[i]);
		}
		PT_CHECKF(check_percentiles(h, v, n, "digits"), "digits %d", digits);
		hdr_free(h);
	}
	free(v);
}

PT_TEST(memory_and_arguments)
{
	hdr_hist *h = NULL;
	PT_REQUIRE(hdr_new(&h, 0, 0) == 0);
	/* One hour at 3 digits: 33421 slots of 8 bytes. */
	PT_CHECKF(hdr_memory(h) > 33000 * 8 && hdr_memory(h) < 34000 * 8, "%zu", hdr_memory(h));
	hdr_free(h);
	PT_CHECK(hdr_new(&h, 0, 6) == -1 && h == NULL);
	PT_CHECK(hdr_new(&h, 1, 3) == -1 && h == NULL);
	PT_CHECK(hdr_new(&h, UINT64_MAX, 3) == -1 && h == NULL);
	PT_CHECK(hdr_new(&h, 2, 1) == 0);
	hdr_free(h);
	hdr_free(NULL);
}

PT_TEST(edge_values)
{
	hdr_hist *h;
	PT_REQUIRE(hdr_new(&h, 0, 3) == 0);
	/* Empty. */
	PT_CHECK(hdr_count(h) == 0 && hdr_min(h) == 0 && hdr_max(h) == 0 && hdr_mean(h) == 0 &&
	         hdr_percentile(h, 50) == 0 && hdr_percentile(h, 100) == 0);
	/* 0 and 1 are distinct and exact. */
	hdr_record(h, 0);
	hdr_record(h, 1);
	PT_CHECK(hdr_percentile(h, 50) == 0 && hdr_percentile(h, 100) == 1 && hdr_min(h) == 0);
	/* The highest trackable value is exact (max), and within error as a percentile. */
	hdr_record(h, HDR_DEFAULT_HIGHEST);
	PT_CHECK(hdr_max(h) == HDR_DEFAULT_HIGHEST && hdr_percentile(h, 100) == HDR_DEFAULT_HIGHEST);
	PT_CHECK(hdr_percentile(h, 99) == HDR_DEFAULT_HIGHEST);
	PT_CHECK(hdr_saturated(h) == 0);
	/* Above it: counted as the highest, and as saturated. */
	hdr_record(h, HDR_DEFAULT_HIGHEST + 1);
	hdr_record(h, UINT64_MAX);
	PT_CHECK(hdr_count(h) == 5 && hdr_saturated(h) == 2 && hdr_max(h) == HDR_DEFAULT_HIGHEST);
	/* p outside [0, 100] clamps. */
	PT_CHECK(hdr_percentile(h, -5) == 0 && hdr_percentile(h, 1000) == HDR_DEFAULT_HIGHEST);
	PT_CHECK(hdr_percentile(h, NAN) == 0);
	/* One sample: every percentile is that value, exactly (capped at max). */
	hdr_reset(h);
	PT_CHECK(hdr_count(h) == 0 && hdr_saturated(h) == 0 && hdr_max(h) == 0);
	hdr_record(h, 123456789);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		PT_CHECK(hdr_percentile(h, pcts[i]) == 123456789);
	PT_CHECK(hdr_mean(h) == 123456789.0);
	/* record_n, zero n, and a sum beyond 64 bits stays exact. */
	hdr_reset(h);
	hdr_record_n(h, 5, 0);
	PT_CHECK(hdr_count(h) == 0);
	hdr_record_n(h, HDR_DEFAULT_HIGHEST, 10000000);
	hdr_record_n(h, 1, 10000000);
	PT_CHECK(hdr_count(h) == 20000000);
	PT_CHECKF(hdr_mean(h) == ((double)HDR_DEFAULT_HIGHEST + 1) / 2, "%f", hdr_mean(h));
	PT_CHECK(hdr_percentile(h, 50) == 1 && hdr_percentile(h, 50.0001) == HDR_DEFAULT_HIGHEST);
	hdr_free(h);
}

PT_TEST(merge_equals_single)
{
	uint64_t rng = PT_SEED() ^ 0x1234;
	hdr_hist *all, *part[4], *sum;
	PT_REQUIRE(hdr_new(&all, 0, 3) == 0 && hdr_new(&sum, 0, 3) == 0);
	for (int i = 0; i < 4; i++)
		PT_REQUIRE(hdr_new(&part[i], 0, 3) == 0);
	for (int i = 0; i < 100000; i++) {
		uint64_t v = sample(&rng, i % 4, HDR_DEFAULT_HIGHEST);
		hdr_record(all, v);
		hdr_record(part[bench_splitmix64(&rng) % 4], v);
	}
	hdr_record(part[2], UINT64_MAX); /* saturation merges too */
	hdr_record(all, UINT64_MAX);
	for (int i = 0; i < 4; i++)
		PT_CHECK(hdr_merge(sum, part[i]) == 0);
	PT_CHECK(hdr_equal(sum, all));
	PT_CHECK(hdr_percentile(sum, 99.9) == hdr_percentile(all, 99.9));
	PT_CHECK(hdr_mean(sum) == hdr_mean(all));
	/* Merging an empty histogram changes nothing; merging into an empty one copies. */
	hdr_reset(part[0]);
	PT_CHECK(hdr_merge(sum, part[0]) == 0 && hdr_equal(sum, all));
	PT_CHECK(hdr_merge(part[0], all) == 0 && hdr_equal(part[0], all));
	for (int i = 0; i < 4; i++)
		hdr_free(part[i]);
	hdr_free(all);
	hdr_free(sum);
}

PT_TEST(merge_incompatible_and_ranges)
{
	hdr_hist *a, *b, *small;
	PT_REQUIRE(hdr_new(&a, 0, 3) == 0 && hdr_new(&b, 0, 2) == 0 &&
	           hdr_new(&small, 1000000, 3) == 0);
	hdr_record(b, 5);
	PT_CHECK(hdr_merge(a, b) == -1 && hdr_count(a) == 0);
	/* Into a histogram with a lower highest value: those samples saturate there. */
	hdr_record(a, 10);
	hdr_record(a, 999999);
	hdr_record(a, 5000000000ULL);
	PT_CHECK(hdr_merge(small, a) == 0);
	PT_CHECK(hdr_count(small) == 3 && hdr_saturated(small) == 1 && hdr_max(small) == 1000000);
	PT_CHECK(hdr_percentile(small, 100) == 1000000 && hdr_min(small) == 10);
	/* From a lower one into a higher one: slots line up exactly. */
	hdr_hist *big;
	PT_REQUIRE(hdr_new(&big, 0, 3) == 0);
	hdr_reset(small);
	hdr_record(small, 777777);
	hdr_record(small, 3);
	PT_CHECK(hdr_merge(big, small) == 0 && hdr_count(big) == 2 && hdr_max(big) == 777777 &&
	         hdr_percentile(big, 50) == 3);
	hdr_free(a);
	hdr_free(b);
	hdr_free(small);
	hdr_free(big);
}

typedef struct worker {
	hdr_hist *h;
	uint64_t seed;
} worker;

static void *work(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < 50000; i++)
		hdr_record(w->h, sample(&w->seed, i % 4, HDR_DEFAULT_HIGHEST));
	return NULL;
}

/* The documented pattern: one histogram per thread, merged after join. */
PT_TEST(per_thread_then_merge)
{
	worker w[4];
	pthread_t t[4];
	hdr_hist *total, *check;
	PT_REQUIRE(hdr_new(&total, 0, 3) == 0 && hdr_new(&check, 0, 3) == 0);
	for (int i = 0; i < 4; i++) {
		PT_REQUIRE(hdr_new(&w[i].h, 0, 3) == 0);
		w[i].seed = PT_SEED() + (uint64_t)i;
		PT_REQUIRE(pthread_create(&t[i], NULL, work, &w[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		PT_CHECK(hdr_merge(total, w[i].h) == 0);
		hdr_free(w[i].h);
	}
	for (int i = 0; i < 4; i++) {
		uint64_t seed = PT_SEED() + (uint64_t)i;
		for (int j = 0; j < 50000; j++)
			hdr_record(check, sample(&seed, j % 4, HDR_DEFAULT_HIGHEST));
	}
	PT_CHECK(hdr_count(total) == 200000 && hdr_equal(total, check));
	hdr_free(total);
	hdr_free(check);
}

PT_TEST(text_round_trip)
{
	uint64_t rng = PT_SEED() ^ 0x99;
	char err[128];
	for (int round = 0; round < 6; round++) {
		hdr_hist *h, *back = NULL;
		int digits = 1 + round % 5;
		PT_REQUIRE(hdr_new(&h, round == 5 ? 1000000 : 0, digits) == 0);
		int n = round == 0 ? 0 : round * 3000;
		for (int i = 0; i < n; i++)
			hdr_record(h, sample(&rng, i % 4, HDR_DEFAULT_HIGHEST));
		if (round == 3)
			hdr_record_n(h, 42, 123456789012ULL);
		char *t = hdr_to_text(h);
		PT_REQUIRE(t != NULL);
		PT_CHECK(strspn(t, "0123456789abcdefghijklmnopqrstuvwxyz:.-") == strlen(t));
		PT_CHECKF(hdr_from_text(&back, t, err, sizeof(err)) == 0, "round %d: %s", round, err);
		PT_CHECK(back && hdr_equal(h, back));
		PT_CHECK(back && hdr_percentile(back, 99) == hdr_percentile(h, 99) &&
		         hdr_mean(back) == hdr_mean(h));
		if (back) {
			char *t2 = hdr_to_text(back);
			PT_CHECK(t2 && strcmp(t, t2) == 0);
			free(t2);
		}
		hdr_free(back);
		hdr_free(h);
		free(t);
	}
	/* A small one in full, as documented (slot 3 twice, then slot 40: gap 37 = base-36 11). */
	hdr_hist *h;
	PT_REQUIRE(hdr_new(&h, 0, 3) == 0);
	hdr_record(h, 3);
	hdr_record(h, 3);
	hdr_record(h, 40);
	char *t = hdr_to_text(h);
	PT_CHECKF(t && strcmp(t, "hdr1:3:3600000000000:3:3:40:0:46:0:3-2.11") == 0, "%s", t);
	free(t);
	hdr_free(h);
}

PT_TEST(text_rejects_damage)
{
	uint64_t rng = PT_SEED() ^ 0x5;
	hdr_hist *h, *back;
	char err[128];
	/* A small histogram (10 ms, 2 digits: 16 KiB of counts): the text parser is the same, and
	 * each of the ~7 parses per character allocates the counts, which under ThreadSanitizer
	 * cost about 4 ms each at the default hour and 3 digits (a minute for this test). */
	PT_REQUIRE(hdr_new(&h, 10000000, 2) == 0);
	for (int i = 0; i < 500; i++)
		hdr_record(h, sample(&rng, i % 4, 10000000));
	char *t = hdr_to_text(h);
	PT_REQUIRE(t != NULL);
	size_t len = strlen(t);
	/* Every proper prefix fails. */
	for (size_t n = 0; n < len; n++) {
		char *p = strndup(t, n);
		back = NULL;
		PT_CHECKF(hdr_from_text(&back, p, err, sizeof(err)) == -1 && back == NULL,
		          "prefix %zu parsed", n);
		hdr_free(back);
		free(p);
	}
	/* Changed characters fail or give a self-consistent histogram; never crash. */
	int rejected = 0;
	for (size_t i = 0; i < len; i++) {
		const char subst[] = "0z.-:x";
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			char *p = strdup(t);
			if (p[i] == subst[k]) {
				free(p);
				continue;
			}
			p[i] = subst[k];
			back = NULL;
			if (hdr_from_text(&back, p, err, sizeof(err)) == -1)
				rejected++;
			else
				PT_CHECK(hdr_count(back) == hdr_count(h) && hdr_min(back) <= hdr_max(back));
			hdr_free(back);
			free(p);
		}
	}
	PT_CHECKF(rejected > (int)len * 4, "only %d rejected", rejected);
	const char *bad[] = {"",
	                     "hdr2:3:1:0:0:0:0:0:0:",
	                     "hdr1:9:100:0:0:0:0:0:0:",
	                     "hdr1:3:100:1:5:5:0:5:0:5.0",
	                     "hdr1:3:100:1:7:7:0:7:0:5",
	                     "hdr1:3:100:1:5:5:0:5:2:5",
	                     "hdr1:3:100:0:0:0:0:1:0:",
	                     "hdr1:3:100:1:200:200:0:200:0:zzzz",
	                     "hdr1:3:100:1:5:5:0:5:0:5-0",
	                     "hdr1:3:99999999999999999999:0:0:0:0:0:0:"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		back = NULL;
		PT_CHECKF(hdr_from_text(&back, bad[i], err, sizeof(err)) == -1 && back == NULL,
		          "'%s' accepted", bad[i]);
		hdr_free(back);
	}
	PT_CHECK(hdr_from_text(&back, "nope", err, sizeof(err)) == -1 && strstr(err, "hdr1"));
	free(t);
	hdr_free(h);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
