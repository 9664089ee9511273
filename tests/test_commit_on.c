/*
 * test_commit_on.c - snapshot-isolation commits (prolly_rebase_edits, prolly_commit_edits_on), on
 * the memory store and on LMDB:
 *
 *   - on an unmoved head: one commit on base, nothing merged;
 *   - the head moved, disjoint keys: the edits are merged onto the new head (one commit, its
 *     parent the head, both sides' records present), no retry needed;
 *   - the head moved, the same key written (a different value, the same value, both deleted):
 *     PROLLY_ECONFLICT, nothing written, *out_commit the head;
 *   - an edit that leaves a key as base had it conflicts with nothing and commits nothing;
 *   - prolly_rebase_edits alone (PROLLY_EMERGE, head == base) and bad arguments;
 *   - 8 threads: disjoint keys all commit without a redo; a shared counter incremented by
 *     read-modify-write transactions (redone on PROLLY_ECONFLICT) loses no increment.
 *
 * Re-run one test: build/tests/test_commit_on NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static prolly_edit del_edit(const char *k)
{
	prolly_edit e;
	e.op = PROLLY_DEL;
	e.key.data = k;
	e.key.size = strlen(k);
	e.value.data = NULL;
	e.value.size = 0;
	return e;
}

static int commit1(prolly_id *out, prolly_db *db, prolly_edit e)
{
	return prolly_commit_edits(out, db, "main", &e, 1, "setup");
}

static int parent_of(prolly_id *out, prolly_db *db, const prolly_id *c)
{
	prolly_commit *cm = NULL;
	int rc = prolly_commit_read(&cm, db, c);
	if (!rc && cm->n_parents != 1)
		rc = PROLLY_ECORRUPT;
	if (!rc)
		*out = cm->parents[0];
	prolly_commit_free(cm);
	return rc;
}

/* main with a=1 and b=1: *base its head. */
static int setup(tm_db *t, int lmdb, prolly_id *base)
{
	prolly_edit e[2] = {tm_put("a", "1"), tm_put("b", "1")};
	if (tm_db_open(t, lmdb, "commit_on", 0, 0, 0))
		return -1;
	return prolly_commit_edits(base, t->db, "main", e, 2, "base");
}

TM_BOTH_STORES(commit_on_unmoved_head)
{
	tm_db t;
	prolly_id base, c, p, head;
	prolly_edit e = tm_put("c", "1");
	unsigned rebased = 9;
	char v[16];
	PT_REQUIRE(setup(&t, lmdb, &base) == 0);
	PT_CHECK_RC(prolly_commit_edits_on(&c, &rebased, t.db, "main", &base, &e, 1, "txn", 4), 0);
	PT_CHECK(rebased == 0);
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &c));
	PT_CHECK_RC(parent_of(&p, t.db, &c), 0);
	PT_CHECK(prolly_id_equal(&p, &base));
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &c, "c"), 0);
	PT_CHECK(strcmp(v, "1") == 0);
	tm_db_close(&t);
}

TM_BOTH_STORES(commit_on_disjoint_keys_merge)
{
	tm_db t;
	prolly_id base, other, c, p, head;
	prolly_edit mine[2] = {tm_put("b", "2"), del_edit("z0")};
	unsigned rebased = 0;
	char v[16];
	PT_REQUIRE(setup(&t, lmdb, &base) == 0);
	/* Another transaction moves the head: a=2 and a new key. */
	PT_REQUIRE(commit1(&other, t.db, tm_put("a", "2")) == 0);
	PT_REQUIRE(commit1(&other, t.db, tm_put("x", "9")) == 0);
	PT_CHECK_RC(prolly_commit_edits_on(&c, &rebased, t.db, "main", &base, mine, 2, "txn", 1), 0);
	PT_CHECK(rebased == 1);
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &c));
	PT_CHECK_RC(parent_of(&p, t.db, &c), 0); /* linear: on the head that won */
	PT_CHECK(prolly_id_equal(&p, &other));
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &c, "a"), 0);
	PT_CHECK(strcmp(v, "2") == 0);
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &c, "b"), 0);
	PT_CHECK(strcmp(v, "2") == 0);
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &c, "x"), 0);
	PT_CHECK(strcmp(v, "9") == 0);
	tm_db_close(&t);
}

