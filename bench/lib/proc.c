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

double bench_load1(void)
{
	double l[1];
	return getloadavg(l, 1) == 1 ? l[0] : -1;
}

double bench_server_cpu_ms(long postmaster_pid)
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

size_t bench_children_csw(long ppid, long *pids, uint64_t *csw, size_t max)
{
	char path[300], line[256];
	size_t n = 0;
	DIR *d = opendir("/proc");
	if (!d || ppid <= 0) {
		if (d)
			closedir(d);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		long parent = -1;
		unsigned long long vol = 0, inv = 0, x;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "PPid: %ld", &parent) == 1)
				continue;
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &x) == 1)
				vol = x;
			else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &x) == 1)
				inv = x;
		}
		fclose(f);
		if (parent != ppid)
			continue;
		if (n < max) {
			pids[n] = strtol(de->d_name, NULL, 10);
			csw[n] = (uint64_t)(vol + inv);
		}
		n++;
	}
	closedir(d);
	return n;
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
