/*
 * test_reflog.c - the reflog, tags, reset, branch restore, and retention that never changes a
 * merge, on the memory store and on LMDB (the store conformance suite runs the reflog on
 * PostgreSQL too):
 *
 *   - every ref move is recorded with its operation, old and new value, newest first: commit,
 *     branch, merge, fast-forward, reset, tag, delete, restore, and a caller's own reason;
 *   - the listing follows the order of writing, not the writers' clocks (a fast clock, moves in
 *     one microsecond);
 *   - a deleted branch is restored from the reflog, also after a gc within the horizon;
 *   - gc keeps what reflog entries younger than the horizon name, and expires older ones;
 *   - after gc --keep 2 a merge gives the same tree as before the gc (the base is kept);
 *   - merge base: unrelated histories (PROLLY_ENOTFOUND) are told from history cut by retention
 *     (PROLLY_EPRUNED); merges refuse both unless allow_unrelated or an explicit base;
 *   - writers racing on one branch: one wins each round and the reflog is one unbroken chain;
 *   - damaged or truncated entries are refused by the decoder (R1-R7).
 *
 * Re-run one test: build/tests/test_reflog NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_US ((int64_t)86400 * 1000000)
#define T0 ((int64_t)1700000000000000)

/* A fresh store with the reflog on (the shared fixture turns it off for the gc tests). */
static int open_db(tm_db *t, int lmdb, unsigned retain)
{
	int rc = tm_db_open(t, lmdb, "reflog", 0, retain, 0);
	if (rc == 0) {
		t->db->opts.reflog_days = 14;
		t->db->opts.clock_us = T0;
	}
	return rc;
}

static void put1(prolly_edit *e, const char *k, const char *v)
{
	memset(e, 0, sizeof(*e));
	e->op = v ? PROLLY_PUT : PROLLY_DEL;
	e->key.data = k;
	e->key.size = strlen(k);
	if (v) {
		e->value.data = v;
		e->value.size = strlen(v);
	}
}

static int put(prolly_id *out, prolly_db *db, const char *branch, const char *k, const char *v)
{
	prolly_edit e;
	put1(&e, k, v);
	return prolly_commit_edits(out, db, branch, &e, 1, v ? "put" : "del");
}

/* The reflog as an array. */
typedef struct entry {
	char ref[PROLLY_MAX_REF_NAME + 1];
	char op[40];
	char msg[64];
	int has_old, has_new;
	prolly_id old_id, new_id;
	int64_t time_us;
} entry;

typedef struct elist {
	entry v[256];
	int n;
} elist;

static int on_entry(void *payload, const prolly_reflog_entry *e)
{
	elist *l = payload;
	if (l->n < 256) {
		entry *x = &l->v[l->n];
		snprintf(x->ref, sizeof(x->ref), "%s", e->ref);
		snprintf(x->op, sizeof(x->op), "%s", e->operation);
		snprintf(x->msg, sizeof(x->msg), "%s", e->message);
		x->has_old = e->has_old;
		x->has_new = e->has_new;
		x->old_id = e->old_id;
		x->new_id = e->new_id;
		x->time_us = e->time_us;
	}
	l->n++;
	return 0;
}

static int reflog_of(elist *l, prolly_db *db, const char *ref)
{
	memset(l, 0, sizeof(*l));
	return prolly_reflog(db, ref, on_entry, l);
}

static void tick(prolly_db *db)
{
	db->opts.clock_us += 1000000;
}