/* The head moved with theirs; mine (from base) must conflict and write nothing. */
static void expect_conflict(tm_db *t, const prolly_id *base, prolly_edit theirs, prolly_edit mine)
{
	prolly_id other, c, head;
	unsigned rebased = 0;
	PT_REQUIRE(commit1(&other, t->db, theirs) == 0);
	PT_CHECK_RC(prolly_commit_edits_on(&c, &rebased, t->db, "main", base, &mine, 1, "txn", 8),
	            PROLLY_ECONFLICT);
	PT_CHECK(rebased == 1); /* one merge tried, no further attempt */
	PT_CHECK(prolly_id_equal(&c, &other));
	PT_CHECK_RC(prolly_branch_head(&head, t->db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &other));
}

TM_BOTH_STORES(commit_on_same_key_conflicts)
{
	tm_db t;
	prolly_id base;
	char v[16];
	PT_REQUIRE(setup(&t, lmdb, &base) == 0);
	expect_conflict(&t, &base, tm_put("a", "2"), tm_put("a", "3"));
	PT_CHECK_RC(prolly_branch_head(&base, t.db, "main"), 0);
	/* the same new value on both sides is a conflict too (two increments by the same delta) */
	expect_conflict(&t, &base, tm_put("a", "5"), tm_put("a", "5"));
	PT_CHECK_RC(prolly_branch_head(&base, t.db, "main"), 0);
	expect_conflict(&t, &base, del_edit("b"), del_edit("b"));
	PT_CHECK_RC(prolly_branch_head(&base, t.db, "main"), 0);
	expect_conflict(&t, &base, tm_put("n", "1"), tm_put("n", "2"));
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &base, "a"), 0);
	PT_CHECK(strcmp(v, "5") == 0);
	tm_db_close(&t);
}

/* CO4: base just read with prolly_branch_commit is taken for the head without reading it again;
 * a head that moved meanwhile still gets the edits merged, even with one attempt allowed (the
 * try without a read does not count), and a no-op on a moved head reports the moved head. */
PT_TEST(commit_on_reads_no_head_it_just_read)
{
	tm_db t;
	prolly_id base, other, c, head;
	prolly_commit *bc = NULL;
	prolly_edit e = tm_put("c", "1"), same = tm_put("a", "1");
	prolly_stats s = PROLLY_STATS_INIT;
	unsigned rebased = 9;
	char v[16];
	PT_REQUIRE(setup(&t, 0, &base) == 0);
	PT_REQUIRE(prolly_branch_commit(&bc, t.db, "main") == 0 && prolly_id_equal(&bc->id, &base));
	prolly_commit_free(bc);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_commit_edits_on(&c, &rebased, t.db, "main", &base, &e, 1, "txn", 1), 0);
	PT_CHECK_RC(prolly_thread_stats(&s), 0);
	PT_CHECKF(s.store_reads == 0 && rebased == 0, "%llu store reads",
	          (unsigned long long)s.store_reads); /* 1 before: the head read again */
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &c));

	/* The handle read base; another commit moves the head before the edits land. */
	PT_REQUIRE(prolly_branch_commit(&bc, t.db, "main") == 0);
	base = bc->id;
	prolly_commit_free(bc);
	PT_REQUIRE(commit1(&other, t.db, tm_put("d", "1")) == 0);
	e = tm_put("e", "1");
	PT_CHECK_RC(prolly_commit_edits_on(&c, &rebased, t.db, "main", &base, &e, 1, "txn", 1), 0);
	PT_CHECK(rebased == 1);
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &c));
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &head, "d"), 0);
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &head, "e"), 0);

	/* Again, with an edit that changes nothing: the head that stays is the moved one. */
	PT_REQUIRE(prolly_branch_commit(&bc, t.db, "main") == 0);
	base = bc->id;
	prolly_commit_free(bc);
	PT_REQUIRE(commit1(&other, t.db, tm_put("f", "1")) == 0);
	PT_CHECK_RC(prolly_commit_edits_on(&c, NULL, t.db, "main", &base, &same, 1, "txn", 1), 0);
	PT_CHECK(prolly_id_equal(&c, &other));
	tm_db_close(&t);
}

/* An edit that leaves a key as base had it writes nothing: no conflict, no commit. */
TM_BOTH_STORES(commit_on_noop_edit)
{
	tm_db t;
	prolly_id base, other, c, head;
	prolly_edit same = tm_put("a", "1");
	char v[16];
	PT_REQUIRE(setup(&t, lmdb, &base) == 0);
	PT_REQUIRE(commit1(&other, t.db, tm_put("a", "7")) == 0);
	PT_CHECK_RC(prolly_commit_edits_on(&c, NULL, t.db, "main", &base, &same, 1, "txn", 2), 0);
	PT_CHECK(prolly_id_equal(&c, &other));
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &other));
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &head, "a"), 0);
	PT_CHECK(strcmp(v, "7") == 0);
	tm_db_close(&t);
}

