/*
 * rows.c - rows (hrow) for the harness's result files and their CSV lines (the CSV rules are
 * bench/lib/csv.h's).
 *
 * Rows (hrow). An ordered list of (column, value) strings; setting a column twice replaces its
 * value in place. Numbers are formatted here once: integers exactly, doubles with "%.9g" (an
 * integral double below 1e15 exactly, "%.0f"), NaN and infinities as "" (no value).
 */
#include "results_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ------------------------------------------------------------------------------------ */

hrow *hrow_new(void)
{
	return calloc(1, sizeof(hrow));
}

void hrow_clear(hrow *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->col[i]);
		free(r->val[i]);
	}
	r->n = 0;
}

void hrow_free(hrow *r)
{
	if (!r)
		return;
	hrow_clear(r);
	free(r->col);
	free(r->val);
	free(r);
}

/* Sets col to v. On no memory the row keeps its old value (or lacks the column). */
void hrow_str(hrow *r, const char *col, const char *v)
{
	if (!r || !col)
		return;
	char *nv = strdup(v ? v : "");
	if (!nv)
		return;
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->col[i], col) == 0) {
			free(r->val[i]);
			r->val[i] = nv;
			return;
		}
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		char **c = realloc(r->col, cap * sizeof(*c));
		if (c)
			r->col = c;
		char **v2 = c ? realloc(r->val, cap * sizeof(*v2)) : NULL;
		if (!v2) {
			free(nv);
			return;
		}
		r->val = v2;
		r->cap = cap;
	}
	char *nc = strdup(col);
	if (!nc) {
		free(nv);
		return;
	}
	r->col[r->n] = nc;
	r->val[r->n++] = nv;
}

void hrow_u64(hrow *r, const char *col, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	hrow_str(r, col, buf);
}

void hrow_i64(hrow *r, const char *col, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	hrow_str(r, col, buf);
}

void hrow_f64(hrow *r, const char *col, double v)
{
	char buf[64];
	if (!isfinite(v))
		buf[0] = '\0';
	else if (v == 0)
		snprintf(buf, sizeof(buf), "0"); /* no "-0" */
	else if (fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, sizeof(buf), "%.0f", v);
	else
		snprintf(buf, sizeof(buf), "%.9g", v);
	hrow_str(r, col, buf);
}

const char *hrow_get(const hrow *r, const char *col)
{
	if (!r || !col)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->col[i], col) == 0)
			return r->val[i];
	return NULL;
}

/* ---- CSV lines ----------------------------------------------------------------------------- */

void hr__csv_line(bench_buf *b, const char *const *columns, const hrow *r)
{
	for (size_t i = 0; columns[i]; i++) {
		if (i)
			bench_buf_putc(b, ',');
		bench_csv_field(b, r ? hrow_get(r, columns[i]) : columns[i]);
	}
	bench_buf_putc(b, '\n');
}
