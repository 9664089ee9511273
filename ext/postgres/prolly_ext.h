/*
 * prolly_ext.h - the PostgreSQL extension's shared declarations (ext/postgres/).
 *
 * Its files, one job each:
 *   guard.c  the guard between the engine and PostgreSQL: errors raised by PostgreSQL inside
 *            store callbacks are caught and kept, the engine unwinds on a return code, and the
 *            kept error is raised again once the engine has returned; engine codes become
 *            SQLSTATEs.
 *   backend.c  what a backend keeps between calls: the prolly_db handles (one per node size in
 *            use) and their cache size, the tables of the call in progress, the work memory of
 *            store calls, the gc epoch, the statements planned once, the trees of commits read
 *            before.
 *   store.c  the store on the tables of the extension's schema (read through the primary-key
 *            indexes, or through SPI: prolly.node_reader), the schema version check, opening a
 *            call, the settings.
 *   store_write.c  the store's writes: the write protocol of a SQL write function, write()
 *            through the schema's prolly_write, the cache kept true across rollbacks.
 *   args.c   arguments shared by the SQL functions (refs, branches, keys), ids as text, the
 *            publishing of a write.
 *   rows.c   result rows from engine callbacks, times and messages as SQL values.
 *   read.c   the SQL reads of one tree or of refs: get, get_many, scan, count, diff, branches,
 *            tags, resolve.
 *   history.c  the SQL reads of history: log, history, reflog, merge_base, conflicts.
 *   inspect.c  the SQL reads that walk whole trees: stats, verify.
 *   write.c  the SQL writes of edits: commit, put, delete, delete_range.
 *   refs.c   the SQL writes that move refs otherwise: branch, tag, reset, merge, revert,
 *            cherry-pick, and the deletes.
 *
 * Rules for every engine call made from SQL (see docs/sql.md, "Inside the server"):
 *   1. pgx_begin() before the first engine call of a function call;
 *   2. every callback the engine makes into this code (store functions, result callbacks) runs
 *      its PostgreSQL work inside PG_TRY and, in PG_CATCH, returns pgx_keep_error(); once an
 *      error is kept, every later callback returns PROLLY_ESTORE at once without touching the
 *      database;
 *   3. after the engine returns, the caller frees what the engine gave it, then pgx_check(rc):
 *      the kept error is raised again as it was (its SQLSTATE, message, detail), or a failing
 *      rc becomes an ERROR with the SQLSTATE of pgx_sqlstate().
 * The engine allocates with malloc and never sees a longjmp, so nothing of it leaks.
 */
#ifndef PROLLY_EXT_H
#define PROLLY_EXT_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"

#include "prolly/pg_sql.h"
#include "prolly/store.h"

/* The store schema versions this extension reads (docs/postgres.md, "Schema"): the current one,
 * and back to the oldest whose tables and functions it uses the same way (version 5 changed only
 * how the id column is stored, version 6 only the functions' own search_path, and version 7 is
 * 6 made with another node size than 4096, kept in its meta row 'node_size': trees of that
 * store are built with that size, docs/sql.md, "Node size"). */
#define PGX_SCHEMA_VERSION 7
#define PGX_SCHEMA_OLDEST 4
#define PGX_SCHEMA_NODE_SIZE 7 /* the first version with a node_size row */

/* A merge that left conflicts (prolly_merge with resolve 'fail'): SQLSTATE PY001, a class of
 * the extension's own (docs/sql.md, "Errors"). */
#define PGX_ERRCODE_MERGE_CONFLICT MAKE_SQLSTATE('P', 'Y', '0', '0', '1')

/* ---- guard.c ---- */

/* Starts a guarded call: forgets any error kept by an earlier one. */
void pgx_begin(void);

/* Non-zero when an error is kept (callbacks then return PROLLY_ESTORE at once). */
int pgx_failed(void);

/* In a PG_CATCH block: keeps the current error (copied into a context that outlives the call),
 * clears PostgreSQL's error state, switches back to cxt and returns PROLLY_ESTORE. */
int pgx_keep_error(MemoryContext cxt);

/* After the engine returned rc: raises the kept error if any, else an ERROR for a failing rc
 * ("prolly: <what>: <the engine's message>"); returns when neither. */
void pgx_check(int rc, const char *what);

