/*
 * series.h - the per-second series of a measured window (bench_series): how many operations
 * finished in each second from a start time, and their latencies, shared by the threads that
 * run them; and the window's whole latency histogram beside it. The insert and service suites
 * report their per-second columns from it, so that stalls show.
 *
 * A second's latencies are an HDR histogram (hdr.h, 2 digits: 34 KB) while the second is among
 * the BENCH_SERIES_OPEN newest seen, then only its median, 99th percentile and maximum: one
 * histogram per second of a long window grew the measuring process by 120 MB an hour (and, in
 * the service suite, were all allocated before it began). A sample that ends in a second already
 * reduced (it waited that long for the lock) counts in its operations and maximum only.
 *
 * Thread safety: bench_series_add may be called by any number of threads at once (one mutex);
 * init, dispose and the readers must not run concurrently with it.
 */
#ifndef BENCH_SERIES_H
#define BENCH_SERIES_H

#include "hdr.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_SERIES_OPEN 3

typedef struct bench_second {
	uint64_t ops;
	hdr_hist *h;            /* created on first use, freed when the second is reduced */
	uint64_t p50, p99, max; /* ns, once reduced (max also of the samples that came after) */
} bench_second;

typedef struct bench_series {
	pthread_mutex_t mu;
	uint64_t start_ns; /* bench_now_ns() at init; the caller may set it before the first add */
	size_t max_sec;    /* > 0: the series' length; later ends count in its last second */
	bench_second *s;
	size_t n, cap;
	size_t reduced; /* seconds [0, reduced) hold no histogram */
	hdr_hist *all;  /* every latency (3 digits) */
	uint64_t ops;   /* every operation */
	int oom;        /* a second or its histogram could not be allocated: the series is unusable */
} bench_series;

/* Starts an empty series at bench_now_ns(). 0, or -1 when out of memory (nothing to dispose). */
int bench_series_init(bench_series *s);
/* Frees what s holds; s may be zeroed or NULL. */
void bench_series_dispose(bench_series *s);
/* Records one latency sample (ns) ending at end_ns (bench_now_ns() clock), counting ops
 * operations in its second (0: a failed one, whose latency still counts). Thread-safe. */
void bench_series_add(bench_series *s, uint64_t end_ns, uint64_t lat_ns, uint64_t ops);
/* Second i's operations and latency median, 99th percentile and maximum in ns (all 0 for a
 * second that saw nothing, i >= s->n among them). */
void bench_series_second(const bench_series *s, size_t i, uint64_t *ops, uint64_t *p50,
                         uint64_t *p99, uint64_t *max);

#endif
