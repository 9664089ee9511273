/*
 * test_harness_scale.c - the harness's scale suite (bench/suites/scale.c) and the scale
 * engine under it (bench/scale/):
 *
 *   - hsc_columns carries every PostgreSQL counter column of hp_columns; hsc_cells counts sizes x
 *     (pattern-less operations, sync and proof once per part, + pattern operations x patterns);
 *   - a tiny workload (2000 records, 1 run, 50 changes, 50 read samples, concurrency 4, every
 *     operation, all five patterns) on the memory store, LMDB and PostgreSQL: one validated row
 *     per cell with the harness's names, latency percentiles where a cell is many operations;
 *     on PostgreSQL also the plain-table baseline rows, vs_plain, statements and the server's
 *     counters, and the prolly extension's rows (pg-sql: validated, vs_plain where a plain cell
 *     stands beside) when the extension is installed in the server (it must be under CI=true);
 *   - resume: a second hsc_run into the same directory measures nothing and skips every cell;
 *   - the history cells (sync: clone and push; proof: key and range proofs made and verified) on
 *     each store: a validated row per part, the copy counters and the notes, and their resume;
 *   - the disk guard refuses a size when min_free_gb cannot be met;
 *   - the engine on its own: other value sizes validate; a fixture whose cells are all skipped
 *     is not built; a skipped plain cell is still measured for vs_plain.
 *
 * Re-run one test: build/tests/test_harness_scale NAME.
 */
#include "../bench/harness/harness.h"
#include "../bench/scale/scale.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pg_ok; /* tm_pg_guard found or started a server */

static const char base_toml[] =
    "schema = 1\n"
    "seed = 7\n"
    "[service]\n"
    "enabled = false\n"
    "[scale]\n"
    "enabled = true\n"
    "sizes = [2000]\n"
    "value_bytes = 27\n"
    "runs = 1\n"
    "changes = 50\n"
    "read_samples = 50\n"
    "concurrency = 4\n"
    "operations = [\"put\", \"batch\", \"get_cold\", \"get_warm\", \"query\", "
    "\"concurrent_query\",\n"
    "              \"scan\", \"full_scan\", \"diff\", \"merge\"]\n"
    "patterns = [\"append\", \"random\", \"clustered\", \"random_insert\", \"random_delete\"]\n"
    "min_free_gb = 0\n";

/* A run: a temp directory holding the workload file, the output and the scratch directory. */
typedef struct trun {
	char *tmp;
	char toml[4200], out[4200], scratch[4200];
	hw_workload w;
	hr_dir *d;
	h_run run;
	char schema[64];
} trun;

static int trun_dir(trun *t)
{
	if (th_open_results(&t->d, t->out, &t->w, "scale", t->run.store))
		return -1;
	t->run.out = t->d;
	t->run.cells_done = 0;
	t->run.cells_total = hsc_cells(&t->w);
	return 0;
}

/* Loads base_toml with the overrides (dotted key, TOML text; NULL-terminated pairs). */
static int trun_open(trun *t, const char *store, const char *const *sets)
{
	memset(t, 0, sizeof(*t));
	if (!(t->tmp = tm_tmpdir("hsc")))
		return -1;
	snprintf(t->toml, sizeof(t->toml), "%s/w.toml", t->tmp);
	snprintf(t->out, sizeof(t->out), "%s/out", t->tmp);
	snprintf(t->scratch, sizeof(t->scratch), "%s", t->tmp);
	if (th_workload(&t->w, t->toml, base_toml, sets))
		return -1;
	t->run.w = &t->w;
	t->run.started_ns = bench_now_ns(); /* progress lines show the elapsed time */
	t->run.store = store;
	t->run.scratch = t->scratch;
	if (!strcmp(store, "postgres")) {
		t->run.url = getenv("PROLLY_PG_URL");
		tm_pg_schema_name(t->schema, "hsc");
		t->run.schema = t->schema;
	}
	return trun_dir(t);
}

/* A second invocation into the same directory. */
static int trun_reopen(trun *t)
{
	hr_close(t->d);
	t->d = NULL;
	return trun_dir(t);
}

