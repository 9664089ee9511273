/*
 * pg_int.h - what the PostgreSQL store's files share; included by src/store/pg*.c only.
 *
 *   pg.c        open and close, the node reads (get_nodes, has_nodes, get_ancestors,
 *               find_ids), stat, the counters and the test hook
 *   pg_refs.c   the ref reads: get_ref, get_refs, get_ref_objects(_known), list_refs
 *   pg_sql.c    the statement texts, the schema DDL and its migration, the substitution helper,
 *               binary parameters (bytea[] and friends) and results
 *   pg_pipe.c   pipelines (pipe_*), the translation of errors, the session's settings and guard
 *   pg_pool.c   connections, the pool, and the reads run again after a hot standby's cancel
 *   pg_write.c  write: one prolly_write statement, or the version-1 pipeline
 *   pg_gc.c     gc: mark, snapshot, sweep batches
 *   pg_epoch.c  the gc epoch as reported: one that only grows, also across a restore in place
 *
 * Naming as in internal.h: prolly__pg_ for functions shared across these files, no prefix for
 * static ones.
 *
 * A pg_store owns its statements (the schema substituted into every template at open, freed at
 * close), a fixed array of pool_size connection slots (a slot is connected lazily and reconnected
 * after it breaks) and the counters prolly_store_pg_counters reports. A slot is used by one thread
 * at a time: the one that acquired it from the pool, or the gc's thread it is pinned to.
 */
#ifndef PROLLY_STORE_PG_INT_H
#define PROLLY_STORE_PG_INT_H

#include "pg.h"
#include "pq.h"
#include "prolly/pg_sql.h"
#include "redact.h"
#include "store_int.h"

#include <stddef.h>
#include <stdint.h>

#define SCHEMA_VERSION 6   /* the current schema, of a store of 4 KiB nodes */
#define SCHEMA_NODE_SIZE 7 /* version 6 made with another node size: meta row node_size */
#define BOOL_OID 16
#define BYTEA_OID 17
#define INT4_OID 23
/* The advisory lock keys (first half: "prol"), the default wait for them, the gc's beat and the
 * statements the extension runs too are the schema's protocol, in prolly/pg_sql.h: the one home
 * of what this store and ext/postgres must agree on. */
#define LOCK_INIT PROLLY_PG_LOCK_INIT
#define LOCK_GC PROLLY_PG_LOCK_GC
/* writes (shared, inside prolly_write and prolly_write_begin) against the gc's epoch bump
 * (exclusive) */
#define LOCK_WRITE PROLLY_PG_LOCK_WRITE
/*
 * Advisory locks carry no privilege: any session that can connect to the database may take
 * these keys and hold them. So every statement of the store that waits for one (a write, the
 * gc's lock and epoch bump) first bounds its transaction's lock waits: LOCK_BOUND, an SQL
 * expression that is true, having set lock_timeout to LOCK_WAIT_DEFAULT for the rest of the
 * transaction when the session has none (the server's default, 0: wait forever); a lock_timeout
 * of the session (the connection string's options, the role's or the database's setting) is
 * left as it is. Written into the statement itself (the first argument of the call that waits),
 * so it costs no statement and no round trip.
 */
#define LOCK_WAIT_DEFAULT PROLLY_PG_LOCK_WAIT_DEFAULT
#define LOCK_BOUND                                                                                 \
	"(current_setting('lock_timeout') <> '0' OR set_config('lock_timeout', '" LOCK_WAIT_DEFAULT    \
	"', true) <> '')"

/*
 * The search_path of the statements that may run before a connection's session is set up
 * (prolly__pg_send_session sets it for good): the open's version read, the schema's creation,
 * migration and validation, the lookup of a lock's holders. Under the connection's own path, a
 * role with CREATE in a schema that a role's or database's setting names before pg_catalog could
 * plant a text = text, a hashtext or a current_setting that ran with this store's role (the
 * owner's, for an init); test search_path_cannot_redirect_open_and_init. Local to the
 * transaction (a DO block, or a pipeline's implicit one); an SQL expression.
 */
