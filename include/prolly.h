/*
 * prolly.h - a versioned, content-addressed key-value engine built on Prolly trees.
 *
 * This header is the whole public contract. Read it top to bottom once.
 *
 * THE MODEL
 *   A tree is an immutable ordered map from byte-string keys to byte-string values. It is named by
 *   the 32-byte SHA-256 id of its root node (prolly_id). Every edit returns the id of a new tree;
 *   old trees stay valid and share all unchanged nodes. Nodes live in a store (memory, LMDB,
 *   PostgreSQL, or your own prolly_store). A commit is a content-addressed object naming a tree,
 *   its parent commits, a time and a message. A branch is a named ref to a commit, moved only by
 *   compare-and-swap.
 *
 * ERRORS
 *   Every function returning int returns 0 on success or one of the negative PROLLY_E* codes below.
 *   On failure a message for the calling thread is kept in prolly_last_error(); it names what was
 *   wrong (the key, the node id, the store's own words). Output parameters are left untouched on
 *   failure unless the function says otherwise. A NULL pointer where a function expects one is
 *   PROLLY_EINVAL (unless the function says the argument may be NULL); the functions that return
 *   no code (prolly_id_to_hex, prolly_id_equal, prolly_id_empty_tree), and prolly_set_error's
 *   format, take no NULL.
 *
 * OWNERSHIP
 *   prolly_slice values handed to callbacks or returned by cursors point into memory owned by the
 *   library; each function says how long they stay valid. prolly_buf is owned by the caller and
 *   reused across calls; release it with prolly_buf_dispose(). Every _free/_close accepts NULL.
 *
 * THREADS
 *   A prolly_db may be shared by any number of threads: reads, edits, diffs, merges, commits and
 *   gc may run concurrently on one handle. A read of a tree that a gc removes while it runs
 *   (one retention no longer keeps: an old version, or a head that has moved on since) fails
 *   with PROLLY_ECORRUPT naming the missing node, its message saying that a gc ran during the
 *   read; the store is not damaged, and what a ref names now reads whole. prolly_txn, prolly_builder and prolly_cursor objects
 *   belong to one thread at a time (they may be handed between threads, never used by two at
 *   once). The per-thread last error and per-thread counters are per OS thread.
 *   The library starts threads of its own: a commit writes its nodes on a background thread while
 *   the caller goes on building (joined before prolly_txn_commit returns), and a cursor loads the
 *   next leaves ahead of the reader (joined by prolly_cursor_free). They call only the store's
 *   functions, which is why a store must be thread-safe. An edit of 64 or more edits
 *   (prolly_edit_tree) also encodes and hashes its new nodes on a thread of its own, joined
 *   before it returns; that thread calls nothing of the store's or the caller's.
 *   PROLLY_DB_NO_THREADS in prolly_options.flags turns all of them off.
 *
 * CALLBACKS
 *   A function that takes a callback calls it on the calling thread, before it returns and never
 *   after, passing payload through untouched. What the callback receives (slices, strings,
 *   structs) is the library's and valid only during that call: copy what you keep. A non-zero
 *   return stops the walk and becomes the function's return value, unless the callback's type
 *   says otherwise (return a positive value, or a PROLLY_E* code, to tell your stop from the
 *   library's errors). The library holds none of its locks while a user callback runs, so the
 *   callback may call any function of the library, on the same handle too (read, begin another
 *   txn, commit, move refs); it must not use or free the txn, cursor or builder the running
 *   call works with, nor close the handle. What it writes is not seen by the walk under way,
 *   which goes on over the trees, commits and refs it started from. The store contract's
 *   callbacks (prolly_store_found_fn and the rest, in prolly/store.h) have their own, narrower
 *   rules, stated there.
 */
#ifndef PROLLY_H
#define PROLLY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROLLY_VERSION_MAJOR 0
#define PROLLY_VERSION_MINOR 1
#define PROLLY_VERSION_PATCH 0
#define PROLLY_VERSION_STRING "0.1.0"

/* PROLLY_API marks every function of the contract. The library is built with
 * -fvisibility=hidden, so these are the only symbols libprolly.so exports (scripts/check-exports.sh
 * checks it). Define PROLLY_API before including this header to override it. */
#ifndef PROLLY_API
#if defined(__GNUC__) && __GNUC__ >= 4
#define PROLLY_API __attribute__((visibility("default")))
#else
#define PROLLY_API
#endif
#endif

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                     */
/* ------------------------------------------------------------------------------------------ */

enum {
	PROLLY_OK = 0,
	PROLLY_ENOTFOUND = -1,     /* key, branch, commit, ref or node does not exist */
	PROLLY_ECONFLICT = -2,     /* compare-and-swap lost: the ref moved (or a gc ran) meanwhile */
	PROLLY_ECORRUPT = -3,      /* stored bytes do not hash to their id, or fail to decode */
	PROLLY_ETOOBIG = -4,       /* key > PROLLY_MAX_KEY or value > PROLLY_MAX_VALUE bytes */
	PROLLY_EINVAL = -5,        /* bad argument: unsorted builder input, malformed id or name, ... */
	PROLLY_ENOMEM = -6,        /* out of memory */
	PROLLY_ESTORE = -7,        /* the store failed: I/O error, lost connection, server error */
	PROLLY_EFULL = -8,         /* the store is out of space (disk full, map cannot grow) */
	PROLLY_EVERSION = -9,      /* node format or store schema newer than this library */
	PROLLY_ETIMEOUT = -10,     /* waited too long (connection pool, lock) */
	PROLLY_EMERGE = -11,       /* three-way merge left conflicts unresolved */
	PROLLY_EUNSUPPORTED = -12, /* the store does not support this operation */
	PROLLY_EPRUNED = -13,      /* history the operation needs was removed by retention (gc) */
	PROLLY_ITEROVER = -31      /* not an error: an iteration has no more items */
};

/* A static English description of an error code. Never NULL. */
PROLLY_API const char *prolly_strerror(int err);

/* The calling thread's message for its most recent failure. Never NULL ("" if none). Valid until
 * the next failing call on this thread. At most 1023 bytes: a longer message keeps its beginning
 * and its end (where the reason is) around " ... ", cut between UTF-8 characters. */
PROLLY_API const char *prolly_last_error(void);

/* ------------------------------------------------------------------------------------------ */
/* Plain values                                                                               */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_ID_SIZE 32
#define PROLLY_ID_HEX_SIZE 65 /* 64 hex digits and a NUL */
#define PROLLY_MAX_KEY 2048
#define PROLLY_MAX_VALUE 65536
#define PROLLY_MAX_MESSAGE 65536 /* bytes of a commit message */

/* SHA-256 of a node's bytes. Shown as 64 lowercase hex digits. */
typedef struct prolly_id {
	unsigned char bytes[PROLLY_ID_SIZE];
} prolly_id;

/* A borrowed byte string. */
typedef struct prolly_slice {
	const void *data;
	size_t size;
} prolly_slice;

/* A caller-owned growable buffer. Initialise with PROLLY_BUF_INIT (all zero); functions that
 * fill it replace its contents, growing it as needed. Release with prolly_buf_dispose(). */
typedef struct prolly_buf {
	unsigned char *ptr;
	size_t size;
	size_t asize;
} prolly_buf;
/* clang-format off */
#define PROLLY_BUF_INIT {NULL, 0, 0}
/* clang-format on */

/* Frees buf's memory and leaves it empty (as PROLLY_BUF_INIT), ready to be filled again. buf NULL
 * is fine. No error. The buffer belongs to one thread at a time, like any caller-owned memory. */
PROLLY_API void prolly_buf_dispose(prolly_buf *buf);

/* Writes 64 lowercase hex digits and a NUL into out. */
PROLLY_API void prolly_id_to_hex(char out[PROLLY_ID_HEX_SIZE], const prolly_id *id);
/* Parses exactly 64 hex digits (either case). PROLLY_EINVAL otherwise. */
PROLLY_API int prolly_id_from_hex(prolly_id *out, const char *hex);
/* 1 if equal, 0 otherwise. */
PROLLY_API int prolly_id_equal(const prolly_id *a, const prolly_id *b);
/* Id of the empty tree (a leaf with no records). Every store can read it without holding it. */
PROLLY_API void prolly_id_empty_tree(prolly_id *out);

/* ------------------------------------------------------------------------------------------ */
/* Versioned structs                                                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * Every struct the caller allocates and the library reads or fills (prolly_options,
 * prolly_stats, prolly_pg_options, prolly_pg_stats, prolly_range, prolly_merge_options,
 * prolly_merge_stats, prolly_tree_stats, prolly_gc_result, prolly_lmdb_snapshot,
 * prolly_sync_options, prolly_sync_stats, prolly_store_options) starts with
 * `unsigned version`. Initialise it with the struct's PROLLY_<NAME>_INIT initializer or its
 * prolly_<name>_init(ptr, PROLLY_<NAME>_VERSION) function (for languages that cannot use the
 * macro); both set the version of the header the program was built with and the documented
 * defaults, and nothing else needs to be set. Each struct's version starts at 1; a later library
 * that adds fields raises it, still accepts every earlier version, and reads or writes only the
 * fields the caller's version has, so a program built against an older header keeps working.
 * A version the library does not know (0 included: a struct that was never initialised) is
 * refused with PROLLY_EINVAL and a message naming the struct before anything else is done.
 * There is no size field: the version alone gives the layout, and the library reads and writes
 * that version's fields and never a byte past them (a caller's larger allocation is not looked
 * at). A flags field takes only the bits this library defines: another bit (a flag of a newer
 * header: prolly_options.flags, the PROLLY_OPEN_* flags, prolly_store.flags) is PROLLY_EINVAL
 * naming the bits, so a program asking for what this library cannot do fails loudly.
 *
 * Plain values (prolly_id, prolly_slice, prolly_buf, prolly_edit, prolly_ref_update) have no
 * version: they are used in arrays and their layout is fixed. Structs the library allocates and
 * hands to callbacks (prolly_diff_entry, prolly_conflict, prolly_commit, prolly_reflog_entry)
 * grow at their end without one. The store contract (struct prolly_store and the structs it
 * passes, in prolly/store.h) is versioned as a whole by prolly_store.version.
 */

/* ------------------------------------------------------------------------------------------ */
/* Counters                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Work counters, the same for every store. The handle keeps cumulative ones (prolly_db_stats);
 * every thread keeps its own (prolly_thread_stats), which a benchmark resets before an
 * operation to get per-operation figures; work the library's own threads do for a thread
 * (commit flushes, cursor read-ahead) is counted for that thread. Store round trips are counted
 * by the store (one per statement pipeline that went to the server for PostgreSQL; one per
 * store call for in-process stores). A store's own ideas (the PostgreSQL store's statements and
 * connection-pool waits) are in that store's stats (prolly_pg_stats). */
#define PROLLY_STATS_VERSION 1
typedef struct prolly_stats {
	unsigned version;         /* PROLLY_STATS_VERSION */
	uint64_t cache_hits;      /* node found decoded in the cache (or the operation's working set) */
	uint64_t cache_misses;    /* node requested from the store */
	uint64_t cache_evictions; /* nodes evicted to stay within cache_bytes */
	uint64_t nodes_read;      /* nodes returned by the store */
	uint64_t bytes_read;      /* their bytes */
	uint64_t nodes_written;   /* nodes handed to the store for writing */
	uint64_t bytes_written;   /* their bytes */
	uint64_t store_reads;     /* get_nodes calls */
	uint64_t
	    store_read_items;  /* ids asked for in those calls (items per call = this / store_reads) */
	uint64_t store_writes; /* write calls (each one atomic transaction) */
	uint64_t store_round_trips; /* round trips reported by the store */
} prolly_stats;
/* clang-format off */
#define PROLLY_STATS_INIT {PROLLY_STATS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
/* clang-format on */

/* Sets stats->version to version and every counter to 0. PROLLY_EINVAL (stats NULL, or a
 * version this library does not know). Any thread. */
PROLLY_API int prolly_stats_init(prolly_stats *stats, unsigned version);

/* Copies the calling thread's counters into out (initialised with PROLLY_STATS_INIT: the fields
 * of out->version). PROLLY_EINVAL (out NULL, unknown version; out untouched). */
PROLLY_API int prolly_thread_stats(prolly_stats *out);
/* Zeroes the calling thread's counters, the stores' per-thread counters among them
 * (prolly_store_pg_thread_stats). */
PROLLY_API void prolly_thread_stats_reset(void);

/* ------------------------------------------------------------------------------------------ */
/* Store backends                                                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * A store holds nodes (immutable byte strings named by their SHA-256) and refs (names mapped to
 * ids, moved by compare-and-swap): memory, LMDB and PostgreSQL are built in, below. To write a
 * store of your own, include "prolly/store.h" (the interface a store implements, its rules and
 * the helpers it may use) and hand the store to prolly_db_new(). Users of the built-in stores
 * need only this header: to them a store is an opaque handle.
 */
typedef struct prolly_store prolly_store;

#define PROLLY_MAX_REF_NAME 255

/* What a ref update expects to find before it applies. */
typedef enum prolly_ref_expect {
	PROLLY_REF_EXPECT_ANY = 0,    /* no check: set (or delete) unconditionally */
	PROLLY_REF_EXPECT_ABSENT = 1, /* the ref must not exist (create) */
	PROLLY_REF_EXPECT_VALUE = 2   /* the ref must exist and equal `expected` (move or delete) */
} prolly_ref_expect;

/* One ref update: queued with prolly_txn_set_ref, reported back by prolly_txn_commit. */
typedef struct prolly_ref_update {
	const char *name; /* NUL-terminated, 1..PROLLY_MAX_REF_NAME bytes */
	prolly_ref_expect expect;
	prolly_id expected; /* read when expect == PROLLY_REF_EXPECT_VALUE */
	int remove;         /* non-zero: delete the ref; otherwise set it to `value` */
	prolly_id value;
	/* Set when the write fails with PROLLY_ECONFLICT because of this ref: */
	int conflict;       /* 1 if this update's expectation failed */
	int current_exists; /* whether the ref exists now */
	prolly_id current;  /* its value now, when it exists */
} prolly_ref_update;

/* What prolly_gc reports, and what a store's gc fills (prolly/store.h). prolly_gc's caller
 * initialises it with PROLLY_GC_RESULT_INIT or prolly_gc_result_init(); a store's gc() fills the
 * first three counts of the struct the engine passes it (and leaves version alone). */
