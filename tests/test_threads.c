/*
 * test_threads.c - the THREADS contract of include/prolly.h, under load: NT threads share one
 * prolly_db (memory, LMDB, PostgreSQL) and each, round after round,
 *
 *   - commits an edit of 150 edits (100 puts of its own keys, 50 deletes of the last round's;
 *     the edit's nodes are made on the encode thread) to its own branch, through a txn;
 *   - checks the diff from the tree before to the tree after (exactly those changes), a scan
 *     of its own keys (a prefix cursor) against what it wrote, gets of present and deleted
 *     keys, and a full cursor scan of the base records (read-ahead);
 *   - commits 64 puts of its own to the one shared branch (prolly_commit_edits_on, merged onto
 *     whatever head the other threads made);
 *   - merges (a tree merge of its branch and the shared one committed to a branch of its own,
 *     and every fourth round prolly_merge_branches of the shared branch into its own);
 *   - pushes its branch to one memory store that every thread pushes to (prolly_push);
 *   - fails a lookup with a name of its own and finds that name in prolly_last_error;
 *   - checks that its prolly_thread_stats count its own work only;
 * while thread 0 runs gc, thread 1 clears the cache and thread 2 reads the handle's counters.
 * A commit that a gc overtook (PROLLY_ECONFLICT) is made again. At the end every branch is
 * checked again, after a last gc.
 *
 * Threads record what went wrong in their own struct (ptest's checks are for the main thread).
 * Run it under ThreadSanitizer with `make tsan-test` (docs/testing.md). Re-run one store:
 * build/tests/test_threads threads_mem (threads_lmdb, threads_pg).
 */
#include "lib/model.h"
#include "lib/pgt.h"
#include "ptest.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 4         /* threads */
#define ROUNDS 6     /* rounds per thread */
#define NBASE 6000   /* records of the base tree ("base/NNNNN"), BASE_VAL bytes each */
#define BASE_VAL 240 /* a base tree of some 400 leaves: a scan of it reads ahead */
#define NOWN 100     /* puts of own keys per round */
#define NSHARED 64   /* puts to the shared branch per round */
#define NBUILD 3000  /* records of a bulk build (some 200 KB: several flushes of FLUSH bytes) */
#define FLUSH (32 << 10)
#define ATTEMPTS 50 /* tries of a commit that gc overtakes */

typedef struct thr {
	prolly_db *db;
	prolly_db *remote; /* a memory store every thread pushes its branch to */
	int id;
	prolly_id base_tree;
	int errors;
	char first[512]; /* the first error */
	uint64_t retries;
	int pg; /* the store is PostgreSQL's: its per-thread counters move too */
} thr;

__attribute__((format(printf, 2, 3))) static void fail(thr *t, const char *fmt, ...)
{
	va_list ap;
	if (t->errors++ == 0) {
		int n = snprintf(t->first, sizeof(t->first), "thread %d: ", t->id);
		va_start(ap, fmt);
		vsnprintf(t->first + n, sizeof(t->first) - (size_t)n, fmt, ap);
		va_end(ap);
	}
}

static void own_key(char *out, size_t cap, int id, int round, int j)
{
	snprintf(out, cap, "t%d/%03d/%03d", id, round, j);
}

static void own_val(char *out, size_t cap, int id, int round, int j)
{
	snprintf(out, cap, "v%d.%d.%d", id, round, j);
}

/* After round `last` (-1: none yet), own key (round, j) is present: all of the last round's, the
 * even ones of earlier rounds. */
static int own_present(int round, int j, int last)
{
	return round <= last && (round == last || j % 2 == 0);
}

static prolly_slice sl(const char *s)
{
	return (prolly_slice){s, strlen(s)};
}

