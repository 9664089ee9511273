/*
 * test_sql_model.c - the extension's SQL functions against the reference model, seeded and
 * randomized.
 *
 * Each case makes a database of its own on the program's server (a throwaway cluster unless
 * $PROLLY_PG_URL is set: tm_pg_guard), a store in its schema public through the library, and
 * CREATE EXTENSION prolly there. Then a random run of steps, each checked against a model of
 * every commit made (tests/lib/model.h):
 *   - writes through SQL: prolly_commit with repeated keys and NULL values (a delete),
 *     prolly_put, prolly_delete, prolly_delete_range, prolly_branch, prolly_delete_branch,
 *     prolly_reset, prolly_tag, prolly_delete_tag, prolly_merge with each resolve (its merge base
 *     asked of prolly_merge_base, the result computed by the three-way rule of
 *     docs/diff-merge.md; 'fail' with conflicts must be PY001), prolly_revert and
 *     prolly_cherry_pick, prolly_commit with expected and merge; some inside an explicit
 *     transaction or savepoint that commits or rolls back;
 *   - writes through the C client on the same store (prolly_commit_edits), which SQL must see;
 *   - a gc through the C client now and then: what branches and tags reach stays, the rest is
 *     gone for SQL too;
 *   - reads through SQL of a branch, a tag, a full or short commit id, with steps ~N and ^N:
 *     prolly_get, prolly_get_many (repeated and missing keys), prolly_scan (random bounds,
 *     prefix, max_rows, direction), prolly_count, prolly_diff of two refs in a key window,
 *     prolly_resolve, prolly_log, prolly_merge_conflicts, prolly_stats, prolly_history;
 *   - reads through the C client of what SQL wrote (tm_tree_check of a branch's tree);
 *   - REFs spliced from pieces of the grammar and junk: resolved, or refused with a documented
 *     SQLSTATE.
 * Without the extension installed in the server the cases skip (a failure under CI=true).
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_sql_model NAME;
 * PROLLY_TEST_TRACE=1 prints every statement with its step. docs/testing.md describes the cases;
 * the steps are in tests/lib/sql_model*.c (sql_model.h).
 */
#include "lib/sql_model.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the run -------------------------------------------------------------------------------- */

static void one_write(sm_run *t, int may_fail)
{
	uint64_t w = tm_rng_below(&t->r, 26);
	t->done[w < 24 || t->in_txn ? SM_D_WRITE : SM_D_CLIENT]++;
	if (w < 7)
		sm_w_commit(t);
	else if (w < 10)
		sm_w_put_delete(t);
	else if (w < 12)
		sm_w_delete_range(t);
	else if (w < 14)
		sm_w_branch(t);
	else if (w < 17)
		sm_w_merge(t, may_fail);
	else if (w < 18)
		sm_w_reset(t);
	else if (w < 19)
		sm_w_tag(t);
	else if (w < 22)
		sm_w_pick(t, may_fail);
	else if (w < 24)
		sm_w_commit_expected(t, may_fail);
	else if (!t->in_txn)
		sm_w_client(t);
	else
		sm_w_commit(t);
}

static void one_read(sm_run *t)
{
	t->done[SM_D_READ]++;
	switch (tm_rng_below(&t->r, 11)) {
	case 10: sm_r_history(t); break;
	case 6: sm_r_bad_ref(t); break;
	case 7: sm_r_log(t); break;
	case 8: sm_r_conflicts(t); break;
	case 9: sm_r_stats(t); break;
	case 0: sm_r_get(t); break;
	case 1: sm_r_get_many(t); break;
	case 2: sm_r_scan(t); break;
	case 3: sm_r_count(t); break;
	case 4: sm_r_diff(t); break;
	default: sm_r_resolve(t); break;
	}
}