#define PROLLY_GC_RESULT_VERSION 1
typedef struct prolly_gc_result {
	unsigned version; /* PROLLY_GC_RESULT_VERSION */
	uint64_t nodes_kept;
	uint64_t nodes_removed;
	uint64_t bytes_removed;
	uint64_t reflog_expired; /* set by prolly_gc (not by stores): reflog entries it expired */
} prolly_gc_result;
/* clang-format off */
#define PROLLY_GC_RESULT_INIT {PROLLY_GC_RESULT_VERSION, 0, 0, 0, 0}
/* clang-format on */

/* Sets result->version to version and every count to 0. PROLLY_EINVAL (result NULL, unknown
 * version). */
PROLLY_API int prolly_gc_result_init(prolly_gc_result *result, unsigned version);

/* Sets the calling thread's last-error message (printf-style) and returns err: how a store, or a
 * callback of the caller's that fails, says what went wrong in its own words (prolly_last_error
 * then returns it). An argument may be prolly_last_error() itself ("store: %s"). Never fails;
 * thread-safe (the message is per thread). */
PROLLY_API int prolly_set_error(int err, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- Node size: chosen when a store is made ----
 *
 * Chunk boundaries aim at one node size, the same for every tree of a store: 4096 bytes unless
 * the store was made with another (prolly_store_options.node_size, prolly_pg_options.node_size,
 * `prolly init --node-size`). Smaller nodes make a small edit rewrite fewer bytes (an edit
 * rewrites one node per level of the tree) at the cost of more nodes and a deeper tree; larger
 * ones suit bulk loads and long scans. The size is kept in the store and read by every handle
 * on it, so root ids stay a function of the records within a store; the same records in stores
 * of different node sizes have different root ids. History moves between stores (prolly_sync,
 * prolly_fetch, prolly_push) only when their node sizes are equal. */
#define PROLLY_NODE_SIZE_DEFAULT 4096u
#define PROLLY_NODE_SIZE_MIN 1024u
#define PROLLY_NODE_SIZE_MAX 8192u

/* 1 when node_size is a size this library builds trees with: 0 (the default,
 * PROLLY_NODE_SIZE_DEFAULT) or a power of two from PROLLY_NODE_SIZE_MIN to
 * PROLLY_NODE_SIZE_MAX; else 0. Any thread. */
PROLLY_API int prolly_node_size_valid(unsigned node_size);

/* Built-in stores. Each returns a store the caller owns until handed to prolly_db_new(). */

/* A store in process memory; everything is lost at close. PROLLY_EINVAL (out NULL);
 * PROLLY_ENOMEM. *out is untouched on failure. */
PROLLY_API int prolly_store_mem_new(prolly_store **out);

/* An LMDB environment in directory `path` (created if missing, with mode 0755 for the directory,
 * 0644 for files). map_size 0 picks a generous default; the map grows by itself when full, and a
 * full disk is PROLLY_EFULL. Nodes and refs live in separate databases; one write() is one LMDB
 * write transaction, durable when it returns if w->durable. Several processes may open the same
 * directory; handles on a directory this process already has open share its environment (and
 * map_size is then ignored). Errors: those of prolly_store_open_ex with PROLLY_OPEN_CREATE
 * (PROLLY_EINVAL for out or path NULL or path empty). */
PROLLY_API int prolly_store_lmdb_open(prolly_store **out, const char *path, size_t map_size);

/* The PostgreSQL store (libpq). See docs/postgres.md for its schema, privileges and gc. */
/* Initialise with PROLLY_PG_OPTIONS_INIT or prolly_pg_options_init(); zero (or NULL) in any
 * other field means its default. */
#define PROLLY_PG_OPTIONS_VERSION 2
typedef struct prolly_pg_options {
	unsigned version;         /* PROLLY_PG_OPTIONS_VERSION */
	const char *schema;       /* schema holding the tables; default "public" */
	unsigned pool_size;       /* connections at most; default 8 (gc needs 2) */
	unsigned pool_timeout_ms; /* longest wait for a connection; default 5000 (PROLLY_ETIMEOUT) */
	size_t batch_items;       /* nodes per INSERT statement of a write; default 1024 */
	size_t read_chunk;        /* ids per SELECT statement of get_nodes; default 4096 */
	size_t gc_batch;          /* candidate nodes per gc sweep transaction; default 10000 */
	int no_create;            /* non-zero: never create the schema on open (see init) */
	/* ---- version 2 ---- */
	unsigned node_size; /* nodes of a schema this open creates ("Node size" above); 0: 4096. An
	                       existing schema keeps its own: another size than its is PROLLY_EINVAL
	                       (0 accepts any) */
} prolly_pg_options;
/* clang-format off */
#define PROLLY_PG_OPTIONS_INIT {PROLLY_PG_OPTIONS_VERSION, NULL, 0, 0, 0, 0, 0, 0, 0u}
/* clang-format on */

/* Sets opts->version to version and every other field to 0 (its default). PROLLY_EINVAL (opts
 * NULL, unknown version). */
PROLLY_API int prolly_pg_options_init(prolly_pg_options *opts, unsigned version);

/* Opens a store on the database named by conninfo (a postgres:// or postgresql:// URL or a libpq
 * "key=value" string). Connects once to check the schema: a schema created by a newer library is
 * PROLLY_EVERSION; a missing one is created (as prolly_store_pg_init does) unless opts->no_create,
 * in which case it is PROLLY_ENOTFOUND; an older one is migrated unless opts->no_create, and kept
 * as it is (still read and written) where the role may not migrate it or the session may not
 * write (a hot standby, default_transaction_read_only). opts may be NULL (every default); an
 * unknown opts->version is PROLLY_EINVAL. A password in conninfo never appears in any message.
 * The library does not link libpq: the first call that needs it (this one, prolly_store_open of a
 * PostgreSQL URL, prolly_remote_url_valid of one) loads libpq.so.5 (libpq 14 or newer) for the
 * rest of the process; a program that uses only memory and LMDB stores never loads it.
 * On a hot standby or in a read-only session every read works and every write and gc fails with
 * PROLLY_ESTORE, its message naming the database and why (docs/postgres.md, "Replicas and
 * read-only sessions"); once the standby is promoted, the same store writes, with no reopen (an
 * older schema it kept stays so until an open that may create migrates it). Errors:
 * PROLLY_EINVAL (out or conninfo NULL, a connection string libpq cannot parse, an unknown
 * opts->version, a schema name over 63 bytes or holding a backslash, a pool_size over 10000);
 * PROLLY_EUNSUPPORTED (libpq.so.5 cannot be loaded, or lacks a function of libpq 14: the message
 * names the library and the reason); PROLLY_ESTORE (no connection, a failed statement; the message is libpq's
 * or the server's); PROLLY_ENOTFOUND and PROLLY_EVERSION as above; PROLLY_ECORRUPT (a meta table
 * without a valid schema_version row); PROLLY_ETIMEOUT (creating a missing schema waited
 * lock_timeout for the lock another session holds, the message naming it); PROLLY_ENOMEM. *out
 * is untouched on failure. */
PROLLY_API int prolly_store_pg_open(prolly_store **out, const char *conninfo,
                                    const prolly_pg_options *opts);

/* Creates the tables and functions if missing (idempotent; concurrent callers serialise on an
 * advisory lock). Needs CREATE on the database (or the schema); nothing later does. Where there
 * is anything to create or migrate, PROLLY_ESTORE on a hot standby or in a read-only session.
 * The first call after an open whose migration of an older schema gave up waiting for a lock
 * returns that error (PROLLY_ETIMEOUT naming the holder) if the schema is still old, rather than
 * wait again. */
PROLLY_API int prolly_store_pg_init(prolly_store *st);

/* The PostgreSQL store's own counters, apart from the store-neutral prolly_stats. */
#define PROLLY_PG_STATS_VERSION 1
typedef struct prolly_pg_stats {
	unsigned version;      /* PROLLY_PG_STATS_VERSION */
	uint64_t statements;   /* SQL statements sent to the server */
	uint64_t pool_waits;   /* connection acquisitions that had to wait for a free connection */
	uint64_t pool_wait_ns; /* total time spent waiting for connections */
} prolly_pg_stats;
/* clang-format off */
#define PROLLY_PG_STATS_INIT {PROLLY_PG_STATS_VERSION, 0, 0, 0}
/* clang-format on */

/* Sets stats->version to version and every counter to 0. PROLLY_EINVAL (stats NULL, unknown
 * version). */
PROLLY_API int prolly_pg_stats_init(prolly_pg_stats *stats, unsigned version);

/* The calling thread's PostgreSQL counters: what every PostgreSQL store did for this thread,
 * the work of the library's threads for it included (store slots 0..2 of
 * prolly_store_thread_counters), beside the round trips in its prolly_stats; zeroed by
 * prolly_thread_stats_reset. All 0 on a thread that used no PostgreSQL store. PROLLY_EINVAL (out
 * NULL, unknown version; out untouched). The calling thread only. */
PROLLY_API int prolly_store_pg_thread_stats(prolly_pg_stats *out);

/* The cumulative counters of store st since it was opened (every thread, every connection).
 * PROLLY_EINVAL (NULL argument, unknown out->version, st not a PostgreSQL store; out untouched).
 * Any thread. */
PROLLY_API int prolly_store_pg_stats(prolly_pg_stats *out, prolly_store *st);

/* Copies url (a store URL, a libpq connection string, or any text quoting one, such as an error
 * message) into out with every password replaced by "***": a URL's user-information password
 * ("postgresql://USER:***@HOST", any scheme, any letter case), and the value of every KEY=VALUE
 * whose KEY is not one of libpq's keywords that hold no secret (so password, sslpassword, and
 * also any misspelling or unknown keyword such as PASSWORD or passwd, are hidden; host, port,
 * dbname, user, sslmode and the like are shown). out has cap bytes and is always NUL-terminated
 * when cap > 0, cut to fit (a cut never shows part of a hidden value). url NULL is "". Returns
 * strlen(out). No error; thread-safe; allocates nothing. This is what the prolly CLI and the
 * benchmark harness print a store URL through; the PostgreSQL store's messages apply the same
 * rules, and also hide the password it parsed wherever it appears. */
PROLLY_API size_t prolly_redact_url(char *out, size_t cap, const char *url);

/* The same for a message of libpq or of the server about a connection made with conninfo (NULL
 * if unknown), put on one line: also hides the password and sslpassword that conninfo holds
 * wherever they appear; when conninfo does not parse (libpq then quotes a piece of it, which may
 * be part of a password: 'invalid percent-encoded token: "..."'), every quoted piece that is not
 * a keyword of conninfo, a URL, or punctuation is replaced by "***"; so is every piece of a
 * conninfo that cannot be parsed because libpq cannot be loaded. Same out, cap, return,
 * threading and ownership rules as prolly_redact_url. */
PROLLY_API size_t prolly_redact_message(char *out, size_t cap, const char *message,
                                        const char *conninfo);

/* Opens a store by URL: "mem:", "lmdb:PATH", or (when built with PostgreSQL support)
 * "postgres://...", "postgresql://..." or a libpq conninfo string ("host=... dbname=...").
 * Same as prolly_store_open_ex(out, url, PROLLY_OPEN_CREATE). */
PROLLY_API int prolly_store_open(prolly_store **out, const char *url);

/* ---- Opening with flags: what an open may change ---- */

/* Open flags (bitwise or). 0 opens an existing store for reading and writing, creating nothing.
 *   PROLLY_OPEN_READONLY  never write: reads only; every write and gc through the handle fails
 *                         with PROLLY_EUNSUPPORTED
 *   PROLLY_OPEN_CREATE    create the store (directory, files, tables) if there is none
 *   PROLLY_OPEN_PREVIOUS  LMDB, with PROLLY_OPEN_READONLY: open the snapshot that
 *                         prolly_lmdb_restore_previous would make current (see below) */
#define PROLLY_OPEN_READONLY 0x1u
#define PROLLY_OPEN_CREATE 0x2u
#define PROLLY_OPEN_PREVIOUS 0x4u

/*
 * Opens a store by URL (as prolly_store_open) the way flags say.
 *
 * Without PROLLY_OPEN_CREATE nothing is created: a store that does not exist (an LMDB directory
 * without data.mdb, or whose environment holds nothing; a PostgreSQL database without the
 * schema) is PROLLY_ENOTFOUND, and no file, directory or table is made. With
 * PROLLY_OPEN_READONLY nothing is written either: LMDB opens its environment with MDB_RDONLY
 * (it may create its lock file lock.mdb beside an existing data.mdb, which readers need);
 * PostgreSQL connects without creating or migrating the schema, and the handle refuses writes.
 * Only PROLLY_OPEN_CREATE makes a new store, and only where there is none: an LMDB environment
 * that exists but lacks one of the store's databases or meta rows, or whose newest meta page is
 * damaged, is PROLLY_ECORRUPT (the message says what is missing), never an empty store; so is a
 * copy of data.mdb made by cp, rsync or tar while a process wrote to it, when its newest meta
 * page leads to a tree a later transaction wrote (copy a live store with mdb_copy).
 *
 * out      receives the store, owned by the caller until handed to prolly_db_new().
 * url      as for prolly_store_open; mem: is always a new empty store, with or without
 *          PROLLY_OPEN_CREATE (with PROLLY_OPEN_READONLY one that refuses every write).
 * flags    PROLLY_OPEN_* above.
 *
 * Errors: PROLLY_EINVAL (NULL out or url, unknown URL or flags, READONLY with CREATE, PREVIOUS
 * without READONLY or on a store other than LMDB, an LMDB path that names a file rather than a
 * directory, an LMDB directory already open read-only in this process opened for writing); PROLLY_ENOTFOUND (no store, without CREATE); PROLLY_ECORRUPT
 * (damaged or incomplete store; see prolly_lmdb_snapshots); PROLLY_EVERSION (newer schema; for
 * LMDB also a data.mdb in another LMDB data format, or a lock.mdb in use by a process of another
 * liblmdb build); PROLLY_ECONFLICT (LMDB: PROLLY_OPEN_READONLY on a read-only file system, where
 * liblmdb reads without its lock file, while another process has the store open);
 * PROLLY_EFULL (no space to create); PROLLY_ESTORE (I/O, connection); PROLLY_ETIMEOUT
 * (PostgreSQL: creating the schema waited lock_timeout for another session, as
 * prolly_store_pg_open says); PROLLY_EUNSUPPORTED (a PostgreSQL URL where libpq cannot be
 * loaded, as prolly_store_pg_open says); PROLLY_ENOMEM.
 * Threads: any thread; the store is then shared as any store is.
 */
PROLLY_API int prolly_store_open_ex(prolly_store **out, const char *url, unsigned flags);

/* What prolly_store_open_opts takes. Initialise with PROLLY_STORE_OPTIONS_INIT or
 * prolly_store_options_init(). */
#define PROLLY_STORE_OPTIONS_VERSION 1
typedef struct prolly_store_options {
	unsigned version;   /* PROLLY_STORE_OPTIONS_VERSION */
	unsigned flags;     /* PROLLY_OPEN_* (0: open an existing store for reading and writing) */
	unsigned node_size; /* nodes of a store this open creates ("Node size" above); 0: 4096. An
	                       existing store keeps its own: another size than its is PROLLY_EINVAL
	                       (0 accepts any) */
} prolly_store_options;
/* clang-format off */
#define PROLLY_STORE_OPTIONS_INIT {PROLLY_STORE_OPTIONS_VERSION, 0u, 0u}
/* clang-format on */

/* Sets opts->version to version and every other field to 0. PROLLY_EINVAL (opts NULL, unknown
 * version). Any thread. */
PROLLY_API int prolly_store_options_init(prolly_store_options *opts, unsigned version);

/* prolly_store_open_ex(out, url, opts->flags), making a store it creates with opts->node_size
 * (NULL opts: flags 0, the default size). Errors: those of prolly_store_open_ex; PROLLY_EINVAL
 * also for an unknown opts->version, a node_size prolly_node_size_valid refuses, or a store that
 * exists with another node size than a non-zero node_size (the message names both; nothing is
 * changed). Threads: any thread. */
PROLLY_API int prolly_store_open_opts(prolly_store **out, const char *url,
                                      const prolly_store_options *opts);

/* As prolly_store_lmdb_open (which is this with PROLLY_OPEN_CREATE), with flags. */
PROLLY_API int prolly_store_lmdb_open_ex(prolly_store **out, const char *path, size_t map_size,
                                         unsigned flags);

/*
 * LMDB snapshots. LMDB has no page checksums: it trusts its file. Pages 0 and 1 of data.mdb are
 * meta pages, written by alternate transactions; the one with the larger transaction id names
 * the current snapshot, the other the snapshot before it, whose pages LMDB keeps until the next
 * commit. Every open checks both (page flags, magic, version, page size, and that each root
 * page number is in range and its page says it is a tree page of that number), and that the
 * tree the current one leads to was written by its transaction (every write stamps its id; a
 * compacting mdb_copy renumbers its snapshot to 1, which may carry any stamp); a damaged current
 * one is PROLLY_ECORRUPT. (liblmdb 0.9.24 has no MDB_PREVSNAPSHOT; this does
 * its job.)
 */
#define PROLLY_LMDB_SNAPSHOT_VERSION 1
typedef struct prolly_lmdb_snapshot {
	unsigned version;  /* PROLLY_LMDB_SNAPSHOT_VERSION */
	uint64_t txnid;    /* the transaction that wrote the meta page */
	int current;       /* 1: liblmdb opens this one (the larger id among readable headers) */
	int intact;        /* 1: every check passed */
	int restorable;    /* 1: prolly_lmdb_restore_previous would make this one current (never
	                      the empty page of transaction 0 that a just-made store still has) */
	char problem[160]; /* why not intact ("" when intact) */
} prolly_lmdb_snapshot;
/* clang-format off */
#define PROLLY_LMDB_SNAPSHOT_INIT {PROLLY_LMDB_SNAPSHOT_VERSION, 0, 0, 0, 0, ""}
/* clang-format on */

/* Sets snap->version to version and every other field to 0. PROLLY_EINVAL (snap NULL, unknown
 * version). */
PROLLY_API int prolly_lmdb_snapshot_init(prolly_lmdb_snapshot *snap, unsigned version);

/* Reads and checks the two meta pages of the LMDB environment in directory path (out[0] is page
 * 0, out[1] page 1) without opening it and without writing. Both elements are initialised with
 * the same version (PROLLY_LMDB_SNAPSHOT_INIT). The snapshot that restoring keeps is the intact
 * one when exactly one is intact, else the older (the one before the current).
 * Errors: PROLLY_ENOTFOUND (no data.mdb, or empty), PROLLY_EVERSION (data.mdb is in another
 * LMDB data format, a newer liblmdb's: neither page is damaged), PROLLY_ESTORE (cannot read),
 * PROLLY_EUNSUPPORTED (not a 64-bit platform), PROLLY_EINVAL (NULL argument, an unknown version
 * in either element; checked before the file is read). Threads: any. */
PROLLY_API int prolly_lmdb_snapshots(prolly_lmdb_snapshot out[2], const char *path);

/* Makes the restorable snapshot current, in place: writes its meta page over the other one and
 * flushes it. The transaction of the page replaced is lost (when both were intact, the newest).
 * Open it first with PROLLY_OPEN_READONLY | PROLLY_OPEN_PREVIOUS to see what it holds (that
 * reads a temporary copy of data.mdb made inside path and unlinked as soon as it is open: it
 * needs as much free space as data.mdb takes, less where the file system shares extents, until
 * the handle is closed).
 * No process may have the environment open meanwhile: PROLLY_ECONFLICT if this or another
 * process has (it holds liblmdb's exclusive lock while writing, so openers wait). Errors also:
 * PROLLY_ENOTFOUND (no data.mdb; or the snapshot to keep is the empty environment of
 * transaction 0 that liblmdb wrote before the store was made, as in a store that has had only
 * its creating transaction: restoring it would leave no store, so nothing is written),
 * PROLLY_ECORRUPT (neither page intact), PROLLY_EVERSION (another LMDB data format; nothing
 * written), PROLLY_EFULL, PROLLY_ESTORE, PROLLY_EINVAL. Threads: any, but not while another thread of the process opens that store. */
PROLLY_API int prolly_lmdb_restore_previous(const char *path);

/* Closes a store that was never handed to prolly_db_new(). NULL is fine. */
PROLLY_API void prolly_store_close(prolly_store *st);

/* ------------------------------------------------------------------------------------------ */
/* The database handle                                                                        */
/* ------------------------------------------------------------------------------------------ */

typedef struct prolly_db prolly_db;

/* Options of a handle. Initialise with PROLLY_OPTIONS_INIT or prolly_options_init(), then set
 * what you need. */
#define PROLLY_OPTIONS_VERSION 2
typedef struct prolly_options {
	unsigned version;   /* PROLLY_OPTIONS_VERSION */
	size_t cache_bytes; /* decoded-node cache budget, counted as the memory its nodes take
	                       (each one's allocation and entry); default PROLLY_CACHE_AUTO; 0: no
	                       cache */
	unsigned
	    retain_commits;   /* gc keeps the newest N commits of each branch; 0 (default) keeps all */
	size_t flush_bytes;   /* a builder hands nodes to the store every this many bytes; default
	                         and 0: 4 MiB */
	unsigned reflog_days; /* gc keeps reflog entries (and what they name) this many days (14);
	                         0: gc expires every entry */
	int64_t clock_us;     /* the library's "now" for the commits it makes, reflog entries and
	                         gc's reflog horizon, in microseconds since the epoch (a commit is
	                         still later than its parents); 0 (default): the wall clock */
	unsigned flags;       /* PROLLY_DB_* flags; 0 (default) for none; a bit this library does
	                         not define (a flag of a newer header) is PROLLY_EINVAL, naming the
	                         bits, where the options are taken */
	/* Version 2. Asked, on the thread making the call, before each batch of nodes a call of the
	 * handle loads (from the cache or the store: a diff, merge, edit, history or tree walk asks
	 * it every few nodes, however much is cached), and every 4,096 records or keys a diff,
	 * get_many or merge handles between two batches: non-zero stops that call, which releases what
	 * it holds and returns that value (a txn it worked in stays usable; an edit's *out_root is
	 * untouched). For a host that cancels long calls from outside (a PostgreSQL backend's
	 * interrupts). NULL (default): never asked. It must not call the library with this
	 * handle. */
	int (*interrupt)(void *payload);
	void *interrupt_payload;
} prolly_options;

/* prolly_options.flags: the handle never starts a thread of its own. Commit flushes then run on
 * the calling thread, cursors read no leaves ahead of the reader (slower on a remote store, same
 * results) and an edit makes its new nodes itself (same roots). For hosts that forbid threads, such
 * as a PostgreSQL backend. */
#define PROLLY_DB_NO_THREADS 1u

/* prolly_options.cache_bytes: the store's default budget, chosen when the handle opens: 128 MiB
 * for a store that reads nodes from a memory mapping (PROLLY_STORE_MAPPED in prolly/store.h: the
 * LMDB store), whose cached nodes are second copies of bytes already in memory, and 256 MiB for
 * any other (memory, PostgreSQL). */
#define PROLLY_CACHE_AUTO ((size_t)-1)

/* clang-format off */
#define PROLLY_OPTIONS_INIT {PROLLY_OPTIONS_VERSION, PROLLY_CACHE_AUTO, 0, (size_t)4 << 20, 14, 0, 0, NULL, NULL}
/* clang-format on */

/* Sets opts->version to version and every field of that version to its default (as
 * PROLLY_OPTIONS_INIT): cache_bytes PROLLY_CACHE_AUTO, retain_commits 0, flush_bytes 4 MiB,
 * reflog_days 14, clock_us 0, flags 0; version 2 also interrupt and interrupt_payload NULL.
 * PROLLY_EINVAL (opts NULL, unknown version). Any thread. */
PROLLY_API int prolly_options_init(prolly_options *opts, unsigned version);

/* Opens the store named by url (see prolly_store_open) with opts (NULL for defaults; an unknown
 * opts->version or a bit of opts->flags this library does not define, or out NULL, is
 * PROLLY_EINVAL before the store is opened). */
PROLLY_API int prolly_open(prolly_db **out, const char *url, const prolly_options *opts);

/* prolly_store_open_ex(url, flags) and prolly_db_new(opts) in one call; the same errors. Every
 * write through a handle opened with PROLLY_OPEN_READONLY fails with PROLLY_EUNSUPPORTED. */
PROLLY_API int prolly_open_ex(prolly_db **out, const char *url, const prolly_options *opts,
                              unsigned flags);

/* Wraps a store with opts (NULL for defaults); the handle owns the store from now on, also on
 * failure (an unknown opts->version or opts->flags bit is PROLLY_EINVAL, and the store is
 * closed). PROLLY_EINVAL also for out or store NULL (a store given is closed), a store lacking
 * one of get_nodes, write, get_ref, list_refs and close, one whose flags hold a bit this
 * library does not define, or one whose node_size prolly_node_size_valid refuses
 * (prolly/store.h); PROLLY_EVERSION for a store version this library does
 * not speak (prolly/store.h); PROLLY_ENOMEM; the store's errors from its first call, an empty
 * write that reads its gc epoch. *out is untouched on failure. */
PROLLY_API int prolly_db_new(prolly_db **out, prolly_store *store, const prolly_options *opts);

/* Closes the handle and its store. Every txn, builder and cursor must be freed first. NULL ok. */
PROLLY_API void prolly_close(prolly_db *db);

/* The store behind the handle (owned by the handle); NULL for db NULL. */
PROLLY_API prolly_store *prolly_db_store(prolly_db *db);

/* The node size the handle builds trees with: its store's ("Node size" above), 4096 unless the
 * store was made with another; 0 for db NULL. Any thread. */
PROLLY_API unsigned prolly_db_node_size(const prolly_db *db);

/* Cumulative counters of the handle since open, every thread's work through it (the store's
 * round trips excepted: only the per-thread counters have them). out as for prolly_thread_stats.
 * PROLLY_EINVAL (NULL argument, unknown out->version; out untouched). Any thread. */
PROLLY_API int prolly_db_stats(prolly_db *db, prolly_stats *out);

/* Drops every cached node (so the next operation starts cold: a prolly_commit_edits after it
 * reads the branch head). Nodes pinned by an open txn stay. db NULL does nothing. */
PROLLY_API void prolly_db_cache_clear(prolly_db *db);

/* ------------------------------------------------------------------------------------------ */
/* Reading a tree                                                                             */
/* ------------------------------------------------------------------------------------------ */

/* Looks key up in tree root. Copies the value into out. PROLLY_ENOTFOUND if absent ("key not
 * found"; a key longer than PROLLY_MAX_KEY is simply absent), and also when root itself is not
 * stored ("tree ... not found": say a commit's tree that gc removed; prolly_count tells the two
 * apart); PROLLY_EINVAL (out, db or root NULL, key NULL with klen > 0); PROLLY_ECORRUPT /
 * PROLLY_ESTORE if a node below it cannot be read. */
PROLLY_API int prolly_get(prolly_buf *out, prolly_db *db, const prolly_id *root, const void *key,
                          size_t klen);

/* Called by prolly_get_many once per requested key, in request order. value is NULL when the key
 * is absent; it is valid only during the call. Return non-zero to stop (returned by get_many).
 * May call the library (see CALLBACKS). */
typedef int (*prolly_value_fn)(void *payload, size_t index, const void *value, size_t vlen);

/* Looks up n keys (any order, duplicates allowed) reading each tree level with one store call
 * per window of up to 16,384 nodes (10k random keys in a tree of 10M records: one call per
 * level). Memory: the nodes of one window per level at once, whatever n (each window is let go,
 * to the cache, before the next is read), and a copy of the values found, which are answered at
 * the end, in request order; so a request over every leaf of a large tree stays bounded.
 * PROLLY_EINVAL (db, root or fn NULL, keys NULL with n > 0, a key with a size and no data);
 * PROLLY_ENOTFOUND if root is not stored (also when n is 0); the errors of prolly_get. */
PROLLY_API int prolly_get_many(prolly_db *db, const prolly_id *root, const prolly_slice *keys,
                               size_t n, prolly_value_fn fn, void *payload);

/* Number of records in the tree, in O(1) (read from the root). PROLLY_EINVAL (NULL argument);
 * PROLLY_ENOTFOUND if root is not stored; PROLLY_ECORRUPT if the root is damaged or is not a
 * tree node (a commit id, say); store errors. */
PROLLY_API int prolly_count(uint64_t *out, prolly_db *db, const prolly_id *root);

/* Number of keys strictly less than key, in O(height) (a key longer than PROLLY_MAX_KEY is
 * ranked like any other). PROLLY_EINVAL (out, db or root NULL, key NULL with klen > 0);
 * PROLLY_ENOTFOUND if root is not stored; PROLLY_ECORRUPT, store errors, as prolly_count, and
 * PROLLY_ECORRUPT for a node on the way down that holds another number of records than its
 * parent counts for it (a forged tree). The counts of the subtrees beside the path are taken
 * as they are, unread, as are prolly_select's: a lie there moves the answer (never out of the
 * tree's nodes). */
PROLLY_API int prolly_rank(uint64_t *out, prolly_db *db, const prolly_id *root, const void *key,
                           size_t klen);

/* The record at position index (0-based, key order), in O(height). PROLLY_ENOTFOUND if
 * index >= count (or root is not stored); PROLLY_EINVAL (db or root NULL); PROLLY_ECORRUPT,
 * store errors, as prolly_count; PROLLY_ENOMEM. key or value may be NULL. */
PROLLY_API int prolly_select(prolly_buf *key, prolly_buf *value, prolly_db *db,
                             const prolly_id *root, uint64_t index);

/* Tree shape. Initialise with PROLLY_TREE_STATS_INIT or prolly_tree_stats_init(). */
#define PROLLY_TREE_STATS_VERSION 1
typedef struct prolly_tree_stats {
	unsigned version; /* PROLLY_TREE_STATS_VERSION */
	uint64_t records;
	unsigned height; /* 1 for a single leaf */
	uint64_t nodes;  /* nodes reachable from the root */
	uint64_t bytes;  /* their encoded bytes */
	uint64_t leaves;
} prolly_tree_stats;
/* clang-format off */
#define PROLLY_TREE_STATS_INIT {PROLLY_TREE_STATS_VERSION, 0, 0, 0, 0, 0}
/* clang-format on */

/* Sets stats->version to version and every other field to 0. PROLLY_EINVAL (stats NULL, unknown
 * version). */
PROLLY_API int prolly_tree_stats_init(prolly_tree_stats *stats, unsigned version);

/* Walks every node of the tree (level by level, one store call per level batch). With verify
 * non-zero every node is read again from the store, bypassing the cache, and re-hashed (a
 * mismatch is PROLLY_ECORRUPT naming it). out (initialised, see prolly_tree_stats) is filled in
 * on success only. Errors: PROLLY_EINVAL (NULL argument, unknown out->version); PROLLY_ENOTFOUND
 * (root not in the store); PROLLY_ECORRUPT; PROLLY_ENOMEM; store errors. */
PROLLY_API int prolly_tree_stats_get(prolly_tree_stats *out, prolly_db *db, const prolly_id *root,
                                     int verify);

/* Called by prolly_trees_verify once per root, in order: i the root's index; status 0, with st
 * counting the nodes that root's walk read (records and height are the root's; nodes, bytes
 * and leaves only those no earlier root had: all zero when the root itself came before), or
 * PROLLY_ENOTFOUND (st all zero) when the root is not stored. st is valid during the call only.
 * Non-zero stops the walk and is returned. Called on the calling thread; it may call the
 * library (see CALLBACKS). */
typedef int (*prolly_tree_verify_fn)(void *payload, size_t i, int status,
                                     const prolly_tree_stats *st);

/* Verifies the trees roots[0..n) as prolly_tree_stats_get with verify does (every node read
 * from the store, not the cache, checked against its id and decoded), reading each node once:
 * a subtree that an earlier root (an earlier version of the same data, say) already had is not
 * read again, so n versions of a tree cost its nodes once plus the nodes each version changed,
 * not n whole trees. A root that is not stored (retention removed it, say) is reported to fn
 * with PROLLY_ENOTFOUND and the walk goes on. Memory: one id per distinct node read. fn may be
 * NULL. Returns 0 once every root was walked; PROLLY_EINVAL (db NULL, roots NULL with n > 0);
 * PROLLY_ECORRUPT (a node below a root missing, or failing its check or its decoding: the
 * message names it; the roots before it were reported sound); PROLLY_ENOMEM; store errors;
 * fn's non-zero return. Any thread. */
PROLLY_API int prolly_trees_verify(prolly_db *db, const prolly_id *roots, size_t n,
                                   prolly_tree_verify_fn fn, void *payload);

/* ------------------------------------------------------------------------------------------ */
/* Cursors                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct prolly_cursor prolly_cursor;

/* Which records a cursor visits. Initialise with PROLLY_RANGE_INIT or prolly_range_init() (the
 * whole tree, ascending), then set what you need. */
#define PROLLY_RANGE_VERSION 1
typedef struct prolly_range {
	unsigned version; /* PROLLY_RANGE_VERSION */
	prolly_slice lo;  /* lower bound, used when has_lo */
	int has_lo;
	int lo_exclusive; /* default inclusive */
	prolly_slice hi;  /* upper bound, used when has_hi */
	int has_hi;
	int hi_inclusive;    /* default exclusive */
	prolly_slice prefix; /* only keys starting with these bytes (size 0: all) */
	int reverse;         /* visit in descending key order */
} prolly_range;
/* clang-format off */
#define PROLLY_RANGE_INIT {PROLLY_RANGE_VERSION, {NULL, 0}, 0, 0, {NULL, 0}, 0, 0, {NULL, 0}, 0}
/* clang-format on */

/* Sets range->version to version and every other field to 0 (no bound, no prefix, ascending).
 * PROLLY_EINVAL (range NULL, unknown version). */
PROLLY_API int prolly_range_init(prolly_range *range, unsigned version);

/* Opens a cursor over tree root limited to range (NULL: the whole tree; an unknown
 * range->version is PROLLY_EINVAL). Nodes are loaded in batches (the next leaves of a parent in
 * one store call). The root is read here, unless the range is empty (its bounds admit no key):
 * such a cursor reads nothing and its first prolly_cursor_next is PROLLY_ITEROVER, whatever root
 * names. Errors: PROLLY_EINVAL (out, db or root NULL, a bound or the prefix with a size and no
 * data); PROLLY_ENOTFOUND (root not in the store); PROLLY_ECORRUPT (the root damaged or not a
 * tree node); PROLLY_ENOMEM; store errors. *out is untouched on failure. */
PROLLY_API int prolly_cursor_open(prolly_cursor **out, prolly_db *db, const prolly_id *root,
                                  const prolly_range *range);

/* Moves to the next record. key and value (either may be NULL) point into the cursor's node and
 * stay valid until the next call on the cursor or its free. Returns PROLLY_ITEROVER at the end.
 * Loading the next leaves can fail: PROLLY_ECORRUPT (a node below the root missing or damaged),
 * PROLLY_ENOMEM, store errors; the cursor keeps that error and returns it from every later call
 * (free it). key and value are untouched on failure. PROLLY_EINVAL for cur NULL. */
PROLLY_API int prolly_cursor_next(prolly_cursor *cur, prolly_slice *key, prolly_slice *value);

/* Closes the cursor: waits for its read-ahead thread if one is loading, and releases its nodes.
 * The slices the last prolly_cursor_next returned become invalid. cur NULL is fine. Call it
 * before prolly_close of the handle; only the thread using the cursor may free it. */
PROLLY_API void prolly_cursor_free(prolly_cursor *cur);

/* ------------------------------------------------------------------------------------------ */
/* Writing: transactions, bulk build, batch edits                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * A txn collects the nodes that edits, builds and merges create, and publishes them with ref
 * moves in one atomic store write. Until then its nodes are readable through the same prolly_db
 * (they are pinned in its cache), so trees made in a txn can be read, diffed and edited again.
 * Freeing a txn that was not committed discards it; nothing of it reaches the store except the
 * nodes a builder flushed early (unreachable until a ref names them; gc may remove them).
 * A committed txn takes nothing more: every function that adds to it (the edits, builds, merges,
 * commits and ref moves below) refuses it with PROLLY_EINVAL ("the txn was already committed"),
 * since what it took would never be written. Once a write of its nodes before the commit has
 * failed (see prolly_txn_commit), the functions that make nodes or commits in it (the edits,
 * builds, merges and prolly_commit_create) return that write's error: the txn cannot commit.
 */
typedef struct prolly_txn prolly_txn;

/* Begins a txn on db, remembering the store's gc epoch: if a gc runs before the txn commits, the
 * commit fails with PROLLY_ECONFLICT (see prolly_gc). *out is the caller's until prolly_txn_free,
 * which must come before prolly_close of db. The txn belongs to one thread at a time; any number
 * of txns may be open on one handle. Reads and writes nothing (on a handle opened with
 * PROLLY_OPEN_READONLY its writes fail when they reach the store, with PROLLY_EUNSUPPORTED).
 * Errors: PROLLY_EINVAL (NULL argument); PROLLY_ENOMEM. *out is untouched on failure. */
PROLLY_API int prolly_txn_begin(prolly_txn **out, prolly_db *db);

/* Queues a ref update (copied) for the commit. PROLLY_EINVAL (NULL argument, a name of 0 or more
 * than PROLLY_MAX_REF_NAME bytes, an expect outside prolly_ref_expect, a ref queued twice in the
 * txn, a txn already committed); PROLLY_ENOMEM. */
PROLLY_API int prolly_txn_set_ref(prolly_txn *txn, const prolly_ref_update *update);

/* Writes the txn's nodes and ref updates atomically. On PROLLY_ECONFLICT nothing was published;
 * conflicts (may be NULL) receives a copy of the failing updates with current values, up to
 * n_conflicts of them. The txn cannot be committed twice; free it after either result. Once a
 * write of the txn's nodes made before the commit (a builder's flush, part of a large commit)
 * has failed, every commit of the txn fails with that write's error and publishes nothing:
 * free it and begin again. PROLLY_EINVAL for txn NULL or committed already; PROLLY_ECONFLICT also
 * when a gc ran since prolly_txn_begin (see there); PROLLY_EUNSUPPORTED on a handle opened with
 * PROLLY_OPEN_READONLY; PROLLY_EFULL; PROLLY_ENOMEM; store errors. */
PROLLY_API int prolly_txn_commit(prolly_txn *txn, prolly_ref_update *conflicts, size_t n_conflicts);

/* Discards the txn if uncommitted. NULL ok. */
PROLLY_API void prolly_txn_free(prolly_txn *txn);

typedef enum prolly_op { PROLLY_PUT = 0, PROLLY_DEL = 1 } prolly_op;

typedef struct prolly_edit {
	prolly_op op;
	prolly_slice key;
	prolly_slice value; /* ignored for PROLLY_DEL */
} prolly_edit;

/* Applies n edits (any order; for equal keys the last one wins; deleting an absent key is a no-op)
 * to tree root, creating the new tree's nodes in txn. Cost is proportional to the number of edits
 * times the height. Memory: an edit of more than 65,536 distinct keys (or 16 MiB of keys and
 * values) is made a key-ordered batch at a time, and the txn's nodes are written to the store
 * between batches (unreferenced until the txn commits, as a builder's flushes; a txn freed
 * uncommitted leaves them to gc), so it holds a batch's nodes, not all of them; such an edit on a
 * handle that cannot write (PROLLY_OPEN_READONLY) fails with the store's error. PROLLY_ETOOBIG for
 * an oversized key or value (nothing changes); PROLLY_EINVAL (out_root, txn or root NULL, edits
 * NULL with n > 0, an edit whose key or value is NULL with a size, an op outside prolly_op, a txn
 * already committed); PROLLY_ENOTFOUND if root is not stored; PROLLY_ECORRUPT if a node it reads
 * cannot be decoded; PROLLY_ENOMEM; store errors, also a failed earlier write of txn's nodes (see
 * prolly_txn_commit). *out_root is untouched on failure; n = 0 gives *root. */
PROLLY_API int prolly_edit_tree(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                                const prolly_edit *edits, size_t n);

/* Deletes every record with from <= key < to (from NULL: from the first key; to NULL: through
 * the last) from tree root, creating the new tree's nodes in txn. The result is the tree any
 * other way of removing those records gives (the canonical tree of the remaining records). Only
 * the nodes on the paths to the range's two ends are read, plus the few nodes after `to` that
 * re-chunking runs into: subtrees inside the range are dropped without being read, so the cost
 * is proportional to the height, not to the records removed. An empty range (no record in it)
 * gives *out_root = *root. Errors: PROLLY_EINVAL if from > to, an argument is NULL, a bound
 * has a size and no data or txn was committed already; PROLLY_ETOOBIG for a bound longer than PROLLY_MAX_KEY;
 * PROLLY_ENOTFOUND if root is not in the store; PROLLY_ECORRUPT, PROLLY_ENOMEM, store errors
 * (also a failed earlier write of txn's nodes). *out_root is untouched on failure. */
PROLLY_API int prolly_delete_range(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                                   const prolly_slice *from, const prolly_slice *to);

/* Bulk build from records in strictly increasing key order. Memory stays bounded: finished nodes
 * are handed to the store every flush_bytes (unreferenced until the txn commits). */
typedef struct prolly_builder prolly_builder;

/* Starts a bulk build whose nodes go into txn. *out is the caller's until prolly_builder_free
 * (after prolly_builder_finish or instead of it: the nodes flushed so far stay in the store
 * unreferenced until a ref names them, and gc may remove them); free it before txn. The builder
 * uses txn, so both belong to the same thread while it lives. Flushes run on a library thread
 * (see THREADS). Errors: PROLLY_EINVAL (NULL argument, a txn already committed); PROLLY_ENOMEM;
 * a failed earlier write of txn's nodes. *out is untouched on failure. */
PROLLY_API int prolly_builder_new(prolly_builder **out, prolly_txn *txn);
/* Adds one record (key and val are copied). PROLLY_EINVAL if key is not greater than the
 * previous one (or b NULL, key or val NULL with a size, the builder finished, its txn committed
 * already); PROLLY_ETOOBIG if oversized; PROLLY_ENOMEM; store errors of a flush of finished
 * nodes, this one's or an earlier one's. */
PROLLY_API int prolly_builder_add(prolly_builder *b, const void *key, size_t klen, const void *val,
                                  size_t vlen);
/* Finishes the tree; out_root receives its id. The builder cannot be used afterwards.
 * PROLLY_EINVAL (NULL argument, finished already, its txn committed already: the builder stays
 * unfinished); a failed earlier write of the txn's nodes; PROLLY_ENOMEM; store errors.
 * *out_root is untouched on failure. */
PROLLY_API int prolly_builder_finish(prolly_builder *b, prolly_id *out_root);
/* Releases the builder; the nodes it already handed to its txn stay there. b NULL is fine. */
PROLLY_API void prolly_builder_free(prolly_builder *b);

/* ------------------------------------------------------------------------------------------ */
/* Diff and merge                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef enum prolly_diff_kind {
	PROLLY_DIFF_ADDED = 1,   /* key only in `to`; new_value set */
	PROLLY_DIFF_REMOVED = 2, /* key only in `from`; old_value set */
	PROLLY_DIFF_CHANGED = 3  /* key in both with different values; both set */
} prolly_diff_kind;

