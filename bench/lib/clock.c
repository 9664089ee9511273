/*
 * clock.c - the benchmarks' clocks (clock.h).
 */
#include "clock.h"

#include <time.h>

static uint64_t ns_of(clockid_t which)
{
	struct timespec ts;
	clock_gettime(which, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

uint64_t bench_cpu_ns(void)
{
	return ns_of(CLOCK_PROCESS_CPUTIME_ID);
}

int64_t bench_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void bench_utc_now(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	if (strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0 && n)
		out[0] = '\0';
}

void bench_sw_start(bench_stopwatch *w)
{
	w->total_ns = 0;
	w->started = bench_now_ns();
	w->running = 1;
}

void bench_sw_pause(bench_stopwatch *w)
{
	if (w->running) {
		w->total_ns += bench_now_ns() - w->started;
		w->running = 0;
	}
}

void bench_sw_resume(bench_stopwatch *w)
{
	if (!w->running) {
		w->started = bench_now_ns();
		w->running = 1;
	}
}

double bench_sw_ms(bench_stopwatch *w)
{
	bench_sw_pause(w);
	return (double)w->total_ns / 1e6;
}
