/*
 * test_hash_many.c - prolly__hash_many against prolly__hash (HM1 of src/hash_many.c), on the
 * AVX-512 path where this CPU has it and on the one-at-a-time path:
 *
 *   - every length from 0 to 300 bytes (each padding case: the length fits the last block, or
 *     needs one more), in one batch, so that groups mix lengths;
 *   - batches of every size from 0 to 40 buffers (partial groups of lanes) of random lengths up
 *     to 20 KB, some buffers shared between entries;
 *   - the loading of nodes that uses it (src/db.c): a tree read back through a store that hands
 *     out bytes, then with one leaf damaged in the middle of a batch, reported by its id.
 *
 * Re-run one test: build/tests/test_hash_many NAME; PROLLY_TEST_SEED picks the lengths.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

/* How many of the n digests prolly__hash_many gets wrong. */
static size_t wrong_digests(const unsigned char *const *data, const size_t *size, size_t n)
{
	prolly_id *got = calloc(n ? n : 1, sizeof(*got));
	size_t bad = 0;
	if (!got)
		return n + 1;
	prolly__hash_many(got, data, size, n);
	for (size_t i = 0; i < n; i++) {
		prolly_id want;
		prolly__hash(&want, data[i], size[i]);
		if (!prolly_id_equal(&want, &got[i]) && bad++ < 3)
			fprintf(stderr, "  buffer %zu of %zu (%zu bytes): digest differs\n", i, n, size[i]);
	}
	free(got);
	return bad;
}

static void check_paths(void (*body)(const char *path))
{
	int simd = prolly__hash_many_simd(1);
	body(simd ? "AVX-512" : "one at a time (no AVX-512 here)");
	prolly__hash_many_simd(0);
	body("one at a time");
	prolly__hash_many_simd(1);
}

static void every_short_length(const char *path)
{
	enum { N = 301 };
	unsigned char *buf = malloc(N);
	const unsigned char *data[N];
	size_t size[N];
	PT_REQUIRE(buf != NULL);
	for (size_t i = 0; i < N; i++)
		buf[i] = (unsigned char)(i * 151 + 7);
	for (size_t i = 0; i < N; i++) {
		data[i] = buf + (N - i) % 7; /* not all aligned alike */
		size[i] = i < N - 7 ? i : N - 7;
	}
	PT_CHECKF(wrong_digests(data, size, N) == 0, "%s: lengths 0..%d", path, N - 8);
	free(buf);
}

PT_TEST(hash_many_every_short_length)
{
	check_paths(every_short_length);
}

static void random_batches(const char *path)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0x68617368ULL);
	enum { MAXLEN = 20000, MAXN = 40 };
	unsigned char *pool = malloc(MAXN * MAXLEN);
	PT_REQUIRE(pool != NULL);
	tm_rng_bytes(&rng, pool, MAXN * MAXLEN);
	for (size_t n = 0; n <= MAXN; n++) {
		const unsigned char *data[MAXN];
		size_t size[MAXN];
		for (size_t i = 0; i < n; i++) {
			size_t at = (size_t)tm_rng_below(&rng, MAXN) * MAXLEN; /* may repeat */
			size[i] = (size_t)tm_rng_below(&rng, MAXLEN);
			data[i] = pool + at;
		}
		PT_CHECKF(wrong_digests(data, size, n) == 0, "%s: a batch of %zu, seed %llu", path, n,
		          (unsigned long long)PT_SEED());
	}
	free(pool);
}

PT_TEST(hash_many_random_batches)
{
	check_paths(random_batches);
}

/* A leaf's id: the child `i` of the root's first child (a tree of height 2 or more). */
static int some_leaf(prolly_db *db, const prolly_id *root, prolly_id *out)
{
	prolly__nodeset ws;
	pnode *nd;
	int rc;
	prolly__nodeset_init(&ws);
	rc = prolly__load_root(db, &ws, root, &nd);
	while (rc == 0 && nd->level > 1)
		rc = prolly__load1(db, &ws, prolly__node_child(nd, 0), &nd);
	if (rc == 0)
		*out = *prolly__node_child(nd, nd->n / 2);
	prolly__nodeset_dispose(&ws);
	return rc;
}

PT_TEST(loads_check_every_node_in_a_batch)
{
	/* LMDB through a tap store (every node read is bytes from the store, decoded and checked
	 * with its batch, L1 of src/db.c): a whole tree read back, then one of its leaves damaged in the middle of a batch, on each
	 * path; the walk fails naming that leaf, and works again once the store heals. */
	tm_db t;
	PT_REQUIRE(tm_db_open(&t, 1, "hash_many", 1, 0, 0) == 0);
	tm_tap *tap = t.tap;
	prolly_db *db = t.db;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root, leaf;
	char k[32], v[64], hex[PROLLY_ID_HEX_SIZE];
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	for (unsigned i = 0; i < 20000; i++) {
		snprintf(k, sizeof(k), "k%06u", i);
		snprintf(v, sizeof(v), "value %u of a batch of node loads", i);
		PT_REQUIRE(prolly_builder_add(b, k, strlen(k), v, strlen(v)) == 0);
	}
	PT_REQUIRE(prolly_builder_finish(b, &root) == 0);
	prolly_builder_free(b);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	PT_REQUIRE(some_leaf(db, &root, &leaf) == 0);
	prolly_id_to_hex(hex, &leaf);
	for (int simd = 1; simd >= 0; simd--) {
		prolly__hash_many_simd(simd);
		prolly_tree_stats st = PROLLY_TREE_STATS_INIT;
		tap->mode = TM_TAP_PASS;
		prolly_db_cache_clear(db);
		uint64_t served = atomic_load(&tap->nodes_served);
		PT_CHECK_RC(prolly_tree_stats_get(&st, db, &root, 0), 0);
		PT_CHECKF(atomic_load(&tap->nodes_served) - served >= st.leaves,
		          "the walk read %llu nodes from the store",
		          (unsigned long long)(atomic_load(&tap->nodes_served) - served));
		PT_CHECKF(st.records == 20000 && st.leaves > 16, "%llu records in %llu leaves",
		          (unsigned long long)st.records, (unsigned long long)st.leaves);
		tap->mode = TM_TAP_FLIP;
		tap->target = leaf;
		tap->pos = 100;
		tap->mask = 0x01;
		prolly_db_cache_clear(db);
		PT_CHECK_RC(prolly_tree_stats_get(&st, db, &root, 0), PROLLY_ECORRUPT);
		PT_CHECKF(strstr(prolly_last_error(), hex) != NULL &&
		              strstr(prolly_last_error(), "hash") != NULL,
		          "simd %d: %s", simd, prolly_last_error());
		tap->mode = TM_TAP_PASS;
		PT_CHECK_RC(prolly_tree_stats_get(&st, db, &root, 0), 0);
	}
	prolly__hash_many_simd(1);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
