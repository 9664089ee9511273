/*
 * sysbench_report.c - the sysbench suite's section of report.md (hsb_report): per group
 * (point, range, range-agg, write, oltp) a table of QPS per contender with the versioning cost
 * (plain QPS over the contender's QPS: 2.0 means prolly takes twice the time per query) and
 * p95, and a chart of that cost per cell (sysbench-cost-GROUP.svg, log scale: 1 is parity).
 * With --baseline, the relative QPS of every cell (hrep_relative_qps: a table and a chart per
 * group, bars per contender) comes first.
 */
#include "sysbench_int.h"

#include "svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PATHN 4200

static const char *const groups[] = {"point", "range", "range-agg", "write", "oltp", NULL};

/* The row of (microbenchmark, param, clients, contender) in t, or -1. */
static long find(const bench_csv *t, const char *b, const char *param, const char *clients,
                 const char *contender)
{
	for (size_t r = 0; r < t->nrows; r++)
		if (!strcmp(bench_csv_get(t, r, "microbenchmark"), b) &&
		    !strcmp(bench_csv_get(t, r, "param"), param) &&
		    !strcmp(bench_csv_get(t, r, "clients"), clients) &&
		    !strcmp(bench_csv_get(t, r, "contender"), contender))
			return (long)r;
	return -1;
}

static void num(FILE *f, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs(" - |", f);
}

static int group_section(FILE *f, const char *dir, const bench_csv *t, const char *g, char *err,
                         size_t errn)
{
	char title[128], path[PATHN];
	svg_chart *ch = NULL;
	int any = 0, ret = -1;
	for (size_t r = 0; r < t->nrows; r++)
		any |= !strcmp(bench_csv_get(t, r, "group"), g);
	if (!any)
		return 0;
	snprintf(title, sizeof(title), "sysbench %s: versioning cost (plain QPS / prolly QPS)", g);
	if (!(ch = svg_bars_new(title, "microbenchmark, clients", "cost (x plain time)")))
		goto oom;
	svg_set_log_y(ch, 1);
	svg_series(ch, "client");
	svg_series(ch, "sql");
	fprintf(f, "### %s\n\n![%s](sysbench-cost-%s.svg)\n\n", g, g, g);
	fprintf(f, "| microbenchmark | clients | plain qps | client qps | sql qps | client cost | "
	           "sql cost | plain p95 ms | client p95 ms | sql p95 ms | validated |\n"
	           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
	for (size_t r = 0; r < t->nrows; r++) {
		if (strcmp(bench_csv_get(t, r, "group"), g))
			continue;
		const char *b = bench_csv_get(t, r, "microbenchmark"), *p = bench_csv_get(t, r, "param"),
		           *cl = bench_csv_get(t, r, "clients");
		long rows[BT_N_CONTENDERS];
		int first = 1, ok = 1;
		for (int k = 0; k < BT_N_CONTENDERS; k++) {
			rows[k] = find(t, b, p, cl, sb_contender_names[k]);
			if (rows[k] >= 0 && (size_t)rows[k] < r)
				first = 0; /* the cell's first row of the three prints it */
		}
		if (!first)
			continue;
		char cat[96];
		snprintf(cat, sizeof(cat), "%s%s%s c%s", b, strcmp(p, "0") ? "-" : "",
		         strcmp(p, "0") ? p : "", cl);
		double qps[BT_N_CONTENDERS];
		fprintf(f, "| %s%s%s | %s |", b, strcmp(p, "0") ? " " : "", strcmp(p, "0") ? p : "", cl);
		for (int k = 0; k < BT_N_CONTENDERS; k++) {
			qps[k] = rows[k] >= 0 ? bench_csv_num(t, (size_t)rows[k], "qps") : NAN;
			if (rows[k] >= 0 && strcmp(bench_csv_get(t, (size_t)rows[k], "validated"), "1"))
				ok = 0;
			num(f, qps[k], " %.0f |");
		}
		for (int k = BT_CLIENT; k < BT_N_CONTENDERS; k++) {
			double cost = qps[k] > 0 ? qps[BT_PLAIN] / qps[k] : NAN;
			num(f, cost, " %.2f |");
			if (isfinite(cost) && svg_bar(ch, cat, sb_contender_names[k], cost))
				goto oom;
		}
		for (int k = 0; k < BT_N_CONTENDERS; k++)
			num(f, rows[k] >= 0 ? bench_csv_num(t, (size_t)rows[k], "p95_ms") : NAN, " %.3f |");
		fprintf(f, " %s |\n", ok ? "yes" : "**no**");
	}
	fputc('\n', f);
	snprintf(path, sizeof(path), "%s/sysbench-cost-%s.svg", dir, g);
	const svg_chart *one[] = {ch};
	ret = svg_write(path, one, 1, err, errn);
	goto cleanup;
oom:
	snprintf(err, errn, "sysbench report: out of memory");
cleanup:
	svg_free(ch);
	return ret;
}

int hsb_report(FILE *f, const char *dir, char *err, size_t errn)
{
	char p[PATHN];
	bench_csv t = {0};
	int ret = -1;
	snprintf(p, sizeof(p), "%s/sysbench-raw.csv", dir);
	if (bench_csv_read(&t, p, err, errn) != 0)
		return -1;
	fprintf(f, "## sysbench suite\n\nQPS per microbenchmark, client count and contender "
	           "([sysbench-raw.csv](sysbench-raw.csv)); cost = plain QPS / contender QPS (the "
	           "versioning cost: 1.0 is parity, above 1 prolly is slower). Latency per event (a "
	           "transaction, lost races retried included). CPU and context switches per query "
	           "are in the raw file.\n\n");
	if (hrep_relative_qps(f, dir, &hsb_suite, "group", "label", "contender", err, errn))
		goto cleanup;
	for (int g = 0; groups[g]; g++)
		if (group_section(f, dir, &t, groups[g], err, errn))
			goto cleanup;
	ret = 0;
cleanup:
	bench_csv_free(&t);
	return ret;
}
