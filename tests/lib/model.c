/*
 * model.c - the reference model and helpers of tests/lib/model.h.
 */
#include "model.h"
#include "rng.h"

#include "format.h"

#include <errno.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- PRNG ---------------------------------------------------------------------------------- */

void tm_rng_seed(tm_rng *r, uint64_t seed)
{
	bench_xoshiro_seed(r, seed);
}

uint64_t tm_rng_next(tm_rng *r)
{
	return bench_xoshiro_next(r);
}

static uint64_t model_draw(void *r)
{
	return bench_xoshiro_next(r);
}

uint64_t tm_rng_below(tm_rng *r, uint64_t n)
{
	return bench_below(model_draw, r, n);
}

uint64_t tm_rng_range(tm_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + tm_rng_below(r, hi - lo + 1);
}

int tm_rng_chance(tm_rng *r, uint64_t num, uint64_t den)
{
	return tm_rng_below(r, den) < num;
}

void tm_rng_bytes(tm_rng *r, void *out, size_t n)
{
	unsigned char *p = out;
	while (n) {
		uint64_t v = tm_rng_next(r);
		for (int i = 0; i < 8 && n; i++, n--) {
			*p++ = (unsigned char)v;
			v >>= 8;
		}
	}
}

void tm_shuffle(tm_rng *r, void *base, size_t n, size_t size)
{
	unsigned char *b = base, tmp[256];
	if (size > sizeof(tmp))
		abort();
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)tm_rng_below(r, i);
		if (j != i - 1) {
			memcpy(tmp, b + j * size, size);
			memcpy(b + j * size, b + (i - 1) * size, size);
			memcpy(b + (i - 1) * size, tmp, size);
		}
	}
}

unsigned tm_scale(void)
{
	const char *s = getenv("PROLLY_TEST_SCALE");
	long v = s && *s ? strtol(s, NULL, 0) : 1;
	return v < 1 ? 1 : v > 1000 ? 1000 : (unsigned)v;
}

/* ---- generators ---------------------------------------------------------------------------- */

size_t tm_gen_key(tm_rng *r, unsigned char *out)
{
	size_t len;
	uint64_t shape = tm_rng_below(r, 8);
	if (shape < 3)
		len = (size_t)tm_rng_range(r, 1, 4);
	else if (shape < 6)
		len = (size_t)tm_rng_range(r, 5, 16);
	else
		len = (size_t)tm_rng_range(r, 17, TM_KEY_MAX);
	tm_rng_bytes(r, out, len);
	/* A small first-byte alphabet makes shared prefixes common; sometimes force extremes. */
	uint64_t f = tm_rng_below(r, 16);
	if (f < 10)
		out[0] = (unsigned char)("\x00\x01\x7f\x80\xfe\xff"
		                         "abcd"[f]);
	else if (f < 12 && len > 1)
		out[1] = out[0] = 0;
	return len;
}

void tm_key24(unsigned char out[TM_KEY24], uint64_t i)
{
	for (int b = 0; b < 8; b++)
		out[b] = (unsigned char)(i >> (56 - 8 * b));
	uint64_t x = i ^ 0x243f6a8885a308d3ULL;
	uint64_t h1 = bench_splitmix64(&x), h2 = bench_splitmix64(&x);
	for (int b = 0; b < 8; b++) {
		out[8 + b] = (unsigned char)(h1 >> (8 * b));
		out[16 + b] = (unsigned char)(h2 >> (8 * b));
	}
}

size_t tm_gen_value(tm_rng *r, unsigned char *out, unsigned big_den)
{
	size_t len;
	if (big_den && tm_rng_chance(r, 1, big_den))
		len = tm_rng_chance(r, 1, 4) ? TM_VAL_BIG : (size_t)tm_rng_range(r, 201, TM_VAL_BIG);
	else
		len = (size_t)tm_rng_below(r, 201);
	if (len <= 64) {
		tm_rng_bytes(r, out, len);
	} else {
		/* Cheap for big values: a random head and a repeated pattern. */
		tm_rng_bytes(r, out, 64);
		for (size_t i = 64; i < len; i++)
			out[i] = (unsigned char)(out[i % 64] + i / 64);
	}
	return len;
}

/* ---- the model ----------------------------------------------------------------------------- */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "model: out of memory\n");
		abort();
	}
	return p;
}

static unsigned char *dup_bytes(const void *p, size_t n)
{
	unsigned char *d = xmalloc(n);
	if (n)
		memcpy(d, p, n);
	return d;
}

