/*
 * edit.c - batch edits whose cost follows the number of edits, not the size of the tree.
 *
 * The edits are applied level by level, bottom up. At every level they are key-ordered item
 * edits: at the leaves, the caller's puts and deletes; above, "delete the entry of old child X
 * (keyed by X's last key)" and "put an entry for new child N (N's last key, id, count)".
 *
 * At one level, a run starts at the old node X holding the next edit. Because every node begins
 * right after a boundary (chunk.c, C5), a fresh chunker started at X sees exactly what the
 * original chunker saw there. The run feeds X's items merged with the edits that belong to X,
 * and at X's end checks whether the chunker has just made a node (nothing pending). If so the
 * new sequence is back in step with the old one: every following old node is unchanged until the
 * next edit, and is reused by id. If not, the run goes on into the next old node, even one with
 * no edits, until the boundaries line up again or the level ends.
 *
 * Invariants:
 *   E1  edits at every level are strictly increasing by key.
 *   E2  a run starts at the first item of an old node, with an empty chunker.
 *   E3  the edits that belong to old node X are those with key <= last key of X; for the last
 *       node of a level, all remaining edits.
 *   E4  each old node a run consumed yields a parent delete of its last key, each node made a
 *       parent put; a put and a delete of the same key leave only the put.
 *   E5  the root is the single node of the top level, collapsed while it is an internal node with
 *       one child; when the top level has several nodes, new levels are built above it. Together
 *       with build.c B2 this gives the canonical shape: the lowest level with exactly one node.
 *       A single-child node that the collapse skips was made at its level before the edit knew
 *       it would be the top, and has joined the txn: it is stored, referenced by nothing, until
 *       a gc removes it (one small node per level a tree loses; the root id is not affected).
 *   E6  a probe (the leaf level run with boundaries only, before the real edit) makes no node,
 *       reads nothing from the store and leaves no edit behind: it only names leaves to load.
 *   E7  wherever a run is to add old items of X while the chunker's running size is X's own
 *       before them (prolly__prefix_size; always so at X's first item with nothing pending, and
 *       still so after edits that keep every item's size, as an update of a value by one of the
 *       same length does), X's items up to the next edit's place (at most all but X's last) are
 *       added in one go without the boundary rule: the rule depends only on an item's key and
 *       size and the running size, all as they were when X was made (C5), and it ended no chunk
 *       among them then (chunker.c, H4).
 *   E8  an edit of at least MAKER_EDITS edits on a handle that may use threads hands its new
 *       nodes to a maker (maker.c): a second thread takes their memory, encodes and hashes them
 *       while this one merges the next items. Their parent entries are pushed in place, empty,
 *       and filled in when the level ends (feeder_collect), before the entries are sorted; the
 *       nodes join the txn in the order they were made, on this thread.
 *   E9  an edit of more than prolly__edit_batch distinct keys (EDIT_BATCH, 65,536), or of more than
 *       EDIT_BATCH_BYTES of keys and values, is applied a key-ordered batch at a time, each batch
 *       to the tree the one before made, and the txn's nodes are written (prolly__txn_flush:
 *       unreferenced until the txn commits, T4 and T8 of txn.c) before the next batch is made: the
 *       nodes an edit reads and holds at once are a batch's, whatever n (a million random updates
 *       at 10M records held 1.6 GB in `prolly apply` before: docs/benchmarks/engine.md, "An edit of
 *       a million keys"). The tree is the one a single pass makes (the same records make the same
 *       tree); the nodes of the trees between batches that the next replaces (their roots, the
 *       nodes at their edges) are written too, unreferenced, for gc to take.
 *
 * Reads: prefetch loads the paths of all leaf edits, one store call per level. On a store
 * whose reads are round trips (PROLLY_STORE_REMOTE) that includes every leaf, and when an edit
 * changes a leaf's size the probe (E6) finds the further leaves every run will reach, loaded
 * together (one store call per probe round), so the edit itself rarely reads a node on its own
 * and reads no node it does not use. (It used to load the next sibling of every such leaf as
 * well, a guess that at 10M records made an insert batch read 70% more nodes than it used,
 * for no fewer store calls: docs/benchmarks/engine.md, "The leaves of an edit".) On a local
 * store the leaves' call asks only for those the cache lacks (prolly__cache_has, which touches
 * no node), and the edit takes the cached ones as it reaches them: taking each into the
 * working set first touched every leaf's memory twice, the second time out of the processor's
 * caches again (the same section), and the leaves a run reaches beyond are read as it
 * reaches them, as cheap there as a batch.
 */
#include "internal.h"

#include <stdlib.h>

/* E9: the most distinct keys, and bytes of keys and values, an edit applies in one batch. */
#define EDIT_BATCH 65536
#define EDIT_BATCH_BYTES ((size_t)16 << 20)

size_t prolly__edit_batch = EDIT_BATCH;

/* E8: the fewest edits for which an edit starts a node maker (a thread start costs about as
 * much as making a few nodes). */
#define MAKER_EDITS 64