static void trun_close(trun *t)
{
	hr_close(t->d);
	hw_workload_free(&t->w);
	if (t->schema[0]) { /* the engine drops them; an interrupted run may not have */
		char s[96];
		snprintf(s, sizeof(s), "%s_scale", t->schema);
		tm_pg_schema_drop(s);
		snprintf(s, sizeof(s), "%s_scale_plain", t->schema);
		tm_pg_schema_drop(s);
	}
	if (t->tmp)
		tm_rmtree(t->tmp);
	free(t->tmp);
}

static int read_raw(bench_csv *tab, const trun *t)
{
	return th_read_csv(tab, t->out, "scale-raw.csv");
}

static double num(const bench_csv *tab, size_t r, const char *col)
{
	return bench_csv_num(tab, r, col);
}

static const char *get(const bench_csv *tab, size_t r, const char *col)
{
	return bench_csv_get(tab, r, col);
}

/* The row of cell id, or -1. */
static long find(const bench_csv *tab, const char *id)
{
	for (size_t r = 0; r < tab->nrows; r++)
		if (!strcmp(get(tab, r, "cell_id"), id))
			return (long)r;
	return -1;
}

/* The extension's rows of the tiny workload: get_warm, query, scan, and batch, put and diff of
 * each of the five patterns. */
#define SQL_ROWS 18u

static int ci(void)
{
	const char *v = getenv("CI");
	return v && !strcmp(v, "true");
}

/* How many pg-sql rows a table has. */
static size_t sql_rows(const bench_csv *tab)
{
	size_t n = 0;
	for (size_t r = 0; r < tab->nrows; r++)
		n += !strcmp(bench_csv_get(tab, r, "store"), "pg-sql");
	return n;
}

/* Checks of every row of the tiny workload (26 Prolly cells, 14 plain ones on PostgreSQL, and
 * SQL_ROWS of the extension when it is installed). */
