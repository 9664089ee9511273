/*
 * test_harness_sysbench.c - the harness's sysbench suite (bench/suites/sysbench*.c):
 *
 *   - hsb_columns carries every PostgreSQL counter column of hp_columns;
 *   - [sysbench]: the defaults (off; clients [1, 4]; range lengths 10, 100, 1000, 10000; every
 *     microbenchmark and contender), the cell count, refused keys (an unknown key, a range
 *     longer than 32000, an unknown microbenchmark or contender), and refused combinations (a
 *     range or in-list longer than the table, too many clients for it, prefix sums past 1 GiB),
 *     all refused with the workload;
 *   - another store than PostgreSQL: the suite says so and measures nothing;
 *   - a tiny run on PostgreSQL (2 tables of 300 rows, clients [1, 2], every microbenchmark,
 *     plain and client, and sql when the prolly extension is installed; under CI=true it must
 *     be): one row per cell, every row validated and with QPS, latency and CPU figures, writes
 *     re-read, lost races only as retries; the report section and its charts; a second run into
 *     the same directory measures nothing (resume).
 *
 * Re-run one test: build/tests/test_harness_sysbench NAME.
 */
#include "../bench/harness/harness.h"
#include "../bench/suites/sysbench_int.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "pgconn.h"
#include "ptest.h"

#include <inttypes.h>
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
                                "[sysbench]\n"
                                "enabled = true\n"
                                "tables = 2\n"
                                "table_size = 300\n"
                                "load_batch = 100\n"
                                "clients = [1, 2]\n"
                                "warmup_ms = 20\n"
                                "duration_ms = 120\n"
                                "range_lengths = [10, 100]\n"
                                "inlist_sizes = [10]\n"
                                "oltp_range_size = 10\n";

typedef th_run trun;

static int trun_open(trun *t, const char *store, const char *const *sets)
{
	return th_run_open(t, "sb", store, base_toml, sets) ? -1 : th_run_results(t, &hsb_suite);
}

PT_TEST(columns)
{
	for (size_t i = 0; hp_columns[i]; i++) {
		int found = 0;
		for (size_t j = 0; hsb_columns[j]; j++)
			found |= !strcmp(hp_columns[i], hsb_columns[j]);
		PT_CHECKF(found, "hsb_columns lacks %s", hp_columns[i]);
	}
}

PT_TEST(defaults)
{
	static const char toml[] = "schema = 1\n[sysbench]\ntables = 1\n";
	char *tmp = tm_tmpdir("sbd"), path[4200];
	hw_workload w;
	memset(&w, 0, sizeof(w));
	snprintf(path, sizeof(path), "%s/w.toml", tmp);
	PT_CHECK(th_workload(&w, path, toml, NULL) == 0);
	const sb_config *c = hw_section(&w, &hsb_suite);
	PT_CHECK(c != NULL);
	if (c) {
		PT_CHECK(c->enabled == 0);
		PT_CHECK(hsb_cells(&w) == 0);
		PT_CHECK(c->clients.n == 2 && c->clients.v[0] == 1 && c->clients.v[1] == 4);
		PT_CHECK(c->range_lengths.n == 4 && c->range_lengths.v[3] == 10000);
		PT_CHECK(c->inlist_sizes.n == 2 && c->inlist_sizes.v[1] == 100);
		PT_CHECK(c->microbenchmarks == (1u << SB_N_BENCHES) - 1);
		PT_CHECK(c->contenders == (1u << BT_N_CONTENDERS) - 1);
	}
	hw_workload_free(&w);
	memset(&w, 0, sizeof(w));
	static const char *const on[] = {"sysbench.enabled", "true", NULL};
	PT_CHECK(th_workload(&w, path, toml, on) == 0);
	/* 1 + 2 in-lists + 3 x 4 range lengths + 6 = 21 microbenchmarks x 2 clients x 3 */
	PT_CHECKF(hsb_cells(&w) == 126, "%u cells", hsb_cells(&w));
	hw_workload_free(&w);
	tm_rmtree(tmp);
	free(tmp);
}

/* A workload whose text is refused, with want in the error. */
static void refused_text(const char *text, const char *want)
{
	char *tmp = tm_tmpdir("sbr"), path[4200];
	hw_workload w;
	toml_error te;
	FILE *f;
	memset(&w, 0, sizeof(w));
	snprintf(path, sizeof(path), "%s/w.toml", tmp);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	int rc = hw_workload_load(&w, path, &te);
	if (rc == 0)
		rc = hw_workload_resolve(&w, &te);
	PT_CHECKF(rc != 0, "accepted:\n%s", text);
	if (rc)
		PT_CHECKF(strstr(te.text, want) != NULL, "%s: %s", text, te.text);
	hw_workload_free(&w);
	tm_rmtree(tmp);
	free(tmp);
}

