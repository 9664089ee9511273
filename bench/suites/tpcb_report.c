/*
 * tpcb_report.c - the tpcb suite's section of report.md, from tpcb-raw.csv:
 *
 *   - per (scale, mode): a chart of TPS against clients, one line per contender
 *     (tpcb-tps-s<scale>-<mode>.svg), and a table of TPS per contender with the versioning
 *     cost: prolly's TPS over pgbench's in the same cell (the target: >= 0.5 at 8
 *     clients in mode tpcb) and the retry rate of the prolly contenders;
 *   - every row: latency avg / p99 / max, CPU and context switches per transaction, WAL bytes
 *     per transaction, whether the data fit in shared_buffers, validation;
 *   - with --baseline, each cell's TPS relative to the baseline's (hrep_relative_qps), grouped
 *     by scale and mode.
 */
#include "tpcb_int.h"

#include "svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATHN 4400

static void cell_num(FILE *f, double v, int decimals)
{
	if (isnan(v))
		fputs("| - ", f);
	else
		fprintf(f, "| %.*f ", decimals, v);
}

/* The row of (scale, mode, clients, contender), or -1. */
static long find(const bench_csv *t, const char *scale, const char *mode, const char *clients,
                 const char *contender)
{
	for (size_t r = 0; r < t->nrows; r++)
		if (!strcmp(bench_csv_get(t, r, "scale"), scale) &&
		    !strcmp(bench_csv_get(t, r, "mode"), mode) &&
		    !strcmp(bench_csv_get(t, r, "clients"), clients) &&
		    !strcmp(bench_csv_get(t, r, "contender"), contender))
			return (long)r;
	return -1;
}

static double get(const bench_csv *t, long r, const char *col)
{
	return r < 0 ? NAN : bench_csv_num(t, (size_t)r, col);
}

/* Distinct values of col in first-seen order (pointers into t). */
static size_t distinct(const bench_csv *t, const char *col, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *v = bench_csv_get(t, r, col);
		size_t i = 0;
		while (i < n && strcmp(out[i], v))
			i++;
		if (i == n && n < max)
			out[n++] = v;
	}
	return n;
}

