/*
 * test_harness_gates.c - regression gates (bench/harness/gates.c) and the report
 * (bench/harness/report.c), on synthetic result directories written by hand:
 *
 *   - equal runs pass; each gate trips on a doctored baseline or run: throughput loss (service
 *     and scale), p99 increase (with enough samples; not with too few), conflict rate, error rate,
 *     statements per operation (PostgreSQL rows only), a row that is not validated;
 *   - a material environment mismatch refuses the comparison (2) and names the key and both
 *     values; --allow-environment-mismatch makes it exploratory (0, "exploratory" in
 *     regression.md, no gate applied);
 *   - baseline cells missing from the run are listed but pass; no matching cell is an error;
 *   - report.md and every chart are written for a directory with both suites, deterministically;
 *     a scale-only directory has no service section.
 *
 * Re-run one test: build/tests/test_harness_gates NAME.
 */
#include "../bench/harness/harness.h"
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- synthetic result directories ------------------------------------------------------------ */

typedef struct svc_cell {
	const char *id;
	int clients, pool;
	double succeeded, p99_ms, conflict_rate, error_rate, spo;
	const char *validated;
	double samples; /* NaN: empty */
} svc_cell;

typedef struct scale_cell {
	const char *id, *op, *pattern;
	double ops_per_s, p99_us, spo, vs_plain;
	const char *validated;
} scale_cell;

#define N_SVC 2
#define N_SCALE 3

typedef struct run {
	svc_cell svc[N_SVC];
	scale_cell scale[N_SCALE];
	int n_svc, n_scale;
	const char *machine_value0; /* value of he_material_machine[0] */
	int postgres;               /* write postgres.txt */
} run;

static run base_run(void)
{
	run r = {
	    .svc = {{"c1-p2", 1, 2, 1000, 5, 0.01, 0.001, 4, "1", 2000},
	            {"c4-p2", 4, 2, 3000, 8, 0.02, 0.002, 4.5, "1", 6000}},
	    .scale = {{"1000-get_cold-random", "get_cold", "random", 5000, 300, 3, 2.5, "1"},
	              {"1000-put-append", "put", "append", 800, 2000, 5, 3, "1"},
	              {"1000-put-random", "put", "random", 700, 2500, 0, NAN, "1"}},
	    .n_svc = N_SVC,
	    .n_scale = N_SCALE,
	    .machine_value0 = "x86_64",
	    .postgres = 1,
	};
	return r;
}

static const hw_regression limits = {
    .max_throughput_loss_percent = 10,
    .max_p99_increase_percent = 25,
    .max_conflict_rate = 0.05,
    .max_error_rate = 0.01,
    .max_pg_statements_per_operation = 6,
    .minimum_percentile_samples = 100,
};

static int put_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static char *get_file(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return tm_read_file(p);
}

static int has_file(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
}