/* prolly_options.interrupt of the backend's handles: the engine asks it before each batch of
 * node loads, the cache's included. A pending interrupt (a cancel, statement_timeout) is
 * processed there under the guard and its error kept (PROLLY_ESTORE), so that the engine unwinds
 * and pgx_check raises it: a long merge over cached nodes stops as promptly as a scan. */
int pgx_interrupt(void *payload);
/* The SQLSTATE an engine error code is reported with (docs/sql.md, "Errors"). */
int pgx_sqlstate(int rc);

/* A caller's argument (a ref, a name) as a message quotes it: whole up to PGX_SHOWN_MAX bytes,
 * else its first characters within that many bytes, "...", and its length ("(100000 bytes)"),
 * so that a long argument does not come back as a long message. palloc'd. */
#define PGX_SHOWN_MAX 64
char *pgx_shown(const char *s);

/* The engine's last message, fit for a PostgreSQL message: a byte that is not part of a valid
 * character of the database's encoding (the engine cuts long names at a byte count) becomes
 * '?'. palloc'd. */
char *pgx_engine_message(void);

/* ---- args.c ---- */

/* Argument argno as a C string (palloc'd); SQL NULL is 22004 "prolly: WHAT must not be NULL". */
char *pgx_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);

/* Whether argument argno was given: declared, and not SQL NULL. A database keeps the declarations
 * of the script its CREATE EXTENSION ran, and earlier scripts of version 0.1 declared fewer
 * arguments (prolly_commit without expected, then without merge), which the library of a later
 * build is called with: fcinfo holds only the arguments declared. */
bool pgx_arg_given(FunctionCallInfo fcinfo, int argno);

/* A branch to write: a valid name (22023 otherwise, the engine's reason in the message); ref
 * receives "refs/heads/NAME". */
char *pgx_branch_arg(FunctionCallInfo fcinfo, int argno, const char *what,
                     char ref[PROLLY_MAX_REF_NAME + 1]);

/* An id as 64 hex digits. */
text *pgx_hex_text(const prolly_id *id);

/* Publishes txn (whose only ref update moves one ref); a lost compare-and-swap, impossible while
 * the ref row is locked unless the ref was created meanwhile, keeps the store's message. */
int pgx_publish(prolly_txn *txn);
/* A key argument (a key or a bound): NULL for SQL NULL when nullable, else 22004 "prolly: WHAT
 * must not be NULL"; 54000 when longer than PROLLY_MAX_KEY. Detoasted, not copied. */
bytea *pgx_key_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool nullable);
/* Resolves ref to its commit and, when tree is not NULL, the commit's tree. An unknown ref is
 * 42704, a malformed one 22023 (pgx_sqlstate), raised naming the ref. The ref is read in the
 * statement's snapshot every time; the commit, immutable, only the first time the backend meets
 * it (pgx_commit_tree). */
void pgx_resolve_ref(prolly_db *db, const char *ref, prolly_id *commit, prolly_id *tree);

/* ---- rows.c ---- */

/* The rows of a materialized set-returning function (its tuplestore). */
typedef struct pgx_rows {
	ReturnSetInfo *rsi;
	MemoryContext row_cxt; /* reset after every row */
	int64 left;            /* rows still wanted (pgx_rows_counted); -1: no limit */
} pgx_rows;
#define PGX_ROW_MAX 7 /* columns of the widest row (prolly_reflog) */
/* Fills the values and nulls of one row from item (and the callback's payload), in memory that
 * is reset after the row. */
typedef void (*pgx_row_fill_fn)(void *payload, const void *item, Datum *values, bool *nulls);
/* Makes the function's result a tuplestore (InitMaterializedSRF); left is -1. */
void pgx_rows_init(pgx_rows *r, FunctionCallInfo fcinfo);
/* One row, outside engine callbacks (PostgreSQL errors are raised). */
void pgx_rows_put(pgx_rows *r, Datum *values, bool *nulls);
/* From an engine callback, under the guard (rule 2): one row built by fill. 0, or PROLLY_ESTORE
 * with the error kept. Checks for interrupts. */
int pgx_rows_emit(pgx_rows *r, pgx_row_fill_fn fill, void *payload, const void *item);
/* The same, counting r->left down: 1 (stop the engine's walk) once no more rows are wanted. */
int pgx_rows_counted(pgx_rows *r, pgx_row_fill_fn fill, void *payload, const void *item);
/* An int max_rows argument: -1 for SQL NULL (no limit); a negative one is 22023. */
int64 pgx_max_rows_arg(FunctionCallInfo fcinfo, int argno);
/* A commit message or another stored string (bytes) as text, which must be valid in the database
 * encoding: bytes that are not part of a valid character are shown as \xHH, the characters
 * around them as they are. */
