/*
 * gates.c - comparing a run with a baseline run: hg_compare (harness.h).
 *
 * 1. Environment. For every key of he_material_machine (machine.txt) and he_material_postgres
 *    (postgres.txt), the two runs' values (he_read_value; a missing file or key reads as absent)
 *    must be equal. A difference is a material mismatch: every differing key is printed with both
 *    values; without allow_mismatch nothing is compared (regression.md says "refused", return 2);
 *    with it the comparison is "exploratory": everything is compared and printed, nothing gates
 *    (return 0).
 * 2. Cells. service-summary.csv and scale-summary.csv of both directories, matched by cell_id
 *    (one row per cell; a repeated id uses its last row). Per matched cell:
 *      throughput  loss % = (base - new) / base * 100 of succeeded_per_s (service) or ops_per_s
 *                  (scale) must be <= max_throughput_loss_percent;
 *      p99         increase % = (new - base) / base * 100 of p99_ms (service) or p99_us (scale)
 *                  must be <= max_p99_increase_percent, checked only when both runs have at least
 *                  minimum_percentile_samples samples in the cell (column "samples"; a run whose
 *                  summary has no such value counts as having enough);
 *      conflicts   the new run's conflict_rate <= max_conflict_rate (service);
 *      errors      the new run's error_rate <= max_error_rate (service);
 *      statements  the new run's statements_per_op <= max_pg_statements_per_operation, for rows
 *                  that have statements (> 0: the PostgreSQL store);
 *      validated   the new run's row must be validated.
 *      relative QPS (suites with gate_qps) every row of the new summary is matched with the
 *                  baseline's row of the same qps_key values (default cell_id; a repeated key
 *                  uses its last row); relative = new / base of gate_qps must be >=
 *                  1 - max_relative_qps_loss_percent / 100. The new summary file is rewritten
 *                  with the columns baseline_qps and relative_qps (empty where unmatched) for
 *                  the report (hrep_relative_qps).
 *    A check with no value (empty, or a zero baseline for a relative change) is SKIP. Baseline
 *    cells missing from the new run, and new cells without a baseline, are listed but are not
 *    failures; no matched cell at all is an error (-1).
 * 3. Output. regression.md in dir (a header saying gated / exploratory / refused, the limits, the
 *    result, the environment differences, and a Markdown table of every check: suite, cell,
 *    metric, baseline, new, change, limit, result), written through a temp file and rename; and
 *    to f the environment differences and a plain-text table of the checks that fell short.
 *    Return 1 when a gated check failed.
 */
#include "harness.h"
#include "results_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PATHN 4352

enum { ST_PASS, ST_FAIL, ST_SKIP };

/* One check of one cell. */
typedef struct check {
	const char *suite;
	char cell[128];
	const char *metric;
	char base[32], now[32], change[32], limit[64];
	int status;
	char note[96]; /* why a check was skipped */
} check;

/* A line of the environment comparison or a cell that is only in one run. */
typedef struct note {
	char text[600];
} note;

typedef struct cmp {
	check *c;
	size_t n, cap;
	note *env; /* environment differences */
	size_t nenv, capenv;
	note *missing; /* "suite cell" of baseline cells missing from the new run */
	size_t nmissing, capmissing;
	note *fresh; /* new cells without a baseline */
	size_t nfresh, capfresh;
	note *info; /* suites compared or not, and why */
	size_t ninfo, capinfo;
	size_t matched, base_cells, new_cells;
	int oom;
} cmp;

