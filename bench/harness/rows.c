/*
 * rows.c - rows (hrow) and CSV tables (csv_table) for the harness's result files, and the small
 * string and CSV helpers results.c and summary.c share through results_int.h.
 *
 * Rows (hrow). An ordered list of (column, value) strings; setting a column twice replaces its
 * value in place. Numbers are formatted here once: integers exactly, doubles with "%.9g" (an
 * integral double below 1e15 exactly, "%.0f"), NaN and infinities as "" (no value).
 *
 * CSV (RFC 4180). Fields are separated by ',', records end with "\n" (a "\r\n" is read too). A
 * field holding ',', '"', '\r' or '\n' is written in double quotes with '"' doubled. The reader
 * takes quoted fields with embedded commas and newlines, pads short records with "" and drops
 * extra fields; empty lines are skipped.
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

/* ---- CSV ------------------------------------------------------------------------------------- */

void hr__sv_reset(hr__strvec *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

void hr__sv_free(hr__strvec *s)
{
	hr__sv_reset(s);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}

int hr__sv_push(hr__strvec *s, char *owned)
{
	if (!owned)
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			free(owned);
			return -1;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = owned;
	return 0;
}

/* Reads the record at buf[*pos] into out; the results are listed in results_int.h. */
int hr__csv_record(hr__strvec *out, const char *buf, size_t len, size_t *pos)
{
	size_t i = *pos;
	bench_buf f = {0};
	int rc;
	hr__sv_reset(out);
	if (i >= len)
		return HR__REC_END;
	for (;;) {
		f.n = 0;
		bench_buf_put(&f, "", 0);
		if (i < len && buf[i] == '"') {
			i++;
			for (;;) {
				if (i >= len) {
					rc = HR__REC_BADQUOTE;
					goto cleanup;
				}
				if (buf[i] == '"') {
					if (i + 1 < len && buf[i + 1] == '"') {
						bench_buf_putc(&f, '"');
						i += 2;
						continue;
					}
					i++;
					break;
				}
				bench_buf_putc(&f, buf[i++]);
			}
		}
		/* Unquoted text (or anything after a closing quote, kept as written). */
		size_t s = i;
		while (i < len && buf[i] != ',' && buf[i] != '\n' &&
		       !(buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n'))
			i++;
		bench_buf_put(&f, buf + s, i - s);
		if (f.oom || hr__sv_push(out, strdup(f.p)) != 0) {
			rc = HR__REC_NOMEM;
			goto cleanup;
		}
		if (i >= len) {
			rc = HR__REC_EOF;
			break;
		}
		if (buf[i] == ',') {
			i++;
			continue;
		}
		i += buf[i] == '\r' ? 2 : 1;
		rc = HR__REC_OK;
		break;
	}
	*pos = i;
cleanup:
	free(f.p);
	return rc;
}

static void csv_field(bench_buf *b, const char *v)
{
	if (!v)
		v = "";
	if (!strpbrk(v, ",\"\r\n")) {
		bench_buf_puts(b, v);
		return;
	}
	bench_buf_putc(b, '"');
	for (; *v; v++) {
		if (*v == '"')
			bench_buf_putc(b, '"');
		bench_buf_putc(b, *v);
	}
	bench_buf_putc(b, '"');
}

void hr__csv_line(bench_buf *b, const char *const *columns, const hrow *r)
{
	for (size_t i = 0; columns[i]; i++) {
		if (i)
			bench_buf_putc(b, ',');
		csv_field(b, r ? hrow_get(r, columns[i]) : columns[i]);
	}
	bench_buf_putc(b, '\n');
}

int hr__blank_line(const char *buf, size_t len, size_t at)
{
	return at < len &&
	       (buf[at] == '\n' || (buf[at] == '\r' && at + 1 < len && buf[at + 1] == '\n'));
}

int csv_table_read(csv_table *t, const char *path, char *err, size_t errn)
{
	char *buf = NULL;
	size_t len, pos = 0, caprows = 0;
	hr__strvec rec = {0};
	int rc = -1, r;
	memset(t, 0, sizeof(*t));
	if (hr__slurp(&buf, &len, path) != 0) {
		h_seterr(err, errn, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = hr__csv_record(&rec, buf, len, &pos);
	if (r == HR__REC_END) {
		rc = 0;
		goto cleanup;
	}
	if (r < 0)
		goto bad;
	t->ncols = rec.n;
	t->header = rec.v;
	rec = (hr__strvec){0};
	for (;;) {
		size_t at = pos;
		r = hr__csv_record(&rec, buf, len, &pos);
		if (r == HR__REC_END)
			break;
		if (r < 0)
			goto bad;
		if (t->ncols > 1 && rec.n == 1 && hr__blank_line(buf, len, at))
			continue;
		while (rec.n < t->ncols)
			if (hr__sv_push(&rec, strdup("")) != 0)
				goto nomem;
		while (rec.n > t->ncols)
			free(rec.v[--rec.n]);
		if (t->nrows == caprows) {
			size_t cap = caprows ? caprows * 2 : 64;
			char ***rows = realloc(t->rows, cap * sizeof(*rows));
			if (!rows)
				goto nomem;
			t->rows = rows;
			caprows = cap;
		}
		if (t->ncols == 0) {
			hr__sv_reset(&rec);
			continue;
		}
		t->rows[t->nrows++] = rec.v;
		rec = (hr__strvec){0};
	}
	rc = 0;
	goto cleanup;
bad:
	if (r == HR__REC_BADQUOTE) {
		h_seterr(err, errn, "%s: a quoted field is not closed before the end of the file", path);
		goto cleanup;
	}
nomem:
	h_seterr(err, errn, "%s: out of memory", path);
cleanup:
	hr__sv_free(&rec);
	free(buf);
	if (rc != 0)
		csv_table_free(t);
	return rc;
}

int csv_table_col(const csv_table *t, const char *name)
{
	for (size_t i = 0; t && name && i < t->ncols; i++)
		if (strcmp(t->header[i], name) == 0)
			return (int)i;
	return -1;
}

const char *csv_table_get(const csv_table *t, size_t row, const char *col)
{
	int c = csv_table_col(t, col);
	if (c < 0 || row >= t->nrows)
		return "";
	return t->rows[row][c];
}

double csv_table_num(const csv_table *t, size_t row, const char *col)
{
	const char *s = csv_table_get(t, row, col);
	char *end;
	while (*s == ' ')
		s++;
	if (!*s)
		return NAN;
	double v = strtod(s, &end);
	while (*end == ' ')
		end++;
	return *end ? NAN : v;
}

void csv_table_free(csv_table *t)
{
	if (!t)
		return;
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	for (size_t c = 0; c < t->ncols && t->header; c++)
		free(t->header[c]);
	free(t->header);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
