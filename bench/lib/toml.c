/*
 * toml.c - the strict TOML reader and writer described in toml.h.
 *
 * The parser is a hand-written recursive descent over a byte buffer that it first checks to be
 * UTF-8. Positions (line, column in characters) are tracked as it advances. Values are parsed
 * straight into nodes already attached to their table, so an error deep inside an inline table
 * or array can name the full key path.
 *
 * Table definition rules (TOML 1.0): each table has an origin -
 *   IMPLICIT  created as the parent of a [header] or of a setter's path; a later [header] may
 *             define it once;
 *   HEADER    defined by [header]; may not be defined again, nor extended by dotted keys from
 *             another section;
 *   DOTTED    created by a dotted key a.b = 1; only dotted keys of the same section (the same
 *             [header] block or inline table) may add to it; a [header] may define sub-tables
 *             below it, not it;
 *   INLINE    { ... }; closed once written.
 * Sections are numbered; dotted keys may only pass through DOTTED tables of the current section.
 */
#include "toml.h"

#include "buf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { ORIGIN_IMPLICIT, ORIGIN_HEADER, ORIGIN_DOTTED, ORIGIN_INLINE };

struct toml_node {
	toml_type type;
	int origin;  /* tables: ORIGIN_* */
	int section; /* tables: the section that created it (DOTTED, INLINE) */
	char *key;   /* NULL for the root and array elements */
	const char *src;
	int line, col;   /* key, header or element position */
	int vline, vcol; /* value position */
	toml_node *parent;
	toml_node **kids; /* tables and arrays */
	size_t nkids, cap;
	char *str; /* strings: NUL-terminated, may contain NUL */
	size_t len;
	int64_t i;
	double f;
	int b;
};

struct toml_doc {
	toml_node *root;
	char **names; /* source names the nodes point at */
	size_t nnames;
};

/* ---- errors ------------------------------------------------------------------------------- */

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static void verror(toml_error *err, const char *file, int line, int col, const char *key,
                   const char *fmt, va_list ap)
{
	if (!err)
		return;
	copy_str(err->file, sizeof(err->file), file);
	err->line = line;
	err->col = col;
	copy_str(err->key, sizeof(err->key), key);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	size_t n = 0, cap = sizeof(err->text);
	err->text[0] = 0;
	if (err->file[0])
		n += (size_t)snprintf(err->text + n, cap - n, "%s:", err->file);
	if (line > 0 && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, "%d:%d:", line, col);
	if (n && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, " ");
	if (err->key[0] && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, "%s: ", err->key);
	if (n < cap)
		snprintf(err->text + n, cap - n, "%s", err->msg);
}

static int set_error(toml_error *err, const char *file, int line, int col, const char *key,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int set_error(toml_error *err, const char *file, int line, int col, const char *key,
                     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(err, file, line, col, key, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static void node_clear(toml_node *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		node_clear(n->kids[i]);
		free(n->kids[i]->key);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->str);
	n->kids = NULL;
	n->nkids = n->cap = 0;
	n->str = NULL;
	n->len = 0;
}

static toml_node *add_kid(toml_node *parent, const char *key)
{
	toml_node *n = NULL;
	char *k = NULL;
	if (parent->nkids == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		toml_node **kids = realloc(parent->kids, cap * sizeof(*kids));
		if (!kids)
			return NULL;
		parent->kids = kids;
		parent->cap = cap;
	}
	if (key && !(k = strdup(key)))
		return NULL;
	if (!(n = calloc(1, sizeof(*n)))) {
		free(k);
		return NULL;
	}
	n->key = k;
	n->parent = parent;
	n->src = parent->src;
	parent->kids[parent->nkids++] = n;
	return n;
}

static toml_node *child_of(const toml_node *t, const char *key)
{
	if (!t || t->type != TOML_TABLE)
		return NULL;
	for (size_t i = 0; i < t->nkids; i++)
		if (strcmp(t->kids[i]->key, key) == 0)
			return t->kids[i];
	return NULL;
}

static int is_bare(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
		      *k == '_' || *k == '-'))
			return 0;
	return 1;
}

static int put_basic_string(bench_buf *b, const char *s, size_t len)
{
	bench_buf_putc(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': bench_buf_puts(b, "\\\""); break;
		case '\\': bench_buf_puts(b, "\\\\"); break;
		case '\b': bench_buf_puts(b, "\\b"); break;
		case '\t': bench_buf_puts(b, "\\t"); break;
		case '\n': bench_buf_puts(b, "\\n"); break;
		case '\f': bench_buf_puts(b, "\\f"); break;
		case '\r': bench_buf_puts(b, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				bench_buf_printf(b, "\\u%04X", c);
			else
				bench_buf_putc(b, (char)c);
		}
	}
	return bench_buf_putc(b, '"');
}

static int put_key(bench_buf *b, const char *k)
{
	return is_bare(k) ? bench_buf_puts(b, k) : put_basic_string(b, k, strlen(k));
}

static void path_into(bench_buf *b, const toml_node *n)
{
	if (!n || !n->parent)
		return;
	path_into(b, n->parent);
	if (n->parent->type == TOML_ARRAY) {
		size_t i = 0;
		while (i < n->parent->nkids && n->parent->kids[i] != n)
			i++;
		bench_buf_printf(b, "[%zu]", i);
		return;
	}
	if (b->n)
		bench_buf_putc(b, '.');
	put_key(b, n->key);
}

char *toml_node_path(const toml_node *n, char *buf, size_t size)
{
	bench_buf b = {0};
	path_into(&b, n);
	if (size)
		copy_str(buf, size, b.oom ? "?" : b.p);
	free(b.p);
	return buf;
}