/* Writes the run's env files and summaries into a new temp directory (path in dir). */
static int make_dir(char *dir, size_t n, const run *r)
{
	snprintf(dir, n, "/tmp/test_gates_XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	char p[512];
	FILE *f;
	snprintf(p, sizeof(p), "%s/machine.txt", dir);
	if (!(f = fopen(p, "w")))
		return -1;
	fprintf(f, "os: Linux\nhostless: yes\n");
	for (size_t i = 0; he_material_machine[i]; i++)
		fprintf(f, "%s: %s\n", he_material_machine[i],
		        i == 0 ? r->machine_value0 : he_material_machine[i]);
	fclose(f);
	if (r->postgres) {
		snprintf(p, sizeof(p), "%s/postgres.txt", dir);
		if (!(f = fopen(p, "w")))
			return -1;
		for (size_t i = 0; he_material_postgres[i]; i++)
			fprintf(f, "%s: value of %s\n", he_material_postgres[i], he_material_postgres[i]);
		fclose(f);
	}
	if (r->n_svc) {
		snprintf(p, sizeof(p), "%s/service-summary.csv", dir);
		if (!(f = fopen(p, "w")))
			return -1;
		fprintf(f, "cell_id,clients,pool_size,attempted_per_s,succeeded_per_s,p50_ms,p95_ms,p99_ms,"
		           "p999_ms,max_ms,conflicts,retries,timeouts,errors_total,conflict_rate,"
		           "error_rate,statements_per_op,validated,p99_ms_point_read,p99_ms_commit,"
		           "samples\n");
		for (int i = 0; i < r->n_svc; i++) {
			const svc_cell *c = &r->svc[i];
			fprintf(f, "%s,%d,%d,", c->id, c->clients, c->pool);
			num(f, c->succeeded * 1.01);
			fputc(',', f);
			num(f, c->succeeded);
			fprintf(f, ",1.5,3,");
			num(f, c->p99_ms);
			fprintf(f, ",%g,%g,12,3,0,2,", c->p99_ms * 1.5, c->p99_ms * 3);
			num(f, c->conflict_rate);
			fputc(',', f);
			num(f, c->error_rate);
			fputc(',', f);
			num(f, c->spo);
			fprintf(f, ",%s,", c->validated);
			num(f, c->p99_ms * 0.5);
			fputc(',', f);
			num(f, c->p99_ms * 1.2);
			fputc(',', f);
			num(f, c->samples);
			fputc('\n', f);
		}
		fclose(f);
	}
	if (r->n_scale) {
		snprintf(p, sizeof(p), "%s/scale-summary.csv", dir);
		if (!(f = fopen(p, "w")))
			return -1;
		fprintf(f, "cell_id,size,op,pattern,runs,ms_median,ms_min,ms_max,ops_per_s,us_per_op,"
		           "p50_us,p99_us,statements_per_op,round_trips_per_op,vs_plain,validated\n");
		for (int i = 0; i < r->n_scale; i++) {
			const scale_cell *c = &r->scale[i];
			double ms = 100.0 * 1000.0 / c->ops_per_s; /* 100 operations */
			fprintf(f, "%s,1000,%s,%s,1,", c->id, c->op, c->pattern);
			num(f, ms);
			fputc(',', f);
			num(f, ms * 0.9);
			fputc(',', f);
			num(f, ms * 1.1);
			fputc(',', f);
			num(f, c->ops_per_s);
			fputc(',', f);
			num(f, 1e6 / c->ops_per_s);
			fputs(",100,", f);
			num(f, c->p99_us);
			fputc(',', f);
			num(f, c->spo);
			fputs(",1,", f);
			num(f, c->vs_plain);
			fprintf(f, ",%s\n", c->validated);
		}
		fclose(f);
	}
	return 0;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* Runs hg_compare on two runs; returns its code, with what it printed in *out (malloc'd) and
 * regression.md in *md (malloc'd or NULL). */
typedef struct outcome {
	int rc;
	char *out, *md;
	char err[H_ERR];
} outcome;

static outcome compare(const run *base, const run *now, int allow)
{
	outcome o = {.rc = -99};
	char db[128], dn[128];
	size_t len = 0;
	FILE *f = open_memstream(&o.out, &len);
	if (!f || make_dir(db, sizeof(db), base) || make_dir(dn, sizeof(dn), now))
		return o;
	o.rc = hg_compare(dn, db, &limits, allow, f, o.err, sizeof(o.err));
	fclose(f);
	o.md = get_file(dn, "regression.md");
	remove_dir(db);
	remove_dir(dn);
	return o;
}

static void outcome_free(outcome *o)
{
	free(o->out);
	free(o->md);
}

/* The Markdown table row of (cell, metric) holds `what`. */
static int row_has(const char *md, const char *cell, const char *metric, const char *what)
{
	char key[256];
	snprintf(key, sizeof(key), "| %s | %s |", cell, metric);
	const char *p = md ? strstr(md, key) : NULL;
	if (!p)
		return 0;
	const char *end = strchr(p, '\n');
	const char *w = strstr(p, what);
	return w && (!end || w < end);
}

/* ---- gates ------------------------------------------------------------------------------------ */

PT_TEST(equal_runs_pass)
{
	run b = base_run();
	outcome o = compare(&b, &b, 0);
	PT_CHECKF(o.rc == 0, "rc %d: %s\n%s", o.rc, o.err, o.out);
	PT_REQUIRE(o.md != NULL);
	PT_CHECK(strstr(o.md, "**gated**") != NULL);
	PT_CHECK(strstr(o.md, "Result: **PASS**") != NULL);
	PT_CHECK(strstr(o.md, "| FAIL |") == NULL);
	PT_CHECK(row_has(o.md, "c1-p2", "succeeded_per_s", "PASS"));
	PT_CHECK(row_has(o.md, "c1-p2", "p99_ms", "PASS"));
	PT_CHECK(row_has(o.md, "1000-get_cold-random", "p99_us", "PASS"));
	PT_CHECK(row_has(o.md, "c4-p2", "validated", "PASS"));
	/* statements per op only where there are statements */
	PT_CHECK(row_has(o.md, "1000-put-append", "statements_per_op", "PASS"));
	PT_CHECK(!row_has(o.md, "1000-put-random", "statements_per_op", "PASS"));
	PT_CHECK(strstr(o.out, "regression: PASS") != NULL);
	outcome_free(&o);
}

PT_TEST(throughput_loss_trips)
{
	run b = base_run(), n = base_run();
	n.svc[0].succeeded = 850; /* -15% */
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "c1-p2", "succeeded_per_s", "FAIL"));
	PT_CHECK(row_has(o.md, "c1-p2", "succeeded_per_s", "-15.0%"));
	PT_CHECK(row_has(o.md, "c4-p2", "succeeded_per_s", "PASS"));
	PT_CHECK(o.md && strstr(o.md, "Result: **FAIL**") != NULL);
	PT_CHECKF(o.out && strstr(o.out, "c1-p2") && strstr(o.out, "succeeded_per_s") &&
	              strstr(o.out, "loss <= 10%") && !strstr(o.out, "c4-p2"),
	          "%s", o.out);
	outcome_free(&o);

	n = base_run();
	n.svc[0].succeeded = 950; /* -5%: within the limit */
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	outcome_free(&o);

	/* scale: ops/s */
	n = base_run();
	n.scale[1].ops_per_s = 600; /* -25% */
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "1000-put-append", "ops_per_s", "FAIL"));
	outcome_free(&o);

	/* a doctored baseline: the run is unchanged, the baseline claims more */
	b.svc[1].succeeded = 4000;
	n = base_run();
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "c4-p2", "succeeded_per_s", "FAIL"));
	outcome_free(&o);
}

