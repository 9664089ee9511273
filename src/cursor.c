/*
 * cursor.c - ordered iteration over one tree, forward or reverse, within a range.
 *
 * Shape. The cursor keeps one `lvl` per tree level (0 = leaves, top = the root's level). Each
 * level has a current node (the one being walked) and a FIFO of nodes already loaded that come
 * next at that level, in the walking direction. A level above the leaves hands out child ids one
 * at a time; when its current node runs out it takes the next node of its own FIFO.
 *
 * Batched loading. When level L needs a node and its FIFO is empty, `refill` gathers up to
 * `batch` child ids from level L+1 (crossing into the next parent only when that parent is
 * already loaded, so gathering never costs an extra round trip) and loads them with ONE
 * prolly__load call. The batch starts small (a short scan reads little) and doubles up to
 * MAX_BATCH. A full scan costs about one store call per MAX_BATCH leaves, plus one per
 * MAX_BATCH nodes of each level above.
 *
 * Range. Bounds are normalised at open into lo/hi (prefix p becomes [p, succ(p)) intersected
 * with the explicit bounds). A child is handed out only if it can hold a key in range:
 *   forward: child i of P is beyond hi iff i > 0 and key(P, i-1) >= hi (its keys are all greater
 *            than key(P, i-1)); child 0 of a node is needed iff that node was needed.
 *   reverse: child i is below lo iff key(P, i) < lo (<= lo when lo is exclusive).
 * So no node past the range end is ever loaded. The first node that becomes current at each
 * level is positioned at the child holding the range start (a seek); later ones start at their
 * first (forward) or last (reverse) item.
 *
 * Read-ahead. Once the leaf batch has grown to MAX_BATCH (a long scan), every leaf refill also
 * gathers the ids of the batch after it and hands their load to a background thread, so the
 * store (PostgreSQL on another core) fetches batches k+1.. while the caller walks batch k. The next
 * refill joins that load instead of calling the store. Ids are gathered exactly as a synchronous
 * refill would gather them, so read-ahead never loads a node outside the range; a cursor closed
 * early has read at most RA_DEPTH batches it did not need. At most RA_DEPTH loads are in flight
 * per cursor (a ring, consumed in walking order). With PROLLY_DB_NO_THREADS there is no
 * read-ahead: a load on the caller's own thread would overlap nothing, and a cursor closed early
 * (a scan with a row limit and no upper bound) would have read RA_DEPTH batches for nothing.
 *
 * Memory. The cursor holds its own reference on every node it keeps (current nodes and FIFOs)
 * and drops a node as soon as it is passed. Each load uses a short-lived working set that is
 * disposed right after the cursor has taken its references. At most (1 + MAX_BATCH) nodes per
 * level are held. No allocation happens per record.
 *
 * Invariants:
 *   CU1 lv[L].node, when set, is a node of level L; every node in lv[L].q is of level L.
 *   CU2 forward: at leaf level begin <= i <= end <= n; reverse: begin <= i <= end as well, and
 *       the next record is i (forward) or i - 1 (reverse). Records outside [begin, end) are
 *       outside the range.
 *   CU3 an internal level's cursor i is in [0, n] and is the next child to hand out (forward) or
 *       one past it (reverse).
 *   CU4 nodes in a FIFO follow the current node in walking order without gaps among the nodes
 *       that intersect the range.
 *   CU5 once lv[L].ended is set no further node at level L intersects the range.
 *   CU6 while a read-ahead is in flight, the leaf FIFO holds the nodes before its batch and no
 *       other thread touches the cursor's levels; its ids were taken from level 1 already.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_BATCH 64
#define FIRST_BATCH 4
#define NEED_LOAD 1 /* internal: the next node is not loaded and loading was not allowed */

