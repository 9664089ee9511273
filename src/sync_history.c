/*
 * sync_history.c - the walk of prolly_sync over commits (sync.c has the rest): which commits
 * reachable from the start the destination lacks, found newest first and stopping at every
 * commit it has (K6), read ahead where the source can (SY5), in windows of a batch of commits
 * each, put parents first for the writes (SY2), oldest window first (SY8).
 *
 *   SY8 Windows. The walk keeps a frontier: commits read, which the destination lacks, whose
 *       parents are not looked at yet, in a heap by time. It takes the newest into the window
 *       (the commits it will copy) and queues its parents; a parent read ahead (SY5) joins the
 *       frontier at once, the others are asked about and read a batch at a time. It takes a
 *       commit only when every parent of those taken before has been placed (asked, read), so
 *       with history made by this library (a commit newer than its parents, BR2 in branch.c)
 *       a commit is taken after all its children: once, with no table of the commits seen
 *       before. The window holds at most a batch of commits; when full, the frontier's ids
 *       are recorded as a checkpoint (the next window's start) and the walk goes on with an
 *       empty window. The last window, whose walk exhausted what the destination lacks, is
 *       copied as it is; then each earlier window, newest last, is walked again from its
 *       checkpoint, stopping at the next one's (whose commits the destination now holds:
 *       they were copied before), and copied. Windows go oldest first and commits parents
 *       first within one (prolly__sync_order), so every write keeps K6, and an interrupted
 *       sync leaves whole windows and a rerun walks only what is still missing.
 *
 *       Memory (ids held, prolly__sync_held): the window (a batch of commits with their
 *       parents), the frontier (the commits pending, as many as the history's lines of
 *       development running side by side), the read-ahead (a batch) and, for each window but
 *       the last, its checkpoint: 32 bytes per commit of the frontier where the window ended
 *       (one id per batch of commits of a linear history). The checkpoints are the one part
 *       that grows with the history; dropping them would mean walking from the heads again for
 *       each window (a read and a question per batch of commits walked, quadratic in the
 *       windows). A history longer than a window costs the walk's reads and questions twice
 *       (the replay asks again and reads again what the first walk did, a batch at a time).
 *       Commits made with prolly_commit_create may be older than a parent; a commit may then
 *       be taken before a child of its, and is taken again after that child: in the same
 *       window the index knows it (the order stays parents first, prolly__sync_order), in an
 *       older one it is taken and copied there, before the child, and the replay of the newer
 *       window finds it present (or, with a known head, copies it again: a no-op, K3).
 *   SY9 The checkpoints hold at most prolly__sync_cp_limit ids (SYNC_CP_LIMIT, 1 MiB of ids:
 *       for a linear history some 16 million commits at the default batch), besides the one
 *       window being walked. When a new one would pass that, the checkpoints of the newest
 *       windows are let go (dropped): the walk goes on, and the windows still held are copied,
 *       oldest first, as above. Then the sync walks again from its start (a new round): every
 *       commit the rounds before copied is in the destination now and stops the walk, so each
 *       round copies what the previous one left, newer history only, and the rounds end when a
 *       walk drops nothing. Memory is then bounded by the batch and the limit, whatever the
 *       history's length; a history past the limit costs one more walk of what is left per
 *       round. In a round after the first no commit is taken as missing for being newer than
 *       a known head (SY7): the walk asks about every commit, since the round before may have
 *       copied it.
 */
#include "sync_int.h"

#include <stdlib.h>

_Thread_local prolly__sync_held prolly__sync_last_held;
size_t prolly__sync_cp_limit = SYNC_CP_LIMIT;

static void ahead_clear(history *h)
{
	for (size_t i = 0; i < h->ahead.len; i++) {
		ahead_obj *o = (ahead_obj *)h->ahead.vals[i];
		if (o)
			free(o->data);
		free(o);
	}
	prolly__idmap_dispose(&h->ahead);
	prolly__idmap_init(&h->ahead);
	h->n_ahead = 0;
}

static void front_clear(history *h)
{
	for (size_t i = 0; i < h->n_front; i++)
		free(h->front[i].data);
	h->n_front = 0;
}

void prolly__sync_history_init(history *h)
{
	memset(h, 0, sizeof(*h));
	prolly__idmap_init(&h->index);
	prolly__idmap_init(&h->stop);
	prolly__idmap_init(&h->ahead);
}

void prolly__sync_history_dispose(history *h)
{
	front_clear(h);
	ahead_clear(h);
	free(h->c);
	free(h->parents);
	free(h->queue);
	free(h->front);
	free(h->cp);
	free(h->cp_at);
	prolly__idmap_dispose(&h->index);
	prolly__idmap_dispose(&h->stop);
	prolly__idmap_dispose(&h->ahead);
}

