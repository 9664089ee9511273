/*
 * model.h - test helpers shared by every test program (linked in from tests/lib/model.c):
 *
 *   - tm_rng: the tests' deterministic stream (bench/lib/rng.h's xoshiro256**);
 *   - key and value generators (random binary keys, fixed 24-byte ordered keys, values);
 *   - tm_model: a sorted array of (key, value) byte strings, the reference map the engine is
 *     compared with;
 *   - glue between the model and the engine (build a tree from a model, compare a tree with it);
 *   - tm_tap: a store that wraps another one and can corrupt, drop or count what it returns;
 *   - scratch directories for the LMDB store;
 *   - a PostgreSQL server for programs that need one (a throwaway cluster unless $PROLLY_PG_URL
 *     is set), and fresh schemas on it.
 *
 * Nothing here registers tests or defines main.
 */
#ifndef PROLLY_TEST_MODEL_H
#define PROLLY_TEST_MODEL_H

#include "passthru.h"
#include "prolly.h"
#include "rng.h"

#include <stddef.h>
#include <stdint.h>

/* ---- PRNG ---------------------------------------------------------------------------------- */

typedef bench_xoshiro tm_rng; /* the tests' stream: xoshiro256** (bench/lib/rng.h) */

void tm_rng_seed(tm_rng *r, uint64_t seed);
uint64_t tm_rng_next(tm_rng *r);
/* Uniform in [0, n); n == 0 gives 0. */
uint64_t tm_rng_below(tm_rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
uint64_t tm_rng_range(tm_rng *r, uint64_t lo, uint64_t hi);
/* 1 with probability num/den. */
int tm_rng_chance(tm_rng *r, uint64_t num, uint64_t den);
void tm_rng_bytes(tm_rng *r, void *out, size_t n);
/* Fisher-Yates shuffle of n elements of `size` bytes. */
void tm_shuffle(tm_rng *r, void *base, size_t n, size_t size);

/* The test's scale factor: $PROLLY_TEST_SCALE (default 1, at least 1). Multiply sizes by it. */
unsigned tm_scale(void);

/* ---- generators ---------------------------------------------------------------------------- */

#define TM_KEY_MAX 64
#define TM_KEY24 24
#define TM_VAL_BIG 65536

/* A random key of 1..TM_KEY_MAX bytes, any byte values (binary, zeros included), with a bias
 * toward short keys and shared prefixes so that prefix scans find something. Returns its length. */
size_t tm_gen_key(tm_rng *r, unsigned char *out);
/* Fixed 24-byte key ordered by i: 8 bytes big-endian i, then 16 bytes derived from i. Like the
 * benchmark's keys. */
void tm_key24(unsigned char out[TM_KEY24], uint64_t i);
/* A value of 0..200 bytes, with probability 1/big_den (0: never) up to TM_VAL_BIG bytes. out must
 * hold TM_VAL_BIG bytes. Returns its length. */
size_t tm_gen_value(tm_rng *r, unsigned char *out, unsigned big_den);

/* ---- the reference model ------------------------------------------------------------------- */

typedef struct tm_rec {
	unsigned char *k;
	size_t klen;
	unsigned char *v;
	size_t vlen;
} tm_rec;

typedef struct tm_model {
	tm_rec *r;
	size_t n, cap;
} tm_model;

void tm_model_init(tm_model *m);
void tm_model_dispose(tm_model *m);
void tm_model_clear(tm_model *m);
/* Deep copy; dst must be initialised (its contents are replaced). */
void tm_model_copy(tm_model *dst, const tm_model *src);
/* Moves src's records into dst (dst's own are freed) and leaves src empty: where a copy would be
 * disposed of right after, this saves copying every record. */
void tm_model_move(tm_model *dst, tm_model *src);
/* Index of the first record whose key is >= key (m->n if none). */
size_t tm_model_lower_bound(const tm_model *m, const void *key, size_t klen);
/* Index of key, or -1. */
long tm_model_find(const tm_model *m, const void *key, size_t klen);
/* The record for key or NULL. */
const tm_rec *tm_model_get(const tm_model *m, const void *key, size_t klen);
void tm_model_put(tm_model *m, const void *key, size_t klen, const void *val, size_t vlen);
/* 1 if the key was present. */
int tm_model_del(tm_model *m, const void *key, size_t klen);
/* Removes records [lo, hi) (indexes, lo <= hi <= m->n) in one move of the tail. */
void tm_model_cut(tm_model *m, size_t lo, size_t hi);
/* Applies edits in order (a later edit of the same key wins, deleting an absent key is a no-op). */
void tm_model_apply(tm_model *m, const prolly_edit *edits, size_t n);
/* 1 if both hold the same records. */
int tm_model_equal(const tm_model *a, const tm_model *b);
/* The three-way merge of docs/diff-merge.md on models (tests/lib/model_merge.c): out (initialised;
 * its contents are replaced) gets ours with theirs' changes, each key's conflict (both sides
 * changed it differently) settled by how (FAIL leaves ours; CALLBACK takes the value the model
 * tests' resolver gives); st the counts prolly_merge reports; each conflicting key is put into
 * conflicts (with an empty value). */
void tm_model_merge(tm_model *out, prolly_merge_stats *st, tm_model *conflicts,
                    const tm_model *base, const tm_model *ours, const tm_model *theirs,
                    prolly_resolver how);
/* Records in range (the engine's cursor semantics: bounds, prefix, reverse), as indexes into m
 * in visiting order. *out is malloc'd; returns the count. */
size_t tm_model_range(const tm_model *m, const prolly_range *range, size_t **out);
/* 1 if record i of m passes range's bounds and prefix (ignoring reverse). */
int tm_model_in_range(const tm_model *m, size_t i, const prolly_range *range);

/* ---- engine glue --------------------------------------------------------------------------- */

/* Bulk-builds the model's records into txn. 0 or the failing call's code. */
int tm_build(prolly_id *out, prolly_txn *txn, const tm_model *m);
/* Builds in a fresh txn and commits it. */
int tm_build_commit(prolly_id *out, prolly_db *db, const tm_model *m);

/* A handle on a new memory store with the given cache budget; exits the test program (status 2)
 * if it cannot be made. */
prolly_db *tm_open_mem(size_t cache_bytes);
/* The same on a new LMDB store in directory dir (which must exist). */
prolly_db *tm_open_lmdb(const char *dir, size_t cache_bytes);

/* A PROLLY_PUT of string key k to string value v (both borrowed, NUL not included). */
prolly_edit tm_put(const char *k, const char *v);
/* prolly_commit_edits of tm_put(k, v) on branch. */
int tm_commit_put(prolly_id *out, prolly_db *db, const char *branch, const char *k, const char *v,
                  const char *msg);
/* tm_commit_put (message k) with the calling thread's store round trips counted: returns them,
 * its code in *rc. */
unsigned long long tm_commit_put_trips(prolly_id *out, prolly_db *db, const char *branch,
                                       const char *k, const char *v, int *rc);
/* A commit with explicit everything (prolly_commit_create), in its own txn. */
int tm_commit_raw(prolly_id *out, prolly_db *db, const prolly_id *tree, const prolly_id *parents,
                  size_t np, int64_t time_us, const char *msg);
/* An id of 32 bytes b (not the id of anything stored). */
prolly_id tm_fake_id(unsigned char b);

/* The value of key k in the tree of commit c, as a NUL-terminated string in buf (cap bytes,
 * truncated to fit; "" when absent). Returns prolly_get's code (PROLLY_ENOTFOUND when absent) or
 * prolly_commit_read's. */
int tm_value_at(char *buf, size_t cap, prolly_db *db, const prolly_id *c, const char *k);

/* Fills m with random records (tm_gen_key keys, tm_gen_value values with big_den) until it
 * holds n; tm_random_model with big_den 1000. */
void tm_random_model_big(tm_model *m, tm_rng *r, size_t n, unsigned big_den);
void tm_random_model(tm_model *m, tm_rng *r, size_t n);
/* Compares tree root (full forward cursor scan and count) with m. Returns 0 if equal; otherwise
 * prints what differs to stderr (prefixed by `what`) and returns -1 (or the engine error). */
int tm_tree_check(prolly_db *db, const prolly_id *root, const tm_model *m, const char *what);

/* Hex of an id in a static rotating buffer (for messages; 4 may be live at once). */
const char *tm_hex(const prolly_id *id);
/* Hex (up to 40 bytes, then "...") of a byte string, for messages. Static rotating buffer. */
const char *tm_bhex(const void *p, size_t n);

/* ---- tap store ----------------------------------------------------------------------------- */

/* What the tap does to the bytes returned for `target` by get_nodes. */
typedef enum tm_tap_mode {
	TM_TAP_PASS = 0,
	TM_TAP_FLIP,     /* xor byte `pos` with `mask` */
	TM_TAP_TRUNCATE, /* return only the first `pos` bytes */
	TM_TAP_REPLACE,  /* return the bytes of `other` instead */
	TM_TAP_DROP,     /* report the node absent */
	TM_TAP_EXTEND    /* append `pos` zero bytes */
} tm_tap_mode;

typedef struct tm_tap {
	tp_store tp; /* must be first: a pass-through (passthru.h) whose get_nodes, write and
	                get_ancestors the tap replaces; tp.base is the store */
	tm_tap_mode mode;
	prolly_id target;
	prolly_id other;
	size_t pos;
	unsigned char mask;
	/* Counted atomically: a store is called from several threads at once (a txn's background
	 * flushes, cursor read-ahead, the caller's own threads). */
	_Atomic uint64_t hits;         /* times target was served (modified) */
	_Atomic uint64_t nodes_served; /* every node handed out by get_nodes */
	_Atomic uint64_t writes;
	/* If set, called with every node written through the tap. */
	void (*on_write)(void *payload, const prolly_id *id, const void *data, size_t size);
	void *on_write_payload;
} tm_tap;

/* Wraps inner (owned from now on; closed with the tap). The tap starts in TM_TAP_PASS mode. */
int tm_tap_new(tm_tap **out, prolly_store *inner);
/* A handle on a new memory store behind a tap (*tap, closed with the handle) with no node cache,
 * so that every read reaches the tap; exits the test program (status 2) if it cannot be made. */
prolly_db *tm_open_tapped_mem(tm_tap **tap);
/* An on_write that records the id of every node written: on_write_payload is a prolly_id **
 * into an array the caller made large enough; each id is stored there and the pointer moved on
 * (the ids written are then the array up to where the pointer stands). */
void tm_record_id(void *payload, const prolly_id *id, const void *data, size_t size);

/* ---- scratch directories ------------------------------------------------------------------- */

/* Creates a fresh directory under $TMPDIR (or /tmp); path is malloc'd. NULL on failure. */
char *tm_tmpdir(const char *tag);

/* The whole file as a NUL-terminated malloc'd string, or NULL. */
char *tm_read_file(const char *path);
/* Removes a directory tree. */
void tm_rmtree(const char *path);
/* The process's mapped address space in bytes (VmSize), 0 if unknown: what an address-space
 * limit (setrlimit(RLIMIT_AS)) is set above. */
size_t tm_vm_size(void);
/* What f(arg) writes on standard error, into out (size, NUL-terminated, cut to fit): fd 2 goes
 * to a temporary file meanwhile. Returns f's value, or -1 if fd 2 could not be moved. */
int tm_stderr_of(int (*f)(void *), void *arg, char *out, size_t size);

/* ---- PostgreSQL ---------------------------------------------------------------------------- */

/* Makes sure $PROLLY_PG_URL names a server; call it first thing in main. With PROLLY_PG_URL set
 * it returns 0 at once. Otherwise it starts a throwaway cluster with scripts/pg-cluster.sh
 * ($PROLLY_PG_SCRIPT, else scripts/ or ../scripts/ from the current directory), exports what the
 * script prints (PROLLY_PG_URL, PROLLY_PG_DIR, ...) and forks. The child returns 0 and runs the
 * tests. The parent never returns: it waits for the child (passing SIGINT, SIGTERM and SIGHUP on
 * to it), stops the cluster -- whatever happened to the child -- and exits with the child's status
 * (1 with a TAP "not ok" line if it died of a signal). Returns -1 (with a message on stderr) if
 * no cluster could be started; the caller must then report a failure, never skip. */
int tm_pg_guard(void);

/* tm_pg_guard for a TAP program's main: on failure it prints the "not ok" line and the count
 * line that report it, and returns -1 (main then returns 1). */
int tm_pg_guard_tap(void);

/* A fresh schema name, "prolly_<tag>_<pid>_<n>", into out (at most 63 bytes). */
void tm_pg_schema_name(char out[64], const char *tag);

/* DROP SCHEMA IF EXISTS "schema" CASCADE on $PROLLY_PG_URL. 0, or -1 with a message on stderr. */
int tm_pg_schema_drop(const char *schema);

/* A handle on a fresh memory store (lmdb 0) or LMDB directory (lmdb 1, a temp dir named after
 * tag, removed by tm_db_close), optionally through a tap store (tap non-zero). retain and
 * flush_bytes (0: default) go to prolly_options. */
typedef struct tm_db {
	prolly_db *db;
	tm_tap *tap; /* NULL unless asked for */
	char *dir;   /* the LMDB directory, or NULL */
} tm_db;
int tm_db_open(tm_db *t, int lmdb, const char *tag, int tap, unsigned retain, size_t flush_bytes);
void tm_db_close(tm_db *t);

/* Defines tests NAME_mem and NAME_lmdb running one body with its `lmdb` argument 0 and 1 (for
 * files that include ptest.h). */
#define TM_BOTH_STORES(name)                                                                       \
	static void name##_body(int lmdb);                                                             \
	PT_TEST(name##_mem)                                                                            \
	{                                                                                              \
		name##_body(0);                                                                            \
	}                                                                                              \
	PT_TEST(name##_lmdb)                                                                           \
	{                                                                                              \
		name##_body(1);                                                                            \
	}                                                                                              \
	static void name##_body(int lmdb)

#endif
