/*
 * sync_history.c - the walk of prolly_sync over commits (sync.c has the rest): which commits
 * reachable from the start the destination lacks, found newest first and stopping at every
 * commit it has (K6), read ahead where the source can (SY5), then put parents first for the
 * writes (SY2). Memory: 32 bytes and the parent ids per missing commit, plus at most a batch of
 * commits read ahead.
 */
#include "sync_int.h"

#include <stdlib.h>

void prolly__sync_history_init(history *h)
{
	memset(h, 0, sizeof(*h));
	prolly__idmap_init(&h->index);
	prolly__idmap_init(&h->ahead);
}

void prolly__sync_history_dispose(history *h)
{
	free(h->c);
	free(h->parents);
	free(h->queue);
	prolly__idmap_dispose(&h->index);
	for (size_t i = 0; i < h->ahead.len; i++) { /* what the walk never took */
		ahead_obj *o = (ahead_obj *)h->ahead.vals[i];
		if (o)
			free(o->data);
		free(o);
	}
	prolly__idmap_dispose(&h->ahead);
}

int prolly__sync_queue(history *h, const prolly_id *id)
{
	if (prolly__idmap_get(&h->index, id))
		return 0;
	int rc = prolly__idmap_put(&h->index, id, SYNC_PRESENT); /* seen; not (yet) known missing */
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
		return prolly__sync_on_fetched(a->f, k - 1, data, size);
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

/* SY7: is the commit object newer than the oldest commit the destination is known to hold? A
 * commit is newer than its parents (BR2 in branch.c), so an older one may be among the known
 * ones' ancestors and is asked about; a newer one cannot be, and is taken as missing (should
 * the destination have it from elsewhere, copying it again changes nothing, K3). */
static int newer_than_known(const sync_ctx *s, const prolly_store_node *o)
{
	prolly_commit *c = NULL;
	int newer = 0;
	if (prolly__commit_decode(&c, &o->id, o->data, o->size) == 0)
		newer = c->time_us > s->base_time;
	prolly_commit_free(c);
	return newer;
}

/* has[i] for ids[0..n): 0 for those read ahead (known missing), the destination's answer for
 * the others (one question for all of them). */
static int ask_unknown(sync_ctx *s, history *h, const prolly_id *ids, size_t n, unsigned char *has)
{
	if (s->local) { /* SY7: read first, asked by time (find_missing) */
		memset(has, 0, n);
		return 0;
	}
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
	if ((rc = prolly__sync_has(s, ask, na, got)))
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
		return prolly__sync_fetch(s, f, ids, n);
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
	/* SY7: a candidate newer than every known commit is missing; an older one is left for the
	 * walk to ask about should it get there (it stops at the known ones first). */
	size_t nask = 0;
	for (size_t i = 0; i < a.n_cand; i++) {
		has[i] = s->local ? (newer_than_known(s, &a.cand[i]) ? 0 : 2) : 0;
		if (!s->local)
			cid[nask++] = a.cand[i].id;
	}
	rc = prolly__sync_has(s, cid, nask, has);
	free(cid);
	for (size_t i = 0; i < a.n_cand && !rc; i++) {
		if (has[i] == 2) /* older than a known commit: not kept */
			continue;
		if (has[i]) { /* the walk stops there (K6) */
			rc = prolly__idmap_put(&h->index, &a.cand[i].id, SYNC_PRESENT);
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

/* SY7: of the commits ids[0..n) just read into f, those not known missing (known[i] 0) and not
 * newer than every known commit (or not in the source) are asked about, with their trees, in
 * one question; known[i] becomes 2 for each the destination has (marked present: the walk stops
 * there), and one whose tree it has too becomes known (its tree a reference for its children). */
static int ask_old(sync_ctx *s, history *h, const fetched *f, const prolly_id *ids, size_t n,
                   unsigned char *known)
{
	prolly_id *ask = malloc((n ? 2 * n : 1) * sizeof(*ask));
	unsigned char *got = malloc(n ? 2 * n : 1);
	size_t *at = malloc((n ? n : 1) * sizeof(*at)), na = 0, nt = 0;
	size_t *tree_at = malloc((n ? n : 1) * sizeof(*tree_at));
	int rc = 0;
	if (!ask || !got || !at || !tree_at) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		if (!known[i] && (!f->nodes[i].data || !newer_than_known(s, &f->nodes[i]))) {
			at[na] = i;
			ask[na++] = ids[i];
		}
	for (size_t j = 0; j < na && !rc; j++) { /* then their trees, in the same question */
		const prolly_store_node *o = &f->nodes[at[j]];
		prolly_commit *c = NULL;
		tree_at[j] = SIZE_MAX;
		if (o->data && prolly__commit_decode(&c, &o->id, o->data, o->size) == 0) {
			tree_at[j] = na + nt;
			ask[na + nt++] = c->tree;
		}
		prolly_commit_free(c);
	}
	if ((rc = prolly__sync_has(s, ask, na + nt, got)))
		goto cleanup;
	for (size_t j = 0; j < na && !rc; j++) {
		if (!got[j])
			continue;
		known[at[j]] = 2;
		rc = prolly__idmap_put(&h->index, &ids[at[j]], SYNC_PRESENT);
		if (!rc && tree_at[j] != SIZE_MAX &&
		    (got[tree_at[j]] || prolly_id_equal(&ask[tree_at[j]], &s->dst->empty_tree)))
			rc = prolly__sync_know(s, &ids[at[j]], &ask[tree_at[j]]);
	}

cleanup:
	free(ask);
	free(got);
	free(at);
	free(tree_at);
	return rc;
}

/* Finds, newest first, the commits reachable from the queue that the destination lacks and the
 * source has, stopping at every commit the destination has (K6: its history is there). A start
 * commit (the first n_start) that neither store has is PROLLY_ENOTFOUND; a parent the source
 * lacks was removed by retention and is left out. */
int prolly__sync_find_missing(sync_ctx *s, history *h, size_t n_start)
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
		if (s->local) /* SY7: has[i] now says "read ahead, known missing" */
			for (size_t i = 0; i < nm; i++) {
				ahead_obj *o = (ahead_obj *)prolly__idmap_get(&h->ahead, &miss[i]);
				has[i] = o && o->data;
			}
		rc = fetch_commits(s, h, &f, miss, nm);
		if (!rc && s->local)
			rc = ask_old(s, h, &f, miss, nm, has);
		for (size_t i = 0; i < nm && !rc; i++) {
			prolly_commit *c = NULL;
			char hex[PROLLY_ID_HEX_SIZE];
			if (s->local && has[i] == 2) /* the destination has it */
				continue;
			prolly_id_to_hex(hex, &miss[i]);
			if (!f.nodes[i].data) {
				if (pos[i] < n_start)
					rc = prolly_set_error(PROLLY_ENOTFOUND, "sync: commit %s is in neither store",
					                      hex);
				else /* removed by retention in the source */
					rc = prolly__idmap_put(&h->index, &miss[i], SYNC_PRUNED);
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
				rc = prolly__sync_queue(h, &c->parents[p]);
			prolly_commit_free(c);
		}
		prolly__sync_fetched_dispose(&f);
		free(miss);
		free(pos);
	}
	free(has);
	return rc;
}

/* The missing commits, parents first (SY2): an iterative post-order walk into order[]. */
int prolly__sync_order(history *h, size_t *order)
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
				if (v == 0 || v == SYNC_PRESENT || v == SYNC_PRUNED || h->c[v - 1].state)
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
