/*
 * gc_history.c - which commits and trees retention keeps (gc's step 2, see gc.c).
 *
 * The walk reads the whole history reachable from the heads, breadth first from all heads at
 * once, one store call per generation (per ANCESTORS_AHEAD commits where the store has
 * get_ancestors, which reads ahead), into an in-memory graph (id, tree, parents, depth: the
 * parent steps from the nearest head). Then:
 *
 *   K1  a commit at depth < retain (every commit when retain is 0) is kept with its tree: for
 *       linear history, the newest `retain` commits of each head; a head naming a tree root
 *       (a reflog entry of a tag that named a tree) keeps that tree;
 *   K2  for every pair of protected heads (branch heads and tags), each of their merge bases
 *       (lowest common ancestors) is kept with its tree, so a merge after gc finds the same base
 *       and reads the same base tree as before it;
 *   K3  every commit that descends from a base kept by K2 (and so lies on the history between
 *       that base and a head) is kept as a commit object, without its tree, so that
 *       prolly_merge_base still walks from the heads down to the base;
 *   K4  a tree K1 or K2 asks for that is not stored, of a commit that is no head, was removed
 *       by an earlier gc with a smaller horizon (K3 kept its commit alone) and is left out: a
 *       gc keeping more than the one before it does not fail on it. A head's tree must exist.
 *
 * K2 in one pass over the graph, without a walk per pair: bits(c) is the set of protected heads
 * that reach c (propagated from children to parents in topological order). c is a lowest common
 * ancestor of heads i and j iff both are in bits(c) and no child of c has both: then nothing
 * newer than c is common to the two. Everything not kept is swept: older commits and their
 * trees beyond the horizon, and the trees of the commits K3 keeps. A commit whose tree is gone
 * still shows in a log; reading its tree is PROLLY_ENOTFOUND.
 *
 * Invariants: G1 every node in the graph is loaded at most once (the map); G2 the topological
 * order lists children before parents (Kahn's algorithm on child counts), so one pass
 * propagates bits(), and one pass backwards propagates K3.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct hnode { /* its id is the graph's index.ids[its index] */
	prolly_id tree;
	uint32_t depth;
	size_t poff; /* first parent id in graph.pids */
	uint32_t np;
	int loaded;
	int reached; /* the walk got here (depth is set); 0: read ahead by get_ancestors only */
	int is_tree; /* a head that names a tree root (a tag or reflog entry may): kept, not walked */
} hnode;

typedef struct hgraph {
	hnode *v;
	size_t n, cap;
	prolly__idmap index; /* node i is entry i */
	prolly_id *pids;
	size_t npids, cappids;
} hgraph;

static int hfind(const hgraph *g, const prolly_id *id, size_t *out)
{
	*out = prolly__idmap_find(&g->index, id);
	return *out != PROLLY__IDMAP_NONE;
}

/* Adds id (not present) at depth; *out its index. */
static int hadd(hgraph *g, const prolly_id *id, uint32_t depth, size_t *out)
{
	int rc;
	if (PROLLY__GROW(g->v, g->cap, g->n + 1, 256))
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory walking history");
	if ((rc = prolly__idmap_add(&g->index, id, out)) < 0)
		return rc;
	assert(rc == 1 && *out == g->n); /* node i is entry i */
	memset(&g->v[g->n], 0, sizeof(g->v[g->n]));
	g->v[g->n].depth = depth;
	g->v[g->n].reached = 1;
	*out = g->n++;
	return 0;
}