typedef struct ledit {
	prolly_slice key;
	int del;
	prolly_slice val; /* leaf puts */
	prolly_id id;     /* internal puts */
	uint64_t count;
} ledit;

typedef struct ledits {
	ledit *v;
	size_t n, cap;
} ledits;

typedef struct pathent {
	pnode *node;
	uint32_t idx;
} pathent;

typedef struct editor {
	prolly_db *db;
	prolly_txn *txn;
	prolly__nodeset ws;
	pnode *root;
	unsigned height; /* root level */
	pathent path[PROLLY_MAX_LEVEL + 1];
	int probe;       /* E6: edit_level only finds the nodes a run would read */
	prolly_buf want; /* ids a probe found missing, PROLLY_ID_SIZE bytes each */
	size_t *redo;    /* a probe's runs (their first edits) to run again, or NULL: every run */
	size_t nredo;
	size_t *stopped; /* the runs the probe stopped at a node not loaded */
	size_t nstopped;
	prolly__maker *maker; /* E8: makes the new nodes on a second thread, or NULL */
} editor;

static int push_edit(ledits *e, const ledit *x)
{
	if (PROLLY__GROW(e->v, e->cap, e->n + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory collecting %zu edits", e->n + 1);
	e->v[e->n++] = *x;
	return 0;
}

/*
 * E4: the parent edits in key order (E1), keeping the put where a key has both. A level's
 * deletes (one per old node its runs consumed, reached in key order) come in key order, and so
 * do its puts (one per node made, in the order made): one merge of the two sequences orders
 * them all, where a sort cost 2% of a 10k-edit batch at 10M records.
 */
static int normalize(ledits *e)
{
	size_t n = e->n, dels = 0;
	if (n < 2)
		return 0;
	ledit *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu edits", n);
	for (size_t i = 0; i < n; i++)
		dels += e->v[i].del != 0;
	size_t d = 0, p = dels; /* tmp: the deletes, then the puts, each in their order */
	for (size_t i = 0; i < n; i++)
		tmp[e->v[i].del ? d++ : p++] = e->v[i];
	size_t u = 0;
	d = 0;
	p = dels;
	while (d < dels || p < n) {
		int c = d == dels ? 1
		        : p == n  ? -1
		                  : prolly__keycmp(tmp[d].key.data, tmp[d].key.size, tmp[p].key.data,
		                                   tmp[p].key.size);
		if (c == 0)
			d++; /* the put stands for both */
		e->v[u] = c < 0 ? tmp[d++] : tmp[p++];
		assert(u == 0 || prolly__keycmp(e->v[u - 1].key.data, e->v[u - 1].key.size,
		                                e->v[u].key.data, e->v[u].key.size) < 0); /* E1 */
		u++;
	}
	e->n = u;
	free(tmp);
	return 0;
}

/* Path from the root down to `level` towards key (clamped to the last child: appends). */
static int descend(editor *ed, const void *key, size_t klen, unsigned level)
{
	pnode *nd = ed->root;
	for (unsigned lev = ed->height; lev > level; lev--) {
		uint32_t i = prolly__node_lower_bound(nd, key, klen);
		if (i == nd->n)
			i = nd->n - 1;
		ed->path[lev].node = nd;
		ed->path[lev].idx = i;
		int rc = prolly__load1(ed->db, &ed->ws, prolly__node_child(nd, i), &nd);
		if (rc)
			return rc;
	}
	ed->path[level].node = nd;
	ed->path[level].idx = 0;
	return 0;
}

/* Whether the node at path[level] is the last node of its level. */
static int is_last(const editor *ed, unsigned level)
{
	for (unsigned lev = level + 1; lev <= ed->height; lev++)
		if (ed->path[lev].idx + 1 < ed->path[lev].node->n)
			return 0;
	return 1;
}

/* Moves path[level] to the next node of the level. Returns 1 if moved, 0 at the end; a probe
 * also stops (0) at a node not loaded yet, which it records (E6). */
static int advance(editor *ed, unsigned level, int *rc)
{
	unsigned lev = level + 1;
	while (lev <= ed->height && ed->path[lev].idx + 1 >= ed->path[lev].node->n)
		lev++;
	if (lev > ed->height)
		return 0;
	ed->path[lev].idx++;
	while (lev > level) {
		pnode *child;
		pathent *p = &ed->path[lev];
		const prolly_id *id = prolly__node_child(p->node, p->idx);
		if (ed->probe) {
			if (!(child = prolly__peek(ed->db, &ed->ws, id))) {
				*rc = prolly__buf_put(&ed->want, id, PROLLY_ID_SIZE);
				return 0;
			}
		} else if ((*rc = prolly__load1(ed->db, &ed->ws, id, &child))) {
			return 0;
		}
		lev--;
		ed->path[lev].node = child;
		ed->path[lev].idx = 0;
	}
	return 1;
}

typedef struct feeder {
	prolly__chunker ch;
	ledits *parent;
	int probe; /* E6: only the boundary rule runs, on s, the size since the last boundary */
	size_t s;
	size_t *queued; /* E8: queued[t], the parent entry of the maker's ticket t */
	size_t nqueued, capqueued;
} feeder;

/* A probe's chunker: the same boundary decisions as prolly__chunker_leaf/_child (chunk.c). */
static int probe_item(feeder *f, unsigned level, prolly_slice k, size_t r)
{
	f->s += r;
	if (prolly__boundary(&f->ch.rule, level, k.data, k.size, f->s, r))
		f->s = 0;
	return 0;
}

/* A feeder for `level` whose made nodes become entries of parent (a probe: parent NULL). */
static void feeder_init(feeder *f, prolly_txn *txn, unsigned level, ledits *parent, int probe)
{
	prolly__chunker_init(&f->ch, txn, level);
	f->parent = parent;
	f->probe = probe;
	f->s = 0;
	f->queued = NULL;
	f->nqueued = f->capqueued = 0;
}

static void feeder_dispose(feeder *f)
{
	prolly__chunker_dispose(&f->ch);
	free(f->queued);
}

static int feeder_empty(const feeder *f)
{
	return f->probe ? f->s == 0 : prolly__chunker_empty(&f->ch);
}

static int made_node(feeder *f, pnode *made)
{
	ledit up;
	memset(&up, 0, sizeof(up));
	if (f->ch.queued) { /* E8: an entry to fill in when the maker's node is collected */
		if (PROLLY__GROW(f->queued, f->capqueued, f->nqueued + 1, 64))
			return prolly_set_error(PROLLY_ENOMEM, "out of memory collecting new nodes");
		f->queued[f->nqueued++] = f->parent->n;
		return push_edit(f->parent, &up);
	}
	if (!made)
		return 0;
	up.key = prolly__node_last_key(made);
	up.id = made->id;
	up.count = made->count;
	return push_edit(f->parent, &up);
}

static int feed_old(feeder *f, const pnode *x, uint32_t j)
{
	pnode *made;
	prolly_slice k = prolly__node_key(x, j);
	int rc;
	if (f->probe)
		return probe_item(f, x->level, k,
		                  x->level == 0
		                      ? prolly__leaf_item_size(k.size, prolly__node_value(x, j).size)
		                      : prolly__child_item_size(k.size));
	if (x->level == 0) {
		prolly_slice v = prolly__node_value(x, j);
		rc = prolly__chunker_leaf(&f->ch, k.data, k.size, v.data, v.size, &made);
	} else {
		rc = prolly__chunker_child(&f->ch, k.data, k.size, prolly__node_child(x, j),
		                           prolly__node_child_count(x, j), &made);
	}
	return rc ? rc : made_node(f, made);
}

/*
 * E7: where x's items from j on may go in without the boundary rule: up to the place of the next
 * edit (next, NULL when x has none left), never x's last item; j when they may not, the
 * feeder's running size not being x's own before item j (an edit before j changed the size of
 * the chunk, or a chunk ended inside x).
 */
static uint32_t in_step_until(const feeder *f, const pnode *x, uint32_t j, const ledit *next)
{
	size_t s = f->probe ? f->s : f->ch.s;
	if (j + 2 > x->n || s != prolly__prefix_size(x, j))
		return j;
	uint32_t end = x->n - 1;
	if (next) {
		prolly_slice k = prolly__node_key(x, j + 1);
		if (prolly__keycmp(k.data, k.size, next->key.data, next->key.size) >= 0)
			return j; /* the next edit comes right after j */
		uint32_t p = prolly__node_lower_bound(x, next->key.data, next->key.size);
		if (p < end)
			end = p;
	}
	return end;
}

/* E7: items [from, to) of x, which in_step_until allowed. */
static int feed_old_items(feeder *f, const pnode *x, uint32_t from, uint32_t to)
{
	if (f->probe) {
		f->s += prolly__prefix_size(x, to) - prolly__prefix_size(x, from);
		return 0;
	}
	return prolly__chunker_items(&f->ch, x, from, to);
}

static int feed_edit(feeder *f, unsigned level, const ledit *e)
{
	pnode *made;
	int rc;
	if (e->del)
		return 0;
	if (f->probe)
		return probe_item(f, level, e->key,
		                  level == 0 ? prolly__leaf_item_size(e->key.size, e->val.size)
		                             : prolly__child_item_size(e->key.size));
	if (level == 0)
		rc = prolly__chunker_leaf(&f->ch, e->key.data, e->key.size, e->val.data, e->val.size,
		                          &made);
	else
		rc = prolly__chunker_child(&f->ch, e->key.data, e->key.size, &e->id, e->count, &made);
	return rc ? rc : made_node(f, made);
}

/* E8: the nodes the maker made for this feeder, added to the txn (in the order they were made)
 * and entered in their parent entries. Releases every collected node, even after a failure. */
static int feeder_collect(feeder *f)
{
	pnode **nodes;
	size_t n;
	if (!f->ch.maker)
		return 0;
	int rc = prolly__maker_collect(f->ch.maker, &nodes, &n);
	assert(n == f->nqueued); /* K1 */
	for (size_t t = 0; t < n; t++) {
		pnode *nd = nodes[t];
		if (!nd)
			continue;
		int r = prolly__txn_add_node(f->ch.txn, nd, &nd);
		if (r) {
			rc = rc ? rc : r;
			continue;
		}
		ledit *up = &f->parent->v[f->queued[t]];
		up->key = prolly__node_last_key(nd);
		up->id = nd->id;
		up->count = nd->count;
	}
	f->nqueued = 0;
	return rc;
}

/* Applies the sorted edits `in` to `level`, producing the parent level's edits in `out`; a
 * probe (ed->probe, out NULL) only collects in ed->want the nodes the runs would read. */
static int edit_level(editor *ed, unsigned level, const ledits *in, ledits *out)
{
	feeder f;
	int rc = 0;
	size_t i = 0;
	feeder_init(&f, ed->txn, level, out, ed->probe);
	if (!f.probe)
		f.ch.maker = ed->maker;
	for (size_t r = 0; f.probe && ed->redo ? r < ed->nredo : i < in->n; r++) {
		size_t first = f.probe && ed->redo ? ed->redo[r] : i;
		i = first;
		if ((rc = descend(ed, in->v[i].key.data, in->v[i].key.size, level)))
			goto cleanup;
		assert(feeder_empty(&f)); /* E2 */
		for (;;) {
			pnode *x = ed->path[level].node;
			int last = is_last(ed, level);
			prolly_slice bound = x->n ? prolly__node_last_key(x) : (prolly_slice){NULL, 0};
			if (x->n && !f.probe) {
				ledit del;
				memset(&del, 0, sizeof(del));
				del.key = bound;
				del.del = 1;
				if ((rc = push_edit(out, &del)))
					goto cleanup;
			}
			uint32_t j = 0;
			size_t asked = SIZE_MAX; /* the edit have_edit was last worked out for */
			int have_edit = 0;
			for (;;) { /* E3: merge x's items with its edits */
				if (asked != i) {
					asked = i;
					have_edit = i < in->n &&
					            (last || prolly__keycmp(in->v[i].key.data, in->v[i].key.size,
					                                    bound.data, bound.size) <= 0);
				}
				if (!have_edit && j == x->n)
					break;
				int c;
				if (!have_edit)
					c = -1;
				else if (j == x->n)
					c = 1;
				else {
					prolly_slice k = prolly__node_key(x, j);
					c = prolly__keycmp(k.data, k.size, in->v[i].key.data, in->v[i].key.size);
				}
				if (c < 0) {
					uint32_t to = in_step_until(&f, x, j, have_edit ? &in->v[i] : NULL);
					if (to > j + 1) { /* E7 */
						rc = feed_old_items(&f, x, j, to);
						j = to;
					} else {
						rc = feed_old(&f, x, j++);
					}
				} else {
					if (c == 0)
						j++; /* the edit replaces or deletes the old item */
					rc = feed_edit(&f, level, &in->v[i++]);
				}
				if (rc)
					goto cleanup;
			}
			if (feeder_empty(&f))
				break; /* back in step with the old nodes */
			size_t had = ed->want.size;
			if (!advance(ed, level, &rc)) {
				pnode *made;
				if (rc)
					goto cleanup;
				if (f.probe) { /* the level's end, or a node to load: this run is done */
					if (ed->want.size > had)
						ed->stopped[ed->nstopped++] = first;
					f.s = 0;
					break;
				}
				if ((rc = prolly__chunker_finish(&f.ch, &made)) || (rc = made_node(&f, made)))
					goto cleanup;
				break;
			}
		}
	}
cleanup:;
	int crc = feeder_collect(&f);
	rc = rc ? rc : crc;
	if (rc == 0 && out)
		rc = normalize(out);
	feeder_dispose(&f);
	return rc;
}

/* Whether a leaf edit changes the size of its leaf (and so may move the boundary at its end). */
static int resizes(const pnode *leaf, const prolly_edit *e)
{
	uint32_t j = prolly__node_lower_bound(leaf, e->key.data, e->key.size);
	prolly_slice k;
	if (j == leaf->n || (k = prolly__node_key(leaf, j),
	                     prolly__keycmp(k.data, k.size, e->key.data, e->key.size) != 0))
		return e->op == PROLLY_PUT; /* an insert; deleting an absent key changes nothing */
	return e->op == PROLLY_DEL || prolly__node_value(leaf, j).size != e->value.size;
}

/*
 * Loads, with one store call per level, every node on the paths of the leaf edits; of the
 * leaves on a local store only those the cache lacks (the cached ones are not taken into ws:
 * "Reads" above). *resized (remote only, where the probe needs it): whether any edit changes
 * a leaf's size.
 */
static int prefetch(editor *ed, const prolly_edit *edits, size_t n, int *resized)
{
	prolly_id *ids = NULL;
	pnode **cur = NULL;
	const prolly_id **child = NULL;
	int rc = 0, remote = prolly__store_remote(ed->db);
	if (ed->height == 0 || n == 0)
		return 0;
	ids = malloc(n * sizeof(*ids));
	cur = malloc(n * sizeof(*cur));
	child = malloc(n * sizeof(*child));
	if (!ids || !cur || !child) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory planning %zu edits", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		cur[i] = ed->root;
	/* lev: the level of the nodes searched; their children, one level down, are loaded */
	for (unsigned lev = ed->height; lev > 0; lev--) {
		size_t nid = 0;
		int local_leaves = lev == 1 && !remote;
		for (size_t i = 0; i < n; i++) {
			uint32_t j = prolly__node_lower_bound(cur[i], edits[i].key.data, edits[i].key.size);
			child[i] = prolly__node_child(cur[i], j == cur[i]->n ? j - 1 : j);
			if ((nid && prolly_id_equal(&ids[nid - 1], child[i])) ||
			    (local_leaves && prolly__cache_has(ed->db->cache, child[i])))
				continue;
			ids[nid++] = *child[i];
		}
		if ((rc = prolly__load(ed->db, &ed->ws, ids, nid, NULL)))
			goto cleanup;
		if (local_leaves)
			break; /* cur[] stays at the leaves' parents: only a remote edit reads on */
		for (size_t i = 0; i < n; i++)
			cur[i] = prolly__nodeset_find(&ed->ws, child[i]);
	}
	for (size_t i = 0; remote && i < n && !*resized; i++)
		*resized = resizes(cur[i], &edits[i]);
cleanup:
	free(ids);
	free(cur);
	free(child);
	return rc;
}

/*
 * Probe rounds over the leaf level (E6), each followed by one store call for the leaves it found
 * missing. The first round runs every run; each later one only the runs the previous one stopped
 * at a missing leaf, now one leaf further. About half of the runs that go past one leaf go past
 * the next too, so the rounds shrink geometrically (10k random inserts into 10M records: 150, 81,
 * 40, 18, 12, 5, 3, 3 runs). A round costs one round trip, as one leaf read by the edit would.
 */
#define PROBE_MAX_ROUNDS 64

static int probe_leaves(editor *ed, const ledits *leaf_edits)
{
	int rc = 0;
	size_t *a = malloc(leaf_edits->n * sizeof(*a)), *b = malloc(leaf_edits->n * sizeof(*b));
	if (!a || !b) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory planning %zu edits", leaf_edits->n);
		goto cleanup;
	}
	ed->redo = NULL; /* the first round: every run */
	ed->stopped = a;
	for (int round = 0; round < PROBE_MAX_ROUNDS; round++) {
		ed->want.size = 0;
		ed->nstopped = 0;
		ed->probe = 1;
		rc = edit_level(ed, 0, leaf_edits, NULL);
		ed->probe = 0;
		if (rc || ed->want.size == 0)
			break;
		if ((rc = prolly__load(ed->db, &ed->ws, (const prolly_id *)(const void *)ed->want.ptr,
		                       ed->want.size / PROLLY_ID_SIZE, NULL)))
			break;
		/* What stopped runs again; the next round's stops go to the other array. */
		ed->redo = ed->stopped;
		ed->nredo = ed->nstopped;
		ed->stopped = ed->stopped == a ? b : a;
	}
cleanup:
	ed->redo = ed->stopped = NULL;
	free(a);
	free(b);
	return rc;
}

/* E5: the new root from the nodes made at the old root's level. */
static int finish_root(editor *ed, const ledits *top, prolly_id *out_root)
{
	int rc = 0;
	ledits cur = *top, next = {NULL, 0, 0};
	unsigned level = ed->height + 1; /* `cur` holds entries for nodes of level `level - 1` */
	pnode *nd;

	for (;;) {
		size_t puts = 0, last = 0;
		for (size_t i = 0; i < cur.n; i++)
			if (!cur.v[i].del) {
				puts++;
				last = i;
			}
		if (puts == 0) {
			*out_root = ed->db->empty_tree;
			goto cleanup;
		}
		if (puts == 1) {
			*out_root = cur.v[last].id;
			break;
		}
		/* Several nodes on this level: build the level above. */
		feeder f;
		pnode *made;
		if (level > PROLLY_MAX_LEVEL) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "tree deeper than %d levels", PROLLY_MAX_LEVEL);
			goto cleanup;
		}
		next.n = 0;
		feeder_init(&f, ed->txn, level, &next, 0);
		for (size_t i = 0; i < cur.n && !rc; i++)
			if (!cur.v[i].del)
				rc = feed_edit(&f, level, &cur.v[i]);
		if (!rc && !(rc = prolly__chunker_finish(&f.ch, &made)))
			rc = made_node(&f, made);
		feeder_dispose(&f);
		if (rc)
			goto cleanup;
		if (cur.v != top->v)
			free(cur.v);
		cur = next;
		next = (ledits){NULL, 0, 0};
		level++;
	}
	/* Collapse single-child roots. */
	for (;;) {
		if ((rc = prolly__load1(ed->db, &ed->ws, out_root, &nd)))
			goto cleanup;
		if (nd->level == 0 || nd->n != 1)
			break;
		*out_root = *prolly__node_child(nd, 0);
	}