typedef struct prolly_diff_entry {
	prolly_diff_kind kind;
	prolly_slice key;
	prolly_slice old_value;
	prolly_slice new_value;
} prolly_diff_entry;

/* Return non-zero to stop; the diff then returns that value. e and its slices are valid during
 * the call only. May call the library (see CALLBACKS). */
typedef int (*prolly_diff_fn)(void *payload, const prolly_diff_entry *e);

/* Reports every difference from tree `from` to tree `to`, in key order, limited to range (NULL:
 * all; prefix and reverse are not supported here and give PROLLY_EINVAL). Subtrees with equal ids
 * are skipped without being read; each level of the changed region is read with one store call.
 * Equal from and to, or an empty range, read nothing and report nothing (whatever the ids name).
 * PROLLY_ENOTFOUND if from or to is not in the store (as for every read of a tree); a node
 * missing below them is PROLLY_ECORRUPT, as is a root that is not a tree node (a commit id);
 * PROLLY_EINVAL (db, from, to or fn NULL, an unknown range->version, a bound with a size and no
 * data); fn's non-zero return; PROLLY_ENOMEM; store errors. */
PROLLY_API int prolly_diff(prolly_db *db, const prolly_id *from, const prolly_id *to,
                           const prolly_range *range, prolly_diff_fn fn, void *payload);