/* Creates ref name (any name, as another client may) at value through a txn of its own. */
static int create_ref(prolly_db *db, const char *name, const prolly_id *value)
{
	prolly_txn *txn = NULL;
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.expect = PROLLY_REF_EXPECT_ABSENT;
	u.value = *value;
	int rc = prolly_txn_begin(&txn, db);
	if (!rc)
		rc = prolly_txn_set_ref(txn, &u);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

/* ---- every move is recorded ---------------------------------------------------------------- */

TM_BOTH_STORES(reflog_records_every_move)
{
	tm_db t;
	prolly_id c1, c2, c2a, d1, m, head, old, tagged;
	elist l;
	PT_REQUIRE(open_db(&t, lmdb, 0) == 0);
	PT_REQUIRE(put(&c1, t.db, "main", "a", "1") == 0); /* creates main */
	tick(t.db);
	PT_REQUIRE(put(&c2a, t.db, "main", "b", "2") == 0);
	tick(t.db);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &c2a) == 0);
	tick(t.db);
	PT_REQUIRE(put(&d1, t.db, "dev", "c", "3") == 0);
	tick(t.db);
	PT_REQUIRE(prolly_merge_branches(&head, NULL, t.db, "main", "dev", NULL, NULL) == 0);
	PT_CHECK(prolly_id_equal(&head, &d1)); /* a fast-forward */
	tick(t.db);
	PT_REQUIRE(put(&c2, t.db, "main", "d", "4") == 0);
	tick(t.db);
	PT_REQUIRE(put(&d1, t.db, "dev", "e", "5") == 0);
	tick(t.db);
	PT_REQUIRE(prolly_merge_branches(&m, NULL, t.db, "main", "dev", NULL, "m") == 0);
	tick(t.db);
	PT_CHECK_RC(prolly_branch_reset(&old, t.db, "dev", &c1), 0);
	PT_CHECK(prolly_id_equal(&old, &d1));
	tick(t.db);
	PT_CHECK_RC(prolly_tag_create(t.db, "v1", &m), 0);
	PT_CHECK_RC(prolly_tag_create(t.db, "v1", &m), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_tag_get(&tagged, t.db, "v1"), 0);
	PT_CHECK(prolly_id_equal(&tagged, &m));
	tick(t.db);
	PT_CHECK_RC(prolly_tag_delete(&tagged, t.db, "v1"), 0);
	PT_CHECK_RC(prolly_tag_delete(NULL, t.db, "v1"), PROLLY_ENOTFOUND);
	tick(t.db);
	PT_CHECK_RC(prolly_branch_remove(&old, t.db, "dev"), 0);
	PT_CHECK(prolly_id_equal(&old, &c1));

	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	const char *main_ops[] = {"merge", "commit", "fast-forward", "commit", "commit"};
	PT_REQUIRE(l.n == 5);
	for (int i = 0; i < 5; i++) {
		PT_CHECKF(strcmp(l.v[i].op, main_ops[i]) == 0, "main entry %d is '%s'", i, l.v[i].op);
		PT_CHECK(strcmp(l.v[i].ref, "refs/heads/main") == 0);
		if (i + 1 < 5) { /* a chain: each entry's old is the next older entry's new */
			PT_CHECK(l.v[i].has_old && prolly_id_equal(&l.v[i].old_id, &l.v[i + 1].new_id));
			PT_CHECK(l.v[i].time_us > l.v[i + 1].time_us);
		}
	}
	PT_CHECK(!l.v[4].has_old && prolly_id_equal(&l.v[4].new_id, &c1));
	PT_CHECK(prolly_id_equal(&l.v[0].new_id, &m));

	PT_CHECK_RC(reflog_of(&l, t.db, "refs/heads/dev"), 0);
	const char *dev_ops[] = {"delete", "reset", "commit", "commit", "branch"};
	PT_REQUIRE(l.n == 5);
	for (int i = 0; i < 5; i++)
		PT_CHECKF(strcmp(l.v[i].op, dev_ops[i]) == 0, "dev entry %d is '%s'", i, l.v[i].op);
	PT_CHECK(l.v[0].has_old && !l.v[0].has_new && prolly_id_equal(&l.v[0].old_id, &c1));
	PT_CHECK(!l.v[4].has_old && prolly_id_equal(&l.v[4].new_id, &c2a));

	PT_CHECK_RC(reflog_of(&l, t.db, "refs/tags/v1"), 0);
	PT_CHECK(l.n == 2 && strcmp(l.v[0].op, "delete") == 0 && strcmp(l.v[1].op, "tag") == 0);
	PT_CHECK_RC(reflog_of(&l, t.db, NULL), 0);
	PT_CHECK(l.n == 12);
	for (int i = 0; i + 1 < l.n; i++)
		PT_CHECK(l.v[i].time_us >= l.v[i + 1].time_us);
	PT_CHECK_RC(reflog_of(&l, t.db, "nosuch"), 0);
	PT_CHECK(l.n == 0);
	PT_CHECK_RC(reflog_of(&l, t.db, "bad..name"), PROLLY_EINVAL);
	PT_CHECK_RC(reflog_of(&l, t.db, "refs/other/x"), PROLLY_EINVAL);

	/* A caller's own reason and message, as revert or cherry-pick would give. */
	prolly_txn *txn = NULL;
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_CHECK_RC(prolly_txn_set_reason(txn, "Revert", NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_txn_set_reason(txn, "", NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_txn_set_reason(txn, "revert", "revert abc"), 0);
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &m, &c1), 0);
	tick(t.db);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECK(strcmp(l.v[0].op, "revert") == 0 && strcmp(l.v[0].msg, "revert abc") == 0);

	/* A lost race writes no entry. */
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &m, &c2), 0);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ECONFLICT);
	prolly_txn_free(txn);
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECK(l.n == 6);
	tm_db_close(&t);
}

/* ---- delete and restore -------------------------------------------------------------------- */

TM_BOTH_STORES(reflog_restore_deleted_branch)
{
	tm_db t;
	prolly_id c, c2, old, back;
	prolly_commit *hc = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(open_db(&t, lmdb, 1) == 0);
	PT_REQUIRE(put(&c, t.db, "main", "k", "1") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "work", &c) == 0);
	tick(t.db);
	PT_REQUIRE(put(&c, t.db, "work", "only", "on work") == 0);
	tick(t.db);
	PT_REQUIRE(put(&c2, t.db, "work", "k", "2") == 0);
	tick(t.db);
	PT_CHECK_RC(prolly_branch_restore(NULL, t.db, "work"), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_branch_remove(&old, t.db, "work"), 0);
	PT_CHECK(prolly_id_equal(&old, &c2));
	/* gc within the horizon keeps the deleted head's tree (and, retain 1, only that commit). */
	t.db->opts.clock_us += DAY_US;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.reflog_expired == 0);
	prolly_db_cache_clear(t.db);
	PT_CHECK_RC(prolly_branch_restore(&back, t.db, "work"), 0);
	PT_CHECK(prolly_id_equal(&back, &c2));
	PT_REQUIRE(prolly_branch_commit(&hc, t.db, "work") == 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &hc->tree, "only", 4), 0);
	PT_CHECK(v.size == 7 && memcmp(v.ptr, "on work", 7) == 0);
	PT_CHECK_RC(prolly_get(&v, t.db, &hc->tree, "k", 1), 0);
	PT_CHECK(v.size == 1 && v.ptr[0] == '2');
	prolly_commit_free(hc);
	elist l;
	PT_CHECK_RC(reflog_of(&l, t.db, "work"), 0);
	PT_CHECK(l.n >= 2 && strcmp(l.v[0].op, "restore") == 0 && strcmp(l.v[1].op, "delete") == 0);
	PT_CHECK_RC(prolly_branch_restore(NULL, t.db, "never"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_restore(NULL, t.db, "bad..name"), PROLLY_EINVAL);
	prolly_buf_dispose(&v);
	tm_db_close(&t);
}

/* ---- the order of writing, not of clocks --------------------------------------------------- */

/* 1 if l holds, newest first, exactly the moves of ref `ref` from[i] -> to[i] (i = n-1 .. 0: the
 * order they were written in; NULL for an absent value), skipping other refs' entries. */
static int moves_are(const elist *l, const char *ref, const prolly_id *const *from,
                     const prolly_id *const *to, int n)
{
	int k = n;
	for (int i = 0; i < l->n; i++) {
		const entry *e = &l->v[i];
		if (strcmp(e->ref, ref) != 0)
			continue;
		if (--k < 0 || e->has_old != (from[k] != NULL) || e->has_new != (to[k] != NULL) ||
		    (from[k] && !prolly_id_equal(&e->old_id, from[k])) ||
		    (to[k] && !prolly_id_equal(&e->new_id, to[k])))
			return 0;
	}
	return k == 0;
}