PT_TEST(rebase_edits_rules)
{
	tm_db t;
	prolly_txn *txn = NULL;
	prolly_commit *bc = NULL, *hc = NULL;
	prolly_id base, other, root, want;
	prolly_edit mine = tm_put("b", "2"), clash = tm_put("a", "3");
	PT_REQUIRE(setup(&t, 0, &base) == 0);
	PT_REQUIRE(commit1(&other, t.db, tm_put("a", "2")) == 0);
	PT_REQUIRE(prolly_commit_read(&bc, t.db, &base) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, t.db, &other) == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	/* head == base: the edits on base */
	PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, &bc->tree, &mine, 1), 0);
	PT_CHECK_RC(prolly_edit_tree(&want, txn, &bc->tree, &mine, 1), 0);
	PT_CHECK(prolly_id_equal(&root, &want));
	/* moved, disjoint: the edits on the head (the same tree as editing the head directly) */
	PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, &hc->tree, &mine, 1), 0);
	PT_CHECK_RC(prolly_edit_tree(&want, txn, &hc->tree, &mine, 1), 0);
	PT_CHECK(prolly_id_equal(&root, &want));
	/* moved, the same key: PROLLY_EMERGE, out untouched */
	PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, &hc->tree, &clash, 1), PROLLY_EMERGE);
	PT_CHECK(prolly_id_equal(&root, &want));
	PT_CHECK_RC(prolly_rebase_edits(NULL, txn, &bc->tree, &hc->tree, &mine, 1), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, &hc->tree, NULL, 1), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_commit_edits_on(&root, NULL, t.db, "main", NULL, &mine, 1, "m", 1),
	            PROLLY_EINVAL);
	PT_CHECK_RC(prolly_commit_edits_on(&root, NULL, t.db, "..bad", &base, &mine, 1, "m", 1),
	            PROLLY_EINVAL);
	PT_CHECK_RC(prolly_commit_edits_on(NULL, NULL, t.db, "main", &base, &mine, 1, "m", 1),
	            PROLLY_EINVAL);
	/* a deleted branch: a conflict, and no head to report (*out_commit untouched) */
	want = root;
	PT_CHECK_RC(prolly_commit_edits_on(&root, NULL, t.db, "gone", &base, &mine, 1, "m", 3),
	            PROLLY_ECONFLICT);
	PT_CHECK(prolly_id_equal(&root, &want));
	prolly_txn_free(txn);
	prolly_commit_free(bc);
	prolly_commit_free(hc);
	tm_db_close(&t);
}

/* An edit over the limits, or of an unknown op, is refused whether or not the head moved, as
 * prolly_edit_tree refuses it. On a moved head the edits were checked only after the no-ops were
 * dropped: a delete of an oversized key (absent, so a no-op) or an earlier edit of a key edited
 * again later was never looked at, so the same edits were refused on an unmoved head and
 * committed on a moved one. */
PT_TEST(rebase_edits_limits_on_a_moved_head)
{
	tm_db t;
	prolly_txn *txn = NULL;
	prolly_commit *bc = NULL, *hc = NULL;
	prolly_id base, other, root, head;
	static char big[PROLLY_MAX_VALUE + 1];
	prolly_edit over_key[2] = {tm_put("b", "2"), del_edit("k")};
	prolly_edit over_value[2] = {tm_put("c", "1"), tm_put("c", "2")};
	prolly_edit bad_op[2] = {tm_put("d", "1"), del_edit("zz")};
	memset(big, 'k', sizeof(big));
	over_key[1].key.data = big;
	over_key[1].key.size = PROLLY_MAX_KEY + 1;
	over_value[0].value.data = big;
	over_value[0].value.size = PROLLY_MAX_VALUE + 1;
	bad_op[1].op = (prolly_op)7;
	PT_REQUIRE(setup(&t, 0, &base) == 0);
	PT_REQUIRE(commit1(&other, t.db, tm_put("a", "2")) == 0);
	PT_REQUIRE(prolly_commit_read(&bc, t.db, &base) == 0);
	PT_REQUIRE(prolly_commit_read(&hc, t.db, &other) == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	const prolly_id *heads[2] = {&bc->tree, &hc->tree};
	for (int h = 0; h < 2; h++) {
		PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, heads[h], over_key, 2),
		            PROLLY_ETOOBIG);
		PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, heads[h], over_value, 2),
		            PROLLY_ETOOBIG);
		PT_CHECK_RC(prolly_rebase_edits(&root, txn, &bc->tree, heads[h], bad_op, 2), PROLLY_EINVAL);
	}
	/* committed on the moved head: refused, nothing written */
	PT_CHECK_RC(prolly_commit_edits_on(&root, NULL, t.db, "main", &base, over_key, 2, "m", 1),
	            PROLLY_ETOOBIG);
	PT_CHECK_RC(prolly_commit_edits_on(&root, NULL, t.db, "main", &base, over_value, 2, "m", 1),
	            PROLLY_ETOOBIG);
	PT_CHECK_RC(prolly_branch_head(&head, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&head, &other));
	prolly_txn_free(txn);
	prolly_commit_free(bc);
	prolly_commit_free(hc);
	tm_db_close(&t);
}

