/*
 * fuzz_check.h - what a decoded object must satisfy whatever bytes it came from. Shared by the
 * libFuzzer targets (fuzz/fuzz_*.c) and the deterministic mutation loop in tests/test_corrupt.c.
 * Needs src/internal.h. Each check returns 0 if the object is sane, -1 otherwise.
 */
#ifndef PROLLY_FUZZ_CHECK_H
#define PROLLY_FUZZ_CHECK_H

#include "internal.h"

#include <string.h>

/* Every accessor of a decoded node stays inside its bytes, keys strictly increase, child counts
 * are positive and add up to the node's count, lookups land in [0, n]. Reading out of bounds is
 * what AddressSanitizer is there to catch; the explicit checks catch the rest. */
static inline int fz_node_sane(const pnode *nd)
{
	const unsigned char *lo = nd->bytes, *hi = nd->bytes + nd->size;
#define FZ_INSIDE(p, n) ((const unsigned char *)(p) >= lo && (const unsigned char *)(p) + (n) <= hi)
	if (nd->level > PROLLY_MAX_LEVEL || (nd->level > 0 && nd->n == 0))
		return -1;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < nd->n; i++) {
		prolly_slice k = prolly__node_key(nd, i);
		if (!FZ_INSIDE(k.data, k.size) || k.size > PROLLY_MAX_KEY)
			return -1;
		if (i > 0) {
			prolly_slice p = prolly__node_key(nd, i - 1);
			if (prolly__keycmp(p.data, p.size, k.data, k.size) >= 0)
				return -1;
		}
		if (nd->level == 0) {
			prolly_slice v = prolly__node_value(nd, i);
			if (!FZ_INSIDE(v.data, v.size) || v.size > PROLLY_MAX_VALUE)
				return -1;
		} else {
			const prolly_id *c = prolly__node_child(nd, i);
			if (!FZ_INSIDE(c->bytes, PROLLY_ID_SIZE + 8))
				return -1;
			uint64_t cnt = prolly__node_child_count(nd, i);
			if (cnt == 0 || sum + cnt < sum)
				return -1;
			sum += cnt;
		}
	}
	if (nd->level == 0 ? nd->count != nd->n : nd->count != sum)
		return -1;
	for (uint32_t i = 0; i < nd->n; i += 1 + nd->n / 16) {
		prolly_slice k = prolly__node_key(nd, i);
		if (prolly__node_lower_bound(nd, k.data, k.size) != i)
			return -1;
	}
	if (prolly__node_lower_bound(nd, "\xff\xff\xff", 3) > nd->n ||
	    prolly__node_lower_bound(nd, "", 0) > nd->n)
		return -1;
	if (nd->n) {
		prolly_slice last = prolly__node_last_key(nd);
		if (!FZ_INSIDE(last.data, last.size))
			return -1;
	}
#undef FZ_INSIDE
	return 0;
}

/* A decoded commit: a NUL-terminated message no longer than the input, a parent array when there
 * are parents, at most 64 of them, pairwise distinct. */
static inline int fz_commit_sane(const prolly_commit *c, size_t input_size)
{
	if (!c || !c->message || c->n_parents > 64 || (c->n_parents && !c->parents) ||
	    strlen(c->message) > input_size)
		return -1;
	for (size_t i = 0; i < c->n_parents; i++)
		for (size_t j = 0; j < i; j++)
			if (prolly_id_equal(&c->parents[i], &c->parents[j]))
				return -1;
	return 0;
}

#endif
