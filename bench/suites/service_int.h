/*
 * service_int.h - private to the service suite (service.c: cells, threads, rows, hsvc_run;
 * service_ops.c: the fixture, the five operations, the value codec, the shared-store wrapper;
 * service_sql.c: the five operations as statements of the prolly extension, access = "sql").
 *
 * Data model of the suite (see service.c for the whole story):
 *   keys     "k" + 10 decimal digits of the slot, slot in [0, records): 11 bytes, ordered by slot.
 *   values   value_bytes (>= SVC_VALUE_MIN) bytes: slot (u64 LE), generation (u32 LE), filler
 *            derived from both, and a 32-bit checksum of everything before it. Any value read
 *            can be checked against the key it was read under (svc_value_check).
 *   branches tenant t: "t<t>/main" (index t), "t<t>/side-a", "t<t>/side-b";
 *            hot root h: "hot<h>/main" (index tenants + h).
 *   gens     0 the base tree, 1 side-a's edits, 2 side-b's edits, >= 3 commits made by workers.
 *
 * Invariants:
 *   S1  a worker's prolly_db is used by that worker's thread only; the store under it is shared
 *       through a borrowing bench_store (bench/lib/store.h), so closing a worker's handle never
 *       closes the shared store.
 *   S2  an operation's latency and store counters cover its timed part only: everything up to
 *       timed_end() in service_ops.c; validation work after it is neither timed nor counted (it
 *       may still show in the PostgreSQL server's own counters).
 *   S3  a ring holds trees of commits that were published on its branch during the current cell
 *       (access = "sql": the commits' ids, as prolly_diff in SQL takes refs); it is emptied
 *       when the fixture is restored, so one run may hold cells of both modes.
 */
#ifndef BENCH_SERVICE_INT_H
#define BENCH_SERVICE_INT_H

#include "harness.h"
#include "pgconn.h"

#include <pthread.h>
#include <stdint.h>

#define SVC_KEY_DIGITS 10
#define SVC_KEY_LEN (1 + SVC_KEY_DIGITS)
#define SVC_VALUE_MIN HW_SERVICE_VALUE_MIN /* slot, generation and checksum */
#define SVC_GEN_SIDE_A 1
#define SVC_GEN_SIDE_B 2
#define SVC_GEN_FIRST_WORKER 3

/* Error kinds of failed operations, in the order they are written in the errors column. */
enum {
	SVC_E_TIMEOUT,
	SVC_E_CONFLICT, /* compare-and-swap lost more than cas_retries times */
	SVC_E_STORE,
	SVC_E_CORRUPT,
	SVC_E_NOTFOUND,
	SVC_E_MERGE,
	SVC_E_VALIDATION,
	SVC_E_OTHER,
	SVC_N_ERR
};
extern const char *const svc_err_names[SVC_N_ERR];

/* The trees of the last commits published on one branch (S3). */
typedef struct svc_ring {
	pthread_mutex_t mu;
	prolly_id *trees; /* cap slots */
	uint32_t cap, n, next;
} svc_ring;

/* The fixture: what every cell starts from. */
typedef struct svc_fixture {
	const hw_service *cfg;
	uint64_t records;
	uint32_t value_bytes;
	uint32_t tenants, hot_roots;
	uint32_t side_keys; /* edits in each side branch's commit */
	prolly_id base_commit, base_tree;
	prolly_id *side_commit; /* [2 * tenant + side], side 0 = a, 1 = b */
	prolly_id *merged_tree; /* [tenant]: side-a's tree with side-b's edits, what a merge makes */
	uint64_t *side_slots;   /* [(2 * tenant + side) * side_keys + i] */
	svc_ring *rings;        /* tenants + hot_roots: one per main branch */
} svc_fixture;

/* One operation's outcome. */
typedef struct svc_result {
	int rc;             /* 0 or the PROLLY_E* code of the failure */
	int bad;            /* the result failed validation */
	int checked;        /* the result was validated */
	uint64_t t_end;     /* end of the timed part (bench_now_ns) */
	prolly_stats st;    /* thread counters at the end of the timed part */
	prolly_pg_stats pg; /* the PostgreSQL store's, likewise */
	uint32_t cas_attempts, conflicts, retries;
	uint64_t entries; /* diff entries, or changes a merge applied */
	char msg[256];    /* the failure, for the first_error column */
} svc_result;

/* Totals of one operation class (one worker's, or merged). */
typedef struct svc_class {
	hdr_hist *h; /* latency of every operation, failed ones included (ns) */
	uint64_t attempted, succeeded, timeouts;
	uint64_t completed, checked, bad; /* library calls that returned 0; of those checked; bad */
	uint64_t cas_attempts, conflicts, retries, entries;
	uint64_t errors[SVC_N_ERR];
	prolly_stats st;
	prolly_pg_stats pg;
} svc_class;

struct svc_cell;

