/*
 * harness.h - the benchmark harness's shared contract: the runner (bench/harness/) and the
 * suites that plug into it (bench/suites/).
 *
 * The harness (`build/bench/harness`, driven by scripts/run_postgres_scale_benchmark.sh and
 * `make bench`) runs suites against one store, as a TOML workload file says (docs/harness.md).
 * Each suite is an h_suite (below, "Suites"):
 *
 *   service  closed-loop concurrent clients (point reads, multi reads, commits with CAS, diffs,
 *            merges) per (clients, pool size) cell; suites/service.c, suites/service_ops.c
 *   scale    the serial sizes x runs x operations x patterns matrix; suites/scale.c, on top of
 *            the scale engine in bench/scale/
 *
 * and leaves a result directory (results.c: manifest, provenance, raw and summary CSV, resume),
 * a report with SVG charts (report.c) and, given a baseline directory, regression gates
 * (gates.c). Modules of the runner:
 *
 *   main.c      flags and the steps of a run
 *   runner.c    h_*    the suite table, progress, resume and rows on a suite's behalf
 *   workload.c  hw_*   the TOML contract: parse, validate, defaults, overrides, resolved form, hash
 *   results.c   hr_*   the output directory, manifest, cell rows on disk, resume
 *   rows.c      hrow_* rows under construction, written as CSV lines (bench/lib/csv.h)
 *   summary.c   hr_write_summaries   the summary CSV files from the raw ones
 *   env.c       he_*   machine.txt, postgres.txt, dependencies.txt, binary.sha256
 *   pgstat.c    hp_*   server-side counters (pg_stat_statements, pg_stat_database, WAL, sizes)
 *   gates.c     hg_*   baseline comparison and regression gates
 *   report.c    hrep_* report.md and charts (bench/lib/svg.h)
 *
 * Every function returns 0 on success and -1 on failure with a one-line message in the caller's
 * err buffer (char *err, size_t errn), unless it says otherwise. Nothing here prints a password:
 * URLs are only ever shown through prolly_redact_url(), libpq messages through
 * prolly_redact_message() (include/prolly.h).
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include "csv.h"
#include "err.h"
#include "hdr.h"
#include "prolly.h"
#include "toml.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define H_ERR 512 /* size of the err buffers passed around */
/* Most bytes of a text file the harness reads whole through bench_buf_read_file (buf.h): a
 * provenance file or regression.md of a result directory (a few KB), /proc/cpuinfo (under 1 MiB
 * with hundreds of CPUs). */
#define H_MAX_TEXT_BYTES (16u << 20)

/* Starts writing dir/name through a temporary file: path and tmp (n bytes each) receive the
 * file's name and the temporary one's (dir/.name.tmp), and the temporary file is opened for
 * writing; finish with h_file_commit. NULL, with err saying why, if it cannot be opened. Defined
 * in results.c. */
FILE *h_file_begin(char *path, char *tmp, size_t n, const char *dir, const char *name, char *err,
                   size_t errn);

/* Finishes a file written through f at tmp: checks for write errors, closes f and renames tmp to
 * path (so readers see the old file or the whole new one). On failure tmp is removed and err
 * says why. f is closed either way. Defined in results.c. */
int h_file_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errn);

/* Gives up a file begun with h_file_begin and not committed: closes f and removes tmp, so the
 * old file at path stays as it was. Does nothing when f is NULL (the file was never opened, or
 * h_file_commit already closed it). Defined in results.c. */
void h_file_abort(FILE *f, const char *tmp);

/* ============================================================================================ */
/* Workload (workload.c)                                                                        */
/* ============================================================================================ */

#define HW_SCHEMA 1
#define HW_MAX_LIST 32 /* most entries in any list (clients, pool_sizes, sizes) */

/* Service operation classes, in the order of [service.operation_mix]. */
enum { HW_POINT_READ, HW_MULTI_READ, HW_COMMIT, HW_DIFF, HW_MERGE, HW_N_SERVICE_OPS };
extern const char *const hw_service_op_names[HW_N_SERVICE_OPS]; /* "point_read", ... */

/* How the service suite's workers reach the store ([service] access). */
enum { HW_ACCESS_CLIENT, HW_ACCESS_SQL, HW_N_ACCESS };
extern const char *const hw_access_names[HW_N_ACCESS]; /* "client", "sql" */

