/*
 * merge_base.c - the merge base of two commits (prolly_merge_base): their lowest common
 * ancestor, found by painting the commit graph (commit_graph.c) from both sides at once.
 *
 * What is guaranteed, whatever the commits' times (a parent may be newer than its child: a
 * commit made by prolly_commit_create with a time of the caller's, or by another writer): the
 * answer is a lowest common ancestor (a common ancestor of which no other common ancestor is a
 * descendant), and among several (criss-cross history) the newest by (time, id), so the same
 * whichever argument comes first. Times only order the walks: they decide how much is read,
 * never what is answered (MB1, MB2). With times that agree with history (a commit newer than
 * its parents, BR2 in branch.c, which every commit the library makes for a branch keeps) the
 * paint reads about the commits between the heads and their base; skewed times can make it
 * read more (a side that a slow clock holds back still moves: paint()).
 *
 * Invariants:
 *   W1  a graph node's flags only grow, and a node is expanded again only when they grew, so
 *       every walk terminates after at most (number of flag bits + 1) expansions per commit.
 *   MB1 the paint stops only when no commit waiting is free of STALE; a commit on a path from a
 *       head down to a lowest common ancestor is never STALE (it would be the ancestor of a
 *       common commit, and so would that lowest one), so every lowest common ancestor is found
 *       common and not STALE: a candidate. A candidate that is not lowest is an ancestor of one.
 *   MB2 the second walk (drop_redundant) drops exactly the candidates that are ancestors of
 *       other candidates; it stops where history rules it out, never at a time.
 */
#include "internal.h"

#include <stdlib.h>

enum { F_A = 1, F_B = 2, F_STALE = 4 };

/* a - b for b >= 0, saturating at INT64_MIN. */
static int64_t sat_sub(int64_t a, int64_t b)
{
	return a < INT64_MIN + b ? INT64_MIN : a - b;
}

/* How far back in time the step that reached nd went (0 for a start or a skewed clock). */
static int64_t step_of(const prolly__gnode *nd)
{
	if (nd->ctime == INT64_MIN || nd->ctime <= nd->time)
		return 0;
	if (nd->time < 0 && nd->ctime > INT64_MAX + nd->time)
		return INT64_MAX;
	return nd->ctime - nd->time;
}

/* Adds flags to node j, reached in step `step` from a child of time ctime; queues it (to load or
 * to expand) when they grew. */
static int add_flags(prolly__graph *g, size_t j, unsigned f, int64_t ctime, size_t step,
                     prolly__ilist *load, prolly__ilist *pend)
{
	prolly__gnode *nd = &g->v[j];
	if ((nd->flags | f) == nd->flags)
		return 0;
	if (!nd->flags) {
		nd->ctime = ctime;
		nd->since = step;
	}
	nd->flags |= f;
	if (nd->queued)
		return 0;
	nd->queued = 1;
	return prolly__ilist_push(nd->state == PROLLY__G_NEW ? load : pend, j);
}

/* Loads the nodes in *load with one store call and moves them to *pend, to be expanded. */
static int load_step(prolly__graph *g, prolly__ilist *load, prolly__ilist *pend)
{
	int rc = prolly__graph_load(g, load->v, load->n);
	for (size_t i = 0; !rc && i < load->n; i++)
		rc = prolly__ilist_push(pend, load->v[i]);
	load->n = 0;
	return rc;
}

/*
 * Paints the ancestors of a with F_A and of b with F_B, both sides at once, with one store call
 * per step (every commit the step reached). A commit carrying both is common; its ancestors get
 * F_STALE (they cannot be lowest). Flags only grow and a commit is expanded again when they
 * grow (W1), so the result does not depend on the order of expansion; the order only decides
 * how little is read. A step expands:
 *   - every stale or common commit (the stale wave goes first);
 *   - a commit of one side only if no stale or common commit waiting is newer than it (so
 *     nothing below a known common ancestor runs ahead of the wave), and it is not older than
 *     the other side's newest commit minus that commit's last step back in time (so a side far
 *     ahead in time walks alone until it comes down to the other; sides whose times interleave
 *     advance together, one store call per step for both);
 *   - a commit of one side that has waited as many steps as the walk had made when it reached
 *     it, whatever the times: a commit much older than its parents (a slow clock) would else
 *     hold its side back while the other walks down to its time, through the whole history
 *     at worst; so a side held back still moves, its waits doubling, a few commits in all.
 * The newest live commit always qualifies, so every step makes progress. Stops when every
 * waiting commit is stale. Common, non-stale commits are the candidates.
 */