/* A bad [sysbench] key is refused, naming it. */
static void refused(const char *key, const char *value, const char *want)
{
	char text[512];
	snprintf(text, sizeof(text), "schema = 1\n[sysbench]\nenabled = true\n%s = %s\n", key, value);
	refused_text(text, want);
}

PT_TEST(bad_keys)
{
	refused("range_lengths", "[10, 40000]", "range_lengths");
	refused("microbenchmarks", "[\"point-query\", \"range-max\"]", "range-max");
	refused("contenders", "[\"mysql\"]", "mysql");
	refused("tablez", "2", "tables");
	refused("clients", "[0]", "clients");
}

/* What the keys ask for together is refused with the workload, naming file, line and key, so a
 * --dry-run refuses it: a range longer than the table, or more clients than the table has ids
 * for, used to be refused only by the run, after the suites before it had run; and the tables'
 * prefix sums (8 bytes a row, in memory) could ask for up to 512 GB. A disabled suite's
 * section is not held to it. */
PT_TEST(range_longer_than_table)
{
	refused_text("schema = 1\n[sysbench]\nenabled = true\ntable_size = 300\n"
	             "range_lengths = [1000]\n",
	             "w.toml:5:1: sysbench.range_lengths: a range or in-list of 1000 ids does not fit "
	             "in table_size = 300");
	refused_text("schema = 1\n[sysbench]\nenabled = true\ntable_size = 300\n"
	             "range_lengths = [10]\ninlist_sizes = [10, 400]\n",
	             "w.toml:6:1: sysbench.inlist_sizes: a range or in-list of 400 ids");
	refused_text("schema = 1\n[sysbench]\nenabled = true\ntable_size = 100\n"
	             "range_lengths = [10]\ninlist_sizes = [10]\nclients = [1, 40]\n",
	             "w.toml:7:1: sysbench.clients: 40 clients need table_size >= 120");
	refused_text("schema = 1\n[sysbench]\nenabled = true\ntables = 64\ntable_size = 100000000\n",
	             "w.toml:5:1: sysbench.table_size: 64 tables of 100000000 rows need 48828 MiB "
	             "of prefix sums (8 bytes a row; at most 1024 MiB)");
	hw_workload w;
	toml_error te;
	memset(&w, 0, sizeof(w));
	PT_CHECKF(hw_workload_set(&w, "sysbench.table_size", "10", NULL, &te) == 0 &&
	              hw_workload_resolve(&w, &te) == 0,
	          "a disabled suite: %s", te.text);
	hw_workload_free(&w);
}