typedef struct lvl {
	pnode *node;     /* current node, referenced, or NULL */
	uint32_t i;      /* position (CU2, CU3) */
	uint32_t begin;  /* leaf: first record in range */
	uint32_t end;    /* leaf: one past the last record in range */
	pnode **q;       /* FIFO of loaded nodes (MAX_BATCH slots), referenced */
	uint32_t qh, qn; /* head index and count */
	uint32_t batch;  /* ids gathered per refill of this level */
	int first;       /* the next node to become current is the first one at this level */
	int ended;       /* CU5 */
} lvl;

/* A leaf batch being loaded by a background thread (CU6). */
typedef struct readahead {
	pthread_t thread;
	int active; /* a load was started and not yet joined */
	prolly_db *db;
	prolly_id ids[MAX_BATCH];
	pnode *got[MAX_BATCH]; /* borrowed from ws */
	uint32_t n;
	prolly__nodeset ws;
	int rc;
	prolly__counters stats; /* the loading thread's counters, handed to the cursor's thread */
	char msg[1024];
} readahead;

/* Leaf batches read ahead at once: two, so that with PostgreSQL one is being fetched by a server
 * backend while the other is being verified and decoded here, keeping both cores busy. */
#define RA_DEPTH 2

struct prolly_cursor {
	prolly_db *db;
	readahead ra[RA_DEPTH]; /* a ring: ra_n slots from ra_head, in walking order */
	unsigned ra_head, ra_n;
	int ra_over; /* gathering for read-ahead found no more leaves */
	int reverse;
	int done; /* no more records */
	int err;  /* sticky error */
	int has_lo, lo_excl, has_hi, hi_incl;
	prolly_buf lo, hi; /* normalised bounds (owned copies) */
	prolly_buf prefix;
	unsigned top; /* level of the root */
	lvl *lv;      /* top + 1 levels */
};

static int corrupt_level(const pnode *nd, unsigned want)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &nd->id);
	return prolly_set_error(PROLLY_ECORRUPT, "node %s has level %u where level %u was expected",
	                        hex, nd->level, want);
}

static int key_cmp_buf(prolly_slice k, const prolly_buf *b)
{
	return prolly__keycmp(k.data, k.size, b->ptr, b->size);
}

/* Index of the first item past the lower bound (>= lo, or > lo when exclusive). */
static uint32_t pos_after_lo(const prolly_cursor *c, const pnode *nd)
{
	uint32_t p = prolly__node_lower_bound(nd, c->lo.ptr, c->lo.size);
	if (c->lo_excl && p < nd->n && key_cmp_buf(prolly__node_key(nd, p), &c->lo) == 0)
		p++;
	return p;
}

/* Index one past the last item within the upper bound (< hi, or <= hi when inclusive). */
static uint32_t pos_before_hi(const prolly_cursor *c, const pnode *nd)
{
	uint32_t p = prolly__node_lower_bound(nd, c->hi.ptr, c->hi.size);
	if (c->hi_incl && p < nd->n && key_cmp_buf(prolly__node_key(nd, p), &c->hi) == 0)
		p++;
	return p;
}

static int has_prefix(prolly_slice k, const prolly_buf *p)
{
	return k.size >= p->size && (p->size == 0 || memcmp(k.data, p->ptr, p->size) == 0);
}

