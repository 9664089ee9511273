/*
 * test_sync_model.c - history between stores against the reference model, seeded and randomized.
 *
 * Three stores, one of each kind (memory, LMDB, PostgreSQL: tests/lib/sync_fix.h), each with the
 * other two recorded as remotes, start from one commit of main copied to all three. Then a random
 * run of steps on random stores, checked against a model of every commit made (its records and
 * its parents; commit ids are the same in every store) and of every store's branches and
 * remote-tracking refs:
 *   - commits to a branch, branches made at a head and deleted, merges of two branches (ours or
 *     theirs; the model merges with tm_model_merge against the merge base the store names);
 *   - prolly_sync of a branch from one store to another (its compare-and-swap expecting what the
 *     destination holds), after which both hold the same history for it (sf_same_history);
 *   - prolly_push, with and without force: it lands when the remote lacks the branch or its head
 *     is an ancestor of ours (the model's parents say), and otherwise is PROLLY_ECONFLICT with
 *     nothing moved; the pushing store's tracking ref follows;
 *   - prolly_fetch of every branch of a remote into the tracking refs, which then name what the
 *     remote's branches name, and no more;
 *   - gc (reflog_days 0), after which K6 holds over the whole store (tests/lib/k6.h) and every
 *     branch and tracking ref still reads as the model says;
 *   - reads of a branch or tracking ref: its head, its tree and those of up to three ancestors;
 *     one that is not there must not resolve.
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_sync_model.
 */
#include "lib/k6.h"
#include "lib/model.h"
#include "lib/sync_fix.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NST SF_KINDS /* stores: one of each kind */
#define NBR 3        /* branches */
#define NKEY 400     /* the key pool */

static const char *const br_names[NBR] = {"main", "b1", "b2"};

typedef struct mcommit {
	prolly_id id;
	tm_model m;
	long p1, p2; /* parents' indexes, -1 for none */
} mcommit;

typedef struct sm {
	prolly_db *db[NST];
	tm_rng r;
	uint64_t seed;
	char step[160];
	mcommit *c;
	size_t n, cap;
	long head[NST][NBR];       /* each store's branches: commit indexes, -1 absent */
	long track[NST][NST][NBR]; /* store s's remotes/<kind d>/<branch>: -1 absent */
	unsigned char keys[NKEY][TM_KEY_MAX];
	size_t klen[NKEY], nkeys;
	unsigned done[8];
} sm;

enum { S_COMMIT, S_MERGE, S_SYNC, S_PUSH, S_PUSH_REFUSED, S_FETCH, S_GC, S_READ };

/* A failed check names the seed, the step and the library's last error (perhaps older than the
 * step: a call that succeeds leaves it as it was). */
#define CHECK(t, cond)                                                                             \
	PT_CHECKF(cond, "seed %#llx, step %s (last error: %s)", (unsigned long long)(t)->seed,         \
	          (t)->step, prolly_last_error())

/* ---- the model ------------------------------------------------------------------------------ */

static long find(const sm *t, const prolly_id *id)
{
	for (size_t i = 0; i < t->n; i++)
		if (prolly_id_equal(&t->c[i].id, id))
			return (long)i;
	return -1;
}

/* The index of commit id with records m (moved from, disposed of) and parents p1, p2: an id
 * seen before must hold the same records. */
static long record(sm *t, const prolly_id *id, tm_model *m, long p1, long p2)
{
	long at = find(t, id);
	if (at >= 0) {
		PT_CHECKF(tm_model_equal(&t->c[at].m, m),
		          "seed %#llx, step %s: commit %s came back "
		          "with other records",
		          (unsigned long long)t->seed, t->step, tm_hex(id));
		tm_model_dispose(m);
		return at;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->c = realloc(t->c, t->cap * sizeof(*t->c));
		if (!t->c)
			abort();
	}
	mcommit *c = &t->c[t->n];
	c->id = *id;
	tm_model_init(&c->m);
	tm_model_move(&c->m, m);
	tm_model_dispose(m);
	c->p1 = p1;
	c->p2 = p2;
	return (long)t->n++;
}

/* 1 when commit a is b or one of its ancestors. */
static int is_ancestor(const sm *t, long a, long b)
{
	long *stack = malloc((t->n * 2 + 1) * sizeof(*stack));
	char *seen = calloc(t->n, 1);
	size_t n = 0;
	int found = 0;
	if (!stack || !seen)
		abort();
	stack[n++] = b;
	while (n && !found) {
		long i = stack[--n];
		if (i < 0 || seen[i])
			continue;
		seen[i] = 1;
		found = i == a;
		stack[n++] = t->c[i].p1;
		stack[n++] = t->c[i].p2;
	}
	free(stack);
	free(seen);
	return found;
}