typedef enum prolly_resolver {
	PROLLY_RESOLVE_FAIL = 0,   /* report conflicts, produce nothing, return PROLLY_EMERGE */
	PROLLY_RESOLVE_OURS = 1,   /* take ours */
	PROLLY_RESOLVE_THEIRS = 2, /* take theirs */
	PROLLY_RESOLVE_CALLBACK = 3,
	/* A key one side deleted and the other changed: DELETE_WINS deletes it, UPDATE_WINS keeps the
	 * changed value. A key both sides set to different values (or added with different values)
	 * is left a conflict: reported to on_conflict, out_root untouched, PROLLY_EMERGE, as with
	 * PROLLY_RESOLVE_FAIL. */
	PROLLY_RESOLVE_DELETE_WINS = 4,
	PROLLY_RESOLVE_UPDATE_WINS = 5
} prolly_resolver;

/* A key changed differently on both sides. A side's value has data NULL when the key is absent
 * there (deleted, or never existed in base). */
typedef struct prolly_conflict {
	prolly_slice key;
	prolly_slice base;
	prolly_slice ours;
	prolly_slice theirs;
	int base_exists, ours_exists, theirs_exists;
} prolly_conflict;

/* For PROLLY_RESOLVE_CALLBACK: decide the key. Set *out_exists to 0 to delete the key, or to 1
 * with *out_value pointing to the value (it must stay valid until the merge returns). Return 0,
 * or PROLLY_EMERGE to leave it a conflict, or any other error to abort the merge. c and its
 * slices are valid during the call only. Called in key order, on the merging thread; it may
 * call the library but not use the txn the merge works in (see CALLBACKS). */