PT_TEST(p99_increase_trips_with_enough_samples)
{
	run b = base_run(), n = base_run();
	b.svc[0].p99_ms = 3.5; /* doctored: the run's 5 ms is +42.9% */
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "c1-p2", "p99_ms", "FAIL"));
	PT_CHECK(row_has(o.md, "c1-p2", "p99_ms", "+42.9%"));
	PT_CHECK(o.out && strstr(o.out, "p99_ms"));
	outcome_free(&o);

	/* too few samples in the run: not gated */
	n.svc[0].samples = 50;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "c1-p2", "p99_ms", "SKIP (50 samples < 100)"));
	outcome_free(&o);

	/* ... or in the baseline */
	n = base_run();
	b.svc[0].samples = 99;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "c1-p2", "p99_ms", "SKIP"));
	outcome_free(&o);

	/* no samples column value: counts as enough */
	b.svc[0].samples = NAN;
	n.svc[0].samples = NAN;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	outcome_free(&o);

	/* within the limit */
	b = base_run();
	n = base_run();
	n.svc[1].p99_ms = 9.9; /* +23.75% */
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	outcome_free(&o);

	/* scale: p99_us (no samples column) */
	n = base_run();
	n.scale[0].p99_us = 400; /* +33% */
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "1000-get_cold-random", "p99_us", "FAIL"));
	outcome_free(&o);
}