/* Records of root whose key starts with prefix; -1 on an error (recorded). */
static long count_prefix(thr *t, const prolly_id *root, const char *prefix)
{
	prolly_range r = PROLLY_RANGE_INIT;
	prolly_cursor *c;
	long n = 0;
	int rc;
	r.prefix = sl(prefix);
	if ((rc = prolly_cursor_open(&c, t->db, root, &r))) {
		fail(t, "cursor_open: %s", prolly_last_error());
		return -1;
	}
	while ((rc = prolly_cursor_next(c, NULL, NULL)) == 0)
		n++;
	if (rc != PROLLY_ITEROVER) {
		fail(t, "cursor_next: %d %s", rc, prolly_last_error());
		n = -1;
	}
	prolly_cursor_free(c);
	return n;
}

/* The thread's own keys in root, in order, against what it wrote through round `last`. */
static void check_own(thr *t, const prolly_id *root, int last, const char *what)
{
	prolly_range r = PROLLY_RANGE_INIT;
	prolly_cursor *c;
	prolly_slice k, v;
	char prefix[16], want_k[32], want_v[32];
	int rc = 0;
	snprintf(prefix, sizeof(prefix), "t%d/", t->id);
	r.prefix = sl(prefix);
	if (prolly_cursor_open(&c, t->db, root, &r)) {
		fail(t, "%s: cursor_open: %s", what, prolly_last_error());
		return;
	}
	for (int round = 0; round <= last && rc == 0; round++)
		for (int j = 0; j < NOWN && rc == 0; j++) {
			if (!own_present(round, j, last))
				continue;
			own_key(want_k, sizeof(want_k), t->id, round, j);
			own_val(want_v, sizeof(want_v), t->id, round, j);
			if ((rc = prolly_cursor_next(c, &k, &v)) != 0)
				fail(t, "%s: scan ended (%d) before %s", what, rc, want_k);
			else if (k.size != strlen(want_k) || memcmp(k.data, want_k, k.size) ||
			         v.size != strlen(want_v) || memcmp(v.data, want_v, v.size))
				rc = 1, fail(t, "%s: scan found %.*s, want %s", what, (int)k.size,
				             (const char *)k.data, want_k);
		}
	if (rc == 0 && (rc = prolly_cursor_next(c, &k, NULL)) != PROLLY_ITEROVER)
		fail(t, "%s: scan has more: %d", what, rc);
	prolly_cursor_free(c);
}

/* Every base record, in order, through a cursor over the whole base range (read-ahead). */
static void check_base(thr *t, const prolly_id *root)
{
	prolly_range r = PROLLY_RANGE_INIT;
	prolly_cursor *c;
	prolly_slice k, v;
	char want[32];
	int i = 0, rc;
	r.prefix = sl("base/");
	if (prolly_cursor_open(&c, t->db, root, &r)) {
		fail(t, "base cursor_open: %s", prolly_last_error());
		return;
	}
	while ((rc = prolly_cursor_next(c, &k, &v)) == 0) {
		snprintf(want, sizeof(want), "base/%05d", i);
		if (k.size != strlen(want) || memcmp(k.data, want, k.size) || v.size != BASE_VAL) {
			fail(t, "base scan: record %d is %.*s", i, (int)k.size, (const char *)k.data);
			break;
		}
		i++;
	}
	if (i != NBASE)
		fail(t, "base scan: %d records (rc %d), want %d", i, rc, NBASE);
	prolly_cursor_free(c);
}

typedef struct diff_count {
	int added, removed, other;
	const char *prefix;
} diff_count;

static int count_diff(void *payload, const prolly_diff_entry *e)
{
	diff_count *d = payload;
	if (e->key.size < strlen(d->prefix) || memcmp(e->key.data, d->prefix, strlen(d->prefix)))
		d->other++;
	else if (e->kind == PROLLY_DIFF_ADDED)
		d->added++;
	else if (e->kind == PROLLY_DIFF_REMOVED)
		d->removed++;
	else
		d->other++;
	return 0;
}