/* A client whose clock runs an hour fast moves main, then clients with right clocks move it
 * twice more; moves on another branch in the same microsecond; a branch made and deleted by the
 * fast client, then made again by a right one. The reflog lists each ref's moves in the order
 * they were written (each one's old value is the one before's new value), not by their clocks. */
TM_BOTH_STORES(reflog_order_of_writing_not_clocks)
{
	tm_db t;
	prolly_id c1, c2, c3, c4, s[4], old;
	elist l;
	PT_REQUIRE(open_db(&t, lmdb, 0) == 0);
	PT_REQUIRE(put(&c1, t.db, "main", "k", "1") == 0);
	t.db->opts.clock_us = T0 + 3600 * (int64_t)1000000; /* an hour fast */
	PT_REQUIRE(put(&c2, t.db, "main", "k", "2") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "gone", &c1) == 0);
	PT_REQUIRE(prolly_branch_remove(&old, t.db, "gone") == 0);
	t.db->opts.clock_us = T0 + 2000000; /* right again */
	PT_REQUIRE(put(&c3, t.db, "main", "k", "3") == 0);
	tick(t.db);
	PT_REQUIRE(put(&c4, t.db, "main", "k", "4") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "gone", &c4) == 0);
	/* One clock reading for four moves: equal times. */
	for (int i = 0; i < 4; i++) {
		char v[2] = {(char)('a' + i), 0};
		PT_REQUIRE(put(&s[i], t.db, "same", "k", v) == 0);
	}

	const prolly_id *mf[] = {NULL, &c1, &c2, &c3}, *mt[] = {&c1, &c2, &c3, &c4};
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECKF(moves_are(&l, "refs/heads/main", mf, mt, 4), "main's reflog is out of order");
	const prolly_id *sf[] = {NULL, &s[0], &s[1], &s[2]}, *st[] = {&s[0], &s[1], &s[2], &s[3]};
	PT_CHECK_RC(reflog_of(&l, t.db, "same"), 0);
	PT_CHECKF(moves_are(&l, "refs/heads/same", sf, st, 4), "equal times listed out of order");
	const prolly_id *gf[] = {NULL, &c1, NULL}, *gt[] = {&c1, NULL, &c4};
	PT_CHECK_RC(reflog_of(&l, t.db, "gone"), 0);
	PT_CHECKF(moves_are(&l, "refs/heads/gone", gf, gt, 3), "gone's reflog is out of order");
	/* Every ref at once: each ref's entries in its own order. */
	PT_CHECK_RC(reflog_of(&l, t.db, NULL), 0);
	PT_CHECK(moves_are(&l, "refs/heads/main", mf, mt, 4));
	PT_CHECK(moves_are(&l, "refs/heads/same", sf, st, 4));
	PT_CHECK(moves_are(&l, "refs/heads/gone", gf, gt, 3));
	tm_db_close(&t);
}

/* Entries whose old value no entry moved into (two deletions of one ref, seen with a branch of 64
 * hex digits whose creations predate its reflog): the chain's look-up of the move before ran one
 * past the end of its table (a heap-buffer-overflow under AddressSanitizer in the CLI's
 * pg/branch_hex64 case). Each entry is listed once, newest first. */
PT_TEST(reflog_order_without_a_move_into_the_old_value)
{
	char ref[] = "refs/heads/x", op[] = "delete";
	prolly__reflog e[3];
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 3; i++) {
		memset(e[i].id.bytes, 0x10 + i, PROLLY_ID_SIZE);
		e[i].time_us = T0 + i;
		e[i].has_old = 1;
		memset(e[i].old_id.bytes, 0xee, PROLLY_ID_SIZE);
		e[i].ref = ref;
		e[i].op = op;
	}
	PT_CHECK_RC(prolly__reflog_order(e, 3), 0);
	PT_CHECK(e[0].time_us == T0 + 2 && e[1].time_us == T0 + 1 && e[2].time_us == T0);
}

/* ---- gc and the horizon -------------------------------------------------------------------- */

TM_BOTH_STORES(reflog_gc_horizon)
{
	tm_db t;
	prolly_id c[4], old;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_commit *gone = NULL;
	elist l;
	PT_REQUIRE(open_db(&t, lmdb, 1) == 0);
	for (int i = 0; i < 4; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		PT_REQUIRE(put(&c[i], t.db, "main", k, "v") == 0);
		tick(t.db);
	}
	/* main back to c0: c3 is named only by the reflog now. */
	PT_REQUIRE(prolly_branch_reset(&old, t.db, "main", &c[0]) == 0);
	t.db->opts.clock_us += 13 * DAY_US; /* within the 14 days */
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.reflog_expired == 0);
	prolly_db_cache_clear(t.db);
	for (int i = 0; i < 4; i++) { /* every commit a live entry names, with its tree */
		prolly_commit *kc = NULL;
		uint64_t n;
		PT_CHECK_RC(prolly_commit_read(&kc, t.db, &c[i]), 0);
		if (kc)
			PT_CHECK_RC(prolly_count(&n, t.db, &kc->tree), 0);
		prolly_commit_free(kc);
	}
	t.db->opts.clock_us += 2 * DAY_US; /* 15 days: every entry has expired */
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECKF(res.reflog_expired == 5, "%llu expired", (unsigned long long)res.reflog_expired);
	prolly_db_cache_clear(t.db);
	PT_CHECK_RC(reflog_of(&l, t.db, NULL), 0);
	PT_CHECK(l.n == 0);
	PT_CHECK_RC(prolly_commit_read(&gone, t.db, &c[3]), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_commit_read(&gone, t.db, &c[0]), 0);
	prolly_commit_free(gone);
	/* Recording goes on after expiry. */
	PT_CHECK_RC(put(&old, t.db, "main", "z", "1"), 0);
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECK(l.n == 1);
	tm_db_close(&t);
}

