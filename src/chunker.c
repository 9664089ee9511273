/*
 * chunker.c - turning a stream of items at one level into nodes.
 *
 * Invariants:
 *   H1  ch->s is the encoded item size of the pending items (0 right after a boundary), so the
 *       boundary decision sees exactly the items since the chunk began (chunk.c, C5).
 *   H2  a node is made only at a boundary or by prolly__chunker_finish.
 *   H3  with a maker (maker.c) the node is handed to it instead of being made here: *made is
 *       NULL and ch->queued 1 after the call; its caller collects the node from the maker.
 *   H4  items of an old node go in without the rule (prolly__chunker_items) only when ch->s is
 *       the old node's own running size before them: the rule then answers for each as it did
 *       when that node was made, where it ended no chunk before the node's last item.
 */
#include "internal.h"

void prolly__chunker_init(prolly__chunker *ch, prolly_txn *txn, unsigned level)
{
	memset(ch, 0, sizeof(*ch));
	ch->txn = txn;
	ch->rule = txn->db->rule;
	prolly__enc_init(&ch->enc, level);
}

void prolly__chunker_dispose(prolly__chunker *ch)
{
	prolly__enc_dispose(&ch->enc);
}

static int make_node(prolly__chunker *ch, pnode **made)
{
	pnode *nd;
	if (ch->maker) { /* H3 */
		size_t size = prolly__enc_size(&ch->enc);
		int rc = prolly__maker_submit(ch->maker, &ch->enc);
		if (rc)
			return rc;
		ch->bytes += size;
		ch->emitted++;
		ch->queued = 1;
		ch->s = 0; /* H1 */
		return 0;
	}
	int rc = prolly__enc_node(&nd, &ch->enc);
	if (rc)
		return rc;
	size_t size = nd->size;
	if ((rc = prolly__txn_add_node(ch->txn, nd, made)))
		return rc;
	ch->emitted++;
	ch->bytes += size;
	prolly__enc_reset(&ch->enc);
	ch->s = 0; /* H1 */
	return 0;
}

int prolly__chunker_leaf(prolly__chunker *ch, const void *k, size_t klen, const void *v,
                         size_t vlen, pnode **made)
{
	size_t r = prolly__leaf_item_size(klen, vlen);
	int rc = prolly__enc_add_leaf(&ch->enc, k, klen, v, vlen);
	*made = NULL;
	ch->queued = 0;
	if (rc)
		return rc;
	ch->s += r;
	if (prolly__boundary(&ch->rule, 0, k, klen, ch->s, r)) /* H2 */
		return make_node(ch, made);
	return 0;
}

int prolly__chunker_child(prolly__chunker *ch, const void *k, size_t klen, const prolly_id *id,
                          uint64_t count, pnode **made)
{
	size_t r = prolly__child_item_size(klen);
	int rc = prolly__enc_add_child(&ch->enc, k, klen, id, count);
	*made = NULL;
	ch->queued = 0;
	if (rc)
		return rc;
	ch->s += r;
	if (prolly__boundary(&ch->rule, ch->enc.level, k, klen, ch->s, r))
		return make_node(ch, made);
	return 0;
}

int prolly__chunker_items(prolly__chunker *ch, const pnode *x, uint32_t from, uint32_t to)
{
	assert(from < to && to < x->n && ch->s == prolly__prefix_size(x, from)); /* H4 */
	int rc = prolly__enc_add_items(&ch->enc, x, from, to);
	if (rc)
		return rc;
	ch->s = prolly__prefix_size(x, to); /* H1 */
	return 0;
}

int prolly__chunker_finish(prolly__chunker *ch, pnode **made)
{
	*made = NULL;
	ch->queued = 0;
	if (ch->enc.n == 0)
		return 0;
	return make_node(ch, made);
}
