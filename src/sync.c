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
 *   SY5 The history walk reads ahead where the source has get_ancestors (see fetch_commits).
 *
 * So an interrupted sync leaves the destination with complete subtrees and no ref at anything
 * missing; a rerun asks again and copies only what is still missing. Memory: at most one batch
 * of node bytes and of child ids per tree level (height x batch), plus 32 bytes (and parents)
 * per missing commit, since SY2 writes them oldest first.
 */
#include "internal.h"

#include <stdlib.h>

#define SYNC_BATCH_DEFAULT 512
#define SYNC_BATCH_MAX 65536

typedef struct sync_ctx {
	prolly_db *dst, *src;
	size_t batch;
	uint64_t epoch; /* SY4 */
	prolly_sync_stats st;
} sync_ctx;

/* ---- asking the destination ------------------------------------------------------------- */

static int mark_found(void *payload, size_t index, const void *data, size_t size)
{
	(void)data;
	(void)size;
	((unsigned char *)payload)[index] = 1;
	return 0;
}

/* out[i] = whether the destination holds ids[i]; has_nodes, else get_nodes (bytes ignored). */
static int dst_has(sync_ctx *s, const prolly_id *ids, size_t n, unsigned char *out)
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

/* Objects read from the source: copies of their bytes, slot i for request i (NULL: absent). */
typedef struct fetched {
	prolly_store_node *nodes; /* data NULL when absent */
	size_t n;
	uint64_t bytes;
} fetched;

static int on_fetched(void *payload, size_t index, const void *data, size_t size)
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

static void fetched_dispose(fetched *f)
{
	for (size_t i = 0; f->nodes && i < f->n; i++)
		free((void *)f->nodes[i].data);
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

/* Reads ids from the source in one call (hash-checked by prolly__load_raw). */
static int src_fetch(sync_ctx *s, fetched *f, const prolly_id *ids, size_t n)
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
	return prolly__load_raw(s->src, ids, n, on_fetched, f);
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
	if ((rc = dst_has(s, want, nw, has)))
		goto cleanup;
	size_t nm = 0;
	for (size_t i = 0; i < nw; i++)
		if (!has[i])
			want[nm++] = want[i];
	if (!nm)
		goto cleanup;
	if ((rc = src_fetch(s, &f, want, nm)))
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
	fetched_dispose(&f);
	prolly__idmap_dispose(&seen);
	prolly_buf_dispose(&kids);
	free(out);
	free(want);
	free(has);
	return rc;
}

/* ---- commits (SY2) ---------------------------------------------------------------------- */

/* A commit the destination lacks: its id, tree and parents (as indexes into parents). */
typedef struct mcommit {
	prolly_id id, tree;
	size_t first_parent, n_parents;
	int state; /* post-order walk: 0 new, 1 on the stack, 2 placed */
} mcommit;

#define PRESENT ((uintptr_t)-1) /* in the destination (or not asked yet) */
#define PRUNED ((uintptr_t)-2)  /* in neither: retention removed it from the source */

typedef struct history {
	mcommit *c;
	size_t n, cap;
	prolly_id *parents;
	size_t n_parents, cap_parents;
	prolly__idmap index; /* commit id -> index + 1 of a missing one, PRESENT, or PRUNED */
	prolly_id *queue;    /* commits to ask about */
	size_t q_head, q_len, q_cap;
	prolly__idmap ahead; /* SY5: commit id -> its ahead_obj, read ahead, known missing */
	size_t n_ahead;      /* entries whose bytes are still held */
} history;

/* A commit read ahead of the walk that the destination was found to lack (SY5). */
typedef struct ahead_obj {
	void *data; /* NULL once the walk took it */
	size_t size;
} ahead_obj;

static int queue_push(history *h, const prolly_id *id)
{
	if (prolly__idmap_get(&h->index, id))
		return 0;
	int rc = prolly__idmap_put(&h->index, id, PRESENT); /* seen; not (yet) known missing */
	if (rc)
		return rc;
	if (h->q_len == h->q_cap) {
		size_t cap = h->q_cap ? h->q_cap * 2 : 64;
		prolly_id *q = realloc(h->queue, cap * sizeof(*q));
		if (!q)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		h->queue = q;
		h->q_cap = cap;
	}
	h->queue[h->q_len++] = *id;
	return 0;
}

