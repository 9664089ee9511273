/*
 * client_group.c - group commit for the client contender's transactions (tables_int.h).
 *
 * Every session of a client bt_db shares one prolly handle and commits to one branch. Committing
 * each transaction by its own compare-and-swap makes the sessions race for the branch head: of
 * the commits in flight one wins and the others write again. Here they queue instead. One
 * committing session at a time (the leader) takes every transaction queued so far and, in one
 * prolly txn: merges each transaction into the running head in queue order (prolly_rebase_edits
 * from the head its transaction began on: snapshot isolation, include/prolly.h), gives each that
 * did not conflict its own commit (each the parent of the next), and moves the branch once, from
 * the head it started from to the last commit, in one store write. The others wait for its
 * result; transactions that queued meanwhile form the next group, which the next leader builds
 * while this group's write is in flight. So a commit costs one store write per group instead of
 * one per attempt, and only a write-write conflict (a key also written since the transaction
 * began, within the group included) sends a transaction back (BT_CONFLICT).
 *
 * Invariants:
 *   G1  at most one leader builds a group at a time (g->building), so no two groups of this
 *       process race; a compare-and-swap lost to another process builds the whole group again
 *       (BT_MERGE_ATTEMPTS tries).
 *   G2  a request's edits, base and err live on its session's thread, which waits until the
 *       leader sets done under g->mu; the leader touches no request after that.
 *   G3  commits of a group are chained in queue order, each later in time than its parent.
 *   G4  the head memo: g->chain holds the commits the branch has gone or is going through, in
 *       order, since the head was last read (that head first; at most CHAIN_MAX), all on one
 *       line of history whose newest is where the groups built so far leave the branch
 *       (g->have_head). A group whose every transaction began on a commit of the chain starts
 *       from its newest without reading the head: each transaction's base is then an ancestor
 *       of it, so the merge finds the write-write conflicts the head would show, and the
 *       compare-and-swap that moves the branch expects it, so if another writer moved the branch
 *       nothing is written (the compare-and-swap comes before the node insert:
 *       docs/postgres.md) and the group is built again from the head, read. A transaction that
 *       began elsewhere (another writer's commit, or one older than the chain) makes the group
 *       read the head, after every group built before it was written.
 *   P1  groups are written in the order they were built (tickets), one write at a time; a
 *       group is built while the group before it is written, on that group's commits (its
 *       nodes are pinned in the shared handle's cache until its write is done, then stored).
 *   P2  the chain and its generation (g->gen) change under g->mu only: a build reads them at its
 *       start and appends its commits at its end, unless the generation moved meanwhile.
 *   P3  a failed write (a lost compare-and-swap, or an error) empties the chain and bumps the
 *       generation: every group built since was built on commits that did not land, so at its
 *       turn it writes nothing and is built again (what its build reported is dropped).
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
	int made;    /* the group made a commit of it: commit */
	prolly_id commit;
	int done;
	char err[256];
	struct req *next;
} req;

struct bt_group {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	req *first, *last; /* queued, not yet taken by a leader */
	int building;      /* P1: a leader is building a group (merging it into the head) */
	uint64_t next_ticket, next_write; /* P1: groups are written in the order they were built */
	uint64_t gen;      /* P3: bumped when a write fails; a group built before is built again */
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
	pthread_cond_init(&g->cv, NULL);
	return g;
}