/* Decodes a stored object into graph node k (a commit; or a tree root named by a head). */
static int fill(void *walk, size_t k, const prolly_id *id, const void *data, size_t size)
{
	hgraph *g = walk;
	hnode *nd = &g->v[k];
	prolly_commit *c = NULL;
	int rc;
	if (nd->loaded)
		return 0;
	if (size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE) == 0 &&
	    nd->reached && nd->depth == 0) {
		nd->is_tree = 1; /* a head naming a tree: its nodes are kept, there is no history */
		nd->tree = *id;
		return 0;
	}
	if (size < PROLLY__MAGIC_SIZE || memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0)
		return 0; /* not a commit (a ref may name anything): nothing to walk */
	if ((rc = prolly__commit_decode(&c, id, data, size)))
		return rc;
	if (PROLLY__GROW(g->pids, g->cappids, g->npids + c->n_parents, 256)) {
		prolly_commit_free(c);
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory walking history");
	}
	nd = &g->v[k];
	nd->tree = c->tree;
	nd->poff = g->npids;
	nd->np = (uint32_t)c->n_parents;
	if (c->n_parents)
		memcpy(g->pids + g->npids, c->parents, c->n_parents * sizeof(prolly_id));
	g->npids += c->n_parents;
	nd->loaded = 1;
	prolly_commit_free(c);
	return 0;
}

/* A commit read ahead by get_ancestors: a node that is loaded but not reached, so the step that
 * reaches it reads nothing. */
static int add_ahead(void *walk, const prolly_id *id, size_t *out)
{
	hgraph *g = walk;
	int rc = hadd(g, id, 0, out);
	if (!rc)
		g->v[*out].reached = 0;
	return rc;
}

/* Commits one generation reads ahead where the store can (get_ancestors): a long history then
 * costs one round trip per this many commits instead of one per generation. */
#define ANCESTORS_AHEAD 1024

/* Loads the nodes of level that are not loaded yet, with one store call. */
static int load_level(prolly_db *db, hgraph *g, const size_t *level, size_t nl, prolly_id *ids,
                      size_t *want)
{
	size_t k = 0;
	for (size_t i = 0; i < nl; i++)
		if (!g->v[level[i]].loaded && !g->v[level[i]].is_tree) {
			want[k] = level[i];
			ids[k++] = g->index.ids[level[i]];
		}
	if (!k)
		return 0;
	/* A commit that is absent was removed by an earlier gc: its line of history ends. */
	prolly__walk_reader r = {db, &g->index, ANCESTORS_AHEAD, add_ahead, fill, g};
	return prolly__walk_read(&r, ids, want, k);
}

/* Reads the history from heads into g, one store call per generation (K1's depths). */
static int walk(prolly_db *db, hgraph *g, const prolly_id *heads, size_t n)
{
	size_t *level = NULL, *next = NULL, nl = 0, nn = 0, capl = 0, capn = 0;
	prolly_id *ids = NULL;
	size_t capids = 0, capw = 0;
	int rc = 0;

	size_t *want = NULL;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if (hfind(g, &heads[i], &k))
			continue;
		if ((rc = hadd(g, &heads[i], 0, &k)))
			goto cleanup;
		if (PROLLY__GROW(level, capl, nl + 1, 64))
			goto oom;
		level[nl++] = k;
	}
	for (uint32_t depth = 0; nl; depth++) {
		if (PROLLY__GROW(ids, capids, nl, 64) || PROLLY__GROW(want, capw, nl, 64))
			goto oom;
		if ((rc = load_level(db, g, level, nl, ids, want)))
			goto cleanup;
		nn = 0;
		for (size_t i = 0; i < nl; i++) {
			size_t j = level[i];
			if (!g->v[j].loaded)
				continue;
			for (uint32_t p = 0; p < g->v[j].np; p++) {
				size_t k;
				prolly_id pid = g->pids[g->v[j].poff + p];
				if (hfind(g, &pid, &k)) {
					if (g->v[k].reached)
						continue;        /* G1; breadth first: its depth is already the least */
					g->v[k].reached = 1; /* read ahead: reached now */
					g->v[k].depth = depth + 1;
				} else if ((rc = hadd(g, &pid, depth + 1, &k))) {
					goto cleanup;
				}
				if (PROLLY__GROW(next, capn, nn + 1, 64))
					goto oom;
				next[nn++] = k;
			}
		}
		size_t *t = level;
		level = next;
		next = t;
		size_t tc = capl;
		capl = capn;
		capn = tc;
		nl = nn;
	}
	goto cleanup;
oom:
	rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory walking history");
