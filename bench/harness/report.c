/*
 * report.c - report.md and its charts in a result directory: hrep_write (harness.h).
 *
 * Everything comes from the files in the directory; a section is written only for files that
 * exist (a scale-only run has no service section), so the report can be regenerated at any time
 * and two directories with the same files give the same bytes.
 *
 *   report.md                 the run manifest, machine, PostgreSQL and dependency summaries
 *                             (tables of the "key: value" lines of run-manifest.txt, machine.txt,
 *                             postgres.txt, dependencies.txt), the service and scale tables, the
 *                             charts (as images), the regression result (regression.md, linked)
 *                             and the list of data files;
 *   service-throughput.svg    successful ops/s against clients, one series per pool size
 *                             (log x when the clients span a factor of 8 or more);
 *   service-p99.svg           p99 (ms) against clients, one series per pool size;
 *   service-cell-<id>.svg     per cell, two stacked charts over the measured seconds: successful
 *                             ops/s and p99 (ms), from the per_second_ops / per_second_p99_ms
 *                             lists (';'-separated) of the cell's op_class "all" row in
 *                             service-raw.csv (<id> is the cell_id with characters other than
 *                             [A-Za-z0-9._-] replaced by '_');
 *   scale-vs-plain.svg        per size and operation (PostgreSQL rows with a vs_plain ratio),
 *                             the Prolly median ms against the plain table's, ms_median /
 *                             vs_plain: for an operation measured under several patterns, the
 *                             median over the patterns of each; log y;
 *   scale-matrix.svg          one chart per size: ops/s per operation (categories) and pattern
 *                             (series); log y;
 *   NAME-relative-qps.svg     for a suite's section that calls hrep_relative_qps: one bar chart
 *                             per group of the suite's relative QPS against the baseline (the
 *                             relative_qps column gates.c writes), y from near 1.0.
 *
 * report.md is written through a temp file and rename.
 */
#include "buf.h"
#include "harness.h"
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PATHN 4352

