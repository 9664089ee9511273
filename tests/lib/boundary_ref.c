/*
 * boundary_ref.c - the boundary rule as docs/format.md states it (see boundary_ref.h).
 *
 *   C1  s < 512: no boundary.   C2  s > 16384: boundary.
 *   C3  otherwise, x = (s^4 - (s-r)^4) / 4096^4; boundary iff h < 2^32 x and h < 2^32 (1 - e^-x).
 *   C4  h = high 32 bits of XXH3-64(key, seed 0x9e3779b97f4a7c15 * (level + 1) mod 2^64).
 *
 * The quartic difference is taken as (a - b)(a + b)(a^2 + b^2) in 64-bit integers (exact: it is
 * below 2^57 for s <= 16384), then scaled in long double; e^-x comes from the C library's expl.
 */
#include "boundary_ref.h"

#include "internal.h"

#include <math.h>
#include <xxhash.h>

uint64_t tb_near_calls;

size_t tb_leaf_item_size(size_t klen, size_t vlen)
{
	return 4 + 4 + klen + vlen;
}

size_t tb_child_item_size(size_t klen)
{
	return 4 + 32 + 8 + klen;
}

uint32_t tb_key_hash(unsigned level, const void *key, size_t klen)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL * ((uint64_t)level + 1);
	return (uint32_t)(XXH3_64bits_withSeed(key, klen, seed) >> 32);
}

int tb_boundary(unsigned level, const void *key, size_t klen, size_t s, size_t r, int *near)
{
	if (near)
		*near = 0;
	if (s < TB_MIN)
		return 0;
	if (s > TB_MAX)
		return 1;
	uint64_t a = s, b = s - r;
	uint64_t d = (a - b) * (a + b) * (a * a + b * b);
	long double x = (long double)d / 281474976710656.0L; /* 4096^4 */
	long double h = (long double)tb_key_hash(level, key, klen);
	long double t1 = 4294967296.0L * x;
	long double t2 = 4294967296.0L * (1.0L - expl(-x));
	if (near && (fabsl(h - t1) < TB_NEAR_BAND || fabsl(h - t2) < TB_NEAR_BAND))
		*near = 1;
	return h < t1 && h < t2;
}

int tb_boundary_decide(unsigned level, const void *key, size_t klen, size_t s, size_t r)
{
	int near;
	int b = tb_boundary(level, key, klen, s, r, &near);
	if (!near)
		return b;
	tb_near_calls++;
	return prolly__boundary(level, key, klen, s, r);
}
