/*
 * diff.c - the differences between two trees, in key order, proportional to the changed region.
 *
 * Algorithm (level-synchronous, batched). For each side keep an ordered list of "suspect"
 * subtrees, each known by its id and its last key (both read from the parent, so a subtree can
 * be judged without being loaded). Start with the two roots.
 *   1. When both lists are at the same level, drop every id present in both lists. Equal ids
 *      are identical subtrees with identical last keys, so one merge walk by last key finds
 *      them all.
 *   2. Load every remaining node of the taller side (both sides when the levels are equal) with
 *      ONE prolly__load call, and replace each by its children, keeping only children that can
 *      hold a key in the range. The shorter side's list is kept as it is.
 *   3. At the leaf level on both sides, merge the remaining records in key order and report
 *      REMOVED / ADDED / CHANGED within the range.
 *
 * Windows. A huge diff (two unrelated big trees) would make a level's lists large. When the
 * two lists together hold more than WINDOW entries, they are cut into key windows
 * (prev, K], where K is the last key of the WINDOW-th entry in merged order; each window is
 * processed to the leaves before the next one starts, with (prev, K] intersected into its range.
 * An entry whose subtree straddles K belongs to both neighbouring windows (it is loaded once per
 * window, each time restricted to the window). Memory is therefore bounded by about
 * height x (WINDOW + 2) nodes plus their child entries, whatever the size of the diff, and a
 * diff touching at most WINDOW nodes per level reads each level with one store call.
 *
 * Invariants:
 *   D1  (the lists' complement) the records of `from` outside the subtrees of list A equal the
 *       records of `to` outside the subtrees of list B, within the current range. Holds for the
 *       roots, is kept by step 1 (a common subtree leaves both sides), by step 2 (a node is
 *       replaced by all its children that can intersect the range) and by windowing (a window
 *       keeps every entry that can intersect it).
 *   D2  each list is in strictly increasing order of last key, and entries of one list have
 *       disjoint key ranges (within a node by decoding; across sibling nodes checked after each
 *       expansion, PROLLY_ECORRUPT otherwise).
 *   D3  an entry's id and last-key slices point into a node held by a working set of an
 *       enclosing call (or the roots' set), so they stay valid for the whole recursion below it.
 *   D4  a loaded node has the level its list is at and the last key its parent announced;
 *       otherwise the tree is corrupt (PROLLY_ECORRUPT), never a crash.
 *   D5  windows of one list level are visited in increasing key order and are disjoint, so
 *       entries are reported in strictly increasing key order.
 *   D6  (nodes, prolly__diff_nodes) a node of `to` is reported when it leaves list B unmatched
 *       and is expanded (or is a leaf), in the window that holds its last key (the last window
 *       it appears in, D5), after the recursion below it returned: so once, and after every
 *       node of its subtree that is reported. Leaves are reported without being read.
 * By D1, a key found only in A's leaves is absent from `to` (it cannot be outside B, since its
 * record would then be outside A too), so the leaf merge reports exactly the differences.
 */
#include "internal.h"

#include <stdlib.h>

#ifndef PROLLY_DIFF_WINDOW /* overridable to test the windowing with tiny windows */
#define PROLLY_DIFF_WINDOW 2048
#endif
#define WINDOW PROLLY_DIFF_WINDOW

typedef struct entry {
	const prolly_id *id; /* D3 */
	prolly_slice last;   /* last key of the subtree (D3) */
	pnode *node;         /* already loaded (a root), or NULL */
} entry;

typedef struct bound {
	prolly_slice lo, hi;
	int has_lo, lo_excl, has_hi, hi_incl;
} bound;

typedef struct dctx {
	prolly_db *db;
	prolly_diff_fn fn;
	void *payload;
	prolly__diff_node_fn node_fn; /* set: prolly__diff_nodes (D6), fn unused */
	unsigned ticks;               /* records compared since the interrupt was last asked */
} dctx;

static int cmp_slice(prolly_slice a, prolly_slice b)
{
	return prolly__keycmp(a.data, a.size, b.data, b.size);
}

static int below_lo(const bound *b, prolly_slice k)
{
	if (!b->has_lo)
		return 0;
	int c = cmp_slice(k, b->lo);
	return c < 0 || (c == 0 && b->lo_excl);
}

static int bound_empty(const bound *b)
{
	if (!b->has_lo || !b->has_hi)
		return 0;
	int c = cmp_slice(b->lo, b->hi);
	return c > 0 || (c == 0 && (b->lo_excl || !b->hi_incl));
}

