/*
 * client_group.c - group commit for the client contender's transactions (tables_int.h).
 *
 * Every session of a client bt_db shares one prolly handle and commits to one branch. Committing
 * each transaction by its own compare-and-swap makes the sessions race for the branch head: of
 * the commits in flight one wins and the others write again. Here they queue instead. One
 * committing session at a time (the leader) takes every transaction queued so far and, in one
 * prolly txn: reads the head, merges each transaction into the running head in queue order
 * (prolly_rebase_edits from the head its transaction began on: snapshot isolation, include/
 * prolly.h), gives each that did not conflict its own commit (each the parent of the next), and
 * moves the branch once, from the head it read to the last commit, in one store write. The
 * others wait for its result; transactions that queued meanwhile form the next group. So a
 * commit costs one store write per group instead of one per attempt, and only a write-write
 * conflict (a key also written since the transaction began, within the group included) sends a
 * transaction back (BT_CONFLICT).
 *
 * Invariants:
 *   G1  at most one leader per bt_db (g->busy), so no two groups of this process race; a
 *       compare-and-swap lost to another process retries the whole group (BT_MERGE_ATTEMPTS).
 *   G2  a request's edits, base and err live on its session's thread, which waits until the
 *       leader sets done under g->mu; the leader touches no request after that.
 *   G3  commits of a group are chained in queue order, each later in time than its parent.
 *   G5  each waiting session sleeps on its own condition variable: the leader wakes the
 *       sessions of its group when it is done, and the first one queued meanwhile, which leads
 *       the next group (a request is only ever taken by the session that queued it first, as
 *       the head of the queue); no other session wakes.
 *   G4  the head memo: g->chain holds the commits of this process that the branch has gone
 *       through since the leader last read the head (that head first, in order, at most
 *       CHAIN_MAX), all on one line of history ending at g->chain's newest, which the branch
 *       was left at by the last group (g->have_head). Touched by the leader only (G1). A group
 *       whose every transaction began on a commit of the chain starts from its newest without
 *       reading the head: each transaction's base is then an ancestor of it, so the merge finds
 *       the same write-write conflicts the head would show, and the compare-and-swap that moves
 *       the branch expects it, so if another writer moved the branch meanwhile nothing is written
 *       (the compare-and-swap comes before the node insert: docs/postgres.md) and the next try
 *       reads the head. A transaction that began elsewhere (another writer's commit, or one
 *       older than the chain) makes the group read the head. Any failure empties the chain.
 */
#include "tables_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAIN_MAX 256 /* G4: commits remembered; a transaction that began on an older one reads */

typedef struct req {
	const prolly_id *base, *base_tree; /* the head the transaction began on, and its tree */
	const prolly_edit *edits;
	size_t n;
	int rc;      /* 0, BT_CONFLICT, -1 (err) */
	int rebased; /* merged into a head other than base */
	int done;
	pthread_cond_t cv; /* G5: signalled when done, or when it is first in the queue and no
	                    * group is being committed */
	char err[256];
	struct req *next;
} req;

struct bt_group {
	pthread_mutex_t mu;
	req *first, *last; /* queued, not yet taken by a leader */
	int busy;          /* a leader is committing a group */
	int have_head;     /* G4: chain[newest] is where this process left the branch */
	size_t n_chain, newest;
	prolly_id chain[CHAIN_MAX];
	prolly_id chain_tree; /* the tree of chain[newest] */
	int64_t chain_time;   /* and its time */
};

bt_group *bt__group_new(void)
{
	bt_group *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	pthread_mutex_init(&g->mu, NULL);
	return g;
}

void bt__group_free(bt_group *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->mu);
	free(g);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void fail(req *r, const char *what)
{
	r->rc = -1;
	snprintf(r->err, sizeof(r->err), "tables: %s: %s", what, prolly_last_error());
}

static void chain_add(bt_group *g, const prolly_id *id)
{
	g->newest = g->n_chain ? (g->newest + 1) % CHAIN_MAX : 0;
	g->chain[g->newest] = *id;
	if (g->n_chain < CHAIN_MAX)
		g->n_chain++;
}

/* G4: whether every transaction of batch began on a commit of the chain. */
static int chain_holds_bases(const bt_group *g, const req *batch)
{
	if (!g->have_head)
		return 0;
	for (const req *r = batch; r; r = r->next) {
		size_t i = 0;
		while (i < g->n_chain && !prolly_id_equal(&g->chain[i], r->base))
			i++;
		if (i == g->n_chain)
			return 0;
	}
	return 1;
}

