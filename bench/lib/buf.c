/*
 * buf.c - the growable byte buffer of buf.h, and the one reader of a whole file into one.
 */
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bench_buf_reserve(bench_buf *b, size_t add)
{
	if (b->oom)
		return -1;
	if (b->n + add + 1 <= b->cap)
		return 0;
	if (add > SIZE_MAX / 2 - b->n - 1) {
		b->oom = 1;
		return -1;
	}
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->n + add + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int bench_buf_put(bench_buf *b, const void *d, size_t n)
{
	if (bench_buf_reserve(b, n) != 0)
		return -1;
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

int bench_buf_puts(bench_buf *b, const char *s)
{
	return bench_buf_put(b, s, strlen(s));
}

int bench_buf_putc(bench_buf *b, char c)
{
	return bench_buf_put(b, &c, 1);
}

int bench_buf_printf(bench_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (k < 0 || bench_buf_reserve(b, (size_t)k) != 0) {
		b->oom = 1;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
	return 0;
}

int bench_buf_put16be(bench_buf *b, uint16_t v)
{
	unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
	return bench_buf_put(b, x, 2);
}

int bench_buf_put32be(bench_buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 8), (unsigned char)v};
	return bench_buf_put(b, x, 4);
}

int bench_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	if (want <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 8;
	while (nc < want) {
		if (nc > SIZE_MAX / 2 / elem)
			return -1;
		nc *= 2;
	}
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

int bench_buf_read_file(bench_buf *b, const char *path, size_t max, uint64_t *size)
{
	struct stat st;
	int rc = 0, e = 0;
	bench_buf_clear(b);
	if (size)
		*size = 0;
	/* O_NONBLOCK: a FIFO without a writer would block open() for ever; it is refused below. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return BENCH_FILE_OPEN;
	if (fstat(fd, &st) != 0) {
		rc = BENCH_FILE_STAT;
		e = errno;
		goto cleanup;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	if (!S_ISREG(st.st_mode)) {
		rc = BENCH_FILE_NOTREG;
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > max) {
		rc = BENCH_FILE_BIG;
		e = EFBIG;
		goto cleanup;
	}
	for (;;) {
		/* At most one byte past max: a file that grew since fstat() is caught, not read on. */
		size_t want = max - b->n < 65536 ? max - b->n + 1 : 65536;
		if (bench_buf_reserve(b, want) != 0) {
			rc = BENCH_FILE_NOMEM;
			e = ENOMEM;
			goto cleanup;
		}
		ssize_t got = read(fd, b->p + b->n, want);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = BENCH_FILE_READ;
			e = errno;
			goto cleanup;
		}
		if (got == 0)
			break;
		b->n += (size_t)got;
		b->p[b->n] = '\0';
		if (b->n > max) {
			rc = BENCH_FILE_GREW;
			e = EFBIG;
			goto cleanup;
		}
	}
	if (bench_buf_put(b, "", 0) != 0) { /* an empty file: still a C string */
		rc = BENCH_FILE_NOMEM;
		e = ENOMEM;
	}
cleanup:
	close(fd);
	if (rc != 0) {
		bench_buf_clear(b);
		errno = e;
	}
	return rc;
}

char *bench_next_line(char **cursor)
{
	char *line = *cursor, *eol;
	if (!line || !*line)
		return NULL;
	if ((eol = strchr(line, '\n'))) {
		*eol = '\0';
		*cursor = eol + 1;
	} else {
		*cursor = line + strlen(line);
	}
	return line;
}

void bench_buf_clear(bench_buf *b)
{
	b->n = 0;
	if (b->p)
		b->p[0] = '\0';
}

void bench_buf_free(bench_buf *b)
{
	if (!b)
		return;
	free(b->p);
	memset(b, 0, sizeof(*b));
}