static int keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen;
	int c = m ? memcmp(a, b, m) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void tm_model_init(tm_model *m)
{
	memset(m, 0, sizeof(*m));
}

void tm_model_clear(tm_model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->r[i].k);
		free(m->r[i].v);
	}
	m->n = 0;
}

void tm_model_dispose(tm_model *m)
{
	tm_model_clear(m);
	free(m->r);
	memset(m, 0, sizeof(*m));
}

void tm_model_copy(tm_model *dst, const tm_model *src)
{
	tm_model_clear(dst);
	if (dst->cap < src->n) {
		free(dst->r);
		dst->cap = src->n;
		dst->r = xmalloc(sizeof(tm_rec) * dst->cap);
	}
	for (size_t i = 0; i < src->n; i++) {
		dst->r[i].k = dup_bytes(src->r[i].k, src->r[i].klen);
		dst->r[i].klen = src->r[i].klen;
		dst->r[i].v = dup_bytes(src->r[i].v, src->r[i].vlen);
		dst->r[i].vlen = src->r[i].vlen;
	}
	dst->n = src->n;
}

void tm_model_move(tm_model *dst, tm_model *src)
{
	tm_model_dispose(dst);
	*dst = *src;
	tm_model_init(src);
}

size_t tm_model_lower_bound(const tm_model *m, const void *key, size_t klen)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (keycmp(m->r[mid].k, m->r[mid].klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long tm_model_find(const tm_model *m, const void *key, size_t klen)
{
	size_t i = tm_model_lower_bound(m, key, klen);
	if (i < m->n && keycmp(m->r[i].k, m->r[i].klen, key, klen) == 0)
		return (long)i;
	return -1;
}

const tm_rec *tm_model_get(const tm_model *m, const void *key, size_t klen)
{
	long i = tm_model_find(m, key, klen);
	return i < 0 ? NULL : &m->r[i];
}

void tm_model_put(tm_model *m, const void *key, size_t klen, const void *val, size_t vlen)
{
	/* A key after the last one is appended without the binary search: models filled in key
	 * order (copies of ranges, ordered keys) made it most of their tests' time under ASan. */
	size_t i = m->n && keycmp(m->r[m->n - 1].k, m->r[m->n - 1].klen, key, klen) < 0
	               ? m->n
	               : tm_model_lower_bound(m, key, klen);
	if (i < m->n && keycmp(m->r[i].k, m->r[i].klen, key, klen) == 0) {
		free(m->r[i].v);
		m->r[i].v = dup_bytes(val, vlen);
		m->r[i].vlen = vlen;
		return;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		tm_rec *r = realloc(m->r, sizeof(tm_rec) * cap);
		if (!r)
			abort();
		m->r = r;
		m->cap = cap;
	}
	memmove(&m->r[i + 1], &m->r[i], sizeof(tm_rec) * (m->n - i));
	m->r[i].k = dup_bytes(key, klen);
	m->r[i].klen = klen;
	m->r[i].v = dup_bytes(val, vlen);
	m->r[i].vlen = vlen;
	m->n++;
}

int tm_model_del(tm_model *m, const void *key, size_t klen)
{
	long i = tm_model_find(m, key, klen);
	if (i < 0)
		return 0;
	free(m->r[i].k);
	free(m->r[i].v);
	memmove(&m->r[i], &m->r[i + 1], sizeof(tm_rec) * (m->n - (size_t)i - 1));
	m->n--;
	return 1;
}

void tm_model_cut(tm_model *m, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		free(m->r[i].k);
		free(m->r[i].v);
	}
	if (hi < m->n) /* m->r is NULL in a model that never held a record */
		memmove(&m->r[lo], &m->r[hi], sizeof(tm_rec) * (m->n - hi));
	m->n -= hi - lo;
}

/* Many changes at once: sorted once, then merged with the records in one pass. One put or del
 * at a time moves the array's tail for every change, which the sanitizers' memmove (a byte loop)
 * turns into minutes for tens of thousands of records. */
typedef struct change {
	tm_rec rec; /* owned; rec.v NULL for a delete */
	size_t seq; /* order of the change: the last change of a key wins */
} change;

static int change_cmp(const void *a, const void *b)
{
	const change *x = a, *y = b;
	int c = keycmp(x->rec.k, x->rec.klen, y->rec.k, y->rec.klen);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Applies c[0..n) (taking ownership of their bytes) as if put or deleted one by one in seq
 * order. */
static void model_merge(tm_model *m, change *c, size_t n)
{
	size_t cap = m->n + n > 64 ? m->n + n : 64, i = 0, j = 0, o = 0;
	tm_rec *out = xmalloc(sizeof(tm_rec) * cap);
	qsort(c, n, sizeof(*c), change_cmp);
	while (i < m->n || j < n) {
		/* only the last change of a key counts */
		while (j + 1 < n &&
		       keycmp(c[j].rec.k, c[j].rec.klen, c[j + 1].rec.k, c[j + 1].rec.klen) == 0) {
			free(c[j].rec.k);
			free(c[j].rec.v);
			j++;
		}
		int cmp = i >= m->n ? 1
		          : j >= n  ? -1
		                    : keycmp(m->r[i].k, m->r[i].klen, c[j].rec.k, c[j].rec.klen);
		if (cmp < 0) {
			out[o++] = m->r[i++];
			continue;
		}
		if (cmp == 0) {
			free(m->r[i].k);
			free(m->r[i].v);
			i++;
		}
		if (c[j].rec.v) {
			out[o++] = c[j].rec;
		} else {
			free(c[j].rec.k);
		}
		j++;
	}
	free(m->r);
	m->r = out;
	m->n = o;
	m->cap = cap;
}

void tm_model_apply(tm_model *m, const prolly_edit *edits, size_t n)
{
	if (n < 16) { /* a copy of the whole array is not worth it */
		for (size_t i = 0; i < n; i++) {
			const prolly_edit *e = &edits[i];
			if (e->op == PROLLY_PUT)
				tm_model_put(m, e->key.data, e->key.size, e->value.data, e->value.size);
			else
				tm_model_del(m, e->key.data, e->key.size);
		}
		return;
	}
	change *c = xmalloc(sizeof(*c) * n);
	for (size_t i = 0; i < n; i++) {
		const prolly_edit *e = &edits[i];
		c[i].rec.k = dup_bytes(e->key.data, e->key.size);
		c[i].rec.klen = e->key.size;
		c[i].rec.v = e->op == PROLLY_PUT ? dup_bytes(e->value.data, e->value.size) : NULL;
		c[i].rec.vlen = e->op == PROLLY_PUT ? e->value.size : 0;
		c[i].seq = i;
	}
	model_merge(m, c, n);
	free(c);
}

int tm_model_equal(const tm_model *a, const tm_model *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		if (keycmp(a->r[i].k, a->r[i].klen, b->r[i].k, b->r[i].klen) != 0 ||
		    keycmp(a->r[i].v, a->r[i].vlen, b->r[i].v, b->r[i].vlen) != 0)
			return 0;
	}
	return 1;
}

int tm_model_in_range(const tm_model *m, size_t i, const prolly_range *rg)
{
	const tm_rec *r = &m->r[i];
	if (!rg)
		return 1;
	if (rg->has_lo) {
		int c = keycmp(r->k, r->klen, rg->lo.data, rg->lo.size);
		if (c < 0 || (c == 0 && rg->lo_exclusive))
			return 0;
	}
	if (rg->has_hi) {
		int c = keycmp(r->k, r->klen, rg->hi.data, rg->hi.size);
		if (c > 0 || (c == 0 && !rg->hi_inclusive))
			return 0;
	}
	if (rg->prefix.size &&
	    (r->klen < rg->prefix.size || memcmp(r->k, rg->prefix.data, rg->prefix.size) != 0))
		return 0;
	return 1;
}

size_t tm_model_range(const tm_model *m, const prolly_range *rg, size_t **out)
{
	/* Only the records from the first key >= lo (and >= the prefix) to the last <= hi are looked
	 * at: a pass over the whole model for every range was most of the cursor tests' time. */
	size_t from = 0, to = m->n;
	if (rg && rg->has_lo)
		from = tm_model_lower_bound(m, rg->lo.data, rg->lo.size);
	if (rg && rg->prefix.size) {
		size_t p = tm_model_lower_bound(m, rg->prefix.data, rg->prefix.size);
		from = p > from ? p : from;
	}
	if (rg && rg->has_hi) {
		long h = tm_model_find(m, rg->hi.data, rg->hi.size);
		size_t end = h >= 0 ? (size_t)h + 1 : tm_model_lower_bound(m, rg->hi.data, rg->hi.size);
		to = end < to ? end : to;
	}
	size_t *idx = xmalloc(sizeof(size_t) * (m->n + 1)), k = 0;
	for (size_t i = from; i < to; i++) {
		if (tm_model_in_range(m, i, rg))
			idx[k++] = i;
		else if (rg && rg->prefix.size &&
		         (m->r[i].klen < rg->prefix.size ||
		          memcmp(m->r[i].k, rg->prefix.data, rg->prefix.size) != 0))
			break; /* every key from here on is >= the prefix: past its keys */
	}
	if (rg && rg->reverse)
		for (size_t a = 0, b = k; a + 1 < b; a++, b--) {
			size_t t = idx[a];
			idx[a] = idx[b - 1];
			idx[b - 1] = t;
		}
	*out = idx;
	return k;
}

/* ---- engine glue --------------------------------------------------------------------------- */

int tm_build(prolly_id *out, prolly_txn *txn, const tm_model *m)
{
	prolly_builder *b = NULL;
	int rc = prolly_builder_new(&b, txn);
	if (rc)
		return rc;
	for (size_t i = 0; i < m->n && !rc; i++)
		rc = prolly_builder_add(b, m->r[i].k, m->r[i].klen, m->r[i].v, m->r[i].vlen);
	if (!rc)
		rc = prolly_builder_finish(b, out);
	prolly_builder_free(b);
	return rc;
}

int tm_build_commit(prolly_id *out, prolly_db *db, const tm_model *m)
{
	prolly_txn *txn = NULL;
	int rc = prolly_txn_begin(&txn, db);
	if (rc)
		return rc;
	rc = tm_build(out, txn, m);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

int tm_tree_check(prolly_db *db, const prolly_id *root, const tm_model *m, const char *what)
{
	prolly_cursor *cur = NULL;
	int rc = prolly_cursor_open(&cur, db, root, NULL);
	if (rc) {
		fprintf(stderr, "  %s: cursor_open: %d (%s)\n", what, rc, prolly_last_error());
		return rc;
	}
	size_t i = 0;
	prolly_slice k, v;
	int bad = 0;
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (i >= m->n) {
			fprintf(stderr, "  %s: tree has extra record %zu key %s\n", what, i,
			        tm_bhex(k.data, k.size));
			bad = 1;
			break;
		}
		const tm_rec *r = &m->r[i];
		if (keycmp(k.data, k.size, r->k, r->klen) != 0) {
			fprintf(stderr, "  %s: record %zu: tree key %s, model key %s\n", what, i,
			        tm_bhex(k.data, k.size), tm_bhex(r->k, r->klen));
			bad = 1;
			break;
		}
		if (keycmp(v.data, v.size, r->v, r->vlen) != 0) {
			fprintf(stderr, "  %s: record %zu key %s: tree value (%zu bytes) %s, model (%zu) %s\n",
			        what, i, tm_bhex(k.data, k.size), v.size, tm_bhex(v.data, v.size), r->vlen,
			        tm_bhex(r->v, r->vlen));
			bad = 1;
			break;
		}
		i++;
	}
	prolly_cursor_free(cur);
	if (bad)
		return -1;
	if (rc != PROLLY_ITEROVER) {
		fprintf(stderr, "  %s: cursor_next: %d (%s)\n", what, rc, prolly_last_error());
		return rc;
	}
	if (i != m->n) {
		fprintf(stderr, "  %s: tree has %zu records, model %zu (first missing key %s)\n", what, i,
		        m->n, tm_bhex(m->r[i].k, m->r[i].klen));
		return -1;
	}
	uint64_t cnt = 0;
	rc = prolly_count(&cnt, db, root);
	if (rc || cnt != m->n) {
		fprintf(stderr, "  %s: count %d %llu, model %zu\n", what, rc, (unsigned long long)cnt,
		        m->n);
		return rc ? rc : -1;
	}
	return 0;
}

const char *tm_hex(const prolly_id *id)
{
	static _Thread_local char bufs[4][PROLLY_ID_HEX_SIZE];
	static _Thread_local unsigned next;
	char *b = bufs[next++ % 4];
	prolly_id_to_hex(b, id);
	return b;
}

const char *tm_bhex(const void *p, size_t n)
{
	static _Thread_local char bufs[4][96];
	static _Thread_local unsigned next;
	char *b = bufs[next++ % 4];
	const unsigned char *s = p;
	size_t i, o = 0;
	for (i = 0; i < n && i < 40; i++)
		o += (size_t)snprintf(b + o, 96 - o, "%02x", s[i]);
	if (i < n)
		snprintf(b + o, 96 - o, "...");
	if (n == 0)
		snprintf(b, 96, "\"\"");
	return b;
}

/* ---- tap store ----------------------------------------------------------------------------- */

struct tap_get {
	tm_tap *t;
	const prolly_id *ids;
	prolly_store_found_fn found;
	void *payload;
	int other_needed;
	unsigned char *other;
	size_t other_size;
};

static int tap_other_found(void *payload, size_t index, const void *data, size_t size)
{
	struct tap_get *g = payload;
	(void)index;
	free(g->other);
	g->other = dup_bytes(data, size);
	g->other_size = size;
	return 0;
}

static int tap_found(void *payload, size_t index, const void *data, size_t size)
{
	struct tap_get *g = payload;
	tm_tap *t = g->t;
	t->nodes_served++;
	if (t->mode == TM_TAP_PASS || !prolly_id_equal(&g->ids[index], &t->target))
		return g->found(g->payload, index, data, size);
	t->hits++;
	unsigned char *copy;
	int rc;
	switch (t->mode) {
	case TM_TAP_FLIP:
		copy = dup_bytes(data, size);
		if (t->pos < size)
			copy[t->pos] ^= t->mask;
		rc = g->found(g->payload, index, copy, size);
		free(copy);
		return rc;
	case TM_TAP_TRUNCATE:
		copy = dup_bytes(data, size);
		rc = g->found(g->payload, index, copy, t->pos < size ? t->pos : size);
		free(copy);
		return rc;
	case TM_TAP_EXTEND:
		copy = xmalloc(size + t->pos);
		memcpy(copy, data, size);
		memset(copy + size, 0, t->pos);
		rc = g->found(g->payload, index, copy, size + t->pos);
		free(copy);
		return rc;
	case TM_TAP_REPLACE:
		if (!g->other)
			return g->found(g->payload, index, data, size);
		return g->found(g->payload, index, g->other, g->other_size);
	case TM_TAP_DROP: return 0;
	default: return g->found(g->payload, index, data, size);
	}
}

static int tap_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                         prolly_store_found_fn found, void *payload)
{
	tm_tap *t = (tm_tap *)st;
	struct tap_get g = {t, ids, found, payload, 0, NULL, 0};
	if (t->mode == TM_TAP_REPLACE) {
		for (size_t i = 0; i < n; i++)
			if (prolly_id_equal(&ids[i], &t->target))
				g.other_needed = 1;
		if (g.other_needed) {
			int rc = tp_inner(st)->get_nodes(tp_inner(st), &t->other, 1, tap_other_found, &g);
			if (rc)
				return rc;
		}
	}
	int rc = tp_inner(st)->get_nodes(tp_inner(st), ids, n, tap_found, &g);
	free(g.other);
	return rc;
}

