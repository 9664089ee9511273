/*
 * tpcb_int.h - the tpcb suite's pieces (bench/suites/tpcb*.c): pgbench's TPC-B-like transaction
 * on versioned tables, against Debian's real pgbench.
 *
 *   tpcb.c          the suite: its [tpcb] keys, cells, fixtures, rows and validation
 *   tpcb_prolly.c   the client and sql contenders: worker threads running the transaction
 *                   through bench/tables (table.h), the balance sums read back
 *   tpcb_pgbench.c  the plain contender: `pgbench -i` and `pgbench -n -c -j -T` as child
 *                   processes, their output and per-transaction logs parsed
 *   tpcb_common.c   what they share: the four tables, a one-value query on the server, context
 *                   switch and CPU counters, the sampling sleep; it uses none of the others
 *   tpcb_report.c   the suite's section of report.md (TPS against clients, versioning cost)
 *
 * Calls run one way: tpcb.c uses the two contenders, all three use tpcb_common.c; neither
 * contender uses tpcb.c.
 *
 * Schema (pgbench's, as versioned tables; docs/benchmarks/tpcb.md): per scale unit 1 branch,
 * 10 tellers and 100,000 accounts, every balance 0 at load; history rows get a primary key
 * from the suite (tpcb_hid: the cell, the client and the client's own sequence). The filler
 * columns are TEXT of pgbench's char(n) widths, blank-padded, so a row is as wide as pgbench's.
 */
#ifndef BENCH_TPCB_INT_H
#define BENCH_TPCB_INT_H

#include "../tables/table.h"
#include "harness.h"
#include "hdr.h"
#include "proc.h"

#include <stdint.h>

#define TPCB_ACCOUNTS 100000 /* per scale unit, as pgbench */
#define TPCB_TELLERS 10
#define TPCB_BRANCHES 1
#define TPCB_DELTA 5000 /* deltas are uniform in [-5000, 5000], as pgbench's */

/* Column numbers of the four tables (tpcb_common.c defines the tables). */
enum { TA_AID, TA_BID, TA_BALANCE, TA_FILLER };              /* pgbench_accounts */
enum { TT_TID, TT_BID, TT_BALANCE, TT_FILLER };              /* pgbench_tellers */
enum { TB_BID, TB_BALANCE, TB_FILLER };                      /* pgbench_branches */
enum { TH_HID, TH_TID, TH_BID, TH_AID, TH_DELTA, TH_MTIME }; /* pgbench_history */
extern const bt_table tpcb_accounts, tpcb_tellers, tpcb_branches, tpcb_history;
extern const bt_table *const tpcb_tables[4];

enum { TPCB_MODE_RW, TPCB_MODE_SELECT, TPCB_N_MODES };
extern const char *const tpcb_mode_names[TPCB_N_MODES]; /* "tpcb", "select-only" */

/* The [tpcb] section (hw_section). */
typedef struct tpcb_cfg {
	int enabled;
	hw_u64_list scales;  /* pgbench scale factors, e.g. [small, large] */
	hw_u64_list clients; /* [1, 2, 4, 8, 16, 32] */
	unsigned modes;      /* bit TPCB_MODE_* */
	unsigned contenders; /* bit BT_PLAIN, BT_CLIENT, BT_SQL */
	uint64_t warmup_s, duration_s;
	uint64_t load_batch;  /* rows per commit of the prolly load */
	uint64_t max_retries; /* lost races retried per transaction before it counts as failed */
} tpcb_cfg;

/* A history row's key: cell number, client and the client's sequence (never reused). */
static inline int64_t tpcb_hid(uint64_t cell, uint64_t client, uint64_t seq)
{
	return (int64_t)((cell << 44) | (client << 32) | (seq & 0xffffffffu));
}

/* The sums the TPC-B consistency conditions compare, read after a cell. */
typedef struct tpcb_sums {
	int64_t accounts, tellers, branches, history; /* balances; history: sum of delta */
	int64_t history_rows;
} tpcb_sums;

