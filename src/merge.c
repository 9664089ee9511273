/*
 * merge.c - three-way merge of trees.
 *
 * prolly_merge(base, ours, theirs) applies what changed from base to theirs onto ours.
 *
 * Fast paths (no record is read): theirs == base gives ours; ours == base gives theirs;
 * ours == theirs gives ours. (When stats are asked for, the counts of the last two come from a
 * diff walk: pass stats NULL to keep them O(1).)
 *
 * Otherwise:
 *   1. diff(base, theirs) is collected: for every key theirs changed, its base value and its
 *      theirs value (each possibly absent). Proportional to theirs' changes.
 *   2. ours' value at each of those keys is read with one prolly_get_many (one store call per
 *      level). Keys ours changed and theirs did not need no work at all: they are already in
 *      ours. So the cost does not depend on how much ours changed.
 *   3. Per key, in key order: ours == base -> take theirs (applied); ours == theirs ->
 *      convergent; else a conflict, resolved by opts->resolve (OURS keeps ours, THEIRS takes
 *      theirs, CALLBACK asks resolve_fn, DELETE_WINS / UPDATE_WINS per M5, FAIL leaves it).
 *   4. Any unresolved conflict: on_conflict is called for each, in key order, nothing is
 *      written, PROLLY_EMERGE. Otherwise the edits (strictly increasing keys) are applied to ours
 *      with prolly__apply_sorted, whose result depends only on the records (history
 *      independence), so the merged root equals the root of a tree built from the merged
 *      records. prolly_merge_preview stops before applying: steps 1-3 and the reports of step 4
 *      are the merge's own, so a preview and a merge never disagree on a key, and a preview
 *      makes no node (it needs no txn).
 *
 * Invariants:
 *   M1  the collected changes are in strictly increasing key order (prolly_diff's order), so the
 *       edit list is sorted and unique as prolly__apply_sorted requires.
 *   M2  every collected change differs between base and theirs (exists flags or bytes).
 *   M3  the arena offsets recorded in a change stay valid; slices into an arena are made only
 *       after that arena stops growing.
 *   M4  with unresolved conflicts *out_root is not written and no node is created.
 *   M5  DELETE_WINS and UPDATE_WINS settle only a conflict where one side deleted the key and the
 *       other changed it (DELETE_WINS: the key goes; UPDATE_WINS: the changed value stays); a key
 *       both sides set to different values (or both added differently) stays a conflict, as
 *       with FAIL.
 */
#include "internal.h"

#include <stdlib.h>

enum { CLS_APPLY = 1, CLS_CONVERGENT = 2, CLS_CONFLICT = 3 };

typedef struct change {
	size_t koff, klen;
	size_t boff, blen; /* base value (when base_exists) */
	size_t toff, tlen; /* theirs value (when theirs_exists) */
	size_t ooff, olen; /* ours value in the ours arena (when ours_exists and a conflict) */
	unsigned char base_exists, theirs_exists, ours_exists, cls;
	unsigned char unresolved;
} change;

typedef struct mctx {
	change *v;
	size_t n, cap;
	prolly_buf arena;      /* keys and base/theirs values */
	prolly_buf ours_arena; /* ours values of conflicting keys */
	int rc;                /* error inside a callback */
} mctx;

