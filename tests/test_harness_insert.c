/*
 * test_harness_insert.c - the harness's insert suite (bench/suites/insert*.c):
 *
 *   - the row generator: a pure function of (seed, key), in the documented domains;
 *   - the column list carries every PostgreSQL counter column of hp_columns;
 *   - the [insert] section: defaults (ten steps, three contenders: 30 cells), writer_rates
 *     making the q steps, bad keys and values refused naming the key;
 *   - a store other than PostgreSQL: the suite says so and runs nothing;
 *   - a tiny run on a throwaway cluster (two clients, one writer rate): one validated row per
 *     (step, contender), the counts each step must leave (rows inserted, deleted, indexes,
 *     queries, rows found), per-second series, CPU and WAL per operation, sizes; then a second
 *     invocation into the same directory measures nothing (resume), and the report section with
 *     its charts. The sql contender needs the prolly extension installed in the server: without
 *     it (and not under CI=true) the run leaves sql out, with a note.
 *
 * Re-run one test: build/tests/test_harness_insert NAME.
 */
#include "../bench/harness/harness.h"
#include "../bench/suites/insert_int.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "pgconn.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char base_toml[] = "schema = 1\n"
                                "seed = 11\n"
                                "[service]\n"
                                "enabled = false\n"
                                "[scale]\n"
                                "enabled = false\n"
                                "[insert]\n"
                                "enabled = true\n"
                                "rows = 3000\n"
                                "rows_per_commit = 250\n"
                                "l1_rows = 300\n"
                                "l1_rows_per_commit = 50\n"
                                "l2_rows = 40\n"
                                "l2_rows_per_commit = 5\n"
                                "query_seconds = 1\n"
                                "writer_rates = [100]\n"
                                "writer_rows_per_commit = 10\n"
                                "range_rows = 10\n"
                                "clients = 2\n"
                                "data_bytes = 16\n";

typedef th_run trun;

static int trun_open(trun *t, const char *store, const char *const *sets)
{
	return th_run_open(t, "ins", store, base_toml, sets) ? -1 : th_run_results(t, &hins_suite);
}

/* th_run_close, after the schemas of the contenders. */
static void trun_close(trun *t)
{
	if (t->schema[0]) {
		char s[64];
		for (int k = 0; k < BT_N_CONTENDERS; k++) {
			hins_schema(s, sizeof(s), &t->run, (bt_kind)k);
			tm_pg_schema_drop(s);
		}
	}
	th_run_close(t);
}

static const hins_config *cfg_of(const trun *t)
{
	return hw_section(&t->w, &hins_suite);
}

/* ---- tests ----------------------------------------------------------------------------------- */

PT_TEST(rows)
{
	hins_config cfg;
	bt_row a, b;
	char ba[64], bb[64];
	memset(&cfg, 0, sizeof(cfg));
	cfg.data_bytes = 30;
	for (int64_t i = 0; i < 2000; i += 7) {
		hins_row(&a, ba, &cfg, 5, i);
		hins_row(&b, bb, &cfg, 5, i);
		PT_CHECK(a.ints[0] == i && a.ints[1] == HINS_EPOCH_MS + i);
		PT_CHECK(a.ints[2] >= 0 && a.ints[2] < HINS_CASHREGISTERS);
		PT_CHECK(a.ints[3] >= 0 && a.ints[3] < HINS_CUSTOMERS);
		PT_CHECK(a.ints[4] >= 0 && a.ints[4] < HINS_PRODUCTS);
		PT_CHECK(a.ints[5] >= 0 && a.ints[5] < HINS_PRICES);
		PT_CHECK(a.text_len[6] == 30 && !memcmp(a.text[6], b.text[6], 30));
		PT_CHECK(!memcmp(a.ints, b.ints, sizeof(a.ints)));
		hins_row(&b, bb, &cfg, 6, i); /* another client's row */
		PT_CHECK(b.ints[0] == i && memcmp(&a.ints[2], &b.ints[2], 4 * sizeof(int64_t)) != 0);
	}
}

