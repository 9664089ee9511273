/*
 * sysbench_int.h - private to the sysbench suite (sysbench.c: configuration, tables, cells,
 * threads, rows; sysbench_ops.c: the events of each microbenchmark and the checks after a cell;
 * sysbench_report.c: the suite's section of report.md).
 *
 * Data model (docs/benchmarks/sysbench.md):
 *   tables   sbtest1 .. sbtest<tables>, each `table_size` rows with ids 1..table_size:
 *              id INT primary key, k INT (secondary index k_<n>), c TEXT (120 bytes),
 *              pad TEXT (60 bytes)
 *            in prolly: bench/tables/table.h's encoding, table id n, index 1 over (k, id).
 *   rows     as loaded: k = 1 + mix(seed, table, id) mod table_size; c and pad digit groups
 *            derived from (seed, table, id). Writers tag c: "w<cell>.<client>.<seq>." then
 *            digits, so the row re-read after a cell names the commit that last wrote it.
 *
 * Invariants:
 *   Y1  ids stay dense: every write keeps the row set {1..table_size} (delete-insert re-inserts
 *       the id it deleted in the same commit), so a primary-key range of L ids holds L rows.
 *   Y2  read microbenchmarks run before any write of the same load (sb_benches is in run order,
 *       the tables are loaded again whenever a run has cells to do), so the loaded k values are
 *       what they read: range-sum is checked against prefix sums of the generated k.
 *   Y3  a writing client writes only ids of its own residue class (id mod clients), the hot row
 *       of update-one excepted; the k sum of a table changes by exactly the committed deltas.
 *   Y4  a worker's session is used by its thread only; the bt_db is shared (table.h).
 */
#ifndef BENCH_SYSBENCH_INT_H
#define BENCH_SYSBENCH_INT_H

#include "harness.h"
#include "rng.h"
#include "table.h"

#include <pthread.h>
#include <stdint.h>

#define SB_C_LEN 120
#define SB_PAD_LEN 60
#define SB_MAX_TABLES 64
#define SB_CHECK_ROWS 100 /* rows each client re-reads after a write cell */

/* The microbenchmarks, in run order (Y2). */
enum {
	SB_POINT_QUERY,
	SB_RANDOM_POINTS,
	SB_RANGE,
	SB_RANGE_COUNT,
	SB_RANGE_SUM,
	SB_READ_ONLY,
	SB_UPDATE_INDEX,
	SB_UPDATE_NONINDEX,
	SB_UPDATE_ONE,
	SB_DELETE_INSERT,
	SB_READ_WRITE,
	SB_N_BENCHES
};
extern const char *const sb_bench_names[SB_N_BENCHES + 1]; /* "point-query", ... NULL */
extern const char *const sb_bench_groups[SB_N_BENCHES];    /* "point", "range", ... */
extern const char *const sb_contender_names[BT_N_CONTENDERS + 1];

/* [sysbench] (hsb_keys in sysbench.c). */
typedef struct sb_config {
	int enabled;
	uint64_t tables, table_size, load_batch;
	hw_u64_list clients, range_lengths, inlist_sizes;
	uint64_t oltp_range_size, warmup_ms, duration_ms, max_retries;
	unsigned microbenchmarks; /* bit SB_* */
	unsigned contenders;      /* bit BT_* */
} sb_config;

/* What the suite built: the tables, the generated k values' prefix sums. */
typedef struct sb_data {
	const sb_config *cfg;
	uint64_t seed;
	bt_table tables[SB_MAX_TABLES];
	const bt_table *tptr[SB_MAX_TABLES];
	char names[SB_MAX_TABLES][2][24]; /* table and index names */
	int64_t *prefix[SB_MAX_TABLES];   /* prefix[t][i]: sum of the loaded k of ids 1..i */
} sb_data;

/* The tables of cfg and the prefix sums of their loaded k (0, or -1 when out of memory); frees
 * what it holds (NULL-safe fields). */
int sb_data_init(sb_data *d, const sb_config *cfg, uint64_t seed);
void sb_data_dispose(sb_data *d);

/* One entry of a writer's log: a committed write of row (table, id). */
typedef struct sb_logent {
	uint32_t table;
	int tagged; /* set c to this worker's tag with seq */
	int64_t id, k;
	uint64_t seq;
} sb_logent;

typedef struct sb_cell sb_cell;

typedef struct sb_worker {
	sb_cell *cell;
	unsigned index;
	bt_session *s;
	bench_rng rng;
	pthread_t th;
	int started, failed;
	char err[256];
	/* measured */
	hdr_hist *h;
	uint64_t events, errors, bad, retries, checked;
	uint64_t *per_second; /* events finished in each second of the measured window */
	char first_err[256];
	/* writes: committed log and k deltas (warmup included: they are in the data too) */
	sb_logent *log, *pend;
	size_t nlog, caplog, npend, cappend;
	int64_t ksum[SB_MAX_TABLES], pend_ksum[SB_MAX_TABLES];
	uint64_t seq;
	/* scratch */
	int64_t *pks;
	char cbuf[SB_C_LEN + 1], padbuf[SB_PAD_LEN + 1], obuf[SB_C_LEN + 1], opad[SB_PAD_LEN + 1];
} sb_worker;

struct sb_cell {
	const sb_data *d;
	bt_db *db;
	int bench;      /* SB_* */
	uint64_t param; /* range length or in-list size; 0 */
	unsigned clients, index;
	uint64_t warm_end, start, end; /* bench_now_ns() */
	uint32_t nsec;
	/* meeting points of the workers and the main thread (sysbench.c meet()) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned need, arrived, gen;
	int abort; /* set by the main thread before a meeting ends: workers stop */
	/* the turn of a starving transaction (sysbench_ops.c, Y3): its worker's index + 1, or 0;
	 * guarded by mu, waited on with cv */
	unsigned turn;
	sb_worker *workers;
};

/* One event's outcome. */
typedef struct sb_ev {
	int rc;           /* 0, or -1: failed (msg) */
	int bad;          /* a check of what it read failed (msg) */
	uint64_t checked; /* checks made */
	uint64_t retries; /* lost races retried */
	char msg[200];
} sb_ev;

/* Statements one event of bench b runs (QPS = events x this). */
unsigned sb_queries_per_event(int b);
/* Runs one event of the cell's microbenchmark on w's session. */
void sb_event(sb_worker *w, sb_ev *e);
/* Row id of table t as loaded: its k and text columns (c and pad buffers of SB_C_LEN + 1 and
 * SB_PAD_LEN + 1 bytes). */
void sb_gen_row(const sb_data *d, unsigned t, int64_t id, bt_row *r, char *c, char *pad);
/* The per-table k sums and row counts of s's contender (before and after a write cell). */
int sb_table_sums(bt_session *s, const sb_data *d, int64_t *sums, char *err, size_t errn);
/* The checks after a write cell: each client's last written rows re-read and traced to the
 * commit that wrote them, their index entries present, every table still table_size rows in
 * both the primary key and the index, k sums moved by the committed deltas. Returns the number
 * of checks made (*failed of them failed, the first one's message in msg). */
uint64_t sb_check_writes(bt_session *s, const sb_cell *c, const int64_t *before, uint64_t *failed,
                         char *msg, size_t msgn);

/* The suite (hsb_suite, harness.h) and its parts, for the test. */
extern const char *const hsb_columns[];
extern const hw_key hsb_keys[];
unsigned hsb_cells(const hw_workload *w);
int hsb_run(h_run *run, char *err, size_t errn);
int hsb_report(FILE *f, const char *dir, char *err, size_t errn);

#endif /* BENCH_SYSBENCH_INT_H */
