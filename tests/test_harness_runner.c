/*
 * test_harness_runner.c - the suite interface (bench/harness/harness.h, h_suite) with a toy
 * suite that supplies only what a suite must: its cells, its row schema and its validation.
 *
 *   - the runner writes the toy's rows to its raw file, resumes (a second run measures nothing),
 *     writes the default summary (each cell's last row), and counts a row that did not
 *     validate;
 *   - the two real suites fill the table the same way (names, files, schema columns).
 *
 * Re-run one test: build/tests/test_harness_runner NAME.
 */
#include "../bench/harness/harness.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const toy_columns[] = {"cell_id", "cell_rows", "n", "square", "validated", NULL};

static unsigned toy_cells(const hw_workload *w)
{
	(void)w;
	return 3;
}

static int toy_enabled(const hw_workload *w)
{
	(void)w;
	return 1;
}

static unsigned toy_measured;
extern const h_suite toy_suite;

/* Three cells "n1".."n3" of one row each; cell n3 fails its own check (validated 0). */
static int toy_run(h_run *run, char *err, size_t errn)
{
	hrow *row = hrow_new();
	int rc = 0;
	if (!row)
		return -1;
	for (unsigned n = 1; n <= 3 && rc == 0; n++) {
		char id[16];
		snprintf(id, sizeof(id), "n%u", n);
		if (h_cell_done(run, &toy_suite, id)) {
			h_cell_skipped(run);
			continue;
		}
		h_progress(run, "toy", id);
		hrow_clear(row);
		hrow_str(row, "cell_id", id);
		hrow_u64(row, "cell_rows", 1);
		hrow_u64(row, "n", n);
		hrow_u64(row, "square", n * n);
		hrow_str(row, "validated", n == 3 ? "0" : "1");
		rc = h_emit(run, &toy_suite, &row, 1, err, errn);
		toy_measured++;
	}
	hrow_free(row);
	return rc;
}

const h_suite toy_suite = {
    .name = "toy",
    .raw_file = "toy-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
};

static int open_dir(hr_dir **d, const char *dir, const hw_workload *w)
{
	return th_open_results(d, dir, w, "toy", "mem");
}

PT_TEST(toy_suite_through_the_runner)
{
	char *tmp = tm_tmpdir("hrun");
	char toml[4200], out[4200], err[H_ERR], sum[64];
	hw_workload w = {0};
	hr_dir *d = NULL;
	bench_csv t = {0};
	PT_REQUIRE(tmp);
	snprintf(toml, sizeof(toml), "%s/w.toml", tmp);
	snprintf(out, sizeof(out), "%s/out", tmp);
	PT_REQUIRE(th_workload(&w, toml, "schema = 1\n", NULL) == 0);
	PT_REQUIRE(open_dir(&d, out, &w) == 0);
	h_run run = {.w = &w, .out = d, .store = "mem", .scratch = tmp, .started_ns = bench_now_ns()};
	run.cells_total = toy_suite.cells(&w);
	PT_CHECKF(h_run_suite(&run, &toy_suite, err, sizeof(err)) == 0, "%s", err);
	PT_CHECK(toy_measured == 3 && run.cells_done == 3);
	PT_CHECK(hr_write_summary(d, &toy_suite, err, sizeof(err)) == 0);
	h_summary_file(&toy_suite, sum, sizeof(sum));
	PT_CHECK(!strcmp(sum, "toy-summary.csv"));
	if (th_read_csv(&t, out, "toy-summary.csv") == 0) {
		PT_CHECKF(t.nrows == 3 && t.ncols == 5, "%zu x %zu", t.nrows, t.ncols);
		PT_CHECK(!strcmp(bench_csv_get(&t, 1, "square"), "4"));
		bench_csv_free(&t);
	}
	size_t rows = 0;
	PT_CHECK(h_unvalidated_rows(out, &toy_suite, &rows) == 1 && rows == 3);

	/* A second invocation: every cell is on disk. */
	hr_close(d);
	d = NULL;
	PT_REQUIRE(open_dir(&d, out, &w) == 0);
	run.out = d;
	run.cells_done = 0;
	PT_CHECK(h_run_suite(&run, &toy_suite, err, sizeof(err)) == 0);
	unsigned measured = 9, skipped = 0;
	hr_counts(d, &measured, &skipped);
	PT_CHECKF(toy_measured == 3 && measured == 0 && skipped == 3, "measured %u skipped %u",
	          measured, skipped);
	hr_close(d);
	hw_workload_free(&w);
	tm_rmtree(tmp);
	free(tmp);
}

PT_TEST(the_suite_table)
{
	size_t n = 0;
	for (size_t i = 0; h_suites[i]; i++, n++) {
		const h_suite *s = h_suites[i];
		PT_CHECK(s->name && s->raw_file && s->columns && s->cells && s->run);
		/* without its own enabled(), a suite is turned on by its section's BOOL key "enabled" */
		int has_key = 0;
		for (const hw_key *k = s->keys; k && k->name; k++)
			has_key |= k->kind == HW_K_BOOL && !strcmp(k->name, "enabled");
		PT_CHECKF(s->enabled || has_key, "%s: nothing says whether it runs", s->name);
		PT_CHECK(h_suite_find(s->name) == s);
		int id = 0, rows = 0, valid = 0;
		for (size_t c = 0; s->columns[c]; c++) {
			id |= !strcmp(s->columns[c], "cell_id");
			rows |= !strcmp(s->columns[c], "cell_rows");
			valid |= !strcmp(s->columns[c], "validated");
		}
		PT_CHECKF(id && rows && valid, "%s: the schema lacks a required column", s->name);
		char want[64], sum[64];
		snprintf(want, sizeof(want), "%s-raw.csv", s->name);
		PT_CHECKF(!strcmp(s->raw_file, want), "%s", s->raw_file);
		h_summary_file(s, sum, sizeof(sum));
		snprintf(want, sizeof(want), "%s-summary.csv", s->name);
		PT_CHECKF(!strcmp(sum, want), "%s", sum);
	}
	PT_CHECK(n == 5 && h_suites[0] == &hsvc_suite && h_suites[1] == &hsc_suite);
	PT_CHECK(h_suite_find("insert") == &hins_suite);
	PT_CHECK(h_suite_find("sysbench") == &hsb_suite);
	PT_CHECK(h_suite_find("tpcb") == &htpcb_suite);
	PT_CHECK(h_suite_find("toy") == NULL);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
