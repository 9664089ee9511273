/*
 * insert_int.h - the insert suite's internals (hins_*), shared by its files:
 *
 *   insert.c         the [insert] section, the row schema, the steps x contenders loop, rows
 *   insert_steps.c   what each step does: the load loops, l.x, the query clients and their
 *                    background writers, the checks after a step
 *   insert_meter.c   what a cell measures besides latency: client and server CPU, context
 *                    switches (/proc), WAL, sizes, RSS; the per-second series
 *   insert_report.c  the suite's section of report.md
 *
 * The table (the insert benchmark's, one per client; docs/benchmarks/insert.md):
 *
 *   transactionid INT primary key   the row's number, in insert order (0, 1, 2, ...)
 *   dateandtime   INT               HINS_EPOCH_MS + transactionid (a clock that only grows)
 *   cashregisterid INT              [0, 1000)
 *   customerid    INT               [0, 100000)
 *   productid     INT               [0, 10000)
 *   price         INT               [0, 500000) (cents)
 *   data          TEXT              data_bytes bytes
 *
 *   index 1 (price, customerid), index 2 (cashregisterid, price, customerid),
 *   index 3 (price, dateandtime, customerid), each with the primary key appended.
 *
 * Every column is a pure function of (seed, client, transactionid) (hins_row), so any row can
 * be made again without reading it.
 */
#ifndef BENCH_INSERT_INT_H
#define BENCH_INSERT_INT_H

#include "../tables/table.h"
#include "harness.h"
#include "series.h"

#include <pthread.h>
#include <stdint.h>

#define HINS_EPOCH_MS 1700000000000LL
#define HINS_CASHREGISTERS 1000
#define HINS_CUSTOMERS 100000
#define HINS_PRODUCTS 10000
#define HINS_PRICES 500000
#define HINS_MAX_CLIENTS 64
#define HINS_INDEXES 3
#define HINS_DATA_MAX 1000

/* The [insert] section (docs/harness.md, "The suites" (insert)). */
typedef struct hins_config {
	int enabled;
	uint64_t rows;               /* l.i0: rows each client's table gets */
	uint64_t rows_per_commit;    /* l.i0 */
	uint64_t l1_rows;            /* l.i1: rows each client inserts (and deletes) */
	uint64_t l1_rows_per_commit; /* 50 */
	uint64_t l2_rows;            /* l.i2 */
	uint64_t l2_rows_per_commit; /* 5 */
	uint64_t query_seconds;      /* each qr/qp step */
	hw_u64_list writer_rates;    /* rows/s per client's background writer: q<rate> steps */
	uint64_t writer_rows_per_commit;
	uint64_t range_rows; /* entries per qr query */
	uint64_t clients;    /* one table (branch) per client */
	uint64_t data_bytes;
	unsigned contenders; /* bit BT_PLAIN, BT_CLIENT, BT_SQL */
} hins_config;

/* Steps, in run order: l.i0, l.x, l.i1, l.i2, then per writer rate qr<rate>, qp<rate>. */
enum { HINS_LI0, HINS_LX, HINS_LI1, HINS_LI2, HINS_QR, HINS_QP };

typedef struct hins_step {
	int kind;      /* HINS_* */
	uint64_t rate; /* HINS_QR/QP: the writers' rows/s per client */
	char name[16]; /* "l.i0", "qr100" */
} hins_step;

/* ---- per-second series and latency (insert_meter.c; the series: bench/lib/series.h) ------- */

/* Writes the series into row under prefix ("" or "writer_"): PREFIXops, PREFIXops_per_s,
 * PREFIXsamples, PREFIXp50_ms, PREFIXp99_ms, PREFIXmax_ms, PREFIXmean_ms, PREFIXhdr and the
 * per-second strings PREFIXper_second_ops, _p50_ms, _p99_ms, _max_ms ("n;n;..."), over the
 * seconds [0, max_sec), or [0, ceil(elapsed_s)) without max_sec. 0, or -1 when out of memory. */
int hins_series_row(hrow *row, const bench_series *s, const char *prefix, double elapsed_s);

/* What the client process and the server did during a cell. */
typedef struct hins_usage {
	uint64_t client_cpu_ns;
	uint64_t client_csw; /* voluntary + involuntary, every thread */
	double backend_cpu_ms;
	uint64_t backend_csw;
	double server_cpu_ms; /* the whole server: postmaster and every child (-1 unknown) */
	hp_snapshot pg;
	int backends; /* how many backends were measured */
} hins_usage;

