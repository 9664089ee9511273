/*
 * test_harness_relative.c - relative QPS against a baseline (h_suite.gate_qps / qps_key,
 * bench/harness/gates.c) and its report helper (hrep_relative_qps, bench/harness/report.c),
 * with a toy suite whose summary rows are named across runs by (bench, clients) rather than
 * by cell_id:
 *
 *   - an identical baseline gives relative_qps 1 on every row, written into the summary (with
 *     baseline_qps), and passes;
 *   - a cell 15% slower trips max_relative_qps_loss_percent = 10 and passes at 20;
 *   - rows match by the key columns, not the cell_id; a row without a baseline row gets an empty
 *     relative_qps; comparing twice replaces the columns instead of adding them again;
 *   - the report helper writes a table per group and NAME-relative-qps.svg whose axis starts
 *     near 1.0, and a note when there is no baseline.
 *
 * Re-run one test: build/tests/test_harness_relative NAME.
 */
#include "../bench/harness/harness.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const toy_columns[] = {"cell_id", "cell_rows", "bench", "clients",
                                          "qps",     "validated", NULL};
static const char *const toy_key[] = {"bench", "clients", NULL};

static int toy_enabled(const hw_workload *w)
{
	(void)w;
	return 1;
}
static unsigned toy_cells(const hw_workload *w)
{
	(void)w;
	return 0;
}
static int toy_run(h_run *run, char *err, size_t errn)
{
	(void)run, (void)err, (void)errn;
	return 0;
}

static const h_suite toy_suite = {
    .name = "toy",
    .raw_file = "toy-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
    .gate_qps = "qps",
    .qps_key = toy_key,
};
static const h_suite *const toys[] = {&toy_suite, NULL};

static char *tmp;

/* dir/toy-summary.csv with four cells: (point, 1), (point, 4), (range, 1), (range, 4); the qps
 * of each times factor[i]; cell ids start with prefix. */
static int summary(const char *dir, const char *prefix, const double *factor, int extra_cell)
{
	static const char *const bench[] = {"point", "point", "range", "range"};
	static const int clients[] = {1, 4, 1, 4};
	static const double qps[] = {1000, 3000, 200, 500};
	char path[4300];
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/toy-summary.csv", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "cell_id,cell_rows,bench,clients,qps,validated\n");
	for (int i = 0; i < 4; i++)
		fprintf(f, "%s%d,1,%s,%d,%g,1\n", prefix, i, bench[i], clients[i], qps[i] * factor[i]);
	if (extra_cell)
		fprintf(f, "%sx,1,update,1,50,1\n", prefix);
	return fclose(f);
}

static int compare(const char *dir, const char *base, double limit)
{
	hw_regression g = {.max_throughput_loss_percent = 10,
	                   .max_p99_increase_percent = 25,
	                   .max_conflict_rate = 0.5,
	                   .max_error_rate = 0.01,
	                   .max_pg_statements_per_operation = 6,
	                   .minimum_percentile_samples = 100,
	                   .max_relative_qps_loss_percent = limit};
	char err[H_ERR] = "";
	FILE *devnull = fopen("/dev/null", "w");
	int rc = hg_compare_suites(dir, base, toys, &g, 0, devnull, err, sizeof(err));
	fclose(devnull);
	if (rc < 0)
		fprintf(stderr, "  hg_compare: %s\n", err);
	return rc;
}

static char *slurp(const char *dir, const char *name)
{
	char path[4300], *s = NULL;
	size_t n;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bench_read_file(&s, &n, path) == 0 ? s : NULL;
}

PT_TEST(identical_baseline_is_one)
{
	char base[4200], now[4200];
	const double same[] = {1, 1, 1, 1};
	bench_csv t = {0};
	snprintf(base, sizeof(base), "%s/same-base", tmp);
	snprintf(now, sizeof(now), "%s/same-now", tmp);
	PT_REQUIRE(summary(base, "b", same, 0) == 0 && summary(now, "n", same, 0) == 0);
	PT_CHECK(compare(now, base, 10) == 0);
	PT_REQUIRE(th_read_csv(&t, now, "toy-summary.csv") == 0);
	PT_CHECK(t.nrows == 4 && t.ncols == 8);
	for (size_t r = 0; r < t.nrows; r++)
		PT_CHECKF(bench_csv_num(&t, r, "relative_qps") == 1.0 &&
		              bench_csv_num(&t, r, "baseline_qps") == bench_csv_num(&t, r, "qps"),
		          "row %zu", r);
	bench_csv_free(&t);
	char *md = slurp(now, "regression.md");
	PT_CHECK(md && strstr(md, "| toy | point/4 | relative_qps | 3000 | 3000 | 1.000x |"));
	free(md);
}

