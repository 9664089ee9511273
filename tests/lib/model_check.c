/*
 * model_check.c - the model tests' checks (model_run.h): a tree against its model (every record,
 * the count, a stats walk, history independence), and random reads of it (gets, get_many, rank
 * and select, cursors, diffs between versions).
 */
#include "model_run.h"

#include <stdlib.h>
#include <string.h>

/* ---- checks -------------------------------------------------------------------------------- */

/* The full comparison of root with m. verify: re-hash every node in the stats walk (only for
 * committed trees; see model_txn_tree_stats_verify). */
void mr_check_tree_v(mr_run *r, const prolly_id *root, const tm_model *m, const char *what,
                     int verify)
{
	if (tm_tree_check(r->db, root, m, what) != 0)
		MR_FAILF(r, "%s: tree %s differs from the model (%zu records)", what, tm_hex(root), m->n);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	int rc = prolly_tree_stats_get(&ts, r->db, root, verify);
	if (m->n > r->max_n)
		r->max_n = m->n;
	if (rc)
		MR_FAILF(r, "%s: stats verify: %d (%s)", what, rc, prolly_last_error());
	else if (ts.height > r->max_height)
		r->max_height = ts.height;
	if (!rc && (ts.records != m->n || ts.height < 1 || ts.nodes < ts.leaves || ts.leaves < 1 ||
	            (ts.height == 1) != (ts.nodes == 1)))
		MR_FAILF(r, "%s: stats: records %llu (model %zu) height %u nodes %llu leaves %llu", what,
		         (unsigned long long)ts.records, m->n, ts.height, (unsigned long long)ts.nodes,
		         (unsigned long long)ts.leaves);
	/* History independence: the same records give the same root whatever the history. */
	prolly_txn *txn = NULL;
	prolly_id built;
	MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (txn) {
		rc = tm_build(&built, txn, m);
		if (rc)
			MR_FAILF(r, "%s: bulk build of the model: %d (%s)", what, rc, prolly_last_error());
		else if (!prolly_id_equal(&built, root))
			MR_FAILF(r, "%s: history independence: tree %s, bulk build of the same %zu records %s",
			         what, tm_hex(root), m->n, tm_hex(&built));
		prolly_txn_free(txn);
	}
	if (m->n == 0) {
		prolly_id e;
		prolly_id_empty_tree(&e);
		if (!prolly_id_equal(&e, root))
			MR_FAILF(r, "%s: empty tree id %s, want %s", what, tm_hex(root), tm_hex(&e));
	}
}

void mr_check_tree(mr_run *r, const prolly_id *root, const tm_model *m, const char *what)
{
	mr_check_tree_v(r, root, m, what, 1);
}

static size_t probe_key(mr_run *r, const tm_model *m, unsigned char *kb)
{
	/* A present key, an absent one, or an absent neighbour of a present one. */
	uint64_t w = tm_rng_below(&r->rng, 10);
	if (m->n && w < 5) {
		const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
		memcpy(kb, rec->k, rec->klen);
		return rec->klen;
	}
	if (m->n && w < 8) {
		const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
		size_t kl = rec->klen;
		memcpy(kb, rec->k, kl);
		if (w == 5 && kl < TM_KEY_MAX)
			kb[kl++] = 0; /* just after */
		else if (w == 6 && kl > 1)
			kl--; /* a prefix: just before (or equal to another key) */
		else
			kb[kl - 1] ^= 1;
		return kl;
	}
	return mr_new_key(r, kb);
}

