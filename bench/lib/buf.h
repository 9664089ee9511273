/*
 * buf.h - the benchmarks' one growable byte buffer (bench_buf_*): CSV lines, TOML and SVG text,
 * PostgreSQL binary parameters.
 *
 * The bytes are always followed by a NUL (p is a C string when only text was put). A failed
 * allocation sets oom; from then on every put returns -1 and changes nothing, so a writer may
 * check once at the end. Zero-initialise (bench_buf b = {0}); free with bench_buf_free.
 */
#ifndef BENCH_BUF_H
#define BENCH_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_buf {
	char *p;
	size_t n, cap; /* bytes in use (without the NUL), bytes allocated */
	int oom;
} bench_buf;

/* Room for add more bytes (and the NUL). 0, or -1 with oom set. */
int bench_buf_reserve(bench_buf *b, size_t add);
/* Each returns 0, or -1 with oom set (now or earlier). */
int bench_buf_put(bench_buf *b, const void *d, size_t n);
int bench_buf_puts(bench_buf *b, const char *s);
int bench_buf_putc(bench_buf *b, char c);
int bench_buf_printf(bench_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bench_buf_put16be(bench_buf *b, uint16_t v); /* big-endian: PostgreSQL's binary formats */
int bench_buf_put32be(bench_buf *b, uint32_t v);
/* Grows the array *arr of elements of elem bytes, holding *cap of them, to hold at least want
 * (doubling). 0, or -1 when out of memory (*arr and *cap unchanged). The one growth loop of the
 * benchmarks' arrays. */
int bench_grow(void **arr, size_t *cap, size_t want, size_t elem);

/* Empties b (keeps the allocation and the oom flag). */
void bench_buf_clear(bench_buf *b);
/* Frees the bytes; b is empty again (NULL ok). */
void bench_buf_free(bench_buf *b);

#endif /* BENCH_BUF_H */
