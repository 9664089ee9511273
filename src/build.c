/*
 * build.c - bulk building a tree from records in key order.
 *
 * One chunker per level: each node made at level L becomes an item (its last key, id, record
 * count) of level L+1. Memory is a few pending chunks per level plus the txn's unflushed nodes,
 * which are handed to the store every flush_bytes.
 *
 * Invariants:
 *   B1  keys arrive strictly increasing (checked: PROLLY_EINVAL otherwise).
 *   B2  the root is the only node of the lowest level that made exactly one node; any nodes
 *       above it (single-child chains) are not part of the tree. This is the same shape any
 *       sequence of edits produces (edit.c, E5), which is what history independence needs.
 */
#include "internal.h"

#include <stdlib.h>

struct prolly_builder {
	prolly_txn *txn;
	prolly__chunker lv[PROLLY_MAX_LEVEL + 1];
	prolly_id last_id[PROLLY_MAX_LEVEL + 1];
	unsigned nlevels;
	prolly_buf last_key;
	int have_last;
	size_t unflushed;
	int done;
};

int prolly_builder_new(prolly_builder **out, prolly_txn *txn)
{
	if (!out || !txn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_builder_new: NULL argument");
	int rc = prolly__txn_usable(txn, "prolly_builder_new");
	if (rc)
		return rc;
	prolly_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory creating a builder");
	b->txn = txn;
	prolly__chunker_init(&b->lv[0], txn, 0);
	b->nlevels = 1;
	*out = b;
	return 0;
}

void prolly_builder_free(prolly_builder *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->nlevels; i++)
		prolly__chunker_dispose(&b->lv[i]);
	prolly_buf_dispose(&b->last_key);
	free(b);
}

/* A node was made at level L: record it and hand it up as an item of level L+1. */
static int push(prolly_builder *b, unsigned level, pnode *made)
{
	while (made) {
		b->last_id[level] = made->id;
		b->unflushed += made->size;
		if (level + 1 > PROLLY_MAX_LEVEL)
			return prolly_set_error(PROLLY_ECORRUPT, "tree deeper than %d levels",
			                        PROLLY_MAX_LEVEL);
		if (b->nlevels <= level + 1) {
			prolly__chunker_init(&b->lv[level + 1], b->txn, level + 1);
			b->nlevels = level + 2;
		}
		prolly_slice k = prolly__node_last_key(made);
		pnode *up;
		int rc = prolly__chunker_child(&b->lv[level + 1], k.data, k.size, &made->id, made->count,
		                               &up);
		if (rc)
			return rc;
		made = up;
		level++;
	}
	return 0;
}

int prolly_builder_add(prolly_builder *b, const void *key, size_t klen, const void *val,
                       size_t vlen)
{
	int rc;
	pnode *made;
	if (!b || (!key && klen) || (!val && vlen))
		return prolly_set_error(PROLLY_EINVAL, "prolly_builder_add: NULL argument");
	if (b->done)
		return prolly_set_error(PROLLY_EINVAL, "the builder was already finished");
	if ((rc = prolly__txn_usable(b->txn, "prolly_builder_add")))
		return rc;
	if (klen > PROLLY_MAX_KEY || vlen > PROLLY_MAX_VALUE)
		return prolly_set_error(PROLLY_ETOOBIG,
		                        "record with a %zu-byte key and %zu-byte value exceeds "
		                        "the limits (%d, %d)",
		                        klen, vlen, PROLLY_MAX_KEY, PROLLY_MAX_VALUE);
	if (b->have_last && prolly__keycmp(b->last_key.ptr, b->last_key.size, key, klen) >= 0) /* B1 */
		return prolly_set_error(PROLLY_EINVAL, "builder keys must be strictly increasing");
	if ((rc = prolly__buf_set(&b->last_key, key, klen)))
		return rc;
	b->have_last = 1;
	if ((rc = prolly__chunker_leaf(&b->lv[0], key, klen, val, vlen, &made)) ||
	    (rc = push(b, 0, made)))
		return rc;
	if (b->unflushed >= b->txn->db->opts.flush_bytes) {
		if ((rc = prolly__txn_flush(b->txn)))
			return rc;
		b->unflushed = 0;
	}
	return 0;
}

int prolly_builder_finish(prolly_builder *b, prolly_id *out_root)
{
	int rc;
	if (!b || !out_root)
		return prolly_set_error(PROLLY_EINVAL, "prolly_builder_finish: NULL argument");
	if (b->done)
		return prolly_set_error(PROLLY_EINVAL, "the builder was already finished");
	if ((rc = prolly__txn_usable(b->txn, "prolly_builder_finish")))
		return rc;
	b->done = 1;
	if (b->lv[0].emitted == 0 && prolly__chunker_empty(&b->lv[0])) {
		*out_root = b->txn->db->empty_tree;
		return 0;
	}
	for (unsigned level = 0; level < b->nlevels; level++) {
		pnode *made;
		if ((rc = prolly__chunker_finish(&b->lv[level], &made)))
			return rc;
		if (made)
			b->last_id[level] = made->id;
		if (b->lv[level].emitted == 1) { /* B2 */
			*out_root = b->last_id[level];
			return 0;
		}
		if (made && (rc = push(b, level, made)))
			return rc;
	}
	return prolly_set_error(PROLLY_ECORRUPT, "builder ended without a root");
}