cleanup:
	if (cur.v != top->v)
		free(cur.v);
	free(next.v);
	return rc;
}

int prolly__apply_sorted(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                         const prolly_edit *edits, size_t n)
{
	editor ed;
	ledits cur = {NULL, 0, 0}, next = {NULL, 0, 0};
	int rc, resized = 0;
	memset(&ed, 0, sizeof(ed));
	ed.db = txn->db;
	ed.txn = txn;
	prolly__nodeset_init(&ed.ws);
	if ((rc = prolly__load_root(ed.db, &ed.ws, root, &ed.root)))
		goto cleanup;
	if (n == 0) {
		*out_root = *root;
		goto cleanup;
	}
	ed.height = ed.root->level;
	if ((rc = prefetch(&ed, edits, n, &resized)))
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		ledit e;
		memset(&e, 0, sizeof(e));
		e.key = edits[i].key;
		e.del = edits[i].op == PROLLY_DEL;
		e.val = edits[i].value;
		if (i)
			assert(prolly__keycmp(edits[i - 1].key.data, edits[i - 1].key.size, e.key.data,
			                      e.key.size) < 0); /* E1 */
		if ((rc = push_edit(&cur, &e)))
			goto cleanup;
	}
	if (resized && ed.height > 0 && prolly__store_remote(ed.db) && (rc = probe_leaves(&ed, &cur)))
		goto cleanup;
	if (n >= MAKER_EDITS && !(ed.db->opts.flags & PROLLY_DB_NO_THREADS) &&
	    (rc = prolly__maker_start(&ed.maker)))
		goto cleanup; /* E8 */
	for (unsigned level = 0; level <= ed.height; level++) {
		next.n = 0;
		if (cur.n && (rc = edit_level(&ed, level, &cur, &next)))
			goto cleanup;
		ledits t = cur;
		cur = next;
		next = t;
		if (cur.n == 0) { /* nothing changed from here up */
			*out_root = *root;
			goto cleanup;
		}
	}
	rc = finish_root(&ed, &cur, out_root);
