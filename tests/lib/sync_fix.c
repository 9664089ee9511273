/*
 * sync_fix.c - what the sync tests share (sync_fix.h).
 */
#include "sync_fix.h"

#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sf_kind_name[SF_KINDS] = {"mem", "lmdb", "pg"};
int sf_have_pg;
static char pg_schemas[64][64];
static int n_pg_schemas;
static char *scratch;
static int scratch_n;

int sf_begin(int with_pg)
{
	sf_have_pg = with_pg && tm_pg_guard() == 0;
	scratch = tm_tmpdir("sync");
	return scratch ? 0 : -1;
}

void sf_end(void)
{
	for (int i = 0; i < n_pg_schemas; i++)
		tm_pg_schema_drop(pg_schemas[i]);
	if (scratch)
		tm_rmtree(scratch);
	free(scratch);
	scratch = NULL;
}

prolly_store *sf_new_store(int kind)
{
	prolly_store *st = NULL;
	if (kind == SF_MEM) {
		if (prolly_store_mem_new(&st))
			return NULL;
	} else if (kind == SF_LMDB) {
		char dir[600];
		snprintf(dir, sizeof(dir), "%s/s%d", scratch, scratch_n++);
		if (prolly_store_lmdb_open(&st, dir, 0))
			return NULL;
	} else {
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		if (!sf_have_pg || n_pg_schemas == 64)
			return NULL;
		tm_pg_schema_name(pg_schemas[n_pg_schemas], "sync");
		o.schema = pg_schemas[n_pg_schemas++];
		if (prolly_store_pg_open(&st, getenv("PROLLY_PG_URL"), &o))
			return NULL;
	}
	return st;
}

prolly_store *sf_pg_store_again(void)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	prolly_store *st = NULL;
	if (!sf_have_pg || n_pg_schemas == 0)
		return NULL;
	o.schema = pg_schemas[n_pg_schemas - 1];
	return prolly_store_pg_open(&st, getenv("PROLLY_PG_URL"), &o) ? NULL : st;
}

prolly_db *sf_new_db(int kind)
{
	prolly_db *db = NULL;
	prolly_store *st = sf_new_store(kind);
	if (!st || prolly_db_new(&db, st, NULL)) {
		fprintf(stderr, "  cannot open a %s store: %s\n", sf_kind_name[kind], prolly_last_error());
		return NULL;
	}
	return db;
}

/* Commits n puts of keys "k<start + i x step>" with values "v<round>-<i>" to branch. */
int sf_put_step(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int step,
                int round)
{
	prolly_edit *e = calloc((size_t)n, sizeof(*e));
	char(*kv)[2][32] = calloc((size_t)n, sizeof(*kv));
	int rc = PROLLY_ENOMEM;
	if (e && kv) {
		for (int i = 0; i < n; i++) {
			snprintf(kv[i][0], 32, "k%08d", start + i * step);
			snprintf(kv[i][1], 32, "v%d-%d", round, start + i * step);
			e[i].op = PROLLY_PUT;
			e[i].key = (prolly_slice){kv[i][0], strlen(kv[i][0])};
			e[i].value = (prolly_slice){kv[i][1], strlen(kv[i][1])};
		}
		rc = prolly_commit_edits(out, db, branch, e, (size_t)n, "put");
	}
	free(e);
	free(kv);
	return rc;
}

/* Commits n puts of keys "k<start..start+n)" with values "v<round>-<i>" to branch. */
int sf_put_range(prolly_id *out, prolly_db *db, const char *branch, int start, int n, int round)
{
	return sf_put_step(out, db, branch, start, n, 1, round);
}

/* A small history: main with 3 commits, feature off it with 2, merged into main. */
int sf_make_history(prolly_db *db, prolly_id *main_head, prolly_id *feat_head)
{
	prolly_id c;
	int rc;
	if ((rc = sf_put_range(&c, db, "main", 0, 3000, 1)) ||
	    (rc = sf_put_range(&c, db, "main", 10, 5, 2)))
		return rc;
	if ((rc = prolly_branch_create(db, "feature", &c)))
		return rc;
	if ((rc = sf_put_range(&c, db, "main", 100, 3, 3)) ||
	    (rc = sf_put_range(&c, db, "feature", 2000, 4, 4)) ||
	    (rc = sf_put_range(&c, db, "feature", 5000, 2, 5)))
		return rc;
	if ((rc = prolly_merge_branches(NULL, NULL, db, "main", "feature", NULL, "merge")))
		return rc;
	if ((rc = prolly_branch_head(main_head, db, "main")))
		return rc;
	return prolly_branch_head(feat_head, db, "feature");
}