typedef int (*prolly_resolve_fn)(void *payload, const prolly_conflict *c, prolly_slice *out_value,
                                 int *out_exists);
/* Called for every conflict left unresolved (for reporting), in key order, after the merge has
 * decided to fail: a non-zero return stops the reporting, and the merge still returns
 * PROLLY_EMERGE. c is valid during the call only; the same rules as prolly_resolve_fn. */
typedef int (*prolly_conflict_fn)(void *payload, const prolly_conflict *c);

/* Initialise with PROLLY_MERGE_OPTIONS_INIT or prolly_merge_options_init() (resolve
 * PROLLY_RESOLVE_FAIL, no callbacks, no base), then set what you need. */
#define PROLLY_MERGE_OPTIONS_VERSION 1
typedef struct prolly_merge_options {
	unsigned version; /* PROLLY_MERGE_OPTIONS_VERSION */
	prolly_resolver resolve;
	prolly_resolve_fn resolve_fn;   /* for PROLLY_RESOLVE_CALLBACK */
	prolly_conflict_fn on_conflict; /* may be NULL */
	void *payload;
	/* prolly_merge_branches only (prolly_merge ignores them): */
	int allow_unrelated;   /* heads without a merge base (unrelated, or retention cut the
	                          history) merge against the empty tree instead of failing */
	const prolly_id *base; /* non-NULL: merge against this commit instead of the merge base */
} prolly_merge_options;
/* clang-format off */
#define PROLLY_MERGE_OPTIONS_INIT {PROLLY_MERGE_OPTIONS_VERSION, PROLLY_RESOLVE_FAIL, NULL, NULL, NULL, 0, NULL}
/* clang-format on */

/* Sets opts->version to version and every other field to 0 (PROLLY_RESOLVE_FAIL, NULL).
 * PROLLY_EINVAL (opts NULL, unknown version). */
PROLLY_API int prolly_merge_options_init(prolly_merge_options *opts, unsigned version);

/* What a merge did. Initialise with PROLLY_MERGE_STATS_INIT or prolly_merge_stats_init(). */
#define PROLLY_MERGE_STATS_VERSION 1
typedef struct prolly_merge_stats {
	unsigned version;    /* PROLLY_MERGE_STATS_VERSION */
	uint64_t applied;    /* changes taken from theirs */
	uint64_t convergent; /* identical changes on both sides */
	uint64_t conflicts;  /* keys changed differently (resolved or not) */
} prolly_merge_stats;
/* clang-format off */
#define PROLLY_MERGE_STATS_INIT {PROLLY_MERGE_STATS_VERSION, 0, 0, 0}
/* clang-format on */

/* Sets stats->version to version and every counter to 0. PROLLY_EINVAL (stats NULL, unknown
 * version). */
PROLLY_API int prolly_merge_stats_init(prolly_merge_stats *stats, unsigned version);

/* Three-way merge: applies what changed from base to theirs onto ours, creating the result in
 * txn. Cost is proportional to the changes on both sides. With PROLLY_RESOLVE_FAIL and any
 * conflict, every conflict is reported to on_conflict, out_root is untouched, PROLLY_EMERGE.
 * stats may be NULL (the counts of changes then cost nothing); opts may be NULL (the defaults
 * of PROLLY_MERGE_OPTIONS_INIT). An unknown opts->version or stats->version is PROLLY_EINVAL,
 * as are a resolver outside prolly_resolver and PROLLY_RESOLVE_CALLBACK without resolve_fn, a
 * NULL out_root, txn, base, ours or theirs, and a txn committed already (checked before the fast
 * paths; a failed earlier write of txn's nodes returns its error there too). PROLLY_ENOTFOUND if a root it needs is not stored
 * (none is read when ours and theirs are equal); PROLLY_ECORRUPT if a node cannot be decoded (a
 * commit id given as a tree, say); resolve_fn's error; PROLLY_ENOMEM; store errors. */
PROLLY_API int prolly_merge(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                            const prolly_id *base, const prolly_id *ours, const prolly_id *theirs,
                            const prolly_merge_options *opts);

/* Decides the three-way merge prolly_merge(base, ours, theirs, opts) would make, without making
 * it: the same reads, the same resolver calls (resolve_fn, in key order), the same conflicts
 * reported to on_conflict and the same stats, but no node is created and no root computed.
 * Returns 0 when the merge would succeed, PROLLY_EMERGE when it would leave conflicts
 * unresolved. A dry run for a CLI or a SQL function: it needs no txn, so a read-only handle
 * can preview. Its cost is a merge's reads (the diff of base and theirs, ours' values at those
 * keys), without the edit that builds the merged tree. Errors: those of prolly_merge, with db
 * in place of txn (PROLLY_EINVAL for a NULL db, base, ours or theirs). Thread rules: db's. */
PROLLY_API int prolly_merge_preview(prolly_merge_stats *stats, prolly_db *db, const prolly_id *base,
                                    const prolly_id *ours, const prolly_id *theirs,
                                    const prolly_merge_options *opts);

/* Applies the change commit made (from its parent's tree to its own) to tree onto, as a
 * three-way merge (base: the parent's tree, ours: onto, theirs: commit's tree), creating the
 * result in txn. prolly_revert undoes it (base: commit's tree, theirs: the parent's tree). The
 * parent is commit's only parent; a merge commit needs mainline (1-based) to say which parent's
 * side the change is measured from (0 is then PROLLY_EINVAL; for other commits mainline is 0 or
 * 1). A root commit's parent tree is the empty tree. Conflicts, stats, opts and out_root behave
 * as in prolly_merge (PROLLY_EMERGE with opts->resolve PROLLY_RESOLVE_FAIL). Errors: those of
 * prolly_merge; PROLLY_EINVAL (NULL argument, mainline missing or out of range, a commit id that
 * names a tree or a reflog entry, a txn committed already); PROLLY_ENOTFOUND (commit or its parent absent);
 * PROLLY_ECORRUPT (commit or its parent damaged). The branch is not moved: commit the result
 * with prolly_commit_create and prolly_txn_move_branch. */
PROLLY_API int prolly_cherry_pick(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                                  const prolly_id *onto, const prolly_id *commit, unsigned mainline,
                                  const prolly_merge_options *opts);
PROLLY_API int prolly_revert(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                             const prolly_id *onto, const prolly_id *commit, unsigned mainline,
                             const prolly_merge_options *opts);

/* ------------------------------------------------------------------------------------------ */
/* Commits and branches                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* A commit object (stored in the node store, content-addressed like a node). */
typedef struct prolly_commit {
	prolly_id id;
	prolly_id tree;
	size_t n_parents;
	prolly_id *parents;
	int64_t time_us; /* microseconds since the Unix epoch, UTC */
	char *message;   /* NUL-terminated */
} prolly_commit;

/* Reads commit id. Caller frees with prolly_commit_free. PROLLY_ENOTFOUND if absent (for
 * instance removed by gc beyond the retention horizon); PROLLY_ECORRUPT if the object fails its
 * checks or is not a commit (a tree node, say); PROLLY_EINVAL (NULL argument); PROLLY_ENOMEM;
 * store errors. *out is untouched on failure. */
PROLLY_API int prolly_commit_read(prolly_commit **out, prolly_db *db, const prolly_id *id);
/* Reads the commits ids[0..n) (duplicates allowed) in one store call, one round trip on a
 * server store, where prolly_commit_read costs one each: out[i] receives commit ids[i] (free
 * each with prolly_commit_free). Everything read is hash-checked. PROLLY_ENOTFOUND naming the
 * first absent commit; PROLLY_EINVAL (db NULL, or out or ids NULL with n > 0); PROLLY_ECORRUPT
 * (an object that fails its checks or is not a commit); store errors. On failure every out[i]
 * is NULL. n = 0 reads nothing and returns 0. The caller bounds memory by its n. */
PROLLY_API int prolly_commits_read(prolly_commit **out, prolly_db *db, const prolly_id *ids,
                                   size_t n);
/* Frees a commit from prolly_commit_read or prolly_branch_commit (its parents and message with
 * it). c NULL is fine. */
PROLLY_API void prolly_commit_free(prolly_commit *c);

/* Creates a commit object in txn (published when the txn commits). time_us 0 means now (the
 * handle's opts.clock_us when set). The history walks (log, merge base) are fastest when a
 * commit's time is later than its parents'; prolly_commit_edits and prolly_merge_branches ensure
 * it, and prolly_next_commit_time gives such a time for commits made here. tree must be in the
 * store or made in txn (a store holds a commit only with its tree: K6 in prolly/store.h); it is
 * found in txn or the cache without a store call when it was just made or read, else read once.
 * The parents must be in the store too, or made in txn: one made in txn, or read as a branch head
 * in txn (prolly_commit_edits, merges) or by this handle at the txn's gc epoch, or one an earlier
 * txn of this handle committed and moved a ref to at that epoch, costs nothing; the others are
 * read in one store call, which checks that each is a commit. Errors: PROLLY_EINVAL
 * (out, txn or tree NULL, parents NULL with n_parents > 0, a txn committed already, a parent that
 * is not a commit, such as a tree id: the message names it); PROLLY_ENOTFOUND (tree absent, or a
 * parent absent: the message names it); PROLLY_ETOOBIG (a message over PROLLY_MAX_MESSAGE bytes);
 * PROLLY_ECONFLICT (a parent absent because a gc ran since the txn began, as when a branch head
 * the txn read was left behind by other commits and collected: retry, as after a lost race; the
 * store's epoch is read to tell, one more store call on this failure only); PROLLY_ENOMEM; store
 * errors, also a failed earlier write of txn's nodes. *out is untouched on failure. */
PROLLY_API int prolly_commit_create(prolly_id *out, prolly_txn *txn, const prolly_id *tree,
                                    const prolly_id *parents, size_t n_parents, int64_t time_us,
                                    const char *message);

/* The time for a new commit over parents[0..n-1] (decoded, as prolly_commit_read gives them),
 * to pass to prolly_commit_create: db's now (its opts.clock_us when set, else the wall clock;
 * db NULL: the wall clock), or 1 microsecond after the newest parent when that is not earlier
 * (INT64_MAX stays INT64_MAX), the rule the library's own commits on a branch follow, so that a
 * commit is newer than its ancestors whatever the clocks do. parents may be NULL when n is 0; a
 * NULL parents[i] is skipped. No error; reads only db's options; any thread. */
PROLLY_API int64_t prolly_next_commit_time(const prolly_db *db, const prolly_commit *const *parents,
                                           size_t n);

/* The message a revert (revert non-zero) or cherry-pick of picked gets when its caller gives
 * none, the one the CLI and the SQL functions use: "revert ID: MESSAGE" or "MESSAGE (cherry
 * picked from ID)", ID picked's full hex id, MESSAGE picked's message, cut (at a UTF-8 character
 * boundary) so that the whole keeps within PROLLY_MAX_MESSAGE bytes. Writes at most cap - 1
 * bytes and a NUL to out (nothing when cap is 0; out may then be NULL) and returns the length of
 * the whole message, as snprintf does: a cap of PROLLY_MAX_MESSAGE + 1 always holds it. picked
 * NULL gives "" (0). No error, no allocation; any thread. */
