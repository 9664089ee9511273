/*
 * test_commit_race.c - commits that race, on the memory store and on LMDB: 8 threads committing
 * to one branch (losers get PROLLY_ECONFLICT with the winner's head; retries end with every edit
 * present and linear history), through a slow store; the engine's writer thread and the
 * no-threads flag; a txn's queued refs and raw objects after a failed commit.
 *
 * Re-run one test: build/tests/test_commit_race NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- concurrent commits -------------------------------------------------------------------- */

#define CT_THREADS 8
#define CT_COMMITS 12

typedef struct ct_arg {
	prolly_db *db;
	int tid;
	int conflicts;
	int bad;
} ct_arg;

static void *ct_run(void *p)
{
	ct_arg *a = p;
	for (int i = 0; i < CT_COMMITS; i++) {
		char k[32], v[32];
		snprintf(k, sizeof(k), "t%d-%03d", a->tid, i);
		snprintf(v, sizeof(v), "value %d %d", a->tid, i);
		for (;;) {
			prolly_id before, out = tm_fake_id(0);
			int rc = prolly_branch_head(&before, a->db, "main");
			if (rc) {
				a->bad++;
				break;
			}
			rc = tm_commit_put(&out, a->db, "main", k, v, k);
			if (rc == 0)
				break;
			if (rc != PROLLY_ECONFLICT) {
				fprintf(stderr, "  thread %d: %d %s\n", a->tid, rc, prolly_last_error());
				a->bad++;
				break;
			}
			a->conflicts++;
			/* The loser is told the head that won: a real commit, not the zero id. */
			prolly_id zero = tm_fake_id(0);
			prolly_commit *w = NULL;
			if (prolly_id_equal(&out, &zero) || prolly_commit_read(&w, a->db, &out) != 0)
				a->bad++;
			prolly_commit_free(w);
		}
	}
	return NULL;
}

/* A store wrapper whose writes wait a little before reaching the store, widening the race
 * window between reading a head and moving it. (Not the tap: its counters are not atomic.) */
static int slow_write(prolly_store *st, prolly_store_write *w)
{
	struct timespec ts = {0, 100 * 1000};
	if (w->n_refs)
		nanosleep(&ts, NULL);
	return tp_write(st, w);
}

static int open_slow(prolly_db **out, int lmdb, char **dir)
{
	prolly_store *inner = NULL;
	tp_store *s;
	int rc;
	*dir = NULL;
	if (lmdb) {
		if (!(*dir = tm_tmpdir("commit")))
			return PROLLY_ESTORE;
		rc = prolly_store_lmdb_open(&inner, *dir, 0);
	} else {
		rc = prolly_store_mem_new(&inner);
	}
	if (rc)
		return rc;
	if (!(s = tp_new(sizeof(*s), inner)))
		return PROLLY_ENOMEM;
	s->base.kind = "slow";
	s->base.write = slow_write;
	return prolly_db_new(out, &s->base, NULL);
}

/* A store wrapper that counts the store calls made from a thread other than the one that
 * opened it. */
typedef struct thread_store {
	tp_store tp; /* must be first */
	pthread_t owner;
	int foreign; /* calls seen from another thread */
	pthread_mutex_t lock;
} thread_store;

static void note_thread(tp_store *w, const char *what)
{
	thread_store *s = (thread_store *)w;
	(void)what;
	pthread_mutex_lock(&s->lock);
	if (!pthread_equal(pthread_self(), s->owner))
		s->foreign++;
	pthread_mutex_unlock(&s->lock);
}

static void thr_close(prolly_store *st)
{
	thread_store *s = (thread_store *)st;
	pthread_mutex_destroy(&s->lock);
	tp_close(st);
}

/* Builds a tree big enough for several builder flushes and a multi-batch cursor, commits it and
 * reads it back; returns how many store calls came from a thread of the library's own. */
static int count_foreign_calls(unsigned flags)
{
	thread_store *s = NULL;
	prolly_store *inner = NULL;
	prolly_db *db = NULL;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_cursor *cur = NULL;
	prolly_options opts;
	prolly_id root;
	int foreign = -1, n = 0;
	if (prolly_store_mem_new(&inner) || !(s = tp_new(sizeof(*s), inner)))
		return -1;
	s->tp.base.kind = "thread-check";
	s->tp.base.close = thr_close;
	s->tp.on_call = note_thread;
	s->owner = pthread_self();
	pthread_mutex_init(&s->lock, NULL);
	prolly_options_init(&opts, PROLLY_OPTIONS_VERSION);
	opts.flags = flags;
	opts.flush_bytes = 16 << 10;
	opts.cache_bytes = 0; /* every read reaches the store */
	if (prolly_db_new(&db, &s->tp.base, &opts))
		return -1;
	if (prolly_txn_begin(&txn, db) || prolly_builder_new(&b, txn))
		goto cleanup;
	for (int i = 0; i < 20000; i++) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%08d", i);
		snprintf(v, sizeof(v), "value of record %d", i);
		if (prolly_builder_add(b, k, strlen(k), v, strlen(v)))
			goto cleanup;
	}
	if (prolly_builder_finish(b, &root))
		goto cleanup;
	if (prolly_txn_commit(txn, NULL, 0))
		goto cleanup;
	if (prolly_cursor_open(&cur, db, &root, NULL))
		goto cleanup;
	while (prolly_cursor_next(cur, NULL, NULL) == 0)
		n++;
	if (n == 20000)
		foreign = s->foreign;
cleanup:
	prolly_cursor_free(cur);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	prolly_close(db);
	return foreign;
}

/* PROLLY_DB_NO_THREADS: every store call comes from the caller's thread (the builder's flushes
 * run inline, the cursor reads nothing ahead), and the results are the same. Without the flag the
 * same work does use the library's threads, which shows the check can see them. */