/* Makes nd the current node of level L and positions it (CU2, CU3). Takes over the reference. */
static int set_current(prolly_cursor *c, unsigned L, pnode *nd)
{
	lvl *v = &c->lv[L];
	assert(nd->level == L); /* CU1 */
	prolly__node_unref(v->node);
	v->node = nd;
	int first = v->first;
	v->first = 0;
	if (L > 0) {
		if (!c->reverse)
			v->i = first && c->has_lo ? pos_after_lo(c, nd) : 0;
		else if (first && c->has_hi)
			v->i = PROLLY_MIN(prolly__node_lower_bound(nd, c->hi.ptr, c->hi.size) + 1, nd->n);
		else
			v->i = nd->n;
		return 0;
	}
	uint32_t n = nd->n, b = 0, e = n;
	if (n > 0 && c->has_lo && key_cmp_buf(prolly__node_key(nd, 0), &c->lo) <= 0) {
		b = pos_after_lo(c, nd);
		if (c->reverse)
			v->ended = 1; /* the range starts in this leaf: earlier leaves are below it */
	}
	if (n > 0 && c->has_hi && key_cmp_buf(prolly__node_key(nd, n - 1), &c->hi) >= 0) {
		e = pos_before_hi(c, nd);
		if (!c->reverse)
			v->ended = 1; /* the range ends in this leaf: later leaves are beyond it */
	}
	if (e < b)
		e = b;
	if (c->prefix.size && b < e &&
	    (!has_prefix(prolly__node_key(nd, b), &c->prefix) ||
	     !has_prefix(prolly__node_key(nd, e - 1), &c->prefix))) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, &nd->id);
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "leaf %s holds a key outside the prefix range: keys out of order",
		                        hex);
	}
	v->begin = b;
	v->end = e;
	v->i = c->reverse ? e : b;
	assert(v->begin <= v->i && v->i <= v->end && v->end <= n); /* CU2 */
	return 0;
}

static int level_advance(prolly_cursor *c, unsigned L, int may_load);

/*
 * Hands out the next child id of level L (L >= 1) that may intersect the range. ITEROVER when
 * none is left at this level; NEED_LOAD when the current node of level L is exhausted.
 */
static int next_child(prolly_cursor *c, unsigned L, prolly_id *out)
{
	lvl *v = &c->lv[L];
	pnode *nd = v->node;
	if (v->ended)
		return PROLLY_ITEROVER;
	if (nd) {
		assert(L >= 1 && nd->level == L && v->i <= nd->n); /* CU1, CU3 */
		if (!c->reverse && v->i < nd->n) {
			uint32_t i = v->i;
			if (c->has_hi && i > 0 && key_cmp_buf(prolly__node_key(nd, i - 1), &c->hi) >= 0) {
				v->ended = 1;
				return PROLLY_ITEROVER;
			}
			*out = *prolly__node_child(nd, i);
			v->i = i + 1;
			return 0;
		}
		if (c->reverse && v->i > 0) {
			uint32_t i = v->i - 1;
			if (c->has_lo) {
				int cmp = key_cmp_buf(prolly__node_key(nd, i), &c->lo);
				if (cmp < 0 || (cmp == 0 && c->lo_excl)) {
					v->ended = 1;
					return PROLLY_ITEROVER;
				}
			}
			*out = *prolly__node_child(nd, i);
			v->i = i;
			return 0;
		}
	}
	return NEED_LOAD; /* the current node is exhausted: the caller decides whether to advance */
}

/* Takes up to `want` child ids from level L+1 into ids (*n of them). 0, or an error. */
static int gather(prolly_cursor *c, unsigned L, prolly_id *ids, uint32_t want, uint32_t *n)
{
	int rc;
	*n = 0;
	while (*n < want) {
		rc = next_child(c, L + 1, &ids[*n]);
		if (rc == 0) {
			(*n)++;
			continue;
		}
		if (rc < 0 && rc != PROLLY_ITEROVER)
			return rc;
		if (rc == PROLLY_ITEROVER)
			break;
		/* NEED_LOAD: the parent is exhausted; move on only if that costs no round trip. */
		rc = level_advance(c, L + 1, *n == 0);
		if (rc == NEED_LOAD || rc == PROLLY_ITEROVER)
			break;
		if (rc)
			return rc;
	}
	return 0;
}

/* Checks the levels of n loaded nodes and moves them (referenced) into the empty FIFO of L. */
static int fill_queue(prolly_cursor *c, unsigned L, pnode **got, uint32_t n)
{
	lvl *v = &c->lv[L];
	for (uint32_t k = 0; k < n; k++)
		if (got[k]->level != L)
			return corrupt_level(got[k], L);
	for (uint32_t k = 0; k < n; k++) {
		prolly__node_ref(got[k]);
		v->q[k] = got[k];
	}
	v->qh = 0;
	v->qn = n;
	return 0;
}