/* One try at committing the group: 0 (each request's rc says what became of it), or
 * PROLLY_ECONFLICT when another writer moved the branch (nothing written). */
static int group_try(bt_db *db, req *batch)
{
	bt_group *g = db->group;
	prolly_txn *txn = NULL;
	prolly_commit *hc = NULL;
	prolly_id from, cur, cur_tree, root, cid;
	int64_t t;
	int rc, landed = 0, memo = chain_holds_bases(g, batch);

	g->have_head = 0;
	if ((rc = prolly_txn_begin(&txn, db->pdb)) ||
	    (!memo && (rc = prolly_branch_commit(&hc, db->pdb, db->branch)))) {
		g->n_chain = 0;
		for (req *r = batch; r; r = r->next)
			fail(r, "group commit: reading the head");
		goto cleanup;
	}
	if (hc) {
		g->n_chain = 0;
		g->chain_tree = hc->tree;
		g->chain_time = hc->time_us;
		chain_add(g, &hc->id);
	}
	from = cur = g->chain[g->newest];
	cur_tree = g->chain_tree;
	t = g->chain_time;
	for (req *r = batch; r; r = r->next) {
		r->rebased = 0;
		rc = prolly_rebase_edits(&root, txn, r->base_tree, &cur_tree, r->edits, r->n);
		if (rc == PROLLY_EMERGE) {
			r->rc = BT_CONFLICT;
			continue;
		}
		if (rc) {
			fail(r, "commit");
			continue;
		}
		r->rc = 0;
		r->rebased = !prolly_id_equal(r->base, &cur);
		if (prolly_id_equal(&root, &cur_tree))
			continue; /* writes nothing */
		int64_t now = now_us();
		t = now > t ? now : t + 1; /* G3 */
		if ((rc = prolly_commit_create(&cid, txn, &root, &cur, 1, t, BT_COMMIT_MESSAGE))) {
			fail(r, "commit");
			continue;
		}
		cur = cid;
		cur_tree = root;
		chain_add(g, &cid); /* G4: kept only if the branch moves (else the chain is emptied) */
		landed++;
	}
	rc = 0;
	if (landed && (rc = prolly_txn_move_branch(txn, db->branch, &from, &cur)) == 0)
		rc = prolly_txn_commit(txn, NULL, 0);
	if (rc == 0) {
		g->have_head = 1; /* G4: the branch went through the group's commits, in order */
		g->chain_tree = cur_tree;
		g->chain_time = t;
	} else {
		g->n_chain = 0;
	}
	if (rc && rc != PROLLY_ECONFLICT)
		for (req *r = batch; r; r = r->next)
			if (r->rc == 0)
				fail(r, "commit");
cleanup:
	prolly_commit_free(hc);
	prolly_txn_free(txn);
	return rc == PROLLY_ECONFLICT ? rc : 0;
}

static void group_run(bt_db *db, req *batch)
{
	for (int i = 0; i < BT_MERGE_ATTEMPTS; i++)
		if (group_try(db, batch) != PROLLY_ECONFLICT)
			return;
	for (req *r = batch; r; r = r->next)
		r->rc = BT_CONFLICT; /* G1: every try lost to another writer */
}

int bt__group_commit(bt_session *s, const prolly_edit *edits, size_t n)
{
	bt_group *g = s->db->group;
	req me;
	memset(&me, 0, sizeof(me));
	me.base = &s->head;
	me.base_tree = &s->head_tree;
	me.edits = edits;
	me.n = n;
	pthread_cond_init(&me.cv, NULL);
	pthread_mutex_lock(&g->mu);
	if (g->last)
		g->last->next = &me;
	else
		g->first = &me;
	g->last = &me;
	while (!me.done) {
		if (g->busy || g->first != &me) {
			pthread_cond_wait(&me.cv, &g->mu);
			continue;
		}
		req *batch = g->first; /* G1: lead the group queued so far (me first) */
		g->first = g->last = NULL;
		g->busy = 1;
		pthread_mutex_unlock(&g->mu);
		group_run(s->db, batch);
		pthread_mutex_lock(&g->mu);
		for (req *r = batch, *next; r; r = next) {
			next = r->next; /* G2 */
			r->done = 1;
			if (r != &me)
				pthread_cond_signal(&r->cv);
		}
		g->busy = 0;
		if (g->first) /* G5: the next leader */
			pthread_cond_signal(&g->first->cv);
	}
	pthread_mutex_unlock(&g->mu);
	pthread_cond_destroy(&me.cv);
	s->rebased += (uint64_t)me.rebased;
	if (me.rc == -1)
		return bt__fail(s, "%s", me.err);
	return me.rc;
}
