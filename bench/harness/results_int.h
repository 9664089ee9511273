/*
 * results_int.h - what results.c, rows.c and summary.c share; private to those three files.
 *
 *   rows.c     hrow_*, csv_table_* and the helpers below: growable strings (sbuf), string
 *              vectors (strvec), reading one CSV record and writing one CSV line
 *   results.c  the result directory; shares error text and whole-file I/O
 *   summary.c  hr_write_summaries
 *
 * The names exported here carry the hr__ prefix; everything else in those files is static.
 */
#ifndef PROLLY_BENCH_RESULTS_INT_H
#define PROLLY_BENCH_RESULTS_INT_H

#include "buf.h"
#include "harness.h"

#include <stddef.h>

/* Room for any path the result directory builds (dir + "/" + file name). */
#define HR__PATHN 4352

/* A row: parallel arrays of owned column names and values, in the order first set. */
struct hrow {
	char **col, **val;
	size_t n, cap;
};

/* ---- results.c ------------------------------------------------------------------------------- */

/* Formats into err[errn] (either may be NULL/0: nothing is written). */

/* out = dir "/" name; -1 if that does not fit in HR__PATHN. */
int hr__join(char *out, const char *dir, const char *name);

/* Reads a whole file; *out is NUL-terminated. -1 with errno on failure. */
int hr__slurp(char **out, size_t *len, const char *path);

/* Replaces dir/name with data: temp file, fsync, rename, fsync of the directory. */
int hr__write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err,
                     size_t errn);

/* ---- rows.c ---------------------------------------------------------------------------------- */

/* A growable vector of owned strings. */
typedef struct hr__strvec {
	char **v;
	size_t n, cap;
} hr__strvec;

void hr__sv_reset(hr__strvec *s); /* frees the strings, keeps the array */
void hr__sv_free(hr__strvec *s);
int hr__sv_push(hr__strvec *s, char *owned); /* takes owned (NULL: -1); on failure frees it */

/* Results of hr__csv_record. */
enum {
	HR__REC_END = 0,
	HR__REC_OK = 1,
	HR__REC_EOF = 2,
	HR__REC_BADQUOTE = -1,
	HR__REC_NOMEM = -2
};

/* Reads the record at buf[*pos] into out (reset first). HR__REC_OK: it ended with a newline;
 * HR__REC_EOF: it ended at the end of the buffer; HR__REC_END: nothing left; HR__REC_BADQUOTE:
 * a quoted field runs to the end of the buffer. *pos moves past the record. */
int hr__csv_record(hr__strvec *out, const char *buf, size_t len, size_t *pos);

/* Appends one CSV line: r's values for columns (unset: ""), or with r NULL the column names. */
void hr__csv_line(bench_buf *b, const char *const *columns, const hrow *r);

/* 1 if the line at buf[at] is empty ("\n" or "\r\n"). */
int hr__blank_line(const char *buf, size_t len, size_t at);

#endif