PT_TEST(columns)
{
	for (size_t i = 0; hp_columns[i]; i++) {
		int found = 0;
		for (size_t j = 0; hins_suite.columns[j] && !found; j++)
			found = !strcmp(hp_columns[i], hins_suite.columns[j]);
		PT_CHECKF(found, "%s is not in the insert suite's columns", hp_columns[i]);
	}
	static const char *const need[] = {"cell_id", "cell_rows", "validated", "contender", NULL};
	for (size_t i = 0; need[i]; i++) {
		int found = 0;
		for (size_t j = 0; hins_suite.columns[j] && !found; j++)
			found = !strcmp(need[i], hins_suite.columns[j]);
		PT_CHECKF(found, "%s", need[i]);
	}
}

PT_TEST(section)
{
	static const char *const defaults[] = {"insert.rows",
	                                       "1000000",
	                                       "insert.l1_rows",
	                                       "50000",
	                                       "insert.l2_rows",
	                                       "10000",
	                                       "insert.writer_rates",
	                                       "[100, 500, 1000]",
	                                       "insert.clients",
	                                       "1",
	                                       "insert.query_seconds",
	                                       "15",
	                                       NULL};
	static const char *const bad[][3] = {
	    {"insert.rowz", "10", "insert.rowz"},
	    {"insert.clients", "0", "insert.clients"},
	    {"insert.clients", "65", "insert.clients"},
	    {"insert.contenders", "[\"odbc\"]", "odbc"},
	    {"insert.writer_rates", "[0]", "insert.writer_rates"},
	};
	trun t;
	if (trun_open(&t, "mem", defaults) == 0) {
		const hins_config *c = cfg_of(&t);
		PT_CHECK(c && c->enabled && c->contenders == 7u && c->l1_rows_per_commit == 50 &&
		         c->l2_rows_per_commit == 5 && c->rows == 1000000 && c->l1_rows == 50000 &&
		         c->writer_rates.n == 3 && c->writer_rates.v[2] == 1000);
		PT_CHECKF(hins_suite.cells(&t.w) == 30, "%u cells", hins_suite.cells(&t.w));
	} else {
		PT_CHECK(0);
	}
	trun_close(&t);
	static const char *const two[] = {"insert.contenders", "[\"client\", \"plain\"]", NULL};
	if (trun_open(&t, "mem", two) == 0)
		PT_CHECKF(hins_suite.cells(&t.w) == 12, "%u cells", hins_suite.cells(&t.w));
	else
		PT_CHECK(0);
	trun_close(&t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hw_workload w;
		toml_error te;
		char *tmp = tm_tmpdir("ins"), path[4200];
		memset(&w, 0, sizeof(w));
		snprintf(path, sizeof(path), "%s/w.toml", tmp ? tmp : "/tmp");
		FILE *f = tmp ? fopen(path, "w") : NULL;
		PT_CHECK(f && fputs(base_toml, f) >= 0 && fclose(f) == 0);
		int rc = hw_workload_load(&w, path, &te);
		if (rc == 0)
			rc = hw_workload_set(&w, bad[i][0], bad[i][1], "test", &te);
		if (rc == 0)
			rc = hw_workload_resolve(&w, &te);
		PT_CHECKF(rc != 0, "%s = %s accepted", bad[i][0], bad[i][1]);
		PT_CHECKF(rc == 0 || strstr(te.text, bad[i][2]), "%s", te.text);
		hw_workload_free(&w);
		if (tmp)
			tm_rmtree(tmp);
		free(tmp);
	}
}