PT_TEST(conflict_rate_trips)
{
	run b = base_run(), n = base_run();
	n.svc[1].conflict_rate = 0.2;
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "c4-p2", "conflict_rate", "FAIL"));
	PT_CHECK(o.out && strstr(o.out, "conflict_rate") && strstr(o.out, "<= 0.05"));
	outcome_free(&o);
	/* absolute: a baseline as bad as the run does not excuse it */
	b.svc[1].conflict_rate = 0.2;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	outcome_free(&o);
	n.svc[1].conflict_rate = 0.05; /* at the limit: passes */
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	outcome_free(&o);
}

PT_TEST(error_rate_trips)
{
	run b = base_run(), n = base_run();
	n.svc[0].error_rate = 0.05;
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "c1-p2", "error_rate", "FAIL"));
	PT_CHECK(o.out && strstr(o.out, "error_rate"));
	outcome_free(&o);
}

PT_TEST(statements_per_op_trips)
{
	run b = base_run(), n = base_run();
	n.svc[0].spo = 9;
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "c1-p2", "statements_per_op", "FAIL"));
	PT_CHECK(o.out && strstr(o.out, "statements_per_op") && strstr(o.out, "<= 6"));
	outcome_free(&o);

	n = base_run();
	n.scale[1].spo = 6.5;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "1000-put-append", "statements_per_op", "FAIL"));
	outcome_free(&o);

	/* rows without statements (not PostgreSQL) are not checked */
	n = base_run();
	n.scale[2].spo = 0;
	b.scale[2].spo = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	PT_CHECK(!row_has(o.md, "1000-put-random", "statements_per_op", "|"));
	outcome_free(&o);
}

PT_TEST(unvalidated_row_trips)
{
	run b = base_run(), n = base_run();
	n.scale[2].validated = "0";
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d: %s", o.rc, o.err);
	PT_CHECK(row_has(o.md, "1000-put-random", "validated", "FAIL"));
	PT_CHECK(o.out && strstr(o.out, "validated"));
	outcome_free(&o);
	n = base_run();
	n.svc[1].validated = "";
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 1, "rc %d", o.rc);
	PT_CHECK(row_has(o.md, "c4-p2", "validated", "FAIL"));
	outcome_free(&o);
	n.svc[1].validated = "true";
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	outcome_free(&o);
}

PT_TEST(environment_mismatch)
{
	run b = base_run(), n = base_run();
	n.machine_value0 = "riscv64";
	n.svc[0].succeeded = 100; /* would trip a gate */
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 2, "rc %d: %s", o.rc, o.err);
	PT_CHECKF(o.out && strstr(o.out, he_material_machine[0]) && strstr(o.out, "x86_64") &&
	              strstr(o.out, "riscv64"),
	          "%s", o.out);
	/* nothing compared */
	PT_CHECK(o.md && strstr(o.md, "refused") && !strstr(o.md, "succeeded_per_s"));
	outcome_free(&o);

	o = compare(&b, &n, 1);
	PT_CHECKF(o.rc == 0, "rc %d: %s", o.rc, o.err);
	PT_REQUIRE(o.md != NULL);
	PT_CHECK(strstr(o.md, "exploratory") != NULL);
	PT_CHECK(strstr(o.md, "**gated**") == NULL);
	PT_CHECK(row_has(o.md, "c1-p2", "succeeded_per_s", "over (not gated)"));
	PT_CHECK(strstr(o.md, "riscv64") != NULL);
	PT_CHECK(o.out && strstr(o.out, "exploratory"));
	outcome_free(&o);

	/* postgres.txt in only one of the runs differs too */
	n = base_run();
	n.postgres = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 2, "rc %d", o.rc);
	PT_CHECK(o.out && strstr(o.out, "(absent)") && strstr(o.out, he_material_postgres[0]));
	outcome_free(&o);
	/* and two runs without postgres.txt compare */
	b.postgres = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d", o.rc);
	outcome_free(&o);
}