static void check_rows(const bench_csv *tab, const char *store)
{
	int pg = !strcmp(store, "postgres");
	size_t plain = 0, sql = sql_rows(tab);
	PT_CHECKF(sql == (pg ? SQL_ROWS : 0u) || (pg && sql == 0 && !ci()),
	          "%zu pg-sql rows (the extension not installed?)", sql);
	if (pg && sql == 0)
		printf("# the prolly extension is not installed in this server: no pg-sql rows\n");
	PT_CHECKF(tab->nrows == (pg ? 40u + sql : 26u), "%zu rows", tab->nrows);
	for (size_t r = 0; r < tab->nrows; r++) {
		const char *id = get(tab, r, "cell_id"), *op = get(tab, r, "op");
		int is_plain = !strcmp(get(tab, r, "store"), "pg-plain");
		int is_sql = !strcmp(get(tab, r, "store"), "pg-sql");
		plain += is_plain;
		PT_CHECKF(num(tab, r, "validated") == 1, "%s: not validated: %s", id, get(tab, r, "note"));
		PT_CHECKF(num(tab, r, "cell_rows") == 1, "%s", id);
		PT_CHECKF(!strcmp(get(tab, r, "suite"), "scale"), "%s", id);
		PT_CHECKF(num(tab, r, "size") == 2000, "%s", id);
		PT_CHECKF(num(tab, r, "runs") == 1, "%s", id);
		PT_CHECKF(num(tab, r, "ops") > 0 && num(tab, r, "ms_median") > 0, "%s", id);
		PT_CHECKF(num(tab, r, "ops_per_s") > 0, "%s", id);
		PT_CHECKF(find(tab, id) == (long)r, "%s: the id is not unique", id);
		PT_CHECKF(get(tab, r, "started")[0] && get(tab, r, "finished")[0], "%s", id);
		if (is_plain) {
			PT_CHECKF(!strncmp(id, "s2000-pg-plain-", 15), "%s", id);
			PT_CHECKF(!strcmp(op, get(tab, r, "engine_op")), "%s", id);
			PT_CHECKF(num(tab, r, "statements_per_op") > 0, "%s", id);
			continue;
		}
		if (is_sql) { /* one statement per get, one per cell otherwise */
			PT_CHECKF(!strncmp(id, "s2000-pg-sql-", 13), "%s", id);
			double stmts = num(tab, r, "statements_per_op") * num(tab, r, "ops");
			if (!strcmp(op, "get_warm") || !strcmp(op, "put"))
				PT_CHECKF(num(tab, r, "statements_per_op") == 1, "%s: %g statements per op", id,
				          num(tab, r, "statements_per_op"));
			else
				PT_CHECKF(fabs(stmts - 1) < 1e-6, "%s: %g statements", id, stmts);
			int compared = strcmp(op, "diff") != 0;
			PT_CHECKF(compared ? num(tab, r, "vs_plain") > 0 : !get(tab, r, "vs_plain")[0],
			          "%s: vs_plain '%s'", id, get(tab, r, "vs_plain"));
			continue;
		}
		PT_CHECKF(!strcmp(get(tab, r, "store"), store), "%s", id);
		PT_CHECKF(num(tab, r, "store_round_trips") > 0 || !strcmp(op, "get_warm") ||
		              !strcmp(op, "diff"),
		          "%s: no round trips", id);
		if (pg) {
			PT_CHECKF(num(tab, r, "statements_per_op") > 0 || !strcmp(op, "get_warm") ||
			              !strcmp(op, "diff"),
			          "%s: %g statements per op", id, num(tab, r, "statements_per_op"));
			PT_CHECKF(isfinite(num(tab, r, "pg_calls")), "%s: no pg_calls", id);
			PT_CHECKF(num(tab, r, "db_bytes_after") > 0, "%s: no database size", id);
		}
		/* Latency percentiles where a cell is many operations. */
		int many = !strcmp(op, "put") || !strcmp(op, "get_cold") || !strcmp(op, "get_warm") ||
		           !strcmp(op, "concurrent_query");
		if (many) {
			double want = !strcmp(op, "concurrent_query") ? 4 : 50;
			PT_CHECKF(num(tab, r, "samples") == want, "%s: %g samples", id, num(tab, r, "samples"));
			PT_CHECKF(num(tab, r, "p50_us") > 0 && num(tab, r, "p99_us") >= num(tab, r, "p50_us"),
			          "%s: p50 %g p99 %g", id, num(tab, r, "p50_us"), num(tab, r, "p99_us"));
		} else {
			PT_CHECKF(!get(tab, r, "p99_us")[0], "%s: a p99 for one operation", id);
		}
		if (!strcmp(op, "concurrent_query")) {
			PT_CHECKF(num(tab, r, "ops") == 200, "%s: %g ops", id, num(tab, r, "ops"));
			PT_CHECKF(num(tab, r, "concurrency") == 4, "%s", id);
		}
		/* vs_plain on the PostgreSQL rows with a plain analogue. */
		int compared = strcmp(op, "diff") && strcmp(op, "merge") && strcmp(op, "concurrent_query");
		if (pg && compared)
			PT_CHECKF(num(tab, r, "vs_plain") > 0, "%s: no vs_plain", id);
		else
			PT_CHECKF(!get(tab, r, "vs_plain")[0], "%s: vs_plain without a baseline", id);
	}
	PT_CHECKF(plain == (pg ? 14u : 0u), "%zu plain rows", plain);
	/* A few ids by name. */
	PT_CHECK(find(tab, "s2000-batch-random") >= 0);
	PT_CHECK(find(tab, "s2000-put-random_delete") >= 0);
	PT_CHECK(find(tab, "s2000-get_cold") >= 0);
	PT_CHECK(find(tab, "s2000-full_scan") >= 0);
	if (pg) {
		PT_CHECK(find(tab, "s2000-pg-plain-get") >= 0);
		PT_CHECK(find(tab, "s2000-pg-plain-batch-random_insert") >= 0);
	}
	if (sql) {
		PT_CHECK(find(tab, "s2000-pg-sql-get_warm") >= 0);
		PT_CHECK(find(tab, "s2000-pg-sql-batch-random_delete") >= 0);
		PT_CHECK(find(tab, "s2000-pg-sql-diff-random_insert") >= 0);
	}
	long g = find(tab, "s2000-get_cold");
	if (g >= 0)
		PT_CHECKF(!strcmp(get(tab, (size_t)g, "engine_op"), "get_cold") &&
		              !strcmp(get(tab, (size_t)g, "pattern"), "-"),
		          "get_cold is the engine's %s", get(tab, (size_t)g, "engine_op"));
}