/* One round's own commit: NOWN puts, and deletes of the odd keys of the round before. */
static int own_commit(thr *t, int round, prolly_id *prev_tree, prolly_id *new_tree)
{
	char kb[NOWN + NOWN / 2][32], vb[NOWN][32];
	prolly_edit e[NOWN + NOWN / 2];
	size_t n = 0;
	char br[16];
	snprintf(br, sizeof(br), "t%d", t->id);
	for (int j = 0; j < NOWN; j++) {
		own_key(kb[n], sizeof(kb[n]), t->id, round, j);
		own_val(vb[j], sizeof(vb[j]), t->id, round, j);
		e[n] = (prolly_edit){PROLLY_PUT, sl(kb[n]), sl(vb[j])};
		n++;
	}
	for (int j = 1; round > 0 && j < NOWN; j += 2) {
		own_key(kb[n], sizeof(kb[n]), t->id, round - 1, j);
		e[n] = (prolly_edit){PROLLY_DEL, sl(kb[n]), {NULL, 0}};
		n++;
	}
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		prolly_commit *head = NULL;
		prolly_txn *txn = NULL;
		prolly_id cid;
		int rc;
		if ((rc = prolly_branch_commit(&head, t->db, br)) == 0 &&
		    (rc = prolly_txn_begin(&txn, t->db)) == 0 &&
		    (rc = prolly_edit_tree(new_tree, txn, &head->tree, e, n)) == 0 &&
		    (rc = prolly_commit_create(&cid, txn, new_tree, &head->id, 1, 0, "own")) == 0 &&
		    (rc = prolly_txn_move_branch(txn, br, &head->id, &cid)) == 0)
			rc = prolly_txn_commit(txn, NULL, 0);
		if (rc == 0)
			*prev_tree = head->tree;
		else if (rc != PROLLY_ECONFLICT)
			fail(t, "own commit, round %d: %d %s", round, rc, prolly_last_error());
		prolly_txn_free(txn);
		prolly_commit_free(head);
		if (rc != PROLLY_ECONFLICT)
			return rc;
		t->retries++;
	}
	fail(t, "own commit, round %d: overtaken %d times", round, ATTEMPTS);
	return PROLLY_ECONFLICT;
}

static void shared_commit(thr *t, int round)
{
	char kb[NSHARED][32], vb[NSHARED][32];
	prolly_edit e[NSHARED];
	for (int j = 0; j < NSHARED; j++) {
		snprintf(kb[j], sizeof(kb[j]), "s/%d/%03d/%02d", t->id, round, j);
		snprintf(vb[j], sizeof(vb[j]), "w%d.%d.%d", t->id, round, j);
		e[j] = (prolly_edit){PROLLY_PUT, sl(kb[j]), sl(vb[j])};
	}
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		prolly_commit *head = NULL;
		prolly_id out;
		unsigned rebased = 0;
		int rc = prolly_branch_commit(&head, t->db, "shared");
		if (rc == 0)
			rc = prolly_commit_edits_on(&out, &rebased, t->db, "shared", &head->id, e, NSHARED,
			                            "shared", 4);
		prolly_commit_free(head);
		if (rc == 0)
			return;
		if (rc != PROLLY_ECONFLICT) {
			fail(t, "shared commit, round %d: %d %s", round, rc, prolly_last_error());
			return;
		}
		t->retries++;
	}
	fail(t, "shared commit, round %d: overtaken %d times", round, ATTEMPTS);
}

/* Merges the shared branch's tree into the thread's tree (base: the base tree) and commits it
 * to branch m<id> with both heads as parents. */