static int exists(const char *dir, const char *name)
{
	char p[PATHN];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* ---- Markdown --------------------------------------------------------------------------------- */

/* Text for a table cell: '|' escaped, line breaks as spaces. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

void hrep_md_cell(FILE *f, const char *s)
{
	fputs("| ", f);
	md_text(f, s);
	fputc(' ', f);
}

/* A number with `dec` decimals, or (dec < 0) with up to four significant digits and no
 * exponent above 1000: 12345, 123.4, 5, 0.1234. */
static void fmt_num(char *out, size_t n, double v, int dec)
{
	if (dec >= 0)
		snprintf(out, n, "%.*f", dec, v);
	else if (fabs(v) >= 1000)
		snprintf(out, n, "%.0f", v);
	else
		snprintf(out, n, "%.4g", v);
}

/* A number cell (see fmt_num); "-" when there is no value, the text itself when it is not a
 * number. */
static void md_num(FILE *f, const bench_csv *t, size_t r, const char *col, int dec)
{
	double v = bench_csv_num(t, r, col);
	const char *s = bench_csv_get(t, r, col);
	char buf[64];
	if (isfinite(v)) {
		fmt_num(buf, sizeof(buf), v, dec);
		hrep_md_cell(f, buf);
	} else {
		hrep_md_cell(f, *s ? s : "-");
	}
}

static void md_header(FILE *f, const char *const *cols, const char *align)
{
	for (size_t i = 0; cols[i]; i++)
		hrep_md_cell(f, cols[i]);
	fputs("|\n", f);
	for (size_t i = 0; cols[i]; i++)
		fprintf(f, "|%s", align[i] == 'r' ? "---:" : "---");
	fputs("|\n", f);
}

static int truthy(const char *s)
{
	return strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0;
}

/* A "key: value" file as a two-column table; nothing if the file is missing or not a regular
 * file (a FIFO there blocked the report for ever). */
static void kv_section(FILE *f, const char *dir, const char *name, const char *title)
{
	char p[PATHN], *at, *line;
	bench_buf in = {0};
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (bench_buf_read_file(&in, p, H_MAX_TEXT_BYTES, NULL) != 0) {
		bench_buf_free(&in);
		return;
	}
	fprintf(f, "## %s\n\nFrom [%s](%s).\n\n| key | value |\n|---|---|\n", title, name, name);
	at = in.p;
	while ((line = bench_next_line(&at))) {
		line[strcspn(line, "\r")] = '\0';
		char *sep = strstr(line, ":");
		if (!sep || sep == line || line[0] == '#')
			continue;
		*sep = '\0';
		char *v = sep + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		hrep_md_cell(f, line);
		hrep_md_cell(f, *v ? v : "");
		fputs("|\n", f);
	}
	fputc('\n', f);
	bench_buf_free(&in);
}

/* ---- charts ------------------------------------------------------------------------------------ */

static int write_chart(const char *dir, const char *name, const svg_chart *const *c, size_t n,
                       char *err, size_t errn)
{
	char p[PATHN];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return svg_write(p, c, n, err, errn);
}

/* (series key, x, y) for sorting line-chart points. */
typedef struct pt {
	double key, x, y;
} pt;

static int pt_cmp(const void *a, const void *b)
{
	const pt *p = a, *q = b;
	if (p->key != q->key)
		return p->key < q->key ? -1 : 1;
	return p->x < q->x ? -1 : p->x > q->x;
}

/* A line chart of col against clients, one series per pool size. */
static int clients_chart(const char *dir, const bench_csv *t, const char *col, const char *name,
                         const char *title, const char *ylabel, char *err, size_t errn)
{
	pt *p = calloc(t->nrows + 1, sizeof(pt));
	svg_chart *c = svg_line_new(title, "clients", ylabel);
	double lo = INFINITY, hi = 0;
	size_t n = 0;
	int rc = -1;
	if (!p || !c) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	for (size_t r = 0; r < t->nrows; r++) {
		pt q = {bench_csv_num(t, r, "pool_size"), bench_csv_num(t, r, "clients"),
		        bench_csv_num(t, r, col)};
		if (!isfinite(q.key) || !isfinite(q.x))
			continue;
		p[n++] = q;
		lo = fmin(lo, q.x);
		hi = fmax(hi, q.x);
	}
	qsort(p, n, sizeof(pt), pt_cmp);
	svg_set_log_x(c, lo > 0 && hi / lo >= 8);
	for (size_t i = 0; i < n; i++) {
		char s[64];
		snprintf(s, sizeof(s), "pool %.0f", p[i].key);
		if (svg_point(c, s, p[i].x, p[i].y) != 0) {
			bench_seterr(err, errn, "out of memory");
			goto cleanup;
		}
	}
	const svg_chart *one[] = {c};
	rc = write_chart(dir, name, one, 1, err, errn);
cleanup:
	free(p);
	svg_free(c);
	return rc;
}

/* Adds "a;b;c" as points (1, a), (2, b), ... (empty or malformed entries are left out). */
static int add_series(svg_chart *c, const char *name, const char *list)
{
	double x = 1;
	for (const char *s = list; *s; x++) {
		char *end;
		double v = strtod(s, &end);
		if (end != s && (*end == ';' || *end == '\0') && svg_point(c, name, x, v) != 0)
			return -1;
		s += strcspn(s, ";");
		if (*s == ';')
			s++;
	}
	return 0;
}

static void file_id(char *out, size_t n, const char *id)
{
	size_t i = 0;
	for (; id[i] && i + 1 < n; i++) {
		char ch = id[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		         ch == '.' || ch == '_' || ch == '-';
		out[i] = ok && !(i == 0 && ch == '.') ? ch : '_';
	}
	out[i] = '\0';
}

/* The per-second charts of every service cell, each linked from f. */
static int cell_charts(FILE *f, const char *dir, char *err, size_t errn)
{
	char p[PATHN];
	bench_csv t = {0};
	int rc = -1, any = 0;
	snprintf(p, sizeof(p), "%s/service-raw.csv", dir);
	if (access(p, F_OK) != 0)
		return 0;
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	if (bench_csv_col(&t, "per_second_ops") < 0 && bench_csv_col(&t, "per_second_p99_ms") < 0) {
		rc = 0;
		goto cleanup;
	}
	for (size_t r = 0; r < t.nrows; r++) {
		const char *id = bench_csv_get(&t, r, "cell_id");
		if (strcmp(bench_csv_get(&t, r, "op_class"), "all") != 0)
			continue;
		int later = 0; /* a repeated cell: its last "all" row counts */
		for (size_t k = r + 1; k < t.nrows && !later; k++)
			later = strcmp(bench_csv_get(&t, k, "op_class"), "all") == 0 &&
			        strcmp(bench_csv_get(&t, k, "cell_id"), id) == 0;
		if (later)
			continue;
		char fid[160], name[200], title[300];
		file_id(fid, sizeof(fid), id);
		snprintf(name, sizeof(name), "service-cell-%s.svg", fid);
		snprintf(title, sizeof(title), "%s: successful operations per second", id);
		svg_chart *a = svg_line_new(title, "second of the measured window", "ops/s");
		snprintf(title, sizeof(title), "%s: p99 latency per second", id);
		svg_chart *b = svg_line_new(title, "second of the measured window", "p99 (ms)");
		int bad = !a || !b;
		if (!bad) {
			svg_set_size(a, 0, 300);
			svg_set_size(b, 0, 300);
			bad = add_series(a, "successful ops/s", bench_csv_get(&t, r, "per_second_ops")) ||
			      add_series(b, "p99 ms", bench_csv_get(&t, r, "per_second_p99_ms"));
		}
		const svg_chart *two[] = {a, b};
		int wrc = bad ? -1 : write_chart(dir, name, two, 2, err, errn);
		svg_free(a);
		svg_free(b);
		if (bad)
			bench_seterr(err, errn, "out of memory");
		if (wrc != 0)
			goto cleanup;
		if (!any)
			fprintf(f, "### Per-second throughput and p99 of each cell\n\n");
		any = 1;
		fprintf(f, "Cell `%s` ([%s](%s)):\n\n![%s per second](%s)\n\n", id, name, name, id, name);
	}
	rc = 0;
cleanup:
	bench_csv_free(&t);
	return rc;
}

/* ---- service ----------------------------------------------------------------------------------- */

int hrep_service_section(FILE *f, const char *dir, char *err, size_t errn)
{
	static const char *const cols[] = {
	    "cell",      "clients",  "pool",      "succeeded ops/s", "attempted ops/s", "p50 ms",
	    "p99 ms",    "p99.9 ms", "conflicts", "retries",         "errors",          "statements/op",
	    "validated", NULL};
	char p[PATHN];
	bench_csv t = {0};
	int rc = -1;
	snprintf(p, sizeof(p), "%s/service-summary.csv", dir);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	fprintf(f, "## Service suite\n\nOne row per (clients, pool size) cell, from "
	           "[service-summary.csv](service-summary.csv) (raw rows: "
	           "[service-raw.csv](service-raw.csv)). Latency includes the wait for a pooled "
	           "connection.\n\n");
	md_header(f, cols, "lrrrrrrrrrrrl");
	for (size_t r = 0; r < t.nrows; r++) {
		hrep_md_cell(f, bench_csv_get(&t, r, "cell_id"));
		md_num(f, &t, r, "clients", 0);
		md_num(f, &t, r, "pool_size", 0);
		md_num(f, &t, r, "succeeded_per_s", 1);
		md_num(f, &t, r, "attempted_per_s", 1);
		md_num(f, &t, r, "p50_ms", -1);
		md_num(f, &t, r, "p99_ms", -1);
		md_num(f, &t, r, "p999_ms", -1);
		md_num(f, &t, r, "conflicts", 0);
		md_num(f, &t, r, "retries", 0);
		md_num(f, &t, r, "errors_total", 0);
		md_num(f, &t, r, "statements_per_op", -1);
		hrep_md_cell(f, truthy(bench_csv_get(&t, r, "validated")) ? "yes" : "**no**");
		fputs("|\n", f);
	}
	/* p99 per operation class: every p99_ms_<class> column */
	size_t ncls = 0;
	for (size_t c = 0; c < t.ncols; c++)
		ncls += strncmp(t.header[c], "p99_ms_", 7) == 0;
	if (ncls) {
		fprintf(f, "\n### p99 latency (ms) by operation class\n\n| cell ");
		for (size_t c = 0; c < t.ncols; c++)
			if (strncmp(t.header[c], "p99_ms_", 7) == 0)
				hrep_md_cell(f, t.header[c] + 7);
		fputs("|\n|---", f);
		for (size_t c = 0; c < ncls; c++)
			fputs("|---:", f);
		fputs("|\n", f);
		for (size_t r = 0; r < t.nrows; r++) {
			hrep_md_cell(f, bench_csv_get(&t, r, "cell_id"));
			for (size_t c = 0; c < t.ncols; c++)
				if (strncmp(t.header[c], "p99_ms_", 7) == 0)
					md_num(f, &t, r, t.header[c], -1);
			fputs("|\n", f);
		}
	}
	fprintf(f, "\n### Throughput and p99 against clients\n\n");
	if (clients_chart(dir, &t, "succeeded_per_s", "service-throughput.svg",
	                  "Successful operations per second", "ops/s", err, errn) != 0 ||
	    clients_chart(dir, &t, "p99_ms", "service-p99.svg", "p99 latency", "p99 (ms)", err, errn) !=
	        0)
		goto cleanup;
	fprintf(f, "![successful ops/s against clients](service-throughput.svg)\n\n"
	           "![p99 against clients](service-p99.svg)\n\n");
	if (cell_charts(f, dir, err, errn) != 0)
		goto cleanup;
	rc = 0;
cleanup:
	bench_csv_free(&t);
	return rc;
}

/* ---- scale ------------------------------------------------------------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(double), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "1k", "10M" for a size column. */
static void size_label(char *out, size_t n, const char *size)
{
	char *end;
	double v = strtod(size, &end);
	if (end != size && !*end)
		svg_fmt_num(out, n, v);
	else
		snprintf(out, n, "%s", size);
}

/* scale-vs-plain.svg; *drawn = 0 when no row has a plain baseline (no file written). */
static int vs_plain_chart(const char *dir, const bench_csv *t, int *drawn, char *err, size_t errn)
{
	double *pm = calloc(t->nrows + 1, sizeof(double)), *pp = calloc(t->nrows + 1, sizeof(double));
	char *seen = calloc(t->nrows + 1, 1);
	svg_chart *c = svg_bars_new("Prolly on PostgreSQL against a plain PostgreSQL table",
	                            "size / operation (median over patterns)", "median ms (log)");
	int rc = -1;
	*drawn = 0;
	if (!pm || !pp || !seen || !c) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	svg_set_log_y(c, 1);
	for (size_t r = 0; r < t->nrows; r++) {
		if (seen[r])
			continue;
		const char *size = bench_csv_get(t, r, "size"), *op = bench_csv_get(t, r, "op");
		size_t n = 0;
		for (size_t k = r; k < t->nrows; k++) {
			if (strcmp(bench_csv_get(t, k, "size"), size) != 0 ||
			    strcmp(bench_csv_get(t, k, "op"), op) != 0)
				continue;
			seen[k] = 1;
			double ms = bench_csv_num(t, k, "ms_median"), vs = bench_csv_num(t, k, "vs_plain");
			if (isfinite(ms) && ms > 0 && isfinite(vs) && vs > 0) {
				pm[n] = ms;
				pp[n++] = ms / vs;
			}
		}
		if (!n)
			continue;
		char cat[160], sl[32];
		size_label(sl, sizeof(sl), size);
		snprintf(cat, sizeof(cat), "%s %s", sl, op);
		if (svg_bar(c, cat, "prolly", median(pm, n)) ||
		    svg_bar(c, cat, "pg-plain", median(pp, n))) {
			bench_seterr(err, errn, "out of memory");
			goto cleanup;
		}
		*drawn = 1;
	}
	rc = 0;
	if (*drawn) {
		const svg_chart *one[] = {c};
		rc = write_chart(dir, "scale-vs-plain.svg", one, 1, err, errn);
	}
cleanup:
	free(pm);
	free(pp);
	free(seen);
	svg_free(c);
	return rc;
}

/* scale-matrix.svg: one chart per size, ops/s per operation and pattern. */
static int matrix_chart(const char *dir, const bench_csv *t, char *err, size_t errn)
{
	svg_chart **cs = calloc(t->nrows + 1, sizeof(*cs));
	const char **sizes = calloc(t->nrows + 1, sizeof(*sizes));
	size_t n = 0;
	int rc = -1;
	if (!cs || !sizes)
		goto nomem;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *size = bench_csv_get(t, r, "size");
		size_t i = 0;
		if (strcmp(bench_csv_get(t, r, "store"), "pg-plain") == 0)
			continue; /* the baseline table's rows have their own chart (scale-vs-plain.svg) */
		while (i < n && strcmp(sizes[i], size) != 0)
			i++;
		if (i == n) {
			char title[128], sl[32];
			size_label(sl, sizeof(sl), size);
			snprintf(title, sizeof(title), "Scale matrix: %s records", sl);
			if (!(cs[n] = svg_bars_new(title, "operation (bars: patterns)", "ops/s (log)")))
				goto nomem;
			svg_set_log_y(cs[n], 1);
			for (size_t k = 0; k < t->nrows; k++) /* the same colour per pattern everywhere */
				if (svg_series(cs[n], bench_csv_get(t, k, "pattern")) != 0)
					goto nomem;
			sizes[n++] = size;
		}
		if (svg_bar(cs[i], bench_csv_get(t, r, "op"), bench_csv_get(t, r, "pattern"),
		            bench_csv_num(t, r, "ops_per_s")) != 0)
			goto nomem;
	}
	if (!n) {
		rc = 0;
		goto cleanup;
	}
	rc = write_chart(dir, "scale-matrix.svg", (const svg_chart *const *)cs, n, err, errn);
	goto cleanup;
nomem:
	bench_seterr(err, errn, "out of memory");
cleanup:
	for (size_t i = 0; cs && i < n; i++)
		svg_free(cs[i]);
	free(cs);
	free(sizes);
	return rc;
}

int hrep_scale_section(FILE *f, const char *dir, char *err, size_t errn)
{
	static const char *const cols[] = {"store",  "size",          "op",         "pattern",
	                                   "runs",   "median ms",     "min-max ms", "ops/s",
	                                   "p99 us", "statements/op", "vs plain",   "validated",
	                                   NULL};
	char p[PATHN];
	bench_csv t = {0};
	int rc = -1, drawn = 0;
	snprintf(p, sizeof(p), "%s/scale-summary.csv", dir);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	fprintf(f, "## Scale suite\n\nOne row per size, operation and pattern (medians over the runs), "
	           "from [scale-summary.csv](scale-summary.csv) (raw rows: "
	           "[scale-raw.csv](scale-raw.csv)). vs plain: Prolly's time per operation over the "
	           "plain PostgreSQL table's (PostgreSQL store).\n\n");
	md_header(f, cols, "llllrrrrrrrl");
	for (size_t r = 0; r < t.nrows; r++) {
		hrep_md_cell(f, bench_csv_get(&t, r, "store"));
		hrep_md_cell(f, bench_csv_get(&t, r, "size"));
		hrep_md_cell(f, bench_csv_get(&t, r, "op"));
		hrep_md_cell(f, bench_csv_get(&t, r, "pattern"));
		md_num(f, &t, r, "runs", 0);
		md_num(f, &t, r, "ms_median", -1);
		double lo = bench_csv_num(&t, r, "ms_min"), hi = bench_csv_num(&t, r, "ms_max");
		char a[64], b[64];
		fmt_num(a, sizeof(a), lo, -1);
		fmt_num(b, sizeof(b), hi, -1);
		if (isfinite(lo) && isfinite(hi))
			fprintf(f, "| %s-%s ", a, b);
		else
			hrep_md_cell(f, "-");
		md_num(f, &t, r, "ops_per_s", -1);
		md_num(f, &t, r, "p99_us", -1);
		md_num(f, &t, r, "statements_per_op", -1);
		md_num(f, &t, r, "vs_plain", -1);
		hrep_md_cell(f, truthy(bench_csv_get(&t, r, "validated")) ? "yes" : "**no**");
		fputs("|\n", f);
	}
	fputc('\n', f);
	if (vs_plain_chart(dir, &t, &drawn, err, errn) != 0 || matrix_chart(dir, &t, err, errn) != 0)
		goto cleanup;
	if (drawn)
		fprintf(f, "### Against the plain PostgreSQL table\n\n"
		           "![Prolly against plain PostgreSQL](scale-vs-plain.svg)\n\n");
	else
		fprintf(f, "No plain-PostgreSQL baseline in this run (it is measured with the "
		           "PostgreSQL store only).\n\n");
	if (t.nrows)
		fprintf(f, "### Operations per second\n\n![scale matrix](scale-matrix.svg)\n\n");
	rc = 0;
cleanup:
	bench_csv_free(&t);
	return rc;
}

/* ---- relative QPS (for the suites' sections) ---------------------------------------------------- */

/* Index of v in the first n entries of list, or -1. */
static long str_index(const char *const *list, size_t n, const char *v)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], v) == 0)
			return (long)i;
	return -1;
}

