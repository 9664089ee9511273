/*
 * test_model.c - seeded randomized tests of every tree operation against a reference model
 * (tests/lib/model.c), on the memory store (default cache, no cache, a tiny cache) and on LMDB.
 * tests/test_pg_model.c makes the same runs on the PostgreSQL store. The engine is
 * tests/lib/model_run.h.
 *
 * Each run is a random sequence of steps: batch edits (puts, overwrites, deletes of present and
 * absent keys, duplicate keys in one batch where the last edit wins), bulk builds, three-way
 * merges of two branches edited from a common base, edits inside a txn that is then discarded,
 * and (LMDB, PostgreSQL) closing and reopening the store. After every step the tree is compared
 * with the model: every record (cursor scan), count, a verifying stats walk, and the root id must
 * equal the id of a tree bulk-built from the model's records (history independence). Random reads
 * follow: get, get_many (request order, missing and duplicate keys), rank, select, cursors (bounds,
 * prefix, reverse, early stop), and diffs between versions kept along the way.
 *
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_model [NAME].
 * PROLLY_TEST_SCALE=N multiplies the number of steps and the tree sizes.
 */
#include "internal.h"
#include "lib/model_run.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

#define PROG "build/tests/test_model"

static void model_run(const char *name, uint64_t salt, int kind, size_t cache_bytes, int key24,
                      unsigned steps, size_t target, unsigned big_den)
{
	PT_CHECK(!mr_model_run(PROG, name, PT_SEED(), salt, kind, cache_bytes, key24, steps, target,
	                       big_den, NULL));
}

PT_TEST(model_mem_binary_keys)
{
	model_run("model_mem_binary_keys", 0x1111, MR_MEM, 64u << 20, 0, 100, 1500, 300);
}

PT_TEST(model_mem_key24)
{
	model_run("model_mem_key24", 0x2222, MR_MEM, 64u << 20, 1, 100, 3000, 0);
}

PT_TEST(model_mem_no_cache)
{
	model_run("model_mem_no_cache", 0x3333, MR_MEM, 0, 0, 80, 1200, 400);
}

PT_TEST(model_mem_tiny_cache)
{
	model_run("model_mem_tiny_cache", 0x4444, MR_MEM, 20000, 1, 80, 1500, 500);
}

/* get_many (and the merges and edits that call it) with a window of 3 nodes (GM1 of
 * src/read.c): requests cut into windows at every level, absent and repeated keys at their
 * edges. */
PT_TEST(model_get_many_small_window)
{
	size_t was = prolly__get_many_window;
	prolly__get_many_window = 3;
	model_run("model_get_many_small_window", 0x6666, MR_MEM, 20000, 0, 60, 1500, 400);
	prolly__get_many_window = was;
}

/* Edits applied 5 distinct keys a batch, the txn's nodes written between batches (E9 of
 * src/edit.c), on LMDB (written nodes are read back from the file): every tree is still the
 * canonical one, every merge and discarded txn as before. */
PT_TEST(model_edit_small_batches)
{
	size_t was = prolly__edit_batch;
	prolly__edit_batch = 5;
	model_run("model_edit_small_batches", 0x7777, MR_LMDB, 1u << 20, 1, 50, 1500, 400);
	prolly__edit_batch = was;
}

PT_TEST(model_small_trees)
{
	/* Trees of a few records: single leaves, the empty tree, collapses to a leaf. */
	model_run("model_small_trees", 0x5555, MR_MEM, 1u << 20, 0, 300, 8, 0);
}

PT_TEST(model_lmdb)
{
	model_run("model_lmdb", 0x6666, MR_LMDB, 8u << 20, 0, 80, 1500, 300);
}

PT_TEST(model_lmdb_no_cache)
{
	model_run("model_lmdb_no_cache", 0x7777, MR_LMDB, 0, 1, 50, 1500, 0);
}