#define SESSION_PATH "pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)"

/* The prepared statements; their texts are query_tmpl in pg_sql.c, prepared as
 * "p<number>_<tag>" (pgconn.tag). */
enum {
	Q_BEGIN,
	Q_COMMIT,
	Q_ROLLBACK,
	Q_ASYNC,
	Q_WBEGIN,
	Q_WREQUIRES,
	Q_WINSERT,
	Q_WCAS,
	Q_WFINISH,
	Q_WRITE, /* schema version 2 only: prepared where the function exists */
	Q_EPOCH,
	Q_GETNODES,
	Q_HASNODES,
	Q_ANCESTORS,
	Q_GETREF,
	Q_GETREFS,
	Q_GETREFOBJS,
	Q_LISTREFS, /* names in [$1, $2) */
	Q_LISTFROM, /* names from $1 on: a prefix with no successor */
	Q_STAT,
	Q_GCBUMP,
	Q_GCREFS,
	Q_GCDELETE,
	N_QUERIES
};
_Static_assert(N_QUERIES <= 32, "pgconn.prepared has a bit per statement");
#define EXTRA_GUARD 255 /* pipe.extra_q: the session guard, not a Parse */

/* ------------------------------------------------------------------------------------------ */
/* The store                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct pgconn {
	PGconn *pg;
	/* The names of this session's prepared statements: "p<number>_<tag>", the tag random per
	 * connection. A pooler in transaction mode may run an operation on a server session another
	 * client prepared statements on; named alike for every client, those would run in its place
	 * (another schema's text, another version's): with the tag, they are simply missing (26000). */
	char tag[17];
	/* The session mark this connection set (session_sql in pg_pipe.c): names the tag. */
	char mark[64];
	/* The session's settings are in place (session_sql in pg_pipe.c: sent once, on the open's
	 * first round trip or when the slot is first made ready after the open). */
	int session;
	/* Bit q: statement q is prepared on this server session. A statement is prepared the first
	 * time it is sent, by a Parse queued just before it in the same pipeline (no round trip of
	 * its own), and its bit set when the server answers that Parse; a prepared statement outlives
	 * the transaction that made it, so a later failure in the pipeline leaves the bit set. */
	uint32_t prepared;
	/* A gc's connection (the one that holds the gc lock and takes the write lock exclusive):
	 * its pipelines end with a beat (pipe_beat in pg_pipe.c, at most every BEAT_EVERY_MS) that
	 * writers waiting for the lock read (prolly__pg_gc_advancing). */
	int beat;
	uint64_t beat_ns; /* when the last beat was sent (prolly__mono_ns) */
} pgconn;

/* The beat: the transaction's application_name set to PROLLY_PG_BEAT_PREFIX and the server's time
 * in ms, which pg_stat_activity shows to every role (its state and times only to the same role and
 * pg_read_all_stats); COMMIT or ROLLBACK restores the session's own. */
#define BEAT_PREFIX PROLLY_PG_BEAT_PREFIX
#define BEAT_EVERY_MS 50

typedef struct waiter waiter; /* a thread queued for a connection (pg_pool.c) */

typedef struct counters {
	_Atomic uint64_t round_trips, statements, insert_statements, rows_inserted, rows_read,
	    bytes_read, bytes_sent, pool_waits, pool_wait_ns, pool_timeouts, connects, broken,
	    gc_batches, gc_remarks, read_retries, epoch_rewrites, prepares;
} counters;

/* A version of meta's epoch row this store read (pg_epoch.c): its value, its xmin (0: read
 * without it) and the epoch reported for it (0: a free slot). */
typedef struct epoch_pair {
	uint64_t value, xmin, reported;
} epoch_pair;
#define PG_EPOCHS 16