static int corrupt_node(const pnode *nd, const char *what)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &nd->id);
	return prolly_set_error(PROLLY_ECORRUPT, "diff: node %s is inconsistent with its parent: %s",
	                        hex, what);
}

/* D6: is the subtree's last key within the window's upper bound (the last window it is in)? */
static int ends_in(const bound *b, prolly_slice last)
{
	if (!b->has_hi)
		return 1;
	int c = cmp_slice(last, b->hi);
	return c < 0 || (c == 0 && b->hi_incl);
}

/* Step 1: drops entries whose id is in both lists (equal ids have equal last keys, D2). */
static void remove_common(entry *A, size_t *na, entry *B, size_t *nb)
{
	size_t i = 0, j = 0, oa = 0, ob = 0;
	while (i < *na && j < *nb) {
		int c = cmp_slice(A[i].last, B[j].last);
		if (c < 0) {
			A[oa++] = A[i++];
		} else if (c > 0) {
			B[ob++] = B[j++];
		} else if (prolly_id_equal(A[i].id, B[j].id)) {
			i++; /* D1: the subtree leaves both sides */
			j++;
		} else {
			A[oa++] = A[i++];
			B[ob++] = B[j++];
		}
	}
	while (i < *na)
		A[oa++] = A[i++];
	while (j < *nb)
		B[ob++] = B[j++];
	*na = oa;
	*nb = ob;
}

/* ---- leaf merge (step 3) ---- */

typedef struct leafit {
	pnode **leaves;
	size_t nl, li;
	uint32_t i, end;
	const bound *b;
} leafit;

/* Moves to the first in-range record at or after leaf li. */
static void leafit_settle(leafit *t)
{
	for (; t->li < t->nl; t->li++) {
		const pnode *nd = t->leaves[t->li];
		uint32_t b = 0, e = nd->n;
		if (t->b->has_lo && nd->n > 0) {
			b = prolly__node_lower_bound(nd, t->b->lo.data, t->b->lo.size);
			if (t->b->lo_excl && b < nd->n && cmp_slice(prolly__node_key(nd, b), t->b->lo) == 0)
				b++;
		}
		if (t->b->has_hi && nd->n > 0) {
			e = prolly__node_lower_bound(nd, t->b->hi.data, t->b->hi.size);
			if (t->b->hi_incl && e < nd->n && cmp_slice(prolly__node_key(nd, e), t->b->hi) == 0)
				e++;
		}
		if (b < e) {
			t->i = b;
			t->end = e;
			return;
		}
	}
}

static void leafit_next(leafit *t)
{
	if (++t->i >= t->end) {
		t->li++;
		leafit_settle(t);
	}
}

static int compare_leaves(dctx *x, pnode **la, size_t na, pnode **lb, size_t nb, const bound *b)
{
	leafit a = {la, na, 0, 0, 0, b}, c = {lb, nb, 0, 0, 0, b};
	prolly_diff_entry e;
	int have_prev = 0;
	prolly_slice prev = {NULL, 0};
	leafit_settle(&a);
	leafit_settle(&c);
	while (a.li < a.nl || c.li < c.nl) {
		int cmp, rc;
		if ((rc = prolly__tick(x->db, &x->ticks)))
			return rc;
		memset(&e, 0, sizeof(e));
		if (a.li >= a.nl)
			cmp = 1;
		else if (c.li >= c.nl)
			cmp = -1;
		else
			cmp = cmp_slice(prolly__node_key(a.leaves[a.li], a.i),
			                prolly__node_key(c.leaves[c.li], c.i));
		if (cmp < 0) {
			e.kind = PROLLY_DIFF_REMOVED;
			e.key = prolly__node_key(a.leaves[a.li], a.i);
			e.old_value = prolly__node_value(a.leaves[a.li], a.i);
			leafit_next(&a);
		} else if (cmp > 0) {
			e.kind = PROLLY_DIFF_ADDED;
			e.key = prolly__node_key(c.leaves[c.li], c.i);
			e.new_value = prolly__node_value(c.leaves[c.li], c.i);
			leafit_next(&c);
		} else {
			e.key = prolly__node_key(a.leaves[a.li], a.i);
			e.old_value = prolly__node_value(a.leaves[a.li], a.i);
			e.new_value = prolly__node_value(c.leaves[c.li], c.i);
			leafit_next(&a);
			leafit_next(&c);
			if (e.old_value.size == e.new_value.size &&
			    (e.old_value.size == 0 ||
			     memcmp(e.old_value.data, e.new_value.data, e.old_value.size) == 0))
				continue;
			e.kind = PROLLY_DIFF_CHANGED;
		}
		/* D5: strictly increasing keys, unless the tree's nodes are out of order. */
		if (have_prev && cmp_slice(prev, e.key) >= 0)
			return prolly_set_error(PROLLY_ECORRUPT, "diff: keys out of order across leaves");
		prev = e.key;
		have_prev = 1;
		if ((rc = x->fn(x->payload, &e)))
			return rc;
	}
	return 0;
}

