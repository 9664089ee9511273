/*
 * read.c - point lookups, batched lookups, counts, rank/select and tree statistics.
 *
 * A lookup descends from the root: in an internal node the child holding key k is the first
 * item whose key (its subtree's last key) is >= k; past the last item, k is beyond the tree.
 * get_many descends all keys together, one store call per level.
 */
#include "internal.h"

#include <stdlib.h>

int prolly_get(prolly_buf *out, prolly_db *db, const prolly_id *root, const void *key, size_t klen)
{
	prolly__nodeset ws;
	pnode *nd;
	int rc;
	prolly__nodeset_init(&ws);
	if (!out || !db || !root || (!key && klen)) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_get: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__load_root(db, &ws, root, &nd)))
		goto cleanup;
	while (nd->level > 0) {
		uint32_t i = prolly__node_lower_bound(nd, key, klen);
		if (i == nd->n) {
			rc = prolly_set_error(PROLLY_ENOTFOUND, "key not found");
			goto cleanup;
		}
		if ((rc = prolly__load1(db, &ws, prolly__node_child(nd, i), &nd)))
			goto cleanup;
	}
	uint32_t i = prolly__node_lower_bound(nd, key, klen);
	prolly_slice k;
	if (i == nd->n ||
	    (k = prolly__node_key(nd, i), prolly__keycmp(k.data, k.size, key, klen) != 0)) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "key not found");
		goto cleanup;
	}
	prolly_slice v = prolly__node_value(nd, i);
	rc = prolly__buf_set(out, v.data, v.size);
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}

/*
 * get_many in windows. The requests, in key order, go down the tree together, but a level's
 * children are loaded a window at a time (at most prolly__get_many_window ids per store call),
 * and the requests of one window go all the way down before the next window is loaded; a
 * window's nodes are let go (to the cache, which its budget bounds) once its requests have their
 * values. The values found are copied out, since the answers go to the callback in request order
 * at the end. So:
 *   GM1 the nodes held at once are at most one window per level below the root, whatever n (a
 *       million random keys fall in nearly every leaf: before, they held the tree's leaves, 0.9
 *       GB in a PostgreSQL backend at 10M records: docs/benchmarks/sql.md, "get_many's memory,
 *       and a backend's first calls");
 *   GM2 a level whose children fit in one window is read with one store call, as before: a
 *       request of up to a window of leaves (16,384: 10k random keys at 10M records need about
 *       9,700) costs one call per level. A smaller window cost the extension's reads of 10k keys
 *       at 10M about a tenth more (2,048 ids per index scan, the ids far apart in the index);
 *   GM3 the memory of the answers is the values' bytes (and a req per key): what was asked for.
 */
#define GET_MANY_WINDOW 16384

size_t prolly__get_many_window = GET_MANY_WINDOW;

typedef struct req {
	const prolly_slice *key;
	size_t index;
	pnode *node;  /* current node on the way down; NULL once known absent */
	uint32_t pos; /* the child's position in node */
	int found;
	size_t off, len; /* the value's bytes in gm.vals, once found */
} req;

typedef struct gm {
	prolly_db *db;
	req *rq;
	prolly_id *ids; /* a window's child ids */
	size_t window;
	prolly_buf vals; /* GM3 */
	unsigned ticks;
} gm;

/* The position of r's key in its node; searched from *last_pos when *last (the node of the
 * request before it in this pass) is the same node, every item before that being less than r's
 * key (requests are in key order). */
static uint32_t req_bound(const req *r, const pnode **last, uint32_t *last_pos)
{
	uint32_t pos = *last == r->node ? prolly__node_lower_bound_from(r->node, r->key->data,
	                                                                r->key->size, *last_pos)
	                                : prolly__node_lower_bound(r->node, r->key->data, r->key->size);
	*last = r->node;
	*last_pos = pos;
	return pos;
}