/* A tag that named a tree root (not a commit): its reflog entry keeps the tree too. */
PT_TEST(reflog_keeps_tree_of_deleted_tag)
{
	tm_db t;
	tm_model m;
	prolly_id c, root;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(open_db(&t, 0, 1) == 0);
	tm_model_init(&m);
	for (int i = 0; i < 200; i++) {
		unsigned char k[TM_KEY24];
		tm_key24(k, (uint64_t)i);
		tm_model_put(&m, k, TM_KEY24, "tree-only", 9);
	}
	PT_REQUIRE(put(&c, t.db, "main", "k", "v") == 0);
	PT_REQUIRE(tm_build_commit(&root, t.db, &m) == 0);
	PT_CHECK_RC(create_ref(t.db, "refs/tags/tree", &root), 0);
	tick(t.db);
	PT_CHECK_RC(prolly_tag_delete(NULL, t.db, "tree"), 0);
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	prolly_db_cache_clear(t.db);
	PT_CHECK(tm_tree_check(t.db, &root, &m, "tree named by a reflog entry") == 0);
	t.db->opts.clock_us += 15 * DAY_US;
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	PT_CHECK(res.nodes_removed > 0 && res.reflog_expired == 3);
	prolly_db_cache_clear(t.db);
	uint64_t n;
	PT_CHECK_RC(prolly_count(&n, t.db, &root), PROLLY_ENOTFOUND);
	tm_model_dispose(&m);
	tm_db_close(&t);
}

/* A ref another client wrote under a name the library refuses, spelled as a branch's name, '@'
 * and more ("refs/heads/main@x"), is reflogged under "logs/refs/heads/main@x@...": the listing
 * of main's reflog, which asks for the names under "logs/refs/heads/main@", leaves its entries
 * out (they reported main@x's moves as main's; found by fuzz_spec with "ma1o@{2024-02-21}"). */
PT_TEST(reflog_of_a_branch_leaves_out_a_longer_name_with_at)
{
	tm_db t;
	prolly_id c, got;
	elist l;
	PT_REQUIRE(open_db(&t, 0, 1) == 0);
	PT_REQUIRE(put(&c, t.db, "main", "k", "v") == 0);
	tick(t.db);
	PT_CHECK_RC(create_ref(t.db, "refs/heads/main@x", &c), 0);
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECKF(l.n == 1 && strcmp(l.v[0].ref, "refs/heads/main") == 0, "%d entries, the first of %s",
	          l.n, l.n ? l.v[0].ref : "-");
	PT_CHECK_RC(prolly_resolve(&got, t.db, "main@{0}"), 0);
	PT_CHECK(prolly_id_equal(&got, &c));
	PT_CHECK_RC(prolly_resolve(&got, t.db, "main@{1}"), PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

/* L2: a gc that expires an entry between the listing of the entries' refs and the load of their
 * objects. The listing below deletes the entry's ref right after listing it, and the entry's
 * object was never stored (as after the gc's sweep). */
static prolly_db *expiring_db;
static const char *expiring_name;
static int (*listing)(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload);

static int list_then_expire(prolly_store *st, const char *prefix, prolly_store_ref_fn fn,
                            void *payload)
{
	int rc = listing(st, prefix, fn, payload);
	if (rc == 0 && expiring_name) {
		prolly_ref_update u;
		prolly_store_write w;
		memset(&u, 0, sizeof(u));
		memset(&w, 0, sizeof(w));
		u.name = expiring_name;
		u.expect = PROLLY_REF_EXPECT_ANY;
		u.remove = 1;
		w.refs = &u;
		w.n_refs = 1;
		rc = expiring_db->vt.write(st, &w);
	}
	return rc;
}

TM_BOTH_STORES(reflog_skips_an_entry_a_gc_expires_while_it_reads)
{
	tm_db t;
	prolly_id c0, c, bogus, got;
	elist before, l;
	const char *name = "logs/refs/heads/main@0000000000000001deadbeef";
	PT_REQUIRE(open_db(&t, lmdb, 1) == 0);
	PT_REQUIRE(put(&c0, t.db, "main", "k", "v") == 0);
	tick(t.db);
	PT_REQUIRE(put(&c, t.db, "main", "k2", "v2") == 0);
	tick(t.db);
	PT_REQUIRE(reflog_of(&before, t.db, "main") == 0 && before.n == 2);
	memset(bogus.bytes, 0xab, sizeof(bogus.bytes)); /* no object has this id */
	PT_REQUIRE(create_ref(t.db, name, &bogus) == 0);
	/* the entry's ref is there and its object is not: the store lost it */
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "is missing from the store") != NULL);
	/* the ref goes between the listing and the load: as if listed after the gc */
	expiring_db = t.db;
	expiring_name = name;
	listing = t.db->vt.list_refs;
	t.db->vt.list_refs = list_then_expire;
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_CHECKF(l.n == before.n, "%d entries, %d before", l.n, before.n);
	/* and so does a revision spec read from the reflog (resolve_at.c) */
	PT_REQUIRE(create_ref(t.db, name, &bogus) == 0);
	PT_CHECK_RC(prolly_resolve(&got, t.db, "main@{1}"), 0);
	PT_CHECK(prolly_id_equal(&got, &c0));
	expiring_name = NULL;
	t.db->vt.list_refs = listing;
	tm_db_close(&t);
}

/* ---- retention never changes a merge ------------------------------------------------------- */

/* Root of a merge of `from` into a scratch branch at `into`'s head (then deleted). */
static int merge_probe(prolly_id *root, prolly_db *db, const char *into, const char *from,
                       prolly_resolver res)
{
	prolly_id h, m;
	prolly_commit *c = NULL;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	int rc;
	mo.resolve = res;
	if ((rc = prolly_branch_head(&h, db, into)) || (rc = prolly_branch_create(db, "probe", &h)))
		return rc;
	if ((rc = prolly_merge_branches(&m, NULL, db, "probe", from, &mo, NULL)) == 0 &&
	    (rc = prolly_commit_read(&c, db, &m)) == 0)
		*root = c->tree;
	prolly_commit_free(c);
	prolly_branch_delete(db, "probe");
	return rc;
}