static void *readahead_main(void *arg)
{
	readahead *ra = arg;
	prolly_thread_stats_reset();
	ra->rc = prolly__load(ra->db, &ra->ws, ra->ids, ra->n, ra->got);
	if (ra->rc)
		snprintf(ra->msg, sizeof(ra->msg), "%s", prolly_last_error());
	prolly__thread_counters(&ra->stats);
	return NULL;
}

/* Waits for the read-ahead; its counters and error become the calling thread's. */
static int readahead_join(readahead *ra)
{
	if (!ra->active)
		return 0;
	pthread_join(ra->thread, NULL);
	ra->active = 0;
	prolly__thread_counters_add(&ra->stats);
	if (ra->rc)
		prolly_set_error(ra->rc, "%s", ra->msg);
	return ra->rc;
}

static void readahead_dispose(readahead *ra)
{
	readahead_join(ra);
	prolly__nodeset_dispose(&ra->ws);
	ra->n = 0;
}

/* Fills the read-ahead ring: gathers each next leaf batch and starts loading it in the
 * background, until RA_DEPTH loads are pending or no leaf is left. */
static int readahead_top_up(prolly_cursor *c)
{
	while (c->ra_n < RA_DEPTH && !c->ra_over) {
		readahead *ra = &c->ra[(c->ra_head + c->ra_n) % RA_DEPTH];
		uint32_t n;
		int rc = gather(c, 0, ra->ids, MAX_BATCH, &n);
		if (rc)
			return rc;
		if (n == 0) {
			c->ra_over = 1;
			break;
		}
		ra->db = c->db;
		ra->n = n;
		ra->rc = 0;
		prolly__nodeset_init(&ra->ws);
		c->ra_n++;
		if (pthread_create(&ra->thread, NULL, readahead_main, ra) == 0)
			ra->active = 1;
		else if ((ra->rc = prolly__load(c->db, &ra->ws, ra->ids, n, ra->got)))
			return ra->rc; /* no thread: loaded here (the ids were taken already) */
	}
	return 0;
}

/* Loads up to lv[L].batch nodes of level L with one store call into lv[L].q. */
static int refill(prolly_cursor *c, unsigned L)
{
	lvl *v = &c->lv[L];
	prolly_id ids[MAX_BATCH];
	pnode *got[MAX_BATCH];
	uint32_t n = 0;
	int rc = 0;
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	assert(v->qn == 0 && L < c->top);
	if (L == 0 && c->ra_n > 0) { /* the oldest batch read ahead (CU6) */
		readahead *ra = &c->ra[c->ra_head];
		if ((rc = readahead_join(ra)) == 0)
			rc = fill_queue(c, 0, ra->got, ra->n);
		readahead_dispose(ra);
		c->ra_head = (c->ra_head + 1) % RA_DEPTH;
		c->ra_n--;
		return rc ? rc : readahead_top_up(c);
	}
	if ((rc = gather(c, L, ids, v->batch, &n)))
		goto cleanup;
	if (n == 0) {
		v->ended = 1;
		rc = PROLLY_ITEROVER;
		goto cleanup;
	}
	rc = prolly__load(c->db, &ws, ids, n, got);
	if (rc || (rc = fill_queue(c, L, got, n)))
		goto cleanup;
	if (v->batch < MAX_BATCH)
		v->batch *= 2;
	else if (L == 0 && !(c->db->opts.flags & PROLLY_DB_NO_THREADS))
		rc = readahead_top_up(c);
cleanup:
	prolly__nodeset_dispose(&ws);
	return rc;
}

/*
 * Makes the next node of level L current. ITEROVER when there is none. With may_load 0,
 * returns NEED_LOAD instead of calling the store.
 */
