/*
 * escape.c - the text form of keys and values.
 *
 * Input: `\\` is a backslash, `\t` a tab, `\n` a newline, `\xHH` the byte with hex value HH
 * (either case); any other byte stands for itself. Any other backslash sequence is an error.
 *
 * Output: printable ASCII (0x20..0x7e) other than the backslash is written as is; backslash,
 * tab and newline as `\\`, `\t`, `\n`; every other byte as `\xHH` with lowercase hex. So the
 * output of a key or value never contains a tab or newline, and unescaping it gives the bytes.
 *
 * The rule of everything printed (docs/cli.md, "How prolly prints text"), whatever the stream
 * is connected to: standard output is data, and every text on it that a user or a store gave
 * (keys, values, messages, names, URLs) is in that reversible form (escape_write, escape_puts),
 * so `\x1b` there is always the byte and the text `\x1b` is `\\x1b`. Standard error is one line
 * for people, made safe by the same escaper in its text mode (text_append): readable, not
 * reversible.
 */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int grow_array(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first ? first : 1;
	void *p;
	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return -1;
	memcpy(&p, arrp, sizeof(p)); /* *arrp is a T *: copied as bytes, never read as a void * */
	if (!(p = realloc(p, ncap * elem)))
		return -1;
	memcpy(arrp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

int bytes_append(struct bytes *b, const void *data, size_t size)
{
	if (size == 0)
		return 0;
	if (b->size + size < b->size || GROW_ARRAY(b->ptr, b->cap, b->size + size, 64))
		return -1;
	memcpy(b->ptr + b->size, data, size);
	b->size += size;
	return 0;
}

const unsigned char *bytes_at(const struct bytes *b, size_t off)
{
	return b->ptr ? b->ptr + off : (const unsigned char *)"";
}

void bytes_dispose(struct bytes *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->size = b->cap = 0;
}

/* The byte that the two hex digits at s stand for (either case), or -1. The CLI sees only
 * prolly.h, whose hex decoder takes whole ids, so this leans on the C library. */
static int hexbyte(const char *s)
{
	char two[3] = {s[0], s[1], 0};
	if (!isxdigit((unsigned char)two[0]) || !isxdigit((unsigned char)two[1]))
		return -1;
	return (int)strtoul(two, NULL, 16);
}

int unescape_append(struct bytes *out, const char *s, size_t n, const char **why, size_t *where)
{
	size_t i = 0;
	while (i < n) {
		/* Copy the run of plain bytes up to the next backslash in one go. */
		const char *bs = memchr(s + i, '\\', n - i);
		size_t run = bs ? (size_t)(bs - (s + i)) : n - i;
		if (bytes_append(out, s + i, run))
			return -2;
		i += run;
		if (i == n)
			break;
		unsigned char c;
		size_t len = 2;
		if (i + 1 >= n) {
			*why = "backslash at the end (write \\\\ for a backslash)";
			*where = i;
			return -1;
		}
		switch (s[i + 1]) {
		case '\\': c = '\\'; break;
		case 't': c = '\t'; break;
		case 'n': c = '\n'; break;
		case 'x': {
			int v = i + 3 < n ? hexbyte(s + i + 2) : -1;
			if (v < 0) {
				*why = "\\x needs two hex digits";
				*where = i;
				return -1;
			}
			c = (unsigned char)v;
			len = 4;
			break;
		}
		default:
			*why = "unknown escape (use \\\\, \\t, \\n or \\xHH)";
			*where = i;
			return -1;
		}
		if (bytes_append(out, &c, 1))
			return -2;
		i += len;
	}
	return 0;
}

/* The length of the UTF-8 character at p[0..left) that a terminal shows as text: 2 to 4 for a
 * well-formed one (no overlong form, surrogate or code point past U+10FFFF) that is no C1
 * control (U+0080..U+009F); 0 for anything else. A byte that starts no such character is not
 * text: a terminal in an 8-bit mode (a Latin-1 xterm) takes a lone 0x80..0x9f for a C1 control,
 * 0x9b for CSI. */
static size_t utf8_text_len(const unsigned char *p, size_t left)
{
	size_t n;
	unsigned long cp;
	if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4, cp = p[0] & 0x07u;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3, cp = p[0] & 0x0Fu;
	else if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2, cp = p[0] & 0x1Fu;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3Fu);
	}
	if (cp <= 0x9F || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return n;
}

/* Calls emit for each piece of the escaped form of data. The one escaper of everything printed,
 * in two modes. A field (text 0: every text on stdout, keys, values, messages, names, URLs)
 * keeps printable ASCII but the backslash, which with tab and newline becomes `\\`, `\t`, `\n`,
 * and every other byte `\xHH`: reversible, and never a tab or newline. A message (text 1: the
 * line on stderr) keeps printable ASCII, backslash included, and UTF-8 text (utf8_text_len),
 * and writes every other byte (C0 controls, DEL, C1 controls, invalid UTF-8) as `\xHH`:
 * readable, and nothing in it drives a terminal. */
static void escape_each(const void *data, size_t size, int text,
                        void (*emit)(void *, const char *, size_t), void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = data;
	size_t start = 0, i = 0;
	while (i < size) {
		unsigned char c = p[i];
		size_t keep = c >= 0x20 && c <= 0x7e && (text || c != '\\');
		if (text && c >= 0x80)
			keep = utf8_text_len(p + i, size - i);
		if (keep) {
			i += keep;
			continue;
		}
		if (i > start)
			emit(ctx, (const char *)p + start, i - start);
		char esc[4] = {'\\', 0, 0, 0};
		size_t len = 2;
		if (!text && c == '\\')
			esc[1] = '\\';
		else if (!text && c == '\t')
			esc[1] = 't';
		else if (!text && c == '\n')
			esc[1] = 'n';
		else {
			esc[1] = 'x';
			esc[2] = hex[c >> 4];
			esc[3] = hex[c & 15];
			len = 4;
		}
		emit(ctx, esc, len);
		start = ++i;
	}
	if (size > start)
		emit(ctx, (const char *)p + start, size - start);
}

static void emit_file(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
}

void escape_write(FILE *f, const void *data, size_t size)
{
	escape_each(data, size, 0, emit_file, f);
}

void escape_puts(FILE *f, const char *s)
{
	escape_write(f, s, strlen(s));
}

void escape_value_line(FILE *f, const void *value, size_t size)
{
	if (value)
		escape_write(f, value, size);
	else
		fputs(ABSENT_MARK, f);
	putc('\n', f);
}

struct dup_state {
	struct bytes *out;
	int failed;
};

static void emit_bytes(void *ctx, const char *s, size_t n)
{
	struct dup_state *st = ctx;
	if (!st->failed && bytes_append(st->out, s, n))
		st->failed = 1;
}

char *escape_dup(const void *data, size_t size)
{
	struct bytes out = BYTES_INIT;
	struct dup_state st = {&out, 0};
	escape_each(data, size, 0, emit_bytes, &st);
	if (!st.failed && bytes_append(&out, "", 1))
		st.failed = 1;
	if (st.failed) {
		bytes_dispose(&out);
		return NULL;
	}
	return (char *)out.ptr;
}

int text_append(struct bytes *out, const char *s)
{
	struct dup_state st = {out, 0};
	escape_each(s, strlen(s), 1, emit_bytes, &st);
	return st.failed ? -1 : 0;
}

int bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	return c ? c : (alen > blen) - (alen < blen);
}
