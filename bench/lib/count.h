/*
 * count.h - the one count grammar of the benchmarks' command lines (bench_parse_count).
 *
 *   count  = digits [ "." digits ] [ suffix ]
 *   suffix = "k" | "K" (10^3) | "m" | "M" (10^6) | "g" | "G" (10^9)
 *
 * "1000", "100k", "1m", "1.5M", "2G". A fraction needs a suffix and must come out whole
 * ("1.5k" is 1500, "1.0001k" is refused), and digits on both sides of its point (".5k", "5.k"
 * are refused); more than 18 digits after the point are refused too. No sign, no spaces, no
 * exponent; the value fits a TOML integer (at most INT64_MAX). "m" is mega, never milli: these
 * are record counts.
 */
#ifndef BENCH_COUNT_H
#define BENCH_COUNT_H

#include <stddef.h>
#include <stdint.h>

/* Parses the len bytes at s. Returns 0 with *out set, or -1 (out untouched) on anything the
 * grammar above does not allow. */
int bench_parse_count(const char *s, size_t len, uint64_t *out);

#endif /* BENCH_COUNT_H */