cleanup:
	free(cur.v);
	free(next.v);
	prolly_buf_dispose(&ed.want);
	prolly__maker_free(ed.maker);
	prolly__nodeset_dispose(&ed.ws);
	return rc;
}

int prolly__edits_check(const prolly_edit *edits, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if ((!edits[i].key.data && edits[i].key.size) ||
		    (edits[i].op == PROLLY_PUT && !edits[i].value.data && edits[i].value.size))
			return prolly_set_error(PROLLY_EINVAL, "edit %zu has a NULL key or value with a size",
			                        i);
		if (edits[i].key.size > PROLLY_MAX_KEY ||
		    (edits[i].op == PROLLY_PUT && edits[i].value.size > PROLLY_MAX_VALUE))
			return prolly_set_error(PROLLY_ETOOBIG,
			                        "edit %zu has a %zu-byte key and %zu-byte value; "
			                        "the limits are %d and %d",
			                        i, edits[i].key.size, edits[i].value.size, PROLLY_MAX_KEY,
			                        PROLLY_MAX_VALUE);
		if (edits[i].op != PROLLY_PUT && edits[i].op != PROLLY_DEL)
			return prolly_set_error(PROLLY_EINVAL, "edit %zu has an unknown op %d", i,
			                        (int)edits[i].op);
	}
	return 0;
}