PT_TEST(missing_cells)
{
	run b = base_run(), n = base_run();
	n.n_svc = 1; /* c4-p2 missing */
	outcome o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d: %s", o.rc, o.err);
	PT_CHECK(o.md && strstr(o.md, "missing from this run") && strstr(o.md, "`c4-p2`"));
	PT_CHECK(o.out && strstr(o.out, "service/c4-p2"));
	outcome_free(&o);

	/* a scale-only run against a run with both suites: the service suite is all missing */
	n = base_run();
	n.n_svc = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == 0, "rc %d: %s", o.rc, o.err);
	PT_CHECK(o.md && strstr(o.md, "`c1-p2`"));
	outcome_free(&o);

	/* no cell in common: an error */
	n = base_run();
	n.svc[0].id = "other-1";
	n.svc[1].id = "other-2";
	n.n_scale = 0;
	b.n_scale = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == -1 && strstr(o.err, "no cell"), "rc %d: %s", o.rc, o.err);
	outcome_free(&o);
	b.n_svc = 0;
	n.n_svc = 0;
	o = compare(&b, &n, 0);
	PT_CHECKF(o.rc == -1, "rc %d", o.rc);
	outcome_free(&o);
}

/* ---- report ----------------------------------------------------------------------------------- */

static int svg_ok(const char *dir, const char *name)
{
	char *s = get_file(dir, name);
	int ok = s && strncmp(s, "<?xml", 5) == 0 && strstr(s, "<svg ") && strlen(s) > 7 &&
	         strcmp(s + strlen(s) - 7, "</svg>\n") == 0;
	if (!ok)
		fprintf(stderr, "  %s: missing or malformed\n", name);
	free(s);
	return ok;
}

static int write_raw(const char *dir)
{
	return put_file(
	    dir, "service-raw.csv",
	    "cell_id,cell_rows,op_class,clients,pool_size,per_second_ops,per_second_p99_ms\n"
	    "c1-p2,2,all,1,2,990;1010;1003,4.5;5.2;4.9\n"
	    "c1-p2,2,point_read,1,2,,\n"
	    "c4-p2,2,all,4,2,2900;3100;;2950,7.5;8.1;9.9;8\n"
	    "c4-p2,2,commit,4,2,,\n");
}

PT_TEST(report_both_suites)
{
	run r = base_run();
	char dir[128], err[H_ERR] = "";
	PT_REQUIRE(make_dir(dir, sizeof(dir), &r) == 0);
	PT_REQUIRE(write_raw(dir) == 0);
	PT_REQUIRE(put_file(dir, "run-manifest.txt",
	                    "schema: 1\nconfig_hash: abc123\nrevision: deadbeef\ndirty: 0\nseed: 42\n"
	                    "suites: service,scale\nstore: postgres\nbaseline: \n"
	                    "started: 2024-01-01T00:00:00Z\nfinished: 2024-01-01T00:02:00Z\n") == 0);
	PT_REQUIRE(put_file(dir, "regression.md",
	                    "# Regression comparison\n\nComparison: **gated** "
	                    "(x)\n\n- Result: **PASS**: 3 checks\n") == 0);
	PT_CHECKF(hrep_write(dir, err, sizeof(err)) == 0, "%s", err);
	char *md = get_file(dir, "report.md");
	PT_REQUIRE(md != NULL);
	PT_CHECK(strstr(md, "## Run") && strstr(md, "| revision | deadbeef |"));
	PT_CHECK(strstr(md, "## Machine") && strstr(md, "## PostgreSQL"));
	PT_CHECK(strstr(md, "## Service suite") && strstr(md, "## Scale suite"));
	PT_CHECK(strstr(md, "| c1-p2 | 1 | 2 | 1000.0 |") != NULL);
	PT_CHECK(strstr(md, "by operation class") && strstr(md, "| point_read | commit |"));
	PT_CHECK(strstr(md, "| 1000 | get_cold | random | 1 |") != NULL);
	PT_CHECK(strstr(md, "(service-throughput.svg)") && strstr(md, "(service-p99.svg)"));
	PT_CHECK(strstr(md, "(service-cell-c1-p2.svg)") && strstr(md, "(service-cell-c4-p2.svg)"));
	PT_CHECK(strstr(md, "(scale-vs-plain.svg)") && strstr(md, "(scale-matrix.svg)"));
	PT_CHECK(strstr(md, "[regression.md](regression.md)") && strstr(md, "Result: **PASS**"));
	PT_CHECK(strstr(md, "[service-raw.csv](service-raw.csv)") != NULL);
	PT_CHECK(!strstr(md, "nan"));
	static const char *const charts[] = {"service-throughput.svg", "service-p99.svg",
	                                     "service-cell-c1-p2.svg", "service-cell-c4-p2.svg",
	                                     "scale-vs-plain.svg",     "scale-matrix.svg"};
	for (size_t i = 0; i < sizeof(charts) / sizeof(charts[0]); i++)
		PT_CHECK(svg_ok(dir, charts[i]));
	char *cell = get_file(dir, "service-cell-c4-p2.svg");
	PT_CHECK(cell && strstr(cell, "successful operations per second") &&
	         strstr(cell, "p99 latency per second"));
	free(cell);
	char *vs = get_file(dir, "scale-vs-plain.svg");
	PT_CHECK(vs && strstr(vs, "1k get_cold / pg-plain: ") && strstr(vs, "1k put / prolly: "));
	free(vs);

	/* deterministic: the same files give the same report */
	char *again = NULL;
	PT_CHECKF(hrep_write(dir, err, sizeof(err)) == 0, "%s", err);
	again = get_file(dir, "report.md");
	PT_CHECK(again && strcmp(again, md) == 0);
	free(again);
	free(md);
	remove_dir(dir);
}

