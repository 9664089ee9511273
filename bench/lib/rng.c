/*
 * rng.c - splitmix64, xoshiro256** and the draws made from them (rng.h).
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

uint64_t bench_below(uint64_t (*next)(void *state), void *state, uint64_t n)
{
	if (n == 0)
		return 0;
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	for (;;) {
		uint64_t x = next(state);
		if (x < limit)
			return x % n;
	}
}

static uint64_t splitmix_draw(void *r)
{
	return bench_rng_next(r);
}

uint64_t bench_rng_below(bench_rng *r, uint64_t n)
{
	return bench_below(splitmix_draw, r, n);
}

void bench_xoshiro_seed(bench_xoshiro *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = bench_splitmix64(&x);
}

static uint64_t rotl(uint64_t v, int k)
{
	return (v << k) | (v >> (64 - k));
}

uint64_t bench_xoshiro_next(bench_xoshiro *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
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