/* Scale operations and patterns (bit i of hw_scale.operations / .patterns). The names are the
 * scale engine's too (bench/scale/scale.h): one vocabulary in workload files, raw rows and the
 * engine. The first ten are the contract's operations and the default; the last four are the
 * engine's extra cells, run only when a workload names them. */
enum {
	HW_S_PUT,              /* single random put, committed (one txn per edit) */
	HW_S_BATCH,            /* one batch of `changes` edits, committed */
	HW_S_GET_COLD,         /* read_samples point gets, decoded cache cleared before each */
	HW_S_GET_WARM,         /* read_samples point gets on a warm cache */
	HW_S_QUERY,            /* one get_many of read_samples keys */
	HW_S_CONCURRENT_QUERY, /* `concurrency` get_many queries at once */
	HW_S_SCAN,             /* an ordered range read of read_samples records */
	HW_S_FULL_SCAN,        /* every record, in order */
	HW_S_DIFF,             /* diff of the base against the base plus `changes` edits */
	HW_S_MERGE,            /* three-way merge of two branches of changes/2 edits each */
	HW_S_BUILD,            /* the base tree from empty (otherwise built untimed, no row) */
	HW_S_FULL_SCAN_WARM,   /* full_scan after an untimed warming scan */
	HW_S_GET_COLD_START,   /* read_samples gets after one cache clear (the cache warms) */
	HW_S_PUT_NOSYNC,       /* put with the store write passed on non-durable */
	HW_S_COUNT,            /* the records of a range of a million keys, by rank */
	HW_S_SYNC,             /* clone of the fixture into LMDB, push of `changes` random updates */
	HW_S_PROOF,            /* key and 100-record range proofs: made, and verified */
	HW_N_SCALE_OPS
};
/* The operations a workload runs when it does not say (the contract's ten). */
#define HW_DEFAULT_SCALE_OPS ((1u << (HW_S_MERGE + 1)) - 1)
extern const char *const hw_scale_op_names[HW_N_SCALE_OPS]; /* "put", "batch", ... */

enum {
	HW_P_APPEND,        /* keys after the last one */
	HW_P_RANDOM,        /* updates of uniformly random existing keys */
	HW_P_CLUSTERED,     /* updates of a contiguous run of existing keys around the middle */
	HW_P_RANDOM_INSERT, /* new keys between random existing ones */
	HW_P_RANDOM_DELETE, /* deletes of random existing keys */
	HW_N_PATTERNS
};
extern const char *const hw_pattern_names[HW_N_PATTERNS]; /* "append", "random", ... */

/* The smallest service value: each carries its key's slot, a generation and a checksum. */
#define HW_SERVICE_VALUE_MIN 16

typedef struct hw_service {
	int enabled;
	uint64_t records; /* records in each tenant's base tree */
	uint32_t value_bytes;
	uint32_t clients[HW_MAX_LIST];
	int n_clients;
	uint32_t pool_sizes[HW_MAX_LIST];
	int n_pool_sizes;
	uint32_t tenants;
	uint32_t hot_roots;    /* shared hot branches */
	double hot_root_share; /* 0..1: share of operations that go to a hot branch */
	uint64_t warmup_ms, duration_ms, operation_timeout_ms;
	uint32_t multi_read_keys, commit_keys, retained_versions, cas_retries;
	uint32_t adapter_batch_items;   /* prolly_pg_options.batch_items */
	uint32_t mix[HW_N_SERVICE_OPS]; /* percentages, total 100 */
	unsigned
	    access; /* bit HW_ACCESS_* of each mode whose cells run (client first); default client */
} hw_service;

typedef struct hw_scale {
	int enabled;
	uint64_t sizes[HW_MAX_LIST];
	int n_sizes;
	uint32_t value_bytes;
	uint32_t runs;
	uint64_t changes; /* edits per batch / diff / merge; 0 = auto (1% of the size, 10..10000) */
	uint64_t read_samples;
	uint32_t concurrency;
	unsigned operations; /* bit mask over hw_scale_op_names */
	unsigned patterns;   /* bit mask over hw_pattern_names */
	double min_free_gb;  /* refuse a size whose estimated footprint leaves less free disk */
} hw_scale;