PT_TEST(report_scale_only)
{
	run r = base_run();
	char dir[128], err[H_ERR] = "";
	r.n_svc = 0;
	r.postgres = 0;
	for (int i = 0; i < N_SCALE; i++)
		r.scale[i].vs_plain = NAN; /* no plain baseline (not PostgreSQL) */
	PT_REQUIRE(make_dir(dir, sizeof(dir), &r) == 0);
	PT_CHECKF(hrep_write(dir, err, sizeof(err)) == 0, "%s", err);
	char *md = get_file(dir, "report.md");
	PT_REQUIRE(md != NULL);
	PT_CHECK(!strstr(md, "## Service suite") && strstr(md, "## Scale suite"));
	PT_CHECK(!strstr(md, "## PostgreSQL") && !strstr(md, "## Regression"));
	PT_CHECK(!has_file(dir, "service-throughput.svg") && !has_file(dir, "scale-vs-plain.svg"));
	PT_CHECK(svg_ok(dir, "scale-matrix.svg"));
	PT_CHECK(strstr(md, "No plain-PostgreSQL baseline") != NULL);
	free(md);
	remove_dir(dir);

	/* an empty directory still gets a report */
	snprintf(dir, sizeof(dir), "/tmp/test_gates_XXXXXX");
	PT_REQUIRE(mkdtemp(dir) != NULL);
	PT_CHECKF(hrep_write(dir, err, sizeof(err)) == 0, "%s", err);
	PT_CHECK(has_file(dir, "report.md"));
	remove_dir(dir);
	PT_CHECK(hrep_write("/nonexistent-dir-for-test", err, sizeof(err)) == -1);
}

PT_TEST(compare_then_report)
{
	run b = base_run(), n = base_run();
	char db[128], dn[128], err[H_ERR] = "";
	n.svc[0].conflict_rate = 0.5;
	PT_REQUIRE(make_dir(db, sizeof(db), &b) == 0 && make_dir(dn, sizeof(dn), &n) == 0);
	FILE *devnull = fopen("/dev/null", "w");
	PT_REQUIRE(devnull != NULL);
	PT_CHECK(hg_compare(dn, db, &limits, 0, devnull, err, sizeof(err)) == 1);
	fclose(devnull);
	PT_CHECKF(hrep_write(dn, err, sizeof(err)) == 0, "%s", err);
	char *md = get_file(dn, "report.md");
	PT_CHECK(md && strstr(md, "Result: **FAIL**") && strstr(md, "(regression.md)"));
	free(md);
	remove_dir(db);
	remove_dir(dn);
}

