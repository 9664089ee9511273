/*
 * sync.c - copying history between stores (prolly_sync): every object reachable from some
 * commits that the destination lacks, then the refs, by compare-and-swap.
 *
 * The walk rests on K6 of prolly/store.h: a store holds an object only together with everything
 * below it (a tree node with its subtree, a commit with its tree and its parents, as far as
 * retention kept them). So one question per object, "does the destination have it?", decides
 * a whole subtree, and a sync keeps K6 in the destination by writing in that order:
 *
 *   SY1 A tree node is written after every child it has (or in the same write). copy_level
 *       walks a batch of ids at one level: asks the destination which it has (has_nodes, one
 *       round trip), reads the rest from the source (get_nodes, one round trip, every object
 *       hash-checked), recurses into their children in batches, and writes the batch last.
 *   SY2 A commit is written after its tree and after every parent it has in the source: the
 *       missing commits are found newest first, then written parents first (a depth-first
 *       post-order over the missing ones), a batch per write, each batch's trees before it.
 *   SY3 Refs move last, in one write through a txn (reflogged like any move), each by the
 *       compare-and-swap the caller gave, with the ref targets' commit objects rewritten in that
 *       write so that the store's gc keeps their trees (prolly_store_write.requires).
 *   SY4 Every write checks the destination's gc epoch read when the sync began: a gc meanwhile
 *       (which may remove the nodes already copied, unreferenced as they are) fails the sync
 *       with PROLLY_ECONFLICT, and a rerun starts over from what survived.
 *   SY5 The history walk reads ahead where the source has get_ancestors (sync_history.c,
 *       fetch_commits).
 *
 * So an interrupted sync leaves the destination with complete subtrees and no ref at anything
 * missing; a rerun asks again and copies only what is still missing. Memory: at most one batch
 * of node bytes and of child ids per tree level (height x batch), plus 32 bytes (and parents)
 * per missing commit, since SY2 writes them oldest first.
 */
#include "sync_int.h"

#include <stdlib.h>

#define SYNC_BATCH_DEFAULT 512
#define SYNC_BATCH_MAX 65536

/* ---- asking the destination ------------------------------------------------------------- */

static int mark_found(void *payload, size_t index, const void *data, size_t size)
{
	(void)data;
	(void)size;
	((unsigned char *)payload)[index] = 1;
	return 0;
}

/* out[i] = whether the destination holds ids[i]; has_nodes, else get_nodes (bytes ignored). */
int prolly__sync_has(sync_ctx *s, const prolly_id *ids, size_t n, unsigned char *out)
{
	memset(out, 0, n);
	if (!n)
		return 0;
	s->st.has_calls++;
	if (s->dst->vt.has_nodes)
		return s->dst->vt.has_nodes(s->dst->store, ids, n, out);
	return s->dst->vt.get_nodes(s->dst->store, ids, n, mark_found, out);
}

/* ---- reading the source ------------------------------------------------------------------- */