static int level_advance(prolly_cursor *c, unsigned L, int may_load)
{
	lvl *v = &c->lv[L];
	if (v->qn == 0) {
		if (L == c->top || v->ended) {
			v->ended = 1;
			prolly__node_unref(v->node);
			v->node = NULL;
			return PROLLY_ITEROVER;
		}
		if (!may_load)
			return NEED_LOAD;
		int rc = refill(c, L);
		if (rc)
			return rc;
	}
	pnode *nd = v->q[v->qh];
	v->q[v->qh] = NULL;
	v->qh++;
	v->qn--;
	return set_current(c, L, nd);
}

/* Slow path of cursor_next: the current leaf is exhausted. Moves to the next leaf with items in
 * it; at the end of the range marks the cursor done, and on an error keeps the error, which
 * every later cursor_next returns. 0, PROLLY_ITEROVER or the error. */
static int next_leaf(prolly_cursor *c)
{
	lvl *v = &c->lv[0];
	int rc;
	for (;;) {
		if (v->ended && v->qn == 0) {
			/* CU5 for leaves: the range ended in the current leaf (or nothing is left). */
			rc = PROLLY_ITEROVER;
			break;
		}
		if ((rc = level_advance(c, 0, 1)))
			break;
		if (v->begin < v->end)
			return 0;
	}
	if (rc == PROLLY_ITEROVER)
		c->done = 1;
	else
		c->err = rc;
	return rc;
}

int prolly_cursor_next(prolly_cursor *cur, prolly_slice *key, prolly_slice *value)
{
	lvl *v;
	uint32_t i;
	int rc;
	if (!cur)
		return prolly_set_error(PROLLY_EINVAL, "cursor is NULL");
	if (cur->err)
		return cur->err;
	if (cur->done)
		return PROLLY_ITEROVER;
	v = &cur->lv[0];
	if (!cur->reverse) {
		if (v->i >= v->end && (rc = next_leaf(cur)))
			return rc;
		i = v->i++;
	} else {
		if (v->i <= v->begin && (rc = next_leaf(cur)))
			return rc;
		i = --v->i;
	}
	if (key)
		*key = prolly__node_key(v->node, i);
	if (value)
		*value = prolly__node_value(v->node, i);
	return 0;
}

/* succ(p): the smallest key greater than every key starting with p; 0 if there is none. */
static int prefix_successor(prolly_buf *out, const prolly_slice *p, int *exists)
{
	const unsigned char *d = p->data;
	size_t len = p->size;
	while (len > 0 && d[len - 1] == 0xff)
		len--;
	*exists = len > 0;
	if (!len)
		return 0;
	int rc = prolly__buf_set(out, d, len);
	if (rc)
		return rc;
	out->ptr[len - 1]++;
	return 0;
}

