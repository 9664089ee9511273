/*
 * insert_report.c - the insert suite's section of report.md (hins_report), from insert-raw.csv:
 *
 *   - per step, each contender's rate (rows/s, indexes/s or queries/s) and its ratio to plain's
 *     in the same run (the versioning cost: below 1 prolly is slower), p50/p99/max response
 *     time, CPU and context switches per operation, WAL per operation, the contender's size;
 *   - the q steps' background writers: target and achieved rows/s, their p99 and max;
 *   - per step a chart (insert-STEP.svg): operations per second, then p99 and max response time
 *     per second, one line per contender, so that stalls show.
 */
#include "insert_int.h"

#include "svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cell(FILE *f, const char *s)
{
	fputs("| ", f);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputc(' ', f);
}

static void num(FILE *f, double v, const char *fmt)
{
	char b[64];
	if (!isfinite(v))
		snprintf(b, sizeof(b), "-");
	else
		snprintf(b, sizeof(b), fmt, v);
	cell(f, b);
}

/* The row of (step, contender), or -1. */
static long find(const bench_csv *t, const char *step, const char *contender)
{
	for (size_t r = t->nrows; r-- > 0;)
		if (!strcmp(bench_csv_get(t, r, "step"), step) &&
		    !strcmp(bench_csv_get(t, r, "contender"), contender))
			return (long)r;
	return -1;
}

/* Adds "a;b;c" as points (second, value) of series name. */
static int series(svg_chart *c, const char *name, const char *list, int rate)
{
	char *copy = strdup(list), *save = NULL;
	int rc = 0, x = 0;
	if (!copy)
		return -1;
	for (char *p = strtok_r(copy, ";", &save); p && rc == 0; p = strtok_r(NULL, ";", &save), x++)
		rc = svg_point(c, name, x + (rate ? 1 : 0), strtod(p, NULL));
	free(copy);
	return rc;
}

static int step_chart(const char *dir, const bench_csv *t, const char *step, char *err, size_t errn)
{
	char title[96], path[4200];
	snprintf(title, sizeof(title), "insert %s: operations per second", step);
	svg_chart *a = svg_line_new(title, "second", "ops/s");
	snprintf(title, sizeof(title), "insert %s: p99 and max response time per second", step);
	svg_chart *b = svg_line_new(title, "second", "ms");
	int rc = -1;
	if (!a || !b) {
		bench_seterr(err, errn, "insert report: out of memory");
		goto cleanup;
	}
	svg_set_log_y(b, 1);
	for (int k = 0; hins_contender_names[k]; k++) {
		const char *cn = hins_contender_names[k];
		long r = find(t, step, cn);
		char name[64];
		if (r < 0)
			continue;
		if (series(a, cn, bench_csv_get(t, (size_t)r, "per_second_ops"), 1) != 0)
			goto oom;
		snprintf(name, sizeof(name), "%s p99", cn);
		if (series(b, name, bench_csv_get(t, (size_t)r, "per_second_p99_ms"), 1) != 0)
			goto oom;
		snprintf(name, sizeof(name), "%s max", cn);
		if (series(b, name, bench_csv_get(t, (size_t)r, "per_second_max_ms"), 1) != 0)
			goto oom;
		if (bench_csv_get(t, (size_t)r, "writer_per_second_ops")[0]) {
			snprintf(name, sizeof(name), "%s writer rows", cn);
			if (series(a, name, bench_csv_get(t, (size_t)r, "writer_per_second_ops"), 1) != 0)
				goto oom;
		}
	}
	snprintf(path, sizeof(path), "%s/insert-%s.svg", dir, step);
	const svg_chart *both[2] = {a, b};
	rc = svg_write(path, both, 2, err, errn);
	goto cleanup;
oom:
	bench_seterr(err, errn, "insert report: out of memory");
cleanup:
	svg_free(a);
	svg_free(b);
	return rc;
}