/* The length of the batch of u[0, m) that starts at u[0] (E9): at least one edit. */
static size_t batch_len(const prolly_edit *u, size_t m)
{
	size_t b = 0, bytes = 0;
	size_t most = prolly__edit_batch ? prolly__edit_batch : 1;
	while (b < m && b < most) {
		size_t sz = u[b].key.size + (u[b].op == PROLLY_DEL ? 0 : u[b].value.size);
		if (b && bytes + sz > EDIT_BATCH_BYTES)
			break;
		bytes += sz;
		b++;
	}
	return b;
}

/* Applies the key-ordered, distinct edits u[0, m) to root in batches (E9). The writes of the
 * batches have landed when it returns 0 (the commit would wait for them anyway), so an edit that
 * succeeds never names a node whose write failed. */
static int apply_batches(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                         const prolly_edit *u, size_t m)
{
	size_t b = batch_len(u, m);
	prolly_id cur, next;
	int rc;
	if (b == m)
		return prolly__apply_sorted(out_root, txn, root, u, m);
	cur = *root;
	for (size_t at = 0; at < m; at += b) {
		b = batch_len(u + at, m - at);
		if ((at && (rc = prolly__txn_flush(txn))) ||
		    (rc = prolly__apply_sorted(&next, txn, &cur, u + at, b)))
			return rc;
		cur = next;
	}
	if ((rc = prolly__txn_flush_wait(txn)))
		return rc;
	*out_root = cur;
	return 0;
}

