/*
 * proc.c - process facts for the benchmarks (proc.h).
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t bench_minor_faults(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_minflt;
}

double bench_peak_rss_mib(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

void bench_rss_mib(double *anon, double *file)
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

uint64_t bench_mem_total(void)
{
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib * 1024;
}

/* A cgroup memory limit file's value in bytes, or 0 when it is absent, unreadable or no limit
 * ("max"; v1 writes LONG_MAX rounded down to a page for none). */
static uint64_t limit_file(const char *dir, const char *rel, const char *name)
{
	char path[4096], text[64];
	unsigned long long v;
	if (snprintf(path, sizeof(path), "%s%s/%s", dir, rel, name) >= (int)sizeof(path))
		return 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t k = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[k] = 0;
	if (sscanf(text, "%llu", &v) != 1 || v >= (1ULL << 62))
		return 0;
	return (uint64_t)v;
}

/* The lowest limit set on group rel under dir or on any of its ancestors, or 0. rel ("" or
 * "/a/b") is cut at each '/' from the end in place. A group that dir does not hold (the mount
 * shows the container's own group as its root) is looked up at the root only. */
static uint64_t lowest_limit(const char *dir, char *rel, const char *name)
{
	char path[4096];
	uint64_t low = 0, v;
	if (snprintf(path, sizeof(path), "%s%s", dir, rel) >= (int)sizeof(path) ||
	    access(path, F_OK) != 0)
		rel[0] = 0;
	for (;;) {
		if ((v = limit_file(dir, rel, name)) && (!low || v < low))
			low = v;
		char *slash = strrchr(rel, '/');
		if (!slash)
			return low;
		*slash = 0;
	}
}

/* A /proc/self/cgroup path ("/" for the root) as the rel of lowest_limit ("" for the root), in
 * rel (4096 bytes); 0, or -1 when it does not fit. */
static int group_rel(char *rel, const char *path, size_t len)
{
	if (len >= 4096)
		return -1;
	memcpy(rel, path, len);
	rel[len == 1 && path[0] == '/' ? 0 : len] = 0;
	return 0;
}

uint64_t bench_cgroup_mem_limit(const char *self_cgroup, const char *mount)
{
	char dir[4096], rel[4096];
	const char *v1 = NULL, *v2 = NULL; /* the memory controller's v1 path, the v2 path */
	size_t v1_len = 0, v2_len = 0;
	uint64_t low = 0;
	/* Lines "ID:CONTROLLERS:PATH"; v2's is "0::PATH", v1's CONTROLLERS a comma list. */
	for (const char *line = self_cgroup; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 && c2 == c1 + 1 && c1 == line + 1 && line[0] == '0') {
			v2 = c2 + 1;
			v2_len = len - (size_t)(v2 - line);
		}
		for (const char *w = c1 ? c1 + 1 : c2; c2 && w < c2; w += strcspn(w, ",:") + 1)
			if (strcspn(w, ",:") == 6 && strncmp(w, "memory", 6) == 0) {
				v1 = c2 + 1;
				v1_len = len - (size_t)(v1 - line);
			}
		line = end ? end + 1 : NULL;
	}
	if (v2 && group_rel(rel, v2, v2_len) == 0)
		low = lowest_limit(mount, rel, "memory.max");
	if (!low && v1 && group_rel(rel, v1, v1_len) == 0 &&
	    snprintf(dir, sizeof(dir), "%s/memory", mount) < (int)sizeof(dir))
		low = lowest_limit(dir, rel, "memory.limit_in_bytes");
	return low;
}

uint64_t bench_mem_limit(const char **source)
{
	char text[4096];
	uint64_t total = bench_mem_total(), group = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (f) {
		size_t k = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[k] = 0;
		group = bench_cgroup_mem_limit(text, "/sys/fs/cgroup");
	}
	int take_group = group && (!total || group < total);
	*source = take_group ? "cgroup memory limit" : "MemTotal";
	return take_group ? group : total;
}

double bench_load1(void)
{
	double l[1];
	return getloadavg(l, 1) == 1 ? l[0] : -1;
}

/* What /proc/<pid>/stat says of a process (times in clock ticks). */
typedef struct {
	long ppid;
	unsigned long long utime, stime;   /* its own */
	unsigned long long cutime, cstime; /* its reaped children's */
} pid_stat;

/* The one reader of /proc/<pid>/stat: 0, or -1 when it cannot be read (the process is gone). */
static int read_stat(long pid, pid_stat *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = '\0';
	char *rp = strrchr(buf, ')'); /* the command may hold spaces */
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime */
	if (!rp || sscanf(rp + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
	                  &st->ppid, &st->utime, &st->stime, &st->cutime, &st->cstime) != 5)
		return -1;
	return 0;
}

/* The one reader of /proc/<pid>/status's context switches (voluntary + involuntary, of the
 * process's main thread): 0, or -1 when it cannot be read. */
static int read_status_csw(long pid, uint64_t *csw)
{
	char path[64], line[256];
	unsigned long long v, total = 0;
	int seen = 0;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1) {
			total += v;
			seen++;
		}
	fclose(f);
	*csw = total;
	return seen ? 0 : -1;
}

/* Calls fn for the postmaster and each of its live children (skipping processes that vanish
 * meanwhile). 0 when the postmaster itself was among them, -1 otherwise. */
