/*
 * merge_base.c - the merge base of two commits (prolly_merge_base): their lowest common
 * ancestor, found by painting the commit graph (commit_graph.c) from both sides at once.
 *
 * Invariant:
 *   W1  a graph node's flags only grow, and a node is expanded again only when they grew, so
 *       every walk terminates after at most (number of flag bits + 1) expansions per commit.
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

/* Adds flags to node j, reached from a child of time ctime; queues it (to load or to expand)
 * when they grew. */
static int add_flags(prolly__graph *g, size_t j, unsigned f, int64_t ctime, prolly__ilist *load,
                     prolly__ilist *pend)
{
	prolly__gnode *nd = &g->v[j];
	if ((nd->flags | f) == nd->flags)
		return 0;
	if (!nd->flags)
		nd->ctime = ctime;
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
 *     advance together, one store call per step for both).
 * The newest live commit always qualifies, so every step makes progress. Stops when every
 * waiting commit is stale. Common, non-stale commits are the candidates.
 */
static int paint(prolly__graph *g, size_t ia, size_t ib)
{
	prolly__ilist load = {0}, pend = {0}, next = {0};
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
	for (;;) {
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
				go = nd->time >= wave && (!has[o] || nd->time >= sat_sub(newest[o], step[o]));
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
				    (rc = add_flags(g, k, pf, t, &load, &next)))
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

#define MAX_CANDIDATES 64

/*
 * Drops candidates that are ancestors of other candidates (the paint can stop before the stale
 * marks reach them): walks down from every candidate's parents carrying the candidate's bit, not
 * below the oldest candidate (older commits cannot be ancestors-or-equal of a candidate in
 * history where parents are older, BR2 in branch.c). A candidate reached by any bit is redundant.
 */
static int drop_redundant(prolly__graph *g, size_t *cand, size_t *ncand)
{
	prolly__ilist load = {0}, pend = {0}, next = {0};
	int64_t oldest = INT64_MAX;
	size_t n = *ncand, kept = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		oldest = PROLLY_MIN(oldest, g->v[cand[i]].time);
	for (size_t i = 0; i < g->n; i++) {
		g->v[i].bits = g->v[i].bdone = 0;
		g->v[i].queued = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const prolly__gnode *c = &g->v[cand[i]];
		for (uint32_t p = 0; p < c->np; p++) {
			size_t k;
			prolly_id pid = *prolly__graph_parent(g, c, p);
			if ((rc = prolly__graph_get(g, &pid, &k)))
				goto cleanup;
			prolly__gnode *nd = &g->v[k];
			nd->bits |= (uint64_t)1 << i;
			if (!nd->queued) {
				nd->queued = 1;
				if ((rc = prolly__ilist_push(nd->state == PROLLY__G_NEW ? &load : &pend, k)))
					goto cleanup;
			}
		}
	}
	while (load.n || pend.n) {
		if ((rc = load_step(g, &load, &pend)))
			goto cleanup;
		next.n = 0;
		for (size_t i = 0; i < pend.n; i++) {
			size_t j = pend.v[i];
			prolly__gnode *nd = &g->v[j];
			nd->queued = 0;
			if (nd->bits == nd->bdone || nd->state != PROLLY__G_LOADED || nd->time < oldest)
				continue;
			uint64_t b = nd->bits;
			nd->bdone = b;
			for (uint32_t p = 0; p < nd->np; p++) {
				size_t k;
				prolly_id pid = *prolly__graph_parent(g, &g->v[j], p);
				if ((rc = prolly__graph_get(g, &pid, &k)))
					goto cleanup;
				prolly__gnode *pn = &g->v[k];
				if ((pn->bits | b) == pn->bits)
					continue;
				pn->bits |= b;
				if (!pn->queued) {
					pn->queued = 1;
					if ((rc = prolly__ilist_push(pn->state == PROLLY__G_NEW ? &load : &next, k)))
						goto cleanup;
				}
			}
		}
		prolly__ilist tmp = pend;
		pend = next;
		next = tmp;
	}
	for (size_t i = 0; i < n; i++)
		if (!g->v[cand[i]].bits)
			cand[kept++] = cand[i];
	*ncand = kept;
cleanup:
	free(load.v);
	free(pend.v);
	free(next.v);
	return rc;
}

int prolly_merge_base(prolly_id *out, prolly_db *db, const prolly_id *a, const prolly_id *b)
{
	prolly__graph g;
	size_t ia, ib, cand[MAX_CANDIDATES], ncand = 0;
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
	/* The candidates, newest first; beyond MAX_CANDIDATES only the newest are considered. */
	for (size_t i = 0; i < g.n; i++) {
		const prolly__gnode *nd = &g.v[i];
		if (nd->state != PROLLY__G_LOADED || (nd->flags & (F_A | F_B | F_STALE)) != (F_A | F_B))
			continue;
		size_t at;
		if (ncand < MAX_CANDIDATES) {
			at = ncand++;
		} else {
			if (!prolly__graph_newer(&g, i, cand[MAX_CANDIDATES - 1]))
				continue;
			at = MAX_CANDIDATES - 1;
		}
		cand[at] = i;
		while (at > 0 && prolly__graph_newer(&g, cand[at], cand[at - 1])) {
			size_t t = cand[at];
			cand[at] = cand[at - 1];
			cand[at - 1] = t;
			at--;
		}
	}
	if (ncand > 1 && (rc = drop_redundant(&g, cand, &ncand)))
		goto cleanup;
	if (!ncand) {
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
	*out = *prolly__graph_id(&g, cand[0]);
cleanup:
	prolly__graph_dispose(&g);
	return rc;
}
