/*
 * buf.h - the benchmarks' one growable byte buffer (bench_buf_*): CSV lines, TOML and SVG text,
 * PostgreSQL binary parameters; and the one reader of a whole file into one (bench_buf_read_file).
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

/* Why bench_buf_read_file failed (errno says more: the system call's, EISDIR or EINVAL for
 * BENCH_FILE_NOTREG, EFBIG for BENCH_FILE_BIG and BENCH_FILE_GREW, ENOMEM). */
enum {
	BENCH_FILE_OPEN = -1,   /* open() failed */
	BENCH_FILE_STAT = -2,   /* fstat() failed */
	BENCH_FILE_NOTREG = -3, /* a directory (EISDIR), a FIFO, a device, a socket (EINVAL) */
	BENCH_FILE_BIG = -4,    /* larger than max before a byte was read (*size says how large) */
	BENCH_FILE_GREW = -5,   /* grew past max while being read */
	BENCH_FILE_READ = -6,   /* read() failed */
	BENCH_FILE_NOMEM = -7
};
/* Reads the whole regular file at path, at most max bytes (SIZE_MAX: no limit), into b, emptied
 * first. 0, or a BENCH_FILE_* code with errno set and b empty. Never blocks on what is not a
 * regular file: the file is opened non-blocking (a FIFO without a writer would block open() for
 * ever) and refused unless fstat() says it is regular; a file larger than max is refused before
 * it is read, and one that grows past max while being read is given up one byte past max, so at
 * most max + 1 bytes are ever held. Files of /proc and /sys (regular, of size 0) are read whole.
 * size (NULL ok) receives the file's size as fstat() gives it (for BENCH_FILE_BIG's message). */
int bench_buf_read_file(bench_buf *b, const char *path, size_t max, uint64_t *size);

/* The line at *cursor of a NUL-terminated text, its '\n' replaced by a NUL (a '\r' before it
 * stays); *cursor moves to the next line. NULL once the text is used up. For the texts
 * bench_buf_read_file reads, line by line. */
char *bench_next_line(char **cursor);

/* Empties b (keeps the allocation and the oom flag). */
void bench_buf_clear(bench_buf *b);
/* Frees the bytes; b is empty again (NULL ok). */
void bench_buf_free(bench_buf *b);

#endif /* BENCH_BUF_H */