/* ---- levels and windows ---- */

static int process(dctx *x, unsigned la, entry *A, size_t na, unsigned lb, entry *B, size_t nb,
                   const bound *bd);

/* Appends the children of nd that can hold a key within b (step 2). */
static void expand(const pnode *nd, const bound *b, entry *out, size_t *n)
{
	for (uint32_t i = 0; i < nd->n; i++) {
		prolly_slice k = prolly__node_key(nd, i);
		if (below_lo(b, k))
			continue; /* every key of child i is <= k */
		/* every key of child i is > key(i-1): beyond the range when key(i-1) >= hi */
		if (b->has_hi && i > 0 && cmp_slice(prolly__node_key(nd, i - 1), b->hi) >= 0)
			break;
		out[*n].id = prolly__node_child(nd, i);
		out[*n].last = k;
		out[*n].node = NULL;
		(*n)++;
	}
}

/* Loads the entries of the side(s) at the higher level with one store call and goes down. */
static int do_window(dctx *x, unsigned la, entry *A, size_t na, unsigned lb, entry *B, size_t nb,
                     const bound *wb)
{
	int rc = 0;
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	int load_a = la >= lb, load_b = lb >= la;
	size_t nload = (load_a ? na : 0) + (load_b ? nb : 0), k = 0;
	prolly_id *ids = NULL;
	pnode **got = NULL, **nodes = NULL;
	size_t *slot = NULL;
	entry *CA = NULL, *CB = NULL;
	size_t nca = 0, ncb = 0;

	if (x->node_fn && la == 0 && lb == 0) { /* D6: the leaves `from` lacks, not read */
		for (size_t i = 0; i < nb && !rc; i++)
			if (ends_in(wb, B[i].last))
				rc = x->node_fn(x->payload, B[i].id, B[i].node);
		return rc;
	}
	ids = malloc((nload ? nload : 1) * sizeof(*ids));
	got = malloc((nload ? nload : 1) * sizeof(*got));
	slot = malloc((nload ? nload : 1) * sizeof(*slot));
	nodes = malloc((nload ? nload : 1) * sizeof(*nodes));
	if (!ids || !got || !slot || !nodes) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory in diff");
		goto cleanup;
	}
	/* nodes[0..na) are A's (when loaded), then B's */
	for (size_t i = 0, p = 0; i < na + nb; i++) {
		const entry *en = i < na ? &A[i] : &B[i - na];
		if (i < na ? !load_a : !load_b)
			continue;
		nodes[p] = en->node;
		if (!en->node) {
			ids[k] = *en->id;
			slot[k++] = p;
		}
		p++;
	}
	if (k && (rc = prolly__load(x->db, &ws, ids, k, got)))
		goto cleanup;
	for (size_t i = 0; i < k; i++)
		nodes[slot[i]] = got[i];
	for (size_t i = 0, p = 0; i < na + nb; i++) {
		const entry *en = i < na ? &A[i] : &B[i - na];
		unsigned lev = i < na ? la : lb;
		if (i < na ? !load_a : !load_b)
			continue;
		const pnode *nd = nodes[p++];
		if (nd->level != lev) { /* D4 */
			rc = corrupt_node(nd, "unexpected level");
			goto cleanup;
		}
		if (nd->n == 0 || cmp_slice(prolly__node_last_key(nd), en->last) != 0) {
			rc = corrupt_node(nd, "its last key differs from the parent's key");
			goto cleanup;
		}
	}
	pnode **an = nodes, **bn = nodes + (load_a ? na : 0);
	if (la == 0 && lb == 0) {
		rc = compare_leaves(x, an, na, bn, nb, wb);
		goto cleanup;
	}
	/* The side(s) at the higher level go one level down; the other is copied unchanged (the
	 * recursion compacts its lists in place, and ours belong to our caller's loop). */
	size_t cap_a = 0, cap_b = 0;
	if (load_a)
		for (size_t i = 0; i < na; i++)
			cap_a += an[i]->n;
	else
		cap_a = na;
	if (load_b)
		for (size_t i = 0; i < nb; i++)
			cap_b += bn[i]->n;
	else
		cap_b = nb;
	CA = malloc((cap_a ? cap_a : 1) * sizeof(*CA));
	CB = malloc((cap_b ? cap_b : 1) * sizeof(*CB));
	if (!CA || !CB) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory in diff");
		goto cleanup;
	}
	if (load_a)
		for (size_t i = 0; i < na; i++)
			expand(an[i], wb, CA, &nca);
	else
		memcpy(CA, A, (nca = na) * sizeof(*CA));
	if (load_b)
		for (size_t i = 0; i < nb; i++)
			expand(bn[i], wb, CB, &ncb);
	else
		memcpy(CB, B, (ncb = nb) * sizeof(*CB));
	/* D2 across parents: a corrupt tree could repeat or reorder keys between siblings. */
	for (size_t i = 1; i < nca + ncb; i++) {
		if (i == nca)
			continue;
		const entry *p = i < nca ? &CA[i - 1] : &CB[i - nca - 1];
		const entry *q = i < nca ? &CA[i] : &CB[i - nca];
		if (cmp_slice(p->last, q->last) >= 0) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "diff: keys out of order across sibling nodes");
			goto cleanup;
		}
	}
	rc = process(x, load_a ? la - 1 : la, CA, nca, load_b ? lb - 1 : lb, CB, ncb, wb);
	for (size_t i = 0; x->node_fn && load_b && i < nb && !rc; i++) /* D6: after the children */
		if (ends_in(wb, B[i].last))
			rc = x->node_fn(x->payload, &bn[i]->id, bn[i]);
