/*
 * hdr.c - the HDR-style histogram described in hdr.h.
 *
 * Layout: with B sub-bucket bits (2^(B-1) >= 10^digits), a value v falls in bucket
 *   b = max(0, msb(v) - (B - 1))          (msb: index of the highest set bit)
 * and slot
 *   index = b * 2^(B-1) + (v >> b).
 * Bucket 0 holds 0 .. 2^B - 1 exactly (one value per slot); bucket b >= 1 holds 2^(B-1) slots of
 * width 2^b covering 2^(B-1+b) .. 2^(B+b) - 1. A slot's lowest value is (v >> b) << b >= 2^(B-1)
 * * 2^b, so a slot's width over its lowest value is at most 2^-(B-1): the relative error.
 */
#include "hdr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hdr_hist {
	int digits;
	int bits;         /* B: sub-bucket bits */
	uint64_t highest; /* largest value tracked */
	size_t nslots;
	uint64_t *counts;
	uint64_t count, min, max, saturated;
	uint64_t sum_hi, sum_lo;
};

static int msb(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

static size_t slot_of(const hdr_hist *h, uint64_t v)
{
	int b = v ? msb(v) - (h->bits - 1) : 0;
	if (b < 0)
		b = 0;
	return ((size_t)b << (h->bits - 1)) + (size_t)(v >> b);
}

/* Lowest value and width of a slot. */
static void slot_range(const hdr_hist *h, size_t i, uint64_t *lo, uint64_t *width)
{
	size_t half = (size_t)1 << (h->bits - 1);
	size_t b = i < 2 * half ? 0 : (i >> (h->bits - 1)) - 1;
	uint64_t sub = (uint64_t)(i - b * half);
	*lo = sub << b;
	*width = (uint64_t)1 << b;
}

int hdr_new(hdr_hist **out, uint64_t highest, int digits)
{
	hdr_hist *h = NULL;
	uint64_t need = 1;
	int rc = -1;
	*out = NULL;
	if (!highest)
		highest = HDR_DEFAULT_HIGHEST;
	if (!digits)
		digits = HDR_DEFAULT_DIGITS;
	if (digits < 1 || digits > 5 || highest < 2 || highest > (UINT64_MAX >> 1))
		goto cleanup;
	if (!(h = calloc(1, sizeof(*h))))
		goto cleanup;
	h->digits = digits;
	for (int i = 0; i < digits; i++)
		need *= 10;
	h->bits = 1;
	while (((uint64_t)1 << (h->bits - 1)) < need)
		h->bits++;
	h->highest = highest;
	h->nslots = slot_of(h, highest) + 1;
	if (!(h->counts = calloc(h->nslots, sizeof(*h->counts))))
		goto cleanup;
	*out = h;
	h = NULL;
	rc = 0;
cleanup:
	hdr_free(h);
	return rc;
}

void hdr_free(hdr_hist *h)
{
	if (!h)
		return;
	free(h->counts);
	free(h);
}

void hdr_reset(hdr_hist *h)
{
	memset(h->counts, 0, h->nslots * sizeof(*h->counts));
	h->count = h->min = h->max = h->saturated = 0;
	h->sum_hi = h->sum_lo = 0;
}

static void add_sum(hdr_hist *h, uint64_t v, uint64_t n)
{
	/* sum += v * n in 128 bits, from 32-bit halves. */
	uint64_t a = v & 0xffffffffu, b = v >> 32, c = n & 0xffffffffu, d = n >> 32;
	uint64_t ac = a * c, ad = a * d, bc = b * c, bd = b * d;
	uint64_t mid = (ac >> 32) + (ad & 0xffffffffu) + (bc & 0xffffffffu);
	uint64_t lo = (ac & 0xffffffffu) | (mid << 32);
	uint64_t hi = bd + (ad >> 32) + (bc >> 32) + (mid >> 32);
	h->sum_lo += lo;
	h->sum_hi += hi + (h->sum_lo < lo);
}

void hdr_record_n(hdr_hist *h, uint64_t v, uint64_t n)
{
	if (!n)
		return;
	if (v > h->highest) {
		v = h->highest;
		h->saturated += n;
	}
	h->counts[slot_of(h, v)] += n;
	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count += n;
	add_sum(h, v, n);
}

void hdr_record(hdr_hist *h, uint64_t v)
{
	hdr_record_n(h, v, 1);
}

int hdr_merge(hdr_hist *dst, const hdr_hist *src)
{
	if (dst->bits != src->bits)
		return -1;
	if (!src->count)
		return 0;
	if (src->max > dst->highest) {
		/* Rare: src tracks higher values than dst; re-record those slots one by one. */
		for (size_t i = 0; i < src->nslots; i++) {
			uint64_t lo, w;
			if (!src->counts[i])
				continue;
			slot_range(src, i, &lo, &w);
			if (lo > dst->highest) {
				dst->saturated += src->counts[i];
				dst->counts[dst->nslots - 1] += src->counts[i];
			} else {
				dst->counts[i] += src->counts[i];
			}
		}
	} else {
		/* Every non-empty slot of src is below dst->nslots here. */
		size_t n = src->nslots < dst->nslots ? src->nslots : dst->nslots;
		for (size_t i = 0; i < n; i++)
			dst->counts[i] += src->counts[i];
	}
	uint64_t smax = src->max > dst->highest ? dst->highest : src->max;
	uint64_t smin = src->min > dst->highest ? dst->highest : src->min;
	if (!dst->count || smin < dst->min)
		dst->min = smin;
	if (!dst->count || smax > dst->max)
		dst->max = smax;
	dst->count += src->count;
	dst->saturated += src->saturated;
	dst->sum_lo += src->sum_lo;
	dst->sum_hi += src->sum_hi + (dst->sum_lo < src->sum_lo);
	return 0;
}

uint64_t hdr_count(const hdr_hist *h)
{
	return h->count;
}

uint64_t hdr_min(const hdr_hist *h)
{
	return h->min;
}

uint64_t hdr_max(const hdr_hist *h)
{
	return h->max;
}

uint64_t hdr_saturated(const hdr_hist *h)
{
	return h->saturated;
}

double hdr_mean(const hdr_hist *h)
{
	if (!h->count)
		return 0;
	return ((double)h->sum_hi * 18446744073709551616.0 + (double)h->sum_lo) / (double)h->count;
}

uint64_t hdr_percentile(const hdr_hist *h, double p)
{
	uint64_t rank, seen = 0;
	if (!h->count)
		return 0;
	if (!(p > 0))
		return h->min;
	if (p >= 100)
		return h->max;
	/* rank = ceil(p / 100 * count), at least 1; computed so that exact products stay exact. */
	double r = p / 100.0 * (double)h->count;
	rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (size_t i = 0; i < h->nslots; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t lo, w, v;
			slot_range(h, i, &lo, &w);
			v = lo + w - 1;
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double hdr_relative_error(const hdr_hist *h)
{
	return 1.0 / (double)((uint64_t)1 << (h->bits - 1));
}

int hdr_digits(const hdr_hist *h)
{
	return h->digits;
}

uint64_t hdr_highest(const hdr_hist *h)
{
	return h->highest;
}

size_t hdr_memory(const hdr_hist *h)
{
	return sizeof(*h) + h->nslots * sizeof(*h->counts);
}

int hdr_equal(const hdr_hist *a, const hdr_hist *b)
{
	return a->digits == b->digits && a->highest == b->highest && a->count == b->count &&
	       a->min == b->min && a->max == b->max && a->saturated == b->saturated &&
	       a->sum_hi == b->sum_hi && a->sum_lo == b->sum_lo &&
	       memcmp(a->counts, b->counts, a->nslots * sizeof(*a->counts)) == 0;
}

/* ---- text form ------------------------------------------------------------------------------ */

static int put_b36(char **p, char *end, uint64_t v)
{
	char tmp[16];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v);
	if (end - *p < n + 2)
		return -1;
	while (n)
		*(*p)++ = tmp[--n];
	return 0;
}

char *hdr_to_text(const hdr_hist *h)
{
	size_t nonempty = 0, cap;
	char *out, *p, *end;
	size_t prev = 0;
	int first = 1;
	for (size_t i = 0; i < h->nslots; i++)
		nonempty += h->counts[i] != 0;
	cap = 8 * 21 + 16 + nonempty * 28 + 1;
	if (!(out = malloc(cap)))
		return NULL;
	p = out;
	end = out + cap;
	p += snprintf(p, (size_t)(end - p),
	              "hdr1:%d:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64
	              ":%" PRIu64 ":",
	              h->digits, h->highest, h->count, h->min, h->max, h->sum_hi, h->sum_lo,
	              h->saturated);
	for (size_t i = 0; i < h->nslots; i++) {
		if (!h->counts[i])
			continue;
		if (!first)
			*p++ = '.';
		put_b36(&p, end, i - prev);
		if (h->counts[i] != 1) {
			*p++ = '-';
			put_b36(&p, end, h->counts[i]);
		}
		prev = i;
		first = 0;
	}
	*p = 0;
	return out;
}

static int fail(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;
	if (err && errsize) {
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A decimal (base 10) or base-36 number at *s; advances *s. */
static int get_num(const char **s, int base, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	for (;; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (base == 36 && *p >= 'a' && *p <= 'z')
			d = *p - 'a' + 10;
		else
			break;
		if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		x = x * (uint64_t)base + (uint64_t)d;
	}
	if (p == *s)
		return -1;
	*s = p;
	*v = x;
	return 0;
}

int hdr_from_text(hdr_hist **out, const char *text, char *err, size_t errsize)
{
	hdr_hist *h = NULL;
	uint64_t f[8], total = 0, smin = 0, smax = 0;
	const char *s = text;
	size_t idx = 0;
	int rc = -1, first = 1;
	*out = NULL;
	if (strncmp(s, "hdr1:", 5) != 0) {
		fail(err, errsize, "not an HDR histogram (expected 'hdr1:' at the start)");
		goto cleanup;
	}
	s += 5;
	for (int i = 0; i < 8; i++) {
		if (get_num(&s, 10, &f[i]) || *s++ != ':') {
			fail(err, errsize, "bad header field %d at offset %zu", i + 1, (size_t)(s - text));
			goto cleanup;
		}
	}
	if (f[0] < 1 || f[0] > 5 || hdr_new(&h, f[1], (int)f[0])) {
		fail(err, errsize, "bad configuration (digits %" PRIu64 ", highest %" PRIu64 ")", f[0],
		     f[1]);
		goto cleanup;
	}
	while (*s) {
		uint64_t gap, n = 1;
		if (!first && *s++ != '.') {
			fail(err, errsize, "expected '.' at offset %zu", (size_t)(s - 1 - text));
			goto cleanup;
		}
		if (get_num(&s, 36, &gap) || (*s == '-' && (s++, get_num(&s, 36, &n)))) {
			fail(err, errsize, "bad slot at offset %zu", (size_t)(s - text));
			goto cleanup;
		}
		if ((!first && gap == 0) || gap >= h->nslots - idx || n == 0) {
			fail(err, errsize, "slot out of order or out of range at offset %zu",
			     (size_t)(s - text));
			goto cleanup;
		}
		idx += (size_t)gap;
		if (total + n < total) {
			fail(err, errsize, "counts overflow");
			goto cleanup;
		}
		uint64_t lo, w;
		slot_range(h, idx, &lo, &w);
		if (first)
			smin = lo;
		smax = lo + w - 1;
		h->counts[idx] = n;
		total += n;
		first = 0;
	}
	if (total != f[2]) {
		fail(err, errsize, "slot counts total %" PRIu64 ", header says %" PRIu64, total, f[2]);
		goto cleanup;
	}
	if (total && (f[3] > f[4] || f[4] > f[1] || f[3] < smin || f[4] > smax ||
	              slot_of(h, f[3]) != slot_of(h, smin) || slot_of(h, f[4]) != slot_of(h, smax))) {
		fail(err, errsize, "min %" PRIu64 " / max %" PRIu64 " do not match the slots", f[3], f[4]);
		goto cleanup;
	}
	if (!total && (f[3] || f[4] || f[5] || f[6] || f[7])) {
		fail(err, errsize, "an empty histogram with non-zero fields");
		goto cleanup;
	}
	if (f[7] > total) {
		fail(err, errsize, "more saturated samples than samples");
		goto cleanup;
	}
	h->count = f[2];
	h->min = f[3];
	h->max = f[4];
	h->sum_hi = f[5];
	h->sum_lo = f[6];
	h->saturated = f[7];
	*out = h;
	h = NULL;
	rc = 0;
cleanup:
	hdr_free(h);
	return rc;
}