static int each_server_proc(long postmaster_pid,
                            void (*fn)(long pid, const pid_stat *st, int is_postmaster,
                                       void *payload),
                            void *payload)
{
	int found = 0;
	if (postmaster_pid <= 0)
		return -1;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		long pid = strtol(de->d_name, NULL, 10);
		pid_stat st;
		if (read_stat(pid, &st) != 0)
			continue;
		if (pid == postmaster_pid || st.ppid == postmaster_pid) {
			found |= pid == postmaster_pid;
			fn(pid, &st, pid == postmaster_pid, payload);
		}
	}
	closedir(d);
	return found ? 0 : -1;
}

static void add_cpu_ticks(long pid, const pid_stat *st, int is_postmaster, void *payload)
{
	(void)pid;
	*(double *)payload += (double)(st->utime + st->stime +
	                               (is_postmaster ? st->cutime + st->cstime : 0));
}

/* A child reaped while the scan is under way is in neither place: the postmaster's reaped time
 * was read before it was added, the child is gone (or read without times while the kernel
 * releases it), and the total falls. So the scan is taken again while the postmaster's reaped
 * time moved during it (a few times at most: what changes is one exit). */
double bench_server_cpu_ms(long postmaster_pid)
{
	long tck = sysconf(_SC_CLK_TCK);
	double ticks = 0;
	pid_stat before, after;
	if (tck <= 0 || postmaster_pid <= 0)
		return -1;
	for (int attempt = 0; attempt < 8; attempt++) {
		ticks = 0;
		if (read_stat(postmaster_pid, &before) != 0 ||
		    each_server_proc(postmaster_pid, add_cpu_ticks, &ticks) != 0 ||
		    read_stat(postmaster_pid, &after) != 0)
			return -1;
		if (after.cutime == before.cutime && after.cstime == before.cstime)
			break;
	}
	return ticks * 1000.0 / (double)tck;
}

/* The context switches of the server's processes so far, and whether the postmaster's were. */
typedef struct {
	double total;
	int postmaster_read;
} csw_sum;

static void add_csw(long pid, const pid_stat *st, int is_postmaster, void *payload)
{
	csw_sum *sum = payload;
	uint64_t v;
	(void)st;
	if (read_status_csw(pid, &v) != 0)
		return;
	sum->total += (double)v;
	sum->postmaster_read |= is_postmaster;
}

double bench_server_csw(long postmaster_pid)
{
	csw_sum sum = {0, 0};
	if (each_server_proc(postmaster_pid, add_csw, &sum) != 0 || !sum.postmaster_read)
		return -1;
	return sum.total;
}

uint64_t bench_self_csw(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

int bench_pid_usage(long pid, double *cpu_ms, uint64_t *csw)
{
	long tck = sysconf(_SC_CLK_TCK);
	pid_stat st;
	if (tck <= 0 || read_stat(pid, &st) != 0 || read_status_csw(pid, csw) != 0)
		return -1;
	*cpu_ms = (double)(st.utime + st.stime) * 1000.0 / (double)tck;
	return 0;
}

long bench_parent_pid(long pid)
{
	pid_stat st;
	return pid > 0 && read_stat(pid, &st) == 0 && st.ppid > 0 ? st.ppid : 0;
}

/* The children's switches gathered so far by bench_children_csw. */
typedef struct {
	long *pids;
	uint64_t *csw;
	size_t max, n;
} child_csw;

static void add_child_csw(long pid, const pid_stat *st, int is_postmaster, void *payload)
{
	child_csw *c = payload;
	uint64_t v;
	(void)st;
	if (is_postmaster || read_status_csw(pid, &v) != 0)
		return;
	if (c->n < c->max) {
		c->pids[c->n] = pid;
		c->csw[c->n] = v;
	}
	c->n++;
}

size_t bench_children_csw(long ppid, long *pids, uint64_t *csw, size_t max)
{
	child_csw c = {pids, csw, max, 0};
	each_server_proc(ppid, add_child_csw, &c); /* -1 when ppid is gone: then it has no children */
	return c.n;
}

/* The tracker of bench_csw_start (proc.h). */
#define CSW_MAX 1024
struct bench_csw {
	long ppid;
	size_t n;
	long pid[CSW_MAX];
	uint64_t first[CSW_MAX], last[CSW_MAX];
};

static void csw_sample(bench_csw *c, int at_start)
{
	long pids[CSW_MAX];
	uint64_t sw[CSW_MAX];
	size_t n = bench_children_csw(c->ppid, pids, sw, CSW_MAX);
	if (n > CSW_MAX)
		n = CSW_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < c->n && c->pid[j] != pids[i])
			j++;
		if (j == c->n) {
			if (c->n == CSW_MAX)
				continue;
			c->pid[j] = pids[i];
			c->first[j] = at_start ? sw[i] : 0; /* born in the window: all of it counts */
			c->n++;
		}
		c->last[j] = sw[i];
	}
}

bench_csw *bench_csw_start(long postmaster)
{
	bench_csw *c;
	if (postmaster <= 0 || !(c = calloc(1, sizeof(*c))))
		return NULL;
	c->ppid = postmaster;
	csw_sample(c, 1);
	return c;
}

void bench_csw_poll(bench_csw *c)
{
	if (c)
		csw_sample(c, 0);
}

double bench_csw_total(bench_csw *c)
{
	if (!c)
		return -1;
	csw_sample(c, 0);
	double t = 0;
	for (size_t i = 0; i < c->n; i++)
		t += (double)(c->last[i] - c->first[i]);
	free(c);
	return t;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0)
		fprintf(stderr, "warning: cannot remove %s: %s\n", path, strerror(errno));
	return 0; /* go on removing the rest */
}

void bench_rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