/* The whole suite on one store, then the resume. */
static void suite_on(const char *store)
{
	trun t;
	bench_csv tab = {0}, again = {0};
	char err[H_ERR];
	unsigned measured = 0, skipped = 0;
	PT_REQUIRE(trun_open(&t, store, NULL) == 0);
	PT_CHECK(t.run.cells_total == 26);
	int rc = hsc_run(&t.run, err, sizeof(err));
	PT_CHECKF(rc == 0, "hsc_run: %s", err);
	hr_counts(t.d, &measured, &skipped);
	if (read_raw(&tab, &t) == 0)
		check_rows(&tab, store);
	PT_CHECKF(measured == (strcmp(store, "postgres") ? 26u : 40u + sql_rows(&tab)) && skipped == 0,
	          "measured %u skipped %u", measured, skipped);
	PT_CHECK(t.run.cells_done == 26);

	/* A second invocation: everything is done. */
	if (trun_reopen(&t) == 0) {
		rc = hsc_run(&t.run, err, sizeof(err));
		PT_CHECKF(rc == 0, "hsc_run again: %s", err);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECKF(measured == 0 && skipped == tab.nrows, "again: measured %u skipped %u of %zu",
		          measured, skipped, tab.nrows);
		PT_CHECK(t.run.cells_done == 0);
		if (read_raw(&again, &t) == 0)
			PT_CHECKF(again.nrows == tab.nrows, "%zu rows after resume, %zu before", again.nrows,
			          tab.nrows);
	} else {
		PT_CHECK(!"reopen");
	}
	bench_csv_free(&tab);
	bench_csv_free(&again);
	trun_close(&t);
}

/* ---- tests ----------------------------------------------------------------------------------- */

PT_TEST(columns_and_cells)
{
	for (size_t i = 0; hp_columns[i]; i++) {
		int found = 0;
		for (size_t j = 0; hsc_columns[j]; j++)
			found |= !strcmp(hp_columns[i], hsc_columns[j]);
		PT_CHECKF(found, "hsc_columns lacks %s", hp_columns[i]);
	}
	for (size_t i = 0; hsc_columns[i]; i++)
		for (size_t j = i + 1; hsc_columns[j]; j++)
			PT_CHECKF(strcmp(hsc_columns[i], hsc_columns[j]), "%s twice", hsc_columns[i]);
	hw_workload w;
	memset(&w, 0, sizeof(w));
	w.scale.n_sizes = 2;
	w.scale.operations = HW_DEFAULT_SCALE_OPS;
	w.scale.patterns = 1u << HW_P_APPEND | 1u << HW_P_RANDOM | 1u << HW_P_CLUSTERED;
	PT_CHECK(hsc_cells(&w) == 2 * (6 + 4 * 3));
	w.scale.operations = 1u << HW_S_GET_WARM | 1u << HW_S_MERGE;
	PT_CHECK(hsc_cells(&w) == 2 * (1 + 3));
	/* sync and proof: a cell (and a row) per part */
	w.scale.operations = 1u << HW_S_SYNC | 1u << HW_S_PROOF;
	PT_CHECKF(hsc_cells(&w) == 2 * (2 + 4), "%u cells", hsc_cells(&w));
}

/* One vocabulary: every operation and pattern a workload may name is the engine's own name. */
PT_TEST(one_vocabulary)
{
	for (int op = 0; op < HW_N_SCALE_OPS; op++) {
		int found = 0;
		for (int e = 0; e < SCALE_N_OPS; e++)
			found |= !strcmp(hw_scale_op_names[op], scale_op_names[e]);
		PT_CHECKF(found, "the engine has no operation %s", hw_scale_op_names[op]);
	}
	for (int e = 0; e < SCALE_N_OPS; e++) {
		int found = 0;
		for (int op = 0; op < HW_N_SCALE_OPS; op++)
			found |= !strcmp(hw_scale_op_names[op], scale_op_names[e]);
		PT_CHECKF(found, "a workload cannot name the engine's %s", scale_op_names[e]);
	}
	for (int p = 0; p < HW_N_PATTERNS; p++)
		PT_CHECKF(!strcmp(hw_pattern_names[p], scale_pattern_names[p]), "pattern %d: %s vs %s", p,
		          hw_pattern_names[p], scale_pattern_names[p]);
}