static void check_gets(mr_run *r, const prolly_id *root, const tm_model *m)
{
	prolly_buf out = PROLLY_BUF_INIT;
	unsigned char kb[TM_KEY_MAX + 1];
	for (int i = 0; i < 16 && !r->failed; i++) {
		size_t kl = probe_key(r, m, kb);
		const tm_rec *rec = tm_model_get(m, kb, kl);
		int rc = prolly_get(&out, r->db, root, kb, kl);
		if (rec && rc != 0)
			MR_FAILF(r, "get %s: %d (%s), model has it", tm_bhex(kb, kl), rc, prolly_last_error());
		else if (!rec && rc != PROLLY_ENOTFOUND)
			MR_FAILF(r, "get %s: %d, want ENOTFOUND", tm_bhex(kb, kl), rc);
		else if (rec && (out.size != rec->vlen || (out.size && memcmp(out.ptr, rec->v, out.size))))
			MR_FAILF(r, "get %s: value differs (%zu vs model %zu bytes)", tm_bhex(kb, kl), out.size,
			         rec->vlen);
	}
	prolly_buf_dispose(&out);
}

typedef struct gm_ctx {
	mr_run *r;
	const tm_model *m;
	const prolly_slice *keys;
	size_t next;
	size_t stop_at; /* return 99 at this index (SIZE_MAX: never) */
} gm_ctx;

static int gm_cb(void *payload, size_t index, const void *value, size_t vlen)
{
	gm_ctx *g = payload;
	mr_run *r = g->r;
	if (index != g->next) {
		MR_FAILF(r, "get_many: callback index %zu, want %zu (request order)", index, g->next);
		return 1;
	}
	g->next++;
	const tm_rec *rec = tm_model_get(g->m, g->keys[index].data, g->keys[index].size);
	if (!rec && value)
		MR_FAILF(r, "get_many: key %zu %s absent in model, got a value", index,
		         tm_bhex(g->keys[index].data, g->keys[index].size));
	else if (rec && !value)
		MR_FAILF(r, "get_many: key %zu %s present in model, reported absent", index,
		         tm_bhex(g->keys[index].data, g->keys[index].size));
	else if (rec && (vlen != rec->vlen || (vlen && memcmp(value, rec->v, vlen))))
		MR_FAILF(r, "get_many: key %zu value differs", index);
	if (index == g->stop_at)
		return 99;
	return r->failed;
}

static void check_get_many(mr_run *r, const prolly_id *root, const tm_model *m)
{
	size_t n = (size_t)tm_rng_range(&r->rng, 0, 80);
	prolly_slice *keys = calloc(n + 1, sizeof(*keys));
	unsigned char kb[TM_KEY_MAX + 1];
	for (size_t i = 0; i < n; i++) {
		if (i && tm_rng_chance(&r->rng, 1, 8)) {
			keys[i] = keys[tm_rng_below(&r->rng, i)]; /* duplicate */
			continue;
		}
		size_t kl = probe_key(r, m, kb);
		keys[i].data = mr_own(r, kb, kl);
		keys[i].size = kl;
	}
	gm_ctx g = {r, m, keys, 0, SIZE_MAX};
	int stop = n > 2 && tm_rng_chance(&r->rng, 1, 6);
	if (stop)
		g.stop_at = (size_t)tm_rng_below(&r->rng, n);
	int rc = prolly_get_many(r->db, root, keys, n, gm_cb, &g);
	if (!r->failed) {
		if (stop && rc != 99)
			MR_FAILF(r, "get_many stopped at %zu returned %d, want 99", g.stop_at, rc);
		else if (!stop && rc != 0)
			MR_FAILF(r, "get_many: %d (%s)", rc, prolly_last_error());
		else if (!stop && g.next != n)
			MR_FAILF(r, "get_many: %zu callbacks for %zu keys", g.next, n);
		else if (stop && g.next != g.stop_at + 1)
			MR_FAILF(r, "get_many: %zu callbacks, stopped at index %zu", g.next, g.stop_at);
	}
	free(keys);
	mr_free_owned(r);
}