cleanup:
	free(CA);
	free(CB);
	free(ids);
	free(got);
	free(slot);
	free(nodes);
	prolly__nodeset_dispose(&ws);
	return rc;
}

/* One past the last index in [from, n) whose last key is < K, plus the first one >= K. */
static size_t window_end(const entry *E, size_t from, size_t n, prolly_slice K)
{
	while (from < n && cmp_slice(E[from].last, K) < 0)
		from++;
	return from < n ? from + 1 : n;
}

/* First index in [from, n) whose last key is > K. */
static size_t next_start(const entry *E, size_t from, size_t n, prolly_slice K)
{
	while (from < n && cmp_slice(E[from].last, K) <= 0)
		from++;
	return from;
}

static int process(dctx *x, unsigned la, entry *A, size_t na, unsigned lb, entry *B, size_t nb,
                   const bound *bd)
{
#ifndef NDEBUG
	for (size_t i = 1; i < na; i++)
		assert(cmp_slice(A[i - 1].last, A[i].last) < 0); /* D2 */
	for (size_t i = 1; i < nb; i++)
		assert(cmp_slice(B[i - 1].last, B[i].last) < 0); /* D2 */
#endif
	if (la == lb)
		remove_common(A, &na, B, &nb);
	size_t ia = 0, ib = 0;
	prolly_slice prev = {NULL, 0};
	int have_prev = 0;
	while (ia < na || ib < nb) {
		bound wb = *bd;
		size_t ja = na, jb = nb, nxa = na, nxb = nb;
		prolly_slice K = {NULL, 0};
		if (have_prev) { /* lo = max(lo, prev exclusive) */
			int c = wb.has_lo ? cmp_slice(prev, wb.lo) : 1;
			if (c >= 0) {
				wb.lo = prev;
				wb.has_lo = 1;
				wb.lo_excl = 1;
			}
		}
		if ((na - ia) + (nb - ib) > WINDOW) {
			size_t i = ia, j = ib;
			for (size_t cnt = 0; cnt < WINDOW; cnt++) {
				if (j >= nb || (i < na && cmp_slice(A[i].last, B[j].last) <= 0))
					K = A[i++].last;
				else
					K = B[j++].last;
			}
			ja = window_end(A, ia, na, K);
			jb = window_end(B, ib, nb, K);
			nxa = next_start(A, ia, na, K);
			nxb = next_start(B, ib, nb, K);
			assert(nxa + nxb > ia + ib); /* progress */
			/* hi = min(hi, K inclusive) */
			if (!wb.has_hi || cmp_slice(K, wb.hi) < 0) {
				wb.hi = K;
				wb.has_hi = 1;
				wb.hi_incl = 1;
			}
		}
		if (!bound_empty(&wb)) {
			int rc = do_window(x, la, A + ia, ja - ia, lb, B + ib, jb - ib, &wb);
			if (rc)
				return rc;
		}
		ia = nxa;
		ib = nxb;
		prev = K;
		have_prev = 1;
	}
	return 0;
}