int prolly__sync_on_fetched(void *payload, size_t index, const void *data, size_t size)
{
	fetched *f = payload;
	if (index >= f->n || f->nodes[index].data)
		return 0;
	void *copy = malloc(size ? size : 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory copying a %zu-byte object", size);
	memcpy(copy, data, size);
	f->nodes[index].data = copy;
	f->nodes[index].size = size;
	f->bytes += size;
	return 0;
}

void prolly__sync_fetched_dispose(fetched *f)
{
	for (size_t i = 0; f->nodes && i < f->n; i++)
		free((void *)f->nodes[i].data);
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

/* Reads ids from the source in one call (hash-checked by prolly__load_raw). */
int prolly__sync_fetch(sync_ctx *s, fetched *f, const prolly_id *ids, size_t n)
{
	memset(f, 0, sizeof(*f));
	if (!n)
		return 0;
	f->nodes = calloc(n, sizeof(*f->nodes));
	if (!f->nodes)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory reading %zu objects", n);
	f->n = n;
	for (size_t i = 0; i < n; i++)
		f->nodes[i].id = ids[i];
	s->st.read_calls++;
	return prolly__load_raw(s->src, ids, n, prolly__sync_on_fetched, f);
}

/* ---- writing the destination ------------------------------------------------------------- */

static int dst_write(sync_ctx *s, const prolly_store_node *nodes, size_t n, const prolly_buf *req)
{
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = nodes;
	w.n_nodes = n;
	w.check_epoch = 1; /* SY4 */
	w.epoch = s->epoch;
	w.requires = (const prolly_id *)(const void *)req->ptr;
	w.n_requires = req->size / PROLLY_ID_SIZE;
	s->st.write_calls++;
	int rc = prolly__store_write(s->dst, &w);
	if (rc == PROLLY_ECONFLICT)
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "sync: a gc ran on the destination meanwhile (epoch %llu, now "
		                        "%llu); run the sync again",
		                        (unsigned long long)s->epoch, (unsigned long long)w.current_epoch);
	return rc;
}

/* ---- trees (SY1) ------------------------------------------------------------------------ */

/* Copies the subtrees of ids[0..n) (n <= batch, tree nodes at any level) that the destination
 * lacks. With gone set, ids are commits' trees, and one the source lacks (retention removed it
 * there) is put in gone and skipped. A child the source lacks is PROLLY_ECORRUPT: its parent
 * names it. */
static int copy_level(sync_ctx *s, const prolly_id *ids, size_t n, prolly__idmap *gone)
{
	prolly_id *want = NULL;
	unsigned char *has = NULL;
	prolly_store_node *out = NULL;
	prolly_buf kids = PROLLY_BUF_INIT;
	prolly__idmap seen;
	fetched f;
	size_t nw = 0, nout = 0;
	int rc = 0;

	memset(&f, 0, sizeof(f));
	prolly__idmap_init(&seen);
	want = malloc((n ? n : 1) * sizeof(*want));
	has = malloc(n ? n : 1);
	if (!want || !has) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing %zu nodes", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) { /* the empty tree is every store's without being stored */
		if (prolly_id_equal(&ids[i], &s->dst->empty_tree) || prolly__idmap_get(&seen, &ids[i]))
			continue;
		if ((rc = prolly__idmap_put(&seen, &ids[i], 1)))
			goto cleanup;
		want[nw++] = ids[i];
	}
	if ((rc = prolly__sync_has(s, want, nw, has)))
		goto cleanup;
	size_t nm = 0;
	for (size_t i = 0; i < nw; i++)
		if (!has[i])
			want[nm++] = want[i];
	if (!nm)
		goto cleanup;
	if ((rc = prolly__sync_fetch(s, &f, want, nm)))
		goto cleanup;
	out = malloc(nm * sizeof(*out));
	if (!out) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing %zu nodes", nm);
		goto cleanup;
	}
	for (size_t i = 0; i < nm; i++) {
		pnode *nd = NULL;
		if (!f.nodes[i].data) {
			if (gone) {
				if ((rc = prolly__idmap_put(gone, &want[i], 1)))
					goto cleanup;
				continue;
			}
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &want[i]);
			rc = prolly_set_error(PROLLY_ECORRUPT, "sync: node %s missing from the source", hex);
			goto cleanup;
		}
		if ((rc = prolly__node_decode(&nd, &want[i], f.nodes[i].data, f.nodes[i].size, 0)))
			goto cleanup;
		for (uint32_t j = 0; nd->level > 0 && j < nd->n && !rc; j++)
			rc = prolly__buf_put(&kids, prolly__node_child(nd, j), PROLLY_ID_SIZE);
		prolly__node_unref(nd);
		if (rc)
			goto cleanup;
		out[nout++] = f.nodes[i];
	}
	size_t nk = kids.size / PROLLY_ID_SIZE;
	const prolly_id *k = (const prolly_id *)(const void *)kids.ptr;
	for (size_t at = 0; at < nk && !rc; at += s->batch)
		rc = copy_level(s, k + at, PROLLY_MIN(s->batch, nk - at), NULL);
	if (rc || !nout)
		goto cleanup;
	if ((rc = dst_write(s, out, nout, &kids)))
		goto cleanup;
	s->st.nodes_copied += nout;
	for (size_t i = 0; i < nout; i++)
		s->st.bytes_copied += out[i].size;