int toml_error_at(toml_error *err, const toml_node *n, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	if (!err)
		return TOML_ERR;
	toml_node_path(n, path, sizeof(path));
	va_start(ap, fmt);
	verror(err, n ? n->src : "", n ? n->line : 0, n ? n->col : 0, path, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* Like toml_error_at, but at the value's position. */
static int value_error(toml_error *err, const toml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int value_error(toml_error *err, const toml_node *n, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	if (!err)
		return TOML_ERR;
	toml_node_path(n, path, sizeof(path));
	va_start(ap, fmt);
	verror(err, n->src, n->vline, n->vcol, path, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* ---- the parser ----------------------------------------------------------------------------- */

typedef struct parser {
	const char *p, *end;
	int line, col;
	const char *src;
	toml_doc *doc;
	toml_error *err;
	int nsections;
	int depth;
	char ctx[256]; /* dotted path of the key whose value is being parsed */
} parser;

typedef struct keypath {
	char *seg[TOML_MAX_DEPTH];
	int line[TOML_MAX_DEPTH], col[TOML_MAX_DEPTH];
	int n;
} keypath;

static void keypath_free(keypath *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->seg[i]);
	k->n = 0;
}

/* Byte at offset k from the cursor, or -1 past the end. */
static int at(const parser *ps, size_t k)
{
	return (size_t)(ps->end - ps->p) > k ? (unsigned char)ps->p[k] : -1;
}

static void adv(parser *ps)
{
	unsigned char c = (unsigned char)*ps->p++;
	if (c == '\n') {
		ps->line++;
		ps->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		ps->col++;
	}
}

static void adv_n(parser *ps, size_t n)
{
	while (n--)
		adv(ps);
}

static int perr_at(parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int perr_at(parser *ps, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(ps->err, ps->src, line, col, ps->ctx, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

#define perr(ps, ...) perr_at((ps), (ps)->line, (ps)->col, __VA_ARGS__)

/* A short description of what is at the cursor, for "found ..." in messages. */
static const char *found(const parser *ps, char *buf, size_t size)
{
	int c = at(ps, 0);
	if (c < 0)
		return "end of file";
	if (c == '\n' || (c == '\r' && at(ps, 1) == '\n'))
		return "end of line";
	if (c >= 0x21 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else if (c == ' ' || c == '\t')
		snprintf(buf, size, "whitespace");
	else if (c < 0x80)
		snprintf(buf, size, "control character U+%04X", (unsigned)c);
	else {
		size_t n = 1;
		while (n < 4 && at(ps, n) >= 0 && (at(ps, n) & 0xc0) == 0x80)
			n++;
		snprintf(buf, size, "'%.*s'", (int)n, ps->p);
	}
	return buf;
}

static int is_ws(int c)
{
	return c == ' ' || c == '\t';
}

static int is_bare_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

static int is_ctrl(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static void skip_ws(parser *ps)
{
	while (is_ws(at(ps, 0)))
		adv(ps);
}

static int at_newline(const parser *ps)
{
	return at(ps, 0) == '\n' || (at(ps, 0) == '\r' && at(ps, 1) == '\n');
}

/* Skips a comment if one starts at the cursor (not the newline ending it). */
static int skip_comment(parser *ps)
{
	if (at(ps, 0) != '#')
		return TOML_OK;
	while (at(ps, 0) >= 0 && !at_newline(ps)) {
		if (is_ctrl(at(ps, 0)))
			return perr(ps, "control character U+%04X in a comment", (unsigned)at(ps, 0));
		adv(ps);
	}
	return TOML_OK;
}

static void eat_newline(parser *ps)
{
	if (at(ps, 0) == '\r')
		adv(ps);
	adv(ps);
}

/* Whitespace, comments and newlines (inside arrays). */
static int skip_blank(parser *ps)
{
	for (;;) {
		skip_ws(ps);
		if (at(ps, 0) == '#') {
			if (skip_comment(ps))
				return TOML_ERR;
		} else if (at_newline(ps)) {
			eat_newline(ps);
		} else {
			return TOML_OK;
		}
	}
}

/* After a key/value or header: whitespace, an optional comment, then a newline or the end. */
static int end_line(parser *ps, const char *after)
{
	char fb[32];
	skip_ws(ps);
	if (skip_comment(ps))
		return TOML_ERR;
	if (at(ps, 0) < 0)
		return TOML_OK;
	if (at_newline(ps)) {
		eat_newline(ps);
		return TOML_OK;
	}
	return perr(ps, "expected the end of the line after %s, found %s", after,
	            found(ps, fb, sizeof(fb)));
}

static int check_utf8(parser *ps)
{
	const unsigned char *p = (const unsigned char *)ps->p, *end = (const unsigned char *)ps->end;
	int line = 1, col = 1;
	while (p < end) {
		unsigned c = *p;
		size_t n;
		unsigned cp, min;
		if (c < 0x80) {
			if (c == '\n') {
				line++;
				col = 0;
			} else if (c == '\r' && !(p + 1 < end && p[1] == '\n')) {
				return perr_at(ps, line, col, "carriage return not followed by a line feed");
			}
			p++;
			col++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 2, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 3, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return perr_at(ps, line, col, "invalid UTF-8 (byte 0x%02X)", c);
		}
		if ((size_t)(end - p) < n)
			return perr_at(ps, line, col, "invalid UTF-8 (truncated sequence)");
		for (size_t i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return perr_at(ps, line, col, "invalid UTF-8 (byte 0x%02X)", p[i]);
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return perr_at(ps, line, col, "invalid UTF-8 (overlong form or not a scalar value)");
		p += n;
		col++;
	}
	return TOML_OK;
}

static int put_utf8(bench_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	}
	return bench_buf_put(b, u, n);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* An escape at the cursor (the backslash). */
static int escape(parser *ps, bench_buf *out)
{
	int line = ps->line, col = ps->col, c = at(ps, 1);
	const char *simple = "b\bt\tn\nf\fr\r\"\"\\\\";
	for (const char *s = simple; *s; s += 2)
		if (c == *s) {
			adv_n(ps, 2);
			return bench_buf_putc(out, s[1]);
		}
	if (c == 'u' || c == 'U') {
		int nd = c == 'u' ? 4 : 8;
		uint32_t cp = 0;
		for (int i = 0; i < nd; i++) {
			int h = hexval(at(ps, 2 + (size_t)i));
			if (h < 0)
				return perr_at(ps, line, col, "\\%c needs %d hexadecimal digits", c, nd);
			cp = cp << 4 | (uint32_t)h;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return perr_at(ps, line, col, "\\%c%0*" PRIX32 " is not a Unicode scalar value", c, nd,
			               cp);
		adv_n(ps, 2 + (size_t)nd);
		return put_utf8(out, cp);
	}
	if (c >= 0x21 && c < 0x7f)
		return perr_at(ps, line, col, "invalid escape sequence '\\%c'", c);
	return perr_at(ps, line, col, "invalid escape sequence (backslash before %s)",
	               c < 0                    ? "end of file"
	               : c == '\n' || c == '\r' ? "end of line"
	                                        : "a space");
}

/* A string at the cursor (its opening quote); multi-line forms only if `multi`. */
static int parse_string(parser *ps, bench_buf *out, int multi)
{
	int line = ps->line, col = ps->col, q = at(ps, 0);
	int basic = q == '"';
	char fb[32];
	if (at(ps, 1) == q && at(ps, 2) == q) {
		if (!multi)
			return perr(ps, "a multi-line string cannot be a key");
		adv_n(ps, 3);
		if (at_newline(ps))
			eat_newline(ps);
		for (;;) {
			int c = at(ps, 0);
			if (c < 0)
				return perr_at(ps, line, col, "unterminated multi-line string");
			if (c == q) {
				size_t k = 0;
				while (at(ps, k) == q)
					k++;
				if (k >= 3 && k <= 5) {
					bench_buf_put(out, basic ? "\"\"" : "''", k - 3);
					adv_n(ps, k);
					break;
				}
				if (k > 5)
					return perr(ps, "too many quotes in a row in a multi-line string");
				bench_buf_put(out, basic ? "\"\"" : "''", k);
				adv_n(ps, k);
			} else if (basic && c == '\\') {
				size_t j = 1;
				while (is_ws(at(ps, j)))
					j++;
				if (at(ps, j) == '\n' || (at(ps, j) == '\r' && at(ps, j + 1) == '\n')) {
					adv_n(ps, j);
					while (is_ws(at(ps, 0)) || at_newline(ps))
						adv_n(ps, at(ps, 0) == '\r' ? 2 : 1);
				} else if (escape(ps, out)) {
					return TOML_ERR;
				}
			} else if (at_newline(ps)) {
				eat_newline(ps);
				bench_buf_putc(out, '\n');
			} else if (is_ctrl(c)) {
				return perr(ps, "control character U+%04X in a string; write it as an escape",
				            (unsigned)c);
			} else {
				bench_buf_putc(out, (char)c);
				adv(ps);
			}
		}
		return out->oom ? perr_at(ps, line, col, "out of memory") : TOML_OK;
	}
	adv(ps);
	for (;;) {
		int c = at(ps, 0);
		if (c < 0 || c == '\n' || c == '\r')
			return perr_at(ps, line, col, "unterminated string (found %s before the closing %c)",
			               found(ps, fb, sizeof(fb)), q);
		if (c == q) {
			adv(ps);
			break;
		}
		if (basic && c == '\\') {
			if (escape(ps, out))
				return TOML_ERR;
		} else if (is_ctrl(c)) {
			return perr(ps, "control character U+%04X in a string; write it as an escape",
			            (unsigned)c);
		} else {
			bench_buf_putc(out, (char)c);
			adv(ps);
		}
	}
	return out->oom ? perr_at(ps, line, col, "out of memory") : TOML_OK;
}

static int parse_key(parser *ps, keypath *k)
{
	char fb[32];
	k->n = 0;
	for (;;) {
		bench_buf b = {0};
		int c = at(ps, 0);
		if (k->n == TOML_MAX_DEPTH)
			return perr(ps, "key has more than %d parts", TOML_MAX_DEPTH);
		k->line[k->n] = ps->line;
		k->col[k->n] = ps->col;
		if (c == '"' || c == '\'') {
			if (parse_string(ps, &b, 0)) {
				free(b.p);
				return TOML_ERR;
			}
		} else if (is_bare_char(c)) {
			const char *s = ps->p;
			while (is_bare_char(at(ps, 0)))
				adv(ps);
			bench_buf_put(&b, s, (size_t)(ps->p - s));
		} else {
			return perr(ps, "expected a key, found %s%s", found(ps, fb, sizeof(fb)),
			            c >= 0x80 ? " (keys other than A-Za-z0-9_- need quotes)" : "");
		}
		if (bench_buf_put(&b, "", 0)) {
			free(b.p);
			return perr(ps, "out of memory");
		}
		if (strlen(b.p) != b.n) {
			free(b.p);
			return perr_at(ps, k->line[k->n], k->col[k->n], "a key cannot contain U+0000");
		}
		k->seg[k->n++] = b.p;
		skip_ws(ps);
		if (at(ps, 0) != '.')
			return TOML_OK;
		adv(ps);
		skip_ws(ps);
	}
}

static void keypath_str(const keypath *k, int upto, char *buf, size_t size)
{
	bench_buf b = {0};
	for (int i = 0; i < upto; i++) {
		if (i)
			bench_buf_putc(&b, '.');
		put_key(&b, k->seg[i]);
	}
	copy_str(buf, size, b.oom || !b.p ? "" : b.p);
	free(b.p);
}

/* The first `upto` parts of k, with the path of table t in front. */
static void full_path(const toml_node *t, const keypath *k, int upto, char *buf, size_t size)
{
	bench_buf b = {0};
	path_into(&b, t);
	for (int i = 0; i < upto; i++) {
		if (b.n)
			bench_buf_putc(&b, '.');
		put_key(&b, k->seg[i]);
	}
	copy_str(buf, size, b.oom || !b.p ? "" : b.p);
	free(b.p);
}

static const char *a_type(toml_type t)
{
	switch (t) {
	case TOML_TABLE: return "a table";
	case TOML_ARRAY: return "an array";
	case TOML_STRING: return "a string";
	case TOML_INT: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	default: return "nothing";
	}
}

static int parse_value(parser *ps, toml_node *n);

static int parse_array(parser *ps, toml_node *n)
{
	char fb[32];
	n->type = TOML_ARRAY;
	adv(ps);
	for (;;) {
		if (skip_blank(ps))
			return TOML_ERR;
		if (at(ps, 0) == ']')
			break;
		toml_node *e = add_kid(n, NULL);
		if (!e)
			return perr(ps, "out of memory");
		e->line = ps->line;
		e->col = ps->col;
		if (parse_value(ps, e) || skip_blank(ps))
			return TOML_ERR;
		if (at(ps, 0) == ',') {
			adv(ps);
			continue;
		}
		if (at(ps, 0) == ']')
			break;
		if (at(ps, 0) < 0)
			return perr_at(ps, n->vline, n->vcol, "unterminated array (no closing ']')");
		return perr(ps, "expected ',' or ']' in the array, found %s", found(ps, fb, sizeof(fb)));
	}
	adv(ps);
	return TOML_OK;
}

static int keyval(parser *ps, toml_node *t, int section);

static int parse_inline_table(parser *ps, toml_node *n)
{
	char fb[32];
	n->type = TOML_TABLE;
	n->origin = ORIGIN_INLINE;
	n->section = ++ps->nsections;
	adv(ps);
	skip_ws(ps);
	if (at(ps, 0) == '}') {
		adv(ps);
		return TOML_OK;
	}
	for (;;) {
		char saved[sizeof(ps->ctx)];
		memcpy(saved, ps->ctx, sizeof(saved));
		if (keyval(ps, n, n->section))
			return TOML_ERR;
		memcpy(ps->ctx, saved, sizeof(saved));
		skip_ws(ps);
		if (at(ps, 0) == ',') {
			adv(ps);
			skip_ws(ps);
			if (at(ps, 0) == '}')
				return perr(ps, "a trailing comma is not allowed in an inline table");
			continue;
		}
		if (at(ps, 0) == '}') {
			adv(ps);
			return TOML_OK;
		}
		if (at_newline(ps) || at(ps, 0) == '#')
			return perr(ps, "an inline table must be written on one line (TOML 1.0)");
		return perr(ps, "expected ',' or '}' in the inline table, found %s",
		            found(ps, fb, sizeof(fb)));
	}
}

/* Digits of `base` with single '_' between digits, from tok[*i]; advances *i. */
static int digits(parser *ps, const char *tok, size_t len, size_t *i, int base)
{
	size_t start = *i;
	int prev_digit = 0;
	while (*i < len) {
		int c = tok[*i], d = hexval(c);
		if (c == '_') {
			if (!prev_digit || *i + 1 >= len || hexval(tok[*i + 1]) < 0 ||
			    hexval(tok[*i + 1]) >= base)
				return perr(ps, "'_' must be between two digits in '%.*s'", (int)len, tok);
			prev_digit = 0;
		} else if (d >= 0 && d < base) {
			prev_digit = 1;
		} else {
			break;
		}
		(*i)++;
	}
	if (*i == start)
		return perr(ps, "expected digits in '%.*s'", (int)len, tok);
	return TOML_OK;
}

static int parse_number(parser *ps, toml_node *n, const char *tok, size_t len)
{
	size_t i = 0, start;
	int neg = 0, sign = 0, is_float = 0;
	if (tok[0] == '+' || tok[0] == '-') {
		sign = 1;
		neg = tok[0] == '-';
		i = 1;
	}
	if (len - i == 3 && (memcmp(tok + i, "inf", 3) == 0 || memcmp(tok + i, "nan", 3) == 0)) {
		n->type = TOML_FLOAT;
		n->f = tok[i] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
		return TOML_OK;
	}
	if (len - i >= 2 && tok[i] == '0' &&
	    (tok[i + 1] == 'x' || tok[i + 1] == 'o' || tok[i + 1] == 'b')) {
		int base = tok[i + 1] == 'x' ? 16 : tok[i + 1] == 'o' ? 8 : 2;
		uint64_t v = 0;
		if (sign)
			return perr(ps, "'%.*s': a hexadecimal, octal or binary integer cannot have a sign",
			            (int)len, tok);
		i += 2;
		if (digits(ps, tok, len, &i, base))
			return TOML_ERR;
		if (i != len)
			return perr(ps, "invalid digit '%c' in '%.*s'", tok[i], (int)len, tok);
		for (size_t j = 2; j < len; j++) {
			if (tok[j] == '_')
				continue;
			uint64_t d = (uint64_t)hexval(tok[j]);
			if (v > ((uint64_t)INT64_MAX - d) / (uint64_t)base)
				return perr(ps, "integer %.*s does not fit in 64 bits (the largest is %" PRId64 ")",
				            (int)len, tok, INT64_MAX);
			v = v * (uint64_t)base + d;
		}
		n->type = TOML_INT;
		n->i = (int64_t)v;
		return TOML_OK;
	}
	start = i;
	if (digits(ps, tok, len, &i, 10))
		return TOML_ERR;
	if (tok[start] == '0' && i - start > 1)
		return perr(ps, "leading zeros are not allowed in '%.*s'", (int)len, tok);
	size_t int_end = i;
	if (i < len && tok[i] == '.') {
		i++;
		if (i >= len || tok[i] < '0' || tok[i] > '9')
			return perr(ps, "a float needs digits after the '.' in '%.*s'", (int)len, tok);
		if (digits(ps, tok, len, &i, 10))
			return TOML_ERR;
		is_float = 1;
	}
	if (i < len && (tok[i] == 'e' || tok[i] == 'E')) {
		i++;
		if (i < len && (tok[i] == '+' || tok[i] == '-'))
			i++;
		if (i >= len || tok[i] < '0' || tok[i] > '9')
			return perr(ps, "an exponent needs digits in '%.*s'", (int)len, tok);
		if (digits(ps, tok, len, &i, 10))
			return TOML_ERR;
		is_float = 1;
	}
	if (i != len)
		return perr(ps, "invalid number '%.*s'", (int)len, tok);
	if (is_float) {
		char buf[128], *endp;
		size_t m = 0;
		for (size_t j = 0; j < len; j++)
			if (tok[j] != '_') {
				if (m + 1 >= sizeof(buf))
					return perr(ps, "number too long");
				buf[m++] = tok[j];
			}
		buf[m] = 0;
		errno = 0;
		n->f = strtod(buf, &endp);
		if (*endp)
			return perr(ps, "invalid float '%.*s'", (int)len, tok);
		if (errno == ERANGE && isinf(n->f))
			return perr(ps, "float %.*s is out of range", (int)len, tok);
		n->type = TOML_FLOAT;
		return TOML_OK;
	}
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t j = start; j < int_end; j++) {
		if (tok[j] == '_')
			continue;
		uint64_t d = (uint64_t)(tok[j] - '0');
		if (v > (lim - d) / 10)
			return perr(ps,
			            "integer %.*s does not fit in 64 bits (range %" PRId64 " to %" PRId64 ")",
			            (int)len, tok, INT64_MIN, INT64_MAX);
		v = v * 10 + d;
	}
	n->type = TOML_INT;
	n->i = neg ? (int64_t)(0 - v) : (int64_t)v;
	return TOML_OK;
}

static int parse_value(parser *ps, toml_node *n)
{
	int c = at(ps, 0);
	char fb[32];
	n->vline = ps->line;
	n->vcol = ps->col;
	if (c == '"' || c == '\'') {
		bench_buf b = {0};
		if (parse_string(ps, &b, 1) || bench_buf_put(&b, "", 0)) {
			free(b.p);
			return b.oom ? perr(ps, "out of memory") : TOML_ERR;
		}
		n->type = TOML_STRING;
		n->str = b.p;
		n->len = b.n;
		return TOML_OK;
	}
	if (c == '[' || c == '{') {
		if (ps->depth >= TOML_MAX_DEPTH)
			return perr(ps, "arrays and inline tables nested more than %d deep", TOML_MAX_DEPTH);
		ps->depth++;
		int rc = c == '[' ? parse_array(ps, n) : parse_inline_table(ps, n);
		ps->depth--;
		return rc;
	}
	const char *tok = ps->p;
	size_t len = 0;
	while (at(ps, len) >= 0 && (is_bare_char(at(ps, len)) || at(ps, len) == '+' ||
	                            at(ps, len) == '.' || at(ps, len) == ':'))
		len++;
	if (len == 0)
		return perr(ps, "expected a value, found %s", found(ps, fb, sizeof(fb)));
	if ((len >= 5 && tok[4] == '-' && strspn(tok, "0123456789") == 4) ||
	    (len >= 3 && tok[2] == ':' && strspn(tok, "0123456789") == 2))
		return perr(ps, "dates and times are not supported ('%.*s'); use a string", (int)len, tok);
	if ((len == 4 && memcmp(tok, "true", 4) == 0) || (len == 5 && memcmp(tok, "false", 5) == 0)) {
		n->type = TOML_BOOL;
		n->b = len == 4;
	} else if ((tok[0] >= '0' && tok[0] <= '9') || tok[0] == '+' || tok[0] == '-' ||
	           (len == 3 && (memcmp(tok, "inf", 3) == 0 || memcmp(tok, "nan", 3) == 0))) {
		if (parse_number(ps, n, tok, len))
			return TOML_ERR;
	} else {
		return perr(ps, "invalid value '%.*s' (strings need quotes; booleans are true and false)",
		            (int)len, tok);
	}
	adv_n(ps, len);
	return TOML_OK;
}

static int origin_line(const toml_node *n)
{
	return n->line ? n->line : n->vline;
}

/* key = value into table t, whose dotted keys belong to `section`. Leaves ps->ctx naming the key
 * (for errors about what follows the value). */
static int keyval(parser *ps, toml_node *t, int section)
{
	keypath k = {0};
	toml_node *n = NULL, *t0 = t;
	char fb[32];
	int rc = TOML_ERR;
	if (parse_key(ps, &k))
		goto cleanup;
	/* A key under a table header may not nest deeper than one dotted key can name, so that every
	 * table the writer puts in a [header] reads back (the header's parts plus the key's). */
	int depth = 0;
	for (const toml_node *p = t; p && p->parent; p = p->parent)
		depth++;
	if (depth + k.n > TOML_MAX_DEPTH) {
		full_path(t0, &k, k.n, ps->ctx, sizeof(ps->ctx));
		rc = perr_at(ps, k.line[0], k.col[0], "key nests tables more than %d deep", TOML_MAX_DEPTH);
		goto cleanup;
	}
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		toml_node *c = child_of(t, k.seg[i]);
		full_path(t0, &k, i + 1, ps->ctx, sizeof(ps->ctx));
		if (c && last) {
			rc = perr_at(ps, k.line[i], k.col[i], "duplicate key (first defined at line %d)",
			             origin_line(c));
			goto cleanup;
		}
		if (c && c->type != TOML_TABLE) {
			rc = perr_at(ps, k.line[i], k.col[i], "is already %s (line %d), so it cannot hold keys",
			             a_type(c->type), origin_line(c));
			goto cleanup;
		}
		if (c && c->origin == ORIGIN_INLINE) {
			rc = perr_at(ps, k.line[i], k.col[i], "the inline table at line %d cannot be extended",
			             origin_line(c));
			goto cleanup;
		}
		if (c && (c->origin != ORIGIN_DOTTED || c->section != section)) {
			rc = perr_at(ps, k.line[i], k.col[i],
			             "the table defined at line %d cannot be extended with dotted keys here",
			             origin_line(c));
			goto cleanup;
		}
		if (!c) {
			if (!(c = add_kid(t, k.seg[i]))) {
				rc = perr(ps, "out of memory");
				goto cleanup;
			}
			c->line = c->vline = k.line[i];
			c->col = c->vcol = k.col[i];
			if (!last) {
				c->type = TOML_TABLE;
				c->origin = ORIGIN_DOTTED;
				c->section = section;
			}
		}
		n = t = c;
	}
	skip_ws(ps);
	if (at(ps, 0) != '=') {
		rc = perr(ps, "expected '=' after the key, found %s", found(ps, fb, sizeof(fb)));
		goto cleanup;
	}
	adv(ps);
	skip_ws(ps);
	if (parse_value(ps, n))
		goto cleanup;
	rc = TOML_OK;
cleanup:
	keypath_free(&k);
	return rc;
}

static int header(parser *ps, toml_node **cur)
{
	keypath k = {0};
	toml_node *t = ps->doc->root;
	int line = ps->line, col = ps->col, rc = TOML_ERR;
	char fb[32];
	ps->ctx[0] = 0;
	if (at(ps, 1) == '[') {
		rc = perr(ps, "arrays of tables ([[...]]) are not supported");
		goto cleanup;
	}
	adv(ps);
	skip_ws(ps);
	if (parse_key(ps, &k))
		goto cleanup;
	keypath_str(&k, k.n, ps->ctx, sizeof(ps->ctx));
	if (at(ps, 0) != ']') {
		rc = perr(ps, "expected ']' to close the table header, found %s",
		          found(ps, fb, sizeof(fb)));
		goto cleanup;
	}
	adv(ps);
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		toml_node *c = child_of(t, k.seg[i]);
		if (!c) {
			if (!(c = add_kid(t, k.seg[i]))) {
				rc = perr(ps, "out of memory");
				goto cleanup;
			}
			c->type = TOML_TABLE;
			c->origin = last ? ORIGIN_HEADER : ORIGIN_IMPLICIT;
			c->line = c->vline = line;
			c->col = c->vcol = col;
		} else if (c->type != TOML_TABLE) {
			toml_node_path(c, ps->ctx, sizeof(ps->ctx));
			rc = perr_at(ps, line, col, "is already %s (line %d), so it cannot be a table%s",
			             a_type(c->type), origin_line(c),
			             c->type == TOML_ARRAY ? " (arrays of tables are not supported)" : "");
			goto cleanup;
		} else if (c->origin == ORIGIN_INLINE) {
			toml_node_path(c, ps->ctx, sizeof(ps->ctx));
			rc = perr_at(ps, line, col, "the inline table at line %d cannot be extended",
			             origin_line(c));
			goto cleanup;
		} else if (last && c->origin == ORIGIN_HEADER) {
			rc = perr_at(ps, line, col, "table defined twice (first at line %d)", c->line);
			goto cleanup;
		} else if (last && c->origin == ORIGIN_DOTTED) {
			rc = perr_at(ps, line, col, "table already defined by dotted keys at line %d", c->line);
			goto cleanup;
		} else if (last) {
			c->origin = ORIGIN_HEADER;
			c->line = c->vline = line;
			c->col = c->vcol = col;
		}
		t = c;
	}
	*cur = t;
	t->section = ++ps->nsections;
	rc = TOML_OK;
cleanup:
	keypath_free(&k);
	return rc;
}

static int parse_doc(parser *ps)
{
	toml_node *cur = ps->doc->root;
	if (check_utf8(ps))
		return TOML_ERR;
	if (at(ps, 0) == 0xef && at(ps, 1) == 0xbb && at(ps, 2) == 0xbf)
		ps->p += 3; /* byte order mark */
	for (;;) {
		char what[300];
		skip_ws(ps);
		int c = at(ps, 0);
		if (c < 0)
			return TOML_OK;
		if (c == '#') {
			if (skip_comment(ps))
				return TOML_ERR;
			continue;
		}
		if (at_newline(ps)) {
			eat_newline(ps);
			continue;
		}
		if (c == '[') {
			if (header(ps, &cur))
				return TOML_ERR;
			snprintf(what, sizeof(what), "the table header [%s]", ps->ctx);
		} else {
			if (keyval(ps, cur, cur->section))
				return TOML_ERR;
			snprintf(what, sizeof(what), "the value");
		}
		if (end_line(ps, what))
			return TOML_ERR;
		ps->ctx[0] = 0;
	}
}

/* ---- documents ------------------------------------------------------------------------------ */

/* Interns a source name in the document; returns the doc's copy. */
static const char *intern(toml_doc *doc, const char *name)
{
	for (size_t i = 0; i < doc->nnames; i++)
		if (strcmp(doc->names[i], name) == 0)
			return doc->names[i];
	char **names = realloc(doc->names, (doc->nnames + 1) * sizeof(*names));
	if (!names)
		return NULL;
	doc->names = names;
	if (!(names[doc->nnames] = strdup(name)))
		return NULL;
	return names[doc->nnames++];
}

int toml_doc_new(toml_doc **out, const char *name)
{
	toml_doc *doc = calloc(1, sizeof(*doc));
	*out = NULL;
	if (!doc || !(doc->root = calloc(1, sizeof(*doc->root))) ||
	    !(doc->root->src = intern(doc, name ? name : "<buffer>"))) {
		toml_free(doc);
		return TOML_ERR;
	}
	doc->root->type = TOML_TABLE;
	doc->root->origin = ORIGIN_HEADER;
	*out = doc;
	return TOML_OK;
}

void toml_free(toml_doc *doc)
{
	if (!doc)
		return;
	if (doc->root) {
		node_clear(doc->root);
		free(doc->root);
	}
	for (size_t i = 0; i < doc->nnames; i++)
		free(doc->names[i]);
	free(doc->names);
	free(doc);
}

int toml_parse_buffer(toml_doc **out, const char *buf, size_t len, const char *name,
                      toml_error *err)
{
	toml_doc *doc = NULL;
	parser ps;
	int rc = TOML_ERR;
	*out = NULL;
	if (!name)
		name = "<buffer>";
	if (toml_doc_new(&doc, name)) {
		set_error(err, name, 0, 0, "", "out of memory");
		goto cleanup;
	}
	memset(&ps, 0, sizeof(ps));
	ps.p = buf;
	ps.end = buf + len;
	ps.line = ps.col = 1;
	ps.src = doc->root->src;
	ps.doc = doc;
	ps.err = err;
	if (parse_doc(&ps))
		goto cleanup;
	*out = doc;
	doc = NULL;
	rc = TOML_OK;
cleanup:
	toml_free(doc);
	return rc;
}

int toml_parse_file(toml_doc **out, const char *path, toml_error *err)
{
	FILE *f = NULL;
	bench_buf b = {0};
	char chunk[8192];
	size_t n;
	int rc = TOML_ERR;
	*out = NULL;
	if (!(f = fopen(path, "rb"))) {
		set_error(err, path, 0, 0, "", "cannot open: %s", strerror(errno));
		goto cleanup;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (bench_buf_put(&b, chunk, n)) {
			set_error(err, path, 0, 0, "", "out of memory reading the file");
			goto cleanup;
		}
	if (ferror(f)) {
		set_error(err, path, 0, 0, "", "read error: %s", strerror(errno));
		goto cleanup;
	}
	rc = toml_parse_buffer(out, b.p ? b.p : "", b.n, path, err);
cleanup:
	if (f)
		fclose(f);
	free(b.p);
	return rc;
}

const toml_node *toml_root(const toml_doc *doc)
{
	return doc ? doc->root : NULL;
}

const char *toml_doc_name(const toml_doc *doc)
{
	return doc ? doc->root->src : NULL;
}

/* ---- node access ---------------------------------------------------------------------------- */

toml_type toml_node_type(const toml_node *n)
{
	return n ? n->type : TOML_NONE;
}

const char *toml_type_name(toml_type t)
{
	switch (t) {
	case TOML_TABLE: return "table";
	case TOML_ARRAY: return "array";
	case TOML_STRING: return "string";
	case TOML_INT: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	default: return "none";
	}
}

const char *toml_node_key(const toml_node *n)
{
	return n ? n->key : NULL;
}

const toml_node *toml_node_parent(const toml_node *n)
{
	return n ? n->parent : NULL;
}

int toml_node_line(const toml_node *n)
{
	return n ? n->line : 0;
}

int toml_node_col(const toml_node *n)
{
	return n ? n->col : 0;
}

const char *toml_node_source(const toml_node *n)
{
	return n ? n->src : NULL;
}

size_t toml_len(const toml_node *n)
{
	return n && (n->type == TOML_TABLE || n->type == TOML_ARRAY) ? n->nkids : 0;
}

const toml_node *toml_at(const toml_node *n, size_t i)
{
	return i < toml_len(n) ? n->kids[i] : NULL;
}

const toml_node *toml_child(const toml_node *table, const char *key)
{
	return child_of(table, key);
}

/* Splits a dotted path with the key grammar. */
static int split_path(const char *path, keypath *k, toml_error *err)
{
	parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = path;
	ps.end = path + strlen(path);
	ps.line = ps.col = 1;
	ps.src = "<path>";
	ps.err = err;
	k->n = 0;
	if (parse_key(&ps, k))
		goto fail;
	if (ps.p != ps.end) {
		char fb[32];
		perr(&ps, "unexpected %s in the key path '%s'", found(&ps, fb, sizeof(fb)), path);
		goto fail;
	}
	return TOML_OK;
fail:
	keypath_free(k);
	if (err) {
		char msg[sizeof(err->msg)];
		copy_str(msg, sizeof(msg), err->msg);
		set_error(err, "", 0, 0, path, "invalid key path: %s", msg);
	}
	return TOML_ERR;
}

/* Walks path from table t: TOML_OK with *out, TOML_MISSING, or TOML_ERR (bad path, or a part
 * that is not a table). */
static int walk(const toml_node *t, const char *path, const toml_node **out, toml_error *err)
{
	keypath k;
	int rc = TOML_OK;
	*out = NULL;
	if (split_path(path, &k, err))
		return TOML_ERR;
	for (int i = 0; i < k.n; i++) {
		const toml_node *c = child_of(t, k.seg[i]);
		if (!c) {
			set_error(err, t->src, 0, 0, path, "is missing");
			rc = TOML_MISSING;
			goto cleanup;
		}
		if (i < k.n - 1 && c->type != TOML_TABLE) {
			rc = value_error(err, c, "is %s, not a table (looking up '%s')", a_type(c->type), path);
			goto cleanup;
		}
		t = c;
	}
	*out = t;
cleanup:
	keypath_free(&k);
	return rc;
}

const toml_node *toml_find(const toml_node *table, const char *path)
{
	const toml_node *n;
	if (!table || table->type != TOML_TABLE || walk(table, path, &n, NULL))
		return NULL;
	return n;
}

static int type_error(const toml_node *n, toml_type want, toml_error *err)
{
	char shown[80] = "";
	if (n->type == TOML_STRING)
		snprintf(shown, sizeof(shown), " (\"%.40s%s\")", n->str, n->len > 40 ? "..." : "");
	else if (n->type == TOML_INT)
		snprintf(shown, sizeof(shown), " (%" PRId64 ")", n->i);
	else if (n->type == TOML_FLOAT)
		snprintf(shown, sizeof(shown), " (%g)", n->f);
	else if (n->type == TOML_BOOL)
		snprintf(shown, sizeof(shown), " (%s)", n->b ? "true" : "false");
	return value_error(err, n, "expected %s, found %s%s", a_type(want), a_type(n->type), shown);
}

int toml_node_int(const toml_node *n, int64_t *v, toml_error *err)
{
	if (n->type != TOML_INT)
		return type_error(n, TOML_INT, err);
	*v = n->i;
	return TOML_OK;
}

int toml_node_float(const toml_node *n, double *v, toml_error *err)
{
	if (n->type == TOML_INT) {
		*v = (double)n->i;
		return TOML_OK;
	}
	if (n->type != TOML_FLOAT)
		return type_error(n, TOML_FLOAT, err);
	*v = n->f;
	return TOML_OK;
}

int toml_node_bool(const toml_node *n, int *v, toml_error *err)
{
	if (n->type != TOML_BOOL)
		return type_error(n, TOML_BOOL, err);
	*v = n->b;
	return TOML_OK;
}

int toml_node_string(const toml_node *n, const char **s, size_t *len, toml_error *err)
{
	if (n->type != TOML_STRING)
		return type_error(n, TOML_STRING, err);
	*s = n->str;
	if (len)
		*len = n->len;
	return TOML_OK;
}

static int get(const toml_doc *doc, const char *path, toml_type want, const toml_node **n,
               toml_error *err)
{
	int rc = walk(doc->root, path, n, err);
	if (rc)
		return rc;
	if (want != TOML_NONE && (*n)->type != want && !(want == TOML_FLOAT && (*n)->type == TOML_INT))
		return type_error(*n, want, err);
	return TOML_OK;
}

int toml_get_int(const toml_doc *doc, const char *path, int64_t *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_INT, &n, err);
	return rc ? rc : toml_node_int(n, v, err);
}

int toml_get_int_range(const toml_doc *doc, const char *path, int64_t min, int64_t max, int64_t *v,
                       toml_error *err)
{
	const toml_node *n;
	int64_t x;
	int rc = get(doc, path, TOML_INT, &n, err);
	if (rc || (rc = toml_node_int(n, &x, err)))
		return rc;
	if (x < min || x > max)
		return value_error(err, n,
		                   "%" PRId64 " is out of range (expected %" PRId64 " to %" PRId64 ")", x,
		                   min, max);
	*v = x;
	return TOML_OK;
}

int toml_get_float(const toml_doc *doc, const char *path, double *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_FLOAT, &n, err);
	return rc ? rc : toml_node_float(n, v, err);
}

int toml_get_bool(const toml_doc *doc, const char *path, int *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_BOOL, &n, err);
	return rc ? rc : toml_node_bool(n, v, err);
}

int toml_get_string(const toml_doc *doc, const char *path, const char **s, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_STRING, &n, err);
	return rc ? rc : toml_node_string(n, s, NULL, err);
}

int toml_get_table(const toml_doc *doc, const char *path, const toml_node **t, toml_error *err)
{
	return get(doc, path, TOML_TABLE, t, err);
}

int toml_get_array(const toml_doc *doc, const char *path, const toml_node **a, toml_error *err)
{
	return get(doc, path, TOML_ARRAY, a, err);
}

/* Levenshtein distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, tmp;
	if (lb >= 64 || la >= 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			size_t best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

int toml_check_keys(const toml_node *table, const char *const *allowed, toml_error *err)
{
	if (!table || table->type != TOML_TABLE)
		return TOML_OK;
	for (size_t i = 0; i < table->nkids; i++) {
		const toml_node *c = table->kids[i];
		const char *best = NULL;
		size_t best_d = (size_t)-1;
		int ok = 0;
		for (const char *const *a = allowed; *a; a++) {
			if (strcmp(*a, c->key) == 0) {
				ok = 1;
				break;
			}
			size_t d = distance(c->key, *a);
			if (d < best_d) {
				best_d = d;
				best = *a;
			}
		}
		if (ok)
			continue;
		if (best && best_d <= 2 + strlen(best) / 4)
			return toml_error_at(err, c, "unknown key (did you mean '%s'?)", best);
		return toml_error_at(err, c, "unknown key");
	}
	return TOML_OK;
}

int toml_equal(const toml_node *a, const toml_node *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TOML_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
	case TOML_INT: return a->i == b->i;
	case TOML_FLOAT:
		return (isnan(a->f) && isnan(b->f)) || (a->f == b->f && signbit(a->f) == signbit(b->f));
	case TOML_BOOL: return a->b == b->b;
	case TOML_ARRAY:
		if (a->nkids != b->nkids)
			return 0;
		for (size_t i = 0; i < a->nkids; i++)
			if (!toml_equal(a->kids[i], b->kids[i]))
				return 0;
		return 1;
	case TOML_TABLE:
		if (a->nkids != b->nkids)
			return 0;
		for (size_t i = 0; i < a->nkids; i++)
			if (!toml_equal(a->kids[i], child_of(b, a->kids[i]->key)))
				return 0;
		return 1;
	default: return 1;
	}
}

/* ---- changing a document -------------------------------------------------------------------- */

/* The node at path, created (with its tables) if absent; an existing value is cleared. */
static int slot(toml_doc *doc, const char *path, toml_node **out, toml_error *err)
{
	keypath k;
	toml_node *t = doc->root, *c = NULL;
	int rc = TOML_ERR;
	*out = NULL;
	if (split_path(path, &k, err))
		return TOML_ERR;
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		c = child_of(t, k.seg[i]);
		if (!c) {
			if (!(c = add_kid(t, k.seg[i]))) {
				set_error(err, doc->root->src, 0, 0, path, "out of memory");
				goto cleanup;
			}
			c->type = TOML_TABLE;
			c->origin = last ? ORIGIN_HEADER : ORIGIN_IMPLICIT;
		} else if (!last && c->type != TOML_TABLE) {
			value_error(err, c, "is %s, not a table (setting '%s')", a_type(c->type), path);
			goto cleanup;
		} else if (last && c->type == TOML_TABLE) {
			toml_error_at(err, c, "is a table; it cannot be replaced by a value");
			goto cleanup;
		}
		t = c;
	}
	node_clear(c);
	c->src = doc->root->src;
	c->line = c->col = c->vline = c->vcol = 0;
	*out = c;
	rc = TOML_OK;
cleanup:
	keypath_free(&k);
	return rc;
}

int toml_set_int(toml_doc *doc, const char *path, int64_t v, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	n->type = TOML_INT;
	n->i = v;
	return TOML_OK;
}

int toml_set_float(toml_doc *doc, const char *path, double v, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	n->type = TOML_FLOAT;
	n->f = v;
	return TOML_OK;
}

int toml_set_bool(toml_doc *doc, const char *path, int v, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	n->type = TOML_BOOL;
	n->b = !!v;
	return TOML_OK;
}

static int valid_utf8(const char *s, size_t len)
{
	parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = s;
	ps.end = s + len;
	ps.line = ps.col = 1;
	return check_utf8(&ps) == TOML_OK;
}

static int set_str(toml_node *n, const char *s)
{
	size_t len = strlen(s);
	if (!valid_utf8(s, len) || !(n->str = malloc(len + 1)))
		return TOML_ERR;
	memcpy(n->str, s, len + 1);
	n->len = len;
	n->type = TOML_STRING;
	return TOML_OK;
}

int toml_set_string(toml_doc *doc, const char *path, const char *s, toml_error *err)
{
	toml_node *n;
	if (!valid_utf8(s, strlen(s)))
		return set_error(err, doc->root->src, 0, 0, path, "the string is not valid UTF-8");
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	if (set_str(n, s)) {
		n->type = TOML_BOOL; /* leave a valid node behind */
		return set_error(err, doc->root->src, 0, 0, path, "out of memory");
	}
	return TOML_OK;
}

int toml_set_array(toml_doc *doc, const char *path, toml_node **arr, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	n->type = TOML_ARRAY;
	*arr = n;
	return TOML_OK;
}

static toml_node *push(toml_node *arr, toml_type t)
{
	toml_node *n;
	if (!arr || arr->type != TOML_ARRAY || !(n = add_kid(arr, NULL)))
		return NULL;
	n->type = t;
	return n;
}

int toml_array_push_int(toml_node *arr, int64_t v)
{
	toml_node *n = push(arr, TOML_INT);
	if (!n)
		return TOML_ERR;
	n->i = v;
	return TOML_OK;
}

int toml_array_push_float(toml_node *arr, double v)
{
	toml_node *n = push(arr, TOML_FLOAT);
	if (!n)
		return TOML_ERR;
	n->f = v;
	return TOML_OK;
}

int toml_array_push_bool(toml_node *arr, int v)
{
	toml_node *n = push(arr, TOML_BOOL);
	if (!n)
		return TOML_ERR;
	n->b = !!v;
	return TOML_OK;
}

int toml_array_push_string(toml_node *arr, const char *s)
{
	toml_node *n = push(arr, TOML_STRING);
	if (!n)
		return TOML_ERR;
	if (set_str(n, s)) {
		arr->nkids--;
		free(n);
		return TOML_ERR;
	}
	return TOML_OK;
}

/* Gives every node of a subtree the source name src. */
static void set_source(toml_node *n, const char *src)
{
	n->src = src;
	for (size_t i = 0; i < n->nkids; i++)
		set_source(n->kids[i], src);
}

int toml_set_value(toml_doc *doc, const char *path, const char *text, const char *source,
                   toml_error *err)
{
	toml_node *n, *tmp = NULL;
	parser ps;
	int rc = TOML_ERR;
	const char *src = intern(doc, source ? source : "<value>");
	if (!src)
		return set_error(err, source, 0, 0, path, "out of memory");
	/* Parse into a detached node first, so a bad value leaves the document as it was. */
	if (!(tmp = calloc(1, sizeof(*tmp)))) {
		set_error(err, source, 0, 0, path, "out of memory");
		goto cleanup;
	}
	tmp->src = src;
	memset(&ps, 0, sizeof(ps));
	ps.p = text;
	ps.end = text + strlen(text);
	ps.line = ps.col = 1;
	ps.src = src;
	ps.doc = doc;
	ps.err = err;
	copy_str(ps.ctx, sizeof(ps.ctx), path);
	ps.nsections = 1 << 28; /* inline tables here never share a section with the file's */
	if (check_utf8(&ps))
		goto cleanup;
	skip_ws(&ps);
	if (parse_value(&ps, tmp))
		goto cleanup;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		char fb[32];
		perr(&ps, "unexpected %s after the value", found(&ps, fb, sizeof(fb)));
		goto cleanup;
	}
	if (slot(doc, path, &n, err))
		goto cleanup;
	n->type = tmp->type;
	n->origin = tmp->origin;
	n->section = tmp->section;
	n->kids = tmp->kids, n->nkids = tmp->nkids, n->cap = tmp->cap;
	n->str = tmp->str, n->len = tmp->len;
	n->i = tmp->i, n->f = tmp->f, n->b = tmp->b;
	for (size_t i = 0; i < n->nkids; i++)
		n->kids[i]->parent = n;
	set_source(n, src);
	n->line = n->vline = 1;
	n->col = n->vcol = tmp->vcol;
	memset(tmp, 0, sizeof(*tmp));
	rc = TOML_OK;
cleanup:
	if (tmp) {
		node_clear(tmp);
		free(tmp);
	}
	return rc;
}

int toml_remove(toml_doc *doc, const char *path, toml_error *err)
{
	const toml_node *n;
	int rc = walk(doc->root, path, &n, err);
	if (rc)
		return rc;
	toml_node *p = n->parent;
	if (!p)
		return set_error(err, doc->root->src, 0, 0, path, "cannot remove the root");
	size_t i = 0;
	while (p->kids[i] != n)
		i++;
	memmove(p->kids + i, p->kids + i + 1, (p->nkids - i - 1) * sizeof(*p->kids));
	p->nkids--;
	node_clear((toml_node *)n);
	free(n->key);
	free((toml_node *)n);
	return TOML_OK;
}

/* ---- writing -------------------------------------------------------------------------------- */

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
	case TOML_STRING: put_basic_string(b, n->str, n->len); break;
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
			put_key(b, n->kids[i]->key);
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
		put_key(b, c->key);
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
		put_key(path, c->key);
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
		set_error(err, path, 0, 0, "", "cannot create: %s", strerror(errno));
		goto cleanup;
	}
	if (toml_write(doc, f, comment)) {
		set_error(err, path, 0, 0, "", "write error: %s", strerror(errno));
		goto cleanup;
	}
	rc = TOML_OK;
cleanup:
	if (f && fclose(f) && rc == TOML_OK)
		rc = set_error(err, path, 0, 0, "", "write error: %s", strerror(errno));
	return rc;
}