/* A branch of store s that exists (live) or not; -1 when there is none. */
static int pick_branch(sm *t, int s, int live)
{
	int start = (int)tm_rng_below(&t->r, NBR);
	for (int i = 0; i < NBR; i++) {
		int b = (start + i) % NBR;
		if ((t->head[s][b] >= 0) == live)
			return b;
	}
	return -1;
}

/* ---- steps ---------------------------------------------------------------------------------- */

static void st_commit(sm *t, int s)
{
	int b = pick_branch(t, s, 1);
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 30);
	prolly_edit e[30];
	unsigned char v[30][48];
	tm_model m;
	tm_model_init(&m);
	tm_model_copy(&m, &t->c[t->head[s][b]].m);
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if (t->nkeys < NKEY && (t->nkeys < 8 || tm_rng_chance(&t->r, 1, 3))) {
			k = t->nkeys++;
			t->klen[k] = tm_gen_key(&t->r, t->keys[k]);
		} else {
			k = (size_t)tm_rng_below(&t->r, t->nkeys);
		}
		size_t vn = (size_t)tm_rng_below(&t->r, sizeof(v[i]));
		tm_rng_bytes(&t->r, v[i], vn);
		e[i].op = tm_rng_chance(&t->r, 1, 5) ? PROLLY_DEL : PROLLY_PUT;
		e[i].key = (prolly_slice){t->keys[k], t->klen[k]};
		e[i].value = (prolly_slice){v[i], vn};
		if (e[i].op == PROLLY_DEL)
			tm_model_del(&m, t->keys[k], t->klen[k]);
		else
			tm_model_put(&m, t->keys[k], t->klen[k], v[i], vn);
	}
	prolly_id id;
	snprintf(t->step, sizeof(t->step), "commit of %zu edits to %s of %s", n, br_names[b],
	         sf_kind_name[s]);
	int rc = prolly_commit_edits(&id, t->db[s], br_names[b], e, n, "edit");
	CHECK(t, rc == 0);
	if (rc) {
		tm_model_dispose(&m);
		return;
	}
	t->head[s][b] = record(t, &id, &m, t->head[s][b], -1);
	t->done[S_COMMIT]++;
}

static void st_branch(sm *t, int s)
{
	int b = pick_branch(t, s, 0);
	if (b < 0)
		return;
	long at = t->head[s][pick_branch(t, s, 1)];
	snprintf(t->step, sizeof(t->step), "branch %s of %s at %s", br_names[b], sf_kind_name[s],
	         tm_hex(&t->c[at].id));
	CHECK(t, prolly_branch_create(t->db[s], br_names[b], &t->c[at].id) == 0);
	t->head[s][b] = at;
}

/* Deletes a branch other than main (a fetch then drops its tracking ref). */
static void st_delete_branch(sm *t, int s)
{
	int b = 1 + (int)tm_rng_below(&t->r, NBR - 1);
	if (t->head[s][b] < 0)
		return;
	snprintf(t->step, sizeof(t->step), "delete branch %s of %s", br_names[b], sf_kind_name[s]);
	CHECK(t, prolly_branch_delete(t->db[s], br_names[b]) == 0);
	t->head[s][b] = -1;
}

static void st_merge(sm *t, int s)
{
	int into = pick_branch(t, s, 1), from = pick_branch(t, s, 1);
	if (into == from)
		return;
	long a = t->head[s][into], b = t->head[s][from];
	prolly_id base;
	snprintf(t->step, sizeof(t->step), "merge base of %s and %s in %s", br_names[into],
	         br_names[from], sf_kind_name[s]);
	int rc = prolly_merge_base(&base, t->db[s], &t->c[a].id, &t->c[b].id);
	long ib = rc == 0 ? find(t, &base) : -1;
	CHECK(t, rc == 0 && ib >= 0);
	if (ib < 0)
		return;
	prolly_merge_options o = PROLLY_MERGE_OPTIONS_INIT;
	o.resolve = tm_rng_chance(&t->r, 1, 2) ? PROLLY_RESOLVE_OURS : PROLLY_RESOLVE_THEIRS;
	prolly_merge_stats st;
	tm_model m, conflicts;
	tm_model_init(&m);
	tm_model_init(&conflicts);
	tm_model_merge(&m, &st, &conflicts, &t->c[ib].m, &t->c[a].m, &t->c[b].m, o.resolve);
	tm_model_dispose(&conflicts);
	prolly_id out;
	snprintf(t->step, sizeof(t->step), "merge %s into %s in %s (%s)", br_names[from],
	         br_names[into], sf_kind_name[s], o.resolve == PROLLY_RESOLVE_OURS ? "ours" : "theirs");
	rc = prolly_merge_branches(&out, NULL, t->db[s], br_names[into], br_names[from], &o, "merge");
	CHECK(t, rc == 0);
	if (rc) {
		tm_model_dispose(&m);
		return;
	}
	/* A fast-forward lands on from's head, nothing to do on into's; else a commit of both. */
	int known = prolly_id_equal(&out, &t->c[a].id) || prolly_id_equal(&out, &t->c[b].id);
	t->head[s][into] = record(t, &out, &m, known ? -1 : a, known ? -1 : b);
	t->done[S_MERGE]++;
}

