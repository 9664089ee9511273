/*
 * test_harness_tpcb.c - the harness's tpcb suite (bench/suites/tpcb*.c):
 *
 *   - history keys: distinct across cells, clients and sequences;
 *   - the [tpcb] section: defaults (the clients sweep, both modes, three contenders);
 *     an unknown key refused with file, line and key; a mode that does not exist refused;
 *   - a run at scale 1 on the test cluster, clients [1, 2], both modes, contenders plain
 *     (pgbench itself) and client (and sql when the server has the prolly extension; under
 *     CI=true it must), one second per cell: one validated row per cell, equal sums, history
 *     rows = commits, TPS and latencies, WAL per transaction, the report's section and charts;
 *   - resume: a second run measures nothing and skips every cell;
 *   - on a store other than PostgreSQL the suite says so and writes nothing;
 *   - pgbench through a URL with a password (PROLLY_PG_PW_URL), and through that URL without
 *     it and the password in PGPASSFILE: it runs, and no file of the result directory holds the
 *     password.
 *
 * Re-run one test: build/tests/test_harness_tpcb NAME.
 */
#include "../bench/harness/harness.h"
#include "../bench/suites/tpcb_int.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "pgconn.h"
#include "prolly.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char base_toml[] = "schema = 1\n"
                                "seed = 11\n"
                                "[service]\n"
                                "enabled = false\n"
                                "[scale]\n"
                                "enabled = false\n"
                                "[tpcb]\n"
                                "enabled = true\n"
                                "scales = [1]\n"
                                "clients = [1, 2]\n"
                                "warmup_s = 0\n"
                                "duration_s = 1\n";

typedef th_run trun;

static int trun_open(trun *t, const char *store, const char *const *sets)
{
	return th_run_open(t, "tpcb", store, base_toml, sets) ? -1 : th_run_results(t, &htpcb_suite);
}

PT_TEST(history_keys)
{
	PT_CHECK(tpcb_hid(1, 0, 1) != tpcb_hid(2, 0, 1));
	PT_CHECK(tpcb_hid(1, 0, 1) != tpcb_hid(1, 1, 1));
	PT_CHECK(tpcb_hid(1, 0, 1) != tpcb_hid(1, 0, 2));
	PT_CHECK(tpcb_hid(1, 31, 0xffffffffu) < tpcb_hid(2, 0, 1));
	PT_CHECK(tpcb_hid(4000, 255, 1) > 0);
}

PT_TEST(section_defaults_and_refusals)
{
	hw_workload w;
	toml_error te;
	char *tmp = tm_tmpdir("tpcbw");
	char path[4200];
	PT_CHECK(tmp != NULL);
	if (!tmp)
		return;
	snprintf(path, sizeof(path), "%s/w.toml", tmp);
	memset(&w, 0, sizeof(w));
	PT_CHECK(th_workload(&w, path, "schema = 1\n[tpcb]\nenabled = true\n", NULL) == 0);
	const tpcb_cfg *c = hw_section(&w, &htpcb_suite);
	PT_CHECK(c && c->enabled);
	if (c) {
		PT_CHECK(c->clients.n == 6 && c->clients.v[0] == 1 && c->clients.v[5] == 32);
		PT_CHECK(c->scales.n == 2 && c->scales.v[0] < c->scales.v[1]);
		PT_CHECK(c->modes == 3 && c->contenders == 7);
	}
	PT_CHECK(htpcb_cells(&w) == 2 * 2 * 6 * 3);
	hw_workload_free(&w);

	/* an unknown key: file, line and key */
	FILE *f = fopen(path, "w");
	PT_CHECK(f != NULL);
	if (f) {
		fputs("schema = 1\n[tpcb]\nenabled = true\nscale = [1]\n", f);
		fclose(f);
	}
	memset(&w, 0, sizeof(w));
	int rc = hw_workload_load(&w, path, &te);
	if (rc == 0)
		rc = hw_workload_resolve(&w, &te);
	PT_CHECK(rc != 0);
	PT_CHECKF(strstr(te.text, "w.toml:4") && strstr(te.text, "scale"), "%s", te.text);
	hw_workload_free(&w);

	/* a mode that does not exist */
	f = fopen(path, "w");
	if (f) {
		fputs("schema = 1\n[tpcb]\nenabled = true\nmodes = [\"tpcc\"]\n", f);
		fclose(f);
	}
	memset(&w, 0, sizeof(w));
	rc = hw_workload_load(&w, path, &te);
	if (rc == 0)
		rc = hw_workload_resolve(&w, &te);
	PT_CHECK(rc != 0);
	PT_CHECKF(strstr(te.text, "tpcc") && strstr(te.text, "modes"), "%s", te.text);
	hw_workload_free(&w);
	tm_rmtree(tmp);
	free(tmp);
}