/* A horizon of more days than microseconds fit in int64 (reflog_days from 106751992 up, "keep
 * them for ever") keeps every entry: the span used to overflow and land the horizon in the
 * future, so that gc expired every entry and swept what only they named. */
TM_BOTH_STORES(reflog_gc_horizon_beyond_int64)
{
	tm_db t;
	prolly_id c[2], old;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	unsigned days[] = {106751991, 106751992, 200000000, 3000000000u, 0xffffffffu};
	PT_REQUIRE(open_db(&t, lmdb, 0) == 0);
	PT_REQUIRE(put(&c[0], t.db, "main", "a", "1") == 0);
	tick(t.db);
	PT_REQUIRE(put(&c[1], t.db, "main", "b", "2") == 0);
	tick(t.db);
	PT_REQUIRE(prolly_branch_reset(&old, t.db, "main", &c[0]) == 0); /* c1: the reflog's only */
	t.db->opts.clock_us += 30 * DAY_US;
	for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++) {
		prolly_commit *kc = NULL;
		t.db->opts.reflog_days = days[i];
		PT_CHECK_RC(prolly_gc(t.db, &res), 0);
		PT_CHECKF(res.reflog_expired == 0, "%u days: %llu expired", days[i],
		          (unsigned long long)res.reflog_expired);
		prolly_db_cache_clear(t.db);
		PT_CHECK_RC(prolly_commit_read(&kc, t.db, &c[1]), 0);
		prolly_commit_free(kc);
	}
	tm_db_close(&t);
}

TM_BOTH_STORES(reflog_retention_then_merge)
{
	tm_db t;
	prolly_id x, before_theirs, before_fail, after;
	prolly_commit *c = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(open_db(&t, lmdb, 2) == 0);
	t.db->opts.reflog_days = 0; /* retention by commits alone */
	PT_REQUIRE(put(&x, t.db, "main", "a", "1") == 0);
	PT_REQUIRE(put(&x, t.db, "main", "b", "2") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &x) == 0);
	PT_REQUIRE(put(&x, t.db, "dev", "a", NULL) == 0); /* dev deletes a */
	for (int i = 0; i < 3; i++) {
		char k[16];
		snprintf(k, sizeof(k), "m%d", i);
		PT_REQUIRE(put(&x, t.db, "main", k, "v") == 0);
		snprintf(k, sizeof(k), "d%d", i);
		PT_REQUIRE(put(&x, t.db, "dev", k, "v") == 0);
	}
	PT_REQUIRE(merge_probe(&before_theirs, t.db, "main", "dev", PROLLY_RESOLVE_THEIRS) == 0);
	PT_REQUIRE(merge_probe(&before_fail, t.db, "main", "dev", PROLLY_RESOLVE_FAIL) == 0);
	PT_CHECK(prolly_id_equal(&before_theirs, &before_fail)); /* no conflict at all */

	PT_REQUIRE(prolly_gc(t.db, &res) == 0);
	PT_CHECK(res.nodes_removed > 0);
	prolly_db_cache_clear(t.db);
	/* The same merge, after retention: same tree, no conflict, a stays deleted. */
	PT_CHECK_RC(merge_probe(&after, t.db, "main", "dev", PROLLY_RESOLVE_FAIL), 0);
	PT_CHECK(prolly_id_equal(&after, &before_fail));
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "main", "dev", NULL, NULL), 0);
	PT_REQUIRE(prolly_commit_read(&c, t.db, &x) == 0);
	PT_CHECK(prolly_id_equal(&c->tree, &before_fail));
	PT_CHECK_RC(prolly_get(&v, t.db, &c->tree, "a", 1), PROLLY_ENOTFOUND);
	prolly_commit_free(c);
	/* And again after the next gc (the merge is the new base): up to date, nothing to do. */
	PT_REQUIRE(prolly_gc(t.db, &res) == 0);
	prolly_id again;
	PT_CHECK_RC(prolly_merge_branches(&again, NULL, t.db, "main", "dev", NULL, NULL), 0);
	PT_CHECK(prolly_id_equal(&again, &x));
	prolly_buf_dispose(&v);
	tm_db_close(&t);
}

/* gc now walks the whole history (to find merge bases); where the store reads ahead
 * (get_ancestors: memory, PostgreSQL) a long history costs a few store calls, not one per
 * generation. */
PT_TEST(reflog_gc_walk_reads_ahead)
{
	tm_db t;
	prolly_id x;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_stats st = PROLLY_STATS_INIT;
	PT_REQUIRE(open_db(&t, 0, 2) == 0);
	t.db->opts.reflog_days = 0;
	PT_REQUIRE(put(&x, t.db, "main", "k", "0") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &x) == 0);
	for (int i = 0; i < 1500; i++) {
		char v[16];
		snprintf(v, sizeof(v), "%d", i);
		PT_REQUIRE(put(&x, t.db, "main", "k", v) == 0);
	}
	prolly_db_cache_clear(t.db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_gc(t.db, &res), 0);
	prolly_thread_stats(&st);
	fprintf(stderr, "  # gc over 1501 commits: %llu store calls\n",
	        (unsigned long long)st.store_reads);
	PT_CHECKF(st.store_reads <= 12, "%llu store calls", (unsigned long long)st.store_reads);
	/* The base of main and dev (the first commit) is kept, and the merge still finds it. */
	prolly_id h, d, b;
	PT_REQUIRE(prolly_branch_head(&h, t.db, "main") == 0 &&
	           prolly_branch_head(&d, t.db, "dev") == 0);
	PT_CHECK_RC(prolly_merge_base(&b, t.db, &h, &d), 0);
	PT_CHECK(prolly_id_equal(&b, &d));
	tm_db_close(&t);
}