static void tree_merge(thr *t, int round)
{
	char br[16], mbr[16];
	snprintf(br, sizeof(br), "t%d", t->id);
	snprintf(mbr, sizeof(mbr), "m%d", t->id);
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		prolly_commit *ours = NULL, *theirs = NULL;
		prolly_txn *txn = NULL;
		prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
		prolly_id merged, cid, mhead, parents[2];
		int have_m = 0, rc;
		if ((rc = prolly_branch_head(&mhead, t->db, mbr)) == 0)
			have_m = 1;
		else if (rc != PROLLY_ENOTFOUND)
			goto done;
		if ((rc = prolly_branch_commit(&ours, t->db, br)) ||
		    (rc = prolly_branch_commit(&theirs, t->db, "shared")) ||
		    (rc = prolly_txn_begin(&txn, t->db)) ||
		    (rc = prolly_merge(&merged, &st, txn, &t->base_tree, &ours->tree, &theirs->tree, NULL)))
			goto done;
		parents[0] = ours->id;
		parents[1] = theirs->id;
		if ((rc = prolly_commit_create(&cid, txn, &merged, parents, 2, 0, "merge")) ||
		    (rc = prolly_txn_move_branch(txn, mbr, have_m ? &mhead : NULL, &cid)))
			goto done;
		if (st.conflicts)
			fail(t, "tree merge, round %d: %" PRIu64 " conflicts", round, st.conflicts);
		/* Before the commit: its nodes are the txn's, readable through the handle. */
		check_own(t, &merged, round, "tree merge");
		long s_merged = count_prefix(t, &merged, "s/"),
		     s_theirs = count_prefix(t, &theirs->tree, "s/");
		if (s_merged != s_theirs)
			fail(t, "tree merge, round %d: %ld shared records, the shared branch %ld", round,
			     s_merged, s_theirs);
		rc = prolly_txn_commit(txn, NULL, 0);
	done:
		if (rc && rc != PROLLY_ECONFLICT)
			fail(t, "tree merge, round %d: %d %s", round, rc, prolly_last_error());
		prolly_txn_free(txn);
		prolly_commit_free(ours);
		prolly_commit_free(theirs);
		if (rc != PROLLY_ECONFLICT)
			return;
		t->retries++;
	}
	fail(t, "tree merge, round %d: overtaken %d times", round, ATTEMPTS);
}

/* Bulk-builds NBUILD records into branch b<id> through a builder whose nodes the handle's small
 * flush_bytes sends to the store early, from a flush thread. */
static void build_branch(thr *t, int round)
{
	char br[16], k[32], v[64];
	snprintf(br, sizeof(br), "b%d", t->id);
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		prolly_txn *txn = NULL;
		prolly_builder *b = NULL;
		prolly_id root, cid, head;
		int have = 0, rc;
		if ((rc = prolly_branch_head(&head, t->db, br)) == 0)
			have = 1;
		else if (rc != PROLLY_ENOTFOUND)
			goto done;
		if ((rc = prolly_txn_begin(&txn, t->db)) || (rc = prolly_builder_new(&b, txn)))
			goto done;
		for (int i = 0; i < NBUILD && rc == 0; i++) {
			snprintf(k, sizeof(k), "b%d/%06d", t->id, i);
			int n = snprintf(v, sizeof(v), "%d.%d.%040d", t->id, round, i);
			rc = prolly_builder_add(b, k, strlen(k), v, (size_t)n);
		}
		if (rc || (rc = prolly_builder_finish(b, &root)) ||
		    (rc = prolly_commit_create(&cid, txn, &root, have ? &head : NULL, have, 0, "build")) ||
		    (rc = prolly_txn_move_branch(txn, br, have ? &head : NULL, &cid)) ||
		    (rc = prolly_txn_commit(txn, NULL, 0)))
			goto done;
		long n = count_prefix(t, &root, "");
		snprintf(k, sizeof(k), "b%d/%06d", t->id, NBUILD - 1);
		int want = snprintf(v, sizeof(v), "%d.%d.%040d", t->id, round, NBUILD - 1);
		prolly_buf got = PROLLY_BUF_INIT;
		if (n != NBUILD)
			fail(t, "build, round %d: %ld records, want %d", round, n, NBUILD);
		if (prolly_get(&got, t->db, &root, k, strlen(k)) || got.size != (size_t)want ||
		    memcmp(got.ptr, v, got.size))
			fail(t, "build, round %d: last record wrong", round);
		prolly_buf_dispose(&got);
	done:
		if (rc && rc != PROLLY_ECONFLICT)
			fail(t, "build, round %d: %d %s", round, rc, prolly_last_error());
		prolly_builder_free(b);
		prolly_txn_free(txn);
		if (rc != PROLLY_ECONFLICT)
			return;
		t->retries++;
	}
	fail(t, "build, round %d: overtaken %d times", round, ATTEMPTS);
}

