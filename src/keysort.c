/*
 * keysort.c - the order of a batch of keys: the one sort behind batched lookups and edits, and
 * behind the batches of node ids a load asks a store for.
 *
 * prolly_get_many and prolly_edit_tree take keys in any order and work on them in key order.
 * A comparison sort of n keys (qsort with prolly__keycmp) makes about n log2 n calls through a
 * function pointer, each a memcmp of the keys' bytes, most of them a prefix every key shares
 * ("user:000..."): for 10k random keys it was 28% of a get_many on the memory store (docs/
 * benchmarks/engine.md, "One sort for a batch of keys"). Here instead:
 *
 *   KS1 a batch already in order (the keys of a diff, of a merge) costs n - 1 comparisons;
 *   KS2 otherwise each key is given a word: the 8 bytes after the prefix all keys share, big
 *       endian, zero past the key's end. If word(a) < word(b) then a < b in prolly__keycmp
 *       order (the first byte where the padded words differ is a byte both keys have, or the
 *       end of the shorter one, which is then a prefix of the other), so a stable radix sort of
 *       the words (8 bits a pass, passes where every key has the same byte skipped) orders the
 *       keys up to runs of equal words;
 *   KS3 a run of equal words is put in key order by comparisons (insertion below RUN_SMALL
 *       keys, qsort above), equal keys by their index, so the whole order is (key, index):
 *       stable, as the callers' rules for duplicates need.
 *   KS4 node ids (prolly__ids_sort, the batch a load asks the store for) go the same way: their
 *       first 8 bytes are a SHA-256's, so the radix sort alone nearly always orders them; a run
 *       of equal first bytes (the same id twice, or a forged tree's ids made alike) by memcmp.
 */
#include "internal.h"

#include <stdlib.h>

#define RUN_SMALL 16

typedef struct kw {
	uint64_t word;
	size_t index;
} kw;

typedef struct keys_at {
	const unsigned char *base;
	size_t stride;
} keys_at;

static const prolly_slice *key_of(const keys_at *k, size_t i)
{
	return (const prolly_slice *)(const void *)(k->base + i * k->stride);
}

static int cmp_keys(const keys_at *k, size_t a, size_t b)
{
	const prolly_slice *x = key_of(k, a), *y = key_of(k, b);
	int c = prolly__keycmp(x->data, x->size, y->data, y->size);
	return c ? c : a < b ? -1 : a > b;
}

static _Thread_local const keys_at *qsort_keys; /* KS3's qsort: the batch it sorts a run of */

static int cmp_kw(const void *a, const void *b)
{
	return cmp_keys(qsort_keys, ((const kw *)a)->index, ((const kw *)b)->index);
}

static void sort_run(const keys_at *k, kw *v, size_t n)
{
	if (n > RUN_SMALL) {
		qsort_keys = k;
		qsort(v, n, sizeof(*v), cmp_kw);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		kw x = v[i];
		size_t j = i;
		while (j > 0 && cmp_keys(k, v[j - 1].index, x.index) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

/* KS2: LSD radix sort of v by word, stable; tmp has room for n. Returns the sorted array. */
static kw *radix(kw *v, kw *tmp, size_t n)
{
	size_t count[256];
	for (unsigned shift = 0; shift < 64; shift += 8) {
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(v[i].word >> shift) & 0xff]++;
		if (count[(v[0].word >> shift) & 0xff] == n)
			continue; /* every word has this byte: the pass would change nothing */
		size_t at = 0;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(v[i].word >> shift) & 0xff]++] = v[i];
		kw *t = v;
		v = tmp;
		tmp = t;
	}
	return v;
}

static _Thread_local const prolly_id *sort_ids; /* KS4's qsort: the ids it sorts a run of */

static int cmp_id_at(const void *a, const void *b)
{
	return memcmp(sort_ids[((const kw *)a)->index].bytes, sort_ids[((const kw *)b)->index].bytes,
	              PROLLY_ID_SIZE);
}

int prolly__ids_sort(prolly_id *ids, size_t n)
{
	if (n < 2)
		return 0;
	kw *v = n <= SIZE_MAX / (2 * sizeof(*v)) ? malloc(2 * n * sizeof(*v)) : NULL;
	prolly_id *tmp = v ? malloc(n * sizeof(*tmp)) : NULL;
	if (!tmp) {
		free(v);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu ids", n);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t w = 0;
		for (int j = 0; j < 8; j++)
			w = w << 8 | ids[i].bytes[j];
		v[i].word = w;
		v[i].index = i;
	}
	kw *s = radix(v, v + n, n);
	sort_ids = ids;
	for (size_t i = 0; i < n;) { /* KS4 */
		size_t j = i + 1;
		while (j < n && s[j].word == s[i].word)
			j++;
		if (j - i > 1)
			qsort(s + i, j - i, sizeof(*s), cmp_id_at);
		i = j;
	}
	for (size_t i = 0; i < n; i++)
		tmp[i] = ids[s[i].index];
	memcpy(ids, tmp, n * sizeof(*ids));
	free(tmp);
	free(v);
	return 0;
}

int prolly__key_order(size_t *order, const prolly_slice *first, size_t stride, size_t n)
{
	keys_at k = {(const unsigned char *)first, stride};
	size_t i = 1, p;
	while (i < n && cmp_keys(&k, i - 1, i) < 0)
		i++;
	if (i >= n) { /* KS1 */
		for (i = 0; i < n; i++)
			order[i] = i;
		return 0;
	}
	kw *v = n <= SIZE_MAX / (2 * sizeof(*v)) ? malloc(2 * n * sizeof(*v)) : NULL;
	if (!v)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu keys", n);
	/* The prefix every key shares: at most the first key's length. */
	const prolly_slice *k0 = key_of(&k, 0);
	p = k0->size;
	for (i = 1; i < n && p; i++) {
		const prolly_slice *x = key_of(&k, i);
		size_t m = PROLLY_MIN(p, x->size), j = 0;
		while (j < m && ((const unsigned char *)x->data)[j] == ((const unsigned char *)k0->data)[j])
			j++;
		p = j;
	}
	for (i = 0; i < n; i++) {
		const prolly_slice *x = key_of(&k, i);
		const unsigned char *b = x->data;
		uint64_t w = 0;
		for (size_t j = 0; j < 8; j++)
			w = w << 8 | (p + j < x->size ? b[p + j] : 0);
		v[i].word = w;
		v[i].index = i;
	}
	kw *s = radix(v, v + n, n);
	for (i = 0; i < n;) { /* KS3 */
		size_t j = i + 1;
		while (j < n && s[j].word == s[i].word)
			j++;
		if (j - i > 1)
			sort_run(&k, s + i, j - i);
		i = j;
	}
	for (i = 0; i < n; i++)
		order[i] = s[i].index;
	free(v);
	return 0;
}