static int tap_write(prolly_store *st, prolly_store_write *w)
{
	tm_tap *t = (tm_tap *)st;
	t->writes++;
	if (t->on_write)
		for (size_t i = 0; i < w->n_nodes; i++)
			t->on_write(t->on_write_payload, &w->nodes[i].id, w->nodes[i].data, w->nodes[i].size);
	return tp_write(st, w);
}

/* get_ancestors through the tap's own get_nodes, one generation per inner call, so that its
 * damage applies to history walks too. The ids met are also the queue. */
struct tap_anc {
	prolly_id *q;
	size_t nq, limit;
	const prolly_id *batch;
	const prolly_store_commit_layout *commit; /* what the engine passed */
	prolly_store_obj_fn found;
	void *payload;
};

static int tap_anc_found(void *payload, size_t index, const void *data, size_t size)
{
	struct tap_anc *a = payload;
	const unsigned char *b = data;
	int rc = a->found(a->payload, &a->batch[index], data, size);
	const prolly_store_commit_layout *c = a->commit;
	if (rc || size < c->parents_at || memcmp(b, c->magic, c->magic_size) != 0)
		return rc;
	const unsigned char *pc = b + c->count_at;
	uint32_t np = (uint32_t)pc[0] | (uint32_t)pc[1] << 8 | (uint32_t)pc[2] << 16 |
	              (uint32_t)pc[3] << 24;
	for (uint32_t j = 0;
	     j < np && c->parents_at + PROLLY_ID_SIZE * ((size_t)j + 1) <= size && a->nq < a->limit;
	     j++) {
		prolly_id pid;
		size_t k = 0;
		memcpy(pid.bytes, b + c->parents_at + PROLLY_ID_SIZE * (size_t)j, PROLLY_ID_SIZE);
		while (k < a->nq && !prolly_id_equal(&a->q[k], &pid))
			k++;
		if (k == a->nq)
			a->q[a->nq++] = pid;
	}
	return 0;
}

