/*
 * hdr.h - an HDR-style latency histogram (values in nanoseconds).
 *
 * Values from 0 (1 ns is the smallest distinct non-zero value) up to a configurable highest value
 * (default HDR_DEFAULT_HIGHEST: one hour) are counted in buckets whose width grows with the
 * value, so every recorded value is known to within a relative error of at most
 * 10^-significant_digits (default 3 digits: 0.1%). Values below 2^(sub-bucket bits) (2048 for 3
 * digits) are counted exactly.
 *
 *   - record: O(1) (a leading-zero count, a shift, an add); never allocates;
 *   - percentiles: the reported value v for percentile p is the highest value equivalent to the
 *     bucket holding the ceil(p/100 * count)-th smallest sample s, capped at the exact max:
 *     s <= v <= s * (1 + hdr_relative_error(h)) (p = 0 gives the exact min, p = 100 the max);
 *   - count, min, max and mean are exact (the sum is kept in 128 bits);
 *   - a value above the highest trackable value is counted as the highest (and as saturated);
 *   - memory: 8 bytes per slot; one hour at 3 digits is 33,421 slots, 261 KiB.
 *
 * Thread safety: none inside. Give each thread its own histogram, and merge them (hdr_merge)
 * after the threads have finished (or under the caller's lock). Readers of a histogram must not
 * run concurrently with writers to it.
 *
 * Text form (hdr_to_text / hdr_from_text): one line of characters [0-9a-z:.-], no commas,
 * quotes or spaces, so it can be a CSV field as is:
 *   "hdr1:" digits ":" highest ":" count ":" min ":" max ":" sum_hi ":" sum_lo ":" saturated ":"
 *   then per non-empty slot, in increasing order, base-36 "gap" or "gap-count" joined by '.',
 *   where gap is the slot's index minus the previous non-empty slot's index (the first: its
 *   index) and a missing count means 1. Header numbers are decimal.
 */
#ifndef BENCH_HDR_H
#define BENCH_HDR_H

#include <stddef.h>
#include <stdint.h>

#define HDR_DEFAULT_HIGHEST 3600000000000ULL /* one hour in ns */
#define HDR_DEFAULT_DIGITS 3

typedef struct hdr_hist hdr_hist;

/* highest: largest value tracked (0: one hour; at least 2); digits: 1 to 5 (0: 3).
 * Returns 0, or -1 on bad arguments or no memory (*out NULL). */
int hdr_new(hdr_hist **out, uint64_t highest, int digits);
void hdr_free(hdr_hist *h);
/* Forgets every sample (keeps the configuration). */
void hdr_reset(hdr_hist *h);

void hdr_record(hdr_hist *h, uint64_t v);
void hdr_record_n(hdr_hist *h, uint64_t v, uint64_t n); /* n samples of v */

/* Adds src's samples to dst. Both must have the same digits (else -1, dst unchanged). If src
 * tracks higher values than dst, its slots above dst's highest saturate there (counted in
 * hdr_saturated; the mean keeps their true values). */
int hdr_merge(hdr_hist *dst, const hdr_hist *src);

uint64_t hdr_count(const hdr_hist *h);
uint64_t hdr_min(const hdr_hist *h); /* 0 when empty */
uint64_t hdr_max(const hdr_hist *h); /* 0 when empty */
double hdr_mean(const hdr_hist *h);  /* 0 when empty */
uint64_t hdr_saturated(const hdr_hist *h);
/* p in [0, 100]: hdr_percentile(h, 99.9). 0 when empty. */
uint64_t hdr_percentile(const hdr_hist *h, double p);
/* The bound on (reported - true) / true for percentiles: 1 / 2^(sub-bucket bits - 1). */
double hdr_relative_error(const hdr_hist *h);
int hdr_digits(const hdr_hist *h);
uint64_t hdr_highest(const hdr_hist *h);
size_t hdr_memory(const hdr_hist *h); /* bytes held */

/* Both histograms hold the same samples (configuration, counts, min, max, sum). */
int hdr_equal(const hdr_hist *a, const hdr_hist *b);

/* The text form; malloc'd, NULL on no memory. */
char *hdr_to_text(const hdr_hist *h);
/* Rebuilds a histogram; on malformed text returns -1 with a message in err (if errsize). */
int hdr_from_text(hdr_hist **out, const char *text, char *err, size_t errsize);

#endif
