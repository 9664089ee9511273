/*
 * scale.h - the scale engine: the serial large-tree benchmark matrix (sizes x stores x
 * operations x patterns) behind the harness's scale suite (bench/suites/scale.c).
 *
 * For each size and store the engine builds a base tree of N records (the fixture) and runs
 * every selected cell on it; a cell runs cfg->runs times and becomes one scale_row (median, min
 * and max wall time, the counters and latency percentiles of the median run). Every cell checks
 * what it read or wrote against the model of the workload and marks the row invalid (with a note)
 * when it differs. For the PostgreSQL store ("pg") the engine also runs the plain-table baseline
 * first: the same records in an ordinary table, rows with store "pg-plain", and fills vs_plain in
 * the pg rows from them; after the pg cells, the prolly extension's cells on the same store
 * (rows with store "pg-sql", vs_plain likewise; skipped with a note when the server lacks the
 * extension, failed instead under CI=true).
 *
 * Processes: by default each (size, store) fixture runs in a child process (peak RSS isolated, a
 * crash loses one fixture), which passes its rows to the parent through a pipe. The hooks then
 * run in that child, except after_cell for the "(fixture)" row the parent writes when a child
 * dies. With cfg->no_fork everything runs in the calling process.
 *
 * Order of cells in a fixture: build, the read cells (ops before SCALE_OP_BATCH, in enum order),
 * then for each selected pattern the edit cells (SCALE_OP_BATCH on). For pg the plain baseline
 * cells come first, in the same order, and the extension's cells last, in the same order. An op
 * with parts (scale_op_parts: sync, proof) runs its parts in their order, each a cell.
 *
 * Keys are 24 bytes ("k" + 23 digits of slot 16 i); values are cfg->value_bytes long (see
 * fixture.c for their bytes). Everything is deterministic from cfg->seed.
 */
#ifndef BENCH_SCALE_H
#define BENCH_SCALE_H

#include "prolly.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SCALE_KEY_LEN 24
#define SCALE_MAX_SIZES 16
#define SCALE_MAX_RUNS 64
#define SCALE_MAX_VALUE_BYTES (1u << 20)
#define SCALE_MAX_CONCURRENCY 1024

enum {
	SCALE_OP_BUILD,
	SCALE_OP_FULL_SCAN,
	SCALE_OP_FULL_SCAN_WARM,
	SCALE_OP_GET_COLD_START,
	SCALE_OP_GET_WARM,
	SCALE_OP_GET_COLD,
	SCALE_OP_QUERY,
	SCALE_OP_SCAN,
	SCALE_OP_COUNT,      /* the records of a range of SCALE_COUNT_RANGE keys */
	SCALE_OP_SYNC,       /* parts clone and push (prolly_sync between stores) */
	SCALE_OP_PROOF,      /* parts prove_key, verify_key, prove_range, verify_range */
	SCALE_OP_CONCURRENT, /* cfg->concurrency queries at once */
	SCALE_OP_BATCH,      /* the first op run once per pattern */
	SCALE_OP_PUT,
	SCALE_OP_PUT_NOSYNC,
	SCALE_OP_DIFF,
	SCALE_OP_MERGE,
	SCALE_N_OPS
};
#define SCALE_FIRST_PATTERN_OP SCALE_OP_BATCH
/* Every op but concurrent_query, count, sync and proof (the engine's default). */
#define SCALE_DEFAULT_OPS                                                                          \
	(((1u << SCALE_N_OPS) - 1) & ~(1u << SCALE_OP_CONCURRENT) & ~(1u << SCALE_OP_COUNT) &          \
	 ~(1u << SCALE_OP_SYNC) & ~(1u << SCALE_OP_PROOF))
/* The count cell's range: this many consecutive records (all of them in a smaller tree). */
#define SCALE_COUNT_RANGE 1000000u
/* The proof cells: key proofs per run (at most; fewer when cfg->reads is smaller), range proofs
 * per run (a tenth of the key proofs, at least 1) and records per range proof. */
#define SCALE_PROOF_KEYS 1000u
#define SCALE_PROOF_RANGE 100u

enum {
	SCALE_PAT_APPEND,
	SCALE_PAT_RANDOM,
	SCALE_PAT_CLUSTERED,
	SCALE_PAT_RANDOM_INSERT,
	SCALE_PAT_RANDOM_DELETE,
	SCALE_N_PATTERNS
};

enum { SCALE_STORE_MEM, SCALE_STORE_LMDB, SCALE_STORE_PG, SCALE_N_STORES };

extern const char *const scale_op_names[SCALE_N_OPS];           /* "build", "scan", ... */
extern const char *const scale_pattern_names[SCALE_N_PATTERNS]; /* "append", "random", ... */
extern const char *const scale_store_names[SCALE_N_STORES];     /* "mem", "lmdb", "pg" */
/* The parts of an op that makes several rows (NULL: one row): NULL-terminated names, at most
 * SCALE_MAX_PARTS. Such an op has no pattern; each part is a cell of its own (its own runs, row,
 * skip and before_cell call), its name in the row's pattern column, in this order. */
#define SCALE_MAX_PARTS 4
extern const char *const *const scale_op_parts[SCALE_N_OPS];
/* The plain-table baseline's name for each op it has an analogue of (NULL: none). A pg row of
 * op X compares with the pg-plain row named scale_plain_op_names[X], same pattern. */
extern const char *const scale_plain_op_names[SCALE_N_OPS];
#define SCALE_PLAIN_STORE "pg-plain"
/* The prolly extension's contender on the pg store (bench/scale/sql.c): rows with this store, op
 * the pg op they stand beside, vs_plain from the same plain row as that op's pg row. */
