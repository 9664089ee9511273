/*
 * sync_fix.h - what the sync tests (tests/test_sync*.c) share: stores of every kind (memory,
 * LMDB in a scratch directory, PostgreSQL in a fresh schema on $PROLLY_PG_URL or a throwaway
 * cluster), histories to copy, and syncs of branches.
 *
 * A program calls sf_begin() first thing in main (it may fork: tm_pg_guard) and sf_end() last.
 */
#ifndef SYNC_FIX_H
#define SYNC_FIX_H

#include "prolly.h"

enum { SF_MEM, SF_LMDB, SF_PG, SF_KINDS };
extern const char *const sf_kind_name[SF_KINDS];
extern int sf_have_pg; /* a PostgreSQL server answered (without one, SF_PG stores fail) */

/* The server (tm_pg_guard, when with_pg) and the scratch directory: 0, or -1 without a
 * directory. Without with_pg no server is started or used (sf_have_pg 0). */
int sf_begin(int with_pg);
/* Drops the schemas the stores were given, removes the scratch directory. */
void sf_end(void);

/* The main of a program that includes ptest.h: sf_begin, its cases, sf_end. SF_MAIN_LOCAL: of
 * one whose cases use memory and LMDB stores only (no server started: a cluster of its own
 * costs seconds). */
#define SF_MAIN_WITH(with_pg)                                                                      \
	int main(int argc, char **argv)                                                                \
	{                                                                                              \
		if (sf_begin(with_pg))                                                                     \
			return 2;                                                                              \
		int rc = pt_run(argc, argv);                                                               \
		sf_end();                                                                                  \
		return rc;                                                                                 \
	}
#define SF_MAIN SF_MAIN_WITH(1)
#define SF_MAIN_LOCAL SF_MAIN_WITH(0)

/* A fresh store of kind, or NULL; a handle on one with default options (NULL with a message). */
prolly_store *sf_new_store(int kind);
prolly_db *sf_new_db(int kind);
/* Another store handle on the schema of the PostgreSQL store sf_new_store made last (as another
 * process would have); NULL without one. */
prolly_store *sf_pg_store_again(void);

/* Commits n puts of keys "k<start + i x step>" with values "v<round>-<i>" to branch. */
int sf_put_step(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int step,
                int round);
/* The same with step 1: keys "k<start..start+n)". */
int sf_put_range(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int round);
/* A small history: main with 3 commits, feature off it with 2, merged into main. */
int sf_make_history(prolly_db *db, prolly_id *main_head, prolly_id *feat_head);
/* The tree of commit. */
int sf_tree_of(prolly_id *tree, prolly_db *db, const prolly_id *commit);
/* 1 when the history and trees of commit in b are those in a: the same commits, each tree
 * complete; 0 otherwise. */
int sf_same_history(prolly_db *a, prolly_db *b, const prolly_id *commit);

/* Sets n (at most 4) branches of dst to heads, copying what dst lacks from src. */
int sf_sync_branches(prolly_sync_stats *st, prolly_db *dst, prolly_db *src,
                     const char *const *names, const prolly_id *heads, size_t n,
                     const prolly_sync_options *o);
/* Moves dst's main from expected to value, copying what it lacks: a fast-forward push, onto a
 * head dst holds (SY7). */
int sf_push_main(prolly_sync_stats *st, prolly_db *dst, prolly_db *src, const prolly_id *expected,
                 const prolly_id *value, const prolly_sync_options *o);

/* Adds n steps to main in db: a commit of one change each, and every 8th a branch of two commits
 * (60 records far apart changed) merged after one more commit to main (its tree differs from
 * main's in about 60 leaves, more than a write of 16 objects: the merge's comparison set
 * overflows, SY8). */
int sf_long_history(prolly_id *head, prolly_db *db, int from, int n);
/* Sets dst's main to h, copying its history from src with the given batch: *total the commits of
 * h's log, *st the copy's counters. */
int sf_clone_main(prolly_sync_stats *st, prolly_db *dst, prolly_db *src, const prolly_id *h,
                  size_t batch, int *total);

#endif