static void check_rank_select(mr_run *r, const prolly_id *root, const tm_model *m)
{
	prolly_buf kbuf = PROLLY_BUF_INIT, vbuf = PROLLY_BUF_INIT;
	unsigned char kb[TM_KEY_MAX + 1];
	for (int i = 0; i < 8 && !r->failed; i++) {
		size_t kl = probe_key(r, m, kb);
		uint64_t rank = 12345;
		int rc = prolly_rank(&rank, r->db, root, kb, kl);
		size_t want = tm_model_lower_bound(m, kb, kl);
		if (rc || rank != want)
			MR_FAILF(r, "rank %s: %d (%s) %llu, want %zu", tm_bhex(kb, kl), rc,
			         rc ? prolly_last_error() : "", (unsigned long long)rank, want);
		uint64_t idx = tm_rng_below(&r->rng, m->n + 2);
		rc = prolly_select(&kbuf, &vbuf, r->db, root, idx);
		if (idx >= m->n) {
			if (rc != PROLLY_ENOTFOUND)
				MR_FAILF(r, "select %llu of %zu: %d, want ENOTFOUND", (unsigned long long)idx, m->n,
				         rc);
		} else {
			const tm_rec *rec = &m->r[idx];
			if (rc)
				MR_FAILF(r, "select %llu: %d (%s)", (unsigned long long)idx, rc,
				         prolly_last_error());
			else if (kbuf.size != rec->klen || memcmp(kbuf.ptr, rec->k, rec->klen) ||
			         vbuf.size != rec->vlen || (rec->vlen && memcmp(vbuf.ptr, rec->v, rec->vlen)))
				MR_FAILF(r, "select %llu: got key %s, want %s", (unsigned long long)idx,
				         tm_bhex(kbuf.ptr, kbuf.size), tm_bhex(rec->k, rec->klen));
			/* Key-only select. */
			rc = prolly_select(&kbuf, NULL, r->db, root, idx);
			if (rc || kbuf.size != rec->klen || memcmp(kbuf.ptr, rec->k, rec->klen))
				MR_FAILF(r, "select %llu (key only): %d", (unsigned long long)idx, rc);
		}
	}
	prolly_buf_dispose(&kbuf);
	prolly_buf_dispose(&vbuf);
}

/* A random range over m: bounds from present or absent keys, flags, a prefix, reverse. */
static void gen_range(mr_run *r, const tm_model *m, prolly_range *rg, int for_diff)
{
	unsigned char kb[TM_KEY_MAX + 1];
	prolly_range_init(rg, PROLLY_RANGE_VERSION);
	if (tm_rng_chance(&r->rng, 2, 3)) {
		size_t kl = probe_key(r, m, kb);
		rg->lo.data = mr_own(r, kb, kl);
		rg->lo.size = kl;
		rg->has_lo = 1;
		rg->lo_exclusive = (int)tm_rng_below(&r->rng, 2);
	}
	if (tm_rng_chance(&r->rng, 2, 3)) {
		size_t kl = probe_key(r, m, kb);
		rg->hi.data = mr_own(r, kb, kl);
		rg->hi.size = kl;
		rg->has_hi = 1;
		rg->hi_inclusive = (int)tm_rng_below(&r->rng, 2);
	}
	if (!for_diff && tm_rng_chance(&r->rng, 1, 4)) {
		size_t kl;
		if (m->n) {
			const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
			kl = (size_t)tm_rng_range(&r->rng, 1, rec->klen < 3 ? rec->klen : 3);
			memcpy(kb, rec->k, kl);
		} else {
			kl = 1;
			kb[0] = 'a';
		}
		rg->prefix.data = mr_own(r, kb, kl);
		rg->prefix.size = kl;
	}
	if (!for_diff)
		rg->reverse = (int)tm_rng_below(&r->rng, 2);
}

