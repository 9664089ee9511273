/*
 * engine.h - internals of the scale engine, shared by its files (not for callers: see scale.h).
 *
 *   fixture.c  records (keys, values), read and edit samples, the store of a fixture (its close
 *              also closes history.c's local clone), the measurement of a run (bench_stopwatch,
 *              counters, latency histogram), error notes; it calls none of the files below
 *   cells.c    the Prolly cells: one function per op (sc_cell_fns)
 *   history.c  the cells of history between stores: sync (clone, push) and proof
 *   plain.c    the plain-table baseline (pg only): its cells (sc_plain_fns), its schema
 *   sql.c      the extension's contender (pg only): its cells (sc_sql_fns), its setup
 *   pgcells.c  what plain.c and sql.c share: statements, bytea[] parameters, the cells of the
 *              same shape (sc_pg_*)
 *   matrix.c   the matrix: cells -> runs -> rows, the hooks, fixtures in child processes
 *
 * A cell function runs one run of its op: untimed setup, sc_measure_begin(), the timed work,
 * sc_measure_end(), c->ops, then validation through sc_invalid(); engine errors go through CK()
 * (which records the error in the cell's note and jumps to `out`). Functions with the sc_ prefix
 * are internal to the engine (libbench.a); everything else is static in its file.
 */
#ifndef BENCH_SCALE_ENGINE_H
#define BENCH_SCALE_ENGINE_H

#include "buf.h"
#include "clock.h"
#include "hdr.h"
#include "pgconn.h"
#include "proc.h"
#include "prolly.h"
#include "rng.h"
#include "scale.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_LEN SCALE_KEY_LEN
#define SLOT_STEP 16 /* record i has slot 16 i: room for inserts between records */

typedef struct sc_ctx sc_ctx; /* one scale_run (matrix.c) */

/* ---- fixture ------------------------------------------------------------------------------- */

/* One store with the base tree of one size. */
typedef struct fixture {
	const scale_config *cfg;
	sc_ctx *ctx;
	int store;
	uint64_t n;
	size_t vlen; /* cfg->value_bytes */
	prolly_db *db;
	bench_store *ts;
	char path[4200];       /* directory of the open LMDB store, "" otherwise */
	char workdir[4096];    /* the run's LMDB scratch directory */
	char schema[96];       /* schema of the open pg store, "" otherwise */
	char plain_schema[96]; /* schema of the plain baseline table, "" when none */
	PGconn *admin;         /* pg: connection for the baseline and for dropping schemas */
	char plain_table[200]; /* "schema".kv */
	int plain_prepared;
	int sql_ready;             /* the extension's contender can run (sql.c) */
	char sql_why[200];         /* why not, when it cannot */
	prolly_id sql_base_commit; /* the commit of the base tree its reads name */
	unsigned seq;
	prolly_id base;
	int have_base;
	char shape[160]; /* "height 3, 7719 nodes, 30.2 MiB" of the base tree */
	/* Root of base + the whole edit set of (pattern, run), made by batch or on demand. */
	prolly_id edited[SCALE_N_PATTERNS][SCALE_MAX_RUNS];
	unsigned char have_edited[SCALE_N_PATTERNS][SCALE_MAX_RUNS];
	/* history.c: the base tree as a commit on branch main (made once, untimed), the "laptop"
	 * clone the push cell pushes from (an LMDB store, made once; sc_fixture_close closes it),
	 * and the full_scan cell's median, which the clone cell compares with (0: no full_scan row
	 * in this fixture). */
	prolly_id base_commit;
	int have_base_commit;
	prolly_db *local;
	char local_path[4200];
	double scan_ms;
} fixture;

int sc_fixture_open(fixture *fx);   /* an empty store of fx->store */
void sc_fixture_close(fixture *fx); /* closes the store, removes its directory or schema */
void sc_drop_schema(fixture *fx, const char *schema); /* warning only on failure */

/* ---- records ------------------------------------------------------------------------------- */

void sc_make_key(unsigned char *out, uint64_t slot);
/* vlen bytes of the value of slot at generation gen (0: the base tree). */
void sc_make_value(unsigned char *out, size_t vlen, uint64_t seed, uint64_t slot, unsigned gen);
uint64_t sc_key_slot(const unsigned char *k); /* the slot of a benchmark key */