cleanup:
	prolly__sync_fetched_dispose(&f);
	prolly__idmap_dispose(&seen);
	prolly_buf_dispose(&kids);
	free(out);
	free(want);
	free(has);
	return rc;
}

/* ---- commits (SY2) ---------------------------------------------------------------------- */

/* Writes the missing commits in batches, each batch's trees first. */
static int copy_commits(sync_ctx *s, history *h)
{
	size_t *order = malloc((h->n ? h->n : 1) * sizeof(*order));
	prolly_id *ids = malloc(s->batch * sizeof(*ids));
	prolly_buf req = PROLLY_BUF_INIT;
	prolly__idmap gone;
	fetched f;
	int rc;
	memset(&f, 0, sizeof(f));
	prolly__idmap_init(&gone);
	if (!order || !ids) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory copying %zu commits", h->n);
		goto cleanup;
	}
	if ((rc = prolly__sync_order(h, order)))
		goto cleanup;
	for (size_t at = 0; at < h->n && !rc; at += s->batch) {
		size_t m = PROLLY_MIN(s->batch, h->n - at);
		for (size_t i = 0; i < m; i++)
			ids[i] = h->c[order[at + i]].tree;
		if ((rc = copy_level(s, ids, m, &gone)))
			break;
		req.size = 0; /* what the batch builds on: trees and parents the destination has now */
		for (size_t i = 0; i < m && !rc; i++) {
			const mcommit *c = &h->c[order[at + i]];
			if (!prolly__idmap_get(&gone, &c->tree) &&
			    !prolly_id_equal(&c->tree, &s->dst->empty_tree))
				rc = prolly__buf_put(&req, c->tree.bytes, PROLLY_ID_SIZE);
			for (size_t p = 0; p < c->n_parents && !rc; p++) {
				const prolly_id *pid = &h->parents[c->first_parent + p];
				if (prolly__idmap_get(&h->index, pid) != SYNC_PRUNED)
					rc = prolly__buf_put(&req, pid->bytes, PROLLY_ID_SIZE);
			}
		}
		for (size_t i = 0; i < m; i++)
			ids[i] = h->c[order[at + i]].id;
		if ((rc = prolly__sync_fetch(s, &f, ids, m)))
			break;
		for (size_t i = 0; i < m && !rc; i++)
			if (!f.nodes[i].data)
				rc = prolly_set_error(PROLLY_ENOTFOUND,
				                      "sync: a commit left the source during the sync");
		if (!rc && (rc = dst_write(s, f.nodes, m, &req)) == 0) {
			s->st.commits_copied += m;
			s->st.bytes_copied += f.bytes;
		}
		prolly__sync_fetched_dispose(&f);
	}

cleanup:
	prolly__sync_fetched_dispose(&f);
	prolly__idmap_dispose(&gone);
	prolly_buf_dispose(&req);
	free(order);
	free(ids);
	return rc;
}

/* ---- refs (SY3) ------------------------------------------------------------------------- */