int hrep_relative_qps(FILE *f, const char *dir, const h_suite *s, const char *group_col,
                      const char *label_col, const char *series_col, char *err, size_t errn)
{
	char sum[128], p[PATHN], name[160], title[300];
	bench_csv t = {0};
	const char **groups = NULL;
	svg_chart **charts = NULL;
	size_t ng = 0, nrel = 0;
	int rc = -1;
	h_summary_file(s, sum, sizeof(sum));
	snprintf(p, sizeof(p), "%s/%s", dir, sum);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	for (size_t r = 0; r < t.nrows; r++)
		nrel += isfinite(bench_csv_num(&t, r, "relative_qps"));
	if (!nrel) {
		fprintf(f, "No relative QPS in this run (it needs `--baseline DIR`).\n\n");
		rc = 0;
		goto cleanup;
	}
	groups = calloc(t.nrows + 1, sizeof(*groups));
	charts = calloc(t.nrows + 1, sizeof(*charts));
	if (!groups || !charts)
		goto nomem;
	for (size_t r = 0; r < t.nrows; r++) {
		const char *gv = group_col ? bench_csv_get(&t, r, group_col) : "";
		if (str_index(groups, ng, gv) >= 0)
			continue;
		if (group_col)
			snprintf(title, sizeof(title), "%s %s: relative QPS (this run / baseline)", s->name,
			         gv);
		else
			snprintf(title, sizeof(title), "%s: relative QPS (this run / baseline)", s->name);
		if (!(charts[ng] = svg_bars_new(title, label_col, "relative QPS")))
			goto nomem;
		svg_set_y_from(charts[ng], 0.9);
		groups[ng++] = gv;
	}
	snprintf(name, sizeof(name), "%s-relative-qps.svg", s->name);
	fprintf(f,
	        "### Relative QPS against the baseline\n\nThis run's %s over the baseline's, per "
	        "cell (1.0: the same; below 1: slower). ",
	        s->gate_qps);
	fprintf(f, "From the relative_qps column of [%s](%s); chart: [%s](%s).\n\n", sum, sum, name,
	        name);
	for (size_t gi = 0; gi < ng; gi++) {
		const char *with[] = {label_col, series_col, s->gate_qps, "baseline", "relative", NULL};
		const char *without[] = {label_col, s->gate_qps, "baseline", "relative", NULL};
		if (group_col)
			fprintf(f, "#### %s\n\n", groups[gi]);
		if (series_col)
			md_header(f, with, "llrrr");
		else
			md_header(f, without, "lrrr");
		for (size_t r = 0; r < t.nrows; r++) {
			if (group_col && strcmp(bench_csv_get(&t, r, group_col), groups[gi]) != 0)
				continue;
			const char *lv = bench_csv_get(&t, r, label_col);
			const char *sv = series_col ? bench_csv_get(&t, r, series_col) : "qps";
			double rel = bench_csv_num(&t, r, "relative_qps");
			hrep_md_cell(f, lv);
			if (series_col)
				hrep_md_cell(f, sv);
			md_num(f, &t, r, s->gate_qps, -1);
			md_num(f, &t, r, "baseline_qps", -1);
			md_num(f, &t, r, "relative_qps", 3);
			fputs("|\n", f);
			if (svg_series(charts[gi], sv) != 0 ||
			    (isfinite(rel) ? svg_bar(charts[gi], lv, sv, rel) : svg_category(charts[gi], lv)))
				goto nomem;
		}
		fputc('\n', f);
	}
	if (write_chart(dir, name, (const svg_chart *const *)charts, ng, err, errn) != 0)
		goto cleanup;
	fprintf(f, "![%s relative QPS](%s)\n\n", s->name, name);
	rc = 0;
	goto cleanup;
nomem:
	bench_seterr(err, errn, "out of memory");
cleanup:
	for (size_t i = 0; charts && i < ng; i++)
		svg_free(charts[i]);
	free(charts);
	free(groups);
	bench_csv_free(&t);
	return rc;
}