typedef struct hw_regression {
	double max_throughput_loss_percent;
	double max_p99_increase_percent;
	double max_conflict_rate; /* conflicts / CAS attempts, 0..1 */
	double max_error_rate;    /* errors / attempted operations, 0..1 */
	double max_pg_statements_per_operation;
	uint64_t minimum_percentile_samples;  /* p99 gate only on cells with at least this many */
	double max_relative_qps_loss_percent; /* relative QPS (h_suite.gate_qps) >= 1 - this/100 */
} hw_regression;

/*
 * A suite's own workload section. A suite that lists keys (h_suite.keys) owns the table [NAME]
 * of the workload file: workload.c validates it from the list (unknown key with "did you mean",
 * type, range, names), fills defaults, writes it into the resolved document and hash, accepts
 * `--set NAME.KEY=VALUE`, and fills a config struct of the suite's own (h_suite.config_size
 * bytes) that the suite reads with hw_section(). Nothing in the runner names such a suite.
 * The section goes into the resolved document between [scale] and [regression], every key in
 * list order (so into the config hash); the keys' help lines go into the resolved file's header
 * comment and `harness --help`. A U64_LIST's entries must be distinct. bench/harness/sections.c.
 */
typedef enum {
	HW_K_BOOL,      /* int: 0 or 1 */
	HW_K_U64,       /* uint64_t in [min, max] */
	HW_K_FLOAT,     /* double in [min, max] */
	HW_K_U64_LIST,  /* hw_u64_list: 1..HW_MAX_LIST entries, each in [min, max] */
	HW_K_NAME,      /* unsigned: the index of the name in names */
	HW_K_NAME_LIST, /* unsigned: bit i set for names[i] (at most 32 names); at least one */
} hw_key_kind;

typedef struct hw_u64_list {
	uint64_t v[HW_MAX_LIST];
	int n;
} hw_u64_list;

typedef struct hw_key {
	const char *name; /* "rows_per_commit"; NULL ends a key list */
	hw_key_kind kind;
	size_t offset;            /* offsetof(the suite's config struct, field) */
	double min, max;          /* numbers and list entries */
	const char *def;          /* the default as TOML text: "1000", "[1, 4]", "true", "\"a\"";
	                           * NULL: no default, the file must give the key */
	const char *const *names; /* HW_K_NAME, HW_K_NAME_LIST: the allowed names, NULL-terminated */
	const char *help;         /* one line: a comment of the resolved file and of --help */
} hw_key;

#define HW_MAX_SUITES 8

struct h_suite;

typedef struct hw_workload {
	int schema;
	uint64_t seed;
	unsigned node_size; /* of every prolly store the run creates (prolly_node_size_valid, not 0) */
	hw_service service;
	hw_scale scale;
	hw_regression regression;
	char path[4096];               /* the file as given */
	toml_doc *given;               /* the file as parsed (overrides not applied) */
	toml_doc *resolved;            /* overrides applied and every default filled in */
	char hash[65];                 /* SHA-256 (hex) of the resolved document's canonical text */
	void *sections[HW_MAX_SUITES]; /* suites[i]'s config when it has keys (after resolve) */
	/* The suite table whose [NAME] sections this workload reads: NULL for h_suites (the
	 * harness). A test with suites of its own passes it to hw_workload_load_suites, or sets it
	 * in a zeroed hw_workload before the first hw_workload_set / hw_workload_resolve. */
	const struct h_suite *const *suites;
	/* The memory the harness's process may use in bytes (bench_mem_limit: MemTotal of
	 * /proc/meminfo, or its control group's limit when lower) when the scale suite is to run on
	 * the memory store, which holds every node in that process; 0: not checked. Set it between
	 * hw_workload_load and hw_workload_resolve: resolve then refuses (naming file, line and key)
	 * a size whose base tree alone, HW_SCALE_RECORD_BYTES a record, exceeds it. */
	uint64_t mem_store_ram;
	/* The same for the service suite on the memory store (its one base tree, which the tenants
	 * share: `records` records of HW_SERVICE_RECORD_BYTES). */
	uint64_t mem_store_ram_service;
	/* What the two figures above are, as the refusal names them: bench_mem_limit's source
	 * ("MemTotal", "cgroup memory limit"); NULL is "MemTotal". A static string. */
	const char *mem_store_ram_source;
} hw_workload;

