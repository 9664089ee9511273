/*
 * summary.c - hr_write_summaries: the summary files of a result directory, from its raw files.
 *
 * service-summary.csv: one row per service cell, from its op_class "all" row (conflict_rate =
 * conflicts / cas_attempts, error_rate = errors_total / attempted, each the raw row's own value
 * when that cannot be computed; statements_per_op as the raw row has it, the adapter's count of
 * statements per attempted operation, else pg_calls / attempted) plus the p99_ms of each class's
 * row as p99_ms_<class>. scale-summary.csv: one row per scale cell (size, op, pattern): from one
 * row per cell (ms_median, ms_min, ms_max columns) or one row per run (an "ms" column: median,
 * min and max over the runs); the other numbers are medians over the cell's rows, derived when
 * absent (ops_per_s = ops / ms, us_per_op = ms / ops, statements_per_op = pg_calls / ops,
 * round_trips_per_op = store_round_trips / ops); validated is 1 only if every row is. The columns
 * are listed in hr_service_summary_columns and hr_scale_summary_columns below and read by name by
 * gates.c and report.c; a
 * source column absent from a raw file gives "".
 *
 * Cells are the raw file's rows grouped by cell_id, in order of first appearance; a summary file
 * is rewritten whole (temp file and rename) each time, and is not written when its raw file does
 * not exist.
 */
#include "results_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const svc_classes[] = {"point_read", "multi_read", "commit",
                                          "diff",       "merge",      NULL};

/* service-summary.csv; from "attempted" on, extra context (the counts behind the rates, the
 * p99 gate's sample floor, the server-side statement count). */
/* clang-format off */
const char *const hr_service_summary_columns[] = {
	"cell_id", "clients", "pool_size", "attempted_per_s", "succeeded_per_s", "p50_ms", "p95_ms",
	"p99_ms", "p999_ms", "max_ms", "conflicts", "retries", "timeouts", "errors_total",
	"conflict_rate", "error_rate", "statements_per_op", "validated", "p99_ms_point_read",
	"p99_ms_multi_read", "p99_ms_commit", "p99_ms_diff", "p99_ms_merge", "attempted", "succeeded",
	"cas_attempts", "samples", "pg_calls", "pg_statements_per_op", "access", NULL};

/* Copied as written from the service cell's "all" row. */
static const char *const svc_copy_cols[] = {
	"clients", "pool_size", "attempted_per_s", "succeeded_per_s", "p50_ms", "p95_ms", "p99_ms",
	"p999_ms", "max_ms", "conflicts", "retries", "timeouts", "errors_total", "validated",
	"attempted", "succeeded", "cas_attempts", "samples", "pg_calls", "pg_statements_per_op",
	"access", NULL};
/* clang-format on */

/* clang-format off */
const char *const hr_scale_summary_columns[] = {
	"cell_id", "store", "size", "op", "pattern", "runs", "ms_median", "ms_min", "ms_max",
	"ops_per_s", "us_per_op", "p50_us", "p99_us", "statements_per_op", "round_trips_per_op",
	"vs_plain", "validated", "ops", "samples", NULL};
/* clang-format on */

static double ratio(double a, double b)
{
	return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

/* Row indices grouped by cell_id, groups in order of first appearance. */
typedef struct groups {
	size_t *row;   /* row indices, grouped */
	size_t *first; /* group g is row[first[g] .. first[g+1]) */
	size_t n;
} groups;

static int group_cells(groups *g, const bench_csv *t)
{
	size_t *gid = calloc(t->nrows + 1, sizeof(size_t)), *cnt = calloc(t->nrows + 1, sizeof(size_t));
	size_t *leader = calloc(t->nrows + 1, sizeof(size_t));
	int rc = -1;
	memset(g, 0, sizeof(*g));
	g->row = calloc(t->nrows + 1, sizeof(size_t));
	g->first = calloc(t->nrows + 2, sizeof(size_t));
	if (!gid || !cnt || !leader || !g->row || !g->first)
		goto cleanup;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *id = bench_csv_get(t, r, "cell_id");
		size_t k = g->n && strcmp(bench_csv_get(t, leader[gid[r - 1]], "cell_id"), id) == 0
		               ? gid[r - 1]
		               : g->n;
		for (size_t j = 0; k == g->n && j < g->n; j++)
			if (strcmp(bench_csv_get(t, leader[j], "cell_id"), id) == 0)
				k = j;
		if (k == g->n)
			leader[g->n++] = r;
		gid[r] = k;
		cnt[k]++;
	}
	for (size_t k = 0; k < g->n; k++)
		g->first[k + 1] = g->first[k] + cnt[k];
	memset(cnt, 0, (t->nrows + 1) * sizeof(size_t));
	for (size_t r = 0; r < t->nrows; r++)
		g->row[g->first[gid[r]] + cnt[gid[r]]++] = r;
	rc = 0;
cleanup:
	free(gid);
	free(cnt);
	free(leader);
	return rc;
}

