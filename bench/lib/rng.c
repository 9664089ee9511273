/*
 * rng.c - splitmix64 and the draws made from it (rng.h).
 */
#include "rng.h"

#include <stdlib.h>

uint64_t bench_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t bench_mix64(uint64_t x)
{
	return bench_splitmix64(&x);
}

void bench_rng_seed(bench_rng *r, uint64_t seed)
{
	r->s = bench_mix64(seed);
}

uint64_t bench_rng_next(bench_rng *r)
{
	return bench_splitmix64(&r->s);
}

uint64_t bench_rng_below(bench_rng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	for (;;) {
		uint64_t x = bench_rng_next(r);
		if (x < limit)
			return x % n;
	}
}

int bench_rng_sample_distinct(bench_rng *r, uint64_t n, uint64_t *out, size_t k)
{
	if (k == 0)
		return 0;
	if ((uint64_t)k * 2 <= n) {
		/* Sparse: rejection against a bitmap. */
		size_t words = (size_t)(n / 64 + 1);
		uint64_t *seen = calloc(words, sizeof(*seen));
		if (!seen)
			return -1;
		for (size_t i = 0; i < k;) {
			uint64_t v = bench_rng_below(r, n);
			uint64_t bit = 1ull << (v % 64);
			if (seen[v / 64] & bit)
				continue;
			seen[v / 64] |= bit;
			out[i++] = v;
		}
		free(seen);
		return 0;
	}
	/* Dense: partial Fisher-Yates over all n values. */
	uint64_t *all = malloc((size_t)n * sizeof(*all));
	if (!all)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		all[i] = i;
	for (size_t i = 0; i < k; i++) {
		uint64_t j = i + bench_rng_below(r, n - i);
		uint64_t t = all[i];
		all[i] = all[j];
		all[j] = t;
		out[i] = all[i];
	}
	free(all);
	return 0;
}