/* Bytes of one record of a scale base tree, roughly: its key (24 bytes, SCALE_KEY_LEN), its
 * value and 16 bytes of node overhead (57.6 MiB was measured for 1M records of 27 bytes). The
 * unit of the scale suite's disk guard and of the memory store's limit (mem_store_ram). */
#define HW_SCALE_RECORD_BYTES(value_bytes) (24 + (uint64_t)(value_bytes) + 16)
/* The same for the service suite's base tree: its 11-byte keys (SVC_KEY_LEN), the value, 16. */
#define HW_SERVICE_RECORD_BYTES(value_bytes) (11 + (uint64_t)(value_bytes) + 16)

/* Reads and validates path: an unknown key, a wrong type or an impossible value fails with err
 * naming file, line and key. Does not resolve (call hw_workload_resolve after overrides). */
int hw_workload_load(hw_workload *w, const char *path, toml_error *err);
/* The same with the sections of the suites of `suites` (NULL-terminated; NULL: h_suites). */
int hw_workload_load_suites(hw_workload *w, const char *path, const struct h_suite *const *suites,
                            toml_error *err);
/* Sets dotted `key` to the TOML value `text` ("[1, 4]", "2000", "true") as a command-line
 * override; `source` names it in errors ("--clients"). Unknown keys fail. */
int hw_workload_set(hw_workload *w, const char *key, const char *text, const char *source,
                    toml_error *err);
/* Validates everything, fills defaults, fills the structs, builds w->resolved and w->hash. */
int hw_workload_resolve(hw_workload *w, toml_error *err);
/* Writes the resolved document (with a comment header) to path. */
int hw_workload_write_resolved(const hw_workload *w, const char *path, toml_error *err);
void hw_workload_free(hw_workload *w); /* NULL-safe; leaves *w zeroed */

/* The command-line shortcuts for common settings, all mapped onto hw_workload_set. kind says how
 * the flag's argument is turned into TOML text: a comma list of integers "1,4" -> [1, 4], of
 * names "put,batch" -> ["put", "batch"], an integer with k/M/G suffixes, a float, a bool. */
typedef enum {
	HW_FLAG_INT,
	HW_FLAG_INT_LIST,
	HW_FLAG_NAME_LIST,
	HW_FLAG_FLOAT,
	HW_FLAG_BOOL
} hw_flag_kind;
typedef struct hw_override_flag {
	const char *flag; /* "clients" (used as --clients) */
	const char *key;  /* "service.clients" */
	hw_flag_kind kind;
	const char *help; /* one line for --help */
} hw_override_flag;
extern const hw_override_flag hw_override_flags[]; /* terminated by a {NULL} entry */
/* Converts a flag argument to TOML text in out; -1 with err on a malformed argument. */
int hw_flag_to_toml(const hw_override_flag *f, const char *arg, char *out, size_t n, char *err,
                    size_t errn);

/* ============================================================================================ */
/* Rows and CSV tables (rows.c)                                                                 */
/* ============================================================================================ */

/* A row under construction: named values, written in the column order of a suite's column list
 * (columns the row does not set are written empty). Values are copied. */
typedef struct hrow hrow;
hrow *hrow_new(void); /* NULL on no memory */
void hrow_free(hrow *r);
void hrow_clear(hrow *r);
void hrow_str(hrow *r, const char *col, const char *v);
void hrow_u64(hrow *r, const char *col, uint64_t v);
void hrow_i64(hrow *r, const char *col, int64_t v);
void hrow_f64(hrow *r, const char *col, double v);    /* "%.6g"-like, exact enough to compare */
const char *hrow_get(const hrow *r, const char *col); /* NULL if unset */

/* Whole CSV files in memory: bench_csv (bench/lib/csv.h). */

/* ============================================================================================ */
/* Result directory (results.c)                                                                 */
/* ============================================================================================ */

/* What a run is; written to run-manifest.txt as "key: value" lines. */
typedef struct hr_manifest {
	int schema; /* HW_SCHEMA */
	char config_hash[65];
	char revision[128]; /* --revision, else `git rev-parse HEAD`, else "unknown" */
	int dirty;          /* the work tree had uncommitted changes (-1 unknown) */
	uint64_t seed;
	char suites[256];    /* the suites run, in h_suites order: "service", "service,scale,insert" */
	char store[16];      /* "postgres", "lmdb", "mem" */
	char baseline[4096]; /* --baseline DIR or "" */
	char started[32], finished[32]; /* UTC ISO 8601; finished "" while running */
} hr_manifest;