static void check_cursors(mr_run *r, const prolly_id *root, const tm_model *m)
{
	for (int it = 0; it < 4 && !r->failed; it++) {
		prolly_range rg = PROLLY_RANGE_INIT;
		gen_range(r, m, &rg, 0);
		int whole = it == 0 && tm_rng_chance(&r->rng, 1, 4);
		size_t *idx = NULL;
		size_t want = tm_model_range(m, whole ? NULL : &rg, &idx);
		size_t limit = tm_rng_chance(&r->rng, 1, 3) ? (size_t)tm_rng_below(&r->rng, 20) : SIZE_MAX;
		prolly_cursor *cur = NULL;
		int rc = prolly_cursor_open(&cur, r->db, root, whole ? NULL : &rg);
		if (rc) {
			MR_FAILF(r, "cursor_open: %d (%s)", rc, prolly_last_error());
			free(idx);
			break;
		}
		size_t got = 0;
		prolly_slice k, v;
		r->n_cursors++;
		while (got < limit && (rc = prolly_cursor_next(cur, &k, &v)) == 0) {
			if (got >= want) {
				MR_FAILF(r, "cursor (lo %d hi %d prefix %zu rev %d): extra record %s after %zu",
				         rg.has_lo, rg.has_hi, rg.prefix.size, rg.reverse, tm_bhex(k.data, k.size),
				         want);
				break;
			}
			const tm_rec *rec = &m->r[idx[got]];
			if (k.size != rec->klen || memcmp(k.data, rec->k, k.size) || v.size != rec->vlen ||
			    (v.size && memcmp(v.data, rec->v, v.size))) {
				MR_FAILF(r, "cursor (lo %s%s hi %s%s prefix %s rev %d) record %zu: key %s, want %s",
				         rg.has_lo ? tm_bhex(rg.lo.data, rg.lo.size) : "-",
				         rg.lo_exclusive ? "(x)" : "",
				         rg.has_hi ? tm_bhex(rg.hi.data, rg.hi.size) : "-",
				         rg.hi_inclusive ? "(i)" : "", tm_bhex(rg.prefix.data, rg.prefix.size),
				         rg.reverse, got, tm_bhex(k.data, k.size), tm_bhex(rec->k, rec->klen));
				break;
			}
			got++;
		}
		if (!r->failed && got < limit) {
			if (rc != PROLLY_ITEROVER)
				MR_FAILF(r, "cursor_next: %d (%s)", rc, prolly_last_error());
			else if (got != want)
				MR_FAILF(r, "cursor (lo %d hi %d prefix %zu rev %d): %zu records, want %zu",
				         rg.has_lo, rg.has_hi, rg.prefix.size, rg.reverse, got, want);
			else if (prolly_cursor_next(cur, &k, &v) != PROLLY_ITEROVER)
				MR_FAILF(r, "cursor_next after the end is not ITEROVER");
		}
		prolly_cursor_free(cur);
		free(idx);
	}
	mr_free_owned(r);
}

/* Expected diff of two models, restricted to range. */
typedef struct dent {
	prolly_diff_kind kind;
	size_t a, b; /* indexes into from / to */
} dent;

static size_t model_diff(const tm_model *from, const tm_model *to, const prolly_range *rg,
                         dent **out)
{
	dent *d = malloc(sizeof(*d) * (from->n + to->n + 1));
	size_t i = 0, j = 0, k = 0;
	while (i < from->n || j < to->n) {
		int c;
		if (i == from->n)
			c = 1;
		else if (j == to->n)
			c = -1;
		else {
			const tm_rec *x = &from->r[i], *y = &to->r[j];
			size_t mm = x->klen < y->klen ? x->klen : y->klen;
			c = mm ? memcmp(x->k, y->k, mm) : 0;
			if (!c)
				c = x->klen < y->klen ? -1 : x->klen > y->klen;
		}
		if (c < 0) {
			if (tm_model_in_range(from, i, rg))
				d[k++] = (dent){PROLLY_DIFF_REMOVED, i, 0};
			i++;
		} else if (c > 0) {
			if (tm_model_in_range(to, j, rg))
				d[k++] = (dent){PROLLY_DIFF_ADDED, 0, j};
			j++;
		} else {
			const tm_rec *x = &from->r[i], *y = &to->r[j];
			if ((x->vlen != y->vlen || (x->vlen && memcmp(x->v, y->v, x->vlen))) &&
			    tm_model_in_range(from, i, rg))
				d[k++] = (dent){PROLLY_DIFF_CHANGED, i, j};
			i++;
			j++;
		}
	}
	*out = d;
	return k;
}

typedef struct diff_ctx {
	mr_run *r;
	const tm_model *from, *to;
	const dent *want;
	size_t n_want, got, stop_at;
} diff_ctx;