/* prolly_sync of branch b from store s into store d, expecting what d's branch holds. */
static void st_sync(sm *t, int d, int s)
{
	int b = pick_branch(t, s, 1);
	long at = t->head[s][b];
	char name[64];
	snprintf(name, sizeof(name), "refs/heads/%s", br_names[b]);
	prolly_ref_update u = {0};
	u.name = name;
	u.value = t->c[at].id;
	if (t->head[d][b] >= 0) {
		u.expect = PROLLY_REF_EXPECT_VALUE;
		u.expected = t->c[t->head[d][b]].id;
	} else {
		u.expect = PROLLY_REF_EXPECT_ABSENT;
	}
	snprintf(t->step, sizeof(t->step), "sync of %s from %s into %s", br_names[b], sf_kind_name[s],
	         sf_kind_name[d]);
	int rc = prolly_sync(NULL, t->db[d], t->db[s], NULL, 0, &u, 1, NULL);
	CHECK(t, rc == 0);
	if (rc)
		return;
	t->head[d][b] = at;
	CHECK(t, sf_same_history(t->db[s], t->db[d], &t->c[at].id));
	t->done[S_SYNC]++;
}

static void st_push(sm *t, int s, int d)
{
	int b = pick_branch(t, s, 1), force = tm_rng_chance(&t->r, 1, 4);
	long ours = t->head[s][b], theirs = t->head[d][b];
	int lands = force || theirs < 0 || is_ancestor(t, theirs, ours);
	snprintf(t->step, sizeof(t->step), "push%s of %s from %s to %s (%s)", force ? " --force" : "",
	         br_names[b], sf_kind_name[s], sf_kind_name[d], lands ? "lands" : "refused");
	int rc = prolly_push(NULL, t->db[s], t->db[d], sf_kind_name[d], br_names[b], force);
	CHECK(t, rc == (lands ? 0 : PROLLY_ECONFLICT));
	if (rc == 0 && lands) {
		t->head[d][b] = ours;
		t->track[s][d][b] = ours;
	}
	t->done[lands ? S_PUSH : S_PUSH_REFUSED]++;
}

static void st_fetch(sm *t, int s, int d)
{
	snprintf(t->step, sizeof(t->step), "fetch into %s from %s", sf_kind_name[s], sf_kind_name[d]);
	int rc = prolly_fetch(NULL, t->db[s], t->db[d], sf_kind_name[d], NULL, NULL);
	CHECK(t, rc == 0);
	if (rc == 0)
		memcpy(t->track[s][d], t->head[d], sizeof(t->track[s][d]));
	t->done[S_FETCH]++;
}

/* Ref name (a branch, or REMOTE/BRANCH for a tracking ref) of store s reads as commit at: its
 * head, its tree, and those of up to three first-parent ancestors. */
static void check_ref(sm *t, int s, const char *name, long at)
{
	prolly_id id;
	snprintf(t->step, sizeof(t->step), "read %s of %s", name, sf_kind_name[s]);
	int rc = prolly_resolve(&id, t->db[s], name);
	CHECK(t, rc == 0 && prolly_id_equal(&id, &t->c[at].id));
	for (int up = 0; rc == 0 && at >= 0 && up < 4; up++, at = t->c[at].p1) {
		prolly_commit *c = NULL;
		rc = prolly_commit_read(&c, t->db[s], &t->c[at].id);
		CHECK(t, rc == 0);
		if (rc == 0)
			CHECK(t, tm_tree_check(t->db[s], &c->tree, &t->c[at].m, t->step) == 0);
		prolly_commit_free(c);
	}
	t->done[S_READ]++;
}

/* Ref name of store s is not there. */
static void check_absent(sm *t, int s, const char *name)
{
	prolly_id id;
	snprintf(t->step, sizeof(t->step), "read %s of %s, which is not there", name, sf_kind_name[s]);
	CHECK(t, prolly_resolve(&id, t->db[s], name) == PROLLY_ENOTFOUND);
}

/* Every branch and tracking ref of store s, and the absence of the others. */
static void check_store(sm *t, int s)
{
	char name[64];
	for (int b = 0; b < NBR; b++) {
		if (t->head[s][b] >= 0)
			check_ref(t, s, br_names[b], t->head[s][b]);
		else
			check_absent(t, s, br_names[b]);
		for (int d = 0; d < NST; d++) {
			snprintf(name, sizeof(name), "%s/%s", sf_kind_name[d], br_names[b]);
			if (d != s && t->track[s][d][b] >= 0)
				check_ref(t, s, name, t->track[s][d][b]);
			else if (d != s)
				check_absent(t, s, name);
		}
	}
}