int prolly_edit_tree(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                     const prolly_edit *edits, size_t n)
{
	size_t *order = NULL;
	prolly_edit *u = NULL;
	size_t m = 0;
	int rc = 0;
	if (!out_root || !txn || !root || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_edit_tree: NULL argument");
	if ((rc = prolly__txn_usable(txn, "prolly_edit_tree")) || (rc = prolly__edits_check(edits, n)))
		return rc;
	if (n) {
		order = malloc(n * sizeof(*order));
		u = malloc(n * sizeof(*u));
		if (!order || !u) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory sorting %zu edits", n);
			goto cleanup;
		}
		if ((rc = prolly__key_order(order, &edits[0].key, sizeof(*edits), n)))
			goto cleanup;
		for (size_t i = 0; i < n; i++) { /* last write wins: equal keys in index order */
			const prolly_edit *e = &edits[order[i]];
			if (i + 1 < n) {
				const prolly_slice *k = &edits[order[i + 1]].key;
				if (prolly__keycmp(e->key.data, e->key.size, k->data, k->size) == 0)
					continue;
			}
			u[m++] = *e;
		}
	}
	rc = apply_batches(out_root, txn, root, u, m);
cleanup:
	free(order);
	free(u);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Range deletes                                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * prolly_delete_range removes every record with FROM <= key < TO. At every level the change is
 * one contiguous span of items replaced by the entries of the nodes made one level below (at the
 * leaves: by nothing). A level's run:
 *
 *   RD1 starts at the first item of X0, the node holding the span's first item (E2), and feeds
 *       X0's items before the span, then the new entries from below (their keys lie between
 *       those items and the items after the span);
 *   RD2 skips the span without reading it: the nodes strictly inside it are never loaded, only
 *       the two boundary paths (the descents to the span's first item and to the first item
 *       after it);
 *   RD3 if the first item after the span begins an old node and nothing is pending, the new
 *       sequence is back in step (C5): that node and all after it are reused; otherwise the run
 *       feeds the rest of that node and goes on, as edit_level does, until a node ends with
 *       nothing pending or the level ends;
 *   RD4 the span of the level above is the entries of the nodes the run consumed: from X0's
 *       last key to the last consumed node's last key (inclusive) -- or, when RD3 found the
 *       sequences in step, up to the first reused node's last key (exclusive) -- or to the end
 *       of the level.
 *
 * The root is then settled as in E5 (finish_root), so the result is the canonical tree of the
 * remaining records.
 */

