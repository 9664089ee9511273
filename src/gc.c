/*
 * gc.c - retention and mark-and-sweep garbage collection.
 *
 * prolly_gc hands the store a mark() and a keep() callback. The store excludes every writer,
 * bumps its gc epoch, calls mark(), then deletes each stored object for which keep() says 0.
 *
 * mark():
 *   1. lists every ref and fetches what each names with one store call; a commit starts a
 *      history walk, a tree node is a tree root to keep (refs that name neither, or nothing,
 *      are left alone; a branch naming a missing commit stops the gc: PROLLY_ECORRUPT);
 *   2. walks history breadth-first from all those commits at once, one store call per
 *      generation: a commit at distance d (parent steps, any parent) from its nearest head is
 *      retained iff retain_commits == 0 or d < retain_commits. For linear history that is
 *      exactly the newest retain_commits commits of each branch; across merges it keeps every
 *      commit within that many generations (never fewer than the newest N);
 *   3. marks the trees of the retained commits level by level: the roots are loaded, then all
 *      unmarked children of every internal node of the level, over all trees at once, with one
 *      prolly__load call per level (per GC_BATCH nodes). A subtree already marked is skipped,
 *      so shared nodes are visited once and the cost is proportional to the distinct nodes
 *      kept. Children of level-1 nodes are leaves: they are marked by id and never read.
 * The mark set holds 32-byte ids only (an open-addressing table).
 *
 * Why a write in flight cannot publish a tree whose nodes the gc removed: see docs/commits.md
 * ("gc and the epoch"). In short, every txn commit checks that the store's gc epoch still
 * equals the epoch the txn began with; the store bumps the epoch while excluding writers, before
 * mark() runs, so a txn that could have read anything the sweep removes fails the check.
 */
#include "internal.h"

#include <stdlib.h>

#define GC_BATCH 4096

/* ------------------------------------------------------------------------------------------ */
/* A set of ids                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef prolly__idmap idset; /* every value 1 */

static int idset_has(const idset *s, const prolly_id *id)
{
	return prolly__idmap_get(s, id) != 0;
}

/* Adds id; *added (may be NULL) says whether it was new. */
static int idset_add(idset *s, const prolly_id *id, int *added)
{
	int is_new = !idset_has(s, id), rc = is_new ? prolly__idmap_put(s, id, 1) : 0;
	if (added)
		*added = is_new && !rc;
	return rc;
}

/* A growable array of ids. */
typedef struct idlist {
	prolly_id *v;
	size_t n, cap;
} idlist;