static int paint(prolly__graph *g, size_t ia, size_t ib)
{
	prolly__ilist load = {0}, pend = {0}, next = {0};
	size_t steps = 0;
	int rc = 0;

	g->v[ia].flags = F_A;
	g->v[ib].flags |= F_B;
	g->v[ia].ctime = g->v[ib].ctime = INT64_MIN;
	g->v[ia].queued = 1;
	if ((rc = prolly__ilist_push(&load, ia)))
		goto cleanup;
	if (ib != ia) {
		g->v[ib].queued = 1;
		if ((rc = prolly__ilist_push(&load, ib)))
			goto cleanup;
	}
	for (;; steps++) {
		/* One store call for every commit the last step reached. */
		if ((rc = load_step(g, &load, &pend)))
			goto cleanup;

		/* The state the step decides on: each side's newest live commit, the newest stale or
		 * common one. */
		int64_t newest[2] = {INT64_MIN, INT64_MIN}, step[2] = {0, 0}, wave = INT64_MIN;
		int has[2] = {0, 0}, live = 0;
		for (size_t i = 0; i < pend.n; i++) {
			const prolly__gnode *nd = &g->v[pend.v[i]];
			unsigned side = nd->flags & (F_A | F_B);
			if (nd->state != PROLLY__G_LOADED) {
				live |= !(nd->flags & F_STALE);
				continue;
			}
			if ((nd->flags & F_STALE) || side == (F_A | F_B)) {
				wave = PROLLY_MAX(wave, nd->time);
				live |= !(nd->flags & F_STALE);
				continue;
			}
			int s = side == F_A ? 0 : 1;
			live = 1;
			if (!has[s] || nd->time > newest[s]) {
				newest[s] = nd->time;
				step[s] = step_of(nd);
			}
			has[s] = 1;
		}
		if (!live)
			break;

		next.n = 0;
		for (size_t i = 0; i < pend.n; i++) {
			size_t j = pend.v[i];
			prolly__gnode *nd = &g->v[j];
			unsigned f = nd->flags;
			nd->queued = 0;
			if (f == nd->done)
				continue;
			if (nd->state != PROLLY__G_LOADED) { /* missing: history ends here */
				nd->done = f;
				continue;
			}
			int common = (f & F_A) && (f & F_B);
			int go = (f & F_STALE) || common;
			if (!go) {
				int o = (f & F_A) ? 1 : 0; /* the other side */
				go = (nd->time >= wave && (!has[o] || nd->time >= sat_sub(newest[o], step[o]))) ||
				     steps - nd->since >= nd->since;
			}
			if (!go) {
				nd->queued = 1;
				if ((rc = prolly__ilist_push(&next, j)))
					goto cleanup;
				continue;
			}
			unsigned pf = common ? (f | F_STALE) : f;
			int64_t t = nd->time;
			nd->done = f;
			for (uint32_t p = 0; p < g->v[j].np; p++) {
				size_t k;
				prolly_id pid = *prolly__graph_parent(g, &g->v[j], p);
				if ((rc = prolly__graph_get(g, &pid, &k)) ||
				    (rc = add_flags(g, k, pf, t, steps + 1, &load, &next)))
					goto cleanup;
			}
		}
		prolly__ilist tmp = pend;
		pend = next;
		next = tmp;
		if (!pend.n && !load.n)
			break;
	}
cleanup:
	free(load.v);
	free(pend.v);
	free(next.v);
	return rc;
}

/*
 * The redundancy walk's state: for each graph node, the candidates it is a proper ancestor of
 * (bits, w words per node) and those it was last expanded with (done); live, the candidates not
 * found to be an ancestor of another yet. Rows of nodes added to the graph meanwhile are zeroed
 * when first touched.
 */
typedef struct rwalk {
	uint64_t *bits, *done, *live;
	size_t w, rows, cap_bits, cap_done;
} rwalk;