/* The leaves of rq[a, b): each request's value copied into g->vals if its key is there. */
static int leaves(gm *g, size_t a, size_t b)
{
	const pnode *last = NULL;
	uint32_t last_pos = 0;
	for (size_t i = a; i < b; i++) {
		req *r = &g->rq[i];
		int rc;
		if ((rc = prolly__tick(g->db, &g->ticks)))
			return rc;
		if (!r->node)
			continue;
		uint32_t j = req_bound(r, &last, &last_pos);
		if (j == r->node->n)
			continue;
		prolly_slice k = prolly__node_key(r->node, j);
		if (prolly__keycmp(k.data, k.size, r->key->data, r->key->size) != 0)
			continue;
		prolly_slice v = prolly__node_value(r->node, j);
		r->off = g->vals.size;
		r->len = v.size;
		r->found = 1;
		if ((rc = prolly__buf_put(&g->vals, v.data, v.size)))
			return rc;
	}
	return 0;
}

/* Takes rq[a, b), whose nodes are at `level` (or NULL), down to the leaves a window at a time. */
static int descend(gm *g, unsigned level, size_t a, size_t b)
{
	int rc = 0;
	if (level == 0)
		return leaves(g, a, b);
	for (size_t i = a; i < b && !rc;) {
		prolly__nodeset ws;
		const pnode *last = NULL;
		uint32_t last_pos = 0;
		size_t nid = 0, j;
		for (j = i; j < b; j++) { /* the requests whose children fit in this window */
			req *r = &g->rq[j];
			if ((rc = prolly__tick(g->db, &g->ticks)))
				return rc;
			if (!r->node)
				continue;
			uint32_t pos = req_bound(r, &last, &last_pos);
			if (pos == r->node->n) {
				r->node = NULL;
				continue;
			}
			const prolly_id *c = prolly__node_child(r->node, pos);
			if (nid == 0 || !prolly_id_equal(&g->ids[nid - 1], c)) {
				if (nid == g->window)
					break;
				g->ids[nid++] = *c;
			}
			r->pos = pos;
		}
		assert(nid <= g->window && j > i); /* GM1, and each window takes a request */
		prolly__nodeset_init(&ws);
		rc = prolly__load(g->db, &ws, g->ids, nid, NULL);
		for (size_t k = i; k < j && !rc; k++)
			if (g->rq[k].node)
				g->rq[k].node = prolly__nodeset_find(
				    &ws, prolly__node_child(g->rq[k].node, g->rq[k].pos));
		if (!rc)
			rc = descend(g, level - 1, i, j);
		prolly__nodeset_dispose(&ws); /* GM1 */
		i = j;
	}
	return rc;
}

int prolly_get_many(prolly_db *db, const prolly_id *root, const prolly_slice *keys, size_t n,
                    prolly_value_fn fn, void *payload)
{
	prolly__nodeset ws;
	gm g = {db, NULL, NULL, 0, PROLLY_BUF_INIT, 0};
	size_t *order = NULL;
	pnode *rootn;
	int rc;
	prolly__nodeset_init(&ws);
	if (!db || !root || !fn || (!keys && n)) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_get_many: NULL argument");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		if (keys[i].size && !keys[i].data) {
			rc = prolly_set_error(PROLLY_EINVAL, "prolly_get_many: key %zu has a size but no data",
			                      i);
			goto cleanup;
		}
	if ((rc = prolly__load_root(db, &ws, root, &rootn)))
		goto cleanup;
	if (n == 0)
		goto cleanup;
	g.window = prolly__get_many_window ? prolly__get_many_window : 1;
	g.rq = calloc(n, sizeof(*g.rq));
	g.ids = malloc((n < g.window ? n : g.window) * sizeof(*g.ids));
	order = malloc(n * sizeof(*order));
	if (!g.rq || !g.ids || !order) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory for %zu lookups", n);
		goto cleanup;
	}
	if ((rc = prolly__key_order(order, keys, sizeof(*keys), n)))
		goto cleanup;
	for (size_t i = 0; i < n; i++) { /* rq in key order */
		g.rq[i].key = &keys[order[i]];
		g.rq[i].index = order[i];
		g.rq[i].node = rootn;
	}
	if ((rc = descend(&g, rootn->level, 0, n)))
		goto cleanup;
	for (size_t i = 0; i < n; i++) /* order becomes the inverse: where key i's request is */
		order[g.rq[i].index] = i;
	for (size_t i = 0; i < n; i++) {
		const req *r = &g.rq[order[i]];
		if ((rc = prolly__tick(db, &g.ticks)))
			goto cleanup;
		rc = r->found ? fn(payload, i, g.vals.ptr + r->off, r->len) : fn(payload, i, NULL, 0);
		if (rc)
			goto cleanup;
	}