Datum pgx_message_datum(const char *msg);
/* A time in microseconds since 1970 (any int64: a commit made by hand or by another
 * implementation) as a timestamptz; one before the type's first day (4714 BC) is -infinity
 * rather than a wrapped or failing value. */
TimestampTz pgx_timestamp_of(int64_t unix_us);

/* ---- store.c ---- */

/* Where the tables are and what the caller may do, for one function call. */
typedef struct pgx_tables {
	Oid nsp;   /* the extension's schema: the schema of the function called */
	Oid nodes; /* its tables */
	Oid refs;
	Oid meta;
} pgx_tables;

/* Finds the tables of the schema of the function being called, checks that the caller may
 * SELECT them and that the store's schema version is PGX_SCHEMA_OLDEST to PGX_SCHEMA_VERSION,
 * with a valid node size (once per transaction), and returns the backend's handle of the store's
 * node size (pgx_handle), opened on first use with PROLLY_DB_NO_THREADS and the cache size of
 * prolly.cache_size. Raises an ERROR for a missing store, another schema version, a version-7
 * store without a valid node_size row (XX001) or a missing privilege. Calls pgx_begin(). *out
 * receives the tables (for pgx_resume). */
prolly_db *pgx_open(FunctionCallInfo fcinfo, pgx_tables *out);

/* For the later calls of a set-returning function: pgx_begin(), and the store reads the tables
 * found by the first call's pgx_open. */
void pgx_resume(const pgx_tables *t);

/* pgx_open for a write function: also refuses a read-only transaction (25006) and a caller
 * without INSERT on nodes or INSERT and UPDATE on refs (42501). fname names the function. */
prolly_db *pgx_open_write(FunctionCallInfo fcinfo, pgx_tables *out, const char *fname);

/* Before a write function's first engine call: takes the writers' shared lock against gc, locks
 * the row of ref (a full ref name, "refs/heads/NAME", not NULL; the row may be absent) FOR
 * UPDATE, and pushes a fresh snapshot (READ COMMITTED) so that the engine builds on the head the
 * lock waited for. Under REPEATABLE READ or SERIALIZABLE, where the engine reads in the
 * transaction's snapshot, raises 40001 when a gc bumped the epoch after that snapshot. The
 * engine's writes then move refs by the schema's compare-and-swap (store_write.c). PostgreSQL
 * errors are raised directly. */
void pgx_write_lock(const char *ref);

/* After the engine returned (before pgx_check): pops the snapshot. The locks stay until the
 * transaction ends. */
void pgx_write_unlock(void);

/* The gc epoch of the call's store as committed now (the latest snapshot, not the caller's):
 * under REPEATABLE READ or SERIALIZABLE the transaction's snapshot may predate a gc. */
uint64_t pgx_epoch_latest(void);

/* Registers the extension's settings and transaction callbacks (from _PG_init). */
void pgx_define_settings(void);

/* ---- backend.c ---- */

/* Registers prolly.cache_size (from pgx_define_settings). */
void pgx_define_backend_settings(void);

/* While a cursor (or anything else holding a handle across calls) is open on db, that handle is
 * not replaced when prolly.cache_size changes. Each pgx_hold(db) is ended by one
 * pgx_release(db) with the same db. */
void pgx_hold(prolly_db *db);
void pgx_release(prolly_db *db);

/* The call in progress reads the tables t (pgx_open and pgx_resume, after pgx_begin); they stay
 * until the next call begins. pgx_call() returns them. */
void pgx_call_begin(const pgx_tables *t);
const pgx_tables *pgx_call(void);

/* The backend's handle of node_size (a size prolly_node_size_valid accepts, not 0) on the store
 * make() builds: one per node size in use (at most four), each shared by every store schema of
 * that size (the store's functions read the tables of the call in progress, pgx_call), as the
 * engine builds every tree of a handle with the handle's size. Opened on first use of its size
 * with PROLLY_DB_NO_THREADS and a cache of prolly.cache_size (so the setting is a budget per
 * node size in use), opened again when that setting changed and nothing holds the handle
 * (pgx_hold). Raises an ERROR if opening fails. */
prolly_db *pgx_handle(prolly_store *(*make)(void), unsigned node_size);

