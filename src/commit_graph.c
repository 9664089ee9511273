/*
 * commit_graph.c - the commit graph of a history walk: the commits seen (id -> index, parents,
 * time), loaded a step at a time. The merge base (merge_base.c) and the log (log.c) walk it.
 *
 * Every commit a step needs is loaded with one store call, so cost is one store call per step of
 * the walk, not per commit; where the store offers get_ancestors, that call also brings up to
 * `ahead` of their ancestors, which later steps then find loaded: ANCESTORS_AHEAD; on a server
 * store (PROLLY_STORE_REMOTE) it starts there and doubles with every such call of the walk up
 * to ANCESTORS_AHEAD_MAX, so a walk that stops early reads at most about twice what it used and
 * a long chain costs a round trip per ANCESTORS_AHEAD_MAX commits (an in-process store gains
 * nothing from longer reads: measured slower). A commit that is not in the store (removed by
 * retention, or never there) becomes PROLLY__G_MISSING: the walks decide what that means.
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
	prolly__idmap_dispose(&g->index);
	free(g->par);
}

/* Index of id in the graph, adding an unloaded node if absent. */
int prolly__graph_get(prolly__graph *g, const prolly_id *id, size_t *out)
{
	int rc;
	if (PROLLY__GROW(g->v, g->cap, g->n + 1, 32))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	if ((rc = prolly__idmap_add(&g->index, id, out)) <= 0)
		return rc;
	assert(*out == g->n); /* node i is entry i */
	memset(&g->v[g->n++], 0, sizeof(g->v[0]));
	return 0;
}

/* ---- one store call of a history walk (prolly__walk_read) ---------------------------------- */

typedef struct read_ctx {
	const prolly__walk_reader *r;
	const prolly_id *ids;
	const size_t *idx;
	int rc;
} read_ctx;

static int on_object(void *payload, size_t index, const void *data, size_t size)
{
	read_ctx *x = payload;
	int rc = x->r->fill(x->r->walk, x->idx[index], &x->ids[index], data, size);
	return rc ? (x->rc = rc) : 0;
}

/* get_ancestors' objects: each must hash to its id (else the store is corrupt). A commit the
 * walk has not reached becomes a node (add), filled now, so the step that reaches it reads
 * nothing; if it does not decode it stays unfilled, and the walk meets the damage only if it
 * gets there (reading it again), as without get_ancestors. */
static int on_ancestor(void *payload, const prolly_id *id, const void *data, size_t size)
{
	read_ctx *x = payload;
	const prolly__walk_reader *r = x->r;
	size_t k;
	int rc;
	if ((rc = prolly__check_hash(id, data, size)))
		return x->rc = rc;
	if ((k = prolly__idmap_find(r->index, id)) == PROLLY__IDMAP_NONE) {
		if (size < PROLLY__MAGIC_SIZE || memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0)
			return 0;
		if ((rc = r->add(r->walk, id, &k)))
			return x->rc = rc;
		(void)r->fill(r->walk, k, id, data, size);
		return 0;
	}
	if ((rc = r->fill(r->walk, k, id, data, size)))
		return x->rc = rc;
	return 0;
}

int prolly__walk_read(const prolly__walk_reader *r, const prolly_id *ids, const size_t *idx,
                      size_t n)
{
	read_ctx x = {r, ids, idx, 0};
	prolly_db *db = r->db;
	int rc;
	if (db->vt.get_ancestors) {
		/* These commits and, in the same round trip, those the next steps will likely want:
		 * their ancestors, breadth first. */
		prolly_stats d = PROLLY_STATS_INIT;
		d.store_reads = 1;
		d.store_read_items = n;
		rc = db->vt.get_ancestors(db->store, ids, n, PROLLY_MAX(n * 4, r->ahead),
		                          &prolly__commit_layout, on_ancestor, &x);
		prolly__stats_add(r->db, &d);
	} else {
		rc = prolly__load_raw(r->db, ids, n, on_object, &x);
	}
	return x.rc ? x.rc : rc;
}

/* ---- the graph's loads -------------------------------------------------------------------- */

/* Fills graph node gi (if still PROLLY__G_NEW) from its commit's verified bytes. */
static int graph_fill(void *walk, size_t gi, const prolly_id *id, const void *data, size_t size)
{
	prolly__graph *g = walk;
	prolly__gnode *nd = &g->v[gi];
	prolly_commit *c = NULL;
	int rc;
	if (nd->state != PROLLY__G_NEW)
		return 0;
	if ((rc = prolly__commit_decode(&c, id, data, size)))
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

static int graph_add(void *walk, const prolly_id *id, size_t *out)
{
	return prolly__graph_get(walk, id, out);
}

/* Commits a history step reads ahead where the store can (get_ancestors): a long first-parent
 * chain then costs one round trip per this many commits instead of one per commit. */
#define ANCESTORS_AHEAD 256
#define ANCESTORS_AHEAD_MAX 4096

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
			continue; /* (a duplicate is harmless: graph_fill ignores a node already loaded) */
		want[k] = idx[i];
		ids[k] = *prolly__graph_id(g, idx[i]);
		k++;
	}
	if (k) {
		size_t ahead = g->ahead ? g->ahead : ANCESTORS_AHEAD;
		prolly__walk_reader r = {g->db, &g->index, ahead, graph_add, graph_fill, g};
		if (prolly__store_remote(g->db))
			g->ahead = PROLLY_MIN(2 * ahead, ANCESTORS_AHEAD_MAX);
		if ((rc = prolly__walk_read(&r, ids, want, k)))
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