/* ---- cells and runs ------------------------------------------------------------------------ */

typedef struct sample {
	double ms;
	double cpu_ms;
	prolly_stats st;
	prolly_pg_stats pg; /* the PostgreSQL store's own counters (0 for other stores) */
	uint64_t read_ns, write_ns, durable_writes;
	uint64_t minflt;
	double srv_ms;         /* server CPU ms, -1 if unknown */
	double p50_us, p99_us; /* per-operation latency (0 when not recorded) */
	uint64_t lat_n;
	char info[160]; /* what the run found, for the row's note when it is valid ("" if none) */
} sample;

typedef struct cell {
	fixture *fx;
	int op, pattern; /* pattern -1 for cells without one */
	int part;        /* the index in scale_op_parts[op], -1 for an op without parts */
	int plain;       /* the plain-table baseline's analogue of op */
	int sql;         /* the extension's analogue of op */
	unsigned run;
	uint64_t ops; /* operations in one run */
	int valid;
	char note[200];
	bench_stopwatch sw;
	uint64_t cpu0, flt0;
	double srv0;
	hdr_hist *lat; /* per-operation latencies of this run, or NULL (not recorded) */
	sample cur;
} cell;

/* Records an engine error (keeps the first one) and returns rc. */
int sc_fail(cell *c, int rc, const char *what);
/* Marks the run invalid with a reason (validation failure, not an engine error). */
void sc_invalid(cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CK(call, what)                                                                             \
	do {                                                                                           \
		rc = (call);                                                                               \
		if (rc != 0) {                                                                             \
			sc_fail(c, rc, what);                                                                  \
			goto out;                                                                              \
		}                                                                                          \
	} while (0)

void sc_measure_begin(cell *c);
void sc_measure_end(cell *c);

/* Per-operation latency: t = sc_lat_start(c); ...; sc_lat_stop(c, t). No clock is read when
 * latencies are not recorded. */
static inline uint64_t sc_lat_start(const cell *c)
{
	return c->lat ? bench_now_ns() : 0;
}

static inline void sc_lat_stop(cell *c, uint64_t t0)
{
	if (c->lat)
		hdr_record(c->lat, bench_now_ns() - t0);
}

/* A deterministic stream per (seed, size, what, pattern, run). */
void sc_cell_rng(bench_rng *r, const cell *c, uint64_t what);
/* Points ref at root and commits txn. */
int sc_publish(prolly_txn *txn, const char *ref, const prolly_id *root);

/* ---- samples ------------------------------------------------------------------------------- */

typedef struct readset {
	size_t n;
	unsigned char *keys; /* n * KEY_LEN */
	unsigned char *vals; /* n * vlen: the expected values */
	prolly_slice *slices;
	size_t mismatches, found;
} readset;

/* n random base records (with repetition) from the stream `what` (the same sample for every
 * read cell of a run with the same what). */
int sc_readset_random(readset *r, cell *c, size_t n, uint64_t what);
void sc_readset_free(readset *r);
#define SC_READS 0x7265616473ull /* "reads": the stream of the point-read cells */

typedef struct editset {
	size_t n;
	uint64_t *slots;
	unsigned char *keys; /* n * KEY_LEN */
	unsigned char *vals; /* n * vlen */
	prolly_edit *edits;
	prolly_diff_kind kind; /* what a diff from base reports per edit */
	int64_t per_edit;      /* record count change per edit: +1, 0, -1 */
} editset;

/* The edits of (pattern, run): distinct keys, in the order a client would send them. Variant 1
 * (merge) samples other keys and writes another generation. */
int sc_editset_make(editset *e, cell *c, unsigned variant);
void sc_editset_free(editset *e);

/* The start of the range cell's window of len records (the same for Prolly and plain). */
uint64_t sc_range_start(const cell *c, size_t len);
/* The count cell's range, the same for every contender: [lo, hi) holding the records of
 * min(SCALE_COUNT_RANGE, n) consecutive slots from sc_range_start; returns that count. */
uint64_t sc_count_range(const cell *c, unsigned char *lo, unsigned char *hi);
/* Root of base + all of e (the C client's), committed; made once per (pattern, run). */
int sc_edited_root(cell *c, const editset *e, prolly_id *out);
/* A full scan must have seen every record of the fixture, from its first key to its last. */
void sc_check_full_scan(cell *c, const fixture *fx, uint64_t count, const unsigned char *first,
                        const unsigned char *last);
/* qsort order of uint64_t (slots). */
int sc_u64_cmp(const void *a, const void *b);

/* ---- the cell tables ----------------------------------------------------------------------- */

typedef int (*sc_cell_fn)(cell *c);
extern const sc_cell_fn sc_cell_fns[SCALE_N_OPS];  /* cells.c */
extern const sc_cell_fn sc_plain_fns[SCALE_N_OPS]; /* plain.c; NULL: no analogue */
extern const sc_cell_fn sc_sql_fns[SCALE_N_OPS];   /* sql.c; NULL: no analogue */
int sc_cell_sync(cell *c);                         /* history.c: the sync parts */
int sc_cell_proof(cell *c);                        /* history.c: the proof parts */

/* sql.c: CREATE EXTENSION in the store's schema, the base commit, the prepared statements.
 * 0, or -1 with the reason in fx->sql_why (the cells then fail with it). */
int sc_sql_setup(fixture *fx);

/* plain.c: the admin connection and (unless no_baseline) the baseline's schema. 0, or -1 when
 * the server cannot be reached or the schema not made (a message on stderr). */
int sc_plain_connect(fixture *fx);
int sc_plain_schema(fixture *fx);
void sc_plain_end(fixture *fx); /* drops the baseline schema, closes the connection */
/* cfg->pg_statements: the fixture's top statements by total execution time (stderr). */
void sc_pg_top_statements(fixture *fx);

/* ---- the two PostgreSQL contenders (pgcells.c) --------------------------------------------- */

/* A statement of a contender: its name, its text (one %s: the plain table, or the schema of the
 * extension), its parameter count. */
typedef struct sc_pg_stmt {
	const char *name, *fmt;
	int nparams;
} sc_pg_stmt;

/* Prepares stmts[0..n) on pc, each text's %s replaced by arg. 0, or the error of the first that
 * failed (PROLLY_EINVAL: the text is too long; PROLLY_ESTORE), whose name *failed gets. */
int sc_pg_prepare(PGconn *pc, const sc_pg_stmt *stmts, size_t n, const char *arg,
                  const char **failed);

/* One contender, as its shared cells need it. */
typedef struct sc_pg_side {
	int (*ready)(cell *c);  /* the untimed first step of every cell (statements prepared) */
	const char *ready_what; /* the note when it fails */
	const char *ref;        /* the text parameter before all others (the extension: the ref read) */
	int scan_max;           /* the scan statement takes the row limit as a last (text) parameter */
} sc_pg_side;

/* The prepared statement name on the admin connection, binary: s->ref (when set), then the n
 * parameters v/l (at most 4 in all). */
int sc_pg_run(cell *c, const sc_pg_side *s, const char *name, int n, const char *const *v,
              const int *l, PGresult **res);
/* bytea[] of the keys of r, in order. 0 or PROLLY_ENOMEM. */
int sc_pg_keys_array(bench_buf *b, const readset *r);
/* bytea[] of the keys of edits and (vb not NULL) of their values, a delete's value NULL. */
int sc_pg_edit_arrays(bench_buf *kb, bench_buf *vb, const prolly_edit *edits, size_t n);
/* The put cells' edits: the edit set (variant 0) and *k, cfg->puts but at most all of it
 * (distinct keys); an empty set is an error (noted in c). */
int sc_pg_put_edits(cell *c, editset *e, size_t *k);

/* The cells of the same shape; what names the statement in notes:
 *   sc_pg_get    cfg->reads statements of one key each (the reads sample), one value back each
 *   sc_pg_scan   one statement over the range cell's window [lo, hi), the rows in key order
 *   sc_pg_count  one statement over the count cell's range, the count back as text */
int sc_pg_get(cell *c, const sc_pg_side *s, const char *name, const char *what);
int sc_pg_scan(cell *c, const sc_pg_side *s, const char *name, const char *what);
int sc_pg_count(cell *c, const sc_pg_side *s, const char *name, const char *what);

#endif /* BENCH_SCALE_ENGINE_H */