/* Unrelated history versus history cut by retention. */
TM_BOTH_STORES(reflog_merge_base_pruned)
{
	tm_db t;
	prolly_id a, b, r1, r2, side, x, empty;
	prolly_txn *txn = NULL;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	PT_REQUIRE(open_db(&t, lmdb, 1) == 0);

	/* Two root commits: unrelated. */
	prolly_id_empty_tree(&empty);
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_REQUIRE(prolly_commit_create(&r1, txn, &empty, NULL, 0, T0, "r1") == 0);
	PT_REQUIRE(prolly_commit_create(&r2, txn, &empty, NULL, 0, T0 + 1, "r2") == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "u1", NULL, &r1) == 0);
	PT_REQUIRE(prolly_txn_move_branch(txn, "u2", NULL, &r2) == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	PT_REQUIRE(put(&a, t.db, "u1", "x", "1") == 0);
	PT_REQUIRE(put(&b, t.db, "u2", "y", "1") == 0);
	PT_CHECK_RC(prolly_merge_base(&x, t.db, &a, &b), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "u1", "u2", NULL, NULL), PROLLY_ENOTFOUND);
	mo.allow_unrelated = 1;
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "u1", "u2", &mo, NULL), 0);

	/* main, and side branched from it; side is deleted 20 days later, main's entries expire. */
	PT_REQUIRE(put(&a, t.db, "main", "k", "1") == 0);
	PT_REQUIRE(put(&a, t.db, "main", "k", "2") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "side", &a) == 0);
	PT_REQUIRE(put(&side, t.db, "side", "s", "1") == 0);
	PT_REQUIRE(put(&side, t.db, "side", "s", "2") == 0);
	PT_REQUIRE(put(&b, t.db, "main", "m", "1") == 0);
	PT_REQUIRE(put(&b, t.db, "main", "m", "2") == 0);
	t.db->opts.clock_us += 20 * DAY_US;
	PT_REQUIRE(prolly_branch_delete(t.db, "side") == 0);
	PT_REQUIRE(prolly_branch_delete(t.db, "u1") == 0);
	PT_REQUIRE(prolly_branch_delete(t.db, "u2") == 0);
	tick(t.db);
	PT_REQUIRE(prolly_gc(t.db, &res) == 0); /* retain 1; side's head lives by its reflog entry */
	PT_CHECK(res.reflog_expired > 0);
	prolly_db_cache_clear(t.db);
	PT_CHECK_RC(prolly_merge_base(&x, t.db, &b, &side), PROLLY_EPRUNED);
	tick(t.db);
	PT_REQUIRE(prolly_branch_restore(&x, t.db, "side") == 0);
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "main", "side", NULL, NULL), PROLLY_EPRUNED);
	prolly_merge_options_init(&mo, PROLLY_MERGE_OPTIONS_VERSION);
	mo.base = &b; /* an explicit base: a three-way merge against main's head */
	mo.resolve = PROLLY_RESOLVE_THEIRS;
	PT_CHECK_RC(prolly_merge_branches(&x, NULL, t.db, "main", "side", &mo, NULL), 0);
	prolly_commit *c = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	PT_REQUIRE(prolly_commit_read(&c, t.db, &x) == 0);
	PT_CHECK(c->n_parents == 2);
	PT_CHECK_RC(prolly_get(&v, t.db, &c->tree, "s", 1), 0);
	prolly_commit_free(c);
	prolly_buf_dispose(&v);
	tm_db_close(&t);
}

/* ---- racing writers ------------------------------------------------------------------------ */

#define RACERS 4
#define RACE_COMMITS 25

typedef struct racer {
	prolly_db *db;
	int id, won, lost;
} racer;

static void *race_main(void *arg)
{
	racer *r = arg;
	for (int i = 0; i < RACE_COMMITS;) {
		char k[32];
		prolly_id out;
		snprintf(k, sizeof(k), "r%d-%d", r->id, i);
		int rc = put(&out, r->db, "main", k, "v");
		if (rc == 0) {
			r->won++;
			i++;
		} else if (rc == PROLLY_ECONFLICT) {
			r->lost++;
		} else {
			break;
		}
	}
	return NULL;
}

TM_BOTH_STORES(reflog_racing_writers)
{
	tm_db t;
	prolly_id c;
	pthread_t th[RACERS];
	racer rs[RACERS];
	elist l;
	PT_REQUIRE(open_db(&t, lmdb, 0) == 0);
	t.db->opts.clock_us = 0; /* the wall clock: entries of one microsecond must not collide */
	PT_REQUIRE(put(&c, t.db, "main", "start", "v") == 0);
	for (int i = 0; i < RACERS; i++) {
		rs[i] = (racer){t.db, i, 0, 0};
		PT_REQUIRE(pthread_create(&th[i], NULL, race_main, &rs[i]) == 0);
	}
	int won = 0, lost = 0;
	for (int i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		won += rs[i].won;
		lost += rs[i].lost;
	}
	fprintf(stderr, "  # %d commits won, %d races lost\n", won, lost);
	PT_CHECK(won == RACERS * RACE_COMMITS);
	/* One entry per commit that won, and one chain: each old is the previous new. */
	PT_CHECK_RC(reflog_of(&l, t.db, "main"), 0);
	PT_REQUIRE(l.n == won + 1);
	prolly_id head;
	PT_REQUIRE(prolly_branch_head(&head, t.db, "main") == 0);
	PT_CHECK(prolly_id_equal(&l.v[0].new_id, &head));
	/* Entries of one chain: follow new -> old links from the head (times may tie). */
	int linked = 1;
	prolly_id cur = head;
	for (int step = 0; step < l.n - 1; step++) {
		int found = 0;
		for (int i = 0; i < l.n; i++)
			if (l.v[i].has_old && prolly_id_equal(&l.v[i].new_id, &cur)) {
				cur = l.v[i].old_id;
				found = 1;
				break;
			}
		linked &= found;
	}
	PT_CHECK(linked && prolly_id_equal(&cur, &c));
	tm_db_close(&t);
}

/* ---- random branch operations against a model ---------------------------------------------- */

#define MB 4    /* branch names b0..b3 */
#define MT 3    /* tag names t0..t2 */
#define MLOG 96 /* moves remembered per ref */
#define MC 400  /* commits remembered */

typedef struct mref {
	int exists;
	prolly_id at;
	int n; /* moves recorded (the last MLOG kept) */
	entry log[MLOG];
} mref;

