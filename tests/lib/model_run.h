/*
 * model_run.h - the engine of the seeded randomized model tests (tests/test_model.c on the
 * memory store and LMDB, tests/test_pg_model.c on PostgreSQL): a run is a random sequence of
 * steps on one store (batch edits, bulk builds, range deletes, three-way merges, reopens),
 * each checked against the reference model (lib/model.h) with every read the library has.
 *
 * model_run.c holds the setup, the generators, the steps and the run; model_check.c the checks
 * after each step; model_merge.c the merge step and its model. A failed check prints its run,
 * seed and step on stderr and sets the run's failed flag; the test reports it.
 */
#ifndef MODEL_RUN_H
#define MODEL_RUN_H

#include "model.h"

#include <stdint.h>
#include <stdio.h>

#define MR_MAXV 8 /* versions kept for diffs */

/* Store kinds. */
enum { MR_MEM = 0, MR_LMDB = 1, MR_PG = 2 };

typedef struct mr_version {
	prolly_id id;
	tm_model m;
	int used;
} mr_version;

typedef struct mr_run {
	const char *name;
	uint64_t seed;
	uint64_t base_seed; /* $PROLLY_TEST_SEED or the default: the re-run hint gives it */
	const char *prog;   /* the test program, for the re-run hint */
	unsigned step;
	tm_rng rng;
	prolly_db *db;
	int kind;              /* MR_MEM, MR_LMDB, MR_PG */
	char *dir;             /* MR_LMDB: the environment's directory */
	char schema[64];       /* MR_PG: this run's schema on $PROLLY_PG_URL, dropped at the end */
	prolly_pg_options pgo; /* MR_PG: batch sizes and pool */
	size_t cache_bytes;
	unsigned node_size;   /* MR_MEM, MR_LMDB: the store's, from the seed (every size is run) */
	int key24;            /* keys are tm_key24(i) instead of random binary keys */
	uint64_t append_next; /* for key24 runs: the next key of the appending stream */
	unsigned big_den;     /* 1/big_den of values are big */
	size_t target;        /* tree size the edits hover around */
	size_t max_batch;     /* 0: no cap */
	tm_model m;           /* the current tree's records */
	prolly_id root;
	mr_version v[MR_MAXV];
	unsigned char *vbuf; /* TM_VAL_BIG scratch */
	/* Edits of the current batch own their bytes here. */
	unsigned char **owned;
	size_t n_owned, cap_owned;
	int failed;
	/* What the run covered (printed at the end). */
	size_t max_n;
	unsigned max_height;
	unsigned n_edits, n_builds, n_merges, n_conflicts, n_diffs, n_diff_entries, n_cursors, n_reopen;
} mr_run;

#define MR_FAILF(r, ...)                                                                           \
	do {                                                                                           \
		fprintf(stderr, "  [%s seed=0x%llx step=%u] ", (r)->name, (unsigned long long)(r)->seed,   \
		        (r)->step);                                                                        \
		fprintf(stderr, __VA_ARGS__);                                                              \
		fputc('\n', stderr);                                                                       \
		(r)->failed = 1;                                                                           \
	} while (0)

#define MR_RC_OK(r, expr)                                                                          \
	do {                                                                                           \
		int rc_ = (expr);                                                                          \
		if (rc_ != 0) {                                                                            \
			MR_FAILF(r, "%s:%d: %s returned %d (%s)", __FILE__, __LINE__, #expr, rc_,              \
			         prolly_last_error());                                                         \
		}                                                                                          \
	} while (0)

/* ---- model_run.c ----------------------------------------------------------------------------- */

/* A fresh store of kind (pg, for MR_PG only and may be NULL: batch_items, read_chunk and
 * pool_size), the run's generator seeded with base_seed ^ salt. 0, or non-zero with the run
 * failed; mr_dispose in either case. */
int mr_init(mr_run *r, const char *name, uint64_t base_seed, uint64_t salt, int kind,
            size_t cache_bytes, const prolly_pg_options *pg);
void mr_dispose(mr_run *r);
/* A run of steps random steps on a store of kind, trees hovering around target records (times
 * $PROLLY_TEST_SCALE), one value in big_den big (0: none), keys tm_key24 when key24; prints what
 * it covered, and the line that re-runs it (prog NAME with its seed) if it failed. Returns the
 * failed flag. */
int mr_model_run(const char *prog, const char *name, uint64_t base_seed, uint64_t salt, int kind,
                 size_t cache_bytes, int key24, unsigned steps, size_t target, unsigned big_den,
                 const prolly_pg_options *pg);

/* For the other files of the engine. */
unsigned char *mr_own(mr_run *r, const void *p, size_t n); /* a copy the run frees */
void mr_free_owned(mr_run *r);
size_t mr_new_key(mr_run *r, unsigned char *out);
void mr_add_edit(mr_run *r, prolly_edit *e, prolly_op op, const void *k, size_t klen);
size_t mr_gen_batch(mr_run *r, const tm_model *m, prolly_edit **out);
void mr_keep_version(mr_run *r, const prolly_id *id, const tm_model *m);
/* mr_keep_version taking m's records (m is left empty) rather than copying them. */
void mr_keep_version_move(mr_run *r, const prolly_id *id, tm_model *m);

/* ---- model_check.c --------------------------------------------------------------------------- */

/* The tree at root holds exactly m's records (a scan, the count, a stats walk, and the root of a
 * bulk build of m: history independence); verify re-hashes every node in the stats walk (only for
 * committed trees; mr_check_tree verifies). */
void mr_check_tree_v(mr_run *r, const prolly_id *root, const tm_model *m, const char *what,
                     int verify);
void mr_check_tree(mr_run *r, const prolly_id *root, const tm_model *m, const char *what);
/* Random reads of root against m: gets, get_many, rank and select, cursors. */
void mr_check_reads(mr_run *r, const prolly_id *root, const tm_model *m);
/* The diff from a to b, over a random range, against the models' own. */
void mr_check_diff(mr_run *r, const prolly_id *a, const tm_model *ma, const prolly_id *b,
                   const tm_model *mb);
int mr_slice_eq(prolly_slice s, const void *p, size_t n);

/* ---- model_merge.c --------------------------------------------------------------------------- */

/* Two branches edited from the current tree, merged three ways with a random resolver, against
 * the model of the merge. */
void mr_step_merge(mr_run *r);

#endif