PT_TEST(other_store)
{
	trun t;
	char err[H_ERR] = "";
	unsigned measured = 9, skipped = 9;
	if (trun_open(&t, "lmdb", NULL) == 0) {
		PT_CHECK(hins_suite.run(&t.run, err, sizeof(err)) == 0);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECK(measured == 0 && skipped == 0);
		char p[4300];
		snprintf(p, sizeof(p), "%s/insert-raw.csv", t.out);
		PT_CHECK(access(p, F_OK) != 0);
	} else {
		PT_CHECK(0);
	}
	trun_close(&t);
}

static double num(const bench_csv *tab, size_t r, const char *col)
{
	return bench_csv_num(tab, r, col);
}

static void check_row(const bench_csv *tab, size_t r)
{
	const char *step = bench_csv_get(tab, r, "step"), *who = bench_csv_get(tab, r, "contender");
	double clients = 2;
	PT_CHECKF(num(tab, r, "validated") == 1, "%s %s: not validated: %s %s", step, who,
	          bench_csv_get(tab, r, "check"), bench_csv_get(tab, r, "first_error"));
	PT_CHECKF(num(tab, r, "errors") == 0 && num(tab, r, "cell_rows") == 1, "%s %s", step, who);
	PT_CHECK(num(tab, r, "ops_per_s") > 0 && num(tab, r, "p99_ms") > 0 &&
	         num(tab, r, "p99_ms") <= num(tab, r, "max_ms") &&
	         num(tab, r, "p50_ms") <= num(tab, r, "p99_ms"));
	PT_CHECK(bench_csv_get(tab, r, "per_second_ops")[0] && bench_csv_get(tab, r, "hdr")[0]);
	/* The server's CPU comes from /proc in clock ticks (10 ms): a short step of a tiny run may
	 * measure none, so it must be there and not negative; the client's (getrusage) is finer. */
	PT_CHECKF(num(tab, r, "server_cpu_us_per_op") >= 0 && num(tab, r, "client_cpu_us_per_op") > 0,
	          "%s %s: cpu %g %g", step, who, num(tab, r, "server_cpu_us_per_op"),
	          num(tab, r, "client_cpu_us_per_op"));
	PT_CHECKF(num(tab, r, "round_trips_per_op") > 0, "%s %s", step, who);
	if (!strcmp(who, "client") && step[0] == 'l')
		PT_CHECKF(num(tab, r, "nodes_written_per_op") > 0 &&
		              num(tab, r, "node_bytes_written_per_op") >
		                  num(tab, r, "nodes_written_per_op"),
		          "%s %s", step, who);
	PT_CHECKF(num(tab, r, "contender_bytes") > 0 && num(tab, r, "client_rss_mib") > 0, "%s %s",
	          step, who);
	if (!strcmp(step, "l.i0")) {
		PT_CHECK(num(tab, r, "ops") == 3000 * clients && num(tab, r, "inserted") == 3000 * clients);
		PT_CHECK(num(tab, r, "deleted") == 0 && num(tab, r, "samples") == 12 * clients);
	} else if (!strcmp(step, "l.x")) {
		PT_CHECK(num(tab, r, "ops") == 3 * clients && num(tab, r, "samples") == 3 * clients);
	} else if (!strcmp(step, "l.i1") || !strcmp(step, "l.i2")) {
		double n = !strcmp(step, "l.i1") ? 300 : 40;
		PT_CHECK(num(tab, r, "inserted") == n * clients && num(tab, r, "deleted") == n * clients);
		PT_CHECKF(num(tab, r, "wal_bytes_per_op") > 0, "%s %s", step, who);
		PT_CHECK(num(tab, r, "backend_cpu_us_per_op") >= 0); /* clock ticks: may be 0 */
	} else {
		PT_CHECK(num(tab, r, "writer_rate") == 100 && num(tab, r, "writer_ops") > 0);
		PT_CHECK(num(tab, r, "inserted") == num(tab, r, "deleted") &&
		         num(tab, r, "inserted") == num(tab, r, "writer_ops"));
		PT_CHECK(num(tab, r, "writer_target_rows_per_s") == 200);
		PT_CHECK(bench_csv_get(tab, r, "writer_per_second_ops")[0]);
		/* query_seconds = 1: one second in each series, queries that ended just after it too */
		PT_CHECKF(!strchr(bench_csv_get(tab, r, "per_second_ops"), ';') &&
		              num(tab, r, "per_second_ops") == num(tab, r, "ops"),
		          "%s %s: %s for %g queries", step, who, bench_csv_get(tab, r, "per_second_ops"),
		          num(tab, r, "ops"));
		if (step[1] == 'p')
			PT_CHECKF(num(tab, r, "found") == num(tab, r, "ops") && num(tab, r, "missing") == 0,
			          "%s %s: found %g of %g", step, who, num(tab, r, "found"), num(tab, r, "ops"));
		else
			PT_CHECK(num(tab, r, "range_entries") > 0 &&
			         num(tab, r, "range_entries") <= 10 * num(tab, r, "ops"));
	}
}

