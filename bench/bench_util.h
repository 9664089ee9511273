/*
 * bench_util.h - pieces shared by the benchmark programs under bench/.
 *
 * Everything here is static inline: a program or library file that does not use a helper pays
 * nothing for it. Nothing here knows about a particular workload; the workload lives in the scale
 * engine (bench/scale/) and in the harness's TOML workload file.
 *
 *   clocks        now_ns(), a stopwatch that can pause (untimed setup inside a timed cell)
 *   randomness    splitmix64 (deterministic from --seed), mix64() for derived values
 *   lists         "100k,1M" size lists, "a,b,c" name lists against a table of names
 *   store wrapper a pass-through prolly_store that times get_nodes/write and can turn durable
 *                 writes into non-durable ones (to measure a commit "before the disk sync")
 *   results       one row per cell, written as CSV (appended, flushed per row) and Markdown
 *   process       peak RSS, recursive removal of a scratch directory, mkdir -p
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include "prolly.h"
#include "prolly/store.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Clocks                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process (every thread), in nanoseconds. */
static inline uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Minor page faults of the process so far (first touches of fresh memory, among others). */
static inline uint64_t minor_faults(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_minflt;
}

/* CPU time (user + system, ms) of a PostgreSQL server: the postmaster, its live children and
 * the children it has reaped (a closed backend's time moves into the postmaster's cutime).
 * postmaster_pid 0 or an unreadable /proc: -1. */
static inline double server_cpu_ms(long postmaster_pid)
{
	if (postmaster_pid <= 0)
		return -1;
	long tck = sysconf(_SC_CLK_TCK);
	double total = 0;
	int found = 0;
	char path[300];
	FILE *f;
	DIR *d = opendir("/proc");
	if (!d || tck <= 0) {
		if (d)
			closedir(d);
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		char buf[1024];
		size_t k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = '\0';
		char *rp = strrchr(buf, ')'); /* the command may hold spaces */
		if (!rp)
			continue;
		long pid = strtol(buf, NULL, 10), ppid;
		unsigned long long ut, st, cut, cst;
		/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
		 * utime stime cutime cstime */
		if (sscanf(rp + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ppid,
		           &ut, &st, &cut, &cst) != 5)
			continue;
		if (pid == postmaster_pid) {
			total += (double)(ut + st + cut + cst);
			found = 1;
		} else if (ppid == postmaster_pid) {
			total += (double)(ut + st);
		}
	}
	closedir(d);
	return found ? total * 1000.0 / (double)tck : -1;
}

/* The one-minute load average, or -1. */
static inline double load1(void)
{
	double l[1];
	return getloadavg(l, 1) == 1 ? l[0] : -1;
}

/* A stopwatch: elapsed time over the running segments only. */
typedef struct stopwatch {
	uint64_t total_ns;
	uint64_t started;
	int running;
} stopwatch;

static inline void sw_start(stopwatch *w)
{
	w->total_ns = 0;
	w->started = now_ns();
	w->running = 1;
}

static inline void sw_pause(stopwatch *w)
{
	if (w->running) {
		w->total_ns += now_ns() - w->started;
		w->running = 0;
	}
}

static inline void sw_resume(stopwatch *w)
{
	if (!w->running) {
		w->started = now_ns();
		w->running = 1;
	}
}

static inline double sw_ms(stopwatch *w)
{
	sw_pause(w);
	return (double)w->total_ns / 1e6;
}

/* ------------------------------------------------------------------------------------------ */
/* Deterministic randomness                                                                   */
/* ------------------------------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

typedef struct rng {
	uint64_t s;
} rng;

static inline void rng_seed(rng *r, uint64_t seed)
{
	r->s = mix64(seed);
}

static inline uint64_t rng_next(rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	uint64_t x = r->s;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Uniform in [0, n), n > 0 (rejection sampling: no modulo bias). */
static inline uint64_t rng_below(rng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	for (;;) {
		uint64_t x = rng_next(r);
		if (x < limit)
			return x % n;
	}
}

/* Fills out[0..k) with k distinct values from [0, n) in random order (k <= n). Returns 0, or -1
 * when out of memory. */