static void st_gc(sm *t, int s)
{
	snprintf(t->step, sizeof(t->step), "gc of %s", sf_kind_name[s]);
	CHECK(t, prolly_gc(t->db[s], NULL) == 0);
	snprintf(t->step, sizeof(t->step), "K6 of %s after its gc", sf_kind_name[s]);
	CHECK(t, k6_holds(t->db[s]) == 0);
	check_store(t, s);
	t->done[S_GC]++;
}

/* ---- the run -------------------------------------------------------------------------------- */

static prolly_db *open_kind(int kind)
{
	prolly_store *st = sf_new_store(kind);
	prolly_db *db = NULL;
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.reflog_days = 0; /* a gc keeps what the refs reach, nothing for the reflog */
	if (st && prolly_db_new(&db, st, &o) != 0)
		db = NULL;
	return db;
}

static void sync_model_run(uint64_t salt, unsigned steps)
{
	sm *t = calloc(1, sizeof(*t));
	PT_REQUIRE(t);
	t->seed = PT_SEED() ^ salt;
	tm_rng_seed(&t->r, t->seed);
	memset(t->head, 0xff, sizeof(t->head));
	memset(t->track, 0xff, sizeof(t->track));
	for (int s = 0; s < NST; s++) {
		t->db[s] = open_kind(s);
		PT_CHECKF(t->db[s] != NULL, "%s store: %s", sf_kind_name[s], prolly_last_error());
	}
	for (int s = 0; s < NST && !pt_failed_now; s++)
		for (int d = 0; d < NST; d++)
			if (d != s)
				PT_CHECK_RC(prolly_remote_add(t->db[s], sf_kind_name[d], "mem:"), 0);
	if (pt_failed_now)
		goto cleanup;
	/* main's first commit, in every store. */
	tm_model m;
	tm_model_init(&m);
	prolly_id root;
	PT_CHECK_RC(prolly_commit_edits(&root, t->db[0], "main", NULL, 0, "init"), 0);
	t->head[0][0] = record(t, &root, &m, -1, -1);
	for (int d = 1; d < NST && !pt_failed_now; d++)
		st_sync(t, d, 0);
	for (unsigned i = 0; i < steps && !pt_failed_now; i++) {
		int s = (int)tm_rng_below(&t->r, NST);
		int d = (s + 1 + (int)tm_rng_below(&t->r, NST - 1)) % NST;
		switch (tm_rng_below(&t->r, 16)) {
		case 0:
		case 1:
		case 2:
		case 3: st_commit(t, s); break;
		case 4:
			if (tm_rng_chance(&t->r, 1, 3))
				st_delete_branch(t, s);
			else
				st_branch(t, s);
			break;
		case 5:
		case 6: st_merge(t, s); break;
		case 7:
		case 8: st_sync(t, d, s); break;
		case 9:
		case 10:
		case 11: st_push(t, s, d); break;
		case 12: st_fetch(t, s, d); break;
		case 13: st_gc(t, s); break;
		default: check_store(t, s); break;
		}
	}
	for (int s = 0; s < NST && !pt_failed_now; s++)
		check_store(t, s);
	printf("# seed %#llx: %u commits, %u merges, %u syncs, %u pushes (%u refused), %u fetches, "
	       "%u gc runs, %u reads; %zu commits in the model, %zu keys\n",
	       (unsigned long long)t->seed, t->done[S_COMMIT], t->done[S_MERGE], t->done[S_SYNC],
	       t->done[S_PUSH] + t->done[S_PUSH_REFUSED], t->done[S_PUSH_REFUSED], t->done[S_FETCH],
	       t->done[S_GC], t->done[S_READ], t->n, t->nkeys);
	if (pt_failed_now)
		fprintf(stderr, "  re-run with PROLLY_TEST_SEED=%#llx\n", (unsigned long long)PT_SEED());
cleanup:
	for (int s = 0; s < NST; s++)
		prolly_close(t->db[s]);
	for (size_t i = 0; i < t->n; i++)
		tm_model_dispose(&t->c[i].m);
	free(t->c);
	free(t);
}

PT_TEST(sync_model_three_stores)
{
	sync_model_run(0x5c1, 150 * tm_scale());
}

PT_TEST(sync_model_three_stores_again)
{
	/* Another stream: more steps, so histories grow longer than the sync's read-ahead batches. */
	sync_model_run(0x5c2, 300 * tm_scale());
}

SF_MAIN