cleanup:
	free(level);
	free(next);
	free(ids);
	free(want);
	return rc;
}

/* K2 and K3: sets keep[i] |= 2 for the merge bases of protected heads, |= 4 for the commits
 * between them and the heads. */
static int protect_bases(hgraph *g, const prolly_id *heads, size_t n_protected, unsigned char *keep)
{
	size_t n = g->n, words = (n_protected + 63) / 64;
	size_t *pidx = NULL, *nchild = NULL, *order = NULL, *coff = NULL, *clist = NULL;
	uint64_t *bits = NULL, *u = NULL;
	unsigned char *desc = NULL;
	int rc = 0;

	if (!(pidx = malloc((g->npids ? g->npids : 1) * sizeof(*pidx))) ||
	    !(nchild = calloc(n, sizeof(*nchild))) || !(order = malloc(n * sizeof(*order))) ||
	    !(coff = calloc(n + 1, sizeof(*coff))) ||
	    !(clist = malloc((g->npids ? g->npids : 1) * sizeof(*clist))) ||
	    !(bits = calloc(n * words, sizeof(*bits))) || !(u = malloc(words * sizeof(*u))) ||
	    !(desc = calloc(n, 1))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory finding merge bases");
		goto cleanup;
	}
	/* Parent indexes (SIZE_MAX: not in the graph or not loaded), child counts and lists. A
	 * commit read ahead but never reached cannot exist (the walk follows every stored parent);
	 * it is left out all the same. */
	for (size_t j = 0; j < n; j++) {
		if (!g->v[j].loaded || !g->v[j].reached)
			continue;
		for (uint32_t p = 0; p < g->v[j].np; p++) {
			size_t at = g->v[j].poff + p, k;
			if (hfind(g, &g->pids[at], &k) && g->v[k].loaded && g->v[k].reached) {
				pidx[at] = k;
				nchild[k]++;
			} else {
				pidx[at] = SIZE_MAX;
			}
		}
	}
	for (size_t j = 0; j < n; j++)
		coff[j + 1] = coff[j] + nchild[j];
	for (size_t j = 0; j < n; j++) {
		if (!g->v[j].loaded || !g->v[j].reached)
			continue;
		for (uint32_t p = 0; p < g->v[j].np; p++) {
			size_t k = pidx[g->v[j].poff + p];
			if (k != SIZE_MAX)
				clist[coff[k] + --nchild[k]] = j; /* nchild back to 0 when all are placed */
		}
	}
	/* G2: children before parents. */
	size_t no = 0;
	for (size_t j = 0; j < n; j++) {
		nchild[j] = coff[j + 1] - coff[j];
		if (g->v[j].loaded && g->v[j].reached && !nchild[j])
			order[no++] = j;
	}
	for (size_t at = 0; at < no; at++) {
		size_t j = order[at];
		for (uint32_t p = 0; p < g->v[j].np; p++) {
			size_t k = pidx[g->v[j].poff + p];
			if (k != SIZE_MAX && --nchild[k] == 0)
				order[no++] = k;
		}
	}
	for (size_t i = 0; i < n_protected; i++) {
		size_t k;
		if (hfind(g, &heads[i], &k) && g->v[k].loaded && g->v[k].reached)
			bits[k * words + i / 64] |= (uint64_t)1 << (i % 64);
	}
	for (size_t at = 0; at < no; at++) {
		size_t j = order[at];
		for (uint32_t p = 0; p < g->v[j].np; p++) {
			size_t k = pidx[g->v[j].poff + p];
			if (k != SIZE_MAX)
				for (size_t w = 0; w < words; w++)
					bits[k * words + w] |= bits[j * words + w];
		}
	}
	/* K2: some pair in bits(j) that no child holds both of. */
	for (size_t j = 0; j < n; j++) {
		const uint64_t *b = bits + j * words;
		size_t pop = 0;
		for (size_t w = 0; w < words; w++)
			pop += (size_t)__builtin_popcountll(b[w]);
		if (pop < 2)
			continue;
		int needed = 0;
		for (size_t i = 0; i < n_protected && !needed; i++) {
			if (!(b[i / 64] >> (i % 64) & 1))
				continue;
			memset(u, 0, words * sizeof(*u));
			u[i / 64] |= (uint64_t)1 << (i % 64);
			for (size_t c = coff[j]; c < coff[j + 1]; c++) {
				const uint64_t *cb = bits + clist[c] * words;
				if (cb[i / 64] >> (i % 64) & 1)
					for (size_t w = 0; w < words; w++)
						u[w] |= cb[w];
			}
			for (size_t w = 0; w < words && !needed; w++)
				needed = (b[w] & ~u[w]) != 0;
		}
		if (needed)
			keep[j] |= 2;
	}
	/* K3: parents before children (the order backwards). */
	for (size_t at = no; at-- > 0;) {
		size_t j = order[at];
		desc[j] = (keep[j] & 2) != 0;
		for (uint32_t p = 0; p < g->v[j].np && !desc[j]; p++) {
			size_t k = pidx[g->v[j].poff + p];
			desc[j] = k != SIZE_MAX && desc[k];
		}
		if (desc[j])
			keep[j] |= 4;
	}
cleanup:
	free(pidx);
	free(nchild);
	free(order);
	free(coff);
	free(clist);
	free(bits);
	free(u);
	free(desc);
	return rc;
}