enum { HI_NONE = 0, HI_EXCL = 1, HI_INCL = 2 };

typedef struct span {
	prolly_slice lo; /* first item: key >= lo */
	prolly_slice hi; /* items up to hi (see mode) */
	int mode;        /* HI_* */
} span;

/* Index of the first item of nd after K (strict) or at or after K. */
static uint32_t bound_of(const pnode *nd, prolly_slice k, int strict)
{
	uint32_t i = prolly__node_lower_bound(nd, k.data, k.size);
	if (strict && i < nd->n) {
		prolly_slice x = prolly__node_key(nd, i);
		if (prolly__keycmp(x.data, x.size, k.data, k.size) == 0)
			i++;
	}
	return i;
}

/* Path from the root to the node of `level` holding the first item at or after (strict: after)
 * key; *idx is its index there. *end: no such item at this level (the path is then left
 * unset). */
static int descend_to(editor *ed, prolly_slice key, int strict, unsigned level, uint32_t *idx,
                      int *end)
{
	pnode *nd = ed->root;
	*end = 0;
	for (unsigned lev = ed->height; lev > level; lev--) {
		uint32_t i = bound_of(nd, key, strict);
		if (i == nd->n) {
			*end = 1;
			return 0;
		}
		ed->path[lev].node = nd;
		ed->path[lev].idx = i;
		int rc = prolly__load1(ed->db, &ed->ws, prolly__node_child(nd, i), &nd);
		if (rc)
			return rc;
	}
	ed->path[level].node = nd;
	ed->path[level].idx = 0;
	*idx = bound_of(nd, key, strict);
	*end = *idx == nd->n;
	return 0;
}

/* RD2: loads the two boundary paths of the leaf span together, one store call per level. */
static int prefetch_span(editor *ed, const span *sp)
{
	pnode *cur[2] = {ed->root, ed->root};
	for (unsigned lev = ed->height; lev > 0; lev--) {
		prolly_id ids[2];
		uint32_t ci[2];
		size_t nid = 0;
		for (int s = 0; s < 2; s++) {
			if (!cur[s])
				continue;
			if (s == 1 && sp->mode == HI_NONE) {
				cur[s] = NULL;
				continue;
			}
			ci[s] = bound_of(cur[s], s ? sp->hi : sp->lo, s && sp->mode == HI_INCL);
			if (ci[s] == cur[s]->n) {
				cur[s] = NULL;
				continue;
			}
			const prolly_id *c = prolly__node_child(cur[s], ci[s]);
			if (!nid || !prolly_id_equal(&ids[0], c))
				ids[nid++] = *c;
		}
		if (!nid)
			return 0;
		int rc = prolly__load(ed->db, &ed->ws, ids, nid, NULL);
		if (rc)
			return rc;
		for (int s = 0; s < 2; s++)
			if (cur[s])
				cur[s] = prolly__nodeset_find(&ed->ws, prolly__node_child(cur[s], ci[s]));
	}
	return 0;
}

