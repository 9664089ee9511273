/*
 * model_merge.c - the model's three-way merge (tm_model_merge, model.h), and the model tests'
 * merge step (model_run.h): two branches edited from the current tree, merged three ways with a
 * random resolver, checked against the model of the merge (conflicts, their sides, the
 * resolver's answers, the stats).
 */
#include "model_run.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- merge --------------------------------------------------------------------------------- */

typedef struct side {
	const unsigned char *v;
	size_t vlen;
	int exists;
} side;

static side side_of(const tm_model *m, const void *k, size_t klen)
{
	const tm_rec *rec = tm_model_get(m, k, klen);
	side s = {rec ? rec->v : NULL, rec ? rec->vlen : 0, rec != NULL};
	return s;
}

static int side_eq(side a, side b)
{
	if (a.exists != b.exists)
		return 0;
	return !a.exists || (a.vlen == b.vlen && (a.vlen == 0 || memcmp(a.v, b.v, a.vlen) == 0));
}

static int slice_side_eq(prolly_slice s, int exists, side want)
{
	if (exists != want.exists)
		return 0;
	if (!exists)
		return s.data == NULL;
	return s.data != NULL && mr_slice_eq(s, want.v, want.vlen);
}

/* The callback resolver's rule, applied identically to the model: keys whose last byte is even
 * take a value made of the three sides' sizes; odd ones are deleted. */
static size_t resolved_value(unsigned char out[32], const side *b, const side *o, const side *t)
{
	return (size_t)snprintf((char *)out, 32, "R%d.%zu/%d.%zu/%d.%zu", b->exists, b->vlen, o->exists,
	                        o->vlen, t->exists, t->vlen);
}

static int resolve_keeps(const void *k, size_t klen)
{
	return klen == 0 || (((const unsigned char *)k)[klen - 1] & 1) == 0;
}

typedef struct merge_ctx {
	mr_run *r;
	const tm_model *base, *ours, *theirs;
	unsigned char (*vals)[32];
	size_t n_vals;
	/* Expected conflicts (keys, in order), for FAIL. */
	const tm_model *conflicts;
	size_t seen;
} merge_ctx;

static void check_conflict_sides(merge_ctx *c, const prolly_conflict *cf)
{
	side b = side_of(c->base, cf->key.data, cf->key.size);
	side o = side_of(c->ours, cf->key.data, cf->key.size);
	side t = side_of(c->theirs, cf->key.data, cf->key.size);
	if (!slice_side_eq(cf->base, cf->base_exists, b) ||
	    !slice_side_eq(cf->ours, cf->ours_exists, o) ||
	    !slice_side_eq(cf->theirs, cf->theirs_exists, t))
		MR_FAILF(
		    c->r,
		    "merge conflict %s: sides differ from the model (exists b%d o%d t%d, want b%d o%d t%d)",
		    tm_bhex(cf->key.data, cf->key.size), cf->base_exists, cf->ours_exists,
		    cf->theirs_exists, b.exists, o.exists, t.exists);
	if (side_eq(o, t) || side_eq(o, b) || side_eq(t, b))
		MR_FAILF(c->r, "merge reported a conflict for %s, which is not one",
		         tm_bhex(cf->key.data, cf->key.size));
}

static int resolve_cb(void *payload, const prolly_conflict *cf, prolly_slice *out_value,
                      int *out_exists)
{
	merge_ctx *c = payload;
	check_conflict_sides(c, cf);
	if (!resolve_keeps(cf->key.data, cf->key.size)) {
		*out_exists = 0;
		return 0;
	}
	side b = side_of(c->base, cf->key.data, cf->key.size);
	side o = side_of(c->ours, cf->key.data, cf->key.size);
	side t = side_of(c->theirs, cf->key.data, cf->key.size);
	unsigned char *slot = c->vals[c->n_vals++];
	out_value->size = resolved_value(slot, &b, &o, &t);
	out_value->data = slot;
	*out_exists = 1;
	return 0;
}

static int conflict_cb(void *payload, const prolly_conflict *cf)
{
	merge_ctx *c = payload;
	check_conflict_sides(c, cf);
	if (c->seen >= c->conflicts->n) {
		MR_FAILF(c->r, "merge: unexpected conflict %s", tm_bhex(cf->key.data, cf->key.size));
		return 0;
	}
	const tm_rec *w = &c->conflicts->r[c->seen++];
	if (!mr_slice_eq(cf->key, w->k, w->klen))
		MR_FAILF(c->r, "merge conflict %zu: key %s, want %s (key order)", c->seen - 1,
		         tm_bhex(cf->key.data, cf->key.size), tm_bhex(w->k, w->klen));
	return 0;
}

/* DELETE_WINS / UPDATE_WINS on a conflict: when one side deleted the key, applies the winner to
 * out and returns 1; when both sides hold values, returns 0 (the conflict stays). */
