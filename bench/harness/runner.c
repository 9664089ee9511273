/*
 * runner.c - the suites and what the runner does for every one of them: the suite table
 * (h_suites), resume and row output on their behalf (h_cell_done, h_emit), progress lines,
 * running the selected suites in order, and counting rows that did not validate.
 *
 * Adding a suite: an h_suite in its own file under bench/suites/ and one line in h_suites
 * below (docs/benchmarks.md, "Adding a suite"). Nothing else in the runner names a suite.
 */
#include "harness.h"

#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const h_suite *const h_suites[] = {&hsvc_suite, &hsc_suite,   &hins_suite,
                                   &hsb_suite,  &htpcb_suite, NULL};

const h_suite *h_suite_find(const char *name)
{
	for (size_t i = 0; h_suites[i]; i++)
		if (!strcmp(h_suites[i]->name, name))
			return h_suites[i];
	return NULL;
}

void h_summary_file(const h_suite *s, char *out, size_t n)
{
	if (s->summary_file)
		snprintf(out, n, "%s", s->summary_file);
	else
		snprintf(out, n, "%s-summary.csv", s->name);
}

int h_cell_done(const h_run *run, const h_suite *s, const char *cell_id)
{
	return hr_cell_done(run->out, s->raw_file, cell_id);
}

void h_cell_skipped(const h_run *run)
{
	hr_count_skip(run->out);
}

int h_emit(const h_run *run, const h_suite *s, hrow *const *rows, size_t n, char *err, size_t errn)
{
	return hr_append(run->out, s->raw_file, s->columns, rows, n, err, errn);
}

/* ---- progress ---------------------------------------------------------------------------------- */

static void fmt_duration(char *out, size_t n, double s)
{
	if (s < 60)
		snprintf(out, n, "%.0f s", s);
	else if (s < 3600)
		snprintf(out, n, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(out, n, "%d h %02d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void h_progress(h_run *run, const char *suite, const char *what)
{
	double elapsed = (double)(bench_now_ns() - run->started_ns) / 1e9;
	char el[32], left[48] = "";
	fmt_duration(el, sizeof el, elapsed);
	run->cells_done++;
	if (run->cells_done > 1 && run->cells_total >= run->cells_done) {
		double per = elapsed / (double)(run->cells_done - 1);
		char l[32];
		fmt_duration(l, sizeof l, per * (double)(run->cells_total - run->cells_done + 1));
		snprintf(left, sizeof left, ", ~%s left", l);
	}
	fprintf(stderr, "[%s %u/%u, %s elapsed%s] %s\n", suite, run->cells_done, run->cells_total, el,
	        left, what);
}

/* ---- running ----------------------------------------------------------------------------------- */

int h_run_suite(h_run *run, const h_suite *s, char *err, size_t errn)
{
	char e[H_ERR] = "";
	if (s->run(run, e, sizeof(e)) != 0) {
		bench_seterr(err, errn, "%s suite: %s", s->name, e);
		return -1;
	}
	return 0;
}

int h_run_suites(h_run *run, unsigned selected, char *err, size_t errn)
{
	for (size_t i = 0; h_suites[i]; i++)
		if (((selected >> i) & 1) && h_run_suite(run, h_suites[i], err, errn) != 0)
			return -1;
	return 0;
}

int h_unvalidated_rows(const char *dir, const h_suite *s, size_t *rows)
{
	char path[4096], err[H_ERR];
	bench_csv t = {0};
	int bad = 0;
	*rows = 0;
	snprintf(path, sizeof path, "%s/%s", dir, s->raw_file);
	if (access(path, F_OK) != 0 || bench_csv_read(&t, path, err, sizeof err) != 0)
		return 0;
	*rows = t.nrows;
	for (size_t r = 0; r < t.nrows; r++)
		if (strcmp(bench_csv_get(&t, r, "validated"), "1") != 0)
			bad++;
	bench_csv_free(&t);
	return bad;
}