/* prolly_rebase_edits is the three-way merge prolly_merge does, on random trees: a base of 3,000
 * records, a head that changed (put, changed, deleted) some of them, edits of other keys (with
 * repeats, and no-op edits of keys head changed): the same root as prolly_merge(base, base +
 * edits, head); one edit of a key head changed makes both refuse. */
PT_TEST(rebase_edits_equals_merge)
{
	tm_db t;
	tm_rng r;
	prolly_txn *txn = NULL;
	prolly_id empty, base, head, ours, merged, rebased;
	prolly_edit he[300], me[300];
	char hk[300][16], hv[300][16], mk[300][16], mv[300][16];
	size_t nh = 0, nm = 0;
	uint64_t seed = PT_SEED();
	tm_rng_seed(&r, seed);
	PT_REQUIRE(tm_db_open(&t, 0, "rebase", 0, 0, 0) == 0);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	prolly_id_empty_tree(&empty);
	{
		static prolly_edit be[3000];
		static char bk[3000][16];
		for (int i = 0; i < 3000; i++) {
			snprintf(bk[i], sizeof(bk[i]), "k%05d", i * 2);
			be[i] = tm_put(bk[i], "base");
		}
		PT_REQUIRE(prolly_edit_tree(&base, txn, &empty, be, 3000) == 0);
	}
	/* head: keys = 0 mod 3 (of 0..5999), put, changed or deleted */
	for (int i = 0; i < 6000 && nh < 300; i += 3 + (int)tm_rng_below(&r, 30)) {
		i -= i % 3;
		snprintf(hk[nh], sizeof(hk[nh]), "k%05d", i);
		snprintf(hv[nh], sizeof(hv[nh]), "h%d", (int)tm_rng_below(&r, 1000));
		he[nh] = tm_rng_chance(&r, 1, 4) ? del_edit(hk[nh]) : tm_put(hk[nh], hv[nh]);
		nh++;
	}
	PT_REQUIRE(prolly_edit_tree(&head, txn, &base, he, nh) == 0);
	/* mine: keys = 1 mod 3, some twice; and no-op edits (base's value) of keys head changed */
	for (int i = 1; i < 6000 && nm < 290; i += 3 * (1 + (int)tm_rng_below(&r, 20))) {
		snprintf(mk[nm], sizeof(mk[nm]), "k%05d", i);
		snprintf(mv[nm], sizeof(mv[nm]), "m%d", (int)tm_rng_below(&r, 1000));
		me[nm] = tm_rng_chance(&r, 1, 5) ? del_edit(mk[nm]) : tm_put(mk[nm], mv[nm]);
		nm++;
		if (tm_rng_chance(&r, 1, 10) && nm < 290) {
			memcpy(mk[nm], mk[nm - 1], sizeof(mk[nm]));
			me[nm] = tm_put(mk[nm], "again");
			nm++;
		}
	}
	for (size_t i = 0; i < nh && nm < 300; i += 7)
		if (atoi(hk[i] + 1) % 2 == 0) { /* a key base has: the edit leaves it as base had it */
			memcpy(mk[nm], hk[i], sizeof(mk[nm]));
			me[nm] = tm_put(mk[nm], "base");
			nm++;
		}
	PT_CHECK_RC(prolly_edit_tree(&ours, txn, &base, me, nm), 0);
	PT_CHECK_RC(prolly_merge(&merged, NULL, txn, &base, &ours, &head, NULL), 0);
	PT_CHECK_RC(prolly_rebase_edits(&rebased, txn, &base, &head, me, nm), 0);
	PT_CHECKF(prolly_id_equal(&merged, &rebased), "seed %" PRIu64, seed);
	/* one edit of a key head changed (to another value): both refuse */
	me[nm++] = tm_put(hk[0], "neither");
	PT_CHECK_RC(prolly_edit_tree(&ours, txn, &base, me, nm), 0);
	PT_CHECK_RC(prolly_merge(&merged, NULL, txn, &base, &ours, &head, NULL), PROLLY_EMERGE);
	PT_CHECK_RC(prolly_rebase_edits(&rebased, txn, &base, &head, me, nm), PROLLY_EMERGE);
	prolly_txn_free(txn);
	tm_db_close(&t);
}