typedef struct svc_worker {
	struct svc_cell *cell;
	const svc_fixture *fx;
	unsigned index;
	pthread_t th;
	int started;
	prolly_db *db;
	uint64_t rs;  /* PRNG state (splitmix64) */
	uint32_t gen; /* next value generation for commits */
	uint64_t seq; /* operations started (names of merge branches) */
	unsigned cell_index;
	svc_class cls[HW_N_SERVICE_OPS];
	prolly_buf buf;
	unsigned char *keys;  /* max(multi_read_keys, commit_keys) keys of SVC_KEY_LEN bytes */
	unsigned char *vals;  /* commit_keys values of value_bytes bytes */
	prolly_slice *slices; /* multi_read_keys */
	prolly_edit *edits;   /* commit_keys */
	PGconn *pg;           /* access = "sql": the worker's own connection (service_sql.c) */
	bench_buf arr[2];     /* access = "sql": the bytea[] parameters */
	int failed;           /* could not open its handle */
	char err[H_ERR];
	char first_err[320]; /* the first failure: class and r->msg */
} svc_worker;

/* ---- service_ops.c ---- */

/* "service: out of memory" / "service: WHAT: <error>: <message>" into err; both return -1. */
int svc_oom(char *err, size_t errn);
int svc_prolly_fail(char *err, size_t errn, const char *what, int rc);

/* The fixture (see service.c): init allocates (rings, side commits), build writes the trees and
 * commits (one txn), restore sets every fixture branch and removes every other one (one write)
 * and empties the rings. */
int svc_fixture_init(svc_fixture *fx, const hw_service *cfg, char *err, size_t errn);
void svc_fixture_dispose(svc_fixture *fx); /* also of a zeroed fixture */
int svc_fixture_build(svc_fixture *fx, prolly_db *db, uint64_t seed, char *err, size_t errn);
int svc_fixture_restore(svc_fixture *fx, prolly_db *db, char *err, size_t errn);
/* A prolly_db on store through a borrowing bench_store (bench/lib/store.h; S1). */
int svc_open_db(prolly_db **out, prolly_store *store);

uint64_t svc_rand(svc_worker *w);
uint64_t svc_below(svc_worker *w, uint64_t n);

void svc_key(unsigned char out[SVC_KEY_LEN], uint64_t slot);
/* Parses a key; 0 and *slot, or -1 if it is not a key of the key space [0, records). */
int svc_key_parse(const void *key, size_t len, uint64_t records, uint64_t *slot);
void svc_value(unsigned char *out, uint32_t n, uint64_t slot, uint32_t gen);
/* 0 if v is a well-formed value of n bytes for slot (and then *gen, if non-NULL); -1 if not. */
int svc_value_check(const void *v, size_t len, uint32_t n, uint64_t slot, uint32_t *gen);

/* "t3/main", "hot0/main" for main branch index b (tenants first). */
void svc_main_branch(char *out, size_t n, const svc_fixture *fx, uint32_t b);

void svc_ring_push(svc_ring *r, const prolly_id *tree);
/* A random retained tree; 0, or -1 if the ring is empty. */
int svc_ring_pick(svc_ring *r, svc_worker *w, prolly_id *out);

/* The operations; each fills r (see svc_result) and calls timed_end() exactly once. */
typedef void (*svc_op_fn)(svc_worker *w, svc_result *r);
extern const svc_op_fn svc_ops[HW_N_SERVICE_OPS];

/* Error kind of a failed operation's code. */
int svc_err_kind(int rc);

/* Shared by both access modes (service_ops.c). */
void svc_timed_end(svc_result *r);
void svc_fail(svc_result *r, int rc, const char *what);
void svc_invalid(svc_result *r, const char *fmt, const char *detail);
uint32_t svc_pick_branch(svc_worker *w);
/* The edits of one commit into w->keys, w->vals, w->edits; the generation used. */
uint32_t svc_commit_edits(svc_worker *w);
/* Checks (untimed) that a commit the store reported written is on branch: its head is commit,
 * or a commit made on top of it since. One read of the ref (and of the history in between). */
void svc_check_published(svc_worker *w, svc_result *r, const prolly_id *commit, const char *branch);
/* 0 when the n edits put on tree old give tree (in a txn never committed), non-zero if not or on
 * an error. */
int svc_changes_make(svc_worker *w, const prolly_id *old, const prolly_id *tree,
                     const prolly_edit *ed, size_t n);
/* Checks (untimed) that a diff of old against tree that reported entries changes was complete:
 * the changes, read again and put on old, give tree, and there are entries of them. */
void svc_check_diff(svc_worker *w, svc_result *r, const prolly_id *old, const prolly_id *tree,
                    uint64_t entries, const char *branch);
/* Checks a merged tree (ms->applied: side-b's changes found in it): every record, every change of
 * both sides, nothing else (the tree must be the fixture's merged_tree of tenant t). */
void svc_check_merge(svc_worker *w, svc_result *r, uint32_t t, const prolly_id *root,
                     const prolly_merge_stats *ms, const char *branch);

/* ---- service_sql.c: access = "sql", every operation ONE statement through the extension ---- */

/* CREATE EXTENSION prolly in schema on conn (once per run); -1 with err if it cannot be, or if
 * the database has it in another schema (an extension is installed once per database). */
int svc_sql_install(PGconn *conn, const char *schema, char *err, size_t errn);
/* The worker's connection and its prepared statements; 0 or a PROLLY_E* code. */
int svc_sql_open(svc_worker *w, const char *url, const char *schema);
extern const svc_op_fn svc_sql_ops[HW_N_SERVICE_OPS];

#endif