static int add_missing(history *h, const prolly_commit *c)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		mcommit *m = realloc(h->c, cap * sizeof(*m));
		if (!m)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		h->c = m;
		h->cap = cap;
	}
	if (h->n_parents + c->n_parents > h->cap_parents) {
		size_t cap = PROLLY_MAX(h->cap_parents * 2, h->n_parents + c->n_parents + 64);
		prolly_id *p = realloc(h->parents, cap * sizeof(*p));
		if (!p)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		h->parents = p;
		h->cap_parents = cap;
	}
	mcommit *m = &h->c[h->n];
	m->id = c->id;
	m->tree = c->tree;
	m->first_parent = h->n_parents;
	m->n_parents = c->n_parents;
	m->state = 0;
	if (c->n_parents) /* a root commit has no parents array */
		memcpy(h->parents + h->n_parents, c->parents, c->n_parents * sizeof(prolly_id));
	h->n_parents += c->n_parents;
	int rc = prolly__idmap_put(&h->index, &c->id, (uintptr_t)(h->n + 1));
	if (rc)
		return rc;
	h->n++;
	return 0;
}

/*
 * SY5 Read-ahead of history: where the source has get_ancestors, the commits the walk lacks are
 * read together with up to a batch of their ancestors in one call, and the destination is
 * asked about those ancestors in one more: the ones it has are marked present (the walk will
 * stop there), the ones it lacks are kept (ahead), so the walk takes them without a round trip.
 * A linear history then costs two round trips per batch of commits, not two per commit.
 */
typedef struct anc_ctx {
	history *h;
	fetched *f;
	prolly__idmap want; /* id -> index + 1 in f */
	prolly_store_node *cand;
	size_t n_cand, cap_cand, max_cand;
} anc_ctx;

static int on_ancestor(void *payload, const prolly_id *id, const void *data, size_t size)
{
	anc_ctx *a = payload;
	int rc = prolly__check_hash(id, data, size);
	if (rc)
		return rc;
	uintptr_t k = prolly__idmap_get(&a->want, id);
	if (k)
		return on_fetched(a->f, k - 1, data, size);
	if (a->n_cand == a->max_cand || prolly__idmap_get(&a->h->index, id) ||
	    prolly__idmap_get(&a->h->ahead, id) || size < PROLLY__MAGIC_SIZE ||
	    memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0)
		return 0;
	if (PROLLY__GROW(a->cand, a->cap_cand, a->n_cand + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory reading history ahead");
	void *copy = malloc(size ? size : 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory reading history ahead");
	memcpy(copy, data, size);
	a->cand[a->n_cand].id = *id;
	a->cand[a->n_cand].data = copy;
	a->cand[a->n_cand++].size = size;
	return 0;
}

/* has[i] for ids[0..n): 0 for those read ahead (known missing), the destination's answer for
 * the others (one question for all of them). */
static int ask_unknown(sync_ctx *s, history *h, const prolly_id *ids, size_t n, unsigned char *has)
{
	prolly_id *ask = malloc((n ? n : 1) * sizeof(*ask));
	unsigned char *got = malloc(n ? n : 1);
	size_t na = 0;
	int rc = 0;
	if (!ask || !got) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		ahead_obj *o = (ahead_obj *)prolly__idmap_get(&h->ahead, &ids[i]);
		has[i] = 0;
		if (!o || !o->data)
			ask[na++] = ids[i];
	}
	if ((rc = dst_has(s, ask, na, got)))
		goto cleanup;
	for (size_t i = 0, j = 0; i < n; i++) {
		ahead_obj *o = (ahead_obj *)prolly__idmap_get(&h->ahead, &ids[i]);
		if (!o || !o->data)
			has[i] = got[j++];
	}

cleanup:
	free(ask);
	free(got);
	return rc;
}

/* Reads the commits ids[0..n) the destination lacks into f: from the read-ahead, else from the
 * source (with get_ancestors, reading ahead: SY5). */
static int fetch_commits(sync_ctx *s, history *h, fetched *f, const prolly_id *ids, size_t n)
{
	anc_ctx a;
	prolly_id *rest = NULL;
	unsigned char *has = NULL;
	size_t nr = 0;
	int rc = 0;
	memset(&a, 0, sizeof(a));
	prolly__idmap_init(&a.want);
	if (!s->src->vt.get_ancestors)
		return src_fetch(s, f, ids, n);
	memset(f, 0, sizeof(*f));
	if (!n)
		return 0;
	f->nodes = calloc(n, sizeof(*f->nodes));
	rest = malloc(n * sizeof(*rest));
	if (!f->nodes || !rest) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading %zu commits", n);
		goto cleanup;
	}
	f->n = n;
	for (size_t i = 0; i < n && !rc; i++) {
		f->nodes[i].id = ids[i];
		ahead_obj *o = (ahead_obj *)prolly__idmap_get(&h->ahead, &ids[i]);
		if (o && o->data) { /* read ahead: the walk takes it */
			f->nodes[i].data = o->data;
			f->nodes[i].size = o->size;
			f->bytes += o->size;
			o->data = NULL;
			h->n_ahead--;
		} else if (!prolly__idmap_get(&a.want, &ids[i])) {
			rc = prolly__idmap_put(&a.want, &ids[i], i + 1);
			rest[nr++] = ids[i];
		}
	}
	if (rc || !nr)
		goto cleanup;
	a.h = h;
	a.f = f;
	a.max_cand = s->batch > h->n_ahead ? s->batch - h->n_ahead : 0;
	s->st.read_calls++;
	rc = s->src->vt.get_ancestors(s->src->store, rest, nr, nr + a.max_cand, &prolly__commit_layout,
	                              on_ancestor, &a);
	if (rc || !a.n_cand)
		goto cleanup;
	prolly_id *cid = malloc(a.n_cand * sizeof(*cid));
	has = malloc(a.n_cand);
	if (!cid || !has) {
		free(cid);
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading history ahead");
		goto cleanup;
	}
	for (size_t i = 0; i < a.n_cand; i++)
		cid[i] = a.cand[i].id;
	rc = dst_has(s, cid, a.n_cand, has);
	free(cid);
	for (size_t i = 0; i < a.n_cand && !rc; i++) {
		if (has[i]) { /* the walk stops there (K6) */
			rc = prolly__idmap_put(&h->index, &a.cand[i].id, PRESENT);
			continue;
		}
		ahead_obj *o = malloc(sizeof(*o));
		if (!o) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading history ahead");
			break;
		}
		o->data = (void *)a.cand[i].data;
		o->size = a.cand[i].size;
		if ((rc = prolly__idmap_put(&h->ahead, &a.cand[i].id, (uintptr_t)o))) {
			free(o);
			break;
		}
		a.cand[i].data = NULL; /* the table owns it now */
		h->n_ahead++;
	}

cleanup:
	for (size_t i = 0; i < a.n_cand; i++)
		free((void *)a.cand[i].data);
	free(a.cand);
	free(has);
	free(rest);
	prolly__idmap_dispose(&a.want);
	return rc;
}

