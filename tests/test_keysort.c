/*
 * test_keysort.c - the order of a batch of keys (src/keysort.c) and the galloping search that
 * walks a node in key order (prolly__node_lower_bound_from), against plain references:
 *
 *   - prolly__key_order gives the order of a comparison sort by (key, index) for batches of
 *     every shape its shortcuts meet: sorted (KS1), random, shared prefixes, duplicates, keys
 *     that are prefixes of others or end in zero bytes (equal padded words, KS2), long runs of
 *     equal words (KS3's qsort), empty keys, 0 and 1 keys;
 *   - prolly__ids_sort sorts node ids as qsort with memcmp does: random, repeated, and with
 *     their first 8 bytes alike (KS4);
 *   - prolly__node_lower_bound_from(nd, key, from) equals prolly__node_lower_bound for every key
 *     and every `from` the rule allows;
 *   - prolly_get_many of large unsorted batches, with duplicates and absent keys, answers in
 *     request order, as a key-by-key prolly_get does.
 *
 * Re-run one test: build/tests/test_keysort NAME; PROLLY_TEST_SEED picks the batches.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

#define KMAX 40

typedef struct batch {
	size_t n;
	unsigned char (*buf)[KMAX];
	prolly_slice *keys;
} batch;

static void batch_init(batch *b, size_t n)
{
	b->n = n;
	b->buf = calloc(n ? n : 1, sizeof(*b->buf));
	b->keys = calloc(n ? n : 1, sizeof(*b->keys));
}

static void batch_free(batch *b)
{
	free(b->buf);
	free(b->keys);
}

static void set_key(batch *b, size_t i, const void *p, size_t len)
{
	memcpy(b->buf[i], p, len);
	b->keys[i].data = b->buf[i];
	b->keys[i].size = len;
}

static const batch *ref_batch;

static int ref_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const prolly_slice *kx = &ref_batch->keys[x], *ky = &ref_batch->keys[y];
	int c = prolly__keycmp(kx->data, kx->size, ky->data, ky->size);
	return c ? c : x < y ? -1 : x > y;
}

/* 1 when prolly__key_order gives b the order of the reference sort. */
static int order_matches(const batch *b, const char *shape)
{
	size_t n = b->n, *got = malloc((n ? n : 1) * sizeof(size_t)),
	       *want = malloc((n ? n : 1) * sizeof(size_t));
	int ok = 0;
	if (!got || !want)
		goto out;
	for (size_t i = 0; i < n; i++)
		want[i] = i;
	ref_batch = b;
	qsort(want, n, sizeof(*want), ref_cmp);
	if (prolly__key_order(got, b->keys, sizeof(*b->keys), n) != 0) {
		fprintf(stderr, "  %s: prolly__key_order failed: %s\n", shape, prolly_last_error());
		goto out;
	}
	ok = 1;
	for (size_t i = 0; i < n && ok; i++)
		if (got[i] != want[i]) {
			fprintf(stderr, "  %s (%zu keys): position %zu holds key %zu, want %zu\n", shape, n, i,
			        got[i], want[i]);
			ok = 0;
		}
out:
	free(got);
	free(want);
	return ok;
}

static size_t decimal_key(unsigned char *out, const char *prefix, uint64_t v)
{
	return (size_t)snprintf((char *)out, KMAX, "%s%llu", prefix, (unsigned long long)v);
}

PT_TEST(key_order_matches_a_comparison_sort)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED());
	static const size_t sizes[] = {0, 1, 2, 3, 17, 100, 1000, 5000};
	for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
		size_t n = sizes[si];
		for (int shape = 0; shape < 8; shape++) {
			batch b;
			batch_init(&b, n);
			unsigned char k[KMAX];
			for (size_t i = 0; i < n; i++) {
				size_t len = 0;
				switch (shape) {
				case 0: /* random bytes, random lengths, empty keys among them */
					len = (size_t)tm_rng_below(&rng, 13);
					tm_rng_bytes(&rng, k, len);
					break;
				case 1: /* a long shared prefix, then decimal digits of every length */
					len = decimal_key(k, "user:00000000", tm_rng_below(&rng, 1000000));
					break;
				case 2: /* few distinct keys: duplicates everywhere */
					len = decimal_key(k, "k", tm_rng_below(&rng, 7));
					break;
				case 3: /* already in order, with repeats (KS1) */
					len = decimal_key(k, "key-", 1000000 + i / 2);
					break;
				case 4: /* in reverse order */ len = decimal_key(k, "key-", 1000000 + n - i); break;
				case 5: /* prefixes of each other and trailing zero bytes: equal padded words */
					memset(k, 0, sizeof(k));
					k[0] = 'a';
					k[1] = (unsigned char)tm_rng_below(&rng, 2);
					len = (size_t)tm_rng_below(&rng, 12);
					break;
				case 6: /* the same 8 bytes after the shared prefix, then random: long runs */
					memcpy(k, i % 97 == 0 ? "BXXXXXXXX" : "AXXXXXXXX", 9);
					len = 9 + (size_t)tm_rng_below(&rng, 8);
					tm_rng_bytes(&rng, k + 9, len - 9);
					break;
				default: /* every key the same */
					len = 5;
					memcpy(k, "same!", 5);
					break;
				}
				set_key(&b, i, k, len);
			}
			char what[64];
			snprintf(what, sizeof(what), "shape %d", shape);
			PT_CHECKF(order_matches(&b, what), "%s, %zu keys, seed %llu", what, n,
			          (unsigned long long)PT_SEED());
			batch_free(&b);
		}
	}
}

static int cmp_raw_id(const void *a, const void *b)
{
	return memcmp(a, b, PROLLY_ID_SIZE);
}

