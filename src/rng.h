/*
 * rng.h - the project's one pseudo-random generator: splitmix64 (Steele, Lea and Flood, 2014).
 *
 * Deterministic and seedable, for tests, fuzz corpora and made-up data; never for anything that
 * must be unpredictable. Header-only so that test and fuzz programs need no library symbol.
 */
#ifndef PROLLY_RNG_H
#define PROLLY_RNG_H

#include <stdint.h>

/* Advances *state and returns the next 64 pseudo-random bits. Any seed is valid, 0 included. */
static inline uint64_t prolly__splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
