/*
 * toml_int.h - the TOML reader's internals shared by its files; only bench/lib/toml*.c include
 * it (everything else uses toml.h).
 *
 * The module's files, one job each:
 *   toml.c        errors, nodes and key paths, documents, node access, toml_check_keys,
 *                 toml_equal (it uses no other toml*.c)
 *   toml_scan.c   the parser's tokens: the cursor's errors, comments and line ends, the UTF-8
 *                 check, strings, keys and key paths, numbers
 *   toml_parse.c  the recursive-descent grammar (values, arrays, inline tables, key/value lines,
 *                 [headers]) with the table definition rules; toml_parse_buffer/_file
 *   toml_get.c    lookup by dotted key path (toml_find) and the typed getters (toml_node_*,
 *                 toml_get_*)
 *   toml_edit.c   changing a document: toml_set_*, toml_array_push_*, toml_set_value, toml_remove
 *   toml_write.c  writing a document back as TOML text
 * Names used across these files are toml__*; a file's own helpers are static, unprefixed.
 */
#ifndef BENCH_TOML_INT_H
#define BENCH_TOML_INT_H

#include "toml.h"

#include "buf.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* How a table came to be (see "Table definition rules" in toml_parse.c). */
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

/* ---- toml.c: errors, nodes, documents ----------------------------------------------------- */

/* snprintf's "%s" of src (NULL as ""), truncated to size. */
void toml__copy_str(char *dst, size_t size, const char *src);
/* Fills err (if not NULL): file:line:col: key: message; line 0 leaves out the position. */
void toml__verror(toml_error *err, const char *file, int line, int col, const char *key,
                  const char *fmt, va_list ap);
/* toml__verror; returns TOML_ERR. */
int toml__set_error(toml_error *err, const char *file, int line, int col, const char *key,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Like toml_error_at, but at the value's position; returns TOML_ERR. */
int toml__value_error(toml_error *err, const toml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "a table", "an integer"...: a type as the messages name it. */
const char *toml__a_type(toml_type t);

/* Frees what n holds (its kids, its string), not n itself nor its key. */
void toml__node_clear(toml_node *n);
/* A new zeroed node appended to parent (table: with a copy of key; array: key NULL), with
 * parent's source; NULL when out of memory. */
toml_node *toml__add_kid(toml_node *parent, const char *key);
/* The kid of table t named key; NULL if none or t is not a table. */
toml_node *toml__child_of(const toml_node *t, const char *key);
/* Writes s as a TOML basic string ("...", escaped). */
int toml__put_string(bench_buf *b, const char *s, size_t len);
/* Writes a key: bare if it can be, else quoted. */
int toml__put_key(bench_buf *b, const char *k);
/* Appends n's path from the root (a.b[2].c) to b. */
void toml__path_into(bench_buf *b, const toml_node *n);

/* Interns a source name in the document; returns the doc's copy (NULL when out of memory). */
const char *toml__intern(toml_doc *doc, const char *name);

/* ---- the parser (toml_scan.c, toml_parse.c) ---------------------------------------------- */

typedef struct toml__parser {
	const char *p, *end;
	int line, col;
	const char *src;
	toml_doc *doc;
	toml_error *err;
	int nsections;
	int depth;
	char ctx[256]; /* dotted path of the key whose value is being parsed */
} toml__parser;

/* A key's parts (a."b c".d), each with its position. */
typedef struct toml__keypath {
	char *seg[TOML_MAX_DEPTH];
	int line[TOML_MAX_DEPTH], col[TOML_MAX_DEPTH];
	int n;
} toml__keypath;

/* Byte at offset k from the cursor, or -1 past the end. */
static inline int toml__at(const toml__parser *ps, size_t k)
{
	return (size_t)(ps->end - ps->p) > k ? (unsigned char)ps->p[k] : -1;
}

static inline void toml__adv(toml__parser *ps)
{
	unsigned char c = (unsigned char)*ps->p++;
	if (c == '\n') {
		ps->line++;
		ps->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		ps->col++;
	}
}

static inline void toml__adv_n(toml__parser *ps, size_t n)
{
	while (n--)
		toml__adv(ps);
}

static inline int toml__is_ws(int c)
{
	return c == ' ' || c == '\t';
}

static inline int toml__is_bare_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

static inline int toml__is_ctrl(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static inline void toml__skip_ws(toml__parser *ps)
{
	while (toml__is_ws(toml__at(ps, 0)))
		toml__adv(ps);
}

static inline int toml__at_newline(const toml__parser *ps)
{
	return toml__at(ps, 0) == '\n' || (toml__at(ps, 0) == '\r' && toml__at(ps, 1) == '\n');
}

static inline void toml__eat_newline(toml__parser *ps)
{
	if (toml__at(ps, 0) == '\r')
		toml__adv(ps);
	toml__adv(ps);
}

/* An error at line:col of the parser's source, naming ps->ctx; returns TOML_ERR. */
int toml__perr_at(toml__parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An error at the cursor. */
#define toml__perr(ps, ...) toml__perr_at((ps), (ps)->line, (ps)->col, __VA_ARGS__)
/* A short description of what is at the cursor, for "found ..." in messages. */
const char *toml__found(const toml__parser *ps, char *buf, size_t size);
/* Skips a comment if one starts at the cursor (not the newline ending it). */
int toml__skip_comment(toml__parser *ps);
/* Whitespace, comments and newlines (inside arrays). */
int toml__skip_blank(toml__parser *ps);
/* After a key/value or header: whitespace, an optional comment, then a newline or the end. */
int toml__end_line(toml__parser *ps, const char *after);
/* Checks the whole input (ps->p to ps->end) to be UTF-8 with no lone carriage return. */
int toml__check_utf8(toml__parser *ps);
/* 1 if s[0..len) is valid UTF-8 (as toml__check_utf8 checks it). */
int toml__valid_utf8(const char *s, size_t len);
/* A string at the cursor (its opening quote) into out; multi-line forms only if `multi`. */
int toml__parse_string(toml__parser *ps, bench_buf *out, int multi);
/* A key at the cursor (dotted parts, whitespace around the dots) into k. */
int toml__parse_key(toml__parser *ps, toml__keypath *k);
void toml__keypath_free(toml__keypath *k);
/* The first `upto` parts of k, written as a dotted key. */
void toml__keypath_str(const toml__keypath *k, int upto, char *buf, size_t size);
/* The first `upto` parts of k, with the path of table t in front. */
void toml__full_path(const toml_node *t, const toml__keypath *k, int upto, char *buf, size_t size);
/* Splits a dotted path with the key grammar; errors say "invalid key path". */
int toml__split_path(const char *path, toml__keypath *k, toml_error *err);
/* The number, infinity or NaN tok[0..len) into n (the cursor is at tok; it does not move). */
int toml__parse_number(toml__parser *ps, toml_node *n, const char *tok, size_t len);

/* toml_parse.c: text as one value (whitespace around it allowed) into the detached node n,
 * whose src names the text in errors; errors name path. For toml_set_value. */
int toml__parse_value_text(toml_doc *doc, toml_node *n, const char *text, const char *path,
                           toml_error *err);

/* ---- toml_get.c: lookup ------------------------------------------------------------------- */

/* Walks path from table t: TOML_OK with *out, TOML_MISSING, or TOML_ERR (bad path, or a part
 * that is not a table). */
int toml__walk(const toml_node *t, const char *path, const toml_node **out, toml_error *err);

#endif