static int model_one_side_deleted(tm_model *out, side *res, const void *k, size_t kl, const side *o,
                                  const side *t, prolly_resolver how)
{
	if (o->exists && t->exists)
		return 0;
	int del = how == PROLLY_RESOLVE_DELETE_WINS;
	*res = o->exists ? *o : *t; /* the side that still has a value */
	if (del)
		tm_model_del(out, k, kl);
	else
		tm_model_put(out, k, kl, res->v, res->vlen);
	return 1;
}

void tm_model_merge(tm_model *out, prolly_merge_stats *st, tm_model *conflicts,
                    const tm_model *base, const tm_model *ours, const tm_model *theirs,
                    prolly_resolver how)
{
	tm_model_copy(out, ours);
	memset(st, 0, sizeof(*st));
	/* Every key of the three, in order: the three models walked together give each key's three
	 * sides without a search (a model of their keys, filled by a put per key of each, and three
	 * searches per key were a tenth of the model runs' CPU under ASan). */
	const tm_model *m3[3] = {base, ours, theirs};
	size_t at[3] = {0, 0, 0};
	for (;;) {
		const tm_rec *kr = NULL; /* the smallest key at the three positions */
		for (int s = 0; s < 3; s++)
			if (at[s] < m3[s]->n && (!kr || prolly__keycmp(m3[s]->r[at[s]].k, m3[s]->r[at[s]].klen,
			                                               kr->k, kr->klen) < 0))
				kr = &m3[s]->r[at[s]];
		if (!kr)
			break;
		const void *k = kr->k;
		size_t kl = kr->klen;
		side sd[3];
		for (int s = 0; s < 3; s++) {
			const tm_rec *x = at[s] < m3[s]->n ? &m3[s]->r[at[s]] : NULL;
			int here = x && prolly__keycmp(x->k, x->klen, k, kl) == 0;
			sd[s] = (side){here ? x->v : NULL, here ? x->vlen : 0, here};
		}
		for (int s = 0; s < 3; s++) /* after: kr points into one of them */
			at[s] += sd[s].exists;
		side b = sd[0], o = sd[1], t = sd[2];
		side res;
		if (side_eq(o, t)) {
			if (!side_eq(o, b))
				st->convergent++;
			continue;
		} else if (side_eq(o, b)) {
			res = t;
			st->applied++;
		} else if (side_eq(t, b)) {
			continue;
		} else {
			st->conflicts++;
			if (how == PROLLY_RESOLVE_DELETE_WINS || how == PROLLY_RESOLVE_UPDATE_WINS) {
				if (model_one_side_deleted(out, &res, k, kl, &o, &t, how))
					continue;
				tm_model_put(conflicts, k, kl, "", 0); /* both set: left a conflict */
				continue;
			}
			tm_model_put(conflicts, k, kl, "", 0);
			if (how == PROLLY_RESOLVE_OURS)
				continue;
			if (how == PROLLY_RESOLVE_THEIRS) {
				res = t;
			} else if (how == PROLLY_RESOLVE_CALLBACK) {
				unsigned char tmp[32];
				if (resolve_keeps(k, kl))
					tm_model_put(out, k, kl, tmp, resolved_value(tmp, &b, &o, &t));
				else
					tm_model_del(out, k, kl);
				continue;
			} else {
				continue;
			}
		}
		if (res.exists)
			tm_model_put(out, k, kl, res.v, res.vlen);
		else
			tm_model_del(out, k, kl);
	}
}

/* Their batch: some of our edits repeated (convergent), some of our keys edited differently
 * (conflicts), the rest new. */
static size_t gen_their_batch(mr_run *r, const prolly_edit *ours, size_t n_ours, prolly_edit **out)
{
	prolly_edit *mine = NULL;
	size_t n = mr_gen_batch(r, &r->m, &mine);
	size_t extra = n_ours ? (size_t)tm_rng_below(&r->rng, n_ours / 2 + 2) : 0;
	prolly_edit *e = calloc(n + extra + 1, sizeof(*e));
	memcpy(e, mine, n * sizeof(*e));
	free(mine);
	for (size_t i = 0; i < extra; i++) {
		const prolly_edit *src = &ours[tm_rng_below(&r->rng, n_ours)];
		if (tm_rng_chance(&r->rng, 1, 2))
			e[n++] = *src; /* the same edit: convergent */
		else
			mr_add_edit(r, &e[n++], tm_rng_chance(&r->rng, 3, 4) ? PROLLY_PUT : PROLLY_DEL,
			            src->key.data, src->key.size);
	}
	tm_shuffle(&r->rng, e, n, sizeof(*e));
	*out = e;
	return n;
}