/* The engine's extra cells (not in the default list) run when a workload names them. */
PT_TEST(extra_operations)
{
	static const char *const sets[] = {
	    "scale.operations",
	    "[\"build\", \"full_scan_warm\", \"get_cold_start\", \"put_nosync\", \"count\"]",
	    "scale.patterns", "[\"append\"]", NULL};
	trun t;
	bench_csv tab = {0};
	char err[H_ERR];
	PT_REQUIRE(trun_open(&t, "mem", sets) == 0);
	PT_CHECK(t.run.cells_total == 5);
	PT_CHECKF(hsc_run(&t.run, err, sizeof(err)) == 0, "hsc_run: %s", err);
	if (read_raw(&tab, &t) == 0) {
		PT_CHECKF(tab.nrows == 5, "%zu rows", tab.nrows);
		PT_CHECK(find(&tab, "s2000-count") >= 0);
		PT_CHECK(find(&tab, "s2000-build") >= 0);
		PT_CHECK(find(&tab, "s2000-full_scan_warm") >= 0);
		PT_CHECK(find(&tab, "s2000-get_cold_start") >= 0);
		PT_CHECK(find(&tab, "s2000-put_nosync-append") >= 0);
		for (size_t r = 0; r < tab.nrows; r++)
			PT_CHECKF(num(&tab, r, "validated") == 1, "%s: %s", get(&tab, r, "cell_id"),
			          get(&tab, r, "note"));
	}
	bench_csv_free(&tab);
	trun_close(&t);
}

/* sync and proof, beside the full_scan the clone compares with: one row per part (and on
 * PostgreSQL the plain table's full_scan), then the resume skips them all. */
static void history_on(const char *store)
{
	static const char *const sets[] = {"scale.operations", "[\"full_scan\", \"sync\", \"proof\"]",
	                                   "scale.runs", "2", NULL};
	static const char *const parts[] = {"sync-clone",        "sync-push",
	                                    "proof-prove_key",   "proof-verify_key",
	                                    "proof-prove_range", "proof-verify_range"};
	trun t;
	bench_csv tab = {0};
	char err[H_ERR], id[64];
	unsigned measured = 0, skipped = 0, rows = strcmp(store, "postgres") ? 7 : 8;
	PT_REQUIRE(trun_open(&t, store, sets) == 0);
	PT_CHECKF(hsc_run(&t.run, err, sizeof(err)) == 0, "hsc_run: %s", err);
	if (read_raw(&tab, &t) == 0) {
		PT_CHECKF(tab.nrows == rows, "%zu rows", tab.nrows);
		for (size_t r = 0; r < tab.nrows; r++)
			PT_CHECKF(num(&tab, r, "validated") == 1 && num(&tab, r, "runs") == 2, "%s: %s",
			          get(&tab, r, "cell_id"), get(&tab, r, "note"));
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			snprintf(id, sizeof(id), "s2000-%s", parts[i]);
			long r = find(&tab, id);
			PT_CHECKF(r >= 0, "no row %s", id);
			if (r < 0)
				continue;
			const char *note = get(&tab, (size_t)r, "note");
			int sync = i < 2, verify = i == 3 || i == 5;
			PT_CHECKF(!strcmp(get(&tab, (size_t)r, "pattern"), strchr(parts[i], '-') + 1), "%s",
			          id);
			if (sync) { /* nodes copied, both stores' calls, the copy in the note */
				PT_CHECKF(num(&tab, (size_t)r, "nodes_written") > 0 &&
				              num(&tab, (size_t)r, "store_round_trips") > 0 &&
				              strstr(note, "nodes and 1 commits copied"),
				          "%s: %s", id, note);
				PT_CHECKF(num(&tab, (size_t)r, "ops") == (i == 0 ? 2000 : 50), "%s: %g ops", id,
				          num(&tab, (size_t)r, "ops"));
			} else { /* 50 read samples: 50 key proofs, 5 range proofs */
				PT_CHECKF(strstr(note, "proof bytes: median"), "%s: %s", id, note);
				PT_CHECKF(num(&tab, (size_t)r, "ops") == (i < 4 ? 50 : 5), "%s: %g ops", id,
				          num(&tab, (size_t)r, "ops"));
				PT_CHECKF(num(&tab, (size_t)r, "samples") == (i < 4 ? 50 : 5), "%s", id);
				if (verify) /* hashing alone: no store */
					PT_CHECKF(num(&tab, (size_t)r, "store_round_trips") == 0, "%s", id);
			}
		}
		long c = find(&tab, "s2000-sync-clone");
		if (c >= 0) /* compared with the full scan of the same run */
			PT_CHECKF(strstr(get(&tab, (size_t)c, "note"), "x the full_scan"), "%s",
			          get(&tab, (size_t)c, "note"));
	}
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == rows && skipped == 0, "measured %u skipped %u", measured, skipped);
	if (trun_reopen(&t) == 0) {
		PT_CHECKF(hsc_run(&t.run, err, sizeof(err)) == 0, "hsc_run again: %s", err);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECKF(measured == 0 && skipped == rows, "again: measured %u skipped %u", measured,
		          skipped);
	}
	bench_csv_free(&tab);
	trun_close(&t);
}