typedef struct pg_store {
	prolly_store base;
	char *conninfo;
	char *password;    /* NULL if none: every message is scrubbed of it */
	char *sslpassword; /* the same (the client key's passphrase) */
	char *target;      /* "host=... port=... dbname=... user=..." for messages */
	char *schema;
	char *qs; /* the schema as a quoted identifier */
	char *sql[N_QUERIES];
	char *init_sql;
	char *validate_sql; /* validate_tmpl of pg_sql.c: checks the rows older than the constraint */
	char *version_sql;  /* version_tmpl of pg_sql.c: reads meta's schema_version */
	char *meta_literal;
	unsigned pool_size, pool_timeout_ms;
	size_t batch_items, read_chunk, gc_batch;
	int no_create;
	unsigned node_size;      /* prolly_pg_options.node_size: what a schema made here gets */
	uint64_t meta_node_size; /* the node_size row as the latest version read saw it (0: none) */
	_Atomic int ready;       /* the schema is known to exist: connections set their sessions up */
	_Atomic int fast;        /* the schema is at version 2: one-statement writes (prolly_write) */
	_Atomic unsigned fail_chunk; /* prolly_store_pg_fail_chunk (test build only; else 0) */
	/* The gc epoch read with the schema version (0: none, or taken): the answer of the first
	 * empty write (prolly_db_new's), which then costs no round trip. A gc through this store
	 * clears it. Older than the store's epoch only if a gc ran since it was read, which makes the
	 * next commit of a txn begun with it fail its epoch check (K4) and go again: never unsafe. */
	_Atomic uint64_t open_epoch;
	/* The server's start time (pg_postmaster_start_time, in microseconds) as the latest new
	 * connection read it, and whether one read another one before: the server restarted while
	 * the store was open, and may have lost non-durable writes that had returned (a crash loses
	 * asynchronous commits), so from then on epoch-checked writes check their requires too. */
	_Atomic uint64_t server_start;
	_Atomic int restarted;
	/* The open's migration gave up waiting for a lock (the schema lock, or the table lock of
	 * the block): the error it would have been (PROLLY_ETIMEOUT naming the holder, or
	 * PROLLY_ESTORE), and its message; the first prolly_store_pg_init that finds the schema
	 * still old reports it rather than wait as long again (prolly init opens, then inits). */
	_Atomic int migrate_gave_up;
	char migrate_msg[1024];

	pthread_mutex_t mu; /* the pool */
	pgconn *conns;
	pgconn **idle;
	size_t n_idle;
	waiter *head, *tail;
	pthread_mutex_t gc_mu; /* one gc at a time per store (across processes: an advisory lock) */
	/* The epochs reported (pg_epoch.c): the last PG_EPOCHS versions of the row, a ring; the
	 * offset added to the row's value, and the greatest epoch reported. Under epoch_mu. */
	pthread_mutex_t epoch_mu;
	epoch_pair epochs[PG_EPOCHS];
	size_t epoch_next;
	uint64_t epoch_off, epoch_top, epoch_xmax; /* xmax: the xmin of the top's version (0: none) */
	counters cnt;
} pg_store;

static inline void prolly__pg_cnt_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* The calling thread's prolly_pg_stats live in the store slots of its counters
 * (prolly_store_counters_add), so that work a library thread does for it is counted for it. */
enum { PG_SLOT_STATEMENTS = 0, PG_SLOT_POOL_WAITS = 1, PG_SLOT_POOL_WAIT_NS = 2, PG_SLOTS = 3 };
static inline void prolly__pg_thread_add(uint64_t statements, uint64_t pool_waits,
                                         uint64_t pool_wait_ns)
{
	const uint64_t d[PG_SLOTS] = {statements, pool_waits, pool_wait_ns};
	prolly_store_counters_add(d, PG_SLOTS);
}

/* A ref as listed. list_refs gathers its rows in a preflist before calling back; the gc keeps in
 * one the refs list_refs returned on its thread while mark() ran: what the mark started from. */
typedef struct pref {
	char *name;
	size_t len;
	prolly_id value;
} pref;