PT_TEST(a_slower_cell_trips_the_gate)
{
	char base[4200], now[4200];
	const double same[] = {1, 1, 1, 1}, slower[] = {1, 1.2, 0.85, 1};
	bench_csv t = {0};
	snprintf(base, sizeof(base), "%s/slow-base", tmp);
	snprintf(now, sizeof(now), "%s/slow-now", tmp);
	PT_REQUIRE(summary(base, "b", same, 0) == 0 && summary(now, "n", slower, 1) == 0);
	PT_CHECK(compare(now, base, 10) == 1);
	char *md = slurp(now, "regression.md");
	PT_CHECKF(md && strstr(md, "| toy | range/1 | relative_qps | 200 | 170 | 0.850x |") &&
	              strstr(md, "| FAIL |") && strstr(md, "- toy `update/1`"),
	          "%s", md ? md : "");
	free(md);
	PT_CHECK(compare(now, base, 20) == 0);
	PT_REQUIRE(th_read_csv(&t, now, "toy-summary.csv") == 0);
	PT_CHECKF(t.ncols == 8, "%zu columns after two comparisons", t.ncols);
	PT_CHECK(fabs(bench_csv_num(&t, 1, "relative_qps") - 1.2) < 1e-9);
	PT_CHECK(fabs(bench_csv_num(&t, 2, "relative_qps") - 0.85) < 1e-9);
	PT_CHECK(isnan(bench_csv_num(&t, 4, "relative_qps"))); /* no baseline row */
	bench_csv_free(&t);

	/* The report helper: a table per group, a chart per group in one file, axis near 1. */
	char path[4300];
	snprintf(path, sizeof(path), "%s/section.md", now);
	FILE *f = fopen(path, "w");
	char err[H_ERR] = "";
	PT_REQUIRE(f != NULL);
	PT_CHECKF(hrep_relative_qps(f, now, &toy_suite, "bench", "clients", NULL, err, sizeof(err)) ==
	              0,
	          "%s", err);
	fclose(f);
	char *sec = slurp(now, "section.md"), *svg = slurp(now, "toy-relative-qps.svg");
	PT_CHECKF(sec && strstr(sec, "#### point") && strstr(sec, "#### range") &&
	              strstr(sec, "| 1 | 170 | 200 | 0.850 |") && strstr(sec, "toy-relative-qps.svg"),
	          "%s", sec ? sec : "");
	PT_CHECK(svg && strstr(svg, "toy point: relative QPS") && strstr(svg, "toy range"));
	PT_CHECK(svg && !strstr(svg, ">0</text>") && strstr(svg, ">0.85</text>"));
	free(sec);
	free(svg);
}

PT_TEST(no_baseline_no_relative_section)
{
	char now[4200], path[4300], err[H_ERR] = "";
	const double same[] = {1, 1, 1, 1};
	snprintf(now, sizeof(now), "%s/alone", tmp);
	PT_REQUIRE(summary(now, "n", same, 0) == 0);
	snprintf(path, sizeof(path), "%s/section.md", now);
	FILE *f = fopen(path, "w");
	PT_REQUIRE(f != NULL);
	PT_CHECK(hrep_relative_qps(f, now, &toy_suite, "bench", "clients", NULL, err, sizeof(err)) ==
	         0);
	fclose(f);
	char *sec = slurp(now, "section.md");
	PT_CHECK(sec && strstr(sec, "needs `--baseline DIR`"));
	free(sec);
	snprintf(path, sizeof(path), "%s/toy-relative-qps.svg", now);
	PT_CHECK(access(path, F_OK) != 0);
}

int main(int argc, char **argv)
{
	tmp = tm_tmpdir("hrel");
	if (!tmp)
		return 2;
	int rc = pt_run(argc, argv);
	tm_rmtree(tmp);
	free(tmp);
	return rc;
}