static int idlist_push(idlist *l, const prolly_id *id)
{
	if (PROLLY__GROW(l->v, l->cap, l->n + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
	l->v[l->n++] = *id;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Mark                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct gc_ctx {
	prolly_db *db;
	idset marked;
} gc_ctx;

typedef struct ref_entry {
	char *name;
	prolly_id id;
	int kind;             /* 0 unknown / missing, 1 commit, 2 tree, 3 reflog entry */
	int has_old, has_new; /* a reflog entry's values */
	prolly_id old_id, new_id;
} ref_entry;

typedef struct refs_ctx {
	ref_entry *v;
	size_t n, cap;
} refs_ctx;

static int on_ref(void *payload, const char *name, const prolly_id *value)
{
	refs_ctx *rc = payload;
	if (PROLLY__GROW(rc->v, rc->cap, rc->n + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory listing refs");
	char *copy = strdup(name);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory listing refs");
	rc->v[rc->n].name = copy;
	rc->v[rc->n].id = *value;
	rc->v[rc->n].kind = 0;
	rc->n++;
	return 0;
}

static int on_ref_target(void *payload, size_t index, const void *data, size_t size)
{
	refs_ctx *rc = payload;
	ref_entry *r = &rc->v[index];
	if (size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0) {
		r->kind = 1;
	} else if (size >= PROLLY__MAGIC_SIZE &&
	           memcmp(data, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE) == 0) {
		r->kind = 2;
	} else if (size >= PROLLY__MAGIC_SIZE &&
	           memcmp(data, PROLLY_REFLOG_MAGIC, PROLLY__MAGIC_SIZE) == 0) {
		prolly__reflog e;
		int err = prolly__reflog_decode(&e, &r->id, data, size);
		if (err)
			return err; /* a damaged entry stops the gc before anything is removed */
		r->kind = 3;
		r->has_old = e.has_old;
		r->has_new = e.has_new;
		r->old_id = e.old_id;
		r->new_id = e.new_id;
		prolly__reflog_dispose(&e);
	}
	return 0;
}

/* Step 3: every node of the trees (roots already marked). */
static int mark_trees(gc_ctx *gc, idlist *level)
{
	idlist next = {0};
	prolly__nodeset ws;
	pnode **nodes = NULL;
	int rc = 0;

	prolly__nodeset_init(&ws);
	if (!(nodes = malloc(GC_BATCH * sizeof(*nodes)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		goto cleanup;
	}
	while (level->n) {
		next.n = 0;
		for (size_t at = 0; at < level->n; at += GC_BATCH) {
			size_t k = PROLLY_MIN((size_t)GC_BATCH, level->n - at);
			if ((rc = prolly__load_ex(gc->db, &ws, level->v + at, k, nodes, PROLLY__LOAD_IN_GC)))
				goto cleanup;
			for (size_t i = 0; i < k; i++) {
				const pnode *nd = nodes[i];
				if (nd->level == 0)
					continue;
				for (uint32_t c = 0; c < nd->n; c++) {
					int added;
					const prolly_id *child = prolly__node_child(nd, c);
					if ((rc = idset_add(&gc->marked, child, &added)))
						goto cleanup;
					/* Leaves (children of level 1) are kept by id, never read. */
					if (added && nd->level >= 2 && (rc = idlist_push(&next, child)))
						goto cleanup;
				}
			}
			prolly__nodeset_dispose(&ws); /* bounded memory: one batch of nodes at a time */
		}
		idlist tmp = *level;
		*level = next;
		next = tmp;
	}
cleanup:
	prolly__nodeset_dispose(&ws);
	free(nodes);
	free(next.v);
	return rc;
}

static int gc_mark(void *payload)
{
	gc_ctx *gc = payload;
	prolly_db *db = gc->db;
	refs_ctx refs = {NULL, 0, 0};
	prolly_id *ids = NULL, *kc = NULL, *kt = NULL;
	size_t n_heads = 0, n_protected, nkc = 0, nkt = 0;
	idlist trees = {0};
	int rc, added;

	prolly__idmap_dispose(&gc->marked); /* a store may call mark() again */
	if ((rc = db->vt.list_refs(db->store, "", on_ref, &refs)))
		goto cleanup;
	/* ids: what the refs name (for one read), then reused for the heads of the history walk:
	 * branch heads, tags and other refs naming commits first (protected: their merge bases are
	 * kept), then the commits reflog entries name. */
	if (!(ids = malloc((refs.n ? refs.n : 1) * 2 * sizeof(*ids)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		goto cleanup;
	}
	if (refs.n) {
		for (size_t i = 0; i < refs.n; i++)
			ids[i] = refs.v[i].id;
		if ((rc = prolly__load_raw(db, ids, refs.n, on_ref_target, &refs)))
			goto cleanup;
	}
	for (size_t i = 0; i < refs.n; i++) {
		const ref_entry *r = &refs.v[i];
		if (r->kind == 0) {
			if (strncmp(r->name, "refs/heads/", 11) == 0) {
				char hex[PROLLY_ID_HEX_SIZE];
				prolly_id_to_hex(hex, &r->id);
				rc = prolly_set_error(PROLLY_ECORRUPT,
				                      "gc: branch '%s' names commit %s, which is missing; nothing "
				                      "was removed",
				                      r->name + 11, hex);
				goto cleanup;
			}
			continue; /* a ref naming nothing stored (say the empty tree): nothing to keep */
		}
		if ((rc = idset_add(&gc->marked, &r->id, &added)))
			goto cleanup;
		if (r->kind == 1)
			ids[n_heads++] = r->id;
		else if (r->kind == 2 && added && (rc = idlist_push(&trees, &r->id)))
			goto cleanup;
	}
	n_protected = n_heads;
	for (size_t i = 0; i < refs.n; i++) { /* the commits a live reflog entry names */
		const ref_entry *r = &refs.v[i];
		if (r->kind == 3 && r->has_old)
			ids[n_heads++] = r->old_id;
		if (r->kind == 3 && r->has_new)
			ids[n_heads++] = r->new_id;
	}
	if ((rc = prolly__gc_history(db, ids, n_heads, n_protected, db->opts.retain_commits, &kc, &nkc,
	                             &kt, &nkt)))
		goto cleanup;
	for (size_t i = 0; i < nkc; i++)
		if ((rc = idset_add(&gc->marked, &kc[i], NULL)))
			goto cleanup;
	for (size_t i = 0; i < nkt; i++) {
		if ((rc = idset_add(&gc->marked, &kt[i], &added)))
			goto cleanup;
		if (added && (rc = idlist_push(&trees, &kt[i])))
			goto cleanup;
	}
	rc = mark_trees(gc, &trees);
cleanup:
	for (size_t i = 0; i < refs.n; i++)
		free(refs.v[i].name);
	free(refs.v);
	free(ids);
	free(kc);
	free(kt);
	free(trees.v);
	return rc;
}

static int gc_keep(void *payload, const prolly_id *id)
{
	gc_ctx *gc = payload;
	return idset_has(&gc->marked, id);
}

/* ------------------------------------------------------------------------------------------ */
/* Reflog expiry (step 0, before the store's gc)                                              */
/* ------------------------------------------------------------------------------------------ */

typedef struct expire_ctx {
	int64_t horizon;
	prolly_ref_update *v;
	size_t n, cap;
} expire_ctx;

static int on_log_ref(void *payload, const char *name, const prolly_id *value)
{
	expire_ctx *ec = payload;
	int64_t t;
	if (!prolly__reflog_name_time(name, &t) || t >= ec->horizon)
		return 0;
	if (PROLLY__GROW(ec->v, ec->cap, ec->n + 1, 64))
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory expiring the reflog");
	prolly_ref_update *u = &ec->v[ec->n];
	memset(u, 0, sizeof(*u));
	if (!(u->name = strdup(name)))
		return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory expiring the reflog");
	u->expect = PROLLY_REF_EXPECT_VALUE;
	u->expected = *value;
	u->remove = 1;
	ec->n++;
	return 0;
}

/* Deletes the refs of reflog entries older than opts.reflog_days (compare-and-swap on each, all
 * in one write, so an entry is never half expired); their objects are then swept by the gc.
 * Entries written meanwhile are newer than the horizon. A lost race (another gc expired some of
 * them first) is retried with a fresh listing. */
static int expire_reflog(prolly_db *db, uint64_t *expired)
{
	expire_ctx ec;
	int rc = 0;
	*expired = 0;
	memset(&ec, 0, sizeof(ec));
	const int64_t day_us = (int64_t)86400 * 1000000;
	int64_t now = prolly__db_now(db);
	/* A span beyond int64 (or reaching back before its first microsecond) keeps every entry: it
	 * must not wrap to a horizon in the future that expires them all. */
	if ((int64_t)db->opts.reflog_days > INT64_MAX / day_us ||
	    now < INT64_MIN + (int64_t)db->opts.reflog_days * day_us)
		ec.horizon = INT64_MIN;
	else
		ec.horizon = now - (int64_t)db->opts.reflog_days * day_us;
	if (!db->opts.reflog_days)
		ec.horizon = INT64_MAX; /* 0 days: every entry, whatever the clocks say */
	for (int attempt = 0; attempt < 4; attempt++) {
		for (size_t i = 0; i < ec.n; i++)
			free((char *)ec.v[i].name);
		ec.n = 0;
		if ((rc = db->vt.list_refs(db->store, PROLLY__LOGS_PREFIX, on_log_ref, &ec)))
			goto cleanup;
		if (!ec.n)
			goto cleanup;
		prolly_store_write w;
		memset(&w, 0, sizeof(w));
		w.refs = ec.v;
		w.n_refs = ec.n;
		w.durable = 1;
		rc = prolly__store_write(db, &w);
		if (rc == 0)
			*expired = ec.n;
		if (rc != PROLLY_ECONFLICT)
			goto cleanup;
	}
cleanup:
	for (size_t i = 0; i < ec.n; i++)
		free((char *)ec.v[i].name);
	free(ec.v);
	return rc;
}

int prolly_gc(prolly_db *db, prolly_gc_result *out)
{
	prolly_gc_result res = PROLLY_GC_RESULT_INIT; /* what the store fills: the full struct */
	gc_ctx gc;
	prolly_store_write w;
	uint64_t expired = 0;
	int rc;

	if ((rc = prolly__gc_result_check(out)))
		return rc;
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_gc: NULL handle");
	gc.db = db;
	prolly__idmap_init(&gc.marked);
	if (!db->vt.gc) {
		rc = prolly_set_error(PROLLY_EUNSUPPORTED, "the %s store does not support gc", db->vt.kind);
		goto cleanup;
	}
	if ((rc = expire_reflog(db, &expired)))
		goto cleanup;
	if ((rc = db->vt.gc(db->store, gc_mark, gc_keep, &gc, &res)))
		goto cleanup;
	res.reflog_expired = expired;
	/* Nodes the gc removed must not stay readable through this handle's cache either. */
	prolly__cache_retain(db->cache, gc_keep, &gc);
	/* Learn the epoch the gc moved the store to (an empty write reports it), so that txns begun
	 * from now on carry it; txns begun before keep the old one and fail at commit. */
	memset(&w, 0, sizeof(w));
	if ((rc = prolly__store_write(db, &w)))
		goto cleanup;
	uint64_t cur = atomic_load(&db->epoch);
	while (cur < w.current_epoch &&
	       !atomic_compare_exchange_weak(&db->epoch, &cur, w.current_epoch))
		;
	prolly__gc_result_put(out, &res);
cleanup:
	prolly__idmap_dispose(&gc.marked);
	return rc;
}