static void branch_merge(thr *t, int round)
{
	char br[16];
	snprintf(br, sizeof(br), "t%d", t->id);
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
		prolly_id out;
		int rc = prolly_merge_branches(&out, &st, t->db, br, "shared", NULL, "merge shared");
		if (rc == 0 && st.conflicts)
			fail(t, "merge_branches, round %d: %" PRIu64 " conflicts", round, st.conflicts);
		if (rc == 0)
			return;
		if (rc != PROLLY_ECONFLICT) {
			fail(t, "merge_branches, round %d: %d %s", round, rc, prolly_last_error());
			return;
		}
		t->retries++;
	}
	fail(t, "merge_branches, round %d: overtaken %d times", round, ATTEMPTS);
}

static int stats_zero(const prolly_stats *s)
{
	return !s->cache_hits && !s->cache_misses && !s->cache_evictions && !s->nodes_read &&
	       !s->bytes_read && !s->nodes_written && !s->bytes_written && !s->store_reads &&
	       !s->store_read_items && !s->store_writes && !s->store_round_trips;
}

static void *thr_main(void *arg)
{
	thr *t = arg;
	prolly_buf v = PROLLY_BUF_INIT;
	char k[32], want[32], name[48];
	for (int round = 0; round < ROUNDS; round++) {
		prolly_stats s = PROLLY_STATS_INIT;
		prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
		prolly_id prev, cur;
		int rc;

		/* Nothing done since the reset: nothing counted, whatever the others do meanwhile. */
		prolly_thread_stats_reset();
		sched_yield();
		prolly_thread_stats(&s);
		prolly_store_pg_thread_stats(&ps);
		if (!stats_zero(&s) || ps.statements || ps.pool_waits)
			fail(t, "round %d: counters moved with no work of this thread's", round);

		if (own_commit(t, round, &prev, &cur))
			break;
		prolly_thread_stats(&s);
		prolly_store_pg_thread_stats(&ps);
		if (s.store_writes < 1 || s.nodes_written < 1 || (t->pg && ps.statements < 1))
			fail(t, "round %d: own commit counted %" PRIu64 " writes, %" PRIu64 " nodes", round,
			     s.store_writes, s.nodes_written);

		diff_count d = {0, 0, 0, NULL};
		snprintf(name, sizeof(name), "t%d/", t->id);
		d.prefix = name;
		if ((rc = prolly_diff(t->db, &prev, &cur, NULL, count_diff, &d)))
			fail(t, "round %d: diff: %d %s", round, rc, prolly_last_error());
		else if (d.added != NOWN || d.removed != (round ? NOWN / 2 : 0) || d.other)
			fail(t, "round %d: diff +%d -%d ~%d", round, d.added, d.removed, d.other);

		check_own(t, &cur, round, "own scan");
		check_base(t, &cur);
		for (int j = 0; j < NOWN; j += 17) {
			own_key(k, sizeof(k), t->id, round, j);
			own_val(want, sizeof(want), t->id, round, j);
			if ((rc = prolly_get(&v, t->db, &cur, k, strlen(k))) || v.size != strlen(want) ||
			    memcmp(v.ptr, want, v.size))
				fail(t, "round %d: get %s: %d", round, k, rc);
			if (round > 0) {
				own_key(k, sizeof(k), t->id, round - 1, j | 1);
				if ((rc = prolly_get(&v, t->db, &cur, k, strlen(k))) != PROLLY_ENOTFOUND)
					fail(t, "round %d: deleted %s: %d", round, k, rc);
			}
		}

		/* The last error is this thread's own. */
		snprintf(name, sizeof(name), "no-such-branch-%d-%d", t->id, round);
		prolly_id x;
		if ((rc = prolly_branch_head(&x, t->db, name)) != PROLLY_ENOTFOUND)
			fail(t, "round %d: head of %s: %d", round, name, rc);
		sched_yield();
		if (!strstr(prolly_last_error(), name))
			fail(t, "round %d: last error \"%s\" is not about %s", round, prolly_last_error(),
			     name);

		shared_commit(t, round);
		if (round % 2 == 1)
			tree_merge(t, round);
		if (round % 4 == 3)
			branch_merge(t, round);
		if (round % 3 == t->id % 3)
			build_branch(t, round);

		{
			char br[16];
			snprintf(br, sizeof(br), "t%d", t->id);
			for (int a = 0; a < ATTEMPTS; a++) {
				rc = prolly_push(NULL, t->db, t->remote, "r", br, 0);
				if (rc != PROLLY_ECONFLICT)
					break;
				t->retries++;
			}
			if (rc)
				fail(t, "round %d: push: %d %s", round, rc, prolly_last_error());
		}
		if (t->id == 0 && round % 2 == 0) {
			prolly_gc_result g = PROLLY_GC_RESULT_INIT;
			if ((rc = prolly_gc(t->db, &g)))
				fail(t, "round %d: gc: %d %s", round, rc, prolly_last_error());
		}
		if (t->id == 1 && round % 3 == 0)
			prolly_db_cache_clear(t->db);
		if (t->id == 2) {
			prolly_stats all = PROLLY_STATS_INIT;
			if (prolly_db_stats(t->db, &all) || all.store_writes == 0)
				fail(t, "round %d: db stats", round);
		}
	}
	prolly_buf_dispose(&v);
	return NULL;
}