/* Writes and reads inside BEGIN ... COMMIT or ROLLBACK, or a savepoint rolled back. */
static void one_txn(sm_run *t)
{
	size_t ncommits = t->ncommits;
	long head[SM_NREFS];
	memcpy(head, t->head, sizeof(head));
	int rollback = tm_rng_chance(&t->r, 1, 2), savepoint = tm_rng_chance(&t->r, 1, 3);
	t->in_txn = 1;
	t->done[SM_D_TXN]++;
	t->done[SM_D_ROLLBACK] += rollback;
	snprintf(t->step, sizeof(t->step), "BEGIN");
	sm_q0(t, "BEGIN");
	if (savepoint) {
		one_write(t, 0);
		ncommits = t->ncommits;
		memcpy(head, t->head, sizeof(head));
		sm_q0(t, "SAVEPOINT s");
	}
	for (int i = 0, n = 1 + (int)tm_rng_below(&t->r, 4); i < n && !t->failed; i++) {
		one_write(t, 0);
		one_read(t);
	}
	if (savepoint && rollback) {
		sm_q0(t, "ROLLBACK TO SAVEPOINT s");
		sm_forget_after(t, ncommits);
		memcpy(t->head, head, sizeof(head));
	}
	if (!t->failed)
		one_read(t); /* what the transaction sees now */
	snprintf(t->step, sizeof(t->step), "end of transaction");
	sm_q0(t, savepoint || !rollback ? "COMMIT" : "ROLLBACK");
	if (!savepoint && rollback) {
		sm_forget_after(t, ncommits);
		memcpy(t->head, head, sizeof(head));
	}
	t->in_txn = 0;
}

/* A connection string for database dbname on $PROLLY_PG_URL's server, into out. */
static int conninfo_for(char *out, size_t cap, const char *dbname)
{
	char *err = NULL;
	PQconninfoOption *o = PQconninfoParse(getenv("PROLLY_PG_URL"), &err);
	if (!o) {
		fprintf(stderr, "  cannot parse PROLLY_PG_URL: %s\n", err ? err : "?");
		PQfreemem(err);
		return -1;
	}
	size_t at = 0;
	for (PQconninfoOption *x = o; x->keyword && at < cap; x++) {
		const char *v = !strcmp(x->keyword, "dbname") ? dbname : x->val;
		if (!v)
			continue;
		at += (size_t)snprintf(out + at, cap - at, "%s%s='", at ? " " : "", x->keyword);
		for (; *v && at + 3 < cap; v++) {
			if (*v == '\'' || *v == '\\')
				out[at++] = '\\';
			out[at++] = *v;
		}
		at += (size_t)snprintf(out + at, cap - at, "'");
	}
	PQconninfoFree(o);
	return at < cap ? 0 : -1;
}