cleanup:
	free(g.rq);
	free(g.ids);
	free(order);
	prolly_buf_dispose(&g.vals);
	prolly__nodeset_dispose(&ws);
	return rc;
}

int prolly_count(uint64_t *out, prolly_db *db, const prolly_id *root)
{
	prolly__nodeset ws;
	pnode *nd;
	if (!out || !db || !root)
		return prolly_set_error(PROLLY_EINVAL, "prolly_count: NULL argument");
	prolly__nodeset_init(&ws);
	int rc = prolly__load_root(db, &ws, root, &nd);
	if (!rc)
		*out = nd->count;
	prolly__nodeset_dispose(&ws);
	return rc;
}

/* rank and select walk by the counts a parent gives its children. A child loaded on the way down
 * must hold what its parent counts: in a forged tree whose nodes all hash right, a child with
 * fewer records would send select past the child's end, and give rank a wrong answer. (The
 * counts of the subtrees beside the path are not read, so not checked: such a lie moves the
 * answer, within the tree.) */
static int count_checked(const pnode *child, const prolly_id *id, uint64_t counted)
{
	if (child->count == counted)
		return 0;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ECORRUPT,
	                        "node %s holds %llu records where its parent counts %llu", hex,
	                        (unsigned long long)child->count, (unsigned long long)counted);
}

int prolly_rank(uint64_t *out, prolly_db *db, const prolly_id *root, const void *key, size_t klen)
{
	prolly__nodeset ws;
	pnode *nd;
	uint64_t rank = 0;
	int rc;
	prolly__nodeset_init(&ws);
	if (!out || !db || !root || (!key && klen)) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_rank: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__load_root(db, &ws, root, &nd)))
		goto cleanup;
	while (nd->level > 0) {
		uint32_t i = prolly__node_lower_bound(nd, key, klen);
		for (uint32_t j = 0; j < i; j++)
			rank += prolly__node_child_count(nd, j);
		if (i == nd->n)
			goto done;
		const prolly_id *child = prolly__node_child(nd, i);
		uint64_t c = prolly__node_child_count(nd, i);
		if ((rc = prolly__load1(db, &ws, child, &nd)) || (rc = count_checked(nd, child, c)))
			goto cleanup;
	}
	rank += prolly__node_lower_bound(nd, key, klen);
done:
	*out = rank;
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}

int prolly_select(prolly_buf *key, prolly_buf *value, prolly_db *db, const prolly_id *root,
                  uint64_t index)
{
	prolly__nodeset ws;
	pnode *nd;
	int rc;
	prolly__nodeset_init(&ws);
	if (!db || !root) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_select: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__load_root(db, &ws, root, &nd)))
		goto cleanup;
	if (index >= nd->count) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "index %llu is past the %llu records",
		                      (unsigned long long)index, (unsigned long long)nd->count);
		goto cleanup;
	}
	while (nd->level > 0) {
		uint32_t j = 0;
		uint64_t c;
		while ((c = prolly__node_child_count(nd, j)) <= index) {
			index -= c;
			j++;
		}
		const prolly_id *child = prolly__node_child(nd, j);
		if ((rc = prolly__load1(db, &ws, child, &nd)) || (rc = count_checked(nd, child, c)))
			goto cleanup;
	}
	prolly_slice k = prolly__node_key(nd, (uint32_t)index),
	             v = prolly__node_value(nd, (uint32_t)index);
	/* Both grown before either is set: a failure leaves both as they were. */
	if ((key && (rc = prolly__buf_grow(key, k.size + 1))) ||
	    (value && (rc = prolly__buf_grow(value, v.size + 1))))
		goto cleanup;
	if (key)
		(void)prolly__buf_set(key, k.data, k.size); /* grown: cannot fail */
	if (value)
		(void)prolly__buf_set(value, v.data, v.size);
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}

#define STATS_BATCH 4096

/* The walk of prolly_tree_stats_get, level by level, STATS_BATCH nodes per store read. With seen
 * (prolly_trees_verify) the ids in seen are not read, and every id read is added to it: a
 * subtree met before (a part an earlier version shares) is skipped whole, and st counts only
 * the nodes read. A root in seen reads nothing (st stays zero). */