static int move_refs(sync_ctx *s, prolly_ref_update *refs, size_t n_refs,
                     const prolly_sync_options *o)
{
	prolly_txn *txn = NULL;
	prolly_id *targets = NULL;
	fetched f;
	const void *b;
	size_t nt = 0, bs;
	int rc;
	memset(&f, 0, sizeof(f));
	if ((rc = prolly_txn_begin(&txn, s->dst)))
		return rc;
	txn->epoch = s->epoch; /* SY4 */
	targets = malloc((n_refs ? n_refs : 1) * sizeof(*targets));
	if (!targets) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory moving %zu refs", n_refs);
		goto cleanup;
	}
	for (size_t i = 0; i < n_refs; i++)
		if (!refs[i].remove)
			targets[nt++] = refs[i].value;
	/* The targets' commit objects go into the write again (a no-op for the store, K3), so that
	 * the write requires their trees (SY3). They come from the source, or else the destination
	 * had them all along. */
	if ((rc = prolly__sync_fetch(s, &f, targets, nt)))
		goto cleanup;
	for (size_t i = 0; i < nt && !rc; i++)
		if (f.nodes[i].data && prolly__txn_find_raw(txn, &targets[i], &b, &bs) != 0)
			rc = prolly__txn_add_raw(txn, &targets[i], f.nodes[i].data, f.nodes[i].size);
	for (size_t i = 0; i < n_refs && !rc; i++)
		rc = prolly_txn_set_ref(txn, &refs[i]);
	if (!rc && o->operation)
		rc = prolly_txn_set_reason(txn, o->operation, o->message);
	if (rc)
		goto cleanup;
	s->st.write_calls++;
	rc = prolly_txn_commit(txn, NULL, 0);
	for (size_t i = 0; i < n_refs; i++) /* the outcome of each update, as the store reported it */
		for (size_t j = 0; j < txn->n_refs; j++)
			if (strcmp(txn->refs[j].name, refs[i].name) == 0) {
				refs[i].conflict = txn->refs[j].conflict;
				refs[i].current_exists = txn->refs[j].current_exists;
				refs[i].current = txn->refs[j].current;
			}

cleanup:
	prolly__sync_fetched_dispose(&f);
	free(targets);
	prolly_txn_free(txn);
	return rc;
}

/* ---- the whole ----------------------------------------------------------------------------- */

int prolly_sync(prolly_sync_stats *out, prolly_db *dst, prolly_db *src, const prolly_id *commits,
                size_t n_commits, prolly_ref_update *refs, size_t n_refs,
                const prolly_sync_options *opts)
{
	prolly_sync_options o;
	sync_ctx s;
	history h;
	int rc;

	memset(&h, 0, sizeof(h));
	memset(&s, 0, sizeof(s));
	prolly__sync_history_init(&h);
	if (!dst || !src || (n_commits && !commits) || (n_refs && !refs))
		return prolly_set_error(PROLLY_EINVAL, "prolly_sync: NULL db, commits or refs");
	if ((rc = prolly__sync_check(opts, out)))
		return rc;
	if (opts)
		o = *opts;
	else
		prolly_sync_options_init(&o, PROLLY_SYNC_OPTIONS_VERSION);
	if (o.batch > SYNC_BATCH_MAX)
		return prolly_set_error(PROLLY_EINVAL, "prolly_sync: batch %zu is over %d", o.batch,
		                        SYNC_BATCH_MAX);
	s.dst = dst;
	s.src = src;
	s.batch = o.batch ? o.batch : SYNC_BATCH_DEFAULT;

	/* SY4: the destination's gc epoch now, learned with an empty write (as prolly_db_new). */
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	if ((rc = prolly__store_write(dst, &w)))
		goto cleanup;
	s.epoch = w.current_epoch;
	prolly__raise_epoch(dst, w.current_epoch);

	size_t n_start = 0;
	for (size_t i = 0; i < n_commits + n_refs && !rc; i++) {
		const prolly_id *id = i < n_commits ? &commits[i] : &refs[i - n_commits].value;
		if (i >= n_commits && refs[i - n_commits].remove)
			continue;
		rc = prolly__sync_queue(&h, id);
	}
	n_start = h.q_len;
	if (rc || (rc = prolly__sync_find_missing(&s, &h, n_start)) || (rc = copy_commits(&s, &h)))
		goto cleanup;
	if (n_refs)
		rc = move_refs(&s, refs, n_refs, &o);

cleanup:
	prolly__sync_history_dispose(&h);
	prolly__sync_stats_put(out, &s.st);
	return rc;
}