/* One level's run (RD1-RD4): replaces the span by `in` (entries from below), producing the entries
 * of the nodes made in out and the span of the level above in *up. */
static int range_level(editor *ed, unsigned level, const span *sp, const ledits *in, ledits *out,
                       span *up)
{
	feeder f;
	uint32_t a, b;
	int end, rc;
	pnode *x0;
	feeder_init(&f, ed->txn, level, out, 0);
	if ((rc = descend_to(ed, sp->lo, 0, level, &a, &end)))
		goto cleanup;
	assert(!end); /* the span is never empty */
	x0 = ed->path[level].node;
	up->lo = prolly__node_last_key(x0);
	for (uint32_t j = 0; j < a; j++) /* RD1 */
		if ((rc = feed_old(&f, x0, j)))
			goto cleanup;
	for (size_t i = 0; i < in->n; i++)
		if ((rc = feed_edit(&f, level, &in->v[i])))
			goto cleanup;
	end = 1;
	if (sp->mode != HI_NONE && (rc = descend_to(ed, sp->hi, sp->mode == HI_INCL, level, &b, &end)))
		goto cleanup;
	if (end) { /* the span runs to the end of the level */
		pnode *made;
		up->mode = HI_NONE;
		if (!(rc = prolly__chunker_finish(&f.ch, &made)))
			rc = made_node(&f, made);
		goto cleanup;
	}
	pnode *y = ed->path[level].node;
	if (b == 0 && feeder_empty(&f)) { /* RD3: in step at once */
		up->hi = prolly__node_last_key(y);
		up->mode = HI_EXCL;
		goto cleanup;
	}
	for (;;) {
		for (uint32_t j = b; j < y->n; j++)
			if ((rc = feed_old(&f, y, j)))
				goto cleanup;
		up->hi = prolly__node_last_key(y);
		up->mode = HI_INCL;
		if (feeder_empty(&f))
			break;
		if (!advance(ed, level, &rc)) {
			pnode *made;
			if (rc)
				goto cleanup;
			if (!(rc = prolly__chunker_finish(&f.ch, &made)))
				rc = made_node(&f, made);
			break;
		}
		y = ed->path[level].node;
		b = 0;
	}
cleanup:
	feeder_dispose(&f);
	return rc;
}

int prolly_delete_range(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                        const prolly_slice *from, const prolly_slice *to)
{
	editor ed;
	ledits cur = {NULL, 0, 0}, next = {NULL, 0, 0};
	span sp, up;
	prolly_id res;
	uint32_t a;
	int end, rc;
	memset(&ed, 0, sizeof(ed));
	if (!out_root || !txn || !root)
		return prolly_set_error(PROLLY_EINVAL, "prolly_delete_range needs out_root, txn and root");
	if ((rc = prolly__txn_usable(txn, "prolly_delete_range")))
		return rc;
	if ((from && from->size && !from->data) || (to && to->size && !to->data))
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_delete_range: a range bound has a size but no data");
	if ((from && from->size > PROLLY_MAX_KEY) || (to && to->size > PROLLY_MAX_KEY))
		return prolly_set_error(PROLLY_ETOOBIG, "a range bound is longer than %d bytes",
		                        PROLLY_MAX_KEY);
	if (from && to && prolly__keycmp(from->data, from->size, to->data, to->size) > 0)
		return prolly_set_error(PROLLY_EINVAL, "the range's start is after its end");
	ed.db = txn->db;
	ed.txn = txn;
	prolly__nodeset_init(&ed.ws);
	if ((rc = prolly__load_root(ed.db, &ed.ws, root, &ed.root)))
		goto cleanup;
	res = *root;
	ed.height = ed.root->level;
	sp.lo = from ? *from : (prolly_slice){"", 0};
	sp.mode = to ? HI_EXCL : HI_NONE;
	if (to)
		sp.hi = *to;
	if ((rc = prefetch_span(&ed, &sp)) || (rc = descend_to(&ed, sp.lo, 0, 0, &a, &end)))
		goto cleanup;
	if (end) /* nothing at or after FROM */
		goto cleanup;
	prolly_slice k = prolly__node_key(ed.path[0].node, a);
	if (to && prolly__keycmp(k.data, k.size, to->data, to->size) >= 0)
		goto cleanup; /* nothing in [FROM, TO) */
	for (unsigned level = 0; level <= ed.height; level++) {
		next.n = 0;
		if ((rc = range_level(&ed, level, &sp, &cur, &next, &up)))
			goto cleanup;
		ledits t = cur;
		cur = next;
		next = t;
		sp = up;
	}
	rc = finish_root(&ed, &cur, &res);
cleanup:
	if (rc == 0)
		*out_root = res;
	free(cur.v);
	free(next.v);
	prolly__nodeset_dispose(&ed.ws);
	return rc;
}