typedef struct preflist {
	pref *v;
	size_t n, cap;
} preflist;

/* Two int8 columns of one row (stat's count and bytes, a gc batch's deletions). */
typedef struct sctx {
	uint64_t a, b;
	int have;
} sctx;

/* ------------------------------------------------------------------------------------------ */
/* Pipelines (pg_pipe.c)                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Called for every successful result, with its statement's index in the pipe (qi). */
typedef int (*result_fn)(void *ctx, size_t qi, const PGresult *r);

typedef struct pipe {
	pg_store *st;
	pgconn *c;
	const char *what;
	size_t queued;
	result_fn fn;
	void *ctx;
	int fn_rc;  /* first non-zero result of fn; fn is not called again */
	int failed; /* a statement failed on the server */
	int broken; /* the connection failed */
	int fatal;  /* the server ended the session first (a FATAL error: msg and sqlstate say why) */
	size_t err_qi;
	size_t session_qi; /* 1 + the index of the session statement (its row: the start time); 0 */
	size_t beat_qi;    /* 1 + the index of the gc's beat (pgconn.beat); 0 */
	/* What the pipe queued for itself, in queue order: item i comes just before the caller's
	 * statement of index extra_at[i], and is the Parse of statement extra_q[i] (one not prepared
	 * on c yet: pgconn.prepared) or, for EXTRA_GUARD, the check that the server session is the
	 * one c set up, queued before the pipe's first Parse (pg_pipe.c, guard_sql). Not the caller's
	 * statements: the indexes fn sees and queued count only those. */
	unsigned char extra_q[N_QUERIES + 1];
	size_t extra_at[N_QUERIES + 1];
	unsigned n_extra;
	uint32_t parsing; /* the statements extra_q parses */
	int guard_failed; /* the guard failed: the session is not c's (a pooler swapped it) */
	int standby;      /* the server reported in_hot_standby when the pipe was made */
	char sqlstate[6];
	char msg[600];
	char detail[200];
} pipe;

void prolly__pg_pipe_init(pipe *p, pg_store *st, pgconn *c, const char *what, result_fn fn,
                          void *ctx);
void prolly__pg_pipe_broken(pipe *p, const char *why);
void prolly__pg_pipe_send(pipe *p, int q, int n, const char *const *vals, const int *lens);
/* prolly__pg_pipe_send, then sends everything queued on p's connection before returning (for
 * large statements: "libpq's output buffer" in pg_pipe.c). */
void prolly__pg_pipe_send_out(pipe *p, int q, int n, const char *const *vals, const int *lens);
void prolly__pg_pipe_send_sql(pipe *p, const char *sql);
int prolly__pg_pipe_run(pipe *p);
/* Queues on p the session's setup unless c has it (c->session is set by the caller once the
 * pipeline committed: the settings are transactional until then). */
void prolly__pg_send_session(pipe *p, pgconn *c);
/* Whether the last pipeline run on the calling thread failed because a hot standby cancelled it
 * or ended its session (a recovery conflict); cleared by prolly__pg_pool_acquire. */
int prolly__pg_standby_conflict(void);
void prolly__pg_standby_conflict_clear(void);
/* One run of a read: from its pool_acquire to its pool_done (or release), with *handed set to the
 * rows it gave the engine (0 before each run). 0 or the read's error. */
typedef int (*read_once_fn)(pg_store *st, void *ctx, uint64_t *handed);
/*
 * The one retry of every read of the store (get_nodes, has_nodes, get_ancestors, find_ids, stat,
 * the ref reads, and the open's first round trip and its session setup): runs once(st, ctx) and
 * runs it again, after a pause of 20 ms and then 40, while it fails because a hot standby
 * cancelled its last pipeline or ended its session (a recovery conflict: SQLSTATE 40001, 57P01,
 * 57P04, or the connection lost), no row was handed yet, the connection is not one pinned to the
 * thread (the gc's snapshot), and it ran fewer than 1 + READ_RETRIES times. A read runs in an
 * implicit transaction of its own, never inside a write's, so running it again reads a fresh
 * snapshot and changes nothing; a broken connection is connected again by the next acquire.
 * Counted in read_retries; the last run's error, saying how many runs were cancelled, when none
 * succeeded.
 */