PT_TEST(not_postgres)
{
	trun t;
	char err[H_ERR] = "";
	PT_CHECK(trun_open(&t, "mem", NULL) == 0);
	PT_CHECKF(htpcb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	char p[4300];
	snprintf(p, sizeof(p), "%s/tpcb-raw.csv", t.out);
	PT_CHECK(access(p, F_OK) != 0);
	th_run_close(&t);
}

PT_TEST(run_validate_resume)
{
	const char *ci = getenv("CI");
	int sql = th_have_extension();
	if (!sql && ci && !strcmp(ci, "true"))
		PT_CHECKF(0, "the prolly extension is not installed in the server");
	if (!sql)
		printf("# skipped: the sql contender (the prolly extension is not installed)\n");
	const char *sets[] = {"tpcb.contenders",
	                      sql ? "[\"plain\", \"client\", \"sql\"]" : "[\"plain\", \"client\"]",
	                      NULL};
	size_t ncont = sql ? 3 : 2;
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	unsigned measured, skipped;
	memset(&tab, 0, sizeof(tab));
	PT_CHECK(trun_open(&t, "postgres", sets) == 0);
	PT_CHECK(t.run.cells_total == 2 * 2 * ncont);
	PT_CHECKF(htpcb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == 2 * 2 * ncont && skipped == 0, "measured %u skipped %u", measured,
	          skipped);
	if (th_read_csv(&tab, t.out, "tpcb-raw.csv") == 0) {
		PT_CHECKF(tab.nrows == 2 * 2 * ncont, "%zu rows", tab.nrows);
		for (size_t r = 0; r < tab.nrows; r++) {
			const char *id = bench_csv_get(&tab, r, "cell_id");
			const char *k = bench_csv_get(&tab, r, "contender");
			int rw = !strcmp(bench_csv_get(&tab, r, "mode"), "tpcb");
			PT_CHECKF(!strcmp(bench_csv_get(&tab, r, "validated"), "1"), "%s: %s (%s)", id,
			          bench_csv_get(&tab, r, "check"), bench_csv_get(&tab, r, "first_error"));
			PT_CHECKF(bench_csv_num(&tab, r, "transactions") > 0, "%s", id);
			PT_CHECKF(bench_csv_num(&tab, r, "tps") > 0, "%s", id);
			PT_CHECKF(bench_csv_num(&tab, r, "latency_p99_ms") > 0 &&
			              bench_csv_num(&tab, r, "latency_p99_ms") <=
			                  bench_csv_num(&tab, r, "latency_max_ms"),
			          "%s", id);
			PT_CHECK(
			    bench_csv_num(&tab, r, "sum_accounts") == bench_csv_num(&tab, r, "sum_history") &&
			    bench_csv_num(&tab, r, "sum_tellers") == bench_csv_num(&tab, r, "sum_history"));
			PT_CHECK(bench_csv_num(&tab, r, "accounts") == 100000);
			PT_CHECK(!strncmp(bench_csv_get(&tab, r, "hdr"), "hdr1:", 5));
			PT_CHECK(bench_csv_num(&tab, r, "shared_buffers_bytes") > 0);
			if (rw) {
				PT_CHECKF(bench_csv_num(&tab, r, "history_added") >=
				              bench_csv_num(&tab, r, "transactions"),
				          "%s", id);
				PT_CHECKF(bench_csv_num(&tab, r, "wal_bytes_per_txn") > 0, "%s", id);
			} else {
				PT_CHECKF(bench_csv_num(&tab, r, "history_added") == 0, "%s", id);
			}
			if (!strcmp(k, "plain"))
				PT_CHECK(bench_csv_num(&tab, r, "retries") == 0);
			PT_CHECKF(strstr(id, k) && !strncmp(id, "s1-", 3), "%s", id);
		}
		PT_CHECK(bench_csv_col(&tab, "wal_bytes") >= 0 && bench_csv_col(&tab, "pg_calls") >= 0);
	}
	bench_csv_free(&tab);

	/* the report's section (from the raw rows and the summary the runner writes) */
	char p[4300];
	FILE *f = NULL;
	PT_CHECKF(hr_write_summary(t.d, &htpcb_suite, err, sizeof(err)) == 0, "%s", err);
	snprintf(p, sizeof(p), "%s/section.md", t.out);
	f = fopen(p, "w");
	PT_CHECK(f != NULL);
	if (f) {
		PT_CHECKF(tpcb_report(f, t.out, err, sizeof(err)) == 0, "%s", err);
		fclose(f);
		char *text = NULL;
		size_t len = 0;
		PT_CHECK(bench_read_file(&text, &len, p) == 0);
		PT_CHECK(text && strstr(text, "## tpcb suite") && strstr(text, "client / plain"));
		free(text);
		snprintf(p, sizeof(p), "%s/tpcb-tps-s1-tpcb.svg", t.out);
		PT_CHECK(access(p, F_OK) == 0);
		snprintf(p, sizeof(p), "%s/tpcb-tps-s1-select-only.svg", t.out);
		PT_CHECK(access(p, F_OK) == 0);
	}

	/* resume: everything is on disk */
	hr_close(t.d);
	t.d = NULL;
	PT_CHECK(th_run_results(&t, &htpcb_suite) == 0);
	PT_CHECKF(htpcb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == 0 && skipped == 2 * 2 * ncont, "measured %u skipped %u", measured,
	          skipped);
	th_run_close(&t);
}

/* Non-zero if some file of dir holds needle. */
static int dir_holds(const char *dir, const char *needle)
{
	char cmd[4600];
	snprintf(cmd, sizeof(cmd), "grep -rqF -e '%s' '%s'", needle, dir);
	return system(cmd) == 0;
}

/* The plain contender alone, select-only, one client, on url: one validated row, and no file of
 * the result directory and no error holds pw. */
static void run_plain(const char *url, const char *pw)
{
	const char *sets[] = {"tpcb.contenders",   "[\"plain\"]", "tpcb.clients", "[1]", "tpcb.modes",
	                      "[\"select-only\"]", NULL};
	trun t;
	char err[H_ERR] = "";
	bench_csv tab;
	memset(&tab, 0, sizeof(tab));
	PT_CHECK(trun_open(&t, "postgres", sets) == 0);
	t.run.url = url;
	PT_CHECKF(htpcb_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	PT_CHECK(!strstr(err, pw));
	if (th_read_csv(&tab, t.out, "tpcb-raw.csv") == 0) {
		PT_CHECKF(tab.nrows == 1, "%zu rows", tab.nrows);
		PT_CHECK(tab.nrows == 1 && !strcmp(bench_csv_get(&tab, 0, "validated"), "1"));
	}
	bench_csv_free(&tab);
	PT_CHECK(pw[0] && !dir_holds(t.out, pw));
	th_run_close(&t);
}

/* PROLLY_PG_PW_URL's password into pw ("" if it has none). */
static void url_password(char *pw, size_t n, const char *pw_url)
{
	const char *a = strstr(pw_url, "prolly_pw:"), *b = strchr(pw_url, '@');
	pw[0] = '\0';
	if (a && b && b > a + 10)
		snprintf(pw, n, "%.*s", (int)(b - a - 10), a + 10);
}

/* PROLLY_PG_PW_URL, or NULL with the skip said (a failure under CI=true). */
static const char *pw_url_or_skip(void)
{
	const char *pw_url = getenv("PROLLY_PG_PW_URL"), *ci = getenv("CI");
	if (!pw_url) {
		PT_CHECKF(!(ci && !strcmp(ci, "true")), "PROLLY_PG_PW_URL unset");
		printf("# skipped: PROLLY_PG_PW_URL unset (a server the tests did not start)\n");
	}
	return pw_url;
}

PT_TEST(pgbench_password)
{
	const char *pw_url = pw_url_or_skip();
	if (!pw_url)
		return;
	char pw[128];
	url_password(pw, sizeof(pw), pw_url);
	PT_CHECK(strlen(pw) >= 8 && !strchr(pw, '\''));
	run_plain(pw_url, pw);
}

/* A URL without its password, the password in a password file named by PGPASSFILE, as
 * docs/postgres.md advises: the harness's own connections and the prolly store read it, and so
 * must pgbench. It failed before: the child's environment dropped every PG variable, so pgbench
 * ran without PGPASSFILE ("tpcb: pgbench -i failed: ... fe_sendauth: no password supplied"). */
PT_TEST(pgbench_password_from_passfile)
{
	const char *pw_url = pw_url_or_skip();
	if (!pw_url)
		return;
	char pw[128], url[512], file[1024], line[256];
	url_password(pw, sizeof(pw), pw_url);
	const char *colon = strstr(pw_url, "prolly_pw:"), *at = strchr(pw_url, '@');
	PT_REQUIRE(pw[0] && colon && at);
	snprintf(url, sizeof(url), "%.*sprolly_pw%s", (int)(colon - pw_url), pw_url, at);
	char *dir = tm_tmpdir("tpcb-passfile");
	PT_REQUIRE(dir);
	snprintf(file, sizeof(file), "%s/pgpass", dir);
	snprintf(line, sizeof(line), "*:*:*:prolly_pw:%s\n", pw);
	FILE *f = fopen(file, "w");
	PT_REQUIRE(f && fputs(line, f) >= 0 && fclose(f) == 0 && chmod(file, 0600) == 0);
	setenv("PGPASSFILE", file, 1);
	run_plain(url, pw);
	unsetenv("PGPASSFILE");
	tm_rmtree(dir);
	free(dir);
}

/* The reason of a failed pgbench is its first "error:" line: what pgbench 15 printed when its
 * tables could not be created and when a transaction failed (the last line, which the harness
 * reported before, said only "Query was: ..." or "Run was aborted"). Passwords are redacted. */
PT_TEST(pgbench_failure_reason)
{
	char out[400];
	tpcb_pgbench_reason(out, sizeof(out),
	                    "dropping old tables...\n"
	                    "creating tables...\n"
	                    "pgbench: error: query failed: ERROR:  no schema has been selected to "
	                    "create in\n"
	                    "LINE 1: create table pgbench_history(tid int,bid int,aid    int,delt...\n"
	                    "                     ^\n"
	                    "pgbench: detail: Query was: create table pgbench_history(tid int)\n",
	                    "postgresql://u@/db");
	PT_CHECKF(strcmp(out, "pgbench: error: query failed: ERROR:  no schema has been selected to "
	                      "create in") == 0,
	          "got '%s'", out);
	tpcb_pgbench_reason(out, sizeof(out),
	                    "pgbench: error: client 0 script 0 aborted in command 5 query 0: ERROR:  "
	                    "new row violates check constraint \"c\"\r\n"
	                    "DETAIL:  Failing row contains (98838, 1, 4493).\n"
	                    "pgbench: error: Run was aborted; the above results are incomplete.\n",
	                    NULL);
	PT_CHECKF(strcmp(out, "pgbench: error: client 0 script 0 aborted in command 5 query 0: ERROR:  "
	                      "new row violates check constraint \"c\"") == 0,
	          "got '%s'", out);
	/* no error line: the last non-empty one; none at all: "" */
	tpcb_pgbench_reason(out, sizeof(out), "starting vacuum...\nkilled\n\n", NULL);
	PT_CHECKF(strcmp(out, "killed") == 0, "got '%s'", out);
	tpcb_pgbench_reason(out, sizeof(out), "\n\n", NULL);
	PT_CHECKF(strcmp(out, "") == 0, "got '%s'", out);
	tpcb_pgbench_reason(out, sizeof(out),
	                    "pgbench: error: connection to server failed: postgresql://u:hunter22@h/db "
	                    "refused\n",
	                    "postgresql://u:hunter22@h/db");
	PT_CHECK(!strstr(out, "hunter22"));
}

TH_PG_MAIN()