/* ---- regression and files ---------------------------------------------------------------------- */

static void regression_section(FILE *f, const char *dir)
{
	char p[PATHN], *at, *line;
	bench_buf in = {0};
	snprintf(p, sizeof(p), "%s/regression.md", dir);
	if (bench_buf_read_file(&in, p, H_MAX_TEXT_BYTES, NULL) != 0) {
		bench_buf_free(&in);
		return;
	}
	fprintf(f, "## Regression comparison\n\nSee [regression.md](regression.md).\n\n");
	at = in.p;
	while ((line = bench_next_line(&at)))
		if (strncmp(line, "Comparison:", 11) == 0 || strncmp(line, "- Baseline:", 11) == 0 ||
		    strncmp(line, "- Result:", 9) == 0)
			fprintf(f, "%s%s\n", line[0] == '-' ? "" : "- ", line);
	fputc('\n', f);
	bench_buf_free(&in);
}

static void files_section(FILE *f, const char *dir)
{
	static const char *const files[] = {
	    "workload.toml", "resolved-workload.toml", "run-manifest.txt", "machine.txt",
	    "postgres.txt",  "dependencies.txt",       "binary.sha256",    NULL};
	fprintf(f, "## Files\n\n");
	for (size_t i = 0; files[i]; i++)
		if (exists(dir, files[i]))
			fprintf(f, "- [%s](%s)\n", files[i], files[i]);
	for (size_t i = 0; h_suites[i]; i++) {
		char sum[128];
		h_summary_file(h_suites[i], sum, sizeof(sum));
		const char *const both[] = {h_suites[i]->raw_file, sum};
		for (size_t k = 0; k < 2; k++)
			if (exists(dir, both[k]))
				fprintf(f, "- [%s](%s)\n", both[k], both[k]);
	}
	if (exists(dir, "regression.md"))
		fprintf(f, "- [regression.md](regression.md)\n");
}