int prolly__gc_history(prolly_db *db, const prolly_id *heads, size_t n, size_t n_protected,
                       unsigned retain, prolly_id **commits, size_t *n_commits, prolly_id **trees,
                       size_t *n_trees)
{
	hgraph g;
	unsigned char *keep = NULL, *held = NULL;
	int rc;

	memset(&g, 0, sizeof(g));
	*commits = *trees = NULL;
	*n_commits = *n_trees = 0;
	if ((rc = walk(db, &g, heads, n)))
		goto cleanup;
	if (!(keep = calloc(g.n ? g.n : 1, 1))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		goto cleanup;
	}
	for (size_t j = 0; j < g.n; j++) /* K1 */
		if (g.v[j].loaded && g.v[j].reached && (!retain || g.v[j].depth < retain))
			keep[j] = 1;
	if (retain && n_protected >= 2 && (rc = protect_bases(&g, heads, n_protected, keep)))
		goto cleanup;
	if (!(*commits = malloc((g.n ? g.n : 1) * sizeof(**commits))) ||
	    !(*trees = malloc((g.n ? g.n : 1) * sizeof(**trees)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		goto cleanup;
	}
	/* K4: the tree of a kept commit that is no head may be gone already: an earlier gc with a
	 * smaller horizon kept the commit by K3 alone (a later gc keeping more, or everything, would
	 * otherwise stop at that tree as a missing node). One question to the store for them all;
	 * a head's tree is never asked about, so a head without its tree stays damage. */
	size_t na = 0;
	for (size_t j = 0; j < g.n; j++)
		if ((keep[j] & 3) && g.v[j].depth > 0)
			(*trees)[na++] = g.v[j].tree;
	if (!(held = malloc(na ? na : 1))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		goto cleanup;
	}
	if ((rc = prolly__has_nodes(db, *trees, na, held)))
		goto cleanup;
	for (size_t j = 0, a = 0; j < g.n; j++) {
		if (g.v[j].is_tree)
			(*trees)[(*n_trees)++] = g.v[j].tree;
		if (!keep[j])
			continue;
		(*commits)[(*n_commits)++] = g.index.ids[j];
		if (!(keep[j] & 3)) /* K1, K2: with the tree; K3 alone: the commit only */
			continue;
		if (g.v[j].depth > 0 && !held[a++])
			continue; /* K4 */
		(*trees)[(*n_trees)++] = g.v[j].tree;
	}
cleanup:
	if (rc) {
		free(*commits);
		free(*trees);
		*commits = *trees = NULL;
		*n_commits = *n_trees = 0;
	}
	free(keep);
	free(held);
	free(g.v);
	prolly__idmap_dispose(&g.index);
	free(g.pids);
	return rc;
}