/* Row of node j (zeroed rows made for every node up to j). */
static int row(rwalk *r, size_t j, uint64_t **bits, uint64_t **done)
{
	if (j >= r->rows) {
		size_t need = (j + 1) * r->w;
		if (PROLLY__GROW(r->bits, r->cap_bits, need, 64) ||
		    PROLLY__GROW(r->done, r->cap_done, need, 64))
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		memset(r->bits + r->rows * r->w, 0, (need - r->rows * r->w) * sizeof(uint64_t));
		memset(r->done + r->rows * r->w, 0, (need - r->rows * r->w) * sizeof(uint64_t));
		r->rows = j + 1;
	}
	*bits = r->bits + j * r->w;
	*done = r->done + j * r->w;
	return 0;
}

/* Adds the set b to node j's; queues it (to load or to expand) when that grew. */
static int add_bits(prolly__graph *g, rwalk *r, size_t j, const uint64_t *b, prolly__ilist *load,
                    prolly__ilist *pend)
{
	uint64_t *bits, *done;
	int grew = 0, rc;
	if ((rc = row(r, j, &bits, &done)))
		return rc;
	for (size_t k = 0; k < r->w; k++) {
		grew |= (bits[k] | b[k]) != bits[k];
		bits[k] |= b[k];
	}
	if (!grew || g->v[j].queued)
		return 0;
	g->v[j].queued = 1;
	return prolly__ilist_push(g->v[j].state == PROLLY__G_NEW ? load : pend, j);
}

/* 1 if the set b holds every candidate still live. */
static int covers(const rwalk *r, const uint64_t *b)
{
	for (size_t k = 0; k < r->w; k++)
		if (r->live[k] & ~b[k])
			return 0;
	return 1;
}

/*
 * Drops the candidates that are ancestors of other candidates (the paint can stop before its
 * stale marks reach them): walks down from every candidate's parents carrying the candidate's
 * bit; a candidate reached by any bit is an ancestor of another one. Exact whatever the times:
 * the walk never stops at a time. It stops at a commit that carries the bit of every candidate
 * still live: that commit is an ancestor of each of them, so none of them is among its
 * ancestors (history has no cycles), and below it the walk could find nothing more. So it reads
 * the candidates' histories down to where they meet (all of them, for candidates that share no
 * history), and stops as soon as one candidate is left.
 */