void mr_step_merge(mr_run *r)
{
	prolly_edit *eo = NULL, *et = NULL;
	size_t no = tm_rng_chance(&r->rng, 1, 10) ? 0 : mr_gen_batch(r, &r->m, &eo);
	size_t nt = tm_rng_chance(&r->rng, 1, 10) ? 0 : gen_their_batch(r, eo, no, &et);
	tm_model mo, mt, want, conflicts;
	tm_model_init(&mo);
	tm_model_init(&mt);
	tm_model_init(&want);
	tm_model_init(&conflicts);
	tm_model_copy(&mo, &r->m);
	tm_model_apply(&mo, eo, no);
	tm_model_copy(&mt, &r->m);
	tm_model_apply(&mt, et, nt);
	prolly_resolver how = (prolly_resolver)tm_rng_below(&r->rng, 6); /* FAIL .. UPDATE_WINS */
	prolly_merge_stats wst = PROLLY_MERGE_STATS_INIT, gst = PROLLY_MERGE_STATS_INIT;
	tm_model_merge(&want, &wst, &conflicts, &r->m, &mo, &mt, how);
	r->n_merges++;
	r->n_conflicts += (unsigned)conflicts.n;

	prolly_txn *txn = NULL;
	prolly_id ido, idt, res;
	MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		MR_RC_OK(r, prolly_edit_tree(&ido, txn, &r->root, eo, no));
	if (!r->failed)
		MR_RC_OK(r, prolly_edit_tree(&idt, txn, &r->root, et, nt));
	/* Commit the branches first sometimes, so the merge reads them from the store. */
	if (!r->failed && tm_rng_chance(&r->rng, 1, 2)) {
		MR_RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		prolly_txn_free(txn);
		txn = NULL;
		MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	}
	if (!r->failed) {
		unsigned char(*vals)[32] = calloc(conflicts.n + 1, 32);
		merge_ctx c = {r, &r->m, &mo, &mt, vals, 0, &conflicts, 0};
		prolly_merge_options opts = PROLLY_MERGE_OPTIONS_INIT;
		opts.resolve = how;
		opts.resolve_fn = resolve_cb;
		opts.on_conflict = conflict_cb;
		opts.payload = &c;
		prolly_id untouched;
		memset(&untouched, 0xab, sizeof(untouched));
		res = untouched;
		int rc = prolly_merge(&res, &gst, txn, &r->root, &ido, &idt, &opts);
		int leaves = how == PROLLY_RESOLVE_FAIL || how == PROLLY_RESOLVE_DELETE_WINS ||
		             how == PROLLY_RESOLVE_UPDATE_WINS; /* conflicts left unresolved */
		if (leaves && conflicts.n) {
			if (rc != PROLLY_EMERGE)
				MR_FAILF(r, "merge with %zu unresolved conflicts (resolver %d): %d, want EMERGE",
				         conflicts.n, how, rc);
			else if (!prolly_id_equal(&res, &untouched))
				MR_FAILF(r, "merge failed but changed out_root");
			else if (c.seen != conflicts.n)
				MR_FAILF(r, "merge: %zu conflicts reported, want %zu", c.seen, conflicts.n);
			/* Then settle it by taking ours. */
			if (!r->failed) {
				how = PROLLY_RESOLVE_OURS;
				tm_model_merge(&want, &wst, &conflicts, &r->m, &mo, &mt, how);
				opts.resolve = how;
				opts.on_conflict = NULL;
				rc = prolly_merge(&res, &gst, txn, &r->root, &ido, &idt, &opts);
			}
		}
		if (!r->failed && rc)
			MR_FAILF(r, "merge (resolver %d): %d (%s)", how, rc, prolly_last_error());
		if (!r->failed && (gst.conflicts != wst.conflicts || gst.applied != wst.applied ||
		                   gst.convergent != wst.convergent))
			MR_FAILF(
			    r, "merge stats: applied %llu convergent %llu conflicts %llu, model %llu %llu %llu",
			    (unsigned long long)gst.applied, (unsigned long long)gst.convergent,
			    (unsigned long long)gst.conflicts, (unsigned long long)wst.applied,
			    (unsigned long long)wst.convergent, (unsigned long long)wst.conflicts);
		if (!r->failed)
			mr_check_tree_v(r, &res, &want, "merge result (before commit)", 0);
		if (!r->failed)
			MR_RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		if (!r->failed)
			mr_check_tree(r, &res, &want, "merge result");
		free(vals);
	}
	prolly_txn_free(txn);
	free(eo);
	free(et);
	mr_free_owned(r);
	if (!r->failed) {
		mr_check_tree(r, &ido, &mo, "merge: ours");
		mr_check_tree(r, &idt, &mt, "merge: theirs");
		mr_keep_version_move(r, &ido, &mo);
		mr_keep_version_move(r, &idt, &mt);
		r->root = res;
		tm_model_move(&r->m, &want);
	}
	tm_model_dispose(&mo);
	tm_model_dispose(&mt);
	tm_model_dispose(&want);
	tm_model_dispose(&conflicts);
}