PROLLY_API size_t prolly_pick_message(char *out, size_t cap, const prolly_commit *picked,
                                      int revert);

/* Branch names: 1..200 bytes of [A-Za-z0-9._/-], not starting with '-' or '/', no "..", no '~',
 * not 64 hex digits (that spells a commit id; shorter all-hex names are allowed and win over a
 * short commit id of the same spelling).
 * A branch is stored as the ref "refs/heads/NAME". Returns 0 for a valid name, PROLLY_EINVAL
 * (with a message saying why) otherwise. */
PROLLY_API int prolly_branch_name_valid(const char *name);

/* Head commit of a branch. out_commit may be NULL (the branch's existence is checked alone).
 * PROLLY_ENOTFOUND if no such branch; PROLLY_EINVAL (db NULL, a bad name). A name of 64 hex
 * digits, refused for new branches, is looked up (older libraries made such branches). */
PROLLY_API int prolly_branch_head(prolly_id *out_commit, prolly_db *db, const char *branch);

/* The head commit of a branch, decoded (free with prolly_commit_free), for reading or editing
 * the branch: with a store that implements get_ref_objects (PostgreSQL, memory) the ref, the
 * commit and its tree's root node come back in one round trip, and the root is left in the
 * cache, so a prolly_get, prolly_get_many or prolly_edit_tree on (*out)->tree that follows reads
 * one level less. Everything read is hash-checked as usual. PROLLY_ENOTFOUND if no such branch
 * (or its commit is gone); PROLLY_EINVAL for a bad name; PROLLY_ECORRUPT if the commit or root
 * fails its checks; store errors. *out is NULL on failure. */
PROLLY_API int prolly_branch_commit(prolly_commit **out, prolly_db *db, const char *branch);

/* Resolves a revision spec to a commit: a base, then any sequence of steps.
 *   base: a branch name; a tag name (a branch spelled the same wins); a remote-tracking
 *         branch REMOTE/BRANCH (the ref "remotes/REMOTE/BRANCH" a fetch made; a branch or tag
 *         spelled the same wins); a commit id (64 hex digits); or a unique prefix of a commit
 *         id, 4 to 63 hex digits (a branch or tag spelled the same wins). The prefix is looked
 *         up with the store's find_ids (one round trip) where it has one, else by walking the
 *         history of every ref.
 *   @{N}, @{TIME}: right after a branch or tag name, the commit it named N moves ago ("@{0}"
 *         now, "@{1}" before its last move) or at TIME, from its reflog (so also for a branch
 *         deleted since): TIME is YYYY-MM-DD, optionally followed by 'T' or a space and HH:MM,
 *         HH:MM:SS or HH:MM:SS.FRACTION, optionally followed by Z, +HH, +HH:MM or +HHMM (or
 *         '-'); UTC without a zone. "main@{2026-12-01 09:00:00+01}~1" is a spec.
 *   ~N:   N first-parent steps back (N required);  ^N: the N-th parent ("^" is "^1", "^0" the
 *         commit itself). Steps combine: "main~2^2", "3fa9c^^".
 * Every commit a step reaches is read and hash-checked. Errors: PROLLY_EINVAL for a malformed
 * spec or branch name, an id that names a tree or a reflog entry rather than a commit, or an
 * ambiguous short id (the message lists the candidates); PROLLY_ENOTFOUND for a missing branch
 * or commit, a walk past a root commit or a parent that does not exist, and for @{...} a ref
 * with no reflog or that did not exist then; PROLLY_EPRUNED when the reflog entries that would
 * tell @{...} have expired (gc keeps opts.reflog_days of them); store errors. */
PROLLY_API int prolly_resolve(prolly_id *out_commit, prolly_db *db, const char *spec);

/* prolly_resolve, with the commit decoded in *out (free with prolly_commit_free; NULL on
 * failure), for reading or editing what the spec names: a bare branch is read as
 * prolly_branch_commit reads it (the ref, the commit and its tree's root in one round trip where
 * the store can, the root left in the cache), so a read of the tree that follows costs a round
 * trip per level below the root, and nothing more. The handle then also knows that a bare
 * branch's commit and its tree exist: prolly_branch_create, prolly_tag_create or
 * prolly_branch_reset at that commit right after need not read them again (they do if a gc ran
 * meanwhile). The commit is hash-checked whatever the spec.
 * Errors: prolly_resolve's; PROLLY_EINVAL also for out NULL. Any thread (THREADS above). */
PROLLY_API int prolly_resolve_commit(prolly_commit **out, prolly_db *db, const char *spec);

/* Queues in txn the move of branch from expected (NULL: must not exist) to commit, as
 * prolly_txn_set_ref does (the name checked as a branch name; nothing is read). PROLLY_EINVAL (a
 * bad branch name, txn or commit NULL, the branch queued twice in the txn, a txn committed
 * already); PROLLY_ENOMEM. */
PROLLY_API int prolly_txn_move_branch(prolly_txn *txn, const char *branch,
                                      const prolly_id *expected, const prolly_id *commit);

/* Convenience: applies edits to the branch head's tree and commits with message, moving the
 * branch by compare-and-swap in one store write. A branch that does not exist yet is created
 * with a root commit of the edits (if it is still absent when the write lands). On a lost race
 * returns PROLLY_ECONFLICT with *out_commit set to the head that won (when it exists).
 * Cost: the head read and the write, two store round trips; a handle whose previous commit of the
 * branch met no other writer builds on that commit without reading the head (one round trip),
 * and if the guess was wrong (another writer or a gc since) its write fails with nothing written
 * and the commit is made again after a head read, so the result is the same either way.
 * out_commit may be NULL. PROLLY_EINVAL (db NULL, edits NULL with n > 0, a bad branch name, an
 * edit prolly_edit_tree refuses); PROLLY_ETOOBIG; PROLLY_ENOTFOUND or PROLLY_ECORRUPT (the
 * head's commit or a node of its tree absent or damaged, the branch not having moved);
 * PROLLY_EUNSUPPORTED (a handle opened with PROLLY_OPEN_READONLY); store errors. */
PROLLY_API int prolly_commit_edits(prolly_id *out_commit, prolly_db *db, const char *branch,
                                   const prolly_edit *edits, size_t n, const char *message);

/*
 * Snapshot-isolation commits. A transaction reads one commit of a branch (its snapshot, `base`)
 * and collects edits; at commit the branch may have moved on. Instead of failing, the edits are
 * merged into the new head (three-way: base's tree, base's tree with the edits, the head's
 * tree), as a versioned database merges a transaction's working set at commit, unless they
 * write a key that was also written since base: a write-write conflict, after which the
 * transaction must run again on the new head (its reads may be stale). So the transaction's
 * reads are of base; its writes land on the head as of its commit; two transactions that write
 * the same key never both commit (no lost update), while transactions writing disjoint keys do
 * not redo anything. Writes are compared by value against base: a key both sides set (even to
 * the same value) or both deleted is a conflict; an edit that leaves a key as base has it
 * writes nothing and conflicts with nothing. Reads are not checked (write skew is possible, as
 * in any snapshot isolation).
 */

/* Applies edits, made by a transaction that read tree base, to tree head by that rule: *out_root
 * receives head with the edits applied (head == base: prolly_edit_tree of base; edits that
 * change nothing in base are dropped), creating new nodes in txn. It is the three-way merge of
 * base, base with the edits, and head: without a conflict the result is the tree prolly_merge
 * gives for them. Cost: when head differs from base, two prolly_get_many of the written keys
 * (base, head) and prolly_edit_tree's on head, whatever changed between base and head; no node
 * of base with the edits is made. Errors: PROLLY_EMERGE when a key the edits change in base was
 * also changed from base to head (*out_root untouched, no node made, no commit should be made);
 * PROLLY_EINVAL (NULL argument, edits NULL with n > 0, a txn committed already); PROLLY_ENOMEM;
 * those of prolly_get_many and prolly_edit_tree, whose checks of each edit (PROLLY_ETOOBIG, PROLLY_EINVAL) apply to every
 * edit, head moved or not, also to one that would be dropped. Thread rules: those of txn. */
PROLLY_API int prolly_rebase_edits(prolly_id *out_root, prolly_txn *txn, const prolly_id *base,
                                   const prolly_id *head, const prolly_edit *edits, size_t n);

/* Commits to branch the edits of a transaction that began on commit base, moving the branch by
 * compare-and-swap: while the head is base, one commit of base's tree with the edits (parent
 * base); once it moved, one commit (parent the head; history stays linear, no merge commit) of
 * prolly_rebase_edits of base's tree onto the head's. A lost compare-and-swap starts over from
 * reading the head, max_attempts times in all (0 counts as 1). Edits that change nothing in base
 * make no commit. When this handle's last read of the branch (prolly_branch_commit,
 * prolly_resolve_commit, a commit's own head read) found base there, a first try builds on base
 * without reading the head again and lets the compare-and-swap check it; if it loses, or the
 * edits change nothing, the attempts above follow as if it had not run (it is not counted), so
 * a caller that reads the branch and then commits on it pays one head read, not two.
 * *out_commit receives the new commit (or the head, when nothing was committed);
 * out_rebased (may be NULL; untouched when the arguments are refused) how many of the attempts found the head moved and merged into it (or
 * found the conflict that ended them). Errors:
 * PROLLY_ECONFLICT (nothing written; run the transaction again on the new head, which
 * *out_commit then holds when known) when a key the edits change was written since base, when
 * every attempt lost its race, or when the branch was deleted; PROLLY_EINVAL (NULL db, base or
 * out_commit, edits NULL with n > 0, a bad branch name; base the id of a tree or a reflog entry
 * rather than a commit, found so once the head has moved from it, when base is read);
 * PROLLY_ENOTFOUND (base or the head's commit absent); PROLLY_ETOOBIG (a message over
 * PROLLY_MAX_MESSAGE bytes, an oversized edit); PROLLY_EUNSUPPORTED (a handle opened with
 * PROLLY_OPEN_READONLY); those of prolly_rebase_edits and the store. Any thread; the
 * commit's time is later than its parent's. */
PROLLY_API int prolly_commit_edits_on(prolly_id *out_commit, unsigned *out_rebased, prolly_db *db,
                                      const char *branch, const prolly_id *base,
                                      const prolly_edit *edits, size_t n, const char *message,
                                      unsigned max_attempts);

/* Creates branch `name` at commit (O(1): no node is copied). PROLLY_ECONFLICT if it exists;
 * PROLLY_EPRUNED if gc removed the commit's tree (retention kept it for the history only);
 * PROLLY_ENOTFOUND if commit is not in the store; PROLLY_EINVAL (db or commit NULL, a bad name,
 * an id that names a tree or a reflog entry rather than a commit); PROLLY_ECORRUPT (the commit
 * fails its checks); store errors. */
PROLLY_API int prolly_branch_create(prolly_db *db, const char *name, const prolly_id *commit);
/* Deletes a branch; PROLLY_ENOTFOUND if absent; PROLLY_ECONFLICT if it kept moving while the
 * deletion was tried (8 times; nothing deleted); PROLLY_EINVAL (db NULL, a bad name); store
 * errors. */
PROLLY_API int prolly_branch_delete(prolly_db *db, const char *name);
/* The same, and *out_head (may be NULL) receives the head it removed (reflogged as "delete").
 * Both take an existing branch of 64 hex digits that an older library made (else
 * PROLLY_ENOTFOUND); every other invalid name is PROLLY_EINVAL. */
PROLLY_API int prolly_branch_remove(prolly_id *out_head, prolly_db *db, const char *name);

/* Lists branches in name order. fn gets each branch name (without "refs/heads/") and its head;
 * both are valid during the call only. A ref under "refs/heads/" whose rest is not a valid
 * branch name (prolly_branch_name_valid; one written past the library, by another client or by
 * SQL) is not a branch and is not listed; nor is it fetched, cloned or printed as one (a name of
 * 64 hex digits, which older libraries created, is listed all the same). The refs are read first, so fn may call the library, move or delete branches included (see CALLBACKS); it sees
 * the list as it was. Non-zero from fn stops the listing and is returned. PROLLY_EINVAL for db
 * or fn NULL. */
typedef int (*prolly_branch_fn)(void *payload, const char *name, const prolly_id *commit);
PROLLY_API int prolly_branch_list(prolly_db *db, prolly_branch_fn fn, void *payload);

/* Lowest common ancestor of two commits (of several, in criss-cross history, the newest by time,
 * then id: the same answer whichever comes first). The answer does not depend on the commits'
 * times being later than their parents': they only make the walk short. PROLLY_EINVAL (NULL
 * argument; a or b the id of a tree or a reflog entry rather than a commit); PROLLY_ENOTFOUND if
 * they share no history, or a or b is absent; PROLLY_EPRUNED if none was found and the walk met
 * a commit that retention removed (the common history may be gone: see docs/commits.md,
 * "Retention and merges"); PROLLY_ECORRUPT (a commit on the walk fails its checks); store
 * errors. */
PROLLY_API int prolly_merge_base(prolly_id *out, prolly_db *db, const prolly_id *a,
                                 const prolly_id *b);

/* Walks history from commit, newest first (by time, then id), visiting each commit once: the
 * newest commit whose child the walk has visited comes next, so a commit comes after all its
 * children as long as each commit is newer than its parents (as the library's own commits for a
 * branch are); a commit newer than a child of its (prolly_commit_create with a time of the
 * caller's, another writer) can come before that child. Stops quietly where retention removed older commits. fn gets each commit, valid during the
 * call only (copy what you keep; do not free it); non-zero from fn stops the walk and is
 * returned; fn may call the library (see CALLBACKS). PROLLY_EINVAL (db, commit or fn NULL;
 * commit the id of a tree or a reflog entry rather than a commit); PROLLY_ENOTFOUND if commit is
 * absent; PROLLY_ECORRUPT (a commit on the walk fails its checks); store errors. */
typedef int (*prolly_commit_fn)(void *payload, const prolly_commit *c);
PROLLY_API int prolly_log(prolly_db *db, const prolly_id *commit, prolly_commit_fn fn,
                          void *payload);

/* Called by prolly_key_history for each commit that changed the key, newest first. value is
 * the key's value after the commit, or NULL when the commit deleted it; c and value are valid
 * only during the call. Return non-zero to stop (prolly_key_history then returns it). */
typedef int (*prolly_value_history_fn)(void *payload, const prolly_commit *c, const void *value,
                                       size_t vlen);