static int count_log(void *payload, const prolly_commit *c)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

/* The history and trees of commit in b are those in a: the same commits, each tree complete. */
int sf_same_history(prolly_db *a, prolly_db *b, const prolly_id *commit)
{
	int na = 0, nb = 0;
	if (prolly_log(a, commit, count_log, &na) || prolly_log(b, commit, count_log, &nb) || na != nb)
		return 0;
	prolly_commit *ca = NULL;
	prolly_tree_stats sa = PROLLY_TREE_STATS_INIT, sb = PROLLY_TREE_STATS_INIT;
	int ok = prolly_commit_read(&ca, b, commit) == 0 &&
	         prolly_tree_stats_get(&sb, b, &ca->tree, 1) == 0 &&
	         prolly_tree_stats_get(&sa, a, &ca->tree, 0) == 0 && sa.nodes == sb.nodes &&
	         sa.records == sb.records;
	prolly_commit_free(ca);
	return ok;
}

int sf_sync_branches(prolly_sync_stats *st, prolly_db *dst, prolly_db *src,
                     const char *const *names, const prolly_id *heads, size_t n,
                     const prolly_sync_options *o)
{
	prolly_ref_update u[4];
	char refname[4][64];
	memset(u, 0, sizeof(u));
	for (size_t i = 0; i < n; i++) {
		snprintf(refname[i], sizeof(refname[i]), "refs/heads/%s", names[i]);
		u[i].name = refname[i];
		u[i].expect = PROLLY_REF_EXPECT_ANY;
		u[i].value = heads[i];
	}
	return prolly_sync(st, dst, src, NULL, 0, u, n, o);
}

/* Moves dst's main from expected to value, copying what it lacks: a fast-forward push, onto a
 * head dst holds (SY7). */
int sf_push_main(prolly_sync_stats *st, prolly_db *dst, prolly_db *src, const prolly_id *expected,
                 const prolly_id *value, const prolly_sync_options *o)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/main";
	u.expect = PROLLY_REF_EXPECT_VALUE;
	u.expected = *expected;
	u.value = *value;
	return prolly_sync(st, dst, src, NULL, 0, &u, 1, o);
}

int sf_tree_of(prolly_id *tree, prolly_db *db, const prolly_id *commit)
{
	prolly_commit *c = NULL;
	int rc = prolly_commit_read(&c, db, commit);
	if (!rc)
		*tree = c->tree;
	prolly_commit_free(c);
	return rc;
}

/* Adds n steps to main in db: a commit of one change each, and every 8th a branch of two commits
 * (60 records far apart changed) merged after one more commit to main (its tree differs from
 * main's in about 60 leaves, more than a write of 16 objects: the merge's comparison set
 * overflows, SY8). */
int sf_long_history(prolly_id *head, prolly_db *db, int from, int n)
{
	prolly_id c;
	int rc = 0;
	for (int i = from; i < from + n && !rc; i++) {
		if (i % 8 != 7) {
			rc = sf_put_range(head, db, "main", 20 * i, 1, i);
			continue;
		}
		if ((rc = prolly_branch_create(db, "side", head)) ||
		    (rc = sf_put_step(&c, db, "side", 5 + i, 60, 331, i)) ||
		    (rc = sf_put_range(&c, db, "side", 7 + i, 1, i)) ||
		    (rc = sf_put_range(head, db, "main", 20 * i, 1, i)) ||
		    (rc = prolly_merge_branches(head, NULL, db, "main", "side", NULL, "merge")))
			break;
		rc = prolly_branch_delete(db, "side");
	}
	return rc;
}

/* Sets dst's main to h, copying its history from src with the given batch: *total the commits of
 * h's log, *st the copy's counters. */
int sf_clone_main(prolly_sync_stats *st, prolly_db *dst, prolly_db *src, const prolly_id *h,
                  size_t batch, int *total)
{
	const char *names[1] = {"main"};
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	int rc;
	o.batch = batch;
	*total = 0;
	if ((rc = prolly_log(src, h, count_log, total)))
		return rc;
	return sf_sync_branches(st, dst, src, names, h, 1, &o);
}
