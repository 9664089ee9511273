/*
 * series.c - per-second series of a measured window (series.h).
 */
#include "series.h"

#include "buf.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>

#define HIST_HIGHEST 600000000000ULL /* 10 minutes: longer latencies saturate */

int bench_series_init(bench_series *s)
{
	memset(s, 0, sizeof(*s));
	if (hdr_new(&s->all, HIST_HIGHEST, 3) != 0)
		return -1;
	pthread_mutex_init(&s->mu, NULL);
	s->start_ns = bench_now_ns();
	return 0;
}

void bench_series_dispose(bench_series *s)
{
	if (!s || !s->all)
		return;
	for (size_t i = 0; i < s->n; i++)
		hdr_free(s->s[i].h);
	free(s->s);
	hdr_free(s->all);
	pthread_mutex_destroy(&s->mu);
	memset(s, 0, sizeof(*s));
}

/* Reduces a second to its percentiles and maximum, freeing its histogram. */
static void reduce(bench_second *x)
{
	if (!x->h)
		return;
	x->p50 = hdr_percentile(x->h, 50);
	x->p99 = hdr_percentile(x->h, 99);
	x->max = hdr_max(x->h);
	hdr_free(x->h);
	x->h = NULL;
}

void bench_series_add(bench_series *s, uint64_t end_ns, uint64_t lat_ns, uint64_t ops)
{
	size_t sec = end_ns > s->start_ns ? (size_t)((end_ns - s->start_ns) / 1000000000u) : 0;
	if (s->max_sec && sec >= s->max_sec)
		sec = s->max_sec - 1; /* an operation begun in the window and ended just after it */
	pthread_mutex_lock(&s->mu);
	if (s->oom)
		goto out;
	if (sec >= s->n) {
		if (bench_grow((void **)&s->s, &s->cap, sec + 1, sizeof(*s->s)) != 0) {
			s->oom = 1;
			goto out;
		}
		memset(s->s + s->n, 0, (sec + 1 - s->n) * sizeof(*s->s));
		s->n = sec + 1;
	}
	bench_second *x = &s->s[sec];
	if (sec >= s->reduced && !x->h && hdr_new(&x->h, HIST_HIGHEST, 2) != 0) {
		s->oom = 1;
		goto out;
	}
	x->ops += ops;
	if (x->h)
		hdr_record(x->h, lat_ns);
	else if (lat_ns > x->max) /* reduced: a late sample */
		x->max = lat_ns;
	hdr_record(s->all, lat_ns);
	s->ops += ops;
	/* the seconds that fell BENCH_SERIES_OPEN behind the newest */
	for (; s->reduced + BENCH_SERIES_OPEN < s->n; s->reduced++)
		reduce(&s->s[s->reduced]);
out:
	pthread_mutex_unlock(&s->mu);
}

void bench_series_second(const bench_series *s, size_t i, uint64_t *ops, uint64_t *p50,
                         uint64_t *p99, uint64_t *max)
{
	const bench_second *x = i < s->n ? &s->s[i] : NULL;
	*ops = x ? x->ops : 0;
	*p50 = !x ? 0 : x->h ? hdr_percentile(x->h, 50) : x->p50;
	*p99 = !x ? 0 : x->h ? hdr_percentile(x->h, 99) : x->p99;
	*max = !x ? 0 : x->h ? hdr_max(x->h) : x->max;
}