/* Finds, newest first, the commits reachable from the queue that the destination lacks and the
 * source has, stopping at every commit the destination has (K6: its history is there). A start
 * commit (the first n_start) that neither store has is PROLLY_ENOTFOUND; a parent the source
 * lacks was removed by retention and is left out. */
static int find_missing(sync_ctx *s, history *h, size_t n_start)
{
	unsigned char *has = malloc(s->batch);
	fetched f;
	int rc = 0;
	memset(&f, 0, sizeof(f));
	if (!has)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	while (h->q_head < h->q_len && !rc) {
		size_t at = h->q_head, m = PROLLY_MIN(s->batch, h->q_len - at);
		prolly_id *ids = h->queue + at;
		h->q_head += m;
		if ((rc = ask_unknown(s, h, ids, m, has)))
			break;
		size_t nm = 0;
		prolly_id *miss = malloc(m * sizeof(*miss));
		size_t *pos = malloc(m * sizeof(*pos));
		if (!miss || !pos) {
			free(miss);
			free(pos);
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
			break;
		}
		for (size_t i = 0; i < m; i++)
			if (!has[i]) {
				pos[nm] = at + i;
				miss[nm++] = ids[i];
			}
		rc = fetch_commits(s, h, &f, miss, nm);
		for (size_t i = 0; i < nm && !rc; i++) {
			prolly_commit *c = NULL;
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &miss[i]);
			if (!f.nodes[i].data) {
				if (pos[i] < n_start)
					rc = prolly_set_error(PROLLY_ENOTFOUND, "sync: commit %s is in neither store",
					                      hex);
				else /* removed by retention in the source */
					rc = prolly__idmap_put(&h->index, &miss[i], PRUNED);
				continue;
			}
			if (f.nodes[i].size < PROLLY__MAGIC_SIZE ||
			    memcmp(f.nodes[i].data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0) {
				rc = prolly_set_error(PROLLY_EINVAL, "sync: %s is not a commit", hex);
				break;
			}
			if ((rc = prolly__commit_decode(&c, &miss[i], f.nodes[i].data, f.nodes[i].size)))
				break;
			rc = add_missing(h, c);
			for (size_t p = 0; p < c->n_parents && !rc; p++)
				rc = queue_push(h, &c->parents[p]);
			prolly_commit_free(c);
		}
		fetched_dispose(&f);
		free(miss);
		free(pos);
	}
	free(has);
	return rc;
}