static int have_extension(PGconn *c)
{
	PGresult *res = PQexec(c, "SELECT 1 FROM pg_available_extensions WHERE name = 'prolly'");
	int have = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	PQclear(res);
	return have;
}

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void sql_model_run(const char *name, uint64_t salt, unsigned node_size, int cache_off,
                          unsigned big_den, size_t maxkeys, unsigned steps)
{
	static unsigned seq;
	char dbname[64], conn[2048], sql[200];
	sm_run t;
	memset(&t, 0, sizeof(t));
	t.seed = PT_SEED() ^ salt;
	t.big_den = big_den;
	t.maxkeys = maxkeys < SM_NKEYS ? maxkeys : SM_NKEYS;
	tm_rng_seed(&t.r, t.seed);
	for (int b = 0; b < SM_NREFS; b++)
		t.head[b] = -1;
	snprintf(dbname, sizeof(dbname), "prolly_sqlmodel_%d_%u", (int)getpid(), seq++);
	PGconn *admin = PQconnectdb(getenv("PROLLY_PG_URL"));
	PT_REQUIRE(PQstatus(admin) == CONNECTION_OK);
	PQsetNoticeProcessor(admin, quiet, NULL);
	if (!have_extension(admin)) {
		PQfinish(admin);
		PT_SKIP("the prolly extension is not installed in the server (make -C ext/postgres "
		        "install)");
		return;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
	PGresult *res = PQexec(admin, sql);
	int made = PQresultStatus(res) == PGRES_COMMAND_OK;
	PT_CHECKF(made, "%s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
	t.val = malloc(TM_VAL_BIG);
	prolly_store *st = NULL;
	prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
	po.node_size = node_size;
	if (!made || !t.val || conninfo_for(conn, sizeof(conn), dbname) != 0)
		goto cleanup;
	PT_CHECK_RC(prolly_store_pg_open(&st, conn, &po), 0);
	if (!st)
		goto cleanup;
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.reflog_days = 0; /* a gc keeps what branches and tags reach, nothing for the reflog */
	PT_CHECK_RC(prolly_db_new(&t.db, st, &o), 0);
	if (!t.db)
		goto cleanup;
	prolly_id init;
	PT_CHECK_RC(prolly_commit_edits(&init, t.db, "main", NULL, 0, "init"), 0);
	{
		char hex[PROLLY_ID_HEX_SIZE];
		tm_model m;
		tm_model_init(&m);
		prolly_id_to_hex(hex, &init);
		sm_land(&t, 0, hex, strlen(hex), &m, -1);
	}
	t.c = PQconnectdb(conn);
	PT_CHECKF(PQstatus(t.c) == CONNECTION_OK, "%s", PQerrorMessage(t.c));
	if (PQstatus(t.c) != CONNECTION_OK)
		goto cleanup;
	PQsetNoticeProcessor(t.c, quiet, NULL);
	snprintf(t.step, sizeof(t.step), "setup");
	sm_q0(&t, "CREATE EXTENSION prolly");
	if (cache_off)
		sm_q0(&t, "SET prolly.cache_size = 0");
	/* main starts with half the key pool, so that the trees have some height from the start. */
	t.fresh = 1;
	while (t.nkeys < t.maxkeys / 2 && !t.failed)
		sm_commit_n(&t, 0, 60, 0);
	t.fresh = 0;
	for (unsigned s = 0; s < steps && !t.failed; s++) {
		uint64_t what = tm_rng_below(&t.r, 40);
		if (what < 18)
			one_write(&t, 1);
		else if (what < 34)
			one_read(&t);
		else if (what < 38)
			one_txn(&t);
		else if (what < 39)
			sm_r_client(&t, sm_pick_branch(&t, 1));
		else
			sm_w_gc(&t);
	}
	for (int b = 0; b < SM_NBRANCH && !t.failed; b++)
		if (t.head[b] >= 0)
			sm_r_client(&t, b);
	PT_CHECK(!t.failed);
	if (pt_failed_now)
		fprintf(stderr, "  %s: re-run with PROLLY_TEST_SEED=%#llx\n", name,
		        (unsigned long long)PT_SEED());
	res = PQexec(t.c, "SELECT records || ' records, height ' || height FROM prolly_stats('main')");
	printf("# %s: %u writes (%u through the C client), %u reads, %u transactions (%u rolled "
	       "back), merges: %u three-way, %u fast-forward, %u refused for conflicts; %zu commits, "
	       "%u gone in %u gc runs, %u commits with expected; %zu keys; main: %s\n",
	       name, t.done[SM_D_WRITE] + t.done[SM_D_CLIENT], t.done[SM_D_CLIENT], t.done[SM_D_READ],
	       t.done[SM_D_TXN], t.done[SM_D_ROLLBACK], t.done[SM_D_MERGE3], t.done[SM_D_FAST],
	       t.done[SM_D_CONFLICT], t.ncommits, t.done[SM_D_GC_GONE], t.done[SM_D_GC],
	       t.done[SM_D_EXPECTED], t.nkeys, PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "?");
	PQclear(res);
cleanup:
	PQfinish(t.c);
	prolly_close(t.db);
	sm_forget_after(&t, 0);
	free(t.commits);
	free(t.val);
	if (made) {
		snprintf(sql, sizeof(sql), "DROP DATABASE %s WITH (FORCE)", dbname);
		PQclear(PQexec(admin, sql));
	}
	PQfinish(admin);
}

PT_TEST(sql_model_default)
{
	/* 4 KiB nodes, the backend's node cache on, a big value now and then. */
	sql_model_run("sql_model_default", 0x5a1, 0, 0, 40, 300, 260 * tm_scale());
}

PT_TEST(sql_model_no_cache)
{
	/* prolly.cache_size = 0: every node the functions read comes from the table. */
	sql_model_run("sql_model_no_cache", 0x5a2, 0, 1, 0, 300, 200 * tm_scale());
}

PT_TEST(sql_model_small_nodes)
{
	/* 1 KiB nodes and a larger key pool: trees of three levels and more. */
	sql_model_run("sql_model_small_nodes", 0x5a3, 1024, 0, 0, 1200, 300 * tm_scale());
}

int main(int argc, char **argv)
{
	if (tm_pg_guard_tap() != 0)
		return 1;
	return pt_run(argc, argv);
}