static int group(FILE *f, const char *dir, const bench_csv *t, const char *scale, const char *mode,
                 const char **clients, size_t nc, char *err, size_t errn)
{
	char title[200], file[200], path[PATHN];
	long any = -1;
	for (size_t r = 0; r < t->nrows && any < 0; r++)
		if (!strcmp(bench_csv_get(t, r, "scale"), scale) &&
		    !strcmp(bench_csv_get(t, r, "mode"), mode))
			any = (long)r;
	if (any < 0)
		return 0;
	double sb = get(t, any, "shared_buffers_bytes");
	fprintf(f, "### scale %s, %s\n\n", scale, mode);
	fprintf(f, "%s accounts; shared_buffers %.0f MiB. Data before the first cell:",
	        bench_csv_get(t, (size_t)any, "accounts"), sb / 1048576.0);
	const char *sep = " ";
	for (int k = 0; k < BT_N_CONTENDERS; k++) {
		long r = -1;
		for (size_t i = 0; i < nc && r < 0; i++)
			r = find(t, scale, mode, clients[i], bt_contender_names[k]);
		if (r < 0)
			continue;
		double db = get(t, r, "data_bytes");
		fprintf(f, "%s%s %.0f MiB (%s)", sep, bt_contender_names[k], db / 1048576.0,
		        isnan(db)  ? "size unknown"
		        : db <= sb ? "fits in shared_buffers"
		                   : "larger than shared_buffers");
		sep = "; ";
	}
	fputc('.', f);
	fputs(
	    "\n\n| clients | plain TPS | client TPS | sql TPS | client / plain | sql / plain "
	    "| client retries / txn | sql retries / txn |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	    f);
	snprintf(title, sizeof(title), "TPS against clients, scale %s, %s", scale, mode);
	svg_chart *ch = svg_line_new(title, "clients", "transactions/s");
	if (!ch) {
		snprintf(err, errn, "tpcb report: out of memory");
		return -1;
	}
	svg_set_log_x(ch, 1);
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		svg_series(ch, bt_contender_names[k]);
	for (size_t i = 0; i < nc; i++) {
		double tps[BT_N_CONTENDERS], retr[BT_N_CONTENDERS];
		for (int k = 0; k < BT_N_CONTENDERS; k++) {
			long r = find(t, scale, mode, clients[i], bt_contender_names[k]);
			tps[k] = get(t, r, "tps");
			double tx = get(t, r, "transactions"), rt = get(t, r, "retries");
			retr[k] = tx > 0 ? rt / tx : NAN;
			if (!isnan(tps[k]))
				svg_point(ch, bt_contender_names[k], strtod(clients[i], NULL), tps[k]);
		}
		fprintf(f, "| %s ", clients[i]);
		cell_num(f, tps[BT_PLAIN], 1);
		cell_num(f, tps[BT_CLIENT], 1);
		cell_num(f, tps[BT_SQL], 1);
		cell_num(f, tps[BT_CLIENT] / tps[BT_PLAIN], 3);
		cell_num(f, tps[BT_SQL] / tps[BT_PLAIN], 3);
		cell_num(f, retr[BT_CLIENT], 2);
		cell_num(f, retr[BT_SQL], 2);
		fputs("|\n", f);
	}
	snprintf(file, sizeof(file), "tpcb-tps-s%s-%s.svg", scale, mode);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	const svg_chart *one[1] = {ch};
	int rc = svg_write(path, one, 1, err, errn);
	svg_free(ch);
	if (rc)
		return -1;
	fprintf(f, "\n![TPS against clients, scale %s, %s](%s)\n\n", scale, mode, file);
	return 0;
}

int tpcb_report(FILE *f, const char *dir, char *err, size_t errn)
{
	char path[PATHN];
	bench_csv t = {0};
	const char *scales[64], *modes[4], *clients[64];
	int ret = -1;
	snprintf(path, sizeof(path), "%s/tpcb-raw.csv", dir);
	if (bench_csv_read(&t, path, err, errn))
		return -1;
	fprintf(f, "## tpcb suite\n\npgbench's TPC-B-like transaction (and its select-only variant) "
	           "on versioned tables, against pgbench itself (contender plain), from "
	           "[tpcb-raw.csv](tpcb-raw.csv). The ratio columns are the versioning cost: "
	           "prolly's TPS over pgbench's in the same cell (1 = no cost). A retry is a "
	           "commit that lost its race for the branch head and ran again.\n\n");
	size_t ns = distinct(&t, "scale", scales, 64), nm = distinct(&t, "mode", modes, 4),
	       nc = distinct(&t, "clients", clients, 64);
	for (size_t s = 0; s < ns; s++)
		for (size_t m = 0; m < nm; m++)
			if (group(f, dir, &t, scales[s], modes[m], clients, nc, err, errn))
				goto cleanup;
	fputs("### Every cell\n\n| cell | TPS | lat avg ms | p99 ms | max ms | retries | failed | "
	      "CPU us / txn | csw / txn | WAL B / txn | fits shared_buffers | validated |\n"
	      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
	      f);
	for (size_t r = 0; r < t.nrows; r++) {
		fprintf(f, "| %s ", bench_csv_get(&t, r, "cell_id"));
		cell_num(f, bench_csv_num(&t, r, "tps"), 1);
		cell_num(f, bench_csv_num(&t, r, "latency_avg_ms"), 2);
		cell_num(f, bench_csv_num(&t, r, "latency_p99_ms"), 2);
		cell_num(f, bench_csv_num(&t, r, "latency_max_ms"), 2);
		cell_num(f, bench_csv_num(&t, r, "retries"), 0);
		cell_num(f, bench_csv_num(&t, r, "failed"), 0);
		cell_num(f, bench_csv_num(&t, r, "cpu_us_per_txn"), 0);
		cell_num(f, bench_csv_num(&t, r, "csw_per_txn"), 1);
		cell_num(f, bench_csv_num(&t, r, "wal_bytes_per_txn"), 0);
		const char *fit = bench_csv_get(&t, r, "fits_shared_buffers");
		fprintf(f, "| %s | %s |\n",
		        !fit[0]             ? "-"
		        : !strcmp(fit, "1") ? "yes"
		                            : "no",
		        !strcmp(bench_csv_get(&t, r, "validated"), "1") ? "yes" : "**no**");
	}
	fputc('\n', f);
	if (hrep_relative_qps(f, dir, &htpcb_suite, "group", "clients", "contender", err, errn))
		goto cleanup;
	fputc('\n', f);
	ret = 0;
cleanup:
	bench_csv_free(&t);
	return ret;
}