static int tree_walk(prolly_tree_stats *st, prolly_db *db, const prolly_id *root, int verify,
                     prolly__idmap *seen)
{
	prolly__nodeset ws;
	prolly_buf cur = PROLLY_BUF_INIT, next = PROLLY_BUF_INIT; /* arrays of ids */
	pnode *nd;
	size_t entry;
	int rc;
	memset(st, 0, sizeof(*st));
	prolly__nodeset_init(&ws);
	if (seen && prolly__idmap_find(seen, root) != PROLLY__IDMAP_NONE)
		return 0;
	/* With verify the root too is read from the store (a missing one is PROLLY_ENOTFOUND, as
	 * the caller named it), so the loop below finds it in ws. */
	if ((rc = verify
	              ? prolly__load_ex(db, &ws, root, 1, &nd, PROLLY__LOAD_FRESH | PROLLY__LOAD_ROOTS)
	              : prolly__load_root(db, &ws, root, &nd)))
		goto cleanup;
	st->records = nd->count;
	st->height = nd->level + 1;
	if ((rc = prolly__buf_put(&cur, root->bytes, PROLLY_ID_SIZE)))
		goto cleanup;
	int first = 1; /* the first batch is the root, in ws already */
	while (cur.size) {
		size_t nids = cur.size / PROLLY_ID_SIZE;
		const prolly_id *ids = (const prolly_id *)(const void *)cur.ptr;
		next.size = 0;
		for (size_t off = 0; off < nids; off += STATS_BATCH) {
			size_t m = PROLLY_MIN(STATS_BATCH, nids - off);
			if (!first)
				prolly__nodeset_dispose(&ws);
			first = 0;
			if ((rc = prolly__load_ex(db, &ws, ids + off, m, NULL,
			                          verify ? PROLLY__LOAD_FRESH : 0)))
				goto cleanup;
			for (size_t i = 0; i < m; i++) {
				nd = prolly__nodeset_find(&ws, &ids[off + i]);
				st->nodes++;
				st->bytes += nd->size;
				if (seen && (rc = prolly__idmap_add(seen, &ids[off + i], &entry)) < 0)
					goto cleanup;
				rc = 0;
				if (nd->level == 0) {
					st->leaves++;
					continue;
				}
				for (uint32_t j = 0; j < nd->n; j++) {
					const prolly_id *child = prolly__node_child(nd, j);
					if (seen && prolly__idmap_find(seen, child) != PROLLY__IDMAP_NONE)
						continue;
					if ((rc = prolly__buf_put(&next, child->bytes, PROLLY_ID_SIZE)))
						goto cleanup;
				}
			}
		}
		prolly_buf tmp = cur;
		cur = next;
		next = tmp;
	}
cleanup:
	prolly_buf_dispose(&cur);
	prolly_buf_dispose(&next);
	prolly__nodeset_dispose(&ws);
	return rc;
}

int prolly_tree_stats_get(prolly_tree_stats *out, prolly_db *db, const prolly_id *root, int verify)
{
	prolly_tree_stats st;
	int rc;
	if ((rc = prolly__tree_stats_check(out)))
		return rc;
	if (!db || !root)
		return prolly_set_error(PROLLY_EINVAL, "prolly_tree_stats_get: NULL argument");
	if ((rc = tree_walk(&st, db, root, verify, NULL)) == 0)
		prolly__tree_stats_put(out, &st);
	return rc;
}

int prolly_trees_verify(prolly_db *db, const prolly_id *roots, size_t n, prolly_tree_verify_fn fn,
                        void *payload)
{
	prolly__idmap seen;
	int rc = 0;
	if (!db || (n && !roots))
		return prolly_set_error(PROLLY_EINVAL, "prolly_trees_verify: NULL db or roots");
	prolly__idmap_init(&seen);
	for (size_t i = 0; i < n && !rc; i++) {
		prolly_tree_stats st;
		int status = tree_walk(&st, db, &roots[i], 1, &seen);
		if (status && status != PROLLY_ENOTFOUND) {
			rc = status;
			break;
		}
		st.version = PROLLY_TREE_STATS_VERSION;
		if (fn)
			rc = fn(payload, i, status, &st);
	}
	prolly__idmap_dispose(&seen);
	return rc;
}