PT_TEST(postgres_flow)
{
	static const char *const sets_no_sql[] = {"insert.contenders", "[\"plain\", \"client\"]", NULL};
	const char *ci = getenv("CI");
	int sql = th_have_extension();
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	unsigned measured, skipped;
	memset(&tab, 0, sizeof(tab));
	if (!sql) {
		PT_CHECKF(!(ci && !strcmp(ci, "true")), "the prolly extension is not installed in the "
		                                        "server (make -C ext/postgres install)");
		printf("# the prolly extension is not installed: the sql contender is left out\n");
	}
	if (trun_open(&t, "postgres", sql ? NULL : sets_no_sql) != 0) {
		PT_CHECK(0);
		trun_close(&t);
		return;
	}
	size_t ncont = sql ? 3 : 2;
	PT_CHECK(hins_suite.cells(&t.w) == 6 * ncont);
	PT_CHECKF(hins_suite.run(&t.run, err, sizeof(err)) == 0, "%s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == 6 * ncont && skipped == 0, "measured %u skipped %u", measured, skipped);
	if (th_read_csv(&tab, t.out, "insert-raw.csv") == 0) {
		static const char *const steps[] = {"l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100"};
		PT_CHECKF(tab.nrows == 6 * ncont, "%zu rows", tab.nrows);
		for (size_t r = 0; r < tab.nrows && tab.nrows == 6 * ncont; r++) {
			char id[64];
			snprintf(id, sizeof(id), "%s-%s", steps[r / ncont], hins_contender_names[r % ncont]);
			PT_CHECKF(!strcmp(bench_csv_get(&tab, r, "cell_id"), id), "row %zu: %s, want %s", r,
			          bench_csv_get(&tab, r, "cell_id"), id);
			check_row(&tab, r);
		}
	}
	bench_csv_free(&tab);

	/* The summary and the report section with its charts (no baseline: a note). */
	char p[4300];
	PT_CHECKF(hr_write_summary(t.d, &hins_suite, err, sizeof(err)) == 0, "%s", err);
	FILE *f = fopen("/dev/null", "w");
	PT_CHECKF(f && hins_report(f, t.out, err, sizeof(err)) == 0, "%s", err);
	if (f)
		fclose(f);
	snprintf(p, sizeof(p), "%s/insert-qp100.svg", t.out);
	PT_CHECK(access(p, F_OK) == 0);

	/* A second invocation: every cell is done, nothing runs. */
	hr_close(t.d);
	t.d = NULL;
	if (th_run_results(&t, &hins_suite) == 0) {
		PT_CHECKF(hins_suite.run(&t.run, err, sizeof(err)) == 0, "%s", err);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECKF(measured == 0 && skipped == 6 * ncont, "measured %u skipped %u", measured,
		          skipped);
	} else {
		PT_CHECK(0);
	}
	trun_close(&t);
}

TH_PG_MAIN()
