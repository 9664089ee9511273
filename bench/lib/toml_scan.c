/*
 * toml_scan.c - the TOML parser's tokens (toml_parse.c holds the grammar): errors at the cursor,
 * comments and line ends, the UTF-8 check, strings and their escapes, keys and key paths,
 * numbers.
 *
 * The parser is a hand-written recursive descent over a byte buffer that it first checks to be
 * UTF-8 (toml__check_utf8). Positions (line, column in characters) are tracked as it advances
 * (the cursor, toml__at/toml__adv, is in toml_int.h).
 */
#include "toml_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int toml__perr_at(toml__parser *ps, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	toml__verror(ps->err, ps->src, line, col, ps->ctx, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* A short description of what is at the cursor, for "found ..." in messages. */
const char *toml__found(const toml__parser *ps, char *buf, size_t size)
{
	int c = toml__at(ps, 0);
	if (c < 0)
		return "end of file";
	if (c == '\n' || (c == '\r' && toml__at(ps, 1) == '\n'))
		return "end of line";
	if (c >= 0x21 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else if (c == ' ' || c == '\t')
		snprintf(buf, size, "whitespace");
	else if (c < 0x80)
		snprintf(buf, size, "control character U+%04X", (unsigned)c);
	else {
		size_t n = 1;
		while (n < 4 && toml__at(ps, n) >= 0 && (toml__at(ps, n) & 0xc0) == 0x80)
			n++;
		snprintf(buf, size, "'%.*s'", (int)n, ps->p);
	}
	return buf;
}

/* Skips a comment if one starts at the cursor (not the newline ending it). */
int toml__skip_comment(toml__parser *ps)
{
	if (toml__at(ps, 0) != '#')
		return TOML_OK;
	while (toml__at(ps, 0) >= 0 && !toml__at_newline(ps)) {
		if (toml__is_ctrl(toml__at(ps, 0)))
			return toml__perr(ps, "control character U+%04X in a comment",
			                  (unsigned)toml__at(ps, 0));
		toml__adv(ps);
	}
	return TOML_OK;
}

/* Whitespace, comments and newlines (inside arrays). */
int toml__skip_blank(toml__parser *ps)
{
	for (;;) {
		toml__skip_ws(ps);
		if (toml__at(ps, 0) == '#') {
			if (toml__skip_comment(ps))
				return TOML_ERR;
		} else if (toml__at_newline(ps)) {
			toml__eat_newline(ps);
		} else {
			return TOML_OK;
		}
	}
}

/* After a key/value or header: whitespace, an optional comment, then a newline or the end. */
int toml__end_line(toml__parser *ps, const char *after)
{
	char fb[32];
	toml__skip_ws(ps);
	if (toml__skip_comment(ps))
		return TOML_ERR;
	if (toml__at(ps, 0) < 0)
		return TOML_OK;
	if (toml__at_newline(ps)) {
		toml__eat_newline(ps);
		return TOML_OK;
	}
	return toml__perr(ps, "expected the end of the line after %s, found %s", after,
	                  toml__found(ps, fb, sizeof(fb)));
}

int toml__check_utf8(toml__parser *ps)
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
				return toml__perr_at(ps, line, col, "carriage return not followed by a line feed");
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
			return toml__perr_at(ps, line, col, "invalid UTF-8 (byte 0x%02X)", c);
		}
		if ((size_t)(end - p) < n)
			return toml__perr_at(ps, line, col, "invalid UTF-8 (truncated sequence)");
		for (size_t i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return toml__perr_at(ps, line, col, "invalid UTF-8 (byte 0x%02X)", p[i]);
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return toml__perr_at(ps, line, col,
			                     "invalid UTF-8 (overlong form or not a scalar value)");
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
static int escape(toml__parser *ps, bench_buf *out)
{
	int line = ps->line, col = ps->col, c = toml__at(ps, 1);
	const char *simple = "b\bt\tn\nf\fr\r\"\"\\\\";
	for (const char *s = simple; *s; s += 2)
		if (c == *s) {
			toml__adv_n(ps, 2);
			return bench_buf_putc(out, s[1]);
		}
	if (c == 'u' || c == 'U') {
		int nd = c == 'u' ? 4 : 8;
		uint32_t cp = 0;
		for (int i = 0; i < nd; i++) {
			int h = hexval(toml__at(ps, 2 + (size_t)i));
			if (h < 0)
				return toml__perr_at(ps, line, col, "\\%c needs %d hexadecimal digits", c, nd);
			cp = cp << 4 | (uint32_t)h;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return toml__perr_at(ps, line, col, "\\%c%0*" PRIX32 " is not a Unicode scalar value",
			                     c, nd, cp);
		toml__adv_n(ps, 2 + (size_t)nd);
		return put_utf8(out, cp);
	}
	if (c >= 0x21 && c < 0x7f)
		return toml__perr_at(ps, line, col, "invalid escape sequence '\\%c'", c);
	return toml__perr_at(ps, line, col, "invalid escape sequence (backslash before %s)",
	                     c < 0                    ? "end of file"
	                     : c == '\n' || c == '\r' ? "end of line"
	                                              : "a space");
}

/* One character of a string at the cursor, c: an escape if the string is basic, else the
 * character itself; a control character must be written as an escape. */
static int string_char(toml__parser *ps, bench_buf *out, int c, int basic)
{
	if (basic && c == '\\')
		return escape(ps, out);
	if (toml__is_ctrl(c))
		return toml__perr(ps, "control character U+%04X in a string; write it as an escape",
		                  (unsigned)c);
	bench_buf_putc(out, (char)c);
	toml__adv(ps);
	return TOML_OK;
}

/* A string at the cursor (its opening quote); multi-line forms only if `multi`. */
int toml__parse_string(toml__parser *ps, bench_buf *out, int multi)
{
	int line = ps->line, col = ps->col, q = toml__at(ps, 0);
	int basic = q == '"';
	char fb[32];
	if (toml__at(ps, 1) == q && toml__at(ps, 2) == q) {
		if (!multi)
			return toml__perr(ps, "a multi-line string cannot be a key");
		toml__adv_n(ps, 3);
		if (toml__at_newline(ps))
			toml__eat_newline(ps);
		for (;;) {
			int c = toml__at(ps, 0);
			if (c < 0)
				return toml__perr_at(ps, line, col, "unterminated multi-line string");
			if (c == q) {
				size_t k = 0;
				while (toml__at(ps, k) == q)
					k++;
				if (k >= 3 && k <= 5) {
					bench_buf_put(out, basic ? "\"\"" : "''", k - 3);
					toml__adv_n(ps, k);
					break;
				}
				if (k > 5)
					return toml__perr(ps, "too many quotes in a row in a multi-line string");
				bench_buf_put(out, basic ? "\"\"" : "''", k);
				toml__adv_n(ps, k);
			} else if (basic && c == '\\') {
				size_t j = 1;
				while (toml__is_ws(toml__at(ps, j)))
					j++;
				if (toml__at(ps, j) == '\n' ||
				    (toml__at(ps, j) == '\r' && toml__at(ps, j + 1) == '\n')) {
					toml__adv_n(ps, j);
					while (toml__is_ws(toml__at(ps, 0)) || toml__at_newline(ps))
						toml__adv_n(ps, toml__at(ps, 0) == '\r' ? 2 : 1);
				} else if (escape(ps, out)) {
					return TOML_ERR;
				}
			} else if (toml__at_newline(ps)) {
				toml__eat_newline(ps);
				bench_buf_putc(out, '\n');
			} else if (string_char(ps, out, c, basic)) {
				return TOML_ERR;
			}
		}
		return out->oom ? toml__perr_at(ps, line, col, "out of memory") : TOML_OK;
	}
	toml__adv(ps);
	for (;;) {
		int c = toml__at(ps, 0);
		if (c < 0 || c == '\n' || c == '\r')
			return toml__perr_at(ps, line, col,
			                     "unterminated string (found %s before the closing %c)",
			                     toml__found(ps, fb, sizeof(fb)), q);
		if (c == q) {
			toml__adv(ps);
			break;
		}
		if (string_char(ps, out, c, basic))
			return TOML_ERR;
	}
	return out->oom ? toml__perr_at(ps, line, col, "out of memory") : TOML_OK;
}

void toml__keypath_free(toml__keypath *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->seg[i]);
	k->n = 0;
}

int toml__parse_key(toml__parser *ps, toml__keypath *k)
{
	char fb[32];
	k->n = 0;
	for (;;) {
		bench_buf b = {0};
		int c = toml__at(ps, 0);
		if (k->n == TOML_MAX_DEPTH)
			return toml__perr(ps, "key has more than %d parts", TOML_MAX_DEPTH);
		k->line[k->n] = ps->line;
		k->col[k->n] = ps->col;
		if (c == '"' || c == '\'') {
			if (toml__parse_string(ps, &b, 0)) {
				free(b.p);
				return TOML_ERR;
			}
		} else if (toml__is_bare_char(c)) {
			const char *s = ps->p;
			while (toml__is_bare_char(toml__at(ps, 0)))
				toml__adv(ps);
			bench_buf_put(&b, s, (size_t)(ps->p - s));
		} else {
			return toml__perr(ps, "expected a key, found %s%s", toml__found(ps, fb, sizeof(fb)),
			                  c >= 0x80 ? " (keys other than A-Za-z0-9_- need quotes)" : "");
		}
		if (bench_buf_put(&b, "", 0)) {
			free(b.p);
			return toml__perr(ps, "out of memory");
		}
		if (strlen(b.p) != b.n) {
			free(b.p);
			return toml__perr_at(ps, k->line[k->n], k->col[k->n], "a key cannot contain U+0000");
		}
		k->seg[k->n++] = b.p;
		toml__skip_ws(ps);
		if (toml__at(ps, 0) != '.')
			return TOML_OK;
		toml__adv(ps);
		toml__skip_ws(ps);
	}
}

void toml__keypath_str(const toml__keypath *k, int upto, char *buf, size_t size)
{
	bench_buf b = {0};
	for (int i = 0; i < upto; i++) {
		if (i)
			bench_buf_putc(&b, '.');
		toml__put_key(&b, k->seg[i]);
	}
	toml__copy_str(buf, size, b.oom || !b.p ? "" : b.p);
	free(b.p);
}

/* The first `upto` parts of k, with the path of table t in front. */
void toml__full_path(const toml_node *t, const toml__keypath *k, int upto, char *buf, size_t size)
{
	bench_buf b = {0};
	toml__path_into(&b, t);
	for (int i = 0; i < upto; i++) {
		if (b.n)
			bench_buf_putc(&b, '.');
		toml__put_key(&b, k->seg[i]);
	}
	toml__copy_str(buf, size, b.oom || !b.p ? "" : b.p);
	free(b.p);
}

/* Digits of `base` with single '_' between digits, from tok[*i]; advances *i. */
static int digits(toml__parser *ps, const char *tok, size_t len, size_t *i, int base)
{
	size_t start = *i;
	int prev_digit = 0;
	while (*i < len) {
		int c = tok[*i], d = hexval(c);
		if (c == '_') {
			if (!prev_digit || *i + 1 >= len || hexval(tok[*i + 1]) < 0 ||
			    hexval(tok[*i + 1]) >= base)
				return toml__perr(ps, "'_' must be between two digits in '%.*s'", (int)len, tok);
			prev_digit = 0;
		} else if (d >= 0 && d < base) {
			prev_digit = 1;
		} else {
			break;
		}
		(*i)++;
	}
	if (*i == start)
		return toml__perr(ps, "expected digits in '%.*s'", (int)len, tok);
	return TOML_OK;
}

int toml__parse_number(toml__parser *ps, toml_node *n, const char *tok, size_t len)
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
			return toml__perr(ps,
			                  "'%.*s': a hexadecimal, octal or binary integer cannot have a sign",
			                  (int)len, tok);
		i += 2;
		if (digits(ps, tok, len, &i, base))
			return TOML_ERR;
		if (i != len)
			return toml__perr(ps, "invalid digit '%c' in '%.*s'", tok[i], (int)len, tok);
		for (size_t j = 2; j < len; j++) {
			if (tok[j] == '_')
				continue;
			uint64_t d = (uint64_t)hexval(tok[j]);
			if (v > ((uint64_t)INT64_MAX - d) / (uint64_t)base)
				return toml__perr(
				    ps, "integer %.*s does not fit in 64 bits (the largest is %" PRId64 ")",
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
		return toml__perr(ps, "leading zeros are not allowed in '%.*s'", (int)len, tok);
	size_t int_end = i;
	if (i < len && tok[i] == '.') {
		i++;
		if (i >= len || tok[i] < '0' || tok[i] > '9')
			return toml__perr(ps, "a float needs digits after the '.' in '%.*s'", (int)len, tok);
		if (digits(ps, tok, len, &i, 10))
			return TOML_ERR;
		is_float = 1;
	}
	if (i < len && (tok[i] == 'e' || tok[i] == 'E')) {
		i++;
		if (i < len && (tok[i] == '+' || tok[i] == '-'))
			i++;
		if (i >= len || tok[i] < '0' || tok[i] > '9')
			return toml__perr(ps, "an exponent needs digits in '%.*s'", (int)len, tok);
		if (digits(ps, tok, len, &i, 10))
			return TOML_ERR;
		is_float = 1;
	}
	if (i != len)
		return toml__perr(ps, "invalid number '%.*s'", (int)len, tok);
	if (is_float) {
		char buf[128], *endp;
		size_t m = 0;
		for (size_t j = 0; j < len; j++)
			if (tok[j] != '_') {
				if (m + 1 >= sizeof(buf))
					return toml__perr(ps, "number too long");
				buf[m++] = tok[j];
			}
		buf[m] = 0;
		errno = 0;
		n->f = strtod(buf, &endp);
		if (*endp)
			return toml__perr(ps, "invalid float '%.*s'", (int)len, tok);
		if (errno == ERANGE && isinf(n->f))
			return toml__perr(ps, "float %.*s is out of range", (int)len, tok);
		n->type = TOML_FLOAT;
		return TOML_OK;
	}
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t j = start; j < int_end; j++) {
		if (tok[j] == '_')
			continue;
		uint64_t d = (uint64_t)(tok[j] - '0');
		if (v > (lim - d) / 10)
			return toml__perr(
			    ps, "integer %.*s does not fit in 64 bits (range %" PRId64 " to %" PRId64 ")",
			    (int)len, tok, INT64_MIN, INT64_MAX);
		v = v * 10 + d;
	}
	n->type = TOML_INT;
	n->i = neg ? (int64_t)(0 - v) : (int64_t)v;
	return TOML_OK;
}

/* Splits a dotted path with the key grammar. */
int toml__split_path(const char *path, toml__keypath *k, toml_error *err)
{
	toml__parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = path;
	ps.end = path + strlen(path);
	ps.line = ps.col = 1;
	ps.src = "<path>";
	ps.err = err;
	k->n = 0;
	if (toml__parse_key(&ps, k))
		goto fail;
	if (ps.p != ps.end) {
		char fb[32];
		toml__perr(&ps, "unexpected %s in the key path '%s'", toml__found(&ps, fb, sizeof(fb)),
		           path);
		goto fail;
	}
	return TOML_OK;
fail:
	toml__keypath_free(k);
	if (err) {
		char msg[sizeof(err->msg)];
		toml__copy_str(msg, sizeof(msg), err->msg);
		toml__set_error(err, "", 0, 0, path, "invalid key path: %s", msg);
	}
	return TOML_ERR;
}

int toml__valid_utf8(const char *s, size_t len)
{
	toml__parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = s;
	ps.end = s + len;
	ps.line = ps.col = 1;
	return toml__check_utf8(&ps) == TOML_OK;
}
