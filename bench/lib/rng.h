/*
 * rng.h - the project's one home of pseudo-random generators (bench_*), for the benchmarks, the
 * tests and the fuzz corpora: splitmix64 (Steele, Lea and Flood, 2014), and a xoshiro256**
 * stream (Blackman and Vigna, 2018) seeded by it, which the tests' reference model draws from
 * (the golden trees of tests/test_golden.c are built from its output, so its sequence for a
 * given seed must never change).
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

/* Uniform in [0, n) from any stream: next(state) gives 64 bits. n == 0 gives 0. Rejection
 * sampling (no modulo bias); the draws consumed depend only on the values drawn. */
uint64_t bench_below(uint64_t (*next)(void *state), void *state, uint64_t n);

/* A xoshiro256** stream; its state starts as four splitmix64 outputs from seed. */
typedef struct bench_xoshiro {
	uint64_t s[4];
} bench_xoshiro;

void bench_xoshiro_seed(bench_xoshiro *r, uint64_t seed);
uint64_t bench_xoshiro_next(bench_xoshiro *r);

#endif /* BENCH_RNG_H */