static inline int rng_sample_distinct(rng *r, uint64_t n, uint64_t *out, size_t k)
{
	if (k == 0)
		return 0;
	if ((uint64_t)k * 2 <= n) {
		/* Sparse: rejection against a bitmap. */
		size_t words = (size_t)(n / 64 + 1);
		uint64_t *seen = calloc(words, sizeof(*seen));
		if (!seen)
			return -1;
		for (size_t i = 0; i < k;) {
			uint64_t v = rng_below(r, n);
			uint64_t bit = 1ull << (v % 64);
			if (seen[v / 64] & bit)
				continue;
			seen[v / 64] |= bit;
			out[i++] = v;
		}
		free(seen);
		return 0;
	}
	/* Dense: partial Fisher-Yates over all n values. */
	uint64_t *all = malloc((size_t)n * sizeof(*all));
	if (!all)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		all[i] = i;
	for (size_t i = 0; i < k; i++) {
		uint64_t j = i + rng_below(r, n - i);
		uint64_t t = all[i];
		all[i] = all[j];
		all[j] = t;
		out[i] = all[i];
	}
	free(all);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Option lists                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Parses a count with an optional k/K (1e3) or m/M (1e6) suffix. Returns 0 or -1. */
static inline int parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	uint64_t mul = 1;
	if (*end == 'k' || *end == 'K') {
		mul = 1000;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		mul = 1000000;
		end++;
	}
	if (*end != '\0' || (v && (uint64_t)v > UINT64_MAX / mul))
		return -1;
	*out = (uint64_t)v * mul;
	return 0;
}

/* Parses "a,b,c" counts into out (at most max). Returns how many, or -1 on a bad item. */
static inline int parse_count_list(const char *s, uint64_t *out, int max)
{
	char buf[512];
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	int n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max || parse_count(tok, &out[n]) != 0 || out[n] == 0)
			return -1;
		n++;
	}
	return n ? n : -1;
}

/* Parses "a,b" against names[0..count) ("all" selects every name) into a bit mask. Returns 0, or
 * -1 with the unknown name copied into bad (size badsize). */
static inline int parse_name_list(const char *s, const char *const *names, int count,
                                  unsigned *mask, char *bad, size_t badsize)
{
	char buf[512];
	if (strlen(s) >= sizeof(buf)) {
		snprintf(bad, badsize, "(list too long)");
		return -1;
	}
	strcpy(buf, s);
	unsigned m = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "all") == 0) {
			m |= (count >= 32) ? ~0u : ((1u << count) - 1);
			continue;
		}
		int i;
		for (i = 0; i < count; i++)
			if (strcmp(tok, names[i]) == 0)
				break;
		if (i == count) {
			snprintf(bad, badsize, "%s", tok);
			return -1;
		}
		m |= 1u << i;
	}
	if (!m) {
		snprintf(bad, badsize, "(empty list)");
		return -1;
	}
	*mask = m;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* A timing pass-through store                                                                */
/* ------------------------------------------------------------------------------------------ */

/*
 * Wraps any prolly_store. Forwards every call; adds the time spent inside get_nodes and write to
 * its counters; with nosync set, hands writes to the inner store with durable = 0 (the caller's
 * request is restored afterwards). The counters are atomics so that a multi-threaded harness
 * can share one wrapper.
 */
typedef struct timed_store {
	prolly_store base; /* first member: the engine sees a prolly_store */
	prolly_store *inner;
	_Atomic uint64_t read_ns;
	_Atomic uint64_t write_ns;
	_Atomic uint64_t durable_writes; /* writes passed on with durable = 1 */
	atomic_int nosync;
} timed_store;

static inline int ts_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                               prolly_store_found_fn found, void *payload)
{
	timed_store *t = (timed_store *)st;
	uint64_t t0 = now_ns();
	int rc = t->inner->get_nodes(t->inner, ids, n, found, payload);
	atomic_fetch_add(&t->read_ns, now_ns() - t0);
	return rc;
}