static void add_note(cmp *m, note **arr, size_t *n, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_note(cmp *m, note **arr, size_t *n, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	if (bench_grow((void **)arr, cap, *n + 1, sizeof(note))) {
		m->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf((*arr)[*n].text, sizeof((*arr)[*n].text), fmt, ap);
	va_end(ap);
	(*n)++;
}

static check *add_check(cmp *m, const char *suite, const char *cell, const char *metric)
{
	if (bench_grow((void **)&m->c, &m->cap, m->n + 1, sizeof(check))) {
		m->oom = 1;
		return NULL;
	}
	check *c = &m->c[m->n++];
	memset(c, 0, sizeof(*c));
	c->suite = suite;
	snprintf(c->cell, sizeof(c->cell), "%s", cell);
	c->metric = metric;
	c->status = ST_SKIP;
	return c;
}

static void cmp_free(cmp *m)
{
	free(m->c);
	free(m->env);
	free(m->missing);
	free(m->fresh);
	free(m->info);
}

/* A value for the tables: "-" when there is none, else a few significant digits. */
static void fmt_val(char *out, size_t n, double v)
{
	double a = fabs(v);
	if (!isfinite(v))
		snprintf(out, n, "-");
	else if (a >= 1000 || v == floor(v))
		snprintf(out, n, "%.0f", v);
	else
		snprintf(out, n, "%.4g", v);
}

static int truthy(const char *s)
{
	return strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0;
}

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ---- the environment -------------------------------------------------------------------------- */

static void env_file(cmp *m, const char *dir, const char *baseline, const char *file,
                     const char *const *keys)
{
	char a[PATHN], b[PATHN];
	snprintf(a, sizeof(a), "%s/%s", baseline, file);
	snprintf(b, sizeof(b), "%s/%s", dir, file);
	for (size_t i = 0; keys[i]; i++) {
		char *vb = he_read_value(a, keys[i]), *vn = he_read_value(b, keys[i]);
		if ((vb == NULL) != (vn == NULL) || (vb && strcmp(vb, vn) != 0))
			add_note(m, &m->env, &m->nenv, &m->capenv, "%s|%s|%s|%s", file, keys[i],
			         vb ? vb : "(absent)", vn ? vn : "(absent)");
		free(vb);
		free(vn);
	}
}

/* ---- the cells -------------------------------------------------------------------------------- */

/* A suite's gates, from its h_suite entry (only suites with a throughput column have gates). */
typedef struct suite_def {
	const char *name;
	char file[128];
	const char *tput, *p99, *p99_unit;
	int rates; /* conflict and error rate gates */
} suite_def;

/* The row of cell id in t (the last one), or -1. */
static long find_cell(const bench_csv *t, const char *id)
{
	long found = -1;
	for (size_t r = 0; r < t->nrows; r++)
		if (strcmp(bench_csv_get(t, r, "cell_id"), id) == 0)
			found = (long)r;
	return found;
}

static void relative(check *c, double b, double v, int loss, double limit)
{
	fmt_val(c->base, sizeof(c->base), b);
	fmt_val(c->now, sizeof(c->now), v);
	snprintf(c->limit, sizeof(c->limit), "%s <= %g%%", loss ? "loss" : "increase", limit);
	if (!isfinite(b) || !isfinite(v)) {
		snprintf(c->note, sizeof(c->note), "no value");
		return;
	}
	if (b <= 0) {
		snprintf(c->note, sizeof(c->note), "baseline is 0");
		return;
	}
	double change = (v - b) / b * 100.0; /* signed: + is more */
	snprintf(c->change, sizeof(c->change), "%+.1f%%", change);
	c->status = (loss ? -change : change) > limit ? ST_FAIL : ST_PASS;
}

static void absolute(check *c, double b, double v, double limit)
{
	fmt_val(c->base, sizeof(c->base), b);
	fmt_val(c->now, sizeof(c->now), v);
	snprintf(c->limit, sizeof(c->limit), "<= %g", limit);
	if (!isfinite(v)) {
		snprintf(c->note, sizeof(c->note), "no value");
		return;
	}
	if (isfinite(b))
		snprintf(c->change, sizeof(c->change), "%+.3g", v - b);
	c->status = v > limit ? ST_FAIL : ST_PASS;
}

static void compare_cell(cmp *m, const suite_def *s, const hw_regression *g, const bench_csv *tb,
                         size_t rb, const bench_csv *tn, size_t rn, const char *id)
{
	check *c;
	if ((c = add_check(m, s->name, id, s->tput)))
		relative(c, bench_csv_num(tb, rb, s->tput), bench_csv_num(tn, rn, s->tput), 1,
		         g->max_throughput_loss_percent);

	double sb = bench_csv_num(tb, rb, "samples"), sn = bench_csv_num(tn, rn, "samples");
	double floor_n = (double)g->minimum_percentile_samples;
	if ((c = add_check(m, s->name, id, s->p99))) {
		relative(c, bench_csv_num(tb, rb, s->p99), bench_csv_num(tn, rn, s->p99), 0,
		         g->max_p99_increase_percent);
		snprintf(c->limit, sizeof(c->limit), "increase <= %g%%, n >= %" PRIu64,
		         g->max_p99_increase_percent, g->minimum_percentile_samples);
		double few = isfinite(sn) && sn < floor_n ? sn : isfinite(sb) && sb < floor_n ? sb : NAN;
		if (isfinite(few)) {
			c->status = ST_SKIP;
			snprintf(c->note, sizeof(c->note), "%.0f samples < %" PRIu64, few,
			         g->minimum_percentile_samples);
		}
	}
	if (s->rates) {
		if ((c = add_check(m, s->name, id, "conflict_rate")))
			absolute(c, bench_csv_num(tb, rb, "conflict_rate"),
			         bench_csv_num(tn, rn, "conflict_rate"), g->max_conflict_rate);
		if ((c = add_check(m, s->name, id, "error_rate")))
			absolute(c, bench_csv_num(tb, rb, "error_rate"), bench_csv_num(tn, rn, "error_rate"),
			         g->max_error_rate);
	}
	double spo = bench_csv_num(tn, rn, "statements_per_op");
	if (isfinite(spo) && spo > 0 && (c = add_check(m, s->name, id, "statements_per_op")))
		absolute(c, bench_csv_num(tb, rb, "statements_per_op"), spo,
		         g->max_pg_statements_per_operation);
	if ((c = add_check(m, s->name, id, "validated"))) {
		snprintf(c->limit, sizeof(c->limit), "validated");
		snprintf(c->base, sizeof(c->base), "%s",
		         bench_csv_col(tb, "validated") < 0           ? "-"
		         : truthy(bench_csv_get(tb, rb, "validated")) ? "yes"
		                                                      : "no");
		if (bench_csv_col(tn, "validated") < 0) {
			snprintf(c->now, sizeof(c->now), "-");
			snprintf(c->note, sizeof(c->note), "no validated column");
		} else {
			int ok = truthy(bench_csv_get(tn, rn, "validated"));
			snprintf(c->now, sizeof(c->now), "%s", ok ? "yes" : "no");
			c->status = ok ? ST_PASS : ST_FAIL;
		}
	}
}

/* Compares one suite's summaries; -1 on a read error. */
static int compare_suite(cmp *m, const suite_def *s, const char *dir, const char *baseline,
                         const hw_regression *g, char *err, size_t errn)
{
	char pb[PATHN], pn[PATHN];
	bench_csv tb = {0}, tn = {0};
	int rc = -1;
	snprintf(pb, sizeof(pb), "%s/%s", baseline, s->file);
	snprintf(pn, sizeof(pn), "%s/%s", dir, s->file);
	int hb = exists(pb), hn = exists(pn);
	if (!hb && !hn)
		return 0;
	if (!hb) {
		add_note(m, &m->info, &m->ninfo, &m->capinfo, "%s: the baseline has no %s: not compared",
		         s->name, s->file);
		return 0;
	}
	if (bench_csv_read(&tb, pb, err, errn) != 0)
		goto cleanup;
	if (hn && bench_csv_read(&tn, pn, err, errn) != 0)
		goto cleanup;
	if (!hn)
		add_note(m, &m->info, &m->ninfo, &m->capinfo, "%s: this run has no %s", s->name, s->file);
	m->base_cells += tb.nrows;
	m->new_cells += tn.nrows;
	for (size_t r = 0; r < tb.nrows; r++) {
		const char *id = bench_csv_get(&tb, r, "cell_id");
		if (find_cell(&tb, id) != (long)r) /* a repeated id: its last row counts */
			continue;
		long rn = hn ? find_cell(&tn, id) : -1;
		if (rn < 0) {
			add_note(m, &m->missing, &m->nmissing, &m->capmissing, "%s|%s", s->name, id);
			continue;
		}
		m->matched++;
		compare_cell(m, s, g, &tb, r, &tn, (size_t)rn, id);
	}
	for (size_t r = 0; r < tn.nrows; r++) {
		const char *id = bench_csv_get(&tn, r, "cell_id");
		if (find_cell(&tn, id) == (long)r && find_cell(&tb, id) < 0)
			add_note(m, &m->fresh, &m->nfresh, &m->capfresh, "%s|%s", s->name, id);
	}
	rc = 0;
cleanup:
	bench_csv_free(&tb);
	bench_csv_free(&tn);
	return rc;
}

/* ---- relative QPS ----------------------------------------------------------------------------- */

/* The name of row r's cell across runs: its qps_key values joined by '/' (cell_id by default). */
static void qps_label(char *out, size_t n, const bench_csv *t, size_t r, const h_suite *s)
{
	static const char *const by_id[] = {"cell_id", NULL};
	const char *const *key = s->qps_key ? s->qps_key : by_id;
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; key[i] && used < n; i++)
		used += (size_t)snprintf(out + used, n - used, "%s%s", i ? "/" : "",
		                         bench_csv_get(t, r, key[i]));
}

/* The last row of t whose label is `label`, or -1. */
static long find_label(const bench_csv *t, const h_suite *s, const char *label)
{
	char l[128];
	long found = -1;
	for (size_t r = 0; r < t->nrows; r++) {
		qps_label(l, sizeof(l), t, r, s);
		if (strcmp(l, label) == 0)
			found = (long)r;
	}
	return found;
}

/* A number as the summaries write it (enough digits to compare), "" for none. */
static void csv_num(char *out, size_t n, double v)
{
	if (isfinite(v))
		snprintf(out, n, "%.6g", v);
	else
		out[0] = '\0';
}

/* Rewrites dir/file (table t) with the columns baseline_qps and relative_qps (added at the end,
 * or replaced) from base[] and rel[] (one per row). */
static int write_relative(const char *dir, const char *file, const bench_csv *t, const double *base,
                          const double *rel, char *err, size_t errn)
{
	static const char *const extra[] = {"baseline_qps", "relative_qps"};
	long at[2] = {bench_csv_col(t, extra[0]), bench_csv_col(t, extra[1])};
	bench_buf b = {0};
	char num[64];
	int rc;
	for (size_t c = 0; c < t->ncols; c++) {
		if (c)
			bench_buf_putc(&b, ',');
		bench_csv_field(&b, t->header[c]);
	}
	for (int k = 0; k < 2; k++)
		if (at[k] < 0) {
			bench_buf_putc(&b, ',');
			bench_csv_field(&b, extra[k]);
		}
	bench_buf_putc(&b, '\n');
	for (size_t r = 0; r < t->nrows; r++) {
		const double v[2] = {base[r], rel[r]};
		for (size_t c = 0; c < t->ncols; c++) {
			if (c)
				bench_buf_putc(&b, ',');
			const char *val = t->rows[r][c];
			for (int k = 0; k < 2; k++)
				if (at[k] == (long)c) {
					csv_num(num, sizeof(num), v[k]);
					val = num;
				}
			bench_csv_field(&b, val);
		}
		for (int k = 0; k < 2; k++)
			if (at[k] < 0) {
				csv_num(num, sizeof(num), v[k]);
				bench_buf_putc(&b, ',');
				bench_csv_field(&b, num);
			}
		bench_buf_putc(&b, '\n');
	}
	if (b.oom) {
		bench_buf_free(&b);
		bench_seterr(err, errn, "out of memory");
		return -1;
	}
	rc = hr__write_atomic(dir, file, b.p, b.n, err, errn);
	bench_buf_free(&b);
	return rc;
}

/* Relative QPS of suite s: every row of this run's summary against the baseline row with the
 * same label; the columns written into this run's summary; one check per matched row. */
static int relative_suite(cmp *m, const h_suite *s, const char *dir, const char *baseline,
                          const hw_regression *g, char *err, size_t errn)
{
	char file[128], pb[PATHN], pn[PATHN], label[128];
	bench_csv tb = {0}, tn = {0};
	double *base = NULL, *rel = NULL;
	int rc = -1;
	h_summary_file(s, file, sizeof(file));
	snprintf(pb, sizeof(pb), "%s/%s", baseline, file);
	snprintf(pn, sizeof(pn), "%s/%s", dir, file);
	if (!exists(pn))
		return 0;
	if (!exists(pb)) {
		add_note(m, &m->info, &m->ninfo, &m->capinfo, "%s: the baseline has no %s: no relative QPS",
		         s->name, file);
		return 0;
	}
	if (bench_csv_read(&tb, pb, err, errn) != 0 || bench_csv_read(&tn, pn, err, errn) != 0)
		goto cleanup;
	base = calloc(tn.nrows + 1, sizeof(double));
	rel = calloc(tn.nrows + 1, sizeof(double));
	if (!base || !rel) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	double floor_rel = 1.0 - g->max_relative_qps_loss_percent / 100.0;
	m->base_cells += tb.nrows;
	m->new_cells += tn.nrows;
	for (size_t r = 0; r < tn.nrows; r++) {
		base[r] = rel[r] = NAN;
		qps_label(label, sizeof(label), &tn, r, s);
		long rb = find_label(&tb, s, label);
		if (rb < 0) {
			if (find_label(&tn, s, label) == (long)r)
				add_note(m, &m->fresh, &m->nfresh, &m->capfresh, "%s|%s", s->name, label);
			continue;
		}
		m->matched++;
		double b = bench_csv_num(&tb, (size_t)rb, s->gate_qps);
		double v = bench_csv_num(&tn, r, s->gate_qps);
		check *c = add_check(m, s->name, label, "relative_qps");
		base[r] = b;
		if (!c)
			continue;
		fmt_val(c->base, sizeof(c->base), b);
		fmt_val(c->now, sizeof(c->now), v);
		snprintf(c->limit, sizeof(c->limit), ">= %.4gx (loss <= %g%%)", floor_rel,
		         g->max_relative_qps_loss_percent);
		if (!isfinite(b) || !isfinite(v))
			snprintf(c->note, sizeof(c->note), "no value");
		else if (b <= 0)
			snprintf(c->note, sizeof(c->note), "baseline is 0");
		else {
			rel[r] = v / b;
			snprintf(c->change, sizeof(c->change), "%.3fx", rel[r]);
			c->status = rel[r] < floor_rel ? ST_FAIL : ST_PASS;
		}
	}
	for (size_t r = 0; r < tb.nrows; r++) {
		qps_label(label, sizeof(label), &tb, r, s);
		if (find_label(&tb, s, label) == (long)r && find_label(&tn, s, label) < 0)
			add_note(m, &m->missing, &m->nmissing, &m->capmissing, "%s|%s", s->name, label);
	}
	rc = write_relative(dir, file, &tn, base, rel, err, errn);
cleanup:
	free(base);
	free(rel);
	bench_csv_free(&tb);
	bench_csv_free(&tn);
	return rc;
}

/* ---- output ----------------------------------------------------------------------------------- */

/* Splits "a|b|c|d" notes into fields (at most n). */
static int split(char *s, char **out, int n)
{
	int k = 0;
	out[k++] = s;
	for (char *p = s; *p && k < n; p++) {
		if (*p == '|') {
			*p = '\0';
			out[k++] = p + 1;
		}
	}
	return k;
}

static const char *status_name(int st, int gated)
{
	if (st == ST_PASS)
		return gated ? "PASS" : "pass";
	if (st == ST_FAIL)
		return gated ? "FAIL" : "over (not gated)";
	return "SKIP";
}

enum { MODE_GATED, MODE_EXPLORATORY, MODE_REFUSED };

static void md_limits(FILE *f, const hw_regression *g)
{
	fprintf(f,
	        "- Limits: throughput loss <= %g%%; p99 increase <= %g%% (cells with >= %" PRIu64
	        " samples); conflict rate <= %g; error rate <= %g; statements per operation <= %g "
	        "(PostgreSQL rows); relative QPS >= %g (loss <= %g%%); every row validated\n",
	        g->max_throughput_loss_percent, g->max_p99_increase_percent,
	        g->minimum_percentile_samples, g->max_conflict_rate, g->max_error_rate,
	        g->max_pg_statements_per_operation, 1.0 - g->max_relative_qps_loss_percent / 100.0,
	        g->max_relative_qps_loss_percent);
}

static int write_md(const char *dir, const char *baseline, const hw_regression *g, cmp *m, int mode,
                    size_t failed, size_t passed, size_t skipped, char *err, size_t errn)
{
	char path[PATHN], tmp[PATHN];
	FILE *f = NULL;
	int rc = -1;
	if (!(f = h_file_begin(path, tmp, sizeof(path), dir, "regression.md", err, errn)))
		goto cleanup;
	fprintf(f, "# Regression comparison\n\n");
	if (mode == MODE_GATED)
		fprintf(f, "Comparison: **gated** (every check is a gate)\n\n");
	else if (mode == MODE_EXPLORATORY)
		fprintf(f, "Comparison: **exploratory** (the environments differ materially; "
		           "--allow-environment-mismatch: the gates are skipped)\n\n");
	else
		fprintf(f, "Comparison: **refused** (the environments differ materially; nothing "
		           "compared; --allow-environment-mismatch makes an exploratory comparison)\n\n");
	fprintf(f, "- Run: `%s`\n- Baseline: `%s`\n", dir, baseline);
	md_limits(f, g);
	if (mode == MODE_GATED)
		fprintf(f,
		        "- Result: **%s**: %zu checks failed, %zu passed, %zu skipped; %zu cells "
		        "matched\n",
		        failed ? "FAIL" : "PASS", failed, passed, skipped, m->matched);
	else if (mode == MODE_EXPLORATORY)
		fprintf(f,
		        "- Result: **exploratory**: %zu checks beyond the limits (not gated), %zu "
		        "within, %zu skipped; %zu cells matched\n",
		        failed, passed, skipped, m->matched);
	else
		fprintf(f, "- Result: **refused**: %zu material environment differences\n", m->nenv);
	for (size_t i = 0; i < m->ninfo; i++)
		fprintf(f, "- Note: %s\n", m->info[i].text);
	if (m->nenv) {
		fprintf(f, "\n## Environment differences\n\n| file | key | baseline | this run |\n"
		           "|---|---|---|---|\n");
		for (size_t i = 0; i < m->nenv; i++) {
			char t[sizeof(m->env[i].text)], *p[4] = {"", "", "", ""};
			memcpy(t, m->env[i].text, sizeof(t));
			split(t, p, 4);
			for (int k = 0; k < 4; k++)
				hrep_md_cell(f, p[k]);
			fputs("|\n", f);
		}
	}
	if (mode != MODE_REFUSED) {
		fprintf(f, "\n## Checks\n\n| suite | cell | metric | baseline | new | change | limit | "
		           "result |\n|---|---|---|---:|---:|---:|---|---|\n");
		for (size_t i = 0; i < m->n; i++) {
			const check *c = &m->c[i];
			char res[160];
			if (c->status == ST_SKIP && c->note[0])
				snprintf(res, sizeof(res), "SKIP (%s)", c->note);
			else
				snprintf(res, sizeof(res), "%s", status_name(c->status, mode == MODE_GATED));
			const char *cols[] = {c->suite, c->cell, c->metric,
			                      c->base,  c->now,  c->change[0] ? c->change : "-",
			                      c->limit, res};
			for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
				hrep_md_cell(f, cols[k]);
			fputs("|\n", f);
		}
		const struct {
			const char *title;
			note *v;
			size_t n;
		} lists[] = {
		    {"Baseline cells missing from this run (not a failure)", m->missing, m->nmissing},
		    {"Cells of this run without a baseline", m->fresh, m->nfresh}};
		for (size_t l = 0; l < 2; l++) {
			if (!lists[l].n)
				continue;
			fprintf(f, "\n## %s\n\n", lists[l].title);
			for (size_t i = 0; i < lists[l].n; i++) {
				char t[sizeof(note)], *p[2] = {"", ""};
				memcpy(t, lists[l].v[i].text, sizeof(t));
				split(t, p, 2);
				fprintf(f, "- %s `%s`\n", p[0], p[1]);
			}
		}
	}
	rc = h_file_commit(f, tmp, path, err, errn);
	f = NULL;
cleanup:
	h_file_abort(f, tmp);
	return rc;
}

static void print_env(FILE *f, const cmp *m)
{
	for (size_t i = 0; i < m->nenv; i++) {
		char t[sizeof(note)], *p[4] = {"", "", "", ""};
		memcpy(t, m->env[i].text, sizeof(t));
		split(t, p, 4);
		fprintf(f, "regression: environment mismatch: %s %s: baseline '%s', this run '%s'\n", p[0],
		        p[1], p[2], p[3]);
	}
}

/* The plain-text table of the checks that fell short. */
static void print_failures(FILE *f, const cmp *m, int gated)
{
	static const char *const head[] = {"suite", "cell",   "metric", "baseline",
	                                   "new",   "change", "limit"};
	size_t w[7];
	for (int k = 0; k < 7; k++)
		w[k] = strlen(head[k]);
	for (size_t i = 0; i < m->n; i++) {
		const check *c = &m->c[i];
		if (c->status != ST_FAIL)
			continue;
		const char *v[] = {c->suite, c->cell, c->metric, c->base, c->now, c->change, c->limit};
		for (int k = 0; k < 7; k++)
			if (strlen(v[k]) > w[k])
				w[k] = strlen(v[k]);
	}
	fprintf(f, "%s", gated ? "" : "(exploratory, not gated)\n");
	for (int k = 0; k < 7; k++)
		fprintf(f, "%-*s%s", k < 6 ? (int)w[k] : 0, head[k], k < 6 ? "  " : "\n");
	for (size_t i = 0; i < m->n; i++) {
		const check *c = &m->c[i];
		if (c->status != ST_FAIL)
			continue;
		const char *v[] = {c->suite, c->cell, c->metric, c->base, c->now, c->change, c->limit};
		for (int k = 0; k < 7; k++)
			fprintf(f, "%-*s%s", k < 6 ? (int)w[k] : 0, v[k], k < 6 ? "  " : "\n");
	}
}

int hg_compare(const char *dir, const char *baseline, const hw_regression *g, int allow_mismatch,
               FILE *f, char *err, size_t errn)
{
	return hg_compare_suites(dir, baseline, h_suites, g, allow_mismatch, f, err, errn);
}

int hg_compare_suites(const char *dir, const char *baseline, const h_suite *const *suites,
                      const hw_regression *g, int allow_mismatch, FILE *f, char *err, size_t errn)
{
	cmp m = {0};
	size_t failed = 0, passed = 0, skipped = 0;
	int rc = -1, mode = MODE_GATED;
	env_file(&m, dir, baseline, "machine.txt", he_material_machine);
	env_file(&m, dir, baseline, "postgres.txt", he_material_postgres);
	if (m.oom)
		goto nomem;
	if (m.nenv) {
		print_env(f, &m);
		if (!allow_mismatch) {
			fprintf(f,
			        "regression: comparison with %s refused: the environments differ "
			        "materially (--allow-environment-mismatch compares anyway, exploratory)\n",
			        baseline);
			if (write_md(dir, baseline, g, &m, MODE_REFUSED, 0, 0, 0, err, errn) != 0)
				goto cleanup;
			rc = 2;
			goto cleanup;
		}
		mode = MODE_EXPLORATORY;
	}
	for (size_t i = 0; suites[i]; i++) {
		const h_suite *hs = suites[i];
		suite_def sd = {hs->name,      "", hs->gate_throughput, hs->gate_p99, hs->gate_p99_unit,
		                hs->gate_rates};
		if (hs->gate_qps && relative_suite(&m, hs, dir, baseline, g, err, errn) != 0)
			goto cleanup;
		if (!hs->gate_throughput)
			continue;
		h_summary_file(hs, sd.file, sizeof(sd.file));
		if (compare_suite(&m, &sd, dir, baseline, g, err, errn) != 0)
			goto cleanup;
	}
	if (m.oom)
		goto nomem;
	if (m.matched == 0) {
		bench_seterr(
		    err, errn,
		    "no cell of the baseline %s matches a cell of %s (%zu baseline cells, %zu cells in "
		    "this run)",
		    baseline, dir, m.base_cells, m.new_cells);
		goto cleanup;
	}
	for (size_t i = 0; i < m.n; i++) {
		if (m.c[i].status == ST_FAIL)
			failed++;
		else if (m.c[i].status == ST_PASS)
			passed++;
		else
			skipped++;
	}
	if (write_md(dir, baseline, g, &m, mode, failed, passed, skipped, err, errn) != 0)
		goto cleanup;
	for (size_t i = 0; i < m.ninfo; i++)
		fprintf(f, "regression: note: %s\n", m.info[i].text);
	if (m.nmissing) {
		fprintf(f, "regression: %zu baseline cells missing from this run:", m.nmissing);
		for (size_t i = 0; i < m.nmissing; i++) {
			char t[sizeof(note)], *p[2] = {"", ""};
			memcpy(t, m.missing[i].text, sizeof(t));
			split(t, p, 2);
			fprintf(f, " %s/%s", p[0], p[1]);
		}
		fputc('\n', f);
	}
	if (mode == MODE_EXPLORATORY) {
		fprintf(f,
		        "regression: exploratory comparison with %s (gates skipped): %zu of %zu checks "
		        "beyond the limits, %zu skipped, %zu cells matched\n",
		        baseline, failed, failed + passed, skipped, m.matched);
		if (failed)
			print_failures(f, &m, 0);
		rc = 0;
	} else if (failed) {
		fprintf(f,
		        "regression: FAIL against %s: %zu of %zu checks fell short (%zu skipped, %zu "
		        "cells matched):\n",
		        baseline, failed, failed + passed, skipped, m.matched);
		print_failures(f, &m, 1);
		rc = 1;
	} else {
		fprintf(f,
		        "regression: PASS against %s: %zu checks passed (%zu skipped, %zu cells "
		        "matched)\n",
		        baseline, passed, skipped, m.matched);
		rc = 0;
	}
	fprintf(f, "regression: details in %s/regression.md\n", dir);
	goto cleanup;
nomem:
	bench_seterr(err, errn, "out of memory");
cleanup:
	cmp_free(&m);
	return rc;
}
