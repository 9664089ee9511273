/*
 * input.c - the tool's line inputs: the line reader of apply's and get-many's input
 * (read_line_max), and the reader of apply's input: a file (or standard input) of lines
 * put<TAB>KEY<TAB>VALUE, del<TAB>KEY and delr<TAB>FROM<TAB>TO, keys and values in the escaped text
 * form (escape.c); empty lines and lines beginning with '#' are skipped. A malformed line is
 * refused naming the file and line, and the whole input with it (docs/cli.md, "apply").
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int read_line_max(FILE *f, struct bytes *line, size_t max, int *too_long)
{
	int c;
	line->size = 0;
	*too_long = 0;
	while ((c = getc_unlocked(f)) != EOF) {
		unsigned char b = (unsigned char)c;
		if (b == '\n')
			return 1;
		if (line->size == max) {
			*too_long = 1;
			return 1;
		}
		if (bytes_append(line, &b, 1))
			return -2;
	}
	return line->size > 0 && !ferror(f);
}

/* Decodes one tab-separated field into the arena. Returns 0, or an exit code (reported). */
static int field(struct cli *cli, struct edit_file *ef, const char *src, size_t len,
                 const char *name, unsigned long line, const char *what, size_t limit, size_t *off,
                 size_t *out_len)
{
	const char *why = NULL;
	size_t where = 0;
	*off = ef->arena.size;
	int r = unescape_append(&ef->arena, src, len, &why, &where);
	if (r == -2)
		return fail(cli, EXIT_STORE, "out of memory");
	if (r)
		return fail(cli, EXIT_USAGE, "%s:%lu: bad %s: %s at offset %zu; nothing was committed",
		            name, line, what, why, where);
	*out_len = ef->arena.size - *off;
	if (*out_len > limit)
		return fail(cli, EXIT_USAGE,
		            "%s:%lu: the %s is %zu bytes; at most %zu are allowed; "
		            "nothing was committed",
		            name, line, what, *out_len, limit);
	return 0;
}

/* Parses one line (without its newline). Returns 0, or an exit code (reported). */
static int parse_line(struct cli *cli, struct edit_file *ef, const char *s, size_t len,
                      const char *name, unsigned long line)
{
	const char *tab[3];
	size_t n_tabs = 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\t') {
			if (n_tabs == 3)
				break;
			tab[n_tabs++] = s + i;
		}
	size_t oplen = n_tabs ? (size_t)(tab[0] - s) : len;
	struct pending p = {PROLLY_PUT, 0, 0, 0, 0, 0};
	int rc;

	if (oplen == 3 && memcmp(s, "put", 3) == 0) {
		if (n_tabs != 2)
			return fail(cli, EXIT_USAGE,
			            "%s:%lu: expected put<TAB>KEY<TAB>VALUE (%zu fields "
			            "found); nothing was committed",
			            name, line, n_tabs + 1);
		if ((rc = field(cli, ef, tab[0] + 1, (size_t)(tab[1] - tab[0] - 1), name, line, "key",
		                PROLLY_MAX_KEY, &p.koff, &p.klen)) ||
		    (rc = field(cli, ef, tab[1] + 1, (size_t)(s + len - tab[1] - 1), name, line, "value",
		                PROLLY_MAX_VALUE, &p.voff, &p.vlen)))
			return rc;
	} else if (oplen == 3 && memcmp(s, "del", 3) == 0) {
		if (n_tabs != 1)
			return fail(cli, EXIT_USAGE,
			            "%s:%lu: expected del<TAB>KEY (%zu fields found); "
			            "nothing was committed",
			            name, line, n_tabs + 1);
		p.op = PROLLY_DEL;
		if ((rc = field(cli, ef, tab[0] + 1, (size_t)(s + len - tab[0] - 1), name, line, "key",
		                PROLLY_MAX_KEY, &p.koff, &p.klen)))
			return rc;
	} else if (oplen == 4 && memcmp(s, "delr", 4) == 0) {
		if (n_tabs != 2)
			return fail(cli, EXIT_USAGE,
			            "%s:%lu: expected delr<TAB>FROM<TAB>TO (%zu fields found); "
			            "nothing was committed",
			            name, line, n_tabs + 1);
		p.op = PROLLY_DEL;
		p.range = 1;
		if ((rc = field(cli, ef, tab[0] + 1, (size_t)(tab[1] - tab[0] - 1), name, line, "FROM",
		                PROLLY_MAX_KEY, &p.koff, &p.klen)) ||
		    (rc = field(cli, ef, tab[1] + 1, (size_t)(s + len - tab[1] - 1), name, line, "TO",
		                PROLLY_MAX_KEY, &p.voff, &p.vlen)))
			return rc;
		const unsigned char *from = bytes_at(&ef->arena, p.koff),
		                    *to = bytes_at(&ef->arena, p.voff);
		if (bytes_cmp(from, p.klen, to, p.vlen) > 0)
			return fail(cli, EXIT_USAGE, "%s:%lu: delr: FROM sorts after TO; nothing was committed",
			            name, line);
	} else {
		char *shown = escape_dup(s, oplen > 40 ? 40 : oplen);
		rc = fail(cli, EXIT_USAGE,
		          "%s:%lu: expected put<TAB>KEY<TAB>VALUE, del<TAB>KEY or delr<TAB>FROM<TAB>TO, "
		          "not '%s%s'; nothing was committed",
		          name, line, shown ? shown : "", oplen > 40 ? "..." : "");
		free(shown);
		return rc;
	}
	if (GROW_ARRAY(ef->items, ef->cap, ef->n + 1, 64))
		return fail(cli, EXIT_STORE, "out of memory");
	ef->items[ef->n++] = p;
	return 0;
}