/* The missing commits, parents first (SY2): an iterative post-order walk into order[]. */
static int order_parents_first(history *h, size_t *order)
{
	size_t *stack = malloc((h->n ? h->n : 1) * sizeof(*stack)), placed = 0;
	if (!stack)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu commits", h->n);
	for (size_t r = 0; r < h->n; r++) {
		if (h->c[r].state)
			continue;
		size_t sp = 0;
		stack[sp++] = r;
		h->c[r].state = 1;
		while (sp) {
			mcommit *c = &h->c[stack[sp - 1]];
			int pushed = 0;
			for (size_t p = 0; p < c->n_parents && !pushed; p++) {
				uintptr_t v = prolly__idmap_get(&h->index, &h->parents[c->first_parent + p]);
				if (v == 0 || v == PRESENT || v == PRUNED || h->c[v - 1].state)
					continue;
				h->c[v - 1].state = 1;
				stack[sp++] = v - 1;
				pushed = 1;
			}
			if (!pushed) {
				c->state = 2;
				order[placed++] = stack[--sp];
			}
		}
	}
	free(stack);
	return 0;
}

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
	if ((rc = order_parents_first(h, order)))
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
				if (prolly__idmap_get(&h->index, pid) != PRUNED)
					rc = prolly__buf_put(&req, pid->bytes, PROLLY_ID_SIZE);
			}
		}
		for (size_t i = 0; i < m; i++)
			ids[i] = h->c[order[at + i]].id;
		if ((rc = src_fetch(s, &f, ids, m)))
			break;
		for (size_t i = 0; i < m && !rc; i++)
			if (!f.nodes[i].data)
				rc = prolly_set_error(PROLLY_ENOTFOUND,
				                      "sync: a commit left the source during the sync");
		if (!rc && (rc = dst_write(s, f.nodes, m, &req)) == 0) {
			s->st.commits_copied += m;
			s->st.bytes_copied += f.bytes;
		}
		fetched_dispose(&f);
	}

cleanup:
	fetched_dispose(&f);
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
	if ((rc = src_fetch(s, &f, targets, nt)))
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
	fetched_dispose(&f);
	free(targets);
	prolly_txn_free(txn);
	return rc;
}

/* ---- the whole ----------------------------------------------------------------------------- */

int prolly_sync_options_init(prolly_sync_options *opts, unsigned version)
{
	if (!opts || version != PROLLY_SYNC_OPTIONS_VERSION)
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_sync_options_init: version %u; this "
		                        "library has version %d",
		                        version, PROLLY_SYNC_OPTIONS_VERSION);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return 0;
}

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
	prolly__idmap_init(&h.index);
	prolly__idmap_init(&h.ahead);
	if (!dst || !src || (n_commits && !commits) || (n_refs && !refs))
		return prolly_set_error(PROLLY_EINVAL, "prolly_sync: NULL db, commits or refs");
	if (opts && opts->version != PROLLY_SYNC_OPTIONS_VERSION)
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_sync: options version %u; this library has version %d",
		                        opts->version, PROLLY_SYNC_OPTIONS_VERSION);
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
		rc = queue_push(&h, id);
	}
	n_start = h.q_len;
	if (rc || (rc = find_missing(&s, &h, n_start)) || (rc = copy_commits(&s, &h)))
		goto cleanup;
	if (n_refs)
		rc = move_refs(&s, refs, n_refs, &o);

cleanup:
	free(h.c);
	free(h.parents);
	free(h.queue);
	prolly__idmap_dispose(&h.index);
	for (size_t i = 0; i < h.ahead.cap; i++) { /* what the walk never took */
		ahead_obj *o = (ahead_obj *)h.ahead.slots[i].val;
		if (o)
			free(o->data);
		free(o);
	}
	prolly__idmap_dispose(&h.ahead);
	if (out) {
		unsigned v = out->version;
		*out = s.st;
		out->version = v;
	}
	return rc;
}
