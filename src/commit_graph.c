/*
 * commit_graph.c - the commit graph of a history walk: the commits seen (id -> index, parents,
 * time), loaded a step at a time. The merge base (merge_base.c) and the log (log.c) walk it.
 *
 * Every commit a step needs is loaded with one store call, so cost is one store call per step of
 * the walk, not per commit; where the store offers get_ancestors, that call also brings up to
 * ANCESTORS_AHEAD of their ancestors, which later steps then find loaded, so a long chain costs
 * one call per ANCESTORS_AHEAD commits. A commit that is not in the store (removed by retention,
 * or never there) becomes PROLLY__G_MISSING: the walks decide what that means.
 */
#include "internal.h"

#include <stdlib.h>

int prolly__ilist_push(prolly__ilist *l, size_t x)
{
	if (PROLLY__GROW(l->v, l->cap, l->n + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	l->v[l->n++] = x;
	return 0;
}

void prolly__graph_init(prolly__graph *g, prolly_db *db, int keep)
{
	memset(g, 0, sizeof(*g));
	g->db = db;
	g->keep = keep;
}

void prolly__graph_dispose(prolly__graph *g)
{
	for (size_t i = 0; i < g->n; i++)
		prolly_commit_free(g->v[i].c);
	free(g->v);
	free(g->slot);
	free(g->par);
}

static size_t id_hash(const prolly_id *id)
{
	uint64_t h;
	memcpy(&h, id->bytes + 8, sizeof(h));
	return (size_t)h;
}

static void slot_place(size_t *slot, size_t scap, const prolly__gnode *v, size_t idx)
{
	size_t mask = scap - 1, i = id_hash(&v[idx].id) & mask;
	while (slot[i])
		i = (i + 1) & mask;
	slot[i] = idx + 1;
}

/* 1 and *out if the graph has a node for id. */
static int graph_find(const prolly__graph *g, const prolly_id *id, size_t *out)
{
	if (g->scap) {
		size_t mask = g->scap - 1;
		for (size_t i = id_hash(id) & mask; g->slot[i]; i = (i + 1) & mask) {
			if (prolly_id_equal(&g->v[g->slot[i] - 1].id, id)) {
				*out = g->slot[i] - 1;
				return 1;
			}
		}
	}
	return 0;
}

/* Index of id in the graph, adding an unloaded node if absent. */
int prolly__graph_get(prolly__graph *g, const prolly_id *id, size_t *out)
{
	if (graph_find(g, id, out))
		return 0;
	if (PROLLY__GROW(g->v, g->cap, g->n + 1, 32))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	if ((g->n + 1) * 2 > g->scap) {
		size_t ncap = g->scap ? g->scap * 2 : 64;
		size_t *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		for (size_t i = 0; i < g->n; i++)
			slot_place(ns, ncap, g->v, i);
		free(g->slot);
		g->slot = ns;
		g->scap = ncap;
	}
	memset(&g->v[g->n], 0, sizeof(g->v[g->n]));
	g->v[g->n].id = *id;
	slot_place(g->slot, g->scap, g->v, g->n);
	*out = g->n++;
	return 0;
}

typedef struct gload_ctx {
	prolly__graph *g;
	const size_t *idx;
	const prolly_id *ids;
	int rc;
} gload_ctx;

/* Fills graph node gi (if still PROLLY__G_NEW) from its commit's verified bytes. */
static int gload_fill(prolly__graph *g, size_t gi, const void *data, size_t size)
{
	prolly__gnode *nd = &g->v[gi];
	prolly_commit *c = NULL;
	int rc;
	if (nd->state != PROLLY__G_NEW)
		return 0;
	if ((rc = prolly__commit_decode(&c, &nd->id, data, size)))
		return rc;
	if (PROLLY__GROW(g->par, g->cappar, g->npar + c->n_parents, 32)) {
		prolly_commit_free(c);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	}
	nd->poff = g->npar;
	nd->np = (uint32_t)c->n_parents;
	if (c->n_parents)
		memcpy(&g->par[g->npar], c->parents, c->n_parents * sizeof(*c->parents));
	g->npar += c->n_parents;
	nd->time = c->time_us;
	nd->state = PROLLY__G_LOADED;
	if (g->keep)
		nd->c = c;
	else
		prolly_commit_free(c);
	return 0;
}

static int on_gload(void *payload, size_t index, const void *data, size_t size)
{
	gload_ctx *lc = payload;
	int rc = gload_fill(lc->g, lc->idx[index], data, size);
	return rc ? (lc->rc = rc) : 0;
}

/* get_ancestors' objects: the ones asked for must hash to their id (else the store is corrupt);
 * every commit becomes (or fills) a graph node, so later steps of the walk find it loaded. */
static int on_ancestor(void *payload, const prolly_id *id, const void *data, size_t size)
{
	gload_ctx *lc = payload;
	size_t gi;
	int rc;
	if ((rc = prolly__check_hash(id, data, size)))
		return lc->rc = rc;
	if (!graph_find(lc->g, id, &gi)) {
		/* An ancestor the walk has not reached: kept if it decodes; if not, the walk meets the
		 * damage only if it gets there (reading it again), as without get_ancestors. */
		prolly_commit *c = NULL;
		if (prolly__commit_decode(&c, id, data, size))
			return 0;
		prolly_commit_free(c);
		if ((rc = prolly__graph_get(lc->g, id, &gi)))
			return lc->rc = rc;
	}
	if ((rc = gload_fill(lc->g, gi, data, size)))
		return lc->rc = rc;
	return 0;
}

/* Commits a history step reads ahead where the store can (get_ancestors): a long first-parent
 * chain then costs one round trip per this many commits instead of one per commit. */
#define ANCESTORS_AHEAD 256

/* Loads the unloaded nodes among idx[0..n) with one store call. Those not found become
 * PROLLY__G_MISSING (removed by retention, or never there). */
int prolly__graph_load(prolly__graph *g, const size_t *idx, size_t n)
{
	prolly_id *ids = NULL;
	size_t *want = NULL, k = 0;
	int rc = 0;
	if (!n)
		return 0;
	ids = malloc(n * sizeof(*ids));
	want = malloc(n * sizeof(*want));
	if (!ids || !want) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory loading %zu commits", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		if (g->v[idx[i]].state != PROLLY__G_NEW)
			continue; /* (a duplicate is harmless: on_gload ignores a node already loaded) */
		want[k] = idx[i];
		ids[k] = g->v[idx[i]].id;
		k++;
	}
	if (k) {
		gload_ctx lc = {g, want, ids, 0};
		prolly_db *db = g->db;
		if (db->vt.get_ancestors) {
			/* This step's commits and, in the same round trip, those the next steps will
			 * likely want: their ancestors, breadth first. */
			prolly_stats d = PROLLY_STATS_INIT;
			d.store_reads = 1;
			d.store_read_items = k;
			rc = db->vt.get_ancestors(db->store, ids, k, PROLLY_MAX(k * 4, (size_t)ANCESTORS_AHEAD),
			                          &prolly__commit_layout, on_ancestor, &lc);
			prolly__stats_add(g->db, &d);
		} else {
			rc = prolly__load_raw(g->db, ids, k, on_gload, &lc);
		}
		if (lc.rc)
			rc = lc.rc;
		if (rc)
			goto cleanup;
		for (size_t i = 0; i < k; i++)
			if (g->v[want[i]].state == PROLLY__G_NEW)
				g->v[want[i]].state = PROLLY__G_MISSING;
	}
cleanup:
	free(ids);
	free(want);
	return rc;
}

int prolly__commit_not_found(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ENOTFOUND, "commit %s not found", hex);
}
