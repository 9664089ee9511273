/*
 * boundary_ref.c - the boundary rule as docs/format.md states it (see boundary_ref.h).
 *
 * For nodes of T bytes (4096 unless the caller names another power of two):
 *   C1  s < T / 8: no boundary.   C2  s > 4 T: boundary.
 *   C3  otherwise, x = (s^4 - (s-r)^4) / T^4; boundary iff h < 2^32 x and h < 2^32 (1 - e^-x).
 *   C4  h = high 32 bits of XXH3-64(key, seed 0x9e3779b97f4a7c15 * (level + 1) mod 2^64).
 *
 * The quartic difference is taken as (a - b)(a + b)(a^2 + b^2) in 64-bit integers (exact: it is
 * below 2^61 for s <= 4 T <= 32768), then scaled in long double; e^-x comes from the C library's
 * expl.
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

int tb_boundary_at(unsigned shift, unsigned level, const void *key, size_t klen, size_t s, size_t r,
                   int *near)
{
	long double t = (long double)((uint64_t)1 << shift);
	if (near)
		*near = 0;
	if (s < ((size_t)1 << shift) / 8)
		return 0;
	if (s > ((size_t)4 << shift))
		return 1;
	uint64_t a = s, b = s - r;
	uint64_t d = (a - b) * (a + b) * (a * a + b * b);
	long double x = (long double)d / (t * t * t * t);
	long double h = (long double)tb_key_hash(level, key, klen);
	long double t1 = 4294967296.0L * x;
	long double t2 = 4294967296.0L * (1.0L - expl(-x));
	if (near && (fabsl(h - t1) < TB_NEAR_BAND || fabsl(h - t2) < TB_NEAR_BAND))
		*near = 1;
	return h < t1 && h < t2;
}

int tb_boundary(unsigned level, const void *key, size_t klen, size_t s, size_t r, int *near)
{
	return tb_boundary_at(12, level, key, klen, s, r, near);
}

const struct prolly__chunk_rule *tb_library_rule4(void)
{
	static prolly__chunk_rule rule;
	if (!rule.shift)
		prolly__chunk_rule_init(&rule, PROLLY_CHUNK_SHIFT);
	return &rule;
}

int tb_boundary_decide(unsigned level, const void *key, size_t klen, size_t s, size_t r)
{
	int near;
	int b = tb_boundary(level, key, klen, s, r, &near);
	if (!near)
		return b;
	tb_near_calls++;
	return prolly__boundary(tb_library_rule4(), level, key, klen, s, r);
}