/* The gc epoch the schema check read: kept for the store to report (pgx_epoch), and when it
 * moved, the commits' trees kept under the earlier one are forgotten. */
void pgx_epoch_read(uint64_t e);

/* The work memory of store calls (pgx_work_begin switches nothing; the caller switches to
 * pgx_work_cxt() inside its PG_TRY, as PGX_STORE_CALL below does), the quoted schema of the call
 * in progress, the gc epoch the store reports, the decoded-node caches of the backend's handles
 * (pgx_cache_clear clears every one), a bytea copy. */
void pgx_work_begin(void);
void pgx_work_end(void);
MemoryContext pgx_work_cxt(void);
const char *pgx_schema_quoted(void);
const char *pgx_schema_name(void); /* unquoted */

/* SPI_connect, and the search_path pinned to "pg_catalog, pg_temp" until pgx_spi_finish (given
 * what this returns) or the (sub)transaction's abort: the statements run inside, and the bodies
 * of the schema's PL/pgSQL functions they call, resolve functions and operators such as unnest or
 * = on bytea by the search_path, and the caller's could list a schema a hostile role can CREATE in
 * ahead of pg_catalog. Raises an ERROR if SPI_connect fails. */
int pgx_spi_connect(void);
void pgx_spi_finish(int level);

/* A statement prepared once per store schema and kept for the backend's life: fmt has one %s
 * (or %1$s, as often as needed), replaced by the quoted schema of the call in progress; its plan is
 * generic (a custom plan would be planned again at each execution, copying array parameters into it
 * as constants). Prepared again when the call's nodes table is another. Inside SPI; raises an ERROR
 * if preparing fails. The plan cache replans it after DDL on what it reads. */
typedef struct pgx_kept {
	SPIPlanPtr plan;
	Oid rel; /* the nodes table it was prepared for */
} pgx_kept;
SPIPlanPtr pgx_kept_plan(pgx_kept *k, const char *fmt, int nargs, Oid *types);
uint64_t pgx_epoch(void);
void pgx_set_epoch(uint64_t e);
void pgx_cache_clear(void);
bytea *pgx_bytea(const void *p, size_t n);

/* The tree of a commit this backend has read (and hash-checked) before in the store of the call
 * in progress: true and *tree set when kept. Commits are immutable and named by their hash, so the
 * answer is kept like a decoded node and under the same rules: pgx_cache_clear() forgets every one
 * (a rolled-back write, a gc epoch seen by a write), so does a gc epoch read by the schema check,
 * and with prolly.cache_size = 0 nothing is kept. A fixed table of PGX_COMMIT_SLOTS entries, an
 * entry's slot chosen by its id. */
#define PGX_COMMIT_SLOTS 256
bool pgx_commit_tree(const prolly_id *commit, prolly_id *tree);
void pgx_commit_tree_keep(const prolly_id *commit, const prolly_id *tree);

/* The body of a store function (rule 2): rc = call, evaluated in the work memory of store calls
 * inside PG_TRY; a PostgreSQL error is caught and kept (pgx_keep_error), rc then PROLLY_ESTORE.
 * rc is the caller's volatile int; the caller has returned already if pgx_failed(). */
#define PGX_STORE_CALL(rc, call)                                                                   \
	do {                                                                                           \
		MemoryContext pgx_cxt_ = CurrentMemoryContext;                                             \
		pgx_work_begin();                                                                          \
		PG_TRY();                                                                                  \
		{                                                                                          \
			MemoryContextSwitchTo(pgx_work_cxt());                                                 \
			(rc) = (call);                                                                         \
			MemoryContextSwitchTo(pgx_cxt_);                                                       \
		}                                                                                          \
		PG_CATCH();                                                                                \
		{                                                                                          \
			(rc) = pgx_keep_error(pgx_cxt_);                                                       \
		}                                                                                          \
		PG_END_TRY();                                                                              \
		pgx_work_end();                                                                            \
	} while (0)

/* ---- store_write.c ---- */

/* The store's write() (store.h): through s.prolly_write inside a write function's lock, else
 * only the empty write the engine sends to learn the epoch. */
int pgx_store_write(prolly_store *st, prolly_store_write *w);

/* From pgx_open: forgets a write call an error left. */
void pgx_write_reset(void);

/* From pgx_define_settings: the transaction callbacks. */
void pgx_write_register(void);

#endif /* PROLLY_EXT_H */
