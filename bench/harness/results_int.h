/*
 * results_int.h - what results.c, rows.c and summary.c share; private to those three files.
 *
 *   rows.c     hrow_* and writing one CSV line of a row (bench/lib/csv.h has the CSV rules,
 *              bench/lib/buf.h the growable strings)
 *   results.c  the result directory; shares error text and atomic file writes
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

/* Replaces dir/name with data: temp file, fsync, rename, fsync of the directory. */
int hr__write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err,
                     size_t errn);

/* ---- rows.c ---------------------------------------------------------------------------------- */

/* Appends one CSV line: r's values for columns (unset: ""), or with r NULL the column names. */
void hr__csv_line(bench_buf *b, const char *const *columns, const hrow *r);

#endif