/* The root node of a side, loaded with at most one store call for both sides. A root that is
 * not in the store is PROLLY_ENOTFOUND, as prolly__load_root reports it. */
static int load_roots(prolly_db *db, prolly__nodeset *ws, const prolly_id *from,
                      const prolly_id *to, pnode **ra, pnode **rb)
{
	int ea = prolly_id_equal(from, &db->empty_tree), eb = prolly_id_equal(to, &db->empty_tree);
	if (!ea && !eb) {
		prolly_id ids[2] = {*from, *to};
		pnode *got[2];
		int rc = prolly__load_ex(db, ws, ids, 2, got, PROLLY__LOAD_ROOTS);
		if (rc)
			return rc;
		*ra = got[0];
		*rb = got[1];
		return 0;
	}
	int rc = prolly__load_root(db, ws, from, ra);
	if (!rc)
		rc = prolly__load_root(db, ws, to, rb);
	return rc;
}

/* Loads both roots and walks the two trees from them within bd. */
static int walk_roots(dctx *x, prolly__nodeset *ws, const prolly_id *from, const prolly_id *to,
                      const bound *bd)
{
	pnode *ra = NULL, *rb = NULL;
	int rc = load_roots(x->db, ws, from, to, &ra, &rb);
	if (rc)
		return rc;
	entry ea = {&ra->id, {NULL, 0}, ra}, eb = {&rb->id, {NULL, 0}, rb};
	if (ra->n)
		ea.last = prolly__node_last_key(ra);
	if (rb->n)
		eb.last = prolly__node_last_key(rb);
	/* An empty root is an empty list: it holds no records. */
	return process(x, ra->level, &ea, ra->n ? 1 : 0, rb->level, &eb, rb->n ? 1 : 0, bd);
}

int prolly_diff(prolly_db *db, const prolly_id *from, const prolly_id *to,
                const prolly_range *range, prolly_diff_fn fn, void *payload)
{
	int rc = 0;
	bound bd;
	dctx x = {db, fn, payload, NULL, 0};
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	memset(&bd, 0, sizeof(bd));
	if (!db || !from || !to || !fn) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_diff: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__range_check(range)))
		goto cleanup;
	if (range) {
		if (range->prefix.size || range->reverse) {
			rc = prolly_set_error(PROLLY_EINVAL,
			                      "prolly_diff: prefix and reverse ranges are not supported");
			goto cleanup;
		}
		if ((range->has_lo && range->lo.size && !range->lo.data) ||
		    (range->has_hi && range->hi.size && !range->hi.data)) {
			rc = prolly_set_error(PROLLY_EINVAL, "prolly_diff: range bound has size but no data");
			goto cleanup;
		}
		bd.has_lo = range->has_lo != 0;
		bd.lo = range->lo;
		bd.lo_excl = range->lo_exclusive != 0;
		bd.has_hi = range->has_hi != 0;
		bd.hi = range->hi;
		bd.hi_incl = range->hi_inclusive != 0;
		if (!bd.lo.data)
			bd.lo.data = "";
		if (!bd.hi.data)
			bd.hi.data = "";
	}
	if (prolly_id_equal(from, to) || bound_empty(&bd))
		goto cleanup; /* identical trees: nothing to read */
	rc = walk_roots(&x, &ws, from, to, &bd);
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}

/* The nodes of `to` that `from` lacks (D6): the walk above with no range, reporting nodes
 * instead of records, leaves unread. A node of `to` whose id is in `from` is skipped with its
 * whole subtree. */
int prolly__diff_nodes(prolly_db *db, const prolly_id *from, const prolly_id *to,
                       prolly__diff_node_fn fn, void *payload)
{
	int rc = 0;
	bound bd;
	dctx x = {db, NULL, payload, fn, 0};
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	memset(&bd, 0, sizeof(bd));
	if (prolly_id_equal(from, to))
		goto cleanup;
	rc = walk_roots(&x, &ws, from, to, &bd);
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}