int mr_slice_eq(prolly_slice s, const void *p, size_t n)
{
	return s.size == n && (n == 0 || memcmp(s.data, p, n) == 0);
}

static int diff_cb(void *payload, const prolly_diff_entry *e)
{
	diff_ctx *c = payload;
	mr_run *r = c->r;
	if (c->got >= c->n_want) {
		MR_FAILF(r, "diff: extra entry kind %d key %s (want %zu entries)", e->kind,
		         tm_bhex(e->key.data, e->key.size), c->n_want);
		return 1;
	}
	const dent *w = &c->want[c->got];
	const tm_rec *fr = &c->from->r[w->a], *tr = &c->to->r[w->b];
	const tm_rec *kr = w->kind == PROLLY_DIFF_ADDED ? tr : fr;
	int ok = e->kind == w->kind && mr_slice_eq(e->key, kr->k, kr->klen);
	if (ok && w->kind != PROLLY_DIFF_ADDED)
		ok = mr_slice_eq(e->old_value, fr->v, fr->vlen);
	if (ok && w->kind != PROLLY_DIFF_REMOVED)
		ok = mr_slice_eq(e->new_value, tr->v, tr->vlen);
	if (!ok) {
		MR_FAILF(r, "diff entry %zu: kind %d key %s, want kind %d key %s", c->got, e->kind,
		         tm_bhex(e->key.data, e->key.size), w->kind, tm_bhex(kr->k, kr->klen));
		return 1;
	}
	c->got++;
	return c->got == c->stop_at ? 77 : 0;
}

void mr_check_diff(mr_run *r, const prolly_id *a, const tm_model *ma, const prolly_id *b,
                   const tm_model *mb)
{
	prolly_range rg = PROLLY_RANGE_INIT;
	int ranged = tm_rng_chance(&r->rng, 1, 3);
	if (ranged)
		gen_range(r, tm_rng_chance(&r->rng, 1, 2) ? ma : mb, &rg, 1);
	dent *want = NULL;
	size_t n = model_diff(ma, mb, ranged ? &rg : NULL, &want);
	diff_ctx c = {r, ma, mb, want, n, 0, SIZE_MAX};
	int stop = n > 1 && tm_rng_chance(&r->rng, 1, 5);
	if (stop)
		c.stop_at = (size_t)tm_rng_range(&r->rng, 1, n);
	int rc = prolly_diff(r->db, a, b, ranged ? &rg : NULL, diff_cb, &c);
	r->n_diffs++;
	r->n_diff_entries += (unsigned)c.got;
	if (!r->failed) {
		if (stop && rc != 77)
			MR_FAILF(r, "diff stopped after %zu entries returned %d, want 77", c.stop_at, rc);
		else if (!stop && rc)
			MR_FAILF(r, "diff %s -> %s: %d (%s)", tm_hex(a), tm_hex(b), rc, prolly_last_error());
		else if (!stop && c.got != n)
			MR_FAILF(r, "diff %s -> %s%s: %zu entries, want %zu", tm_hex(a), tm_hex(b),
			         ranged ? " (ranged)" : "", c.got, n);
	}
	free(want);
	/* prefix and reverse are not supported by diff. */
	if (tm_rng_chance(&r->rng, 1, 10)) {
		prolly_range bad = PROLLY_RANGE_INIT;
		bad.reverse = 1;
		c = (diff_ctx){r, ma, mb, NULL, 0, 0, SIZE_MAX};
		rc = prolly_diff(r->db, a, b, &bad, diff_cb, &c);
		if (rc != PROLLY_EINVAL)
			MR_FAILF(r, "diff with reverse: %d, want EINVAL", rc);
	}
	mr_free_owned(r);
}

void mr_check_reads(mr_run *r, const prolly_id *root, const tm_model *m)
{
	if (!r->failed)
		check_gets(r, root, m);
	if (!r->failed)
		check_get_many(r, root, m);
	if (!r->failed)
		check_rank_select(r, root, m);
	if (!r->failed)
		check_cursors(r, root, m);
}
