/*
 * toml_write.c - writing a TOML document (toml.h): toml_to_string, toml_write, toml_write_file.
 * Values are written inline; tables that were not inline get a [header] (a table holding only
 * sub-tables gets none), so the text reads back to an equal tree (toml_equal).
 */
#include "toml_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_float(bench_buf *b, double f)
{
	char buf[40];
	if (isnan(f)) {
		bench_buf_puts(b, "nan");
		return;
	}
	if (isinf(f)) {
		bench_buf_puts(b, f < 0 ? "-inf" : "inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, f);
		if (strtod(buf, NULL) == f)
			break;
	}
	/* Shortest is not always clearest: write 10.0 rather than 1e+01 when a plain decimal of
	 * modest length reads back exactly. */
	if (strchr(buf, 'e') && fabs(f) >= 1e-4 && fabs(f) < 1e15) {
		char fixed[40];
		for (int prec = 0; prec <= 17; prec++) {
			snprintf(fixed, sizeof(fixed), "%.*f", prec, f);
			if (strtod(fixed, NULL) == f) {
				memcpy(buf, fixed, sizeof(buf));
				break;
			}
		}
	}
	bench_buf_puts(b, buf);
	if (!strpbrk(buf, ".e"))
		bench_buf_puts(b, ".0");
}

static void put_value(bench_buf *b, const toml_node *n)
{
	switch (n->type) {
	case TOML_STRING: toml__put_string(b, n->str, n->len); break;
	case TOML_INT: bench_buf_printf(b, "%" PRId64, n->i); break;
	case TOML_FLOAT: put_float(b, n->f); break;
	case TOML_BOOL: bench_buf_puts(b, n->b ? "true" : "false"); break;
	case TOML_ARRAY:
		bench_buf_putc(b, '[');
		for (size_t i = 0; i < n->nkids; i++) {
			if (i)
				bench_buf_puts(b, ", ");
			put_value(b, n->kids[i]);
		}
		bench_buf_putc(b, ']');
		break;
	case TOML_TABLE:
		if (!n->nkids) {
			bench_buf_puts(b, "{}");
			break;
		}
		bench_buf_puts(b, "{ ");
		for (size_t i = 0; i < n->nkids; i++) {
			if (i)
				bench_buf_puts(b, ", ");
			toml__put_key(b, n->kids[i]->key);
			bench_buf_puts(b, " = ");
			put_value(b, n->kids[i]);
		}
		bench_buf_puts(b, " }");
		break;
	default: break;
	}
}

static int is_section(const toml_node *n)
{
	return n->type == TOML_TABLE && n->origin != ORIGIN_INLINE;
}

static void put_table(bench_buf *b, const toml_node *t, bench_buf *path)
{
	size_t nvals = 0, nsecs = 0;
	for (size_t i = 0; i < t->nkids; i++)
		is_section(t->kids[i]) ? nsecs++ : nvals++;
	if (t->parent && (nvals || !nsecs)) {
		if (b->n)
			bench_buf_putc(b, '\n');
		bench_buf_printf(b, "[");
		bench_buf_puts(b, path->p);
		bench_buf_puts(b, "]\n");
	}
	for (size_t i = 0; i < t->nkids; i++) {
		const toml_node *c = t->kids[i];
		if (is_section(c))
			continue;
		toml__put_key(b, c->key);
		bench_buf_puts(b, " = ");
		put_value(b, c);
		bench_buf_putc(b, '\n');
	}
	for (size_t i = 0; i < t->nkids; i++) {
		const toml_node *c = t->kids[i];
		size_t mark = path->n;
		if (!is_section(c))
			continue;
		if (mark)
			bench_buf_putc(path, '.');
		toml__put_key(path, c->key);
		put_table(b, c, path);
		path->n = mark;
		if (path->p)
			path->p[mark] = 0;
	}
}

char *toml_to_string(const toml_doc *doc, const char *comment)
{
	bench_buf b = {0}, path = {0};
	if (comment) {
		const char *s = comment;
		while (*s) {
			size_t n = strcspn(s, "\n");
			bench_buf_puts(&b, "# ");
			bench_buf_put(&b, s, n);
			bench_buf_putc(&b, '\n');
			s += n + (s[n] == '\n');
		}
	}
	bench_buf_put(&path, "", 0);
	put_table(&b, doc->root, &path);
	bench_buf_put(&b, "", 0);
	free(path.p);
	if (b.oom || path.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

int toml_write(const toml_doc *doc, FILE *f, const char *comment)
{
	char *s = toml_to_string(doc, comment);
	int rc = TOML_ERR;
	if (!s)
		goto cleanup;
	if (fputs(s, f) == EOF || fflush(f))
		goto cleanup;
	rc = TOML_OK;
cleanup:
	free(s);
	return rc;
}

int toml_write_file(const toml_doc *doc, const char *path, const char *comment, toml_error *err)
{
	FILE *f = fopen(path, "w");
	int rc = TOML_ERR;
	if (!f) {
		toml__set_error(err, path, 0, 0, "", "cannot create: %s", strerror(errno));
		goto cleanup;
	}
	if (toml_write(doc, f, comment)) {
		toml__set_error(err, path, 0, 0, "", "write error: %s", strerror(errno));
		goto cleanup;
	}
	rc = TOML_OK;
cleanup:
	if (f && fclose(f) && rc == TOML_OK)
		rc = toml__set_error(err, path, 0, 0, "", "write error: %s", strerror(errno));
	return rc;
}