/* ---- threads ------------------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 40

typedef struct worker {
	prolly_db *db;
	int idx;
	int shared; /* increment the one key "counter" instead of the worker's own key */
	unsigned redone, rebased, failed;
} worker;

/* One read-modify-write transaction: read the key at the head, write it plus one. */
static int increment(worker *w, const char *key)
{
	prolly_commit *hc = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_id out;
	char val[32];
	long n = 0;
	unsigned rb = 0;
	int rc = prolly_branch_commit(&hc, w->db, "main");
	if (rc)
		return rc;
	rc = prolly_get(&v, w->db, &hc->tree, key, strlen(key));
	if (rc == 0) {
		char tmp[32];
		size_t len = v.size < sizeof(tmp) - 1 ? v.size : sizeof(tmp) - 1;
		memcpy(tmp, v.ptr, len);
		tmp[len] = 0;
		n = strtol(tmp, NULL, 10);
	} else if (rc != PROLLY_ENOTFOUND) {
		goto done;
	}
	snprintf(val, sizeof(val), "%ld", n + 1);
	prolly_edit e = tm_put(key, val);
	rc = prolly_commit_edits_on(&out, &rb, w->db, "main", &hc->id, &e, 1, "inc", 64);
	w->rebased += rb;
done:
	prolly_buf_dispose(&v);
	prolly_commit_free(hc);
	return rc;
}

static void *work(void *arg)
{
	worker *w = arg;
	char key[16];
	snprintf(key, sizeof(key), w->shared ? "counter" : "own%02d", w->idx);
	for (int i = 0; i < ROUNDS; i++) {
		int rc;
		while ((rc = increment(w, key)) == PROLLY_ECONFLICT)
			w->redone++;
		if (rc)
			w->failed++;
	}
	return NULL;
}

/* Runs THREADS workers; returns the total redone transactions (-1 on a failure). */
static long run_workers(prolly_db *db, int shared, unsigned *rebased)
{
	pthread_t th[THREADS];
	worker w[THREADS];
	long redone = 0;
	*rebased = 0;
	for (int i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].db = db;
		w[i].idx = i;
		w[i].shared = shared;
		if (pthread_create(&th[i], NULL, work, &w[i]))
			return -1;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++) {
		if (w[i].failed)
			return -1;
		redone += w[i].redone;
		*rebased += w[i].rebased;
	}
	return redone;
}

TM_BOTH_STORES(commit_on_threads)
{
	tm_db t;
	prolly_id base, head;
	unsigned rebased;
	long redone;
	char v[16], key[16];
	PT_REQUIRE(setup(&t, lmdb, &base) == 0);
	/* Disjoint keys: every lost race merges; no transaction is redone. */
	redone = run_workers(t.db, 0, &rebased);
	PT_CHECKF(redone == 0, "redone %ld", redone);
	PT_REQUIRE(prolly_branch_head(&head, t.db, "main") == 0);
	for (int i = 0; i < THREADS; i++) {
		snprintf(key, sizeof(key), "own%02d", i);
		PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &head, key), 0);
		PT_CHECKF(atoi(v) == ROUNDS, "%s = %s", key, v);
	}
	/* One shared key: conflicts are redone, and no increment is lost. */
	redone = run_workers(t.db, 1, &rebased);
	PT_CHECK(redone >= 0);
	PT_REQUIRE(prolly_branch_head(&head, t.db, "main") == 0);
	PT_CHECK_RC(tm_value_at(v, sizeof(v), t.db, &head, "counter"), 0);
	PT_CHECKF(atoi(v) == THREADS * ROUNDS, "counter = %s", v);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