/* The longest valid line: put or delr, two tabs, a key and a value (or TO) of the largest sizes
 * written as \xHH (4 bytes a byte), and a \r (refused with its own message). */
#define APPLY_LINE_MAX (4 + 2 + 4 * PROLLY_MAX_KEY + 4 * PROLLY_MAX_VALUE + 1)

int read_edits(struct cli *cli, struct edit_file *ef, FILE *f, const char *name)
{
	struct bytes text = BYTES_INIT;
	unsigned long lineno = 0;
	int rc = 0, got, too_long;

	while ((got = read_line_max(f, &text, APPLY_LINE_MAX, &too_long)) == 1) {
		const char *line = (const char *)text.ptr;
		size_t n = text.size;
		lineno++;
		if (too_long) {
			rc = fail(cli, EXIT_USAGE,
			          "%s:%lu: the line is over %d bytes, longer than any valid line; nothing "
			          "was committed",
			          name, lineno, APPLY_LINE_MAX);
			goto cleanup;
		}
		if (n && line[n - 1] == '\r') {
			rc = fail(cli, EXIT_USAGE,
			          "%s:%lu: the line ends with \\r\\n (a Windows line end); lines must end "
			          "with \\n alone (a \\r in a value is written \\x0d); nothing was committed",
			          name, lineno);
			goto cleanup;
		}
		if (n == 0 || line[0] == '#')
			continue;
		rc = parse_line(cli, ef, line, n, name, lineno);
		if (rc)
			goto cleanup;
	}
	if (got == -2) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if (ferror(f))
		rc = fail(cli, EXIT_USAGE, "cannot read %s: %s", name, strerror(errno));
cleanup:
	bytes_dispose(&text);
	return rc;
}

int read_edit_file(struct cli *cli, struct edit_file *ef, const char *path, const char *name)
{
	FILE *f = stdin;
	if (strcmp(path, "-") != 0 && !(f = fopen(path, "rb"))) {
		int e = errno;
		return fail(cli, e == ENOENT ? EXIT_NOTFOUND : EXIT_USAGE, "cannot open %s: %s", path,
		            strerror(e));
	}
	int rc = read_edits(cli, ef, f, name);
	if (f != stdin)
		fclose(f);
	return rc;
}

void edit_file_dispose(struct edit_file *ef)
{
	if (!ef)
		return;
	free(ef->items);
	ef->items = NULL;
	ef->n = ef->cap = 0;
	bytes_dispose(&ef->arena);
}
