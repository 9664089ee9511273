/*
 * rng.h - the project's one pseudo-random generator (bench_*): splitmix64 (Steele, Lea and
 * Flood, 2014), for the benchmarks, the tests and the fuzz corpora.
 *
 * Deterministic and seedable; never for anything that must be unpredictable. Every function
 * works on caller-owned state only: thread-safe as long as threads do not share a state.
 */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Advances *state and returns the next 64 pseudo-random bits. Any seed is valid, 0 included. */
uint64_t bench_splitmix64(uint64_t *state);
/* One splitmix64 output for state x, a pure function of x (derived seeds, hashed values). */
uint64_t bench_mix64(uint64_t x);

/* A splitmix64 stream whose state starts at bench_mix64(seed). */
typedef struct bench_rng {
	uint64_t s;
} bench_rng;

void bench_rng_seed(bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(bench_rng *r);
/* Uniform in [0, n), n > 0 (rejection sampling: no modulo bias). */
uint64_t bench_rng_below(bench_rng *r, uint64_t n);
/* Fills out[0..k) with k distinct values from [0, n) in random order (k <= n). Returns 0, or -1
 * when out of memory. */
int bench_rng_sample_distinct(bench_rng *r, uint64_t n, uint64_t *out, size_t k);

#endif /* BENCH_RNG_H */