typedef struct hr_dir hr_dir;

/*
 * Opens (creating it if needed) the output directory for a run described by m.
 *  - a new or empty directory: writes run-manifest.txt (finished empty), workload.toml (copy of
 *    the given file) and resolved-workload.toml;
 *  - a directory holding a manifest with the same schema, config_hash, revision, store and
 *    suites: resumes. Rows of incomplete cells (see hr_append) and a torn last line are removed
 *    from the raw CSV files; the manifest's started time is kept;
 *  - a manifest that differs in any of those: returns -2 with err saying which field differs
 *    (and both values), having changed nothing in the directory;
 *  - a directory that is not empty and holds no manifest: -2, nothing changed;
 *  - a path that cannot be a directory (a file, under a file, unreachable, too long), or a
 *    directory this process may not read or write in (its mode, a read-only mount): -3, nothing
 *    written (a resumed run's manifest is compared first: another run's directory is -2);
 *  - -1 for any other failure (the lock, reading, writing the manifest or workload files).
 */
int hr_open(hr_dir **out, const char *dir, const hr_manifest *m, const hw_workload *w, char *err,
            size_t errn);
/* 0 if dir is a directory this process may write in; -3 (err says why) if it is missing, not a
 * directory, or one it may not write in (its mode, a read-only mount): the caller's mistake (exit
 * 2), found before anything is written, where the first write failed as if a run had. */
int hr_check_dir(const char *dir, char *err, size_t errn);
const char *hr_path(const hr_dir *d); /* the directory */
/* Writes the manifest again with finished = now. */
int hr_finish(hr_dir *d, char *err, size_t errn);
void hr_close(hr_dir *d); /* NULL ok */

/*
 * Raw rows. file is "service-raw.csv" or "scale-raw.csv"; columns is the suite's column list
 * (NULL-terminated; the header is written when the file is created). A cell is a group of rows
 * sharing the value of column "cell_id"; every row of a cell carries the cell's row count in
 * column "cell_rows". hr_append writes all n rows of one cell with a single write() and
 * fdatasync(), so a cell is on disk entirely or (after a crash) as rows that hr_open discards.
 */
int hr_append(hr_dir *d, const char *file, const char *const *columns, hrow *const *rows, size_t n,
              char *err, size_t errn);
/* Non-zero if a complete cell with this id is already in file (resume: skip it). */
int hr_cell_done(hr_dir *d, const char *file, const char *cell_id);
/* Counts of this invocation: cells measured and cells skipped because they were done. */
void hr_counts(const hr_dir *d, unsigned *measured, unsigned *skipped);
void hr_count_skip(hr_dir *d);

/* The summary file of every suite in h_suites whose raw file exists (hr_write_summary). */
int hr_write_summaries(hr_dir *d, char *err, size_t errn);
struct h_suite;
/* The summary file of one suite from its raw file (nothing when that does not exist). */
int hr_write_summary(hr_dir *d, const struct h_suite *s, char *err, size_t errn);

/* ============================================================================================ */
/* One run per schema (runlock.c)                                                               */
/* ============================================================================================ */

/* Takes, on a new connection to url that *out receives (PQfinish it at the end of the run; the
 * lock goes with it), the session advisory lock of schema for harness runs: 0; -2 when another
 * run holds it for 2 s more (a run that just ended releases it a moment after; err says so;
 * nothing was touched); -3 when schema is empty, over 40 bytes or
 * ends in a suffix the suites add to a run's schema (_ins_plain, _ins_client, _ins_sql, _scale,
 * _scale_plain, _tpcb, _pgbench): another run's schemas could then be this one's (err says so;
 * nothing was touched); -1 when the server cannot be reached. */
struct pg_conn;
int h_schema_lock(struct pg_conn **out, const char *url, const char *schema, char *err,
                  size_t errn);
/* With schema's lock held on c: drops the prolly extension when a killed run left it in a schema
 * this harness installs it in (schema itself, or the insert suite's), saying so in note (""
 * otherwise). 0, or -1 when a statement failed (prolly_last_error says why). */