/* Threads 0 and 2 use db, 1 and 3 db2 (another handle on the same store, or db). */
static void run_threads(prolly_db *db, prolly_db *db2, int pg)
{
	prolly_edit *e = calloc(NBASE, sizeof(*e));
	char(*kb)[24] = calloc(NBASE, sizeof(*kb));
	static char val[BASE_VAL];
	prolly_id main_head, shared_head;
	prolly_store *rst = NULL;
	prolly_db *remote = NULL;
	prolly_commit *c = NULL;
	thr t[NT];
	pthread_t th[NT];
	int started = 0;
	PT_REQUIRE(e && kb);
	memset(val, 'v', sizeof(val));
	for (int i = 0; i < NBASE; i++) {
		snprintf(kb[i], sizeof(kb[i]), "base/%05d", i);
		e[i] = (prolly_edit){PROLLY_PUT, sl(kb[i]), {val, sizeof(val)}};
	}
	PT_CHECK_RC(prolly_store_mem_new(&rst), 0);
	PT_CHECK_RC(prolly_db_new(&remote, rst, NULL), 0);
	PT_CHECK_RC(prolly_remote_add(db, "r", "mem:"), 0); /* the threads push to it */
	PT_CHECK_RC(prolly_commit_edits(&main_head, db, "main", e, NBASE, "base"), 0);
	PT_CHECK_RC(prolly_branch_create(db, "shared", &main_head), 0);
	PT_CHECK_RC(prolly_commit_read(&c, db, &main_head), 0);
	if (pt_failed_now)
		goto cleanup;
	for (int i = 0; i < NT; i++) {
		char br[16];
		snprintf(br, sizeof(br), "t%d", i);
		PT_CHECK_RC(prolly_branch_create(db, br, &main_head), 0);
		t[i] = (thr){i % 2 ? db2 : db, remote, i, c->tree, 0, "", 0, pg};
	}
	for (; started < NT && !pt_failed_now; started++)
		PT_CHECK(pthread_create(&th[started], NULL, thr_main, &t[started]) == 0);
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(t[i].errors == 0, "%d errors, the first: %s", t[i].errors, t[i].first);
	}
	if (pt_failed_now)
		goto cleanup;

	/* After a last gc, every branch as its thread left it, and the shared one with all. */
	prolly_gc_result g = PROLLY_GC_RESULT_INIT;
	uint64_t retries = 0;
	PT_CHECK_RC(prolly_gc(db, &g), 0);
	for (int i = 0; i < NT; i++) {
		prolly_commit *h = NULL;
		char br[16];
		snprintf(br, sizeof(br), "t%d", i);
		PT_CHECK_RC(prolly_branch_commit(&h, db, br), 0);
		if (h) {
			prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
			check_own(&t[i], &h->tree, ROUNDS - 1, "final scan");
			check_base(&t[i], &h->tree);
			PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &h->tree, 1), 0);
			if (i == 0)
				printf("# t0: %" PRIu64 " records, %" PRIu64 " leaves\n", ts.records, ts.leaves);
			PT_CHECKF(t[i].errors == 0, "%s", t[i].first);
		}
		prolly_id rh;
		PT_CHECK_RC(prolly_branch_head(&rh, remote, br), 0);
		PT_CHECKF(h && prolly_id_equal(&rh, &h->id), "%s: the remote's head is not the last push",
		          br);
		prolly_commit_free(h);
		retries += t[i].retries;
	}
	PT_CHECK_RC(prolly_branch_head(&shared_head, db, "shared"), 0);
	prolly_commit_free(c);
	c = NULL;
	PT_CHECK_RC(prolly_commit_read(&c, db, &shared_head), 0);
	if (c) {
		long n = count_prefix(&t[0], &c->tree, "s/");
		PT_CHECKF(n == NT * ROUNDS * NSHARED, "shared branch: %ld records, want %d", n,
		          NT * ROUNDS * NSHARED);
	}
	printf("# %d threads x %d rounds; %" PRIu64 " commits made again after a gc or a lost race\n",
	       NT, ROUNDS, retries);