static int tap_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                         prolly_store_found_fn found, void *payload);

static int tap_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                             const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                             void *payload)
{
	struct tap_anc a = {NULL, 0, limit > n ? limit : n, NULL, commit, found, payload};
	int rc = 0;
	if (!a.limit)
		return 0;
	a.q = xmalloc(a.limit * sizeof(*a.q));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < a.nq && !prolly_id_equal(&a.q[k], &ids[i]))
			k++;
		if (k == a.nq)
			a.q[a.nq++] = ids[i];
	}
	for (size_t head = 0; head < a.nq && !rc;) {
		size_t end = a.nq;
		a.batch = a.q + head;
		rc = tap_get_nodes(st, a.q + head, end - head, tap_anc_found, &a);
		head = end;
	}
	free(a.q);
	return rc;
}

int tm_tap_new(tm_tap **out, prolly_store *inner)
{
	tm_tap *t = tp_new(sizeof(*t), inner);
	if (!t)
		return PROLLY_ENOMEM;
	/* get_ancestors through the tap's own get_nodes; offered only where the inner store offers
	 * it. find_ids stays off: it would hand out objects the tap does not see. */
	t->tp.base.get_ancestors = t->tp.base.get_ancestors ? tap_get_ancestors : NULL;
	t->tp.base.find_ids = NULL;
	t->tp.base.get_ref_objects = NULL;
	t->tp.base.get_ref_objects_known = NULL;
	t->tp.base.kind = "tap";
	t->tp.base.get_nodes = tap_get_nodes;
	t->tp.base.write = tap_write;
	*out = t;
	return 0;
}