static void groups_free(groups *g)
{
	free(g->row);
	free(g->first);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median (mean of the middle two), min or max (which: 0, 1, 2) of col over rows; NaN if none. */
static double stat_of(const bench_csv *t, const size_t *rows, size_t n, const char *col, int which)
{
	double *v = malloc((n ? n : 1) * sizeof(double)), res = NAN;
	size_t k = 0;
	if (!v)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		double x = bench_csv_num(t, rows[i], col);
		if (isfinite(x))
			v[k++] = x;
	}
	if (k) {
		qsort(v, k, sizeof(double), dbl_cmp);
		res = which == 1   ? v[0]
		      : which == 2 ? v[k - 1]
		      : k % 2      ? v[k / 2]
		                   : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	free(v);
	return res;
}

static int truthy(const char *s)
{
	return strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0;
}

static int write_rows(const char *dir, const char *name, const char *const *cols, hrow **rows,
                      size_t n, char *err, size_t errn)
{
	bench_buf b = {0};
	int rc;
	hr__csv_line(&b, cols, NULL);
	for (size_t i = 0; i < n; i++)
		hr__csv_line(&b, cols, rows[i]);
	if (b.oom) {
		free(b.p);
		bench_seterr(err, errn, "out of memory");
		return -1;
	}
	rc = hr__write_atomic(dir, name, b.p, b.n, err, errn);
	free(b.p);
	return rc;
}

void hr_service_summary(hrow *o, const bench_csv *t, const size_t *rows, size_t n)
{
	size_t all = n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(bench_csv_get(t, rows[i], "op_class"), "all") == 0)
			all = i;
	hrow_str(o, "cell_id", bench_csv_get(t, rows[0], "cell_id"));
	if (all < n) {
		size_t r = rows[all];
		for (size_t c = 0; svc_copy_cols[c]; c++)
			hrow_str(o, svc_copy_cols[c], bench_csv_get(t, r, svc_copy_cols[c]));
		double attempted = bench_csv_num(t, r, "attempted");
		double cr = ratio(bench_csv_num(t, r, "conflicts"), bench_csv_num(t, r, "cas_attempts"));
		double er = ratio(bench_csv_num(t, r, "errors_total"), attempted);
		double spo = bench_csv_num(t, r, "statements_per_op");
		hrow_f64(o, "conflict_rate", isfinite(cr) ? cr : bench_csv_num(t, r, "conflict_rate"));
		hrow_f64(o, "error_rate", isfinite(er) ? er : bench_csv_num(t, r, "error_rate"));
		hrow_f64(o, "statements_per_op",
		         isfinite(spo) ? spo : ratio(bench_csv_num(t, r, "pg_calls"), attempted));
	}
	for (size_t k = 0; svc_classes[k]; k++) {
		char col[64];
		snprintf(col, sizeof(col), "p99_ms_%s", svc_classes[k]);
		for (size_t i = 0; i < n; i++)
			if (strcmp(bench_csv_get(t, rows[i], "op_class"), svc_classes[k]) == 0)
				hrow_str(o, col, bench_csv_get(t, rows[i], "p99_ms"));
	}
}

