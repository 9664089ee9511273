/*
 * test_pg_model.c - the seeded randomized model tests of test_model.c on the PostgreSQL store.
 *
 * The same engine as test_model.c (tests/lib/model_run.h): random edits, bulk builds, merges,
 * discarded txns and store reopens, checked against the reference model after every step. Each run
 * uses a fresh schema on $PROLLY_PG_URL (prolly_model_<pid>_<n>), dropped at the end. When
 * PROLLY_PG_URL is unset a throwaway cluster is started with scripts/pg-cluster.sh and stopped at
 * the end, also if the tests crash (tm_pg_guard). Never skips: without a server every case fails.
 *
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_pg_model NAME.
 */
#include "internal.h"
#include "lib/model_run.h"
#include "ptest.h"

#include "store/pg.h"

#define PROG "build/tests/test_pg_model"

static void model_run_pg(const char *name, uint64_t salt, size_t cache_bytes, int key24,
                         unsigned steps, size_t target, unsigned big_den,
                         const prolly_pg_options *pg)
{
	PT_CHECK(!mr_model_run(PROG, name, PT_SEED(), salt, MR_PG, cache_bytes, key24, steps, target,
	                       big_den, pg));
}

PT_TEST(model_pg_binary_keys)
{
	/* Random binary keys, some big values, the default batch sizes. */
	model_run_pg("model_pg_binary_keys", 0x9191, 8u << 20, 0, 50, 1500, 300, NULL);
}

PT_TEST(model_pg_no_cache)
{
	/* Every node read goes to the server. */
	model_run_pg("model_pg_no_cache", 0x9292, 0, 1, 24, 1000, 0, NULL);
}

PT_TEST(model_pg_small_chunks)
{
	/* A write is several INSERT statements and a read several SELECTs (in one round trip), with
	 * a pool of two connections. */
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.batch_items = 3;
	o.read_chunk = 4;
	o.pool_size = 2;
	model_run_pg("model_pg_small_chunks", 0x9393, 20000, 0, 30, 500, 200, &o);
}

PT_TEST(model_pg_edit_small_batches)
{
	/* Edits made 5 distinct keys a batch, the txn's nodes written between batches (E9 of
	 * src/edit.c) through the store's flushes, in transactions of their own before the commit's. */
	size_t was = prolly__edit_batch;
	prolly__edit_batch = 5;
	model_run_pg("model_pg_edit_small_batches", 0x9595, 1u << 20, 1, 24, 800, 300, NULL);
	prolly__edit_batch = was;
}

PT_TEST(model_pg_small_trees)
{
	/* Many small commits: single leaves, the empty tree, collapses to a leaf. */
	model_run_pg("model_pg_small_trees", 0x9494, 1u << 20, 0, 80, 8, 0, NULL);
}

int main(int argc, char **argv)
{
	if (tm_pg_guard_tap() != 0)
		return 1;
	return pt_run(argc, argv);
}
