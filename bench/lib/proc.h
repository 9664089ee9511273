/*
 * proc.h - what the benchmarks read about processes (bench_*): page faults, resident memory,
 * the load average, CPU time and context switches of this process, of another one and of a
 * PostgreSQL server, and removing a scratch directory.
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
/* The machine's memory in bytes (MemTotal of /proc/meminfo), or 0 if unknown. */
uint64_t bench_mem_total(void);
/* The memory limit in bytes of the control group that self_cgroup (the text of
 * /proc/self/cgroup) names under mount (/sys/fs/cgroup), the lowest of its own and its
 * ancestors': cgroup v2's memory.max ("0::PATH" lines), else v1's memory.limit_in_bytes (a
 * "N:...memory...:PATH" line, under mount/memory). A PATH that is not under mount (a container
 * that sees its own group as the root) is read at the root. 0 when none is set ("max", v1's
 * page-rounded LONG_MAX) or nothing can be read. */
uint64_t bench_cgroup_mem_limit(const char *self_cgroup, const char *mount);
/* The memory this process may use, in bytes: the lower of MemTotal and the limit of its control
 * group (bench_cgroup_mem_limit of /proc/self/cgroup under /sys/fs/cgroup); 0 if neither is
 * known. *source names the figure taken, for messages: "MemTotal" or "cgroup memory limit". */
uint64_t bench_mem_limit(const char **source);
/* The one-minute load average, or -1. */
double bench_load1(void);
/* CPU time (user + system, ms) of a PostgreSQL server: the postmaster, its live children and
 * the children it has reaped (a closed backend's time moves into the postmaster's cutime).
 * postmaster_pid 0 or an unreadable /proc: -1. */
double bench_server_cpu_ms(long postmaster_pid);
/* Context switches (voluntary + involuntary) of a PostgreSQL server: the postmaster and its live
 * children (a backend that has exited takes its count with it: read it while the connections
 * measured are open). postmaster_pid 0 or an unreadable /proc: -1. */
double bench_server_csw(long postmaster_pid);
/* Context switches (voluntary + involuntary) of every thread of this process so far. */
uint64_t bench_self_csw(void);
/* CPU time (user + system, ms) and context switches (voluntary + involuntary) of process pid
 * (its main thread's switches: a PostgreSQL backend has one thread). 0, or -1 when /proc/pid
 * cannot be read (the process is gone). */
int bench_pid_usage(long pid, double *cpu_ms, uint64_t *csw);
/* The parent of process pid (a backend's postmaster), or 0 when unknown. */
long bench_parent_pid(long pid);
/* Context switches (voluntary + involuntary) of each live child of process ppid (a PostgreSQL
 * server's backends, one by one: a caller sampling them during a window keeps the count of a
 * backend that exits before its end, which bench_server_csw's total loses): up to max (pid,
 * switches) pairs into pids[] and csw[]. Returns how many children there are (more than max when
 * some did not fit); 0 when /proc cannot tell. */
size_t bench_children_csw(long ppid, long *pids, uint64_t *csw, size_t max);
/* The context switches of a PostgreSQL server's backends over a window, backends that exit or
 * start inside it included (bench_children_csw sampled): bench_csw_start samples at the window's
 * start (NULL when postmaster is 0 or out of memory), bench_csw_poll samples again (call it now
 * and then in a long window, so that a backend that exits keeps what it did up to the last
 * sample; NULL is ignored), bench_csw_total samples at the end, frees the tracker and returns
 * the switches of the window (never negative), or -1 for NULL. At most 1024 backends. */
typedef struct bench_csw bench_csw;
bench_csw *bench_csw_start(long postmaster);
void bench_csw_poll(bench_csw *c);
double bench_csw_total(bench_csw *c);
/* rm -rf path, warning on stderr about what cannot be removed (only ever called on directories
 * the benchmark made). */
void bench_rm_tree(const char *path);

#endif /* BENCH_PROC_H */