PT_TEST(ids_sort_matches_a_comparison_sort)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0x696473ULL);
	static const size_t sizes[] = {0, 1, 2, 17, 1000, 20000};
	for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
		size_t n = sizes[si];
		for (int shape = 0; shape < 3; shape++) {
			prolly_id *got = calloc(n + 1, sizeof(*got)), *want = calloc(n + 1, sizeof(*want));
			PT_REQUIRE(got && want);
			for (size_t i = 0; i < n; i++) {
				tm_rng_bytes(&rng, got[i].bytes, PROLLY_ID_SIZE);
				if (shape == 1 && i && tm_rng_chance(&rng, 1, 3)) /* the same id again */
					got[i] = got[tm_rng_below(&rng, i)];
				if (shape == 2) /* first 8 bytes alike: KS4's runs, long ones by qsort */
					memset(got[i].bytes, i % 5 ? 0xab : 0x01, 8);
			}
			memcpy(want, got, n * sizeof(*got));
			qsort(want, n, sizeof(*want), cmp_raw_id);
			PT_CHECK_RC(prolly__ids_sort(got, n), 0);
			PT_CHECKF(n == 0 || memcmp(got, want, n * sizeof(*got)) == 0,
			          "shape %d, %zu ids, seed %llu", shape, n, (unsigned long long)PT_SEED());
			free(got);
			free(want);
		}
	}
}

/* A leaf of the keys "k" + 4 digits of 0, 3, 6, ... (n keys). */
static pnode *leaf_of(uint32_t n)
{
	prolly__enc e;
	prolly_buf out = PROLLY_BUF_INIT;
	prolly_id id;
	pnode *nd = NULL;
	char k[16];
	prolly__enc_init(&e, 0);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "k%04u", i * 3);
		if (prolly__enc_add_leaf(&e, k, strlen(k), "v", 1))
			goto out;
	}
	if (prolly__enc_finish(&e, &out))
		goto out;
	prolly__hash(&id, out.ptr, out.size);
	if (prolly__node_decode(&nd, &id, out.ptr, out.size, 1))
		nd = NULL;
out:
	prolly__enc_dispose(&e);
	prolly_buf_dispose(&out);
	return nd;
}

PT_TEST(lower_bound_from_matches_lower_bound)
{
	static const uint32_t sizes[] = {1, 2, 5, 64, 200};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		pnode *nd = leaf_of(sizes[s]);
		PT_REQUIRE(nd != NULL);
		size_t bad = 0;
		/* every probe key (present, between, before and after all) and every allowed from */
		for (uint32_t v = 0; v <= sizes[s] * 3 + 1; v++) {
			char k[16];
			snprintf(k, sizeof(k), "k%04u", v);
			uint32_t want = prolly__node_lower_bound(nd, k, strlen(k));
			for (uint32_t from = 0; from <= want; from++)
				if (prolly__node_lower_bound_from(nd, k, strlen(k), from) != want && bad++ < 5)
					fprintf(stderr, "  %u items, key %s from %u: got %u, want %u\n", sizes[s], k,
					        from, prolly__node_lower_bound_from(nd, k, strlen(k), from), want);
		}
		PT_CHECKF(bad == 0, "%zu wrong answers in a leaf of %u items", bad, sizes[s]);
		prolly__node_unref(nd);
	}
}

typedef struct answers {
	size_t next, n, wrong;
	const prolly_slice *keys;
	prolly_db *db;
	const prolly_id *root;
} answers;

static int check_answer(void *payload, size_t index, const void *value, size_t vlen)
{
	answers *a = payload;
	prolly_buf want = PROLLY_BUF_INIT;
	int rc = prolly_get(&want, a->db, a->root, a->keys[index].data, a->keys[index].size);
	int same = index == a->next++ &&
	           (rc == 0 ? value && vlen == want.size && !memcmp(value, want.ptr, vlen)
	                    : rc == PROLLY_ENOTFOUND && !value);
	if (!same && a->wrong++ < 5)
		fprintf(stderr, "  key %zu: get_many and get differ\n", index);
	prolly_buf_dispose(&want);
	return 0;
}

PT_TEST(get_many_of_large_unsorted_batches)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0x6b6579ULL);
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	char k[32], v[32];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	for (unsigned i = 0; i < 50000; i++) { /* keys of even numbers only */
		snprintf(k, sizeof(k), "row:%08u", 2 * i);
		snprintf(v, sizeof(v), "value %u", i);
		PT_REQUIRE(prolly_builder_add(b, k, strlen(k), v, strlen(v)) == 0);
	}
	PT_REQUIRE(prolly_builder_finish(b, &root) == 0);
	prolly_builder_free(b);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	for (int round = 0; round < 3; round++) {
		size_t n = round == 0 ? 20000 : 3000;
		batch kb;
		batch_init(&kb, n);
		for (size_t i = 0; i < n; i++) {
			if (i && tm_rng_chance(&rng, 1, 10)) { /* a duplicate of an earlier key */
				size_t j = (size_t)tm_rng_below(&rng, i);
				set_key(&kb, i, kb.keys[j].data, kb.keys[j].size);
				continue;
			}
			/* odd numbers and those past the last key are absent */
			uint64_t x = round == 1 ? 2 * i : tm_rng_below(&rng, 110000);
			int len = snprintf(k, sizeof(k), "row:%08llu", (unsigned long long)x);
			set_key(&kb, i, k, (size_t)len);
		}
		answers a = {0, n, 0, kb.keys, db, &root};
		PT_CHECK_RC(prolly_get_many(db, &root, kb.keys, n, check_answer, &a), 0);
		PT_CHECKF(a.next == n && a.wrong == 0, "round %d: %zu answers, %zu wrong", round, a.next,
		          a.wrong);
		batch_free(&kb);
	}
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