/* Empties the window and its index, then marks the known heads present (SY7: the walk stops
 * there) and the frontier's commits as such. */
static int window_reset(sync_ctx *s, history *h)
{
	int rc = 0;
	h->n = 0;
	h->n_parents = 0;
	prolly__idmap_dispose(&h->index);
	prolly__idmap_init(&h->index);
	for (size_t i = 0; i < s->n_heads && !rc; i++)
		rc = prolly__idmap_put(&h->index, &s->head[i], SYNC_PRESENT);
	for (size_t i = 0; i < h->n_front && !rc; i++)
		rc = prolly__idmap_put(&h->index, &h->front[i].id, SYNC_FRONT);
	return rc;
}

static int queue(history *h, const prolly_id *id)
{
	if (prolly__idmap_get(&h->index, id) || prolly__idmap_get(&h->stop, id))
		return 0;
	int rc = prolly__idmap_put(&h->index, id, SYNC_QUEUED);
	if (rc)
		return rc;
	if (PROLLY__GROW(h->queue, h->q_cap, h->q_len + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	h->queue[h->q_len++] = *id;
	return 0;
}

/* ---- the frontier: a heap, newest first (ties: by id, so that a replay takes the same) ---- */

static int front_before(const front_obj *a, const front_obj *b)
{
	if (a->time != b->time)
		return a->time > b->time;
	return memcmp(a->id.bytes, b->id.bytes, PROLLY_ID_SIZE) < 0;
}

/* Adds a commit read (data becomes the frontier's) with its time. */
static int front_push(history *h, const prolly_id *id, int64_t time, void *data, size_t size)
{
	if (PROLLY__GROW(h->front, h->cap_front, h->n_front + 1, 16)) {
		free(data);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	}
	int rc = prolly__idmap_put(&h->index, id, SYNC_FRONT);
	if (rc) {
		free(data);
		return rc;
	}
	size_t i = h->n_front++;
	front_obj o = {*id, time, data, size};
	while (i > 0 && front_before(&o, &h->front[(i - 1) / 2])) {
		h->front[i] = h->front[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->front[i] = o;
	return 0;
}

static front_obj front_pop(history *h)
{
	front_obj top = h->front[0], last = h->front[--h->n_front];
	size_t i = 0, n = h->n_front;
	for (;;) {
		size_t l = 2 * i + 1, best = i;
		const front_obj *b = &last;
		if (l < n && front_before(&h->front[l], b))
			best = l, b = &h->front[l];
		if (l + 1 < n && front_before(&h->front[l + 1], b))
			best = l + 1;
		if (best == i)
			break;
		h->front[i] = h->front[best];
		i = best;
	}
	if (n)
		h->front[i] = last;
	return top;
}

/* Adds a commit object the destination lacks to the frontier (data becomes the frontier's);
 * PROLLY_EINVAL if it is not a commit (naming the ref that was to point at it, if one was). */
static int front_add(const sync_ctx *s, history *h, const prolly_id *id, void *data, size_t size)
{
	prolly_commit *c = NULL;
	char hex[PROLLY_ID_HEX_SIZE];
	if (size < PROLLY__MAGIC_SIZE || memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0) {
		const char *ref = prolly__sync_ref_of(s, id);
		free(data);
		prolly_id_to_hex(hex, id);
		return ref ? prolly_set_error(PROLLY_EINVAL, "sync: %s names %s, which is not a commit",
		                              ref, hex)
		           : prolly_set_error(PROLLY_EINVAL, "sync: %s is not a commit", hex);
	}
	int rc = prolly__commit_decode(&c, id, data, size);
	if (rc) {
		free(data);
		return rc;
	}
	int64_t t = c->time_us;
	prolly_commit_free(c);
	return front_push(h, id, t, data, size);
}

static int add_missing(history *h, const prolly_commit *c)
{
	if (PROLLY__GROW(h->c, h->cap, h->n + 1, 64) ||
	    PROLLY__GROW(h->parents, h->cap_parents, h->n_parents + c->n_parents, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
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

int prolly__sync_parent_kept(const history *h, const prolly_id *pid)
{
	return prolly__idmap_get(&h->index, pid) != SYNC_PRUNED;
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
	    prolly__idmap_get(&a->h->ahead, id) || prolly__idmap_get(&a->h->stop, id) ||
	    size < PROLLY__MAGIC_SIZE || memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0)
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
	rc = prolly__sync_side(s, s->src,
	                       s->src->vt.get_ancestors(s->src->store, rest, nr, nr + a.max_cand,
	                                                &prolly__commit_layout, on_ancestor, &a));
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

/* Places every queued commit, a batch per question and read: the ones the destination lacks
 * join the frontier, the others are marked present, or pruned when the source lacks them too
 * (retention removed them there). A start commit that neither store has is PROLLY_ENOTFOUND. */
static int resolve(sync_ctx *s, history *h)
{
	unsigned char *has = NULL;
	prolly_id *miss = NULL;
	size_t *pos = NULL;
	fetched f;
	int rc = 0;
	memset(&f, 0, sizeof(f));
	if (h->q_head == h->q_len)
		goto cleanup;
	has = malloc(s->batch);
	miss = malloc(s->batch * sizeof(*miss));
	pos = malloc(s->batch * sizeof(*pos));
	if (!has || !miss || !pos) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		goto cleanup;
	}
	while (h->q_head < h->q_len && !rc) {
		size_t at = h->q_head, m = PROLLY_MIN(s->batch, h->q_len - at);
		prolly_id *ids = h->queue + at;
		h->q_head += m;
		if ((rc = ask_unknown(s, h, ids, m, has)))
			break;
		size_t nm = 0;
		for (size_t i = 0; i < m; i++) {
			if (!has[i]) {
				pos[nm] = at + i;
				miss[nm++] = ids[i];
			} else if ((rc = prolly__idmap_put(&h->index, &ids[i], SYNC_PRESENT))) {
				break;
			}
		}
		if (rc)
			break;
		if (s->local) /* SY7: has[i] now says "read ahead, known missing" */
			for (size_t i = 0; i < nm; i++) {
				ahead_obj *o = (ahead_obj *)prolly__idmap_get(&h->ahead, &miss[i]);
				has[i] = o && o->data;
			}
		rc = fetch_commits(s, h, &f, miss, nm);
		if (!rc && s->local)
			rc = ask_old(s, h, &f, miss, nm, has);
		for (size_t i = 0; i < nm && !rc; i++) {
			char hex[PROLLY_ID_HEX_SIZE];
			if (s->local && has[i] == 2) /* the destination has it */
				continue;
			if (!f.nodes[i].data) {
				prolly_id_to_hex(hex, &miss[i]);
				if (pos[i] < h->n_start && prolly__sync_ref_of(s, &miss[i]))
					rc = prolly_set_error(PROLLY_ENOTFOUND,
					                      "sync: %s names commit %s, which is in neither store",
					                      prolly__sync_ref_of(s, &miss[i]), hex);
				else if (pos[i] < h->n_start)
					rc = prolly_set_error(PROLLY_ENOTFOUND, "sync: commit %s is in neither store",
					                      hex);
				else /* removed by retention in the source */
					rc = prolly__idmap_put(&h->index, &miss[i], SYNC_PRUNED);
				continue;
			}
			rc = front_add(s, h, &miss[i], (void *)f.nodes[i].data, f.nodes[i].size);
			f.nodes[i].data = NULL; /* the frontier's now, or freed */
		}
		prolly__sync_fetched_dispose(&f);
	}
	h->q_head = h->q_len = 0;
	h->n_start = 0;

cleanup:
	prolly__sync_fetched_dispose(&f);
	free(has);
	free(miss);
	free(pos);
	return rc;
}

/* Takes the newest commits of the frontier into the window while every parent of those taken
 * is placed (SY8), up to limit: each parent not seen yet joins the frontier when it was read
 * ahead (SY5: known missing), else the queue. */
static int take(sync_ctx *s, history *h, size_t limit)
{
	int rc = 0;
	while (h->n_front && h->q_head == h->q_len && h->n < limit && !rc) {
		front_obj o = front_pop(h);
		prolly_commit *c = NULL;
		rc = prolly__commit_decode(&c, &o.id, o.data, o.size);
		free(o.data);
		if (!rc)
			rc = add_missing(h, c);
		for (size_t p = 0; c && p < c->n_parents && !rc; p++) {
			const prolly_id *pid = &c->parents[p];
			if (prolly__idmap_get(&h->index, pid) || prolly__idmap_get(&h->stop, pid))
				continue;
			ahead_obj *a = (ahead_obj *)prolly__idmap_get(&h->ahead, pid);
			if (a && a->data) {
				void *data = a->data;
				a->data = NULL;
				h->n_ahead--;
				rc = front_add(s, h, pid, data, a->size);
			} else {
				rc = queue(h, pid);
			}
		}
		prolly_commit_free(c);
	}
	return rc;
}

int prolly__sync_walk(sync_ctx *s, history *h, size_t limit, int *full)
{
	int rc = 0;
	*full = 0;
	for (;;) {
		if ((rc = resolve(s, h)))
			return rc;
		prolly__sync_note_held(s);
		if (!h->n_front)
			return 0;
		if (h->n >= limit) {
			*full = 1;
			return 0;
		}
		if ((rc = take(s, h, limit)))
			return rc;
	}
}

/* Appends ids[0..n) as the start of a new window. */
static int checkpoint(sync_ctx *s, history *h, const prolly_id *ids, size_t stride, size_t n)
{
	if (PROLLY__GROW(h->cp_at, h->cap_windows, h->n_windows + 2, 16) ||
	    PROLLY__GROW(h->cp, h->cap_cp, h->n_cp + n, 16))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	if (!h->n_windows)
		h->cp_at[0] = 0;
	for (size_t i = 0; i < n; i++)
		h->cp[h->n_cp++] = *(const prolly_id *)(const void *)((const char *)ids + i * stride);
	h->cp_at[++h->n_windows] = h->n_cp;
	/* SY9: let go of the newest windows' checkpoints (the first recorded) while over the limit,
	 * keeping the start of the window the walk goes on with */
	size_t drop = 0;
	while (drop + 1 < h->n_windows && h->n_cp - h->cp_at[drop] > prolly__sync_cp_limit)
		drop++;
	if (drop) {
		size_t from = h->cp_at[drop];
		memmove(h->cp, h->cp + from, (h->n_cp - from) * sizeof(*h->cp));
		for (size_t k = 0; k + drop <= h->n_windows; k++)
			h->cp_at[k] = h->cp_at[k + drop] - from;
		h->n_windows -= drop;
		h->n_cp -= from;
		h->dropped = 1;
	}
	if (h->n_cp > s->held.checkpoints)
		s->held.checkpoints = h->n_cp;
	return 0;
}

/* Empties the frontier, the read-ahead, the queue and the stop set: a walk starts afresh. */
static void walk_clear(history *h)
{
	front_clear(h);
	ahead_clear(h);
	h->q_head = h->q_len = 0;
	prolly__idmap_dispose(&h->stop);
	prolly__idmap_init(&h->stop);
}

int prolly__sync_start(sync_ctx *s, history *h, const prolly_id *ids, size_t n)
{
	walk_clear(h); /* a round after the first (SY9) starts from nothing but the ids */
	h->n_cp = h->n_windows = 0;
	h->dropped = 0;
	int rc = window_reset(s, h);
	for (size_t i = 0; i < n && !rc; i++)
		rc = queue(h, &ids[i]);
	h->n_start = h->q_len;
	/* window 0's start: the ids queued (a start listed twice, or a known head, is not) */
	return rc ? rc : checkpoint(s, h, h->queue, sizeof(prolly_id), h->q_len);
}

int prolly__sync_next_window(sync_ctx *s, history *h)
{
	int rc = checkpoint(s, h, &h->front[0].id, sizeof(front_obj), h->n_front);
	if (rc || (rc = window_reset(s, h)))
		return rc;
	/* the read-ahead keeps what the walk has not taken */
	prolly__idmap keep;
	prolly__idmap_init(&keep);
	for (size_t i = 0; i < h->ahead.len && !rc; i++) {
		ahead_obj *o = (ahead_obj *)h->ahead.vals[i];
		if (o && o->data)
			rc = prolly__idmap_put(&keep, &h->ahead.ids[i], (uintptr_t)o);
		else
			free(o);
		if (!rc)
			h->ahead.vals[i] = 0;
	}
	ahead_clear(h);
	h->ahead = keep;
	h->n_ahead = keep.len;
	return rc;
}

int prolly__sync_replay(sync_ctx *s, history *h, size_t k)
{
	int rc, full;
	walk_clear(h); /* what it read ahead may have been copied since */
	if ((rc = window_reset(s, h)))
		return rc;
	for (size_t i = h->cp_at[k + 1]; i < h->cp_at[k + 2] && !rc; i++)
		rc = prolly__idmap_put(&h->stop, &h->cp[i], 1);
	for (size_t i = h->cp_at[k]; i < h->cp_at[k + 1] && !rc; i++)
		rc = queue(h, &h->cp[i]);
	h->n_start = k == 0 && !h->dropped ? h->q_len : 0; /* window 0 starts at the start (SY9) */
	if (!rc)
		rc = prolly__sync_walk(s, h, SIZE_MAX, &full);
	return rc;
}

/* The window's commits, parents first (SY2): an iterative post-order walk into order[]. */
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
				if (v == 0 || v > h->n || h->c[v - 1].state)
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