#define READ_RETRIES 2
int prolly__pg_read(pg_store *st, read_once_fn once, void *ctx);
/* One statement on a connection from the pool, rows to fn: the prepared statement q with its n
 * parameters, or sql (not NULL: unprepared, without parameters). A read's run (read_once_fn)
 * of one statement. */
int prolly__pg_run1(pg_store *st, const char *what, int q, const char *sql, int n,
                    const char *const *vals, const int *lens, result_fn fn, void *ctx);

void prolly__pg_redact(char *out, size_t outsz, const char *msg, const pg_store *st);

/* ------------------------------------------------------------------------------------------ */
/* The epoch as reported (pg_epoch.c)                                                          */
/* ------------------------------------------------------------------------------------------ */

/* The epoch to report for the version (value, xmin) of meta's epoch row a statement read (xmin 0:
 * read without it, the version of value seen last); 0 for value 0. A version not seen before whose
 * value is not above every one reported moves the reported epochs past all earlier ones. */
uint64_t prolly__pg_epoch_seen(pg_store *st, uint64_t value, uint64_t xmin);
/* The epoch to report for value, read by a write's function after its statement's snapshot saw
 * another version of the row (its xmin unknown): written meanwhile, by a gc, never taken for a
 * restore (pg_epoch.c). */
uint64_t prolly__pg_epoch_moved(pg_store *st, uint64_t value);
/* The same for a version of value known to differ from every one seen (a write's statement found
 * the row it expected written again): always a new epoch, above every earlier one. */
uint64_t prolly__pg_epoch_rewritten(pg_store *st, uint64_t value);
/* The row version the reported epoch stands for: its value and *xmin (0: none known, check the
 * value alone). An epoch this store forgot (PG_EPOCHS versions later) or never reported stands for
 * the value under the current offset, or 0, which no epoch check passes. */
uint64_t prolly__pg_epoch_of(pg_store *st, uint64_t reported, uint64_t *xmin);

/* ------------------------------------------------------------------------------------------ */
/* Connections and the pool (pg_pool.c)                                                       */
/* ------------------------------------------------------------------------------------------ */

void prolly__pg_conn_close(pg_store *st, pgconn *c, int broken);
/* Closes c and connects it again: nothing prepared, no session state. 0 or a store error. */
int prolly__pg_conn_renew(pg_store *st, pgconn *c);
/* Sets c's session up (one round trip) unless it is. 0 or a store error. */
int prolly__pg_conn_setup(pg_store *st, pgconn *c);
int prolly__pg_pool_acquire(pg_store *st, pgconn **out);
void prolly__pg_pool_release(pg_store *st, pgconn *c, int broken);
void prolly__pg_pool_done(pg_store *st, pgconn *c, const pipe *p);
void prolly__pg_pin(pg_store *st, pgconn *c);

/* ------------------------------------------------------------------------------------------ */
/* Statements, parameters and the schema (pg_sql.c)                                           */
/* ------------------------------------------------------------------------------------------ */

char *prolly__pg_subst(const char *tmpl, const char *a, const char *b);
int prolly__pg_sql_init(pg_store *st);

void prolly__pg_put_be32(unsigned char *p, uint32_t v);
void prolly__pg_put_be64(unsigned char *p, uint64_t v);
int prolly__pg_read_int8(const PGresult *r, int row, int col, uint64_t *out);
int prolly__pg_read_bool(const PGresult *r, int row, int col);
int prolly__pg_array_begin(prolly_buf *b, size_t n, uint32_t oid);
int prolly__pg_array_add(prolly_buf *b, const void *data, size_t size);
int prolly__pg_array_add_null(prolly_buf *b);
int prolly__pg_array_too_big(size_t size);