void hr_scale_summary(hrow *o, const bench_csv *t, const size_t *rows, size_t n)
{
	static const char *const med[] = {"p50_us", "p99_us", "vs_plain", "samples", NULL};
	double ms = stat_of(t, rows, n, "ms_median", 0), ops = stat_of(t, rows, n, "ops", 0);
	int runc = bench_csv_col(t, "runs") >= 0;
	hrow_str(o, "cell_id", bench_csv_get(t, rows[0], "cell_id"));
	hrow_str(o, "store", bench_csv_get(t, rows[0], "store")); /* "pg-plain": the baseline table */
	hrow_str(o, "size", bench_csv_get(t, rows[0], "size"));
	hrow_str(o, "op", bench_csv_get(t, rows[0], "op"));
	hrow_str(o, "pattern", bench_csv_get(t, rows[0], "pattern"));
	hrow_f64(o, "runs", runc ? stat_of(t, rows, n, "runs", 2) : (double)n);
	if (isfinite(ms)) { /* one row per cell, medians already taken */
		hrow_f64(o, "ms_median", ms);
		hrow_f64(o, "ms_min", stat_of(t, rows, n, "ms_min", 1));
		hrow_f64(o, "ms_max", stat_of(t, rows, n, "ms_max", 2));
	} else { /* one row per run */
		ms = stat_of(t, rows, n, "ms", 0);
		hrow_f64(o, "ms_median", ms);
		hrow_f64(o, "ms_min", stat_of(t, rows, n, "ms", 1));
		hrow_f64(o, "ms_max", stat_of(t, rows, n, "ms", 2));
	}
	hrow_f64(o, "ops", ops);
	double v = stat_of(t, rows, n, "ops_per_s", 0);
	hrow_f64(o, "ops_per_s", isfinite(v) ? v : ratio(ops * 1000.0, ms));
	v = stat_of(t, rows, n, "us_per_op", 0);
	hrow_f64(o, "us_per_op", isfinite(v) ? v : ratio(ms * 1000.0, ops));
	for (size_t k = 0; med[k]; k++)
		hrow_f64(o, med[k], stat_of(t, rows, n, med[k], 0));
	v = stat_of(t, rows, n, "statements_per_op", 0);
	hrow_f64(o, "statements_per_op",
	         isfinite(v) ? v : ratio(stat_of(t, rows, n, "pg_calls", 0), ops));
	v = stat_of(t, rows, n, "round_trips_per_op", 0);
	hrow_f64(o, "round_trips_per_op",
	         isfinite(v) ? v : ratio(stat_of(t, rows, n, "store_round_trips", 0), ops));
	if (bench_csv_col(t, "validated") >= 0) {
		int ok = 1;
		for (size_t i = 0; i < n; i++)
			ok = ok && truthy(bench_csv_get(t, rows[i], "validated"));
		hrow_str(o, "validated", ok ? "1" : "0");
	}
}

/* The default summary of a suite without its own: each cell's last raw row, every column. */
static void last_row(hrow *o, const bench_csv *t, const size_t *rows, size_t n)
{
	for (size_t c = 0; c < t->ncols; c++)
		hrow_str(o, t->header[c], t->rows[rows[n - 1]][c]);
}

/* One summary file from one raw file: 0 done (or no raw file), -1 error. */
static int summarize(hr_dir *d, const char *raw, const char *name, const char *const *cols,
                     void (*fill)(hrow *, const bench_csv *, const size_t *, size_t), char *err,
                     size_t errn)
{
	char path[HR__PATHN];
	bench_csv t;
	groups g = {0};
	hrow **rows = NULL;
	int rc = -1;
	struct stat st;
	const char *dir = hr_path(d);
	if (hr__join(path, dir, raw) != 0 || stat(path, &st) != 0)
		return 0;
	if (bench_csv_read(&t, path, err, errn) != 0)
		return -1;
	if (group_cells(&g, &t) != 0 || !(rows = calloc(g.n + 1, sizeof(*rows)))) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	for (size_t k = 0; k < g.n; k++) {
		if (!(rows[k] = hrow_new())) {
			bench_seterr(err, errn, "out of memory");
			goto cleanup;
		}
		fill(rows[k], &t, g.row + g.first[k], g.first[k + 1] - g.first[k]);
	}
	rc = write_rows(dir, name, cols, rows, g.n, err, errn);
cleanup:
	for (size_t k = 0; rows && k < g.n; k++)
		hrow_free(rows[k]);
	free(rows);
	groups_free(&g);
	bench_csv_free(&t);
	return rc;
}

int hr_write_summary(hr_dir *d, const h_suite *s, char *err, size_t errn)
{
	char name[128];
	h_summary_file(s, name, sizeof(name));
	return summarize(d, s->raw_file, name, s->summary ? s->summary_columns : s->columns,
	                 s->summary ? s->summary : last_row, err, errn);
}

int hr_write_summaries(hr_dir *d, char *err, size_t errn)
{
	for (size_t i = 0; h_suites[i]; i++)
		if (hr_write_summary(d, h_suites[i], err, errn) != 0)
			return -1;
	return 0;
}
