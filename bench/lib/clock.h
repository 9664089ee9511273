/*
 * clock.h - the benchmarks' clocks (bench_*): a monotonic clock, process CPU time, a stopwatch
 * that pauses (untimed setup inside a timed cell) and the UTC timestamps written into rows and
 * manifests. Thread-safe: no state but the caller's stopwatch.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC (only differences mean anything). */
uint64_t bench_now_ns(void);
/* CPU time of the whole process (every thread, user + system), in nanoseconds. */
uint64_t bench_cpu_ns(void);
/* Microseconds since the Unix epoch (CLOCK_REALTIME): commit timestamps. */
int64_t bench_wall_us(void);
/* The current time, UTC, ISO 8601 to the second ("2026-12-03T15:04:05Z"); n >= 21. */
void bench_utc_now(char *out, size_t n);

/* Elapsed time over the running segments only. */
typedef struct bench_stopwatch {
	uint64_t total_ns;
	uint64_t started;
	int running;
} bench_stopwatch;

void bench_sw_start(bench_stopwatch *w);  /* zero, then running */
void bench_sw_pause(bench_stopwatch *w);  /* no-op when paused */
void bench_sw_resume(bench_stopwatch *w); /* no-op when running */
double bench_sw_ms(bench_stopwatch *w);   /* pauses, returns the total in milliseconds */

#endif /* BENCH_CLOCK_H */
