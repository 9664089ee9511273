/*
 * csv.c - the benchmarks' one CSV reader and field writer (csv.h).
 */
#include "csv.h"
#include "err.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_read_file(char **out, size_t *len, const char *path)
{
	bench_buf b = {0};
	*out = NULL;
	*len = 0;
	if (bench_buf_read_file(&b, path, SIZE_MAX, NULL) != 0) {
		int e = errno;
		bench_buf_free(&b);
		errno = e;
		return -1;
	}
	*out = b.p;
	*len = b.n;
	return 0;
}

void bench_strvec_reset(bench_strvec *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

void bench_strvec_free(bench_strvec *s)
{
	bench_strvec_reset(s);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}

int bench_strvec_push(bench_strvec *s, char *owned)
{
	if (!owned)
		return -1;
	if (bench_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)) != 0) {
		free(owned);
		return -1;
	}
	s->v[s->n++] = owned;
	return 0;
}

/* Reads the record at buf[*pos] into out; the results are listed in results_int.h. */
int bench_csv_record(bench_strvec *out, const char *buf, size_t len, size_t *pos)
{
	size_t i = *pos;
	bench_buf f = {0};
	int rc;
	bench_strvec_reset(out);
	if (i >= len)
		return BENCH_CSV_END;
	for (;;) {
		f.n = 0;
		bench_buf_put(&f, "", 0);
		if (i < len && buf[i] == '"') {
			i++;
			for (;;) {
				if (i >= len) {
					rc = BENCH_CSV_BADQUOTE;
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
		if (f.oom || bench_strvec_push(out, strdup(f.p)) != 0) {
			rc = BENCH_CSV_NOMEM;
			goto cleanup;
		}
		if (i >= len) {
			rc = BENCH_CSV_EOF;
			break;
		}
		if (buf[i] == ',') {
			i++;
			continue;
		}
		i += buf[i] == '\r' ? 2 : 1;
		rc = BENCH_CSV_OK;
		break;
	}
	*pos = i;
cleanup:
	free(f.p);
	return rc;
}

void bench_csv_field(bench_buf *b, const char *v)
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

int bench_csv_blank_line(const char *buf, size_t len, size_t at)
{
	return at < len &&
	       (buf[at] == '\n' || (buf[at] == '\r' && at + 1 < len && buf[at + 1] == '\n'));
}

int bench_csv_parse(bench_csv *t, const char *buf, size_t len, const char *name, char *err,
                    size_t errn)
{
	size_t pos = 0, caprows = 0;
	bench_strvec rec = {0};
	int rc = -1, r;
	memset(t, 0, sizeof(*t));
	r = bench_csv_record(&rec, buf, len, &pos);
	if (r == BENCH_CSV_END) {
		rc = 0;
		goto cleanup;
	}
	if (r < 0)
		goto bad;
	t->ncols = rec.n;
	t->header = rec.v;
	rec = (bench_strvec){0};
	for (;;) {
		size_t at = pos;
		r = bench_csv_record(&rec, buf, len, &pos);
		if (r == BENCH_CSV_END)
			break;
		if (r < 0)
			goto bad;
		if (t->ncols > 1 && rec.n == 1 && bench_csv_blank_line(buf, len, at))
			continue;
		while (rec.n < t->ncols)
			if (bench_strvec_push(&rec, strdup("")) != 0)
				goto nomem;
		while (rec.n > t->ncols)
			free(rec.v[--rec.n]);
		if (bench_grow((void **)&t->rows, &caprows, t->nrows + 1, sizeof(*t->rows)) != 0)
			goto nomem;
		if (t->ncols == 0) {
			bench_strvec_reset(&rec);
			continue;
		}
		t->rows[t->nrows++] = rec.v;
		rec = (bench_strvec){0};
	}
	rc = 0;
	goto cleanup;
bad:
	if (r == BENCH_CSV_BADQUOTE) {
		bench_seterr(err, errn, "%s: a quoted field is not closed before the end of the file",
		             name);
		goto cleanup;
	}
nomem:
	bench_seterr(err, errn, "%s: out of memory", name);
cleanup:
	bench_strvec_free(&rec);
	if (rc != 0)
		bench_csv_free(t);
	return rc;
}

int bench_csv_read(bench_csv *t, const char *path, char *err, size_t errn)
{
	char *buf = NULL;
	size_t len;
	memset(t, 0, sizeof(*t));
	if (bench_read_file(&buf, &len, path) != 0) {
		bench_seterr(err, errn, "%s: %s", path, strerror(errno));
		return -1;
	}
	int rc = bench_csv_parse(t, buf, len, path, err, errn);
	free(buf);
	return rc;
}

int bench_csv_col(const bench_csv *t, const char *name)
{
	for (size_t i = 0; t && name && i < t->ncols; i++)
		if (strcmp(t->header[i], name) == 0)
			return (int)i;
	return -1;
}

const char *bench_csv_get(const bench_csv *t, size_t row, const char *col)
{
	int c = bench_csv_col(t, col);
	if (c < 0 || row >= t->nrows)
		return "";
	return t->rows[row][c];
}

double bench_csv_num(const bench_csv *t, size_t row, const char *col)
{
	const char *s = bench_csv_get(t, row, col);
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

void bench_csv_free(bench_csv *t)
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
