/*
 * test_pg_model.c - the seeded randomized model tests of test_model.c on the PostgreSQL store.
 *
 * The same engine as test_model.c (compiled again here with TEST_MODEL_PG, which keeps only the
 * PostgreSQL runs): random edits, bulk builds, merges, discarded txns and store reopens, checked
 * against the reference model after every step. Each run uses a fresh schema on $PROLLY_PG_URL
 * (prolly_model_<pid>_<n>), dropped at the end. When PROLLY_PG_URL is unset a throwaway cluster
 * is started with scripts/pg-cluster.sh and stopped at the end, also if the tests crash
 * (tm_pg_guard). Never skips: without a server every case fails.
 *
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_pg_model NAME.
 */
#define TEST_MODEL_PG 1
#include "test_model.c"