int h_schema_reclaim(struct pg_conn *c, const char *schema, char *note, size_t n);

/* ============================================================================================ */
/* Environment (env.c)                                                                          */
/* ============================================================================================ */

/* Writes machine.txt, dependencies.txt, binary.sha256 and (url non-NULL: PostgreSQL store)
 * postgres.txt into dir, as "key: value" lines. Keys marked material in he_material_keys
 * decide whether two runs may be compared. Each file is written beside its name and renamed
 * over whatever is there (a FIFO left there is replaced, not opened); one that cannot be
 * written is removed, and the first failure is returned (-1, err). */
int he_write_all(const char *dir, const char *url, const char *schema, char *err, size_t errn);
/* NULL-terminated lists of the keys whose difference is a material mismatch. */
extern const char *const he_material_machine[];
extern const char *const he_material_postgres[];
/* Reads "key: value" lines; returns a malloc'd value or NULL. */
char *he_read_value(const char *file, const char *key);

/* ============================================================================================ */
/* PostgreSQL counters (pgstat.c)                                                               */
/* ============================================================================================ */

typedef struct hp_snapshot {
	int valid;           /* 0 when the store is not PostgreSQL or the query failed */
	double stmt_calls;   /* sum of pg_stat_statements.calls in this database (NaN when the
	                           extension is unavailable: never a false 0) */
	double stmt_exec_ms; /* sum of total_exec_time (NaN likewise) */
	double wal_bytes;    /* the WAL insert position (cluster-wide, no statistics delay) */
	double xact_commit, xact_rollback, blks_hit, blks_read; /* pg_stat_database */
	double db_bytes, table_bytes, index_bytes; /* database; node+ref tables (heap+toast); indexes */
} hp_snapshot;

typedef struct hp_conn hp_conn;
/* A monitoring connection (its own statements are excluded from stmt_calls). */
int hp_connect(hp_conn **out, const char *url, const char *schema, char *err, size_t errn);
void hp_close(hp_conn *c); /* NULL ok */
/* Non-zero if pg_stat_statements can be read through c. */
int hp_statements_available(const hp_conn *c);
/* Takes a snapshot (pg_stat_statements is read after pg_stat_clear_snapshot()). Sets
 * s->valid = 0 and returns -1 on failure. */
int hp_snap(hp_conn *c, hp_snapshot *s, char *err, size_t errn);
/* Writes the delta b - a into row: pg_calls, pg_exec_ms, wal_bytes, xact_commit, xact_rollback,
 * blks_hit, blks_read, and the sizes before/after: db_bytes_before, db_bytes_after,
 * table_bytes_before, table_bytes_after, index_bytes_before, index_bytes_after. Writes nothing
 * if either snapshot is invalid. */
void hp_delta_row(hrow *row, const hp_snapshot *a, const hp_snapshot *b);
/* The column names hp_delta_row fills, NULL-terminated (suites append them to their lists). */
extern const char *const hp_columns[];

/* ============================================================================================ */
/* Runs (main.c builds it, the suites read it)                                                  */
/* ============================================================================================ */

typedef struct h_run {
	const hw_workload *w;
	hr_dir *out;
	const char *store;   /* "postgres", "lmdb", "mem" */
	const char *url;     /* PostgreSQL conninfo (store "postgres"), else NULL */
	const char *schema;  /* PostgreSQL schema for the harness's tables ("prolly_bench") */
	const char *scratch; /* a scratch directory (LMDB files) */
	int verbose;
	/* Progress (stderr): the suite calls h_progress at the start of each cell. */
	unsigned cells_total, cells_done;
	uint64_t started_ns;
} h_run;

/* "[service 3/8, 41 s elapsed, ~1 min 50 s left] clients=8 pool=8" on stderr. */
void h_progress(h_run *run, const char *suite, const char *what);

/* ============================================================================================ */
/* Suites (runner.c runs them; docs/benchmarks.md, "Adding a suite")                            */
/* ============================================================================================ */

/* How one summary row is made from the raw rows of one cell (rows[0..n) index raw). */
typedef void (*h_summary_fn)(hrow *out, const bench_csv *raw, const size_t *rows, size_t n);