PT_TEST(other_store_skips)
{
	trun t;
	char err[H_ERR] = "", path[4300];
	if (trun_open(&t, "mem", NULL) == 0) {
		PT_CHECKF(hsb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
		snprintf(path, sizeof(path), "%s/sysbench-raw.csv", t.out);
		PT_CHECK(access(path, F_OK) != 0);
	} else {
		PT_CHECK(0);
	}
	th_run_close(&t);
}

static double num(const bench_csv *tab, size_t r, const char *col)
{
	return bench_csv_num(tab, r, col);
}

PT_TEST(postgres_flow)
{
	static const char *const no_sql[] = {"sysbench.contenders", "[\"plain\", \"client\"]", NULL};
	const char *ci = getenv("CI");
	int sql = th_have_extension();
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	unsigned measured, skipped;
	memset(&tab, 0, sizeof(tab));
	PT_CHECKF(sql || !(ci && !strcmp(ci, "true")),
	          "the prolly extension is not installed in the server (make -C ext/postgres install)");
	if (!sql)
		printf("# the prolly extension is not installed: plain and client only\n");
	if (trun_open(&t, "postgres", sql ? NULL : no_sql) != 0) {
		PT_CHECK(0);
		th_run_close(&t);
		return;
	}
	unsigned cells = hsb_cells(&t.w), ncont = sql ? 3 : 2;
	/* 1 + 1 in-list + 3 x 2 range lengths + 6 = 14 microbenchmarks x 2 clients */
	PT_CHECKF(cells == 14 * 2 * ncont, "%u cells", cells);
	PT_CHECKF(hsb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == cells && skipped == 0, "measured %u skipped %u", measured, skipped);
	if (th_read_csv(&tab, t.out, "sysbench-raw.csv") == 0) {
		PT_CHECKF(tab.nrows == cells, "%zu rows", tab.nrows);
		for (size_t r = 0; r < tab.nrows; r++) {
			const char *id = bench_csv_get(&tab, r, "cell_id");
			const char *b = bench_csv_get(&tab, r, "microbenchmark");
			PT_CHECKF(num(&tab, r, "validated") == 1, "%s: not validated: %s", id,
			          bench_csv_get(&tab, r, "first_error"));
			PT_CHECKF(num(&tab, r, "errors") == 0, "%s: %s", id,
			          bench_csv_get(&tab, r, "first_error"));
			PT_CHECKF(num(&tab, r, "qps") > 0 && num(&tab, r, "events") > 0, "%s", id);
			PT_CHECKF(num(&tab, r, "qps") ==
			                  num(&tab, r, "tps") * num(&tab, r, "queries_per_event") ||
			              fabs(num(&tab, r, "qps") / num(&tab, r, "tps") -
			                   num(&tab, r, "queries_per_event")) < 1e-6,
			          "%s", id);
			PT_CHECKF(num(&tab, r, "p95_ms") > 0 &&
			              num(&tab, r, "p95_ms") <= num(&tab, r, "max_ms"),
			          "%s", id);
			PT_CHECKF(num(&tab, r, "client_cpu_us_per_query") > 0, "%s", id);
			PT_CHECKF(num(&tab, r, "server_cpu_us_per_query") >= 0, "%s: server cpu %s", id,
			          bench_csv_get(&tab, r, "server_cpu_us_per_query"));
			PT_CHECKF(num(&tab, r, "server_cs_per_query") >= 0, "%s", id);
			PT_CHECKF(num(&tab, r, "pg_calls") > 0, "%s", id);
			/* reads check every event; writes are checked by re-reading after the cell */
			if (!strncmp(b, "update", 6) || !strcmp(b, "delete-insert"))
				PT_CHECKF(num(&tab, r, "checked") > 0, "%s", id);
			else
				PT_CHECKF(num(&tab, r, "checked") >= num(&tab, r, "events"), "%s", id);
			if (!strcmp(b, "read-write") || !strcmp(b, "read-only"))
				PT_CHECKF(num(&tab, r, "queries_per_event") == (b[5] == 'w' ? 18 : 14), "%s", id);
			if (!strcmp(b, "update-one") && num(&tab, r, "clients") == 2 &&
			    !strcmp(bench_csv_get(&tab, r, "contender"), "client"))
				printf("# update-one, 2 clients, client: %s retries\n",
				       bench_csv_get(&tab, r, "retries"));
		}
		PT_CHECK(!strcmp(bench_csv_get(&tab, 0, "cell_id"), "point-query-c1-plain"));
		PT_CHECK(!strcmp(bench_csv_get(&tab, 1, "cell_id"), "point-query-c1-client"));
	}
	/* The summary (the runner writes it) and the report section: one table and one chart per
	 * group, and a note that there is no relative QPS without a baseline. */
	PT_CHECKF(hr_write_summary(t.d, &hsb_suite, err, sizeof(err)) == 0, "%s", err);
	char *md = NULL;
	size_t mdn = 0;
	FILE *f = open_memstream(&md, &mdn);
	PT_CHECKF(hsb_report(f, t.out, err, sizeof(err)) == 0, "%s", err);
	fclose(f);
	PT_CHECK(md && strstr(md, "## sysbench") && strstr(md, "| range 10 | 1 |") &&
	         strstr(md, "sysbench-cost-write.svg"));
	free(md);
	char svg[4400];
	snprintf(svg, sizeof(svg), "%s/sysbench-cost-range-agg.svg", t.out);
	PT_CHECK(access(svg, F_OK) == 0);
	/* Resume: everything is on disk. */
	if (th_run_results(&t, &hsb_suite) == 0) {
		PT_CHECKF(hsb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECKF(measured == 0 && skipped == cells, "measured %u skipped %u", measured, skipped);
	} else {
		PT_CHECK(0);
	}
	bench_csv_free(&tab);
	th_run_close(&t);
}

/* Rows as the suite loads them (sb_gen_row). */
typedef struct gen_ctx {
	const sb_data *d;
	char c[SB_C_LEN + 1], pad[SB_PAD_LEN + 1];
} gen_ctx;

static int gen_row(void *payload, uint64_t i, bt_row *row)
{
	gen_ctx *g = payload;
	sb_gen_row(g->d, 0, (int64_t)i + 1, row, g->c, g->pad);
	return 0;
}

/* Replaces row id of table 0: c by text (when not NULL), k by k + dk. */
static int tamper(bt_session *s, const sb_data *d, int64_t id, const char *text, int64_t dk)
{
	bt_row old, nw;
	char c[SB_C_LEN + 1], pad[SB_PAD_LEN + 1];
	int found = 0;
	if (bt_get(s, d->tptr[0], id, &old, &found) || !found)
		return -1;
	memcpy(c, old.text[2], old.text_len[2]);
	memcpy(pad, old.text[3], old.text_len[3]);
	old.text[2] = c;
	old.text[3] = pad;
	nw = old;
	nw.ints[1] += dk;
	if (text) {
		nw.text[2] = text;
		nw.text_len[2] = (uint16_t)strlen(text);
	}
	if (bt_begin(s) || bt_update(s, d->tptr[0], &old, &nw))
		return -1;
	return bt_commit(s);
}

/*
 * The checks after a write cell are not a formality: update-nonindex events run by hand on the
 * plain contender pass them; a row whose c was changed behind the writers' log, or a k changed
 * outside the committed deltas, fails them, naming the row or the table.
 */
PT_TEST(write_checks_catch_tampering)
{
	sb_config cfg;
	sb_data d;
	sb_cell c;
	sb_worker w;
	gen_ctx g;
	bt_db *db = NULL;
	bt_session *chk = NULL;
	char schema[64], err[H_ERR] = "", msg[256] = "", forged[SB_C_LEN + 1];
	int64_t before[SB_MAX_TABLES];
	uint64_t failed = 0, checks;
	memset(&cfg, 0, sizeof(cfg));
	memset(&d, 0, sizeof(d));
	memset(&c, 0, sizeof(c));
	memset(&w, 0, sizeof(w));
	cfg.tables = 1;
	cfg.table_size = 40;
	cfg.max_retries = 3;
	tm_pg_schema_name(schema, "sbw");
	if (sb_data_init(&d, &cfg, 5) ||
	    bt_db_open(&db, BT_PLAIN, getenv("PROLLY_PG_URL"), schema, "sysbench", d.tptr, 1, 1, 0, err,
	               sizeof(err)) ||
	    bt_session_open(&w.s, db, err, sizeof(err)) ||
	    bt_session_open(&chk, db, err, sizeof(err))) {
		PT_CHECKF(0, "%s", err);
		goto cleanup;
	}
	g.d = &d;
	if (bt_load(chk, d.tptr[0], 40, 40, gen_row, &g) || bt_create_index(chk, d.tptr[0], 1) ||
	    sb_table_sums(chk, &d, before, err, sizeof(err))) {
		PT_CHECKF(0, "loading: %s %s", err, bt_session_error(chk));
		goto cleanup;
	}
	PT_CHECK(before[0] == d.prefix[0][40]);
	c.d = &d;
	c.db = db;
	c.bench = SB_UPDATE_NONINDEX;
	c.clients = 1;
	c.index = 9;
	c.workers = &w;
	w.cell = &c;
	bench_rng_seed(&w.rng, 1);
	for (int i = 0; i < 30; i++) {
		sb_ev e;
		memset(&e, 0, sizeof(e));
		sb_event(&w, &e);
		PT_CHECKF(e.rc == 0 && !e.bad, "event %d: %s", i, e.msg);
	}
	PT_CHECK(w.nlog == 30);
	checks = sb_check_writes(chk, &c, before, &failed, msg, sizeof(msg));
	PT_CHECKF(failed == 0 && checks > 30, "%" PRIu64 " of %" PRIu64 " failed: %s", failed, checks,
	          msg);

	/* c of the last written row names a commit that is not that row's last */
	int64_t id = w.log[w.nlog - 1].id;
	snprintf(forged, sizeof(forged), "w9.0.1.forged");
	PT_CHECK(tamper(chk, &d, id, w.log[w.nlog - 1].seq == 1 ? "w9.0.999.x" : forged, 0) == 0);
	checks = sb_check_writes(chk, &c, before, &failed, msg, sizeof(msg));
	PT_CHECKF(failed > 0 && strstr(msg, "not the last commit"), "%" PRIu64 ": %s", failed, msg);

	/* put c back as logged, then move a k behind the log's back: the sum and that row's k */
	snprintf(forged, sizeof(forged), "w9.0.%" PRIu64 ".", w.log[w.nlog - 1].seq);
	PT_CHECK(tamper(chk, &d, id, forged, 0) == 0);
	checks = sb_check_writes(chk, &c, before, &failed, msg, sizeof(msg));
	PT_CHECKF(failed == 0, "%s", msg);
	PT_CHECK(tamper(chk, &d, id, NULL, 7) == 0);
	checks = sb_check_writes(chk, &c, before, &failed, msg, sizeof(msg));
	PT_CHECKF(failed >= 2 && strstr(msg, "its last commit wrote"), "%" PRIu64 ": %s", failed, msg);
	(void)checks;
cleanup:
	free(w.log);
	free(w.pend);
	bt_session_close(w.s);
	bt_session_close(chk);
	bt_db_close(db);
	sb_data_dispose(&d);
	tm_pg_schema_drop(schema);
}

TH_PG_MAIN()