prolly_db *tm_open_tapped_mem(tm_tap **tap)
{
	prolly_store *inner;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = 0;
	if (prolly_store_mem_new(&inner) || tm_tap_new(tap, inner) ||
	    prolly_db_new(&db, &(*tap)->tp.base, &o)) {
		fprintf(stderr, "cannot open a memory store behind a tap: %s\n", prolly_last_error());
		exit(2);
	}
	return db;
}

void tm_record_id(void *payload, const prolly_id *id, const void *data, size_t size)
{
	(void)data;
	(void)size;
	prolly_id **p = payload;
	**p = *id;
	(*p)++;
}

/* ---- scratch directories ------------------------------------------------------------------- */

char *tm_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = '\0';
	fclose(f);
	return s;
}

int tm_stderr_of(int (*f)(void *), void *arg, char *out, size_t size)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), rc = -1;
	out[0] = 0;
	if (!tmp || saved < 0)
		goto cleanup;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = f(arg);
	fflush(stderr);
	dup2(saved, 2);
	rewind(tmp);
	size_t n = fread(out, 1, size - 1, tmp);
	out[n] = 0;
cleanup:
	if (saved >= 0)
		close(saved);
	if (tmp)
		fclose(tmp);
	return rc;
}

char *tm_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	size_t n = strlen(base) + strlen(tag) + 32;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/prolly-%s-XXXXXX", base, tag);
	if (!mkdtemp(p)) {
		fprintf(stderr, "mkdtemp %s: %s\n", p, strerror(errno));
		free(p);
		return NULL;
	}
	return p;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tm_rmtree(const char *path)
{
	if (path)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

size_t tm_vm_size(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- PostgreSQL ---------------------------------------------------------------------------- */

static volatile sig_atomic_t pg_child;

static void pg_pass_signal(int sig)
{
	if (pg_child > 0)
		kill((pid_t)pg_child, sig);
}

static void pg_stop(const char *script, const char *dir)
{
	size_t n = strlen(script) + strlen(dir) + 32;
	char *cmd = xmalloc(n);
	snprintf(cmd, n, "'%s' stop '%s'", script, dir);
	if (system(cmd) != 0)
		printf("# could not stop the PostgreSQL cluster in %s\n", dir);
	free(cmd);
}

int tm_pg_guard(void)
{
	if (getenv("PROLLY_PG_URL"))
		return 0;
	const char *script = getenv("PROLLY_PG_SCRIPT");
	if (!script || !*script)
		script = access("scripts/pg-cluster.sh", X_OK) == 0 ? "scripts/pg-cluster.sh"
		                                                    : "../scripts/pg-cluster.sh";
	if (access(script, X_OK) != 0 || strchr(script, '\'')) {
		fprintf(stderr, "tm_pg_guard: no usable %s (set PROLLY_PG_SCRIPT or PROLLY_PG_URL)\n",
		        script);
		return -1;
	}
	char cmd[1200], line[1024], dir[512] = "";
	snprintf(cmd, sizeof(cmd), "'%s' start", script);
	fflush(stdout);
	FILE *f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "tm_pg_guard: popen %s: %s\n", cmd, strerror(errno));
		return -1;
	}
	/* Lines "export NAME='VALUE'". */
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');
		if (strncmp(line, "export ", 7) != 0 || !eq)
			continue;
		*eq = 0;
		char *v = eq + 1;
		size_t n = strlen(v);
		while (n && (v[n - 1] == '\n' || v[n - 1] == '\''))
			v[--n] = 0;
		if (*v == '\'')
			v++;
		setenv(line + 7, v, 1);
		if (strcmp(line + 7, "PROLLY_PG_DIR") == 0)
			snprintf(dir, sizeof(dir), "%s", v);
	}
	int status = pclose(f);
	if (dir[0] && (status != 0 || !getenv("PROLLY_PG_URL"))) {
		pg_stop(script, dir);
		dir[0] = 0;
	}
	if (!dir[0] || !getenv("PROLLY_PG_URL")) {
		fprintf(stderr, "tm_pg_guard: %s failed (status %d)\n", cmd, status);
		unsetenv("PROLLY_PG_URL");
		return -1;
	}
	printf("# started a throwaway PostgreSQL cluster in %s\n", dir);
	fflush(stdout);

	/* The tests run in a child, so that the cluster is stopped whatever happens to them. */
	struct sigaction sa, old[3];
	const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pg_pass_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tm_pg_guard: fork: %s\n", strerror(errno));
		pg_stop(script, dir);
		return -1;
	}
	if (pid == 0) {
		for (int i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		return 0;
	}
	pg_child = pid;
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pg_stop(script, dir);
	if (WIFSIGNALED(st)) {
		printf("not ok - the test process died of signal %d\n# 0 passed, 1 failed\n", WTERMSIG(st));
		fflush(stdout);
		exit(1);
	}
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

void tm_pg_schema_name(char out[64], const char *tag)
{
	static unsigned seq;
	snprintf(out, 64, "prolly_%.20s_%ld_%u", tag, (long)getpid(), ++seq);
}

static void pg_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

int tm_pg_guard_tap(void)
{
	if (tm_pg_guard() == 0)
		return 0;
	printf("not ok 1 - could not start a PostgreSQL cluster with scripts/pg-cluster.sh (set "
	       "PROLLY_PG_URL to use an existing server)\n# 0 passed, 1 failed\n");
	return -1;
}

int tm_pg_schema_drop(const char *schema)
{
	const char *url = getenv("PROLLY_PG_URL");
	if (!url) {
		fprintf(stderr, "tm_pg_schema_drop: PROLLY_PG_URL is not set\n");
		return -1;
	}
	PGconn *c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "tm_pg_schema_drop: cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	PQsetNoticeProcessor(c, pg_quiet, NULL);
	char *q = PQescapeIdentifier(c, schema, strlen(schema));
	char sql[160];
	snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q ? q : "\"\"");
	PQfreemem(q);
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
	if (rc)
		fprintf(stderr, "tm_pg_schema_drop: %s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	return rc;
}

prolly_db *tm_open_mem(size_t cache_bytes)
{
	prolly_store *st;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = cache_bytes;
	if (prolly_store_mem_new(&st) || prolly_db_new(&db, st, &o)) {
		fprintf(stderr, "cannot open a memory store: %s\n", prolly_last_error());
		exit(2);
	}
	return db;
}

prolly_db *tm_open_lmdb(const char *dir, size_t cache_bytes)
{
	prolly_store *st;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = cache_bytes;
	if (prolly_store_lmdb_open(&st, dir, 0) || prolly_db_new(&db, st, &o)) {
		fprintf(stderr, "cannot open an LMDB store in %s: %s\n", dir, prolly_last_error());
		exit(2);
	}
	return db;
}

void tm_random_model_big(tm_model *m, tm_rng *r, size_t n, unsigned big_den)
{
	unsigned char k[TM_KEY_MAX];
	static unsigned char v[TM_VAL_BIG];
	/* In rounds of the records still missing: one round can reach n only at its last record
	 * (each record adds at most one), so the records and the generator's state afterwards are
	 * those of one tm_model_put per record until m holds n. */
	while (m->n < n) {
		size_t want = n - m->n;
		change *c = xmalloc(sizeof(*c) * want);
		for (size_t i = 0; i < want; i++) {
			size_t kl = tm_gen_key(r, k);
			size_t vl = tm_gen_value(r, v, big_den);
			c[i].rec.k = dup_bytes(k, kl);
			c[i].rec.klen = kl;
			c[i].rec.v = dup_bytes(v, vl);
			c[i].rec.vlen = vl;
			c[i].seq = i;
		}
		model_merge(m, c, want);
		free(c);
	}
}

void tm_random_model(tm_model *m, tm_rng *r, size_t n)
{
	tm_random_model_big(m, r, n, 1000);
}

int tm_db_open(tm_db *t, int lmdb, const char *tag, int tap, unsigned retain, size_t flush_bytes)
{
	prolly_store *st = NULL;
	prolly_options o;
	int rc;
	memset(t, 0, sizeof(*t));
	if (lmdb) {
		if (!(t->dir = tm_tmpdir(tag)))
			return PROLLY_ESTORE;
		rc = prolly_store_lmdb_open(&st, t->dir, 0);
	} else {
		rc = prolly_store_mem_new(&st);
	}
	if (rc)
		return rc;
	if (tap) {
		if ((rc = tm_tap_new(&t->tap, st))) {
			prolly_store_close(st);
			return rc;
		}
		st = &t->tap->tp.base;
	}
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = retain;
	/* gc here retains by commits only; the reflog's horizon has its own tests (test_reflog.c). */
	o.reflog_days = 0;
	if (flush_bytes)
		o.flush_bytes = flush_bytes;
	return prolly_db_new(&t->db, st, &o);
}

void tm_db_close(tm_db *t)
{
	prolly_close(t->db);
	if (t->dir) {
		tm_rmtree(t->dir);
		free(t->dir);
	}
	memset(t, 0, sizeof(*t));
}

int tm_value_at(char *buf, size_t cap, prolly_db *db, const prolly_id *c, const char *k)
{
	prolly_commit *cm = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	int rc = prolly_commit_read(&cm, db, c);
	if (!rc)
		rc = prolly_get(&v, db, &cm->tree, k, strlen(k));
	buf[0] = 0;
	if (!rc) {
		size_t n = v.size < cap - 1 ? v.size : cap - 1;
		memcpy(buf, v.ptr, n);
		buf[n] = 0;
	}
	prolly_buf_dispose(&v);
	prolly_commit_free(cm);
	return rc;
}

prolly_edit tm_put(const char *k, const char *v)
{
	prolly_edit e;
	memset(&e, 0, sizeof(e));
	e.op = PROLLY_PUT;
	e.key.data = k;
	e.key.size = strlen(k);
	e.value.data = v;
	e.value.size = strlen(v);
	return e;
}

int tm_commit_put(prolly_id *out, prolly_db *db, const char *branch, const char *k, const char *v,
                  const char *msg)
{
	prolly_edit e = tm_put(k, v);
	return prolly_commit_edits(out, db, branch, &e, 1, msg);
}

unsigned long long tm_commit_put_trips(prolly_id *out, prolly_db *db, const char *branch,
                                       const char *k, const char *v, int *rc)
{
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats_reset();
	*rc = tm_commit_put(out, db, branch, k, v, k);
	prolly_thread_stats(&s);
	return (unsigned long long)s.store_round_trips;
}

int tm_commit_raw(prolly_id *out, prolly_db *db, const prolly_id *tree, const prolly_id *parents,
                  size_t np, int64_t time_us, const char *msg)
{
	prolly_txn *txn = NULL;
	int rc = prolly_txn_begin(&txn, db);
	if (!rc)
		rc = prolly_commit_create(out, txn, tree, parents, np, time_us, msg);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

prolly_id tm_fake_id(unsigned char b)
{
	prolly_id id;
	memset(id.bytes, b, sizeof(id.bytes));
	return id;
}