/*
 * A suite is this table and nothing else; the runner owns the flags, the result directory,
 * resume, progress, the summaries, the regression gates and the report.
 *
 *  Required:
 *   name      "service": --suite NAME, the manifest's suites, progress lines
 *   raw_file  "service-raw.csv": where the suite's rows go (hr_append), one file per suite
 *   columns   the row schema of raw_file (NULL-terminated). Must hold cell_id (a cell is the
 *             rows sharing it; resume skips a cell whose rows are all on disk), cell_rows (the
 *             cell's row count) and validated ("1" when the suite's own checks of what the cell
 *             read and wrote passed; any other value fails the run with exit status 5)
 *   enabled   non-zero when the workload enables the suite ([NAME] enabled = true)
 *   cells     how many cells run() would measure (progress, --dry-run)
 *   run       measures every cell, in order: skips one that h_cell_done() finds on disk
 *             (counting it with h_cell_skipped()), calls h_progress() as it starts one and
 *             h_emit() with its rows when it ends (one call per cell). Failed
 *             operations inside a cell are data (rows), not failures. Returns 0 when every cell
 *             ran, -1 with err when the suite had to stop.
 *  Optional (NULL: the runner's default):
 *   summary_file, summary_columns, summary
 *             the summary file, its columns and its row maker; default "NAME-summary.csv"
 *             holding each cell's last raw row (all of columns)
 *   gate_throughput, gate_p99, gate_p99_unit, gate_rates
 *             summary columns the regression gates compare with a baseline (throughput loss,
 *             p99 increase) and whether the conflict and error rate gates apply; default no
 *             gates for the suite
 *   report    writes the suite's section of report.md; default a table of the summary file
 *   keys, config_size, check
 *             the suite's own workload section [NAME] (hw_key above) and the check of its
 *             values together
 *   gate_qps, qps_key
 *             relative QPS: with --baseline, each row of the summary whose qps_key columns
 *             (NULL-terminated; NULL: cell_id) equal a baseline row's gets baseline_qps (the
 *             baseline's gate_qps value) and relative_qps (this run's over it) written into
 *             the summary file, and the gate [regression] max_relative_qps_loss_percent fails
 *             the run when a relative_qps is below 1 - limit/100; hrep_relative_qps draws them
 */
typedef struct h_suite {
	const char *name;
	const char *raw_file;
	const char *const *columns;
	/* Whether the workload turns the suite on; NULL: its section's BOOL key "enabled"
	 * (hw_suite_enabled). */
	int (*enabled)(const hw_workload *w);
	unsigned (*cells)(const hw_workload *w);
	int (*run)(h_run *run, char *err, size_t errn);
	const char *summary_file;
	const char *const *summary_columns;
	h_summary_fn summary;
	const char *gate_throughput, *gate_p99, *gate_p99_unit;
	int gate_rates;
	int (*report)(FILE *f, const char *dir, char *err, size_t errn);
	const hw_key *keys; /* its workload section (see hw_key); NULL: none of its own */
	size_t config_size; /* bytes of the config struct the keys fill */
	/* Checks the section's values together, what no one key's range can say (NULL: nothing
	 * to check): non-zero with msg (msgn bytes) and in at[0], at[1] the section's keys involved
	 * (the error points at the first the file holds; at[1] may stay NULL). Called when the
	 * workload is read, so that --dry-run refuses what the run would. */
	int (*check)(const void *config, const char *at[2], char *msg, size_t msgn);
	const char *gate_qps;       /* summary column compared as relative QPS; NULL: none */
	const char *const *qps_key; /* summary columns naming a cell across runs; NULL: cell_id */
} h_suite;

/* The config struct of suite s filled from the resolved workload (NULL before
 * hw_workload_resolve or for a suite without keys). */
const void *hw_section(const hw_workload *w, const h_suite *s);
/* Whether w turns suite s on: s->enabled(w), or without it the BOOL key "enabled" of its section
 * (0 when it has none, or before hw_workload_resolve). */
int hw_suite_enabled(const hw_workload *w, const h_suite *s);

/* Every suite, in run order, NULL-terminated (runner.c). */
extern const h_suite *const h_suites[];
const h_suite *h_suite_find(const char *name); /* NULL if none */
/* The summary file of s: s->summary_file or "NAME-summary.csv" (out has n bytes). */
void h_summary_file(const h_suite *s, char *out, size_t n);