int hins_report(FILE *f, const char *dir, char *err, size_t errn)
{
	static const char *const cols[] = {"step",
	                                   "contender",
	                                   "unit/s",
	                                   "x plain",
	                                   "p50 ms",
	                                   "p99 ms",
	                                   "max ms",
	                                   "client CPU us/op",
	                                   "server CPU us/op",
	                                   "csw/op",
	                                   "WAL B/op",
	                                   "size MiB",
	                                   "validated",
	                                   NULL};
	char p[4200];
	bench_csv t = {0};
	int rc = -1;
	snprintf(p, sizeof(p), "%s/insert-raw.csv", dir);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	fprintf(f, "## Insert suite\n\nThe insert benchmark's steps, one row per (step, contender), "
	           "from [insert-raw.csv](insert-raw.csv). `x plain`: the contender's rate over "
	           "plain's in the same step (below 1: the cost of versioning). Response times are "
	           "per transaction (l.i*), per index (l.x) or per query (q*); CPU per operation: "
	           "the client process and the whole PostgreSQL server; csw: context switches of "
	           "the client and its backends.\n\n");
	for (size_t i = 0; cols[i]; i++)
		cell(f, cols[i]);
	fputs("|\n|---|---", f);
	for (size_t i = 2; cols[i]; i++)
		fputs(i == 12 ? "|---" : "|---:", f);
	fputs("|\n", f);
	for (size_t r = 0; r < t.nrows; r++) {
		const char *step = bench_csv_get(&t, r, "step");
		long pr = find(&t, step, "plain");
		double rate = bench_csv_num(&t, r, "ops_per_s");
		double plain = pr >= 0 ? bench_csv_num(&t, (size_t)pr, "ops_per_s") : NAN;
		cell(f, step);
		cell(f, bench_csv_get(&t, r, "contender"));
		num(f, rate, "%.1f");
		num(f, plain > 0 ? rate / plain : NAN, "%.2f");
		num(f, bench_csv_num(&t, r, "p50_ms"), "%.3f");
		num(f, bench_csv_num(&t, r, "p99_ms"), "%.3f");
		num(f, bench_csv_num(&t, r, "max_ms"), "%.3f");
		num(f, bench_csv_num(&t, r, "client_cpu_us_per_op"), "%.1f");
		num(f, bench_csv_num(&t, r, "server_cpu_us_per_op"), "%.1f");
		num(f,
		    bench_csv_num(&t, r, "client_csw_per_op") + bench_csv_num(&t, r, "backend_csw_per_op"),
		    "%.2f");
		num(f, bench_csv_num(&t, r, "wal_bytes_per_op"), "%.0f");
		num(f, bench_csv_num(&t, r, "contender_bytes") / 1048576.0, "%.1f");
		cell(f, strcmp(bench_csv_get(&t, r, "validated"), "1") ? "**no**" : "yes");
		fputs("|\n", f);
	}
	fprintf(f, "\n### Background writers of the query steps\n\n| step | contender | target rows/s "
	           "| achieved rows/s | p99 ms | max ms |\n|---|---|---:|---:|---:|---:|\n");
	for (size_t r = 0; r < t.nrows; r++) {
		if (!bench_csv_get(&t, r, "writer_ops")[0])
			continue;
		cell(f, bench_csv_get(&t, r, "step"));
		cell(f, bench_csv_get(&t, r, "contender"));
		num(f, bench_csv_num(&t, r, "writer_target_rows_per_s"), "%.0f");
		num(f, bench_csv_num(&t, r, "writer_ops_per_s"), "%.1f");
		num(f, bench_csv_num(&t, r, "writer_p99_ms"), "%.3f");
		num(f, bench_csv_num(&t, r, "writer_max_ms"), "%.3f");
		fputs("|\n", f);
	}
	fprintf(f, "\n### Relative to the baseline\n\n");
	if (hrep_relative_qps(f, dir, &hins_suite, "step", "contender", NULL, err, errn) != 0)
		goto cleanup;
	fprintf(f, "\n### Per second\n\n");
	for (size_t r = 0; r < t.nrows; r++) {
		const char *step = bench_csv_get(&t, r, "step");
		if (find(&t, step, bench_csv_get(&t, r, "contender")) != (long)r)
			continue;
		int first = 1;
		for (size_t q = 0; q < r; q++)
			first &= strcmp(bench_csv_get(&t, q, "step"), step) != 0;
		if (!first)
			continue;
		if (step_chart(dir, &t, step, err, errn) != 0)
			goto cleanup;
		fprintf(f, "![%s per second](insert-%s.svg)\n\n", step, step);
	}
	rc = 0;
cleanup:
	bench_csv_free(&t);
	return rc;
}
