/*
 * csv.h - the benchmarks' one CSV reader and writer (bench_csv_*), RFC 4180.
 *
 * Fields are separated by ',', records end with "\n" (a "\r\n" is read too). A field holding
 * ',', '"', '\r' or '\n' is written in double quotes with '"' doubled (bench_csv_field). The
 * reader takes quoted fields with embedded commas and newlines, pads short records with "" and
 * drops extra fields; empty lines are skipped. Errors: -1 with a one-line message in the
 * caller's err[errn] (either may be NULL/0).
 */
#ifndef BENCH_CSV_H
#define BENCH_CSV_H

#include "buf.h"

#include <stddef.h>

/* Appends v (NULL: "") as one CSV field, quoted when it must be. */
void bench_csv_field(bench_buf *b, const char *v);

/* A whole CSV file in memory. */
typedef struct bench_csv {
	size_t ncols, nrows;
	char **header; /* ncols names */
	char ***rows;  /* nrows x ncols values */
} bench_csv;
int bench_csv_read(bench_csv *t, const char *path, char *err, size_t errn); /* missing file: -1 */
/* bench_csv_read of the text buf[0..len) (name: what messages call it); -1 only for a quoted
 * field not closed before the end, or out of memory. */
int bench_csv_parse(bench_csv *t, const char *buf, size_t len, const char *name, char *err,
                    size_t errn);
int bench_csv_col(const bench_csv *t, const char *name);                    /* index or -1 */
const char *bench_csv_get(const bench_csv *t, size_t row, const char *col); /* "" if no column */
double bench_csv_num(const bench_csv *t, size_t row, const char *col);      /* NaN if empty */
void bench_csv_free(bench_csv *t);                                          /* NULL ok */

/* Reads a whole regular file of any size (bench_buf_read_file, buf.h); *out is NUL-terminated
 * (free it). -1 with errno on failure: a directory is EISDIR, anything else not a regular file
 * (a FIFO, a device) EINVAL, refused without blocking. */
int bench_read_file(char **out, size_t *len, const char *path);

/* ---- record by record (the harness's resume reads raw files this way) ---- */

/* A growable vector of owned strings. */
typedef struct bench_strvec {
	char **v;
	size_t n, cap;
} bench_strvec;

void bench_strvec_reset(bench_strvec *s); /* frees the strings, keeps the array */
void bench_strvec_free(bench_strvec *s);
int bench_strvec_push(bench_strvec *s,
                      char *owned); /* takes owned (NULL: -1); on failure frees it */

/* Results of bench_csv_record. */
enum {
	BENCH_CSV_END = 0,
	BENCH_CSV_OK = 1,
	BENCH_CSV_EOF = 2,
	BENCH_CSV_BADQUOTE = -1,
	BENCH_CSV_NOMEM = -2
};

/* Reads the record at buf[*pos] into out (reset first). BENCH_CSV_OK: it ended with a newline;
 * BENCH_CSV_EOF: it ended at the end of the buffer; BENCH_CSV_END: nothing left;
 * BENCH_CSV_BADQUOTE: a quoted field runs to the end of the buffer. *pos moves past the record. */
int bench_csv_record(bench_strvec *out, const char *buf, size_t len, size_t *pos);
/* 1 if the line at buf[at] is empty ("\n" or "\r\n"). */
int bench_csv_blank_line(const char *buf, size_t len, size_t at);

#endif /* BENCH_CSV_H */
