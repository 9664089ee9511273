/*
 * sql_model.h - the parts of tests/test_sql_model.c, the extension's SQL functions against the
 * reference model (docs/testing.md, "The SQL functions against the model"): a run's state and
 * its checks, the SQL helpers, the model's commits and the random choices (sql_model.c), the
 * write steps (sql_model_write.c) and the read steps (sql_model_read.c). A step names itself in
 * run->step before its statements; a failed check prints the file, line, condition, seed and step
 * and marks the run failed, and the case fails when its run has.
 */
#ifndef PROLLY_TEST_SQL_MODEL_H
#define PROLLY_TEST_SQL_MODEL_H

#include "model.h"

#include <libpq-fe.h>
#include <stdint.h>

#define SM_NBRANCH 4 /* names[0..SM_NBRANCH) are branches, the rest tags */
#define SM_NREFS 6
#define SM_NKEYS 1200 /* the key pool's room; a case uses up to its maxkeys of it */
#define SM_MAXP 130
#define SM_BYTEA 17
#define SM_TEXT 25

/* The names of branches (the first SM_NBRANCH) and tags a run uses: sql_model.c. */
extern const char *const sm_names[SM_NREFS];

typedef struct sm_commit {
	char id[PROLLY_ID_HEX_SIZE];
	tm_model m;
	long parent;  /* index of the first parent, -1 for the root commit */
	long parent2; /* a merge's second parent (the commit merged), -1 for others */
	int dead;     /* unreachable from every branch and tag at a gc, which removed it */
} sm_commit;

/* What a run did, counted for its summary line. */
enum {
	SM_D_WRITE,
	SM_D_CONFLICT,
	SM_D_MERGE3,
	SM_D_FAST,
	SM_D_TXN,
	SM_D_ROLLBACK,
	SM_D_CLIENT,
	SM_D_READ,
	SM_D_GC,
	SM_D_GC_GONE,
	SM_D_BAD_REF,
	SM_D_EXPECTED,
	SM_D_COUNT
};

typedef struct sm_run {
	PGconn *c;
	prolly_db *db;
	tm_rng r;
	sm_commit *commits;
	size_t ncommits, cap;
	long head[SM_NREFS]; /* index into commits of each branch and tag, -1: not there */
	unsigned char keys[SM_NKEYS][TM_KEY_MAX];
	size_t klen[SM_NKEYS], nkeys, maxkeys;
	unsigned char *val; /* TM_VAL_BIG bytes */
	unsigned big_den;
	int fresh;  /* pick_key makes a new key while the pool has room */
	int in_txn; /* inside BEGIN: the C client must not write (it would wait for our locks) */
	char step[200];
	uint64_t seed;
	unsigned done[SM_D_COUNT];
	int failed; /* a check failed (sm_fail) */
} sm_run;

typedef struct sm_params {
	const char *v[SM_MAXP];
	int len[SM_MAXP], fmt[SM_MAXP];
	Oid type[SM_MAXP];
	int n;
} sm_params;

/* ---- checks (sql_model.c) -------------------------------------------------------------------- */

/* Prints where and what failed, with the run's seed and step, and marks the run failed. */
__attribute__((format(printf, 5, 6))) void sm_fail(sm_run *t, const char *file, int line,
                                                   const char *cond, const char *fmt, ...);
