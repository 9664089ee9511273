/*
 * test_flush.c - nodes written before the commit (a builder's flushes, T4 of src/txn.c; the
 * halves of a large commit on a remote store, T5) keep K6 of include/prolly/store.h: the store
 * never holds a tree node without its whole subtree, whatever order the concurrent writes land
 * in and whichever of them fails.
 *
 * The store under test stalls the first write that carries nodes until the second has returned,
 * then fails it: the second lands, the first never does. Before internal nodes were held back
 * (T8), the second could carry a parent whose children were in the first, and the store kept a
 * node without its subtree (a later sync would skip the missing children after asking about
 * the parent alone).
 *
 * Re-run one test: build/tests/test_flush NAME.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/passthru.h"
#include "ptest.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct stall {
	tp_store tp;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int node_writes; /* writes of nodes without refs that began */
	int second_done; /* the second of them returned */
	int timed_out;   /* the first gave up waiting (the second never came) */
} stall;

static int stall_write(prolly_store *st, prolly_store_write *w)
{
	stall *s = (stall *)(void *)st;
	if (!w->n_nodes || w->n_refs)
		return tp_write(st, w);
	pthread_mutex_lock(&s->lock);
	int me = ++s->node_writes;
	pthread_mutex_unlock(&s->lock);
	if (me == 1) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10; /* a bound, so that a hold-back that waits for this write fails */
		pthread_mutex_lock(&s->lock);
		while (!s->second_done && !s->timed_out)
			if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
				s->timed_out = 1;
		pthread_mutex_unlock(&s->lock);
		return prolly_set_error(PROLLY_ESTORE, "injected failure of the first node write");
	}
	int rc = tp_write(st, w);
	if (me == 2) {
		pthread_mutex_lock(&s->lock);
		s->second_done = 1;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

/* A handle on a stalling memory store (flagged remote if asked); flush_bytes for its builders. */
static prolly_db *open_stalling(stall **out, int remote, size_t flush_bytes)
{
	prolly_store *mem = NULL;
	prolly_db *db = NULL;
	if (prolly_store_mem_new(&mem))
		return NULL;
	stall *s = tp_new(sizeof(stall), mem);
	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->tp.base.write = stall_write;
	if (remote)
		s->tp.base.flags |= PROLLY_STORE_REMOTE;
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.flush_bytes = flush_bytes;
	if (prolly_db_new(&db, &s->tp.base, &o)) {
		tp_close(&s->tp.base);
		return NULL;
	}
	*out = s;
	return db;
}

/* Builds n records into txn (*root); the first failure. */
static int build_tree(prolly_txn *txn, unsigned n, prolly_id *root)
{
	prolly_builder *b = NULL;
	char k[32], v[64];
	int rc;
	if ((rc = prolly_builder_new(&b, txn)))
		return rc;
	for (unsigned i = 0; i < n && !rc; i++) {
		int kl = snprintf(k, sizeof(k), "key%09u", i);
		int vl = snprintf(v, sizeof(v), "value of record %u, some bytes to fill it", i * 7919u);
		rc = prolly_builder_add(b, k, (size_t)kl, v, (size_t)vl);
	}
	if (!rc)
		rc = prolly_builder_finish(b, root);
	prolly_builder_free(b);
	return rc;
}

/* Commits root as refs/test/tree in txn. */
static int commit_tree(prolly_txn *txn, const prolly_id *root)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/test/tree";
	u.value = *root;
	int rc = prolly_txn_set_ref(txn, &u);
	return rc ? rc : prolly_txn_commit(txn, NULL, 0);
}

/* Builds n records into a txn of db and commits their tree (*out_root when not NULL); the
 * first failure. */
static int build_and_commit(prolly_db *db, unsigned n, prolly_id *out_root)
{
	prolly_txn *txn = NULL;
	prolly_id root;
	int rc = prolly_txn_begin(&txn, db);
	if (!rc && !(rc = build_tree(txn, n, &root)) && !(rc = commit_tree(txn, &root)) && out_root)
		*out_root = root;
	prolly_txn_free(txn);
	return rc;
}