typedef struct mstate {
	mref br[MB], tg[MT];
	prolly_id commits[MC];
	int nc;
} mstate;

static void mlog(mref *r, const char *op, const prolly_id *old_id, const prolly_id *new_id)
{
	entry *e = &r->log[r->n % MLOG];
	memset(e, 0, sizeof(*e));
	snprintf(e->op, sizeof(e->op), "%s", op);
	e->has_old = old_id != NULL;
	e->has_new = new_id != NULL;
	if (old_id)
		e->old_id = *old_id;
	if (new_id)
		e->new_id = *new_id;
	r->n++;
}

/* The store's reflog of ref equals the model's, newest first. */
static int check_ref(prolly_db *db, const char *ref, const mref *m)
{
	elist l;
	if (reflog_of(&l, db, ref) != 0 || l.n != m->n || m->n > MLOG)
		return fprintf(stderr, "  %s: %d entries, model %d\n", ref, l.n, m->n), 1;
	for (int i = 0; i < l.n; i++) {
		const entry *w = &m->log[m->n - 1 - i], *g = &l.v[i];
		if (strcmp(w->op, g->op) || w->has_old != g->has_old || w->has_new != g->has_new ||
		    (w->has_old && !prolly_id_equal(&w->old_id, &g->old_id)) ||
		    (w->has_new && !prolly_id_equal(&w->new_id, &g->new_id)))
			return fprintf(stderr, "  %s entry %d: '%s', model '%s'\n", ref, i, g->op, w->op), 1;
	}
	return 0;
}

TM_BOTH_STORES(reflog_random_ops_against_model)
{
	tm_db t;
	tm_rng r;
	static mstate ms;
	char name[16], ref[32];
	int steps = 220, bad = 0;
	memset(&ms, 0, sizeof(ms));
	PT_REQUIRE(open_db(&t, lmdb, 0) == 0);
	tm_rng_seed(&r, PT_SEED() + 7);
	PT_REQUIRE(put(&ms.br[0].at, t.db, "b0", "k", "0") == 0);
	ms.br[0].exists = 1;
	mlog(&ms.br[0], "commit", NULL, &ms.br[0].at);
	ms.commits[ms.nc++] = ms.br[0].at;
	for (int step = 0; step < steps && !bad; step++) {
		int b = (int)tm_rng_below(&r, MB), b2 = (int)tm_rng_below(&r, MB);
		int tg = (int)tm_rng_below(&r, MT);
		prolly_id some = ms.commits[tm_rng_below(&r, (uint64_t)ms.nc)], x, old;
		mref *m = &ms.br[b];
		int rc = 0;
		tick(t.db);
		snprintf(name, sizeof(name), "b%d", b);
		switch (tm_rng_below(&r, 8)) {
		case 0:
		case 1: /* commit */
			if (!m->exists)
				break;
			snprintf(ref, sizeof(ref), "v%d", step);
			if ((rc = put(&x, t.db, name, "k", ref)) == 0) {
				mlog(m, "commit", &m->at, &x);
				m->at = x;
				if (ms.nc < MC)
					ms.commits[ms.nc++] = x;
			}
			break;
		case 2: /* create or delete */
			if (m->exists) {
				int last = 1;
				for (int i = 0; i < MB; i++)
					last &= i == b || !ms.br[i].exists;
				if (last)
					break; /* keep one branch, as the CLI does without --force */
				if ((rc = prolly_branch_remove(&old, t.db, name)) == 0) {
					PT_CHECK(prolly_id_equal(&old, &m->at));
					mlog(m, "delete", &m->at, NULL);
					m->exists = 0;
				}
			} else if ((rc = prolly_branch_create(t.db, name, &some)) == 0) {
				mlog(m, "branch", NULL, &some);
				m->exists = 1;
				m->at = some;
			}
			break;
		case 3: /* restore */
			rc = prolly_branch_restore(&x, t.db, name);
			if (m->exists) {
				PT_CHECK(rc == PROLLY_ECONFLICT);
				rc = 0;
			} else if (m->n && !m->log[(m->n - 1) % MLOG].has_new) {
				PT_CHECK_RC(rc, 0);
				PT_CHECK(prolly_id_equal(&x, &m->log[(m->n - 1) % MLOG].old_id));
				mlog(m, "restore", NULL, &x);
				m->exists = 1;
				m->at = x;
			} else {
				PT_CHECK(rc == PROLLY_ENOTFOUND);
				rc = 0;
			}
			break;
		case 4: /* reset */
			rc = prolly_branch_reset(&old, t.db, name, &some);
			if (!m->exists) {
				PT_CHECK(rc == PROLLY_ENOTFOUND);
				rc = 0;
			} else if (rc == 0) {
				mlog(m, "reset", &m->at, &some);
				m->at = some;
			}
			break;
		case 5: /* tags */
			snprintf(name, sizeof(name), "t%d", tg);
			if (ms.tg[tg].exists) {
				if ((rc = prolly_tag_delete(&old, t.db, name)) == 0) {
					PT_CHECK(prolly_id_equal(&old, &ms.tg[tg].at));
					mlog(&ms.tg[tg], "delete", &ms.tg[tg].at, NULL);
					ms.tg[tg].exists = 0;
				}
			} else {
				PT_CHECK_RC(prolly_tag_create(t.db, name, &some), 0);
				mlog(&ms.tg[tg], "tag", NULL, &some);
				ms.tg[tg].exists = 1;
				ms.tg[tg].at = some;
			}
			break;
		case 6: { /* merge b2 into b */
			prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
			char from[16];
			mo.resolve = PROLLY_RESOLVE_THEIRS;
			if (!m->exists || !ms.br[b2].exists || b == b2)
				break;
			snprintf(from, sizeof(from), "b%d", b2);
			if ((rc = prolly_merge_branches(&x, NULL, t.db, name, from, &mo, NULL)) != 0)
				break;
			if (prolly_id_equal(&x, &m->at))
				break; /* up to date: no move, no entry */
			mlog(m, prolly_id_equal(&x, &ms.br[b2].at) ? "fast-forward" : "merge", &m->at, &x);
			m->at = x;
			if (ms.nc < MC)
				ms.commits[ms.nc++] = x;
			break;
		}
		default: { /* gc within the horizon: nothing the model knows goes away */
			prolly_gc_result res = PROLLY_GC_RESULT_INIT;
			rc = prolly_gc(t.db, &res);
			if (rc == 0)
				PT_CHECK(res.reflog_expired == 0);
			break;
		}
		}
		PT_CHECKF(rc == 0, "step %d: %d (%s)", step, rc, prolly_last_error());
		bad |= rc != 0;
	}
	for (int i = 0; i < MB && !bad; i++) {
		prolly_id h;
		snprintf(name, sizeof(name), "b%d", i);
		snprintf(ref, sizeof(ref), "refs/heads/b%d", i);
		int rc = prolly_branch_head(&h, t.db, name);
		PT_CHECK(ms.br[i].exists ? rc == 0 && prolly_id_equal(&h, &ms.br[i].at)
		                         : rc == PROLLY_ENOTFOUND);
		PT_CHECK(check_ref(t.db, ref, &ms.br[i]) == 0);
	}
	for (int i = 0; i < MT && !bad; i++) {
		prolly_id h;
		snprintf(name, sizeof(name), "t%d", i);
		snprintf(ref, sizeof(ref), "refs/tags/t%d", i);
		int rc = prolly_tag_get(&h, t.db, name);
		PT_CHECK(ms.tg[i].exists ? rc == 0 && prolly_id_equal(&h, &ms.tg[i].at)
		                         : rc == PROLLY_ENOTFOUND);
		PT_CHECK(check_ref(t.db, ref, &ms.tg[i]) == 0);
	}
	int moves = 0;
	for (int i = 0; i < MB; i++)
		moves += ms.br[i].n;
	for (int i = 0; i < MT; i++)
		moves += ms.tg[i].n;
	fprintf(stderr, "  # %d moves recorded, %d commits\n", moves, ms.nc);
	if (pt_failed_now)
		fprintf(stderr, "  re-run: PROLLY_TEST_SEED=%llu build/tests/test_reflog model\n",
		        (unsigned long long)PT_SEED());
	tm_db_close(&t);
}