/* The history of one key: walks the history of commit as prolly_log does (newest first, each
 * commit once) and reports every commit that changed key, i.e. whose value of it differs from
 * the value in each of its parents (a root commit: where the key exists), among the commits that
 * lead to the key's value: from a commit whose value equals a parent's, only the first such
 * parent is followed (a merge that took one side's value hides the other side's changes, which
 * never reached it), from other commits every parent. So the first report holds the value key
 * has at commit (if it was ever set). Cost per commit:
 * one point lookup, O(height), nodes shared between neighbouring trees coming from the cache;
 * never a diff of whole trees. A commit waits to be reported until the walk has reached its
 * parents; where retention removed a parent, the comparison uses the others (none left: the
 * commit counts as a root). The simplification needs each commit's children visited before it,
 * which holds while each commit is newer than its parents (see prolly_log): a commit newer than
 * a child of its can be decided before that child, and the history then leaves out (or
 * misjudges) commits from there down. Errors: PROLLY_EINVAL (NULL db, commit or fn, key NULL
 * with klen > 0; commit the id of a tree or a reflog entry rather than a commit), PROLLY_ETOOBIG
 * (key longer than PROLLY_MAX_KEY), PROLLY_ENOTFOUND (commit absent), PROLLY_ECORRUPT,
 * PROLLY_ENOMEM, store errors, or fn's non-zero return. Thread rules as for prolly_log. */
PROLLY_API int prolly_key_history(prolly_db *db, const prolly_id *commit, const void *key,
                                  size_t klen, prolly_value_history_fn fn, void *payload);

/* Merges branch `from` into branch `into`: three-way against their merge base, then a merge
 * commit with both heads as parents, moving `into` by compare-and-swap. When `into`'s head is an
 * ancestor of `from`'s the branch fast-forwards. PROLLY_EMERGE on unresolved conflicts (nothing
 * is written); PROLLY_ECONFLICT if `into` moved meanwhile. Without a merge base it refuses:
 * PROLLY_ENOTFOUND when the histories are unrelated, PROLLY_EPRUNED when retention removed the
 * base or its tree, unless opts->allow_unrelated (empty base) or opts->base (that commit).
 * PROLLY_ENOTFOUND also when `into` or `from` is no branch, or opts->base is not in the store;
 * PROLLY_EINVAL (db, into or from NULL, a bad branch name: `from` is a branch name too, not a
 * revision spec; opts->base the id of a tree or a reflog entry rather than a commit; the
 * resolver errors of prolly_merge); PROLLY_ETOOBIG (a message over PROLLY_MAX_MESSAGE bytes);
 * PROLLY_ECORRUPT (a head, the base or a node damaged); PROLLY_EUNSUPPORTED (a handle opened with
 * PROLLY_OPEN_READONLY); resolve_fn's error; PROLLY_ENOMEM; store errors. The move is reflogged
 * as "merge" or "fast-forward". out_commit, stats and opts may be NULL; an unknown opts->version
 * or stats->version is PROLLY_EINVAL before anything is read. */
PROLLY_API int prolly_merge_branches(prolly_id *out_commit, prolly_merge_stats *stats,
                                     prolly_db *db, const char *into, const char *from,
                                     const prolly_merge_options *opts, const char *message);

/* Removes every node and commit not reachable from the newest opts.retain_commits commits (0:
 * all) of every branch, tag and reflog entry younger than opts.reflog_days; keeps the merge
 * bases of every pair of branch heads and tags (their commits and trees, and the commits
 * between them and the heads, without their trees) so that retention never changes a merge;
 * first deletes the refs of expired reflog entries. Safe while other threads or processes
 * write: a write that began before the gc fails with PROLLY_ECONFLICT instead of publishing a
 * tree whose nodes were removed. out (may be NULL; initialised with PROLLY_GC_RESULT_INIT)
 * receives the counts on success; an unknown out->version is PROLLY_EINVAL before anything is
 * done. Errors: PROLLY_EINVAL (db NULL, out->version); PROLLY_EUNSUPPORTED (a store without gc,
 * a handle opened with PROLLY_OPEN_READONLY); PROLLY_ECORRUPT (a ref names an object the store
 * lacks, or a damaged one: the message names the ref, and no node is removed); PROLLY_ECONFLICT (other writers kept winning the expiry of the reflog: run it
 * again); PROLLY_ENOMEM; store errors. */
PROLLY_API int prolly_gc(prolly_db *db, prolly_gc_result *out);

/* ------------------------------------------------------------------------------------------ */
/* Sync: history that travels between stores                                                 */
/* ------------------------------------------------------------------------------------------ */

/* How prolly_sync works. Start from PROLLY_SYNC_OPTIONS_INIT or prolly_sync_options_init(). */
#define PROLLY_SYNC_OPTIONS_VERSION 1
typedef struct prolly_sync_options {
	unsigned version;      /* PROLLY_SYNC_OPTIONS_VERSION */
	size_t batch;          /* ids per question and read, objects per write; at most 65536;
	                          0: 512 ids per question and read, objects per write 4096
	                          into a local store, 512 into a server store */
	const char *operation; /* reflog operation of the ref moves (as prolly_txn_set_reason);
	                          NULL: the default ("create", "move", ...) */
	const char *message;   /* reflog message; may be NULL */
} prolly_sync_options;
/* clang-format off */
#define PROLLY_SYNC_OPTIONS_INIT {PROLLY_SYNC_OPTIONS_VERSION, 0, NULL, NULL}
/* clang-format on */

/* Sets *opts to the defaults of version (PROLLY_SYNC_OPTIONS_VERSION). PROLLY_EINVAL for opts
 * NULL or another version. Thread-safe; allocates nothing. */
PROLLY_API int prolly_sync_options_init(prolly_sync_options *opts, unsigned version);

/* What a sync did (filled in also when it fails part way: what was written stays written). */
#define PROLLY_SYNC_STATS_VERSION 1
typedef struct prolly_sync_stats {
	unsigned version;        /* PROLLY_SYNC_STATS_VERSION */
	uint64_t commits_copied; /* commit objects written to the destination */
	uint64_t nodes_copied;   /* tree nodes written */
	uint64_t bytes_copied;   /* their bytes, commits included */
	uint64_t has_calls;      /* batches the destination was asked about (has_nodes) */
	uint64_t read_calls;     /* batches read from the source */
	uint64_t write_calls;    /* writes to the destination (each one atomic) */
} prolly_sync_stats;
/* clang-format off */
#define PROLLY_SYNC_STATS_INIT {PROLLY_SYNC_STATS_VERSION, 0, 0, 0, 0, 0, 0}
/* clang-format on */

/* Sets *stats to zero counts of version (PROLLY_SYNC_STATS_VERSION). PROLLY_EINVAL for stats
 * NULL or another version. Thread-safe; allocates nothing. */
PROLLY_API int prolly_sync_stats_init(prolly_sync_stats *stats, unsigned version);

/*
 * Copies history from src to dst: every commit reachable from commits[0..n_commits) and from the
 * values of refs[0..n_refs) (those that do not remove), with their trees, that dst lacks; then
 * applies the ref updates to dst in one atomic write, each by its compare-and-swap (expect,
 * expected), moves under refs/heads/ and refs/tags/ reflogged as usual (opts->operation). An
 * update whose ref already holds its new value (absent, for a removal) when its
 * compare-and-swap fails was made by another sync and counts as done (conflict 0, no reflog
 * entry); the others are written without it.
 *
 * How: the walk asks dst which objects it has, a batch per tree level (the store's has_nodes, else
 * get_nodes), reads the rest from src in one call per batch (every object hash-checked), and skips
 * every subtree, and every older commit, that dst already has (a store holds an object only
 * together with everything below it: K6 in prolly/store.h). A known head asks nothing about trees:
 * when a ref update expects (PROLLY_REF_EXPECT_VALUE) a commit that dst's ref holds when the sync
 * begins and that src has with its tree (a fast-forward push, a fetch over a remote-tracking ref),
 * each new tree is compared in src with trees dst holds (its parents', a merge's both, or that
 * commit's) and only the nodes that differ travel; commits newer than that commit are taken as
 * missing, older ones reached are asked about; such a sync of more than one write asks dst about
 * the objects of its first write, and of each next one while the last asked about were all there,
 * and leaves out those dst has (so a rerun of an interrupted one does not send again what it
 * wrote). Writes gather up to a batch of objects each, across tree levels and commits, in the
 * order children before parents, trees before their commits, parent commits before their children,
 * and the refs go last, so an interrupted sync (error, crash, lost connection) leaves dst
 * consistent with no ref at a missing object, and running it again copies only what is still
 * missing. A commit whose tree or parent retention removed from src is copied without it. Cost: a
 * push onto a known head of a commit that changed k records copies O(k x height) nodes with no
 * question (one if it takes more than one write), a read of src per tree level and one write per
 * batch of nodes; without a known head, one question and one read per batch per tree level; a
 * clone reads src once. Memory is bounded by the batch, not by the history: a write's objects
 * being gathered (the batch, else 4096 locally, 512 to a server), one batch of nodes per tree
 * level (or the diff walk's windows), and a window of a batch of commits: the history is found
 * newest first a window at a time and copied oldest window first, each window but the last walked
 * again when its turn comes (its reads and questions made twice), and where each window starts,
 * 32 bytes per batch of commits (more where several lines of development run side by side) up to
 * 1 MiB: a longer history is copied in rounds, each walking again from the starting commits to what
 * the rounds before copied. A merge whose tree differs from its first parent's in more than a
 * write's worth of nodes has those nodes asked about.
 *
 * out       may be NULL; else receives the counters (initialised with PROLLY_SYNC_STATS_INIT:
 *           an unknown out->version is PROLLY_EINVAL before anything is done).
 * dst, src  two handles, on different stores (the same store is harmless: nothing is missing).
 * commits   may be NULL when n_commits is 0.
 * refs      updates as for prolly_txn_set_ref (names 1..PROLLY_MAX_REF_NAME bytes, any ref
 *           namespace); on PROLLY_ECONFLICT the failing ones get conflict and current_*. May be
 *           NULL when n_refs is 0 (then nothing but objects is written).
 * opts      may be NULL (defaults).
 *
 * Errors: PROLLY_EINVAL (NULL db, commits or refs with a count, bad opts, bad ref update, two
 * stores of different node sizes (prolly_db_node_size; nothing read or written), a start
 * id that is not a commit, found so when dst lacks it: an object dst holds is not read, and a
 * ref update naming it applies as prolly_txn_set_ref's would); PROLLY_ENOTFOUND (a start commit in neither store); PROLLY_ECONFLICT
 * (a ref's expectation failed: no ref moved, the objects copied stay; or a gc ran on dst during
 * each of 3 attempts (a gc there during one attempt costs another, from what survived, and the
 * counters in *out add up all of them), or one on src removed an object the sync was to read:
 * run it again); PROLLY_ECORRUPT
 * (src holds a damaged object or lacks a child node; the message says which store, "sync: in
 * the source (KIND store): ..." or the destination); PROLLY_EUNSUPPORTED (dst opened read-only); PROLLY_ENOMEM; store errors of either.
 * Threads: as for any operation on the two handles; a sync reads src and writes dst only.
 */
PROLLY_API int prolly_sync(prolly_sync_stats *out, prolly_db *dst, prolly_db *src,
                           const prolly_id *commits, size_t n_commits, prolly_ref_update *refs,
                           size_t n_refs, const prolly_sync_options *opts);

/*
 * Remotes: other stores known by name, recorded in the store itself (docs/commits.md,
 * "Remotes"): remote NAME is the ref "config/remotes/NAME" naming a one-record tree whose key
 * "url" holds the URL, so gc keeps it. Remotes are the store's own configuration: a clone does
 * not copy them. A remote URL never holds a password (prolly_remote_url_valid): the password of
 * a PostgreSQL remote comes from ~/.pgpass, PGPASSFILE or PGPASSWORD. Print a URL only through
 * prolly_redact_url all the same (a user name or host may be private). What a fetch saw of the
 * remote's branch B is the ref "remotes/NAME/B" (a remote-tracking ref), which prolly_resolve reads
 * as "NAME/B" when no branch or tag is spelled so; only fetch, push and prolly_remote_remove move
 * those refs, and fetch and push only those of a recorded remote (prolly_remote_add), so that
 * every tracking ref belongs to a remote prolly_remote_list lists. Remote names follow the branch name rules, have no '/' and at most 46 bytes, so
 * that "remotes/NAME/B" fits PROLLY_MAX_REF_NAME for every branch name B.
 */

/* 0 if url may name a remote: 1..4096 bytes, no control byte (0x00-0x1f, 0x7f), carrying no
 * password (neither a non-empty password
 * in a URL's user information, "SCHEME://USER:PASSWORD@HOST", nor a password= or sslpassword=
 * key, in any letter case, in a connection string or a URL's query; found by the walk of
 * prolly_redact_url); and of a form prolly_open can try: "mem:", "lmdb:PATH" with a PATH, or a
 * PostgreSQL URL or connection string libpq parses (PQconninfoParse: no unknown keyword such as
 * "passwd", no word without '=', no open quote). Else PROLLY_EINVAL, with a message that does
 * not quote url (a password's says to use ~/.pgpass, PGPASSFILE or PGPASSWORD; a parse
 * failure's gives libpq's reason through prolly_redact_message). A PostgreSQL URL where libpq
 * cannot be loaded is PROLLY_EUNSUPPORTED (as prolly_store_pg_open says). Thread-safe; allocates
 * only for its duration (libpq's parse). */
PROLLY_API int prolly_remote_url_valid(const char *url);

/* Records remote name with url (copied; prolly_remote_url_valid must accept it).
 * PROLLY_ECONFLICT if it exists; PROLLY_EINVAL for a bad name (also one of more than 46 bytes)
 * or url (nothing written); store errors. Thread-safe as any write. */
PROLLY_API int prolly_remote_add(prolly_db *db, const char *name, const char *url);

/* Puts the URL of remote name into out (not NUL-terminated; out->size bytes). PROLLY_ENOTFOUND
 * if there is no such remote; PROLLY_ECORRUPT, naming it, if its record holds no URL (damaged;
 * prolly_remote_remove still removes it); PROLLY_EINVAL for a bad name; store errors. */
PROLLY_API int prolly_remote_url(prolly_buf *out, prolly_db *db, const char *name);