/* Reads the schema version on c (0 when meta has no valid row; *missing when there is no meta
 * table) and with it the gc epoch, kept in st->open_epoch. 0, or a store error. */
int prolly__pg_read_version(pg_store *st, pgconn *c, uint64_t *version, int *missing);
/* The first round trip of an open, on c: prolly__pg_read_version and, in the same pipeline, the
 * session's setup, so that opening a current schema costs one round trip (c->session then set;
 * each statement is prepared when first sent). When the setup fails (the session carries another
 * client's mark), c is connected anew without it, for the caller's longer way. 0, or a store
 * error. */
int prolly__pg_open_pipeline(pg_store *st, pgconn *c, uint64_t *version, int *missing);
int prolly__pg_check_version(pg_store *st, uint64_t version);
int prolly__pg_init_on(pg_store *st, pgconn *c, uint64_t *version, int may_skip, int validate);
/* After p failed with a lock timeout (SQLSTATE 55P03) while waiting for the advisory lock key1
 * (LOCK_WRITE, LOCK_GC or LOCK_INIT; with shared_waiter, the write lock taken shared, which only
 * exclusive holders block): asks the server on c who holds it and sets PROLLY_ETIMEOUT with a
 * message naming them (pid, role, application_name) and the timeout; outcome ends it ("nothing
 * was written"). Returns PROLLY_ETIMEOUT; for LOCK_INIT held by no one (the migration's table
 * lock timed out), PROLLY_ESTORE with the server's message, as before. */
int prolly__pg_lock_timeout(pg_store *st, pgconn *c, const pipe *p, long key1, int shared_waiter,
                            const char *outcome);
/* After a write's lock wait timed out, with a gc of this schema running: 1 when the gc holds the
 * write lock exclusive and sent a statement lately (its beat in application_name, or its
 * state_change where this role may read it: within the last lock_timeout, or second when that is
 * shorter); 2 when no session holds the write lock exclusive now (the gc released it meanwhile,
 * or the wait was for a ref's row). 0 for any other holder (one that went idle: a stuck gc, any
 * session that took the key), when no gc runs, or when the server cannot tell. */
int prolly__pg_gc_advancing(pg_store *st, pgconn *c);

/* ------------------------------------------------------------------------------------------ */
/* The store's operations                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* pg.c */
int prolly__pg_two_int8_fn(void *ctx, size_t qi, const PGresult *r);

/* pg_refs.c: the vtable's ref reads (prolly/store.h) and the ref listing the gc shares */
int prolly__pg_get_ref(prolly_store *base, const char *name, prolly_id *out, uint64_t *epoch);
int prolly__pg_get_refs(prolly_store *base, const char *const *names, size_t n, prolly_id *out,
                        unsigned char *found, uint64_t *epoch);
int prolly__pg_get_ref_objects(prolly_store *base, const char *name, size_t follow, prolly_id *out,
                               uint64_t *epoch, prolly_store_found_fn found, void *payload);
int prolly__pg_get_ref_objects_known(prolly_store *base, const char *name, size_t follow,
                                     const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                     prolly_store_found_fn found, void *payload);
int prolly__pg_list_refs(prolly_store *base, const char *prefix, prolly_store_ref_fn fn,
                         void *payload);
int prolly__pg_preflist_push(preflist *l, const char *name, size_t len, const prolly_id *value);
void prolly__pg_preflist_dispose(preflist *l);
int prolly__pg_list_fn(void *ctx, size_t qi, const PGresult *r);
/* Until called again with NULLs, every ref list_refs returns to this thread for st is also
 * pushed into *into (the gc records what its mark started from). */
void prolly__pg_refs_capture(pg_store *st, preflist *into);

/* pg_write.c */
int prolly__pg_write(prolly_store *base, prolly_store_write *w);

/* pg_gc.c */
int prolly__pg_gc(prolly_store *base, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                  prolly_gc_result *out);

#endif /* PROLLY_STORE_PG_INT_H */
