/*
 * chunk.c - where chunks end: the content-defined, size-aware boundary rule.
 *
 * A chunk (node) being built keeps its running encoded size s. The rule has one parameter, the
 * node size T = 2^shift (prolly__chunk_rule; T = 4096 for every tree made so far: the sizes in
 * brackets). After an item of encoded size r with key k is appended (s already includes r):
 *
 *   C1  s <  T / 8 (512):   never split here.
 *   C2  s >  4 T (16384):   always split here.
 *   C3  otherwise, with x = (s^4 - (s-r)^4) / T^4, split iff h(k) < 2^32 * x and
 *       h(k) < 2^32 * (1 - exp(-x)), that is
 *       h(k) / 2^32 < 1 - exp(-x) = 1 - exp(-((s/T)^4 - ((s-r)/T)^4)),
 *       which is (F(s) - F(s-r)) / (1 - F(s-r)) for F(x) = 1 - exp(-(x/T)^4): the chance that
 *       a chunk whose size follows the Weibull distribution F ends within this item, given that it
 *       did not end before it. Chunk sizes cluster near T.
 *
 * h(k) is the high 32 bits of XXH3-64 of the key bytes alone, seeded per level (C4), so values
 * never move boundaries except through their size, and levels do not split in lockstep. The
 * decision depends only on the items since the chunk began (C5): that is what makes the tree
 * history independent and what lets an edit re-chunk only until a boundary reappears where an
 * old node ended.
 *
 * Determinism: the rule must give the same answer on every platform, or trees would differ
 * between builds. The quartic difference is computed exactly in 64-bit integers (s <= 4 T <= 2^15,
 * so s^4 <= 2^60) and scaled by 2^(-4 shift), which is exact; exp() is not
 * taken from libm (whose last bit may differ between implementations) but computed here with
 * only IEEE-754 double additions, multiplications and divisions, which are correctly rounded
 * everywhere; the build disables floating-point contraction (-ffp-contract=off).
 */
#include "internal.h"

#include <xxhash.h>

#define LEVEL_SEED_BASE 0x9e3779b97f4a7c15ULL

/* exp(-x) for x >= 0 using only correctly rounded basic operations: exp(-x) = (exp(-x/1024))^1024
 * with a Taylor series for the small argument. Accuracy is about 1e-13; what matters is that the
 * result is bit-identical on every IEEE-754 platform. */
static double det_exp_neg(double x)
{
	double y = x / 1024.0; /* exact: a power of two */
	double term = 1.0, sum = 1.0;
	for (int i = 1; i <= 12; i++) {
		term = term * (-y) / (double)i;
		sum = sum + term;
	}
	for (int i = 0; i < 10; i++)
		sum = sum * sum;
	return sum;
}

_Static_assert(PROLLY_NODE_SIZE_MIN == 1u << PROLLY_CHUNK_SHIFT_LO &&
                   PROLLY_NODE_SIZE_MAX == 1u << PROLLY_CHUNK_SHIFT_HI &&
                   PROLLY_NODE_SIZE_DEFAULT == 1u << PROLLY_CHUNK_SHIFT,
               "prolly.h's node sizes are the rule's");

unsigned prolly__node_shift(unsigned node_size)
{
	unsigned shift = PROLLY_CHUNK_SHIFT;
	assert(prolly_node_size_valid(node_size));
	if (node_size)
		for (shift = PROLLY_CHUNK_SHIFT_LO; (1u << shift) < node_size; shift++)
			;
	return shift;
}

void prolly__chunk_rule_init(prolly__chunk_rule *rule, unsigned shift)
{
	assert(shift >= PROLLY_CHUNK_SHIFT_LO && shift <= PROLLY_CHUNK_SHIFT_HI);
	rule->shift = shift;
	rule->min = (uint32_t)1 << (shift - 3);
	rule->max = (uint32_t)4 << shift;
	rule->scale = 1.0 / (double)((uint64_t)1 << (4 * shift)); /* a power of two: exact */
}

int prolly__boundary(const prolly__chunk_rule *rule, unsigned level, const void *key, size_t klen,
                     size_t s, size_t r)
{
	if (s < rule->min) /* C1 */
		return 0;
	if (s > rule->max) /* C2 */
		return 1;
	uint64_t a = (uint64_t)s, b = (uint64_t)(s - r);
	uint64_t d = a * a * a * a - b * b * b * b;              /* <= 2^60: exact */
	double x = (double)d * rule->scale;                      /* scaled by a power of two */
	uint64_t seed = LEVEL_SEED_BASE * (uint64_t)(level + 1); /* C4 */
	uint32_t h = (uint32_t)(XXH3_64bits_withSeed(key, klen, seed) >> 32);
	if ((double)h >= x * 4294967296.0) /* C3, first test */
		return 0;
	return (double)h < (1.0 - det_exp_neg(x)) * 4294967296.0;
}
