/*
 * fuzz_count.c - libFuzzer target for the benchmarks' count grammar (bench/lib/count.c,
 * bench_parse_count), which reads every count of a workload file and of the harness's flags.
 * The oracle is the grammar of count.h, checked here on its own: digits, then optionally a
 * point and digits, then optionally one of k K m M g G; a fraction only with a suffix. For any
 * input (all of its bytes, no NUL needed):
 *   - a text outside the grammar is refused, and the output is left untouched;
 *   - a text in it is accepted exactly when it has at most 18 digits after the point (count.h's
 *     limit) and its value is whole and at most INT64_MAX, and the value is the exact one,
 *     computed here digit by digit in 128 bits.
 * Never a crash or a sanitizer report; bytes past the input are never read.
 */
#include "count.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t digits(const uint8_t *s, size_t len, size_t at)
{
	size_t n = 0;
	while (at + n < len && s[at + n] >= '0' && s[at + n] <= '9')
		n++;
	return n;
}

/* The value of the text (-1: outside the grammar, -2: not whole or too large, -3: past the
 * parser's limit of fraction digits). */
static int64_t expected(const uint8_t *s, size_t len, uint64_t *value)
{
	size_t ni = digits(s, len, 0), at = ni, nf = 0;
	int point = 0;
	if (!ni)
		return -1;
	if (at < len && s[at] == '.') {
		point = 1;
		nf = digits(s, len, at + 1);
		if (!nf)
			return -1;
		at += 1 + nf;
	}
	unsigned zeros = 0; /* the suffix's power of ten */
	if (at < len) {
		const char *suffix = strchr("kKmMgG", s[at]);
		if (!s[at] || !suffix)
			return -1;
		zeros = 3 * (unsigned)(1 + (suffix - "kKmMgG") / 2);
		at++;
	}
	if (at != len || (point && !zeros))
		return -1;
	if (nf > 18)
		return -3;
	/* The fraction's digits past the suffix's zeros must all be 0. */
	for (size_t k = zeros; k < nf; k++)
		if (s[ni + 1 + k] != '0')
			return -2;
	unsigned __int128 v = 0;
	for (size_t k = 0; k < ni; k++) {
		v = v * 10 + (unsigned)(s[k] - '0');
		if (v > INT64_MAX)
			return -2;
	}
	for (size_t k = 0; k < zeros; k++) {
		v = v * 10 + (k < nf ? (unsigned)(s[ni + 1 + k] - '0') : 0);
		if (v > INT64_MAX)
			return -2;
	}
	*value = (uint64_t)v;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: AddressSanitizer catches a read past them. */
	char *s = malloc(size ? size : 1);
	uint64_t want = 0, got = 0x5eed;
	if (!s)
		return 0;
	memcpy(s, data, size);
	int64_t e = expected(data, size, &want);
	int rc = bench_parse_count(s, size, &got);
	if (rc != 0 && rc != -1) {
		fprintf(stderr, "bench_parse_count returned %d\n", rc);
		abort();
	}
	if (rc != 0 && got != 0x5eed) {
		fprintf(stderr, "a refused count changed the output\n");
		abort();
	}
	if (e == 0 ? rc != 0 || got != want : rc == 0) {
		fprintf(stderr, "'%.*s': bench_parse_count %d (%llu), the grammar says %lld (%llu)\n",
		        (int)size, s, rc, (unsigned long long)got, (long long)e, (unsigned long long)want);
		abort();
	}
	free(s);
	return 0;
}
