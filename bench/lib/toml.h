/*
 * toml.h - a strict TOML reader and writer for the benchmark harness's workload files.
 *
 * Supported (see docs/harness-libs.md for the full list and the reasons):
 *   tables [a] and [a.b]; key = value with bare, "basic" and 'literal' keys and dotted keys
 *   a.b = 1;
 *   strings: basic (all TOML 1.0 escapes), literal, and the multi-line forms of both;
 *   integers: decimal with sign and '_' separators, 0x / 0o / 0b; out of 64-bit range is an error;
 *   floats (with inf / nan), booleans, arrays (nested, mixed, multi-line, trailing comma),
 *   inline tables { a = 1, b = "x" }, comments.
 * Not supported (each is a clear error): arrays of tables [[a]], dates and times.
 *
 * Errors: every failing call fills a toml_error with the source name (file name), 1-based line
 * and column, the dotted key involved and a message; err->text is the whole thing on one line:
 *
 *   workload.toml:12:11: service.records: expected an integer, found a string ("1000")
 *
 * The tree: a document has a root table; a node is a table, an array or a scalar. Tables keep
 * their keys in the order they were written (lookups are linear: workload files are small).
 * Nodes remember where they were written (source name, line, column), so the caller can report
 * "unknown key" or "impossible value" errors that name file, line and key (toml_error_at,
 * toml_check_keys).
 *
 * Every function taking a toml_error *err accepts NULL. Thread safety: a document may be read by
 * many threads at once; changing it needs exclusive access. Numbers are read and written in the
 * "C" locale's format (the harness never calls setlocale).
 */
#ifndef BENCH_TOML_H
#define BENCH_TOML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum toml_type {
	TOML_NONE = 0, /* no node (a lookup that found nothing) */
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INT,
	TOML_FLOAT,
	TOML_BOOL,
} toml_type;

/* Return codes. TOML_MISSING is not a failure: the typed getters return it (and fill err with a
 * "missing" message the caller may print) when the key is absent, so defaults are easy. */
enum { TOML_OK = 0, TOML_ERR = -1, TOML_MISSING = 1 };

/* Deepest nesting of tables, arrays and inline tables, and most parts in one dotted key. */
#define TOML_MAX_DEPTH 64

typedef struct toml_error {
	char file[256]; /* source name: the file name, "<buffer>", or what toml_set_value was given */
	int line, col;  /* 1-based; 0 when no position applies (a missing key, an API-set value) */
	char key[256];  /* dotted key path involved ("service.records", "service.clients[2]"), or "" */
	char msg[512];
	char text[1200]; /* "file:line:col: key: msg", or without the parts that do not apply */
} toml_error;

typedef struct toml_doc toml_doc;
typedef struct toml_node toml_node;

/* ---- parsing --------------------------------------------------------------------------------- */

/* Largest file toml_parse_file reads: 1 MiB. A workload file of every key is under 8 KB, so
 * this leaves room for any comments while a path naming something huge (a sparse file, a disk
 * image) is refused before a byte of it is held in memory. */
#define TOML_MAX_FILE_BYTES (1L << 20)

/* Parses a whole file. `path` is also the source name used in errors. It must name a regular
 * file of at most TOML_MAX_FILE_BYTES: anything else (a directory, a FIFO, a device such as
 * /dev/zero, a larger file) fails with TOML_ERR, "PATH: not a regular file" or "PATH: N bytes is
 * too large", without blocking (a FIFO is opened non-blocking, then refused). */
int toml_parse_file(toml_doc **out, const char *path, toml_error *err);
/* Parses len bytes (need not be NUL-terminated); `name` (NULL: "<buffer>") is used in errors. */
int toml_parse_buffer(toml_doc **out, const char *buf, size_t len, const char *name,
                      toml_error *err);
/* A new empty document (to build one through the setters). */
int toml_doc_new(toml_doc **out, const char *name);
void toml_free(toml_doc *doc);

const toml_node *toml_root(const toml_doc *doc);
const char *toml_doc_name(const toml_doc *doc);

/* ---- nodes ----------------------------------------------------------------------------------- */

toml_type toml_node_type(const toml_node *n);  /* TOML_NONE for NULL */
const char *toml_type_name(toml_type t);       /* "integer", "table", ... */
const char *toml_node_key(const toml_node *n); /* NULL for the root and array elements */
const toml_node *toml_node_parent(const toml_node *n);
int toml_node_line(const toml_node *n); /* where its key (or header) was written */
int toml_node_col(const toml_node *n);
const char *toml_node_source(const toml_node *n); /* source name it was read from */
/* The full dotted path ("service.operation_mix.commit", "scale.sizes[1]") into buf; returns buf. */
char *toml_node_path(const toml_node *n, char *buf, size_t size);

/* Lookup by dotted path, relative to a table ("service.records", "a.\"quoted.key\""); NULL if it
 * is absent or the path passes through something that is not a table. */