/* The section of a suite without its own: its summary file as a table. */
static int summary_table(FILE *f, const char *dir, const h_suite *s, const char *sum, char *err,
                         size_t errn)
{
	char p[PATHN];
	bench_csv t;
	snprintf(p, sizeof(p), "%s/%s", dir, sum);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	fprintf(f, "## %s suite\n\nFrom [%s](%s) (raw rows: [%s](%s)).\n\n|", s->name, sum, sum,
	        s->raw_file, s->raw_file);
	for (size_t c = 0; c < t.ncols; c++)
		fprintf(f, " %s |", t.header[c]);
	fprintf(f, "\n|");
	for (size_t c = 0; c < t.ncols; c++)
		fprintf(f, "---|");
	fprintf(f, "\n");
	for (size_t r = 0; r < t.nrows; r++) {
		fprintf(f, "|");
		for (size_t c = 0; c < t.ncols; c++) {
			fputc(' ', f);
			for (const char *v = t.rows[r][c]; *v; v++) /* a cell of a Markdown table */
				fputs(*v == '|' ? "\\|" : *v == '\n' ? " " : (char[]){*v, 0}, f);
			fputs(" |", f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
	bench_csv_free(&t);
	return 0;
}

int hrep_write(const char *dir, char *err, size_t errn)
{
	char path[PATHN], tmp[PATHN];
	FILE *f = NULL;
	int rc = -1;
	if (!(f = h_file_begin(path, tmp, sizeof(path), dir, "report.md", err, errn)))
		goto cleanup;
	fprintf(f, "# Benchmark report\n\nGenerated by the prolly benchmark harness from the files in "
	           "this directory.\n\n");
	kv_section(f, dir, "run-manifest.txt", "Run");
	kv_section(f, dir, "machine.txt", "Machine");
	kv_section(f, dir, "postgres.txt", "PostgreSQL");
	kv_section(f, dir, "dependencies.txt", "Dependencies");
	for (size_t i = 0; h_suites[i]; i++) {
		const h_suite *s = h_suites[i];
		char sum[128];
		h_summary_file(s, sum, sizeof(sum));
		if (!exists(dir, sum))
			continue;
		if (s->report ? s->report(f, dir, err, errn) != 0
		              : summary_table(f, dir, s, sum, err, errn) != 0)
			goto cleanup;
	}
	regression_section(f, dir);
	files_section(f, dir);
	rc = h_file_commit(f, tmp, path, err, errn);
	f = NULL;
cleanup:
	h_file_abort(f, tmp);
	return rc;
}