#define SM_CHECK(t, cond, ...)                                                                     \
	do {                                                                                           \
		if (!(cond))                                                                               \
			sm_fail((t), __FILE__, __LINE__, #cond, __VA_ARGS__);                                  \
	} while (0)
/* SM_CHECK, and a return from the (void) function on failure. */
#define SM_REQUIRE(t, cond)                                                                        \
	do {                                                                                           \
		if (!(cond)) {                                                                             \
			sm_fail((t), __FILE__, __LINE__, #cond, "%s", "");                                     \
			return;                                                                                \
		}                                                                                          \
	} while (0)

/* ---- SQL (sql_model.c) ----------------------------------------------------------------------- */

/* Parameters in binary form: text, bytes (never NULL: n may be 0), SQL NULL of type, and a bound
 * or prefix (k[0..n) when has, else NULL). */
void sm_p_text(sm_params *p, const char *s);
void sm_p_bytes(sm_params *p, const void *b, size_t n);
void sm_p_null(sm_params *p, Oid type);
void sm_p_bound(sm_params *p, int has, const void *k, size_t n);
/* Runs sql with p's parameters (NULL: none), results in binary. A result that is not a success
 * (or, with want_state, not an error of that SQLSTATE) fails the run. The caller PQclears it. */
PGresult *sm_q(sm_run *t, const char *sql, const sm_params *p, const char *want_state);
/* sm_q without parameters, its result cleared. */
void sm_q0(sm_run *t, const char *sql);
/* Value (row, col) of a binary result, its length in *n; NULL for SQL NULL. */
const unsigned char *sm_val_at(const PGresult *res, int row, int col, size_t *n);
/* A big-endian unsigned integer of n bytes (a binary int4 or int8). */
uint64_t sm_be_uint(const unsigned char *p, size_t n);
/* "ARRAY[$first,...]::bytea[]" of n parameters into out. */
void sm_array_sql(char *out, size_t cap, int first, size_t n);

/* ---- the model's commits (sql_model.c) --------------------------------------------------------- */

/* Branch or tag b (-1: none) now names commit id (idlen bytes of hex) whose records are m (moved
 * from, disposed of): an id seen before must hold the same records; a new one is recorded with
 * its first parent. */
void sm_land(sm_run *t, int b, const char *id, size_t idlen, tm_model *m, long parent);
/* sm_land of the commit id that res's one value holds (a write function's result). */
void sm_land_result(sm_run *t, PGresult *res, int b, tm_model *m, long parent);
/* res's one value is the id of commit at. */
void sm_check_id(sm_run *t, const PGresult *res, long at);
/* The index of commit id (hex), or -1 when the run never saw it. */
long sm_find_commit(const sm_run *t, const char *id);
/* Marks in seen (t->ncommits bytes) the commits commit at reaches through its parents (both of
 * a merge's), at included, that seen did not hold yet; returns how many it marked. */
size_t sm_ancestors(const sm_run *t, long at, char *seen);
/* Back to ncommits records (those a rolled-back transaction made go). */
void sm_forget_after(sm_run *t, size_t ncommits);

/* ---- random choices (sql_model.c) -------------------------------------------------------------- */

/* A key of the pool (or a new one added to it: always while t->fresh, else one time in five). */
void sm_pick_key(sm_run *t, const unsigned char **k, size_t *n);
/* A branch that exists (live 1) or not (live 0; -1 when every one exists). */
int sm_pick_branch(sm_run *t, int live);
/* A commit no gc removed. */
long sm_live_commit(sm_run *t);
/* A REF the model can follow into ref, and the index of its commit. */
long sm_pick_ref(sm_run *t, char ref[80]);
/* A bound (1) or none (0): a pool key, sometimes cut short. */
int sm_pick_bound(sm_run *t, const unsigned char **k, size_t *n);
/* Key order: bytes, then length. */
int sm_bytes_cmp(const void *a, size_t an, const void *b, size_t bn);
/* 1 when record a (NULL: absent) holds v[0..n) (v NULL: absent). */
int sm_same_val(const tm_rec *a, const unsigned char *v, size_t n);

/* ---- steps (sql_model_write.c, sql_model_read.c) ------------------------------------------------ */

/* prolly_commit of n edits to branch b, each a delete one time in del_den (0: never). */
void sm_commit_n(sm_run *t, int b, size_t n, unsigned del_den);
void sm_w_commit(sm_run *t);
void sm_w_put_delete(sm_run *t);
void sm_w_delete_range(sm_run *t);
void sm_w_branch(sm_run *t);
/* may_fail 0: never resolve 'fail' (inside a transaction, whose error would abort it). */
void sm_w_merge(sm_run *t, int may_fail);
void sm_w_reset(sm_run *t);
void sm_w_tag(sm_run *t);
void sm_w_pick(sm_run *t, int may_fail);
/* Through the C client: a commit, a gc. Never inside a transaction of the run's session. */
void sm_w_client(sm_run *t);
void sm_w_gc(sm_run *t);
void sm_r_get(sm_run *t);
void sm_r_get_many(sm_run *t);
void sm_r_scan(sm_run *t);
void sm_r_count(sm_run *t);
void sm_r_diff(sm_run *t);
void sm_r_resolve(sm_run *t);
void sm_r_bad_ref(sm_run *t);
void sm_r_log(sm_run *t);
void sm_r_conflicts(sm_run *t);
void sm_r_stats(sm_run *t);
void sm_r_history(sm_run *t);
/* prolly_commit with expected (and merge, at random): a compare-and-swap, or a snapshot-isolation
 * commit that merges its edits into a moved head unless a key they change was written since. */
void sm_w_commit_expected(sm_run *t, int may_fail);
/* The C client reads branch b: its head and tree. */
void sm_r_client(sm_run *t, int b);

#endif