#define SCALE_SQL_STORE "pg-sql"

/*
 * One cell of the matrix. Plain data (no pointers) so that a child process can send it to its
 * parent through a pipe.
 */
typedef struct scale_row {
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
	/* pg with the throwaway cluster: server CPU time of the median run; -1 if unknown */
	double server_cpu_ms;
	/* Per-operation latency of the median run (cells of many operations, when recorded; else
	 * 0): median and 99th percentile in microseconds, and how many operations were timed. */
	double p50_us, p99_us;
	uint64_t lat_samples;
	int valid;
	char note[200];
} scale_row;

typedef struct scale_config {
	uint64_t sizes[SCALE_MAX_SIZES];
	int n_sizes;
	unsigned stores;      /* bit mask over scale_store_names */
	unsigned ops;         /* bit mask over scale_op_names */
	unsigned patterns;    /* bit mask over scale_pattern_names */
	unsigned runs;        /* 1..SCALE_MAX_RUNS */
	uint64_t changes;     /* edits per batch / diff / merge (the merge splits them in halves) */
	uint64_t reads;       /* keys per get / query / scan cell, and per concurrent query */
	uint64_t puts;        /* single-edit commits per put cell */
	uint64_t cold_gets;   /* gets of a get_cold cell; 0: reads / 10 (at least 1) */
	uint32_t value_bytes; /* 1..SCALE_MAX_VALUE_BYTES (the program's default: 27) */
	unsigned concurrency; /* threads of a concurrent_query cell (1..SCALE_MAX_CONCURRENCY) */
	uint64_t seed;
	const char *dir;    /* where the LMDB scratch directory is made (the lmdb store, and the
	                    * LMDB stores the sync cells clone into, whatever the store) */
	size_t cache_mb;    /* decoded-node cache budget; 0: the store's default (PROLLY_CACHE_AUTO) */
	size_t flush_mb;    /* builder flush size; 0: the library's default */
	unsigned node_size; /* of every store the run makes (prolly_node_size_valid); 0: 4096 */
	double max_cell_s;  /* a run longer than this skips the cell's remaining runs */
	int no_fork;        /* run every fixture in the calling process */
	int keep;           /* keep LMDB directories and pg schemas */
	int no_baseline;    /* pg: no plain-table baseline */
	int pg_statements;  /* pg: print the top N pg_stat_statements entries per fixture */
	int op_latency;     /* record per-operation latencies (p50_us, p99_us) where a cell
	                       * is made of many operations (gets, single commits, queries) */
	int quiet;          /* no per-run progress lines on stderr (errors still go there) */
	char pg_url[4096];  /* pg: the conninfo (never printed) */
	/* pg: schema names. Empty: "prolly_bench_<pid>_<size>_<n>" for each store (a fresh one per
	 * build) and "prolly_bench_plain_<pid>_<size>" for the baseline. Set: that exact schema
	 * (dropped first if it exists, then reused for each build) and "<pg_schema>_plain". */
	char pg_schema[64];
	long pg_postmaster; /* pg: the server's postmaster pid (server CPU time), or 0 */
	char stamp[32];     /* the rows' stamp; "" means now (UTC, ISO 8601) */
} scale_config;

/* The engine's defaults (sizes 100k and 1M, every store, SCALE_DEFAULT_OPS, every
 * pattern, 3 runs, 10000 changes and reads, 100 puts, 27-byte values, concurrency 8,
 * seed 42, /tmp, 256 MiB cache, 60 s per cell). */
void scale_config_init(scale_config *cfg);

/*
 * Callbacks around cells; any may be NULL. store, op and pattern are the row's names ("pg-plain"
 * and the plain op's name for baseline cells; pattern "-" for cells without one).
 *
 *  skip        called once per cell, in the calling process before the fixture starts: non-zero
 *              leaves the cell out (resume). A fixture whose cells are all skipped is not built.
 *              A skipped plain cell still runs (without hooks and without a row) when a pg
 *              cell that is not skipped compares with it.
 *  before_cell just before the cell's first run.
 *  after_cell  with the finished row (also for invalid rows). Non-zero stops the engine: no
 *              further cells run and scale_run returns -1.
 */
typedef struct scale_hooks {
	void *payload;
	int (*skip)(void *payload, uint64_t size, const char *store, const char *op,
	            const char *pattern);
	void (*before_cell)(void *payload, uint64_t size, const char *store, const char *op,
	                    const char *pattern);
	int (*after_cell)(void *payload, const scale_row *row);
} scale_hooks;

/* Every row of a run (in the calling process), in the order they were made. */
typedef struct scale_rows {
	scale_row *rows;
	size_t n, cap;
} scale_rows;

/*
 * Runs the matrix. rows (may be NULL) receives every row (it must be zeroed or hold earlier
 * rows; free it with scale_rows_free). Returns 0 when every fixture ran (rows may still be
 * invalid), 1 when a fixture could not be built or its process died (err says which, the
 * others ran), -1 on a bad configuration, a setup failure or a stop asked by after_cell (err).
 */
int scale_run(scale_rows *rows, const scale_config *cfg, const scale_hooks *hooks, char *err,
              size_t errn);
void scale_rows_free(scale_rows *rows); /* NULL ok; leaves it empty */
/* The row of (size, store, op, pattern), or NULL. */
const scale_row *scale_rows_find(const scale_rows *rows, uint64_t size, const char *store,
                                 const char *op, const char *pattern);
/* The running fixture's child process (0 if none): a signal handler may kill it. */
pid_t scale_child_pid(void);

#endif /* BENCH_SCALE_H */
