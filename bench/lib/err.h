/*
 * err.h - the benchmarks' one way of reporting an error to a caller-supplied buffer.
 *
 * Functions of bench/ that can fail take `char *err, size_t errn` and, on failure, leave a
 * one-line message there (never a password: URLs pass through prolly_redact_url first).
 */
#ifndef BENCH_ERR_H
#define BENCH_ERR_H

#include <stddef.h>

/* Formats the message into err (errn bytes, always terminated); does nothing when err is NULL
 * or errn is 0. */
void bench_seterr(char *err, size_t errn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* BENCH_ERR_H */