typedef struct hins_meter hins_meter;
/* A monitoring connection to url (its own backend is not counted). */
int hins_meter_open(hins_meter **out, const char *url, const char *schema, char *err, size_t errn);
void hins_meter_close(hins_meter *m);
/* Starts a cell: reads the counters now. */
void hins_meter_start(hins_meter *m);
/* Ends it: *u the differences since hins_meter_start. */
void hins_meter_stop(hins_meter *m, hins_usage *u);
/* The server counters read by the last hins_meter_start. */
const hp_snapshot *hins_meter_before(const hins_meter *m);
/* Bytes of every table, index and TOAST table in PostgreSQL schema `schema` (-1 on failure). */
double hins_meter_schema_bytes(hins_meter *m, const char *schema);
/* Writes the usage into row per op operations (cpu_us_per_op, ...; docs/harness.md). */
void hins_usage_row(hrow *row, const hins_usage *u, const hp_snapshot *before, uint64_t ops);

/* ---- data and steps (insert_steps.c) ------------------------------------------------------ */

/* One contender's data: per client a table (plain: a table in the plain schema, all on one
 * bt_db; prolly: a branch of its own, one bt_db each), and the range of live primary keys
 * [oldest, next). */
typedef struct hins_client {
	char name[16];                 /* "ins_c0": the plain table; the prolly branch is "insert-c0" */
	char ixname[HINS_INDEXES][40]; /* "ins_c0_price_customer": unique in the plain schema */
	const bt_table *tabs[1];       /* what bt_db_open was given (prolly: one db per client) */
	bt_table t;  /* with its three indexes (the secondary indexes exist after l.x) */
	bt_table t0; /* the same table without indexes: what l.i0 writes */
	bt_db *db;
	bt_session *s;
	int64_t oldest, next; /* live primary keys; the writer's own copy while a q step runs */
	uint64_t seed;
} hins_client;

typedef struct hins_data {
	const hins_config *cfg;
	bt_kind kind;
	unsigned n;
	hins_client c[HINS_MAX_CLIENTS];
	const bt_table *tabs[HINS_MAX_CLIENTS]; /* plain: every client's table, on db */
	bt_db *db;                              /* plain: the one db of every client */
	int indexed;                            /* l.x has run */
} hins_data;

/* Everything one step of one contender measured. */
typedef struct hins_result {
	bench_series main;   /* inserts (rows), index builds or queries */
	bench_series writer; /* qr/qp: the background writers' rows */
	double elapsed_s;
	uint64_t errors, conflicts, retries;
	uint64_t deleted, inserted; /* rows */
	uint64_t found, missing;    /* qp: rows found and not found */
	uint64_t range_entries, short_ranges, long_ranges;
	uint64_t nodes_written, node_bytes_written, round_trips; /* the threads' prolly counters */
	int checked_ok;
	char first_error[256];
	char check[256]; /* what the check after the step found wrong, "" if nothing */
} hins_result;

/* Builds row i (transactionid i) of client c: text points into buf (data_bytes bytes). */
void hins_row(bt_row *r, char *buf, const hins_config *cfg, uint64_t seed, int64_t i);

/* Opens the contender's tables (create: empty), one session per client. */
int hins_data_open(hins_data *d, const hins_config *cfg, bt_kind kind, const h_run *run, char *err,
                   size_t errn);
void hins_data_close(hins_data *d);
/* Runs step st; *r filled (hins_result_init first). -1 with err when the suite must stop. */
int hins_step_run(hins_data *d, const hins_step *st, const h_run *run, hins_result *r, char *err,
                  size_t errn);
int hins_result_init(hins_result *r);
void hins_result_dispose(hins_result *r);

/* Each contender in a PostgreSQL schema of its own, so that its size is its own:
 * "<run schema>_ins_plain" (the plain tables), "<run schema>_ins_client" and
 * "<run schema>_ins_sql" (prolly stores; the extension is installed in the last). */
void hins_schema(char *out, size_t n, const h_run *run, bt_kind kind);

/* ---- the suite (insert.c) and its report (insert_report.c) -------------------------------- */

extern const hw_key hins_keys[];
extern const char *const hins_contender_names[]; /* "plain", "client", "sql", NULL */
int hins_report(FILE *f, const char *dir, char *err, size_t errn);

#endif /* BENCH_INSERT_INT_H */