void bt__group_free(bt_group *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
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

/* A group being committed: its txn (the merged commits, not yet written) and what moves. */
typedef struct build {
	prolly_txn *txn;
	prolly_id from, cur, tree;
	int64_t t;
	int landed;
	uint64_t gen, ticket;
} build;

/* Merges batch into the head (the chain's newest, or the head read: G4) in a new txn; each
 * request's rc says what became of it. Takes the chain's state under g->mu, and adds the new
 * commits to it at the end (P2: the next group builds on them before they are written). -1 if
 * the head could not be read or no txn began (every request failed). */
static int group_build(bt_db *db, req *batch, build *b)
{
	bt_group *g = db->group;
	prolly_commit *hc = NULL;
	prolly_id root, cid;
	int rc, memo;

	memset(b, 0, sizeof(*b));
	pthread_mutex_lock(&g->mu);
	memo = chain_holds_bases(g, batch);
	while (!memo && g->next_write != g->next_ticket) /* P2: the head read sees every group */
		pthread_cond_wait(&g->cv, &g->mu);
	b->gen = g->gen;
	if (memo) {
		b->from = g->chain[g->newest];
		b->tree = g->chain_tree;
		b->t = g->chain_time;
	}
	pthread_mutex_unlock(&g->mu);
	if ((rc = prolly_txn_begin(&b->txn, db->pdb)) ||
	    (!memo && (rc = prolly_branch_commit(&hc, db->pdb, db->branch)))) {
		for (req *r = batch; r; r = r->next)
			fail(r, "group commit: reading the head");
		prolly_txn_free(b->txn);
		b->txn = NULL;
		return -1;
	}
	if (hc) {
		b->from = hc->id;
		b->tree = hc->tree;
		b->t = hc->time_us;
		prolly_commit_free(hc);
	}
	b->cur = b->from;
	for (req *r = batch; r; r = r->next) {
		r->rebased = r->made = 0;
		r->err[0] = 0;
		rc = prolly_rebase_edits(&root, b->txn, r->base_tree, &b->tree, r->edits, r->n);
		if (rc == PROLLY_EMERGE) {
			r->rc = BT_CONFLICT;
			continue;
		}
		if (rc) {
			fail(r, "commit");
			continue;
		}
		r->rc = 0;
		r->rebased = !prolly_id_equal(r->base, &b->cur);
		if (prolly_id_equal(&root, &b->tree))
			continue; /* writes nothing */
		int64_t now = now_us();
		b->t = now > b->t ? now : b->t + 1; /* G3 */
		if ((rc = prolly_commit_create(&cid, b->txn, &root, &b->cur, 1, b->t,
		                               BT_COMMIT_MESSAGE))) {
			fail(r, "commit");
			continue;
		}
		r->made = 1;
		r->commit = cid;
		b->landed++;
		b->cur = cid;
		b->tree = root;
	}
	pthread_mutex_lock(&g->mu);
	if (b->gen == g->gen) { /* P2: the chain goes on through this group's commits */
		if (!memo) {
			g->n_chain = 0;
			chain_add(g, &b->from);
		}
		for (req *r = batch; r; r = r->next)
			if (r->made)
				chain_add(g, &r->commit);
		g->have_head = 1;
		g->chain_tree = b->tree;
		g->chain_time = b->t;
	}
	pthread_mutex_unlock(&g->mu);
	return 0;
}
/* Writes b when its turn comes (P1): 0 (the requests' rc stand), PROLLY_ECONFLICT (another writer
 * moved the branch: nothing written) or 1 (a group written before it failed, so it was built on
 * commits that did not land: to be built again, P3). Other failures fail the requests that had
 * not failed. Frees b's txn (NULL when its build failed: then it only passes its turn). */
static int group_write(bt_db *db, req *batch, build *b)
{
	bt_group *g = db->group;
	int rc = 0, stale;
	pthread_mutex_lock(&g->mu);
	while (g->next_write != b->ticket)
		pthread_cond_wait(&g->cv, &g->mu);
	stale = b->gen != g->gen;
	pthread_mutex_unlock(&g->mu);
	if (!stale && b->landed &&
	    (rc = prolly_txn_move_branch(b->txn, db->branch, &b->from, &b->cur)) == 0)
		rc = prolly_txn_commit(b->txn, NULL, 0);
	prolly_txn_free(b->txn);
	b->txn = NULL;
	pthread_mutex_lock(&g->mu);
	if (!stale && rc) { /* P3: later groups were built on commits that did not land */
		g->gen++;
		g->n_chain = 0;
		g->have_head = 0;
	}
	g->next_write++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	if (stale)
		return 1;
	if (rc && rc != PROLLY_ECONFLICT)
		for (req *r = batch; r; r = r->next)
			if (r->rc == 0)
				fail(r, "commit");
	return rc == PROLLY_ECONFLICT ? rc : 0;
}

/* Commits batch as its leader (G1): builds it when no other group is being built, then writes
 * it in turn while the next leader builds the next group (P1). Called and returns with g->mu
 * held, and g->building set by the caller; clears it. */
static void group_run(bt_db *db, req *batch)
{
	bt_group *g = db->group;
	build b;
	int tries = 0, rc;
	for (;;) {
		pthread_mutex_unlock(&g->mu);
		rc = group_build(db, batch, &b);
		pthread_mutex_lock(&g->mu);
		b.ticket = g->next_ticket++;
		g->building = 0; /* P1: the next group may be built on this one's commits */
		pthread_cond_broadcast(&g->cv);
		pthread_mutex_unlock(&g->mu);
		(void)rc; /* a failed build failed its requests; its turn to write still passes */
		rc = group_write(db, batch, &b);
		pthread_mutex_lock(&g->mu);
		if (rc == 0)
			return;
		if (++tries >= BT_MERGE_ATTEMPTS) {
			for (req *r = batch; r; r = r->next)
				r->rc = BT_CONFLICT; /* every try lost to another writer */
			return;
		}
		while (g->building) /* build it again: G1 */
			pthread_cond_wait(&g->cv, &g->mu);
		g->building = 1;
	}
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
	pthread_mutex_lock(&g->mu);
	if (g->last)
		g->last->next = &me;
	else
		g->first = &me;
	g->last = &me;
	while (!me.done) {
		if (g->building || !g->first) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		req *batch = g->first; /* G1: lead the group queued so far */
		g->first = g->last = NULL;
		g->building = 1;
		group_run(s->db, batch);
		for (req *r = batch, *next; r; r = next) {
			next = r->next; /* G2 */
			r->done = 1;
		}
		pthread_cond_broadcast(&g->cv);
	}
	pthread_mutex_unlock(&g->mu);
	s->rebased += (uint64_t)me.rebased;
	if (me.rc == -1)
		return bt__fail(s, "%s", me.err);
	return me.rc;
}