PT_TEST(history_mem)
{
	history_on("mem");
}

PT_TEST(history_lmdb)
{
	history_on("lmdb");
}

PT_TEST(history_postgres)
{
	PT_REQUIRE(pg_ok);
	history_on("postgres");
}

/* A run of another node size: every store it makes has it (the fixture, the sync's LMDB
 * destinations, which a sync of another size would refuse), and the extension's commits equal
 * the C client's (a wrapper that lost the size once made the client's trees 4 KiB there). */
PT_TEST(node_size_postgres)
{
	static const char *const sets[] = {"node_size",
	                                   "1024",
	                                   "scale.operations",
	                                   "[\"full_scan\", \"sync\", \"batch\", \"put\"]",
	                                   "scale.runs",
	                                   "1",
	                                   NULL};
	trun t;
	bench_csv tab = {0};
	char err[H_ERR];
	PT_REQUIRE(pg_ok);
	PT_REQUIRE(trun_open(&t, "postgres", sets) == 0);
	PT_CHECK(t.run.w->node_size == 1024);
	PT_CHECKF(hsc_run(&t.run, err, sizeof(err)) == 0, "hsc_run: %s", err);
	if (read_raw(&tab, &t) == 0) {
		PT_CHECKF(find(&tab, "s2000-sync-clone") >= 0, "no sync row");
		PT_CHECKF(find(&tab, "s2000-pg-sql-batch-random") >= 0, "no sql batch row");
		for (size_t r = 0; r < tab.nrows; r++)
			PT_CHECKF(num(&tab, r, "validated") == 1, "%s: %s", get(&tab, r, "cell_id"),
			          get(&tab, r, "note"));
	}
	bench_csv_free(&tab);
	trun_close(&t);
}

PT_TEST(suite_mem)
{
	suite_on("mem");
}

PT_TEST(suite_lmdb)
{
	suite_on("lmdb");
}

PT_TEST(suite_postgres)
{
	PT_REQUIRE(pg_ok);
	suite_on("postgres");
}