/* Is refs/test/tree in db's store? */
static int has_tree_ref(prolly_db *db)
{
	prolly_id v;
	return db->vt.get_ref(db->store, "refs/test/tree", &v, NULL) == 0;
}

/* T4/T8: builder flushes of several sizes, the first stalled and failed while the second lands:
 * the build fails and the store still holds no node without its subtree. The flush sizes put
 * the first level-1 node (some 50-60 leaves of about 4 KiB) in the second flush, with children
 * in the first. */
PT_TEST(builder_flush_failure_keeps_k6)
{
	static const size_t kib[] = {96, 128, 160, 192, 256};
	for (size_t i = 0; i < sizeof(kib) / sizeof(kib[0]); i++) {
		stall *s = NULL;
		prolly_db *db = open_stalling(&s, 0, kib[i] << 10);
		PT_REQUIRE(db);
		int rc = build_and_commit(db, 40000, NULL);
		PT_CHECKF(rc == PROLLY_ESTORE, "%zu KiB: %d (%s)", kib[i], rc, prolly_last_error());
		PT_CHECKF(!s->timed_out, "%zu KiB: the second write never came", kib[i]);
		PT_CHECKF(s->node_writes >= 2, "%zu KiB: %d node writes", kib[i], s->node_writes);
		PT_CHECKF(k6_holds_ex(db, 1) == 0, "%zu KiB: %s", kib[i], prolly_last_error());
		prolly_close(db);
	}
}

/* T5/T8/T9: a large commit on a remote store writes its nodes in two halves at once; the first
 * stalled and failed while the second lands: the commit fails, K6 holds, and committing the
 * same txn again is refused (the failed half's nodes are gone from it) instead of publishing a
 * tree the store lacks; so is an edit in it. */
PT_TEST(commit_halves_failure_keeps_k6)
{
	stall *s = NULL;
	prolly_db *db = open_stalling(&s, 1, (size_t)1 << 30); /* no builder flush */
	prolly_txn *txn = NULL;
	prolly_id root;
	PT_REQUIRE(db);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(build_tree(txn, 200000, &root), 0); /* some 3,000 leaves: above the threshold */
	int rc = commit_tree(txn, &root);
	PT_CHECKF(rc == PROLLY_ESTORE, "%d (%s)", rc, prolly_last_error());
	PT_CHECK(!s->timed_out);
	PT_CHECKF(s->node_writes == 2, "%d node writes", s->node_writes);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), PROLLY_ESTORE);
	/* T10: nor does it take another edit, whose root would build on the nodes it lost. */
	const prolly_edit e = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	prolly_id edited = root;
	PT_CHECK_RC(prolly_edit_tree(&edited, txn, &root, &e, 1), PROLLY_ESTORE);
	PT_CHECK(prolly_id_equal(&edited, &root) && strstr(prolly_last_error(), "cannot commit"));
	PT_CHECK(!has_tree_ref(db));
	prolly_txn_free(txn);
	PT_CHECKF(k6_holds_ex(db, 1) == 0, "%s", prolly_last_error());
	prolly_close(db);
}

/* Without failures the held-back nodes all land: every flush size gives the same tree as one
 * write, complete (K6) and readable. */
PT_TEST(held_back_nodes_all_land)
{
	static const size_t kib[] = {16, 96, 160, (size_t)1 << 20};
	prolly_id first;
	for (size_t i = 0; i < sizeof(kib) / sizeof(kib[0]); i++) {
		prolly_store *mem = NULL;
		prolly_db *db = NULL;
		prolly_options o = PROLLY_OPTIONS_INIT;
		o.flush_bytes = kib[i] << 10;
		PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && prolly_db_new(&db, mem, &o) == 0);
		prolly_id root;
		PT_CHECK_RC(build_and_commit(db, 40000, &root), 0);
		PT_CHECKF(k6_holds(db) == 0, "%zu KiB: %s", kib[i], prolly_last_error());
		uint64_t count = 0;
		PT_CHECK_RC(prolly_count(&count, db, &root), 0);
		PT_CHECK(count == 40000);
		if (i == 0)
			first = root;
		PT_CHECKF(prolly_id_equal(&first, &root), "%zu KiB: another root", kib[i]);
		prolly_close(db);
	}
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
