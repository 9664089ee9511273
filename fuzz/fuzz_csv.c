/*
 * fuzz_csv.c - libFuzzer target for the benchmarks' CSV reader (bench/lib/csv.c), which reads
 * the files a user may have edited: a --baseline directory's and a resumed run's. For any input:
 *   - bench_csv_record, called until it says END, returns END, OK, EOF or BADQUOTE only; each
 *     record has a field at least and moves the position forward, never past the end (EOF: to
 *     the end);
 *   - the records read before the end (or a BADQUOTE) written back with bench_csv_field read
 *     back as the same records;
 *   - bench_csv_parse fails, with a message, exactly when a quoted field is not closed, and
 *     otherwise gives a table whose every row has the header's number of fields, whose column
 *     lookups find each name's first column, and which written back reads back as the same table.
 * Never a crash, a leak or a sanitizer report.
 */
#include "csv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what)
{
	fprintf(stderr, "%s\n", what);
	abort();
}

/* Appends one record of n fields to b, as a CSV writer does. */
static void put_record(bench_buf *b, char *const *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			bench_buf_putc(b, ',');
		bench_csv_field(b, fields[i]);
	}
	bench_buf_putc(b, '\n');
}

/* Reads every record of buf into recs (one strvec each, *n of them); returns the last result. */
static int read_records(bench_strvec **recs, size_t *n, const char *buf, size_t len)
{
	size_t pos = 0, cap = 0;
	*recs = NULL;
	*n = 0;
	for (;;) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			bench_strvec *more = realloc(*recs, cap * sizeof(**recs));
			if (!more)
				die("out of memory");
			*recs = more;
		}
		bench_strvec *r = &(*recs)[*n];
		memset(r, 0, sizeof(*r));
		size_t before = pos;
		int rc = bench_csv_record(r, buf, len, &pos);
		if (rc == BENCH_CSV_END || rc == BENCH_CSV_BADQUOTE) {
			if (pos != before || (rc == BENCH_CSV_END && pos < len))
				die("END or BADQUOTE moved the position, or END before the end");
			bench_strvec_free(r);
			return rc;
		}
		if (rc != BENCH_CSV_OK && rc != BENCH_CSV_EOF)
			die("bench_csv_record returned another result");
		if (r->n == 0 || pos <= before || pos > len || (rc == BENCH_CSV_EOF && pos != len))
			die("a record without fields, or a position that did not move forward");
		++*n;
		if (rc == BENCH_CSV_EOF)
			return rc;
	}
}

static void free_records(bench_strvec *recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		bench_strvec_free(&recs[i]);
	free(recs);
}

static void check_records(const uint8_t *data, size_t size)
{
	bench_strvec *a = NULL, *b = NULL;
	size_t na, nb;
	bench_buf out = {0};
	read_records(&a, &na, (const char *)data, size);
	for (size_t i = 0; i < na; i++)
		put_record(&out, a[i].v, a[i].n);
	if (out.oom)
		die("out of memory");
	int rc = read_records(&b, &nb, out.p ? out.p : "", out.n);
	if (nb != na || (na && rc != BENCH_CSV_OK && rc != BENCH_CSV_END))
		die("the records written back read back as another number of records");
	for (size_t i = 0; i < na; i++) {
		if (a[i].n != b[i].n)
			die("a record written back reads back with another number of fields");
		for (size_t j = 0; j < a[i].n; j++)
			if (strcmp(a[i].v[j], b[i].v[j]) != 0)
				die("a field written back reads back as another field");
	}
	free_records(a, na);
	free_records(b, nb);
	bench_buf_free(&out);
}

static void check_table(const uint8_t *data, size_t size)
{
	bench_csv t, again;
	bench_buf out = {0};
	char err[256];
	bench_strvec *recs = NULL;
	size_t nrec;
	int last = read_records(&recs, &nrec, (const char *)data, size);
	free_records(recs, nrec);
	err[0] = 0;
	int rc = bench_csv_parse(&t, (const char *)data, size, "fuzz", err, sizeof(err));
	if ((rc != 0) != (last == BENCH_CSV_BADQUOTE) || (rc != 0 && !err[0]))
		die("bench_csv_parse failed on a well-quoted text, or without a message");
	if (rc != 0)
		return;
	if ((t.ncols && !t.header) || (!t.ncols && t.nrows))
		die("rows without a header");
	for (size_t c = 0; c < t.ncols; c++) {
		int at = bench_csv_col(&t, t.header[c]);
		if (at < 0 || (size_t)at > c || strcmp(t.header[at], t.header[c]) != 0)
			die("bench_csv_col does not find a header name's first column");
	}
	for (size_t r = 0; r < t.nrows; r++)
		for (size_t c = 0; c < t.ncols; c++) {
			if (!t.rows[r] || !t.rows[r][c])
				die("a row with fewer fields than the header");
			(void)bench_csv_num(&t, r, t.header[c]);
		}
	if (t.ncols)
		put_record(&out, t.header, t.ncols);
	for (size_t r = 0; r < t.nrows; r++)
		put_record(&out, t.rows[r], t.ncols);
	if (out.oom)
		die("out of memory");
	if (bench_csv_parse(&again, out.p ? out.p : "", out.n, "again", err, sizeof(err)) != 0)
		die("the table written back does not read back");
	if (again.ncols != t.ncols || again.nrows != t.nrows)
		die("the table written back reads back with another shape");
	for (size_t c = 0; c < t.ncols; c++)
		if (strcmp(t.header[c], again.header[c]) != 0)
			die("a header written back reads back as another");
	for (size_t r = 0; r < t.nrows; r++)
		for (size_t c = 0; c < t.ncols; c++)
			if (strcmp(t.rows[r][c], again.rows[r][c]) != 0)
				die("a field of the table written back reads back as another");
	bench_csv_free(&again);
	bench_csv_free(&t);
	bench_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_records(data, size);
	check_table(data, size);
	return 0;
}