const toml_node *toml_find(const toml_node *table, const char *path);
/* Exact (undotted) key in one table. */
const toml_node *toml_child(const toml_node *table, const char *key);

/* Tables and arrays: members in written order (tables: key/value and sub-tables alike). */
size_t toml_len(const toml_node *n);
const toml_node *toml_at(const toml_node *n, size_t i);

/* Node values. Each checks the type and on mismatch returns TOML_ERR with an error such as
 * "expected an integer, found a string ("x")" at the value's position.
 * toml_node_float accepts an integer too (converted; the harness's shares may be written "1").
 * toml_node_string gives the NUL-terminated text and (if len) its length (it may contain
 * \u0000). */
int toml_node_int(const toml_node *n, int64_t *v, toml_error *err);
int toml_node_float(const toml_node *n, double *v, toml_error *err);
int toml_node_bool(const toml_node *n, int *v, toml_error *err);
int toml_node_string(const toml_node *n, const char **s, size_t *len, toml_error *err);

/* ---- typed getters by path --------------------------------------------------------------------
 * TOML_OK with the value; TOML_MISSING if absent (value untouched; err says "missing");
 * TOML_ERR on a wrong type, a path through a non-table, or a bad path. */
int toml_get_int(const toml_doc *doc, const char *path, int64_t *v, toml_error *err);
int toml_get_float(const toml_doc *doc, const char *path, double *v, toml_error *err);
int toml_get_bool(const toml_doc *doc, const char *path, int *v, toml_error *err);
int toml_get_string(const toml_doc *doc, const char *path, const char **s, toml_error *err);
int toml_get_table(const toml_doc *doc, const char *path, const toml_node **t, toml_error *err);
int toml_get_array(const toml_doc *doc, const char *path, const toml_node **a, toml_error *err);
/* An integer in [min, max]; outside it is TOML_ERR ("service.clients[1]: 0 is out of range,
 * expected 1 to 4096"). */
int toml_get_int_range(const toml_doc *doc, const char *path, int64_t min, int64_t max, int64_t *v,
                       toml_error *err);

/* ---- validation helpers ---------------------------------------------------------------------- */

/* Fails on the first key of `table` not in `allowed` (NULL-terminated): "unknown key
 * 'service.recordz' (did you mean 'records'?)" at the key's line and column. */
int toml_check_keys(const toml_node *table, const char *const *allowed, toml_error *err);
/* Fills err for a problem with node n (its source, line, column and path); returns TOML_ERR.
 * For the caller's own checks: toml_error_at(err, n, "must total 100, not %d", sum). */
int toml_error_at(toml_error *err, const toml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Deep equality of two trees (keys in any order, values and types exactly; nan equals nan). */
int toml_equal(const toml_node *a, const toml_node *b);

/* ---- changing a document ----------------------------------------------------------------------
 * The setters create missing tables along the path and replace an existing value of any type at
 * the path (this is how defaults are filled in and command-line overrides applied). A path
 * through a non-table, or onto an existing table that would be replaced by a non-table, fails.
 * Values set this way carry no position (line 0) unless they come from toml_set_value. */
int toml_set_int(toml_doc *doc, const char *path, int64_t v, toml_error *err);
int toml_set_float(toml_doc *doc, const char *path, double v, toml_error *err);
int toml_set_bool(toml_doc *doc, const char *path, int v, toml_error *err);
int toml_set_string(toml_doc *doc, const char *path, const char *s, toml_error *err);
/* Sets path to the TOML value written in `text` ("[1, 4]", "0.25", "\"lmdb\"", "{ a = 1 }"),
 * parsed with the same rules as a file; errors name `source` (e.g. "--set service.clients"). */
int toml_set_value(toml_doc *doc, const char *path, const char *text, const char *source,
                   toml_error *err);
/* Sets path to a new empty array and returns it for the push functions. */
int toml_set_array(toml_doc *doc, const char *path, toml_node **arr, toml_error *err);
int toml_array_push_int(toml_node *arr, int64_t v);
int toml_array_push_float(toml_node *arr, double v);
int toml_array_push_bool(toml_node *arr, int v);
int toml_array_push_string(toml_node *arr, const char *s);
/* Removes the key at path (TOML_MISSING if absent). */
int toml_remove(toml_doc *doc, const char *path, toml_error *err);

/* ---- writing ----------------------------------------------------------------------------------
 * Writes the tree as TOML that parses back to an equal tree: root values first, then one
 * [section] per table that holds values (or is empty), in written order; inline tables stay
 * inline; floats in the shortest form that reads back exactly. Comments are not kept; `comment`
 * (may be NULL, may hold newlines) is written first as '#' lines. */
char *toml_to_string(const toml_doc *doc, const char *comment); /* malloc'd; NULL: no memory */
int toml_write(const toml_doc *doc, FILE *f, const char *comment);
int toml_write_file(const toml_doc *doc, const char *path, const char *comment, toml_error *err);

#endif