/* What one cell measured, whichever contender ran it. */
typedef struct tpcb_result {
	double elapsed_s;      /* the measured window */
	uint64_t transactions; /* committed in the window */
	uint64_t all_commits;  /* committed by the whole cell (warmup included): history rows added */
	int64_t delta_sum;     /* sum of the deltas of every committed transaction (warmup included) */
	uint64_t attempts, retries, failed;
	double tps;
	hdr_hist *lat; /* latencies in the window (ns), owned by the caller */
	double client_cpu_ms, server_cpu_ms;
	double client_csw, server_csw; /* context switches; -1 unknown */
	uint64_t *per_second;          /* transactions finished in each second of the window */
	uint32_t nsec;
	uint64_t read_mismatches; /* reads that did not see what they should have */
	char first_error[256];
} tpcb_result;

/* One contender's data at one scale (opened by tpcb_prolly_open / tpcb_pgbench_init). */
typedef struct tpcb_ctx {
	const h_run *run;
	const tpcb_cfg *cfg;
	uint64_t scale;
	long postmaster; /* the server's postmaster pid, 0 when not on this machine */
	char schema[128];
	/* prolly */
	bt_db *db[BT_N_CONTENDERS];
	/* pgbench */
	char pgbench[4096]; /* path of the pgbench program */
	char tmp[4200];     /* scratch directory for its logs */
} tpcb_ctx;

/* ---- tpcb_prolly.c ---- */
/* Opens (create: and loads) the prolly store in ctx->schema for the client and sql contenders
 * that cfg selects; *load_s the load's seconds. */
int tpcb_prolly_open(tpcb_ctx *ctx, double *load_s, char *err, size_t errn);
void tpcb_prolly_close(tpcb_ctx *ctx);
/* Runs one cell on contender kind (BT_CLIENT or BT_SQL) with `clients` threads. */
int tpcb_prolly_cell(tpcb_ctx *ctx, bt_kind kind, int mode, unsigned clients, uint64_t cell_no,
                     uint64_t seed, hp_conn *pc, hp_snapshot *sa, hp_snapshot *sb, tpcb_result *r,
                     char *err, size_t errn);
int tpcb_prolly_sums(tpcb_ctx *ctx, tpcb_sums *s, char *err, size_t errn);

/* ---- tpcb_pgbench.c ---- */
/* Finds pgbench (pg_config --bindir, else PATH) into ctx->pgbench; -1 with err if none. */
int tpcb_pgbench_find(tpcb_ctx *ctx, char *err, size_t errn);
/* `pgbench -i -s scale` into schema ctx->schema (created if missing). */
int tpcb_pgbench_init(tpcb_ctx *ctx, double *load_s, char *err, size_t errn);
/* Why pgbench failed, from its stderr text (NUL-terminated), redacted against url into out
 * (n bytes, "" when the text has no line): the first line that says "error:", else the last. */
void tpcb_pgbench_reason(char *out, size_t n, const char *text, const char *url);
int tpcb_pgbench_cell(tpcb_ctx *ctx, int mode, unsigned clients, hp_conn *pc, hp_snapshot *sa,
                      hp_snapshot *sb, tpcb_result *r, char *err, size_t errn);
int tpcb_pgbench_sums(tpcb_ctx *ctx, tpcb_sums *s, char *err, size_t errn);

/* ---- tpcb.c ---- */
extern const char *const htpcb_columns[];
unsigned htpcb_cells(const hw_workload *w);
int htpcb_run(h_run *run, char *err, size_t errn);

/* ---- tpcb_common.c ---- */
/* A one-statement query on url with search_path schema (NULL: none): the first value of its
 * first row into out ("" if none), which must be of type text (results come back binary). */
int tpcb_query_value(const char *url, const char *schema, const char *sql, char *out, size_t n,
                     char *err, size_t errn);
/* Client-side process counters: CPU ms and context switches of this process. */
void tpcb_self_counters(double *cpu_ms, double *csw);
/* Sleeps until the monotonic time `until` (ns), polling c (the server's context switches,
 * bench_csw of proc.h) about every 100 ms meanwhile (c may be NULL). */
void tpcb_sleep_until(uint64_t until, bench_csw *c);

/* ---- tpcb_report.c ---- */
int tpcb_report(FILE *f, const char *dir, char *err, size_t errn);

#endif /* BENCH_TPCB_INT_H */