/* For a suite's run(): non-zero if the cell is already complete on disk (resume); counts a
 * cell skipped for that reason; writes the n rows of one finished cell (hr_append: all of them
 * or, after a crash, none that a resume keeps). */
int h_cell_done(const h_run *run, const h_suite *s, const char *cell_id);
void h_cell_skipped(const h_run *run);
int h_emit(const h_run *run, const h_suite *s, hrow *const *rows, size_t n, char *err, size_t errn);

/* The suites, in the order of h_suites (runner.c). */
extern const h_suite hsvc_suite;  /* suites/service.c */
extern const h_suite hsc_suite;   /* suites/scale.c */
extern const h_suite hins_suite;  /* suites/insert.c: the insert benchmark (insert_int.h) */
extern const h_suite hsb_suite;   /* suites/sysbench.c */
extern const h_suite htpcb_suite; /* suites/tpcb*.c (tpcb_int.h) */
int hsvc_run(h_run *run, char *err, size_t errn);
int hsc_run(h_run *run, char *err, size_t errn);
unsigned hsvc_cells(const hw_workload *w);
unsigned hsc_cells(const hw_workload *w);
extern const char *const hsvc_columns[];
extern const char *const hsc_columns[];
/* Their summaries (summary.c) and report sections (report.c). */
void hr_service_summary(hrow *out, const bench_csv *raw, const size_t *rows, size_t n);
void hr_scale_summary(hrow *out, const bench_csv *raw, const size_t *rows, size_t n);
extern const char *const hr_service_summary_columns[];
extern const char *const hr_scale_summary_columns[];
int hrep_service_section(FILE *f, const char *dir, char *err, size_t errn);
int hrep_scale_section(FILE *f, const char *dir, char *err, size_t errn);

/* Runs the selected suites (bit i: h_suites[i]) of run in order, stopping at the first that
 * fails (h_run_suite). 0, or -1 with err naming the suite. */
int h_run_suites(h_run *run, unsigned selected, char *err, size_t errn);
int h_run_suite(h_run *run, const h_suite *s, char *err, size_t errn);
/* Rows of s's raw file in dir whose validated column is not "1"; *rows counts all of them (0
 * when the file does not exist). */
int h_unvalidated_rows(const char *dir, const h_suite *s, size_t *rows);

/* ============================================================================================ */
/* Regression gates (gates.c) and report (report.c)                                             */
/* ============================================================================================ */

/* Compares dir's summaries with baseline's, cell by cell, under w->regression. Writes
 * regression.md into dir and prints the table of what fell short to f.
 * Returns 0 all gates passed (or exploratory), 1 a gate tripped, 2 the environments differ
 * materially and allow_mismatch is 0 (nothing compared), -1 an error (err). */
int hg_compare(const char *dir, const char *baseline, const hw_regression *g, int allow_mismatch,
               FILE *f, char *err, size_t errn);
/* The same over another suite table (NULL-terminated; tests with suites of their own). */
int hg_compare_suites(const char *dir, const char *baseline, const struct h_suite *const *suites,
                      const hw_regression *g, int allow_mismatch, FILE *f, char *err, size_t errn);

/* report.md and the charts (*.svg) in dir, from the CSV files there. */
int hrep_write(const char *dir, char *err, size_t errn);
/* Writes "| s " to f: one cell of a Markdown table row, with '|' escaped and line breaks as
 * spaces (the row's closing "|" is the caller's). */
void hrep_md_cell(FILE *f, const char *s);

/*
 * For a suite's report section: its relative QPS against the baseline (the relative_qps and
 * baseline_qps columns hg_compare wrote into s's summary file in dir), as in the sysbench
 * reports. For each value of group_col (in order of first appearance; NULL: one group), a
 * Markdown table with columns label_col, series_col (if not NULL), this run's gate_qps, the
 * baseline's and the relative QPS; and the file NAME-relative-qps.svg, one bar chart per group
 * (categories: label_col values, bars: series_col values), y axis starting near 1.0, linked
 * from f. Writes a one-line note instead when no row has a relative QPS (no --baseline).
 * 0, or -1 with err.
 */
int hrep_relative_qps(FILE *f, const char *dir, const h_suite *s, const char *group_col,
                      const char *label_col, const char *series_col, char *err, size_t errn);

#endif