static inline int ts_write(prolly_store *st, prolly_store_write *w)
{
	timed_store *t = (timed_store *)st;
	int durable = w->durable;
	if (atomic_load(&t->nosync))
		w->durable = 0;
	if (w->durable)
		atomic_fetch_add(&t->durable_writes, 1);
	uint64_t t0 = now_ns();
	int rc = t->inner->write(t->inner, w);
	atomic_fetch_add(&t->write_ns, now_ns() - t0);
	w->durable = durable;
	return rc;
}

static inline int ts_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	timed_store *t = (timed_store *)st;
	return t->inner->get_ref(t->inner, name, out, epoch);
}

static inline int ts_get_ref_objects(prolly_store *st, const char *name, size_t follow,
                                     prolly_id *out, uint64_t *epoch, prolly_store_found_fn found,
                                     void *payload)
{
	timed_store *t = (timed_store *)st;
	uint64_t t0 = now_ns();
	int rc = t->inner->get_ref_objects(t->inner, name, follow, out, epoch, found, payload);
	atomic_fetch_add(&t->read_ns, now_ns() - t0);
	return rc;
}

static inline int ts_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                                   const prolly_store_commit_layout *commit,
                                   prolly_store_obj_fn found, void *payload)
{
	timed_store *t = (timed_store *)st;
	uint64_t t0 = now_ns();
	int rc = t->inner->get_ancestors(t->inner, ids, n, limit, commit, found, payload);
	atomic_fetch_add(&t->read_ns, now_ns() - t0);
	return rc;
}

static inline int ts_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn,
                               void *payload)
{
	timed_store *t = (timed_store *)st;
	return t->inner->list_refs(t->inner, prefix, fn, payload);
}

static inline int ts_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep,
                        void *payload, prolly_gc_result *out)
{
	timed_store *t = (timed_store *)st;
	return t->inner->gc(t->inner, mark, keep, payload, out);
}

static inline int ts_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	timed_store *t = (timed_store *)st;
	return t->inner->stat(t->inner, nodes, bytes);
}

static inline void ts_close(prolly_store *st)
{
	timed_store *t = (timed_store *)st;
	t->inner->close(t->inner);
	free(t);
}

/* Wraps inner (which the wrapper owns from now on, also on failure). */
static inline int timed_store_wrap(timed_store **out, prolly_store *inner)
{
	timed_store *t = calloc(1, sizeof(*t));
	if (!t) {
		inner->close(inner);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory wrapping the store");
	}
	t->base.version = PROLLY_STORE_VERSION;
	t->base.flags = inner->version >= 3 ? inner->flags : 0;
	t->base.get_ancestors = inner->version >= 4 && inner->get_ancestors ? ts_get_ancestors : NULL;
	t->base.kind = inner->kind;
	t->base.get_nodes = ts_get_nodes;
	t->base.write = ts_write;
	t->base.get_ref = ts_get_ref;
	t->base.list_refs = ts_list_refs;
	t->base.gc = inner->gc ? ts_gc : NULL;
	t->base.stat = inner->stat ? ts_stat : NULL;
	t->base.close = ts_close;
	t->base.get_ref_objects = inner->version >= 2 && inner->get_ref_objects ? ts_get_ref_objects
	                                                                        : NULL;
	t->inner = inner;
	atomic_init(&t->read_ns, 0);
	atomic_init(&t->write_ns, 0);
	atomic_init(&t->durable_writes, 0);
	atomic_init(&t->nosync, 0);
	*out = t;
	return 0;
}

static inline void timed_store_reset(timed_store *t)
{
	if (!t)
		return;
	atomic_store(&t->read_ns, 0);
	atomic_store(&t->write_ns, 0);
	atomic_store(&t->durable_writes, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Process                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Peak resident set size of this process so far, in MiB. */
static inline double peak_rss_mib(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* Current anonymous and file-backed resident memory (MiB) from /proc/self/status; -1 if unknown.
 * File-backed memory includes the pages of memory-mapped stores (LMDB) that were touched. */
static inline void current_rss_mib(double *anon, double *file)
{
	*anon = *file = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	char line[256];
	unsigned long kb;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "RssAnon: %lu kB", &kb) == 1)
			*anon = (double)kb / 1024.0;
		else if (sscanf(line, "RssFile: %lu kB", &kb) == 1)
			*file = (double)kb / 1024.0;
	}
	fclose(f);
}