PT_TEST(disk_guard)
{
	static const char *const sets[] = {"scale.min_free_gb", "1000000", NULL};
	trun t;
	char err[H_ERR];
	unsigned measured = 9, skipped = 9;
	PT_REQUIRE(trun_open(&t, "mem", sets) == 0);
	PT_CHECK(hsc_run(&t.run, err, sizeof(err)) == -1);
	PT_CHECKF(strstr(err, "refused") && strstr(err, "2000"), "err: %s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECK(measured == 0 && skipped == 0);
	trun_close(&t);
}

/* ---- the engine on its own ------------------------------------------------------------------- */

typedef struct hook_log {
	unsigned before, after, invalid, skip_calls;
	int skip_all, skip_plain;
	scale_rows rows;
} hook_log;

static int log_skip(void *payload, uint64_t size, const char *store, const char *op,
                    const char *pattern)
{
	hook_log *l = payload;
	(void)size, (void)op, (void)pattern;
	l->skip_calls++;
	return l->skip_all || (l->skip_plain && !strcmp(store, SCALE_PLAIN_STORE));
}

static void log_before(void *payload, uint64_t size, const char *store, const char *op,
                       const char *pattern)
{
	hook_log *l = payload;
	(void)size, (void)store, (void)op, (void)pattern;
	l->before++;
}

static int log_after(void *payload, const scale_row *r)
{
	hook_log *l = payload;
	l->after++;
	if (!r->valid) {
		l->invalid++;
		fprintf(stderr, "  invalid: %s %s %s: %s\n", r->store, r->op, r->pattern, r->note);
	}
	return 0;
}

static void engine_config(scale_config *cfg, int store, const char *dir)
{
	scale_config_init(cfg);
	cfg->sizes[0] = 700;
	cfg->n_sizes = 1;
	cfg->stores = 1u << store;
	cfg->ops = (1u << SCALE_N_OPS) - 1;
	cfg->runs = 1;
	cfg->changes = 30;
	cfg->reads = 40;
	cfg->puts = 5;
	cfg->concurrency = 3;
	cfg->dir = dir;
	cfg->no_fork = 1;
	cfg->quiet = 1;
	cfg->op_latency = 1;
}

PT_TEST(engine_value_sizes)
{
	static const uint32_t sizes[] = {1, 2, 3, 100, 5000};
	char err[256];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		scale_config cfg;
		hook_log l;
		memset(&l, 0, sizeof(l));
		engine_config(&cfg, SCALE_STORE_MEM, "/tmp");
		cfg.value_bytes = sizes[i];
		scale_hooks h = {&l, log_skip, log_before, log_after};
		PT_CHECKF(scale_run(&l.rows, &cfg, &h, err, sizeof(err)) == 0, "%s", err);
		/* 10 read cells (build included) + 2 sync and 4 proof parts + 5 edit ops x 5 patterns */
		PT_CHECKF(l.rows.n == 10 + 6 + 25 && l.after == l.rows.n && l.before == l.rows.n,
		          "value_bytes %u: %zu rows", sizes[i], l.rows.n);
		PT_CHECKF(l.invalid == 0, "value_bytes %u: %u invalid rows", sizes[i], l.invalid);
		const scale_row *b = scale_rows_find(&l.rows, 700, "mem", "build", "-");
		PT_CHECK(b && b->ops == 700 && b->lat_samples == 0);
		const scale_row *c = scale_rows_find(&l.rows, 700, "mem", "concurrent_query", "-");
		PT_CHECK(c && c->ops == 120 && c->lat_samples == 3 && c->p99_us > 0);
		const scale_row *g = scale_rows_find(&l.rows, 700, "mem", "get_cold", "-");
		PT_CHECK(g && g->ops == 4 && g->lat_samples == 4); /* reads / 10 */
		const scale_row *n = scale_rows_find(&l.rows, 700, "mem", "count", "-");
		PT_CHECK(n && n->ops == 1 && n->valid);
		const scale_row *cl = scale_rows_find(&l.rows, 700, "mem", "sync", "clone");
		PT_CHECK(cl && cl->ops == 700 && cl->st.nodes_written > 0);
		const scale_row *pu = scale_rows_find(&l.rows, 700, "mem", "sync", "push");
		PT_CHECK(pu && pu->ops == 30 && pu->st.nodes_written > 0);
		const scale_row *vr = scale_rows_find(&l.rows, 700, "mem", "proof", "verify_range");
		PT_CHECK(vr && vr->ops == 4 && vr->lat_samples == 4); /* reads / 10 */
		scale_rows_free(&l.rows);
	}
}

PT_TEST(engine_skip_everything)
{
	scale_config cfg;
	hook_log l;
	char err[256];
	memset(&l, 0, sizeof(l));
	l.skip_all = 1;
	engine_config(&cfg, SCALE_STORE_MEM, "/tmp");
	scale_hooks h = {&l, log_skip, log_before, log_after};
	PT_CHECKF(scale_run(&l.rows, &cfg, &h, err, sizeof(err)) == 0, "%s", err);
	PT_CHECK(l.rows.n == 0 && l.before == 0 && l.after == 0 && l.skip_calls == 41);
	scale_rows_free(&l.rows);

	/* A bad configuration is refused with a message. */
	engine_config(&cfg, SCALE_STORE_MEM, "/tmp");
	cfg.value_bytes = 0;
	PT_CHECK(scale_run(NULL, &cfg, NULL, err, sizeof(err)) == -1 && strstr(err, "value_bytes"));
}