cleanup:
	prolly_close(remote);
	prolly_commit_free(c);
	free(kb);
	free(e);
}

/* A small cache (evictions under load) and small flushes (builds flush from threads). */
static prolly_db *open_db(prolly_store *st)
{
	prolly_options o = PROLLY_OPTIONS_INIT;
	prolly_db *db = NULL;
	o.cache_bytes = (size_t)1 << 20;
	o.flush_bytes = FLUSH;
	if (st && prolly_db_new(&db, st, &o))
		fprintf(stderr, "  prolly_db_new: %s\n", prolly_last_error());
	return db;
}

PT_TEST(threads_mem)
{
	prolly_store *st = NULL;
	prolly_db *db;
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_REQUIRE((db = open_db(st)) != NULL);
	run_threads(db, db, 0);
	prolly_close(db);
}

/* Two handles on one directory (one environment), whose 1 MiB map grows under the writers. */
PT_TEST(threads_lmdb)
{
	char *dir = tm_tmpdir("threads");
	prolly_store *st = NULL, *st2 = NULL;
	prolly_db *db = NULL, *db2 = NULL;
	PT_REQUIRE(dir != NULL);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, (size_t)1 << 20), 0);
	PT_CHECK_RC(prolly_store_lmdb_open(&st2, dir, 0), 0);
	if ((db = open_db(st)) && (db2 = open_db(st2)))
		run_threads(db, db2, 0);
	PT_CHECK(db && db2);
	prolly_close(db);
	prolly_close(db2);
	tm_rmtree(dir);
	free(dir);
}

/* Two handles, each with its own connection pool, on one schema; the second pool has two
 * connections (gc's minimum) for two threads, their flushes and read-ahead: they wait for one. */
PT_TEST(threads_pg)
{
	const char *schema = pgt_new_schema();
	prolly_db *db = open_db(pgt_open(schema, 0, 0, 0, 0)), *db2 = NULL;
	prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
	if (db && (db2 = open_db(pgt_open(schema, 0, 0, 2, 0))))
		run_threads(db, db2, 1);
	PT_CHECK(db && db2);
	if (db2 && prolly_store_pg_stats(&ps, prolly_db_store(db2)) == 0)
		printf("# the pool of two: %" PRIu64 " waits\n", ps.pool_waits);
	prolly_close(db);
	prolly_close(db2);
}

PGT_MAIN(NULL, NULL)