/* ---- the decoder --------------------------------------------------------------------------- */

static int grab(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	return prolly__buf_set(payload, data, size);
}

typedef struct one_ref {
	prolly_id id;
	int n;
} one_ref;

static int on_ref(void *p, const char *name, const prolly_id *value)
{
	one_ref *f = p;
	(void)name;
	f->id = *value;
	f->n++;
	return 0;
}

PT_TEST(reflog_decoder_refuses_damage)
{
	tm_db t;
	prolly_id c, id;
	prolly_buf b = PROLLY_BUF_INIT, m = PROLLY_BUF_INIT;
	prolly__reflog e;
	elist l;
	PT_REQUIRE(open_db(&t, 0, 0) == 0);
	PT_REQUIRE(put(&c, t.db, "main", "k", "v") == 0);
	PT_REQUIRE(reflog_of(&l, t.db, "main") == 0 && l.n == 1);
	/* Find the entry's id through its ref. */
	one_ref found = {{{0}}, 0};
	PT_REQUIRE(t.db->store->list_refs(t.db->store, "logs/", on_ref, &found) == 0 && found.n == 1);
	id = found.id;
	PT_REQUIRE(t.db->store->get_nodes(t.db->store, &id, 1, grab, &b) == 0 && b.size > 83);
	PT_CHECK_RC(prolly__reflog_decode(&e, &id, b.ptr, b.size), 0);
	PT_CHECK(e.has_new && !e.has_old && strcmp(e.op, "commit") == 0);
	prolly__reflog_dispose(&e);
	for (size_t n = 0; n < b.size; n++) /* R1, R5-R7: every truncation */
		PT_CHECKF(prolly__reflog_decode(&e, &id, b.ptr, n) == PROLLY_ECORRUPT, "len %zu", n);
	/* R5 before reading the operation: a long operation length in a short object (found by
	 * fuzz_reflog: the bytes were read before their size was checked). */
	unsigned char *exact = malloc(85); /* exactly 85 bytes, so a sanitizer sees a read past */
	PT_REQUIRE(exact);
	memcpy(exact, b.ptr, 85);
	exact[78] = 32;
	PT_CHECK_RC(prolly__reflog_decode(&e, &id, exact, 85), PROLLY_ECORRUPT);
	free(exact);
	PT_REQUIRE(prolly__buf_set(&m, b.ptr, b.size) == 0 && prolly__buf_put(&m, "x", 1) == 0);
	PT_CHECK_RC(prolly__reflog_decode(&e, &id, m.ptr, m.size), PROLLY_ECORRUPT); /* R7 */
	const struct {
		size_t off;
		unsigned char val;
		int want;
	} flips[] = {
	    {0, 'X', PROLLY_ECORRUPT},  /* R2 */
	    {4, 0, PROLLY_ECORRUPT},    /* R3 */
	    {4, 2, PROLLY_EVERSION},    /* R3 */
	    {5, 7, PROLLY_ECORRUPT},    /* R4: unknown flag */
	    {14, 1, PROLLY_ECORRUPT},   /* R4: an absent old value that is not zero */
	    {78, 0, PROLLY_ECORRUPT},   /* R5: empty operation */
	    {79, 'A', PROLLY_ECORRUPT}, /* R5: not [a-z-] */
	    {78, 33, PROLLY_ECORRUPT},  /* R5 */
	};
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		PT_REQUIRE(prolly__buf_set(&m, b.ptr, b.size) == 0);
		m.ptr[flips[i].off] = flips[i].val;
		int rc = prolly__reflog_decode(&e, &id, m.ptr, m.size);
		PT_CHECKF(rc == flips[i].want, "byte %zu = %u gave %d", flips[i].off, flips[i].val, rc);
		if (rc == 0)
			prolly__reflog_dispose(&e);
	}
	/* A damaged stored entry is refused when the reflog is read (the hash no longer matches). */
	prolly_buf_dispose(&b);
	prolly_buf_dispose(&m);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