/* Plain cells skipped (done) while the pg cells are not: no plain rows, vs_plain still set. */
PT_TEST(engine_plain_measured_for_comparison)
{
	PT_REQUIRE(pg_ok);
	scale_config cfg;
	hook_log l;
	char err[256], schema[64];
	memset(&l, 0, sizeof(l));
	l.skip_plain = 1;
	engine_config(&cfg, SCALE_STORE_PG, "/tmp");
	cfg.ops = 1u << SCALE_OP_GET_COLD_START | 1u << SCALE_OP_BATCH | 1u << SCALE_OP_DIFF;
	cfg.patterns = 1u << SCALE_PAT_RANDOM;
	snprintf(cfg.pg_url, sizeof(cfg.pg_url), "%s", getenv("PROLLY_PG_URL"));
	tm_pg_schema_name(schema, "hsce");
	snprintf(cfg.pg_schema, sizeof(cfg.pg_schema), "%s", schema);
	scale_hooks h = {&l, log_skip, log_before, log_after};
	PT_CHECKF(scale_run(&l.rows, &cfg, &h, err, sizeof(err)) == 0, "%s", err);
	/* The extension's batch and diff (when it is installed) beside the three pg rows. */
	size_t sql = 0;
	for (size_t i = 0; i < l.rows.n; i++)
		sql += !strcmp(l.rows.rows[i].store, SCALE_SQL_STORE);
	PT_CHECKF(sql == 2 || (sql == 0 && !ci()), "%zu pg-sql rows", sql);
	PT_CHECKF(l.rows.n == 3 + sql && l.invalid == 0, "%zu rows, %u invalid", l.rows.n, l.invalid);
	for (size_t i = 0; i < l.rows.n; i++) {
		const scale_row *r = &l.rows.rows[i];
		PT_CHECKF(strcmp(r->store, SCALE_PLAIN_STORE) != 0, "a plain row: %s", r->op);
		if (strcmp(r->op, "diff") != 0)
			PT_CHECKF(r->vs_plain > 0, "%s %s: no vs_plain", r->store, r->op);
		PT_CHECKF(r->pg.statements > 0 || !strcmp(r->op, "diff"), "%s", r->op);
	}
	scale_rows_free(&l.rows);
	tm_pg_schema_drop(schema);
	char plain[96];
	snprintf(plain, sizeof(plain), "%s_plain", schema);
	tm_pg_schema_drop(plain);
}

/* The count cell on pg: the C client's ranks, the plain count(*) and the extension's
 * prolly_count over the same range, each validated against the range's record count. */
PT_TEST(engine_count)
{
	PT_REQUIRE(pg_ok);
	scale_config cfg;
	hook_log l;
	char err[256], schema[64];
	memset(&l, 0, sizeof(l));
	engine_config(&cfg, SCALE_STORE_PG, "/tmp");
	cfg.ops = 1u << SCALE_OP_COUNT;
	snprintf(cfg.pg_url, sizeof(cfg.pg_url), "%s", getenv("PROLLY_PG_URL"));
	tm_pg_schema_name(schema, "hscn");
	snprintf(cfg.pg_schema, sizeof(cfg.pg_schema), "%s", schema);
	scale_hooks h = {&l, log_skip, log_before, log_after};
	PT_CHECKF(scale_run(&l.rows, &cfg, &h, err, sizeof(err)) == 0, "%s", err);
	const scale_row *c = scale_rows_find(&l.rows, 700, "pg", "count", "-");
	const scale_row *p = scale_rows_find(&l.rows, 700, SCALE_PLAIN_STORE, "count", "-");
	const scale_row *s = scale_rows_find(&l.rows, 700, SCALE_SQL_STORE, "count", "-");
	PT_CHECK(c && c->ops == 1 && c->valid && c->vs_plain > 0);
	PT_CHECK(p && p->ops == 1 && p->valid);
	PT_CHECKF((s && s->ops == 1 && s->valid && s->vs_plain > 0) || (!s && !ci()),
	          "the pg-sql count row");
	PT_CHECKF(l.invalid == 0, "%u invalid rows", l.invalid);
	scale_rows_free(&l.rows);
	tm_pg_schema_drop(schema);
	char plain[96];
	snprintf(plain, sizeof(plain), "%s_plain", schema);
	tm_pg_schema_drop(plain);
}

int main(int argc, char **argv)
{
	pg_ok = tm_pg_guard() == 0; /* a missing server fails the PostgreSQL tests */
	return pt_run(argc, argv);
}