static int collect_fn(void *payload, const prolly_diff_entry *e)
{
	mctx *m = payload;
	int rc;
	if (PROLLY__GROW(m->v, m->cap, m->n + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory collecting merge changes");
	change *c = &m->v[m->n];
	memset(c, 0, sizeof(*c));
	c->koff = m->arena.size;
	c->klen = e->key.size;
	if ((rc = prolly__buf_put(&m->arena, e->key.data, e->key.size)))
		return rc;
	c->base_exists = e->kind != PROLLY_DIFF_ADDED;
	c->theirs_exists = e->kind != PROLLY_DIFF_REMOVED;
	if (c->base_exists) {
		c->boff = m->arena.size;
		c->blen = e->old_value.size;
		if ((rc = prolly__buf_put(&m->arena, e->old_value.data, e->old_value.size)))
			return rc;
	}
	if (c->theirs_exists) {
		c->toff = m->arena.size;
		c->tlen = e->new_value.size;
		if ((rc = prolly__buf_put(&m->arena, e->new_value.data, e->new_value.size)))
			return rc;
	}
	m->n++;
	return 0;
}

static int count_fn(void *payload, const prolly_diff_entry *e)
{
	(void)e;
	(*(uint64_t *)payload)++;
	return 0;
}

static int same_value(int ea, const void *a, size_t alen, int eb, const void *b, size_t blen)
{
	if (ea != eb)
		return 0;
	if (!ea)
		return 1;
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* get_many callback: classifies change `index` by ours' value. */
static int ours_fn(void *payload, size_t index, const void *value, size_t vlen)
{
	mctx *m = payload;
	change *c = &m->v[index];
	const unsigned char *ar = m->arena.ptr;
	int oe = value != NULL;
	c->ours_exists = (unsigned char)oe;
	if (same_value(oe, value, vlen, c->base_exists, ar + c->boff, c->blen)) {
		c->cls = CLS_APPLY;
	} else if (same_value(oe, value, vlen, c->theirs_exists, ar + c->toff, c->tlen)) {
		c->cls = CLS_CONVERGENT;
	} else {
		c->cls = CLS_CONFLICT;
		if (oe) {
			c->ooff = m->ours_arena.size;
			c->olen = vlen;
			int rc = prolly__buf_put(&m->ours_arena, value, vlen);
			if (rc) {
				m->rc = rc;
				return rc;
			}
		}
	}
	return 0;
}

static prolly_slice slice_at(const prolly_buf *b, size_t off, size_t len, int exists)
{
	prolly_slice s = {NULL, 0};
	if (exists) {
		s.data = b->ptr + off;
		s.size = len;
	}
	return s;
}

static prolly_conflict conflict_of(const mctx *m, const change *c)
{
	prolly_conflict k;
	k.key = slice_at(&m->arena, c->koff, c->klen, 1);
	k.base = slice_at(&m->arena, c->boff, c->blen, c->base_exists);
	k.theirs = slice_at(&m->arena, c->toff, c->tlen, c->theirs_exists);
	k.ours = slice_at(&m->ours_arena, c->ooff, c->olen, c->ours_exists);
	k.base_exists = c->base_exists;
	k.ours_exists = c->ours_exists;
	k.theirs_exists = c->theirs_exists;
	/* an empty but present value still needs a non-NULL pointer */
	if (k.base_exists && !k.base.data)
		k.base.data = "";
	if (k.theirs_exists && !k.theirs.data)
		k.theirs.data = "";
	if (k.ours_exists && !k.ours.data)
		k.ours.data = "";
	return k;
}

static void theirs_edit(const mctx *m, const change *c, prolly_edit *ed)
{
	ed->key = slice_at(&m->arena, c->koff, c->klen, 1);
	if (c->theirs_exists) {
		ed->op = PROLLY_PUT;
		ed->value = slice_at(&m->arena, c->toff, c->tlen, 1);
	} else {
		ed->op = PROLLY_DEL;
		ed->value = (prolly_slice){NULL, 0};
	}
}

static int fast_count(prolly_db *db, const prolly_id *a, const prolly_id *b, uint64_t *out)
{
	return prolly_diff(db, a, b, NULL, count_fn, out);
}

/* The arguments prolly_merge and prolly_merge_preview share; opts NULL is the defaults. */
static int check_args(const char *fn, const prolly_merge_options *opts,
                      const prolly_merge_stats *stats, const void *handle, const prolly_id *base,
                      const prolly_id *ours, const prolly_id *theirs)
{
	int rc;
	if ((rc = prolly__merge_check(opts, stats)))
		return rc;
	if (!handle || !base || !ours || !theirs)
		return prolly_set_error(PROLLY_EINVAL, "%s: NULL argument", fn);
	if (!opts)
		return 0;
	if (opts->resolve != PROLLY_RESOLVE_FAIL && opts->resolve != PROLLY_RESOLVE_OURS &&
	    opts->resolve != PROLLY_RESOLVE_THEIRS && opts->resolve != PROLLY_RESOLVE_CALLBACK &&
	    opts->resolve != PROLLY_RESOLVE_DELETE_WINS && opts->resolve != PROLLY_RESOLVE_UPDATE_WINS)
		return prolly_set_error(PROLLY_EINVAL, "%s: unknown resolver %d", fn, (int)opts->resolve);
	if (opts->resolve == PROLLY_RESOLVE_CALLBACK && !opts->resolve_fn)
		return prolly_set_error(PROLLY_EINVAL, "%s: PROLLY_RESOLVE_CALLBACK without resolve_fn",
		                        fn);
	return 0;
}

/* Steps 1-4. txn NULL is a preview: every key is decided and reported as for a merge, and
 * step 4 stops before applying (out_root is then NULL and never written). */
static int merge_run(prolly_id *out_root, prolly_merge_stats *stats, prolly_db *db, prolly_txn *txn,
                     const prolly_id *base, const prolly_id *ours, const prolly_id *theirs,
                     const prolly_merge_options *opts)
{
	int rc = 0;
	mctx m;
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_slice *keys = NULL;
	prolly_edit *edits = NULL;
	size_t nedits = 0, unresolved = 0;
	unsigned ticks = 0;
	const prolly_merge_options defaults = PROLLY_MERGE_OPTIONS_INIT;
	prolly_id root;
	memset(&m, 0, sizeof(m));
	assert(!txn == !out_root);
	if (!opts)
		opts = &defaults;

	/* Fast paths. */
	if (prolly_id_equal(theirs, base)) {
		root = *ours;
		goto done;
	}
	if (prolly_id_equal(ours, base) || prolly_id_equal(ours, theirs)) {
		int ff = prolly_id_equal(ours, base);
		if (stats && (rc = fast_count(db, base, theirs, ff ? &st.applied : &st.convergent)))
			goto cleanup;
		root = ff ? *theirs : *ours;
		goto done;
	}

	/* 1. What theirs changed. */
	if ((rc = prolly_diff(db, base, theirs, NULL, collect_fn, &m)))
		goto cleanup;
	if (m.n == 0) { /* theirs has the same records as base (cannot happen with distinct ids) */
		root = *ours;
		goto done;
	}

	/* 2. Ours' values at those keys (the key arena no longer grows: M3). */
	keys = malloc(m.n * sizeof(*keys));
	edits = malloc(m.n * sizeof(*edits));
	if (!keys || !edits) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory merging %zu changes", m.n);
		goto cleanup;
	}
	for (size_t i = 0; i < m.n; i++)
		keys[i] = slice_at(&m.arena, m.v[i].koff, m.v[i].klen, 1);
	rc = prolly_get_many(db, ours, keys, m.n, ours_fn, &m);
	if (m.rc)
		rc = m.rc;
	if (rc)
		goto cleanup;

	/* 3. Decide per key, in key order. */
	for (size_t i = 0; i < m.n; i++) {
		change *c = &m.v[i];
		if ((rc = prolly__tick(db, &ticks)))
			goto cleanup;
		assert(c->cls == CLS_APPLY || c->cls == CLS_CONVERGENT || c->cls == CLS_CONFLICT);
		assert(i == 0 || prolly__keycmp(m.arena.ptr + m.v[i - 1].koff, m.v[i - 1].klen,
		                                m.arena.ptr + c->koff, c->klen) < 0); /* M1 */
		assert(!same_value(c->base_exists, m.arena.ptr + c->boff, c->blen, c->theirs_exists,
		                   m.arena.ptr + c->toff, c->tlen)); /* M2 */
		if (c->cls == CLS_APPLY) {
			theirs_edit(&m, c, &edits[nedits++]);
			st.applied++;
			continue;
		}
		if (c->cls == CLS_CONVERGENT) {
			st.convergent++;
			continue;
		}
		st.conflicts++;
		switch (opts->resolve) {
		case PROLLY_RESOLVE_OURS: break;
		case PROLLY_RESOLVE_THEIRS: theirs_edit(&m, c, &edits[nedits++]); break;
		case PROLLY_RESOLVE_DELETE_WINS: /* M5 */
		case PROLLY_RESOLVE_UPDATE_WINS:
			if (c->ours_exists && c->theirs_exists) {
				c->unresolved = 1; /* both updated, differently */
				unresolved++;
			} else if (c->ours_exists == (opts->resolve == PROLLY_RESOLVE_DELETE_WINS)) {
				theirs_edit(&m, c, &edits[nedits++]); /* theirs deleted, or theirs updated */
			}
			break;
		case PROLLY_RESOLVE_CALLBACK: {
			prolly_conflict k = conflict_of(&m, c);
			prolly_slice val = {NULL, 0};
			int exists = 0;
			int r = opts->resolve_fn(opts->payload, &k, &val, &exists);
			if (r == PROLLY_EMERGE) {
				c->unresolved = 1;
				unresolved++;
				break;
			}
			if (r) {
				rc = r;
				goto cleanup;
			}
			if (exists && val.size && !val.data) {
				rc = prolly_set_error(PROLLY_EINVAL,
				                      "merge resolver returned a value with no data");
				goto cleanup;
			}
			if (same_value(exists != 0, val.data, val.size, c->ours_exists, k.ours.data,
			               k.ours.size))
				break; /* ours already holds the decision */
			prolly_edit *ed = &edits[nedits++];
			ed->key = k.key;
			ed->op = exists ? PROLLY_PUT : PROLLY_DEL;
			ed->value = exists ? val : (prolly_slice){NULL, 0};
			if (exists && !ed->value.data)
				ed->value.data = "";
			break;
		}
		default: /* PROLLY_RESOLVE_FAIL */
			c->unresolved = 1;
			unresolved++;
			break;
		}
	}

	/* 4. Report or apply. */
	if (unresolved) {
		for (size_t i = 0; i < m.n && opts->on_conflict; i++) {
			if (!m.v[i].unresolved)
				continue;
			prolly_conflict k = conflict_of(&m, &m.v[i]);
			if (opts->on_conflict(opts->payload, &k))
				break; /* the reporter asked to stop; the merge still fails */
		}
		prolly__merge_stats_put(stats, &st);
		rc = prolly_set_error(PROLLY_EMERGE, "merge left %zu conflict%s unresolved", unresolved,
		                      unresolved == 1 ? "" : "s");
		goto cleanup; /* M4 */
	}
	root = *ours;
	if (txn && nedits && (rc = prolly__apply_sorted(&root, txn, ours, edits, nedits)))
		goto cleanup;
done:
	if (out_root)
		*out_root = root;
	prolly__merge_stats_put(stats, &st);
cleanup:
	free(keys);
	free(edits);
	free(m.v);
	prolly_buf_dispose(&m.arena);
	prolly_buf_dispose(&m.ours_arena);
	return rc;
}

int prolly_merge(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                 const prolly_id *base, const prolly_id *ours, const prolly_id *theirs,
                 const prolly_merge_options *opts)
{
	int rc;
	if ((rc = check_args("prolly_merge", opts, stats, txn, base, ours, theirs)))
		return rc;
	if (!out_root)
		return prolly_set_error(PROLLY_EINVAL, "prolly_merge: NULL argument");
	if ((rc = prolly__txn_usable(txn, "prolly_merge")))
		return rc;
	return merge_run(out_root, stats, txn->db, txn, base, ours, theirs, opts);
}

int prolly_merge_preview(prolly_merge_stats *stats, prolly_db *db, const prolly_id *base,
                         const prolly_id *ours, const prolly_id *theirs,
                         const prolly_merge_options *opts)
{
	int rc;
	if ((rc = check_args("prolly_merge_preview", opts, stats, db, base, ours, theirs)))
		return rc;
	return merge_run(NULL, stats, db, NULL, base, ours, theirs, opts);
}