/* Deterministic edge cases that random runs reach only by chance. */
PT_TEST(model_edge_batches)
{
	mr_run r;
	if (mr_init(&r, "model_edge_batches", PT_SEED(), 0x8888, MR_MEM, 0, NULL) != 0) {
		mr_dispose(&r);
		PT_CHECK(!"a memory store");
		return;
	}
	prolly_txn *txn = NULL;
	prolly_id out;
	tm_model m;
	tm_model_init(&m);
	/* Empty batch: same root. */
	MR_RC_OK(&r, prolly_txn_begin(&txn, r.db));
	MR_RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, NULL, 0));
	PT_CHECK(prolly_id_equal(&out, &r.root));
	/* Deleting absent keys from the empty tree: still empty. */
	prolly_edit d[3] = {{PROLLY_DEL, {"a", 1}, {NULL, 0}},
	                    {PROLLY_DEL, {"b", 1}, {NULL, 0}},
	                    {PROLLY_DEL, {"a", 1}, {NULL, 0}}};
	MR_RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, d, 3));
	PT_CHECK(prolly_id_equal(&out, &r.root));
	/* put then del of one key in one batch: absent; del then put: present with the last value. */
	prolly_edit pd[4] = {{PROLLY_PUT, {"k", 1}, {"1", 1}},
	                     {PROLLY_DEL, {"k", 1}, {NULL, 0}},
	                     {PROLLY_DEL, {"j", 1}, {NULL, 0}},
	                     {PROLLY_PUT, {"j", 1}, {"2", 1}}};
	MR_RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, pd, 4));
	tm_model_apply(&m, pd, 4);
	mr_check_tree_v(&r, &out, &m, "put/del in one batch", 0);
	/* Overwrite with an identical value: same root. */
	prolly_id same;
	prolly_edit ov = {PROLLY_PUT, {"j", 1}, {"2", 1}};
	MR_RC_OK(&r, prolly_edit_tree(&same, txn, &out, &ov, 1));
	PT_CHECK(prolly_id_equal(&same, &out));
	/* Empty value and a key of zero bytes. */
	prolly_edit ev[2] = {{PROLLY_PUT, {"\0", 1}, {"", 0}}, {PROLLY_PUT, {"\0\0", 2}, {NULL, 0}}};
	MR_RC_OK(&r, prolly_edit_tree(&out, txn, &out, ev, 2));
	tm_model_apply(&m, ev, 2);
	mr_check_tree_v(&r, &out, &m, "empty values", 0);
	MR_RC_OK(&r, prolly_txn_commit(txn, NULL, 0));
	mr_check_tree(&r, &out, &m, "empty values (committed)");
	prolly_txn_free(txn);
	tm_model_dispose(&m);
	mr_dispose(&r);
	PT_CHECK(!r.failed);
}

/* The header: "Until then its nodes are readable through the same prolly_db ... so trees made in
 * a txn can be read". That includes a verifying stats walk. */
PT_TEST(model_txn_tree_stats_verify)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_CHECK_RC(prolly_db_new(&db, st, NULL), 0);
	PT_REQUIRE(db);
	prolly_txn *txn = NULL;
	prolly_id empty, out;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	prolly_edit e = {PROLLY_PUT, {"key", 3}, {"value", 5}};
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &empty, &e, 1), 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &out, 0), 0);
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &out, 1), 0);
	prolly_txn_free(txn);
	prolly_close(db);
}

/* The model's batch paths (tm_model_apply of 16 edits or more, tm_random_model) give what one
 * put or del at a time gives: the same records, and the same generator state afterwards. */
PT_TEST(model_batches_match_one_by_one)
{
	uint64_t seed = PT_SEED();
	tm_rng r1, r2;
	tm_model a, b;
	tm_model_init(&a);
	tm_model_init(&b);
	tm_rng_seed(&r1, seed);
	tm_rng_seed(&r2, seed);
	tm_random_model(&a, &r1, 3000);
	unsigned char k[TM_KEY_MAX];
	static unsigned char v[TM_VAL_BIG];
	while (b.n < 3000) {
		size_t kl = tm_gen_key(&r2, k);
		size_t vl = tm_gen_value(&r2, v, 1000);
		tm_model_put(&b, k, kl, v, vl);
	}
	PT_CHECK(tm_model_equal(&a, &b));
	PT_CHECK(tm_rng_next(&r1) == tm_rng_next(&r2));
	/* edits: present and absent keys, duplicates where the last one wins, puts after deletes */
	for (int round = 0; round < 20; round++) {
		size_t n = 16 + tm_rng_below(&r1, 400);
		prolly_edit *e = calloc(n, sizeof(*e));
		unsigned char(*keys)[TM_KEY_MAX] = calloc(n, TM_KEY_MAX);
		PT_REQUIRE(e && keys);
		for (size_t i = 0; i < n; i++) {
			if (i && tm_rng_chance(&r1, 1, 5)) { /* the key of an earlier edit */
				e[i].key = e[tm_rng_below(&r1, i)].key;
			} else if (a.n && tm_rng_chance(&r1, 1, 2)) { /* a present key */
				const tm_rec *rec = &a.r[tm_rng_below(&r1, a.n)];
				memcpy(keys[i], rec->k, rec->klen);
				e[i].key = (prolly_slice){keys[i], rec->klen};
			} else {
				e[i].key = (prolly_slice){keys[i], tm_gen_key(&r1, keys[i])};
			}
			e[i].op = tm_rng_chance(&r1, 1, 3) ? PROLLY_DEL : PROLLY_PUT;
			e[i].value = (prolly_slice){round & 1 ? "odd" : "even", round & 1 ? 3 : 4};
		}
		tm_model_apply(&a, e, n);
		for (size_t i = 0; i < n; i++) {
			if (e[i].op == PROLLY_PUT)
				tm_model_put(&b, e[i].key.data, e[i].key.size, e[i].value.data, e[i].value.size);
			else
				tm_model_del(&b, e[i].key.data, e[i].key.size);
		}
		PT_CHECKF(tm_model_equal(&a, &b), "seed %#llx round %d", (unsigned long long)seed, round);
		free(keys);
		free(e);
	}
	tm_model_dispose(&a);
	tm_model_dispose(&b);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