/* ---- what is not a file in a result directory ------------------------------------------------ */

/* Runs fn(dir) in a child given 10 seconds: its exit status, or 128 + the signal that ended it
 * (SIGALRM: it hung). */
static int in_time(int (*fn)(const char *), const char *dir)
{
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(10);
		_exit(fn(dir));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A result directory (base_run) whose machine.txt is a FIFO without a writer. */
static int make_fifo_dir(char *dir, size_t n)
{
	run r = base_run();
	char p[512];
	if (make_dir(dir, n, &r) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/machine.txt", dir);
	return unlink(p) == 0 && mkfifo(p, 0600) == 0 ? 0 : -1;
}

static int read_fifo_value(const char *dir)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/machine.txt", dir);
	char *v = he_read_value(p, he_material_machine[0]);
	free(v);
	return v != NULL;
}

static int report_around_fifos(const char *dir)
{
	char err[H_ERR] = "";
	if (hrep_write(dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "  hrep_write: %s\n", err);
		return 1;
	}
	char *md = get_file(dir, "report.md");
	int bad = !md || strstr(md, "## Machine") || strstr(md, "## PostgreSQL") ||
	          strstr(md, "## Regression") || !strstr(md, "## Scale suite");
	free(md);
	return bad;
}

static int compare_with_fifo(const char *dir)
{
	char other[128], err[H_ERR] = "";
	run r = base_run();
	FILE *out = fopen("/dev/null", "w");
	if (!out || make_dir(other, sizeof(other), &r) != 0)
		return 1;
	/* the baseline's machine.txt reads as absent: the environments differ (2) */
	int g = hg_compare(other, dir, &limits, 0, out, err, sizeof(err));
	fclose(out);
	remove_dir(other);
	return g == 2 ? 0 : 1;
}

static int write_env_over_fifo(const char *dir)
{
	char err[H_ERR] = "";
	if (he_write_all(dir, NULL, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "  he_write_all: %s\n", err);
		return 1;
	}
	char *v = get_file(dir, "machine.txt");
	int bad = !v || !strstr(v, "cpus: ");
	free(v);
	return bad;
}

/* A resumed run writes its provenance files again: a FIFO left in place of machine.txt blocked
 * fopen(path, "w") until something read it, for ever. Now each file is written beside and
 * renamed over it. */
PT_TEST(provenance_written_over_a_fifo)
{
	char dir[128];
	PT_REQUIRE(make_fifo_dir(dir, sizeof(dir)) == 0);
	PT_CHECKF(in_time(write_env_over_fifo, dir) == 0, "he_write_all over a FIFO");
	remove_dir(dir);
}

/* A FIFO or a directory left in a result directory in place of machine.txt, postgres.txt or
 * regression.md: he_read_value (the gates' and --baseline's environment check) and the report
 * read them with fopen(), which blocked on the FIFO for ever; now they read as absent at once. */
PT_TEST(fifo_or_directory_in_a_result_directory_reads_as_absent)
{
	char dir[128], p[512];
	PT_REQUIRE(make_fifo_dir(dir, sizeof(dir)) == 0);
	snprintf(p, sizeof(p), "%s/regression.md", dir);
	PT_REQUIRE(mkfifo(p, 0600) == 0);
	snprintf(p, sizeof(p), "%s/postgres.txt", dir);
	PT_REQUIRE(unlink(p) == 0 && mkdir(p, 0700) == 0);
	PT_CHECKF(in_time(read_fifo_value, dir) == 0, "he_read_value on a FIFO");
	PT_CHECKF(in_time(report_around_fifos, dir) == 0, "hrep_write around FIFOs");
	PT_CHECKF(in_time(compare_with_fifo, dir) == 0, "hg_compare with a FIFO baseline");
	rmdir(p);
	remove_dir(dir);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
