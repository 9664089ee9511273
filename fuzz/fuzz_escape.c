/*
 * fuzz_escape.c - libFuzzer target for the CLI's text form of keys and values (src/cli/escape.c,
 * compiled in): unescape_append, the reader of every key, value and prefix a user types or an
 * apply file or get-many's standard input holds (`\\`, `\t`, `\n`, `\xHH`), and its writers
 * escape_dup and text_append. For any input:
 *   - unescape_append either gives bytes, which escape_dup writes back as text that unescapes to
 *     the same bytes, or fails with a reason at the offset of a backslash inside the input, the
 *     text before that backslash unescaping alone; the bytes are never longer than the text, and
 *     text without a backslash is its own bytes;
 *   - escape_dup of the input read as bytes is printable ASCII (no tab or newline, never the
 *     absent-value mark: every backslash begins an escape) and unescapes to exactly those bytes;
 *   - text_append of the input read as a message (up to its first NUL) holds no C0 control, no
 *     DEL, and above 0x7f only well-formed UTF-8 of code points past the C1 controls.
 * Never a crash, a leak or a sanitizer report.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what)
{
	fprintf(stderr, "%s\n", what);
	abort();
}

/* The bytes text[0..n) stands for, in out (reset first): unescape_append's result. */
static int unescape(struct bytes *out, const char *text, size_t n, const char **why, size_t *where)
{
	out->size = 0;
	*why = NULL;
	*where = (size_t)-1;
	return unescape_append(out, text, n, why, where);
}

/* Escapes bytes and checks that the text is printable ASCII that unescapes to them. */
static void round_trip(const void *bytes, size_t n)
{
	struct bytes back = BYTES_INIT;
	const char *why;
	size_t where;
	char *text = escape_dup(bytes, n);
	if (!text)
		die("escape_dup: out of memory");
	size_t len = strlen(text);
	for (size_t i = 0; i < len; i++) {
		if (text[i] < 0x20 || text[i] > 0x7e)
			die("escape_dup wrote a byte that is not printable ASCII");
		/* Every backslash begins one of the four escapes (so never ABSENT_MARK). */
		if (text[i] == '\\' && (++i == len || !strchr("\\tnx", text[i])))
			die("escape_dup wrote a backslash that begins no escape");
	}
	if (unescape(&back, text, len, &why, &where) != 0 || back.size != n ||
	    (n && memcmp(back.ptr, bytes, n) != 0))
		die("escape_dup's text does not unescape to its bytes");
	bytes_dispose(&back);
	free(text);
}

/* The number of bytes of well-formed UTF-8 at p[0..left) of a code point past U+009F, or 0. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
	unsigned long cp = p[0] & (0x7fu >> n);
	if (n == 0 || p[0] > 0xf4 || left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	static const unsigned long least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < least[n] || cp <= 0x9f || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

static void check_message(const char *s)
{
	struct bytes out = BYTES_INIT;
	if (text_append(&out, s) != 0)
		die("text_append: out of memory");
	for (size_t i = 0; i < out.size;) {
		unsigned char c = out.ptr[i];
		size_t n = c < 0x80 ? (c >= 0x20 && c != 0x7f) : utf8_len(out.ptr + i, out.size - i);
		if (n == 0)
			die("text_append wrote a control byte or invalid UTF-8");
		i += n;
	}
	bytes_dispose(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *why;
	size_t where;
	struct bytes out = BYTES_INIT, before = BYTES_INIT;
	int rc = unescape(&out, text, size, &why, &where);
	if (rc == 0) {
		if (out.size > size || (!memchr(text, '\\', size) &&
		                        (out.size != size || (size && memcmp(out.ptr, data, size) != 0))))
			die("unescape_append gave other bytes than the text holds");
		round_trip(out.ptr, out.size);
	} else if (rc == -1) {
		if (!why || !*why || where >= size || text[where] != '\\')
			die("unescape_append failed without a reason at a backslash");
		if (unescape(&before, text, where, &why, &where) != 0)
			die("the text before the bad escape does not unescape");
	} else {
		die("unescape_append: out of memory");
	}
	round_trip(data, size);
	char *s = malloc(size + 1);
	if (!s)
		die("out of memory");
	memcpy(s, data, size);
	s[size] = 0;
	check_message(s);
	free(s);
	bytes_dispose(&before);
	bytes_dispose(&out);
	return 0;
}