static inline int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0) {
		fprintf(stderr, "warning: cannot remove %s: %s\n", path, strerror(errno));
		return 0; /* go on removing the rest */
	}
	return 0;
}

/* rm -rf path (only ever called on directories this program made). */
static inline void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p for the directory part of a file path. 0 or -1 (errno set). */
static inline int mkdir_parents(const char *file)
{
	char buf[4096];
	if (strlen(file) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, file);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Result rows                                                                                */
/* ------------------------------------------------------------------------------------------ */

/*
 * One cell of the matrix. Plain data (no pointers) so that a child process can send it to its
 * parent through a pipe.
 */
typedef struct bench_row {
	char stamp[32]; /* start of the invocation, UTC, ISO 8601 */
	uint64_t seed;
	uint64_t size; /* base tree records */
	char store[16];
	char op[24];
	char pattern[16]; /* "-" for cells without a pattern */
	unsigned runs;    /* runs measured */
	uint64_t ops;     /* operations (records, keys, edits, commits) per run */
	double ms_median, ms_min, ms_max;
	double cpu_ms;                        /* process CPU time of the median run (user + system) */
	double ops_per_s;                     /* ops / median */
	double us_per_op;                     /* median / ops */
	prolly_stats st;                      /* counters of the median run */
	prolly_pg_stats pg;                   /* the PostgreSQL store's counters of that run */
	double store_read_ms, store_write_ms; /* time inside the store (timing wrapper) */
	uint64_t durable_writes;
	uint64_t minor_faults;             /* minor page faults during the median run */
	double peak_rss_mib;               /* process peak at the end of the cell */
	double rss_anon_mib, rss_file_mib; /* current resident memory at the end of the cell */
	double load1;                      /* one-minute load average at the end of the cell */
	double vs_plain; /* pg store: ms_median / the matching plain-table cell's; 0 if none */
	double
	    server_cpu_ms; /* pg with the throwaway cluster: server CPU time of the median run; -1 if unknown */
	/* Per-operation latency of the median run (cells of many operations, when recorded; else
	 * 0): median and 99th percentile in microseconds, and how many operations were timed. */
	double p50_us, p99_us;
	uint64_t lat_samples;
	int valid;
	char note[200];
} bench_row;

static inline const char *csv_header(void)
{
	return "stamp,seed,size,store,op,pattern,runs,ops,ms_median,ms_min,ms_max,cpu_ms,ops_per_s,"
	       "us_per_op,store_reads,items_per_read,nodes_read,bytes_read,nodes_written,"
	       "bytes_written,store_writes,durable_writes,cache_hits,cache_misses,cache_evictions,"
	       "store_read_ms,store_write_ms,minor_faults,peak_rss_mib,rss_anon_mib,rss_file_mib,load1,"
	       "valid,note,"
	       "store_round_trips,store_statements,pool_waits,vs_plain,server_cpu_ms";
}

static inline double items_per_read(const prolly_stats *s)
{
	return s->store_reads ? (double)s->store_read_items / (double)s->store_reads : 0.0;
}

/* The note is free text: quote it for CSV (double any quote). */
static inline void csv_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static inline void csv_row(FILE *f, const bench_row *r)
{
	const prolly_stats *s = &r->st;
	fprintf(f,
	        "%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%u,%" PRIu64 ",%.3f,%.3f,%.3f,%.3f,%.0f,%.3f,"
	        "%" PRIu64 ",%.2f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
	        ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%" PRIu64 ",%.1f,%.1f,%.1f,%.2f,%d,",
	        r->stamp, r->seed, r->size, r->store, r->op, r->pattern, r->runs, r->ops, r->ms_median,
	        r->ms_min, r->ms_max, r->cpu_ms, r->ops_per_s, r->us_per_op, s->store_reads,
	        items_per_read(s), s->nodes_read, s->bytes_read, s->nodes_written, s->bytes_written,
	        s->store_writes, r->durable_writes, s->cache_hits, s->cache_misses, s->cache_evictions,
	        r->store_read_ms, r->store_write_ms, r->minor_faults, r->peak_rss_mib, r->rss_anon_mib,
	        r->rss_file_mib, r->load1, r->valid);
	csv_quoted(f, r->note);
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.1f\n", s->store_round_trips,
	        r->pg.statements, r->pg.pool_waits, r->vs_plain, r->server_cpu_ms);
}