/* Normalises range into the cursor's bounds. Sets c->done for an empty range. */
static int set_bounds(prolly_cursor *c, const prolly_range *r)
{
	int rc = 0, exists = 0;
	prolly_buf succ = PROLLY_BUF_INIT;
	if ((r->has_lo && r->lo.size && !r->lo.data) || (r->has_hi && r->hi.size && !r->hi.data) ||
	    (r->prefix.size && !r->prefix.data)) {
		rc = prolly_set_error(PROLLY_EINVAL, "range bound has size but no data");
		goto cleanup;
	}
	c->reverse = r->reverse != 0;
	if (r->has_lo) {
		if ((rc = prolly__buf_set(&c->lo, r->lo.data, r->lo.size)))
			goto cleanup;
		c->has_lo = 1;
		c->lo_excl = r->lo_exclusive != 0;
	}
	if (r->has_hi) {
		if ((rc = prolly__buf_set(&c->hi, r->hi.data, r->hi.size)))
			goto cleanup;
		c->has_hi = 1;
		c->hi_incl = r->hi_inclusive != 0;
	}
	if (r->prefix.size) {
		if ((rc = prolly__buf_set(&c->prefix, r->prefix.data, r->prefix.size)))
			goto cleanup;
		/* lo = max(lo, prefix inclusive) */
		if (!c->has_lo ||
		    prolly__keycmp(c->lo.ptr, c->lo.size, r->prefix.data, r->prefix.size) < 0) {
			if ((rc = prolly__buf_set(&c->lo, r->prefix.data, r->prefix.size)))
				goto cleanup;
			c->has_lo = 1;
			c->lo_excl = 0;
		}
		/* hi = min(hi, succ(prefix) exclusive); no successor (all 0xff) means no upper bound */
		if ((rc = prefix_successor(&succ, &r->prefix, &exists)))
			goto cleanup;
		if (exists &&
		    (!c->has_hi || prolly__keycmp(succ.ptr, succ.size, c->hi.ptr, c->hi.size) <= 0)) {
			if ((rc = prolly__buf_set(&c->hi, succ.ptr, succ.size)))
				goto cleanup;
			c->has_hi = 1;
			c->hi_incl = 0;
		}
	}
	if (c->has_lo && c->has_hi) {
		int cmp = prolly__keycmp(c->lo.ptr, c->lo.size, c->hi.ptr, c->hi.size);
		if (cmp > 0 || (cmp == 0 && (c->lo_excl || !c->hi_incl)))
			c->done = 1;
	}
	/* Keep the bound buffers non-NULL so that lower-bound searches get a valid pointer. */
	if (c->has_lo && !c->lo.ptr && (rc = prolly__buf_set(&c->lo, "", 0)))
		goto cleanup;
	if (c->has_hi && !c->hi.ptr && (rc = prolly__buf_set(&c->hi, "", 0)))
		goto cleanup;
cleanup:
	prolly_buf_dispose(&succ);
	return rc;
}

int prolly_cursor_open(prolly_cursor **out, prolly_db *db, const prolly_id *root,
                       const prolly_range *range)
{
	int rc = 0;
	prolly_cursor *c = NULL;
	pnode *rn = NULL;
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	if (!out || !db || !root) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_cursor_open: NULL argument");
		goto cleanup;
	}
	if ((rc = prolly__range_check(range)))
		goto cleanup;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory opening a cursor");
		goto cleanup;
	}
	c->db = db;
	if (range && (rc = set_bounds(c, range)))
		goto cleanup;
	if (c->done)
		goto cleanup; /* empty range: nothing is read */
	if ((rc = prolly__load_root(db, &ws, root, &rn)))
		goto cleanup;
	c->top = rn->level;
	c->lv = calloc((size_t)c->top + 1, sizeof(lvl));
	if (!c->lv) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory opening a cursor");
		goto cleanup;
	}
	for (unsigned L = 0; L <= c->top; L++) {
		c->lv[L].first = 1;
		c->lv[L].batch = FIRST_BATCH;
		if (L < c->top) {
			c->lv[L].q = calloc(MAX_BATCH, sizeof(pnode *));
			if (!c->lv[L].q) {
				rc = prolly_set_error(PROLLY_ENOMEM, "out of memory opening a cursor");
				goto cleanup;
			}
		}
	}
	prolly__node_ref(rn);
	if ((rc = set_current(c, c->top, rn)))
		goto cleanup;
	if (c->top == 0 && c->lv[0].begin == c->lv[0].end)
		c->done = 1;
cleanup:
	prolly__nodeset_dispose(&ws);
	if (rc) {
		prolly_cursor_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void prolly_cursor_free(prolly_cursor *cur)
{
	if (!cur)
		return;
	for (unsigned k = 0; k < RA_DEPTH; k++)
		readahead_dispose(&cur->ra[k]);
	if (cur->lv) {
		for (unsigned L = 0; L <= cur->top; L++) {
			lvl *v = &cur->lv[L];
			prolly__node_unref(v->node);
			for (uint32_t k = 0; k < v->qn; k++)
				prolly__node_unref(v->q[v->qh + k]);
			free(v->q);
		}
		free(cur->lv);
	}
	prolly_buf_dispose(&cur->lo);
	prolly_buf_dispose(&cur->hi);
	prolly_buf_dispose(&cur->prefix);
	free(cur);
}
