/*
 * proc.h - what the benchmarks read about processes (bench_*): page faults, resident memory,
 * the load average, a PostgreSQL server's CPU time, and removing a scratch directory.
 * Linux only (/proc, getrusage). Each returns -1 (or 0 for counters) when it cannot tell.
 */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H

#include <stddef.h>
#include <stdint.h>

/* Minor page faults of this process so far (first touches of fresh memory, among others). */
uint64_t bench_minor_faults(void);
/* Peak resident set size of this process so far, in MiB. */
double bench_peak_rss_mib(void);
/* Current anonymous and file-backed resident memory (MiB) of this process, -1 if unknown.
 * File-backed memory includes the touched pages of memory-mapped stores (LMDB). */
void bench_rss_mib(double *anon, double *file);
/* The one-minute load average, or -1. */
double bench_load1(void);
/* CPU time (user + system, ms) of a PostgreSQL server: the postmaster, its live children and
 * the children it has reaped (a closed backend's time moves into the postmaster's cutime).
 * postmaster_pid 0 or an unreadable /proc: -1. */
double bench_server_cpu_ms(long postmaster_pid);
/* Context switches (voluntary + involuntary) of each live child of process ppid (a PostgreSQL
 * server's backends): up to max (pid, switches) pairs into pids[] and csw[]. Returns how many
 * children there are (more than max when some did not fit); 0 when /proc cannot tell. */
size_t bench_children_csw(long ppid, long *pids, uint64_t *csw, size_t max);
/* rm -rf path, warning on stderr about what cannot be removed (only ever called on directories
 * the benchmark made). */
void bench_rm_tree(const char *path);

#endif /* BENCH_PROC_H */