/* Opens the CSV for appending (creating its directory), writing the header if it is new. */
static inline FILE *csv_open(const char *path)
{
	if (mkdir_parents(path) != 0) {
		fprintf(stderr, "error: cannot create the directory of %s: %s\n", path, strerror(errno));
		return NULL;
	}
	FILE *old = fopen(path, "r");
	if (old) {
		/* A file written by a version with other columns is moved aside, not mixed. */
		char line[1024];
		size_t hl = strlen(csv_header());
		int got = fgets(line, sizeof(line), old) != NULL;
		int same = got && strncmp(line, csv_header(), hl) == 0 &&
		           (line[hl] == '\n' || line[hl] == '\0');
		int empty = !got;
		fclose(old);
		if (!same && !empty) {
			char moved[4200];
			snprintf(moved, sizeof(moved), "%s.old-columns", path);
			if (rename(path, moved) != 0) {
				fprintf(stderr, "error: %s has other columns and cannot be moved to %s: %s\n", path,
				        moved, strerror(errno));
				return NULL;
			}
			fprintf(stderr, "note: %s had other columns; moved to %s\n", path, moved);
		}
	}
	FILE *f = fopen(path, "a");
	if (!f) {
		fprintf(stderr, "error: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || ftell(f) == 0) {
		fprintf(f, "%s\n", csv_header());
		fflush(f);
	}
	return f;
}

/* A count with a thousands separator-free short form: 12345 -> "12.3k". */
static inline const char *human_count(char *buf, size_t n, double v)
{
	if (v >= 1e9)
		snprintf(buf, n, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, n, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else
		snprintf(buf, n, "%.0f", v);
	return buf;
}

static inline void md_header(FILE *f)
{
	fprintf(f, "| size | store | op | pattern | ms (median) | min | max | CPU ms | server CPU ms | "
	           "ops/s | us/op "
	           "| store reads | items/read | nodes read | MiB read | nodes written | MiB written "
	           "| cache hit/miss | round trips | statements | vs plain | peak RSS MiB | valid |\n");
	fprintf(f, "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	           "---:|---:"
	           "|---:|---:|---:|---|\n");
}

static inline void md_row(FILE *f, const bench_row *r)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32], rt[32], sm[32], vp[32], sc[32];
	const prolly_stats *s = &r->st;
	if (r->server_cpu_ms >= 0)
		snprintf(sc, sizeof(sc), "%.1f", r->server_cpu_ms);
	else
		snprintf(sc, sizeof(sc), "-");
	if (r->vs_plain > 0)
		snprintf(vp, sizeof(vp), "%.2fx", r->vs_plain);
	else
		snprintf(vp, sizeof(vp), "-");
	fprintf(f,
	        "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.1f | %s | %s | %.3f | %s | %.1f | %s | "
	        "%.2f | %s "
	        "| %.2f | %s/%s | %s | %s | %s | %.0f | %s |\n",
	        human_count(a, sizeof(a), (double)r->size), r->store, r->op, r->pattern, r->ms_median,
	        r->ms_min, r->ms_max, r->cpu_ms, sc, human_count(b, sizeof(b), r->ops_per_s),
	        r->us_per_op, human_count(c, sizeof(c), (double)s->store_reads), items_per_read(s),
	        human_count(d, sizeof(d), (double)s->nodes_read), (double)s->bytes_read / 1048576.0,
	        human_count(e, sizeof(e), (double)s->nodes_written),
	        (double)s->bytes_written / 1048576.0, human_count(g, sizeof(g), (double)s->cache_hits),
	        human_count(h, sizeof(h), (double)s->cache_misses),
	        human_count(rt, sizeof(rt), (double)s->store_round_trips),
	        human_count(sm, sizeof(sm), (double)r->pg.statements), vp, r->peak_rss_mib,
	        r->valid ? "yes" : "NO");
}

/* Median of v[0..n) (sorts v). n > 0. */
static inline int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y ? 1 : 0;
}

#endif /* BENCH_UTIL_H */