static int drop_redundant(prolly__graph *g, size_t *cand, size_t *ncand)
{
	prolly__ilist load = {0}, pend = {0}, next = {0};
	rwalk r = {0};
	uint64_t *b = NULL;
	size_t n = *ncand, kept = 0, nlive = n;
	int rc = 0;

	r.w = (n + 63) / 64;
	if (!(r.live = calloc(r.w, sizeof(uint64_t))) || !(b = calloc(r.w, sizeof(uint64_t)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		goto cleanup;
	}
	for (size_t i = 0; i < g->n; i++)
		g->v[i].queued = 0;
	for (size_t i = 0; i < n; i++) {
		r.live[i / 64] |= (uint64_t)1 << (i % 64);
		memset(b, 0, r.w * sizeof(uint64_t));
		b[i / 64] = (uint64_t)1 << (i % 64);
		for (uint32_t p = 0; p < g->v[cand[i]].np; p++) {
			size_t k;
			prolly_id pid = *prolly__graph_parent(g, &g->v[cand[i]], p);
			if ((rc = prolly__graph_get(g, &pid, &k)) || (rc = add_bits(g, &r, k, b, &load, &pend)))
				goto cleanup;
		}
	}
	while ((load.n || pend.n) && nlive > 1) {
		if ((rc = load_step(g, &load, &pend)))
			goto cleanup;
		next.n = 0;
		for (size_t i = 0; i < pend.n; i++) {
			size_t j = pend.v[i];
			uint64_t *bits, *done;
			int same = 1;
			g->v[j].queued = 0;
			if ((rc = row(&r, j, &bits, &done)))
				goto cleanup;
			for (size_t k = 0; k < r.w; k++)
				same &= bits[k] == done[k];
			if (same || g->v[j].state != PROLLY__G_LOADED || covers(&r, bits))
				continue;
			memcpy(done, bits, r.w * sizeof(uint64_t));
			memcpy(b, bits, r.w * sizeof(uint64_t)); /* bits moves when the graph grows */
			for (uint32_t p = 0; p < g->v[j].np; p++) {
				size_t k;
				prolly_id pid = *prolly__graph_parent(g, &g->v[j], p);
				if ((rc = prolly__graph_get(g, &pid, &k)) ||
				    (rc = add_bits(g, &r, k, b, &load, &next)))
					goto cleanup;
			}
		}
		/* A candidate reached by another's bit is that one's ancestor. */
		for (size_t i = 0; i < n; i++) {
			uint64_t *bits, *done, m = (uint64_t)1 << (i % 64), any = 0;
			if (!(r.live[i / 64] & m))
				continue;
			if ((rc = row(&r, cand[i], &bits, &done)))
				goto cleanup;
			for (size_t k = 0; k < r.w; k++)
				any |= bits[k];
			if (any) {
				r.live[i / 64] &= ~m;
				nlive--;
			}
		}
		prolly__ilist tmp = pend;
		pend = next;
		next = tmp;
	}
	for (size_t i = 0; i < n; i++)
		if (r.live[i / 64] >> (i % 64) & 1)
			cand[kept++] = cand[i];
	*ncand = kept;
cleanup:
	free(load.v);
	free(pend.v);
	free(next.v);
	free(r.bits);
	free(r.done);
	free(r.live);
	free(b);
	return rc;
}

int prolly__merge_base(prolly_id *out, prolly_db *db, const prolly_id *a, const prolly_id *b)
{
	prolly__graph g;
	prolly__ilist cand = {0};
	size_t ia, ib;
	int rc;

	prolly__graph_init(&g, db, 0);
	if (!out || !db || !a || !b) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_merge_base: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__graph_get(&g, a, &ia)) || (rc = prolly__graph_get(&g, b, &ib)))
		goto cleanup;
	if ((rc = paint(&g, ia, ib)))
		goto cleanup;
	if (g.v[ia].state != PROLLY__G_LOADED || g.v[ib].state != PROLLY__G_LOADED) {
		rc = prolly__commit_not_found(g.v[ia].state != PROLLY__G_LOADED ? a : b);
		goto cleanup;
	}
	/* The candidates, newest first. */
	for (size_t i = 0; i < g.n; i++) {
		const prolly__gnode *nd = &g.v[i];
		if (nd->state != PROLLY__G_LOADED || (nd->flags & (F_A | F_B | F_STALE)) != (F_A | F_B))
			continue;
		if ((rc = prolly__ilist_push(&cand, i)))
			goto cleanup;
		for (size_t at = cand.n - 1; at > 0 && prolly__graph_newer(&g, cand.v[at], cand.v[at - 1]);
		     at--) {
			size_t t = cand.v[at];
			cand.v[at] = cand.v[at - 1];
			cand.v[at - 1] = t;
		}
	}
	if (cand.n > 1 && (rc = drop_redundant(&g, cand.v, &cand.n)))
		goto cleanup;
	if (!cand.n) {
		char ha[PROLLY_ID_HEX_SIZE], hb[PROLLY_ID_HEX_SIZE];
		int cut = 0;
		for (size_t i = 0; i < g.n && !cut; i++)
			cut = g.v[i].state == PROLLY__G_MISSING;
		prolly_id_to_hex(ha, a);
		prolly_id_to_hex(hb, b);
		/* A parent that is gone may have been the common history: say so, never "unrelated". */
		if (cut)
			rc = prolly_set_error(PROLLY_EPRUNED,
			                      "commits %s and %s: no merge base is left; retention (gc) "
			                      "removed part of their history",
			                      ha, hb);
		else
			rc = prolly_set_error(PROLLY_ENOTFOUND, "commits %s and %s share no history", ha, hb);
		goto cleanup;
	}
	/* Several lowest common ancestors (criss-cross history): the newest, deterministically. */
	*out = *prolly__graph_id(&g, cand.v[0]);
cleanup:
	free(cand.v);
	prolly__graph_dispose(&g);
	return rc;
}

int prolly_merge_base(prolly_id *out, prolly_db *db, const prolly_id *a, const prolly_id *b)
{
	int rc = prolly__merge_base(out, db, a, b);
	/* A "corrupt commit" may be the id of a tree or reflog entry the caller gave as a or b. */
	rc = prolly__commit_named_error(db, rc, a, "merge-base");
	return prolly__commit_named_error(db, rc, b, "merge-base");
}