/* Called by prolly_remote_list for each remote, in name order; name and url (NUL-terminated,
 * unredacted) are valid only during the call. Non-zero stops the listing and is returned. A
 * record whose name breaks the branch name rules (written past the library) is not listed; one
 * that holds no URL stops the listing with PROLLY_ECORRUPT naming it, as prolly_remote_url. */
typedef int (*prolly_remote_fn)(void *payload, const char *name, const char *url);
PROLLY_API int prolly_remote_list(prolly_db *db, prolly_remote_fn fn, void *payload);

/* Removes remote name and every remote-tracking ref "remotes/NAME/..." in one write (also
 * those of a name with no record, which older libraries' fetch and push made); a fetch that
 * read the record before and wrote tracking refs after they were listed has them removed by a
 * second write, once the record is gone.
 * PROLLY_ENOTFOUND if there is neither such a remote nor such a ref; PROLLY_ECONFLICT if one of them moved meanwhile
 * (nothing removed); PROLLY_EINVAL; store errors. The commits they named are left to gc. */
PROLLY_API int prolly_remote_remove(prolly_db *db, const char *name);

/* Called by prolly_fetch for each remote-tracking ref it moved, in branch name order: old is
 * NULL for a branch new to this store, new NULL for one gone from the remote. Valid during the
 * call. Non-zero is returned by prolly_fetch (the refs have moved already). */
typedef int (*prolly_fetch_fn)(void *payload, const char *branch, const prolly_id *old_commit,
                               const prolly_id *new_commit);

/* Fetches every branch of remote (a handle on the store that remote name stands for; the
 * caller opens it, read-only will do) into db: copies what db lacks with prolly_sync, then
 * moves each "remotes/NAME/B" to the remote's head of B, creates those of new branches and
 * removes those of branches the remote no longer has, all in one write, each by
 * compare-and-swap against what it read. Local branches never move. stats may be NULL. The
 * remote's branches are those prolly_branch_list lists: a ref there whose name is no branch
 * name is not fetched, and a tracking ref of such a name here is removed.
 * Errors: PROLLY_ENOTFOUND if name is no remote of db (prolly_remote_add; nothing is fetched),
 * or if the remote was removed while the fetch ran (no tracking ref moved); those of
 * prolly_sync (PROLLY_ECONFLICT: a concurrent fetch moved a tracking ref to another commit than
 * this one's, or a gc on remote removed a head read here during each of 3 attempts (one such gc
 * costs another attempt, from the remote's branches as they are then; *stats adds up every
 * attempt), or the remote was removed and added again; fetch again; one that moved it to the
 * same commit is no conflict); PROLLY_EINVAL (bad
 * name, NULL db or remote, stores of different node sizes: nothing read; or, under a name
 * longer than prolly_remote_add takes, recorded by an older library, a branch whose tracking ref
 * would have more than PROLLY_MAX_REF_NAME bytes: the message names that ref, and nothing is
 * fetched); fn's non-zero return. */
PROLLY_API int prolly_fetch(prolly_sync_stats *stats, prolly_db *db, prolly_db *remote,
                            const char *name, prolly_fetch_fn fn, void *payload);

/* Pushes branch of db to the branch of the same name of remote (the store remote name stands
 * for): copies what remote lacks with prolly_sync, then moves its "refs/heads/BRANCH" from the
 * head read first to ours by compare-and-swap (reflogged there as "push"), and sets our
 * "remotes/NAME/BRANCH" to it by compare-and-swap against the value it read before the remote's
 * head, so that it never moves back: if a fetch (or push) moved it meanwhile, its value stays,
 * unless it is the head our push replaced or an ancestor of ours (that writer read the remote
 * before our push landed). Once the remote moved, a gc of db meanwhile does not fail the push:
 * that write is tried again, unless that gc removed our head's commit or its tree (the branch
 * moved on and retention kept the commit alone, or nothing): the tracking ref then stays as it
 * was, as no ref may name a commit without its tree. Fast-forward only unless force: a remote head that is not an
 * ancestor of ours, one this store does not have (another push, or one that retention removed
 * here), or one retention cut the history to (prolly_gc with retain_commits: nothing here shows
 * it to be an ancestor) is PROLLY_ECONFLICT, the message saying which, and nothing is written
 * anywhere (a fetch, then a merge, with the remote's head named as the base where no merge base
 * is left, settles it). Two pushes racing for one branch: one wins, the other gets
 * PROLLY_ECONFLICT (its objects may have been copied; no ref moved). A gc of db that removes
 * what the push was copying (the branch moved on, and retention took its old head) costs
 * another attempt, from the branch's head as it is then, up to 3 (then PROLLY_ECONFLICT, nothing
 * moved; *stats adds up every attempt). A remote removed here while the push ran gets no
 * tracking ref (the remote's branch has moved). Errors also:
 * PROLLY_ENOTFOUND (no such local branch, or name is no remote of db: nothing pushed),
 * PROLLY_EINVAL (also stores of different node sizes: nothing read), those of prolly_sync. */
PROLLY_API int prolly_push(prolly_sync_stats *stats, prolly_db *db, prolly_db *remote,
                           const char *name, const char *branch, int force);

/* ------------------------------------------------------------------------------------------ */
/* Proofs                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* What a proof claims, as prolly_proof_verify read it: slices into the proof's bytes, valid as
 * long as they are. */
typedef struct prolly_proof_claim {
	int range;        /* 0: about one key; 1: about every record with key <= k < to */
	prolly_slice key; /* the key, or the range's first key */
	prolly_slice to;  /* the range's end (excluded); empty for a key proof */
} prolly_proof_claim;

/* Called by prolly_proof_verify with what the proof shows: for a key proof once, with value
 * NULL when the key is absent; for a range proof once per record, in key order (not at all for
 * an empty range). Slices valid during the call. Non-zero stops and is returned. */
typedef int (*prolly_proof_fn)(void *payload, const prolly_slice *key, const prolly_slice *value);

/*
 * Builds in out (replacing its contents) a proof about tree root: with to NULL, that key has
 * its value in the tree or is absent; otherwise that the records with key <= k < to are
 * exactly those the tree holds (none left out). The proof carries the tree's nodes on the path
 * to key (or every node whose span meets the range, and their ancestors), verbatim: its size is
 * about height nodes for a key, plus the leaves of the range for a range. Format: docs/format.md,
 * "Proofs" (versioned). Reads one tree level per store call.
 * Errors: PROLLY_EINVAL (NULL argument, a key or to with a size and no data, to before key),
 * PROLLY_ETOOBIG (a key over PROLLY_MAX_KEY, or a range whose proof would hold more than 2^24
 * nodes, the most prolly_proof_verify reads), PROLLY_ENOTFOUND (root not in the store),
 * PROLLY_ECORRUPT (a node damaged, or root the id of a commit rather than a tree), PROLLY_ENOMEM,
 * store errors; out is untouched on every failure (the proof is made whole before it replaces
 * out's contents). Threads: as any read.
 */
PROLLY_API int prolly_prove(prolly_buf *out, prolly_db *db, const prolly_id *root,
                            const prolly_slice *key, const prolly_slice *to);

/*
 * Checks proof[0..size) against tree id `tree` with hashing alone (no store, no handle): every
 * node the walk from the root to the key (or across the range) needs must be in the proof and
 * hash to the id its parent names. On success *claim (may be NULL) says what it is about and fn
 * (may be NULL) receives what it proves. *claim is filled once the proof's bytes have been read
 * and its nodes hashed, before the walk and fn's first call (fn may read it through its
 * payload): it is untouched when the bytes are refused (malformed, truncated, a newer format),
 * but after a failure of the walk (a node missing or changed, fn's non-zero return) it holds
 * what the proof claims, unproven. Errors: PROLLY_ECORRUPT (not a valid proof of this
 * tree: malformed, truncated, a node missing or changed; the message says which),
 * PROLLY_EVERSION (a newer proof format), PROLLY_EINVAL (NULL tree, or proof with a size),
 * PROLLY_ENOMEM, or fn's non-zero return. Allocates only for its duration; thread-safe.
 */
PROLLY_API int prolly_proof_verify(prolly_proof_claim *claim, const prolly_id *tree,
                                   const void *proof, size_t size, prolly_proof_fn fn,
                                   void *payload);

/* ------------------------------------------------------------------------------------------ */
/* Reflog, tags, reset                                                                        */
/* ------------------------------------------------------------------------------------------ */

/*
 * Every move of a refs/heads/ or refs/tags/ ref published by prolly_txn_commit (whoever queued
 * it) is recorded in the same atomic store write as a reflog entry: a content-addressed object
 * (old value, new value, time, ref, operation, message) named by a ref of its own,
 * "logs/<ref>@<time><id>", so recording reads nothing. gc keeps entries younger than
 * opts.reflog_days and the commits they name (see prolly_gc). docs/commits.md has the details.
 */

/* Says what the txn's ref moves are, for their reflog entries: operation is 1..32 bytes of
 * [a-z-] ("commit", "merge", "revert", ...), message (may be NULL) at most 4096 bytes without
 * NUL. Both are copied. Without it, an entry says "delete" for a removed ref, "merge" or
 * "commit" for a ref moved to a commit made in the txn (by its parent count), "create" for a
 * new ref naming an existing commit, "move" otherwise. Call before prolly_txn_commit; a later
 * call replaces the earlier one. PROLLY_EINVAL for a bad operation or message, or a txn committed
 * already; PROLLY_ENOMEM. */
PROLLY_API int prolly_txn_set_reason(prolly_txn *txn, const char *operation, const char *message);

/* One reflog entry, as prolly_reflog reports it. The entry and its strings are valid during the
 * callback only; the callback may call the library, and its own ref moves are not reported by
 * the listing under way (see CALLBACKS). */
typedef struct prolly_reflog_entry {
	prolly_id id;          /* the entry object */
	int64_t time_us;       /* when the move was published (opts.clock_us if set) */
	const char *ref;       /* full ref name: "refs/heads/NAME" or "refs/tags/NAME" */
	const char *operation; /* see prolly_txn_set_reason */
	const char *message;   /* "" if none */
	int has_old, has_new;  /* 0: the ref did not exist before (created) / after (deleted) */
	prolly_id old_id, new_id;
} prolly_reflog_entry;

typedef int (*prolly_reflog_fn)(void *payload, const prolly_reflog_entry *e);

/* Reports the reflog of ref, newest first in the order the moves were written: each entry's old
 * value is the new value of the entry listed after it, whatever the writers' clocks said (the
 * times only order moves that fit equally, of a ref that held a value twice, and the refs among
 * themselves, keeping each ref's order, for NULL; docs/commits.md, "The reflog"). ref is a
 * branch name, a full ref name ("refs/heads/NAME", "refs/tags/NAME"), or NULL for every ref.
 * One list_refs call and
 * one batched read of the entries (and a ref read for each entry whose object the read did not
 * find: one a gc expired meanwhile is left out). Returns what fn returned if non-zero;
 * PROLLY_EINVAL for a bad name (a full name too, when what follows refs/heads/ or refs/tags/
 * breaks the branch name rules; a name of 64 hex digits, which older libraries made, is taken;
 * db or fn NULL); PROLLY_ECORRUPT for a damaged entry or one missing from the store while its
 * ref is there; PROLLY_ENOMEM; store errors. An empty reflog is not an error. */
PROLLY_API int prolly_reflog(prolly_db *db, const char *ref, prolly_reflog_fn fn, void *payload);

/* Re-creates deleted branch `name` at the head its newest "delete" reflog entry removed, and
 * puts that commit in *out_commit (may be NULL). Reflogged as "restore". PROLLY_ENOTFOUND if the
 * reflog has no deletion of it (or its commit is gone); PROLLY_ECONFLICT if the branch exists;
 * PROLLY_EINVAL (db NULL, a bad name). */
PROLLY_API int prolly_branch_restore(prolly_id *out_commit, prolly_db *db, const char *name);

/* Moves branch to commit by compare-and-swap against the head it reads first, whatever the
 * relation between the two (reflogged as "reset"). *out_old (may be NULL) receives that head.
 * PROLLY_ENOTFOUND if the branch or the commit does not exist; PROLLY_EPRUNED if gc removed the
 * commit's tree; PROLLY_ECONFLICT if the branch moved between the read and the write (nothing
 * written); PROLLY_EINVAL (NULL db or commit, a bad name, an id that names a tree or a reflog
 * entry rather than a commit); PROLLY_ECORRUPT (the commit fails its checks); store errors. */
PROLLY_API int prolly_branch_reset(prolly_id *out_old, prolly_db *db, const char *branch,
                                   const prolly_id *commit);

/* Tags: the ref "refs/tags/NAME" naming a commit; names follow the branch name rules. A tag is
 * only created or deleted, never moved. gc keeps what tags name like branch heads. */
/* Tag names follow the branch name rules (prolly_branch_name_valid). Returns 0 for a valid
 * name, PROLLY_EINVAL otherwise, with a message that calls it a tag name and says why ("tag name
 * '...' has 201 bytes; at most 200"). The tag functions below refuse a bad name with the same
 * message. Any thread. */
PROLLY_API int prolly_tag_name_valid(const char *name);
/* PROLLY_ECONFLICT if the tag exists; PROLLY_ENOTFOUND if commit does not; PROLLY_EPRUNED if gc
 * removed its tree; PROLLY_EINVAL also for an id that names a tree or a reflog entry rather than
 * a commit; PROLLY_ECORRUPT (the commit fails its checks); store errors. */
PROLLY_API int prolly_tag_create(prolly_db *db, const char *name, const prolly_id *commit);
/* PROLLY_ENOTFOUND if absent. *out_commit (may be NULL) receives what it named. */
PROLLY_API int prolly_tag_delete(prolly_id *out_commit, prolly_db *db, const char *name);
/* The commit a tag names (out_commit may be NULL: the tag's existence is checked alone).
 * PROLLY_ENOTFOUND if absent. The tag functions: PROLLY_EINVAL for db NULL or a bad name;
 * prolly_tag_get and prolly_tag_delete take an existing tag of 64 hex digits that an older
 * library made (else PROLLY_ENOTFOUND), as prolly_tag_list lists it. */
PROLLY_API int prolly_tag_get(prolly_id *out_commit, prolly_db *db, const char *name);
/* Lists tags in name order (same callback type as branches; names that are not valid branch
 * names are skipped, as there). PROLLY_EINVAL for db or fn NULL. */
PROLLY_API int prolly_tag_list(prolly_db *db, prolly_branch_fn fn, void *payload);

#ifdef __cplusplus
}
#endif
#endif /* PROLLY_H */