/* A txn's queue: a ref moved twice is refused at once, hundreds of refs and raw objects are
 * queued and found, and the reflog entries of a commit that fails are dropped from the txn's
 * raw objects (its own commit stays, found by id) however often it is committed again. */
PT_TEST(txn_queue_and_raw_objects_after_a_failed_commit)
{
	tm_db t;
	prolly_id c1, c2, c, tree;
	const void *bytes;
	size_t size;
	PT_CHECK_RC(tm_db_open(&t, 0, "commit", 1, 0, 0), 0);
	PT_CHECK_RC(tm_commit_put(&c1, t.db, "main", "k", "1", "one"), 0);
	PT_CHECK_RC(tm_commit_put(&c2, t.db, "main", "k", "2", "two"), 0);
	prolly_commit *hc = NULL;
	PT_CHECK_RC(prolly_commit_read(&hc, t.db, &c2), 0);
	PT_REQUIRE(hc);
	tree = hc->tree;
	prolly_commit_free(hc);

	prolly_txn *txn = NULL;
	PT_CHECK_RC(prolly_txn_begin(&txn, t.db), 0);
	PT_CHECK_RC(prolly_commit_create(&c, txn, &tree, &c2, 1, 0, "three"), 0);
	for (unsigned i = 0; i < 300; i++) { /* raw objects: found by id among hundreds */
		unsigned char obj[16];
		prolly_id id;
		memset(obj, 0, sizeof(obj));
		memcpy(obj, &i, sizeof(i));
		prolly__hash(&id, obj, sizeof(obj));
		PT_CHECK_RC(prolly__txn_add_raw(txn, &id, obj, sizeof(obj)), 0);
		PT_CHECK_RC(prolly__txn_find_raw(txn, &id, &bytes, &size), 0);
		PT_CHECK(size == sizeof(obj) && memcmp(bytes, obj, sizeof(obj)) == 0);
	}
	size_t raw_before = txn->raw_count;
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &c1, &c), 0); /* a stale expectation */
	PT_CHECK_RC(prolly_txn_move_branch(txn, "main", &c2, &c), PROLLY_EINVAL); /* moved twice */
	for (unsigned i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof(name), "side/b%03u", i);
		PT_CHECK_RC(prolly_txn_move_branch(txn, name, NULL, &c), 0);
	}
	PT_CHECK_RC(prolly_txn_move_branch(txn, "side/b150", NULL, &c), PROLLY_EINVAL);
	for (int round = 0; round < 2; round++) { /* each commit makes its reflog entries again */
		PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ECONFLICT);
		PT_CHECK(txn->raw_count == raw_before);
		PT_CHECK_RC(prolly__txn_find_raw(txn, &c, &bytes, &size), 0);
	}
	prolly_txn_free(txn);
	prolly_id h;
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	PT_CHECK(prolly_id_equal(&h, &c2));
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "side/b000"), PROLLY_ENOTFOUND);
	tm_db_close(&t);
}

PT_TEST(no_threads_flag)
{
	PT_CHECK(count_foreign_calls(PROLLY_DB_NO_THREADS) == 0);
	PT_CHECK(count_foreign_calls(0) > 0);
}

TM_BOTH_STORES(commit_edits_concurrent)
{
	tm_db t;
	pthread_t th[CT_THREADS];
	ct_arg args[CT_THREADS];
	prolly_id root, h;
	memset(&t, 0, sizeof(t));
	PT_REQUIRE(open_slow(&t.db, lmdb, &t.dir) == 0);
	PT_REQUIRE(tm_commit_put(&root, t.db, "main", "init", "x", "init") == 0);
	for (int i = 0; i < CT_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].db = t.db;
		args[i].tid = i;
		PT_REQUIRE(pthread_create(&th[i], NULL, ct_run, &args[i]) == 0);
	}
	int conflicts = 0;
	for (int i = 0; i < CT_THREADS; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(args[i].bad == 0, "thread %d had %d bad results", i, args[i].bad);
		conflicts += args[i].conflicts;
	}
	/* Every thread's edits are present; history is one line of 1 + threads*commits commits. */
	PT_CHECK_RC(prolly_branch_head(&h, t.db, "main"), 0);
	prolly_commit *hc = NULL;
	PT_REQUIRE(prolly_commit_read(&hc, t.db, &h) == 0);
	uint64_t cnt = 0;
	PT_CHECK_RC(prolly_count(&cnt, t.db, &hc->tree), 0);
	PT_CHECK(cnt == 1 + CT_THREADS * CT_COMMITS);
	for (int tid = 0; tid < CT_THREADS; tid++) {
		for (int i = 0; i < CT_COMMITS; i++) {
			char k[32], v[32], buf[64];
			snprintf(k, sizeof(k), "t%d-%03d", tid, i);
			snprintf(v, sizeof(v), "value %d %d", tid, i);
			PT_CHECK_RC(tm_value_at(buf, sizeof(buf), t.db, &h, k), 0);
			PT_CHECK(strcmp(buf, v) == 0);
		}
	}
	prolly_commit_free(hc);
	prolly_id cur = h;
	int len = 0;
	for (;;) {
		prolly_commit *c = NULL;
		PT_REQUIRE(prolly_commit_read(&c, t.db, &cur) == 0);
		len++;
		int np = (int)c->n_parents;
		PT_CHECK(np <= 1);
		if (np)
			cur = c->parents[0];
		prolly_commit_free(c);
		if (!np)
			break;
	}
	PT_CHECK(len == 1 + CT_THREADS * CT_COMMITS);
	fprintf(stderr, "  # %d conflicts retried\n", conflicts);
	PT_CHECK(conflicts > 0); /* the race was really run */
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
