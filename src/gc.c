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

typedef struct idset {
	prolly_id *slots; /* the all-zero id marks an empty slot; the zero id itself is has_zero */
	size_t cap, len;  /* cap: power of two or 0 */
	int has_zero;
} idset;

static const prolly_id zero_id;

static void idset_init(idset *s)
{
	memset(s, 0, sizeof(*s));
}

static void idset_dispose(idset *s)
{
	free(s->slots);
	idset_init(s);
}

static size_t idset_start(const prolly_id *id, size_t cap)
{
	uint64_t h;
	memcpy(&h, id->bytes, sizeof(h));
	return (size_t)h & (cap - 1);
}

static int idset_has(const idset *s, const prolly_id *id)
{
	if (prolly_id_equal(id, &zero_id))
		return s->has_zero;
	if (!s->cap)
		return 0;
	for (size_t i = idset_start(id, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (prolly_id_equal(&s->slots[i], id))
			return 1;
		if (prolly_id_equal(&s->slots[i], &zero_id))
			return 0;
	}
}

static void idset_place(prolly_id *slots, size_t cap, const prolly_id *id)
{
	size_t i = idset_start(id, cap);
	while (!prolly_id_equal(&slots[i], &zero_id))
		i = (i + 1) & (cap - 1);
	slots[i] = *id;
}

/* Adds id; *added (may be NULL) says whether it was new. */
static int idset_add(idset *s, const prolly_id *id, int *added)
{
	if (added)
		*added = 0;
	if (prolly_id_equal(id, &zero_id)) {
		if (added)
			*added = !s->has_zero;
		s->has_zero = 1;
		return 0;
	}
	if (idset_has(s, id))
		return 0;
	if ((s->len + 1) * 4 > s->cap * 3) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		prolly_id *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return prolly_set_error(PROLLY_ENOMEM,
			                        "gc: out of memory growing the mark set to %zu ids", ncap);
		for (size_t i = 0; i < s->cap; i++)
			if (!prolly_id_equal(&s->slots[i], &zero_id))
				idset_place(ns, ncap, &s->slots[i]);
		free(s->slots);
		s->slots = ns;
		s->cap = ncap;
	}
	idset_place(s->slots, s->cap, id);
	s->len++;
	if (added)
		*added = 1;
	return 0;
}

/* A growable array of ids. */
typedef struct idlist {
	prolly_id *v;
	size_t n, cap;
} idlist;

static int idlist_push(idlist *l, const prolly_id *id)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		prolly_id *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv)
			return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
		l->v = nv;
		l->cap = ncap;
	}
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
	int kind; /* 0 unknown / missing, 1 commit, 2 tree */
} ref_entry;

typedef struct refs_ctx {
	ref_entry *v;
	size_t n, cap;
} refs_ctx;

static int on_ref(void *payload, const char *name, const prolly_id *value)
{
	refs_ctx *rc = payload;
	if (rc->n == rc->cap) {
		size_t ncap = rc->cap ? rc->cap * 2 : 16;
		ref_entry *nv = realloc(rc->v, ncap * sizeof(*nv));
		if (!nv)
			return prolly_set_error(PROLLY_ENOMEM, "gc: out of memory listing refs");
		rc->v = nv;
		rc->cap = ncap;
	}
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
	if (size >= 4 && memcmp(data, PROLLY_COMMIT_MAGIC, 4) == 0)
		rc->v[index].kind = 1;
	else if (size >= 4 && memcmp(data, PROLLY_NODE_MAGIC, 4) == 0)
		rc->v[index].kind = 2;
	return 0;
}

/* What the history walk collects: the commits of the next generation, the trees to mark. */
typedef struct walk_ctx {
	gc_ctx *gc;
	const prolly_id *ids;
	idlist *next; /* NULL: the next generation is beyond retention */
	idlist *trees;
	int rc;
} walk_ctx;

static int on_walk(void *payload, size_t index, const void *data, size_t size)
{
	walk_ctx *wc = payload;
	prolly_commit *c = NULL;
	int added, rc;
	if ((rc = prolly__commit_decode(&c, &wc->ids[index], data, size)))
		goto cleanup;
	if ((rc = idset_add(&wc->gc->marked, &c->tree, &added)))
		goto cleanup;
	if (added && (rc = idlist_push(wc->trees, &c->tree)))
		goto cleanup;
	for (size_t p = 0; wc->next && p < c->n_parents; p++) {
		if ((rc = idset_add(&wc->gc->marked, &c->parents[p], &added)))
			goto cleanup;
		if (added && (rc = idlist_push(wc->next, &c->parents[p])))
			goto cleanup;
	}
cleanup:
	prolly_commit_free(c);
	return rc ? (wc->rc = rc) : 0;
}

/* Step 2: retained commits (marked) and their trees (marked, appended to trees). */
static int mark_history(gc_ctx *gc, idlist *level, idlist *trees)
{
	prolly_db *db = gc->db;
	unsigned retain = db->opts.retain_commits;
	idlist next = {0};
	int rc = 0;
	for (unsigned depth = 0; level->n; depth++) {
		int last = retain && depth + 1 >= retain;
		walk_ctx wc = {gc, level->v, last ? NULL : &next, trees, 0};
		next.n = 0;
		/* A commit that is absent was removed by an earlier gc (beyond retention): skipped. */
		rc = prolly__load_raw(db, level->v, level->n, on_walk, &wc);
		if (wc.rc)
			rc = wc.rc;
		if (rc)
			goto cleanup;
		idlist tmp = *level;
		*level = next;
		next = tmp;
		if (last)
			break;
	}
cleanup:
	free(next.v);
	return rc;
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
			if ((rc = prolly__load(gc->db, &ws, level->v + at, k, nodes)))
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
	prolly_id *ids = NULL;
	idlist commits = {0}, trees = {0};
	int rc, added;

	idset_dispose(&gc->marked); /* a store may call mark() again */
	if ((rc = db->store->list_refs(db->store, "", on_ref, &refs)))
		goto cleanup;
	if (refs.n) {
		if (!(ids = malloc(refs.n * sizeof(*ids)))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "gc: out of memory");
			goto cleanup;
		}
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
		if (added && (rc = idlist_push(r->kind == 1 ? &commits : &trees, &r->id)))
			goto cleanup;
	}
	if ((rc = mark_history(gc, &commits, &trees)))
		goto cleanup;
	rc = mark_trees(gc, &trees);
cleanup:
	for (size_t i = 0; i < refs.n; i++)
		free(refs.v[i].name);
	free(refs.v);
	free(ids);
	free(commits.v);
	free(trees.v);
	return rc;
}

static int gc_keep(void *payload, const prolly_id *id)
{
	gc_ctx *gc = payload;
	return idset_has(&gc->marked, id);
}

int prolly_gc(prolly_db *db, prolly_gc_result *out)
{
	prolly_store *st = db->store;
	prolly_gc_result res;
	gc_ctx gc;
	prolly_store_write w;
	int rc;

	memset(&res, 0, sizeof(res));
	gc.db = db;
	idset_init(&gc.marked);
	if (!st->gc) {
		rc = prolly_set_error(PROLLY_EUNSUPPORTED, "the %s store does not support gc", st->kind);
		goto cleanup;
	}
	if ((rc = st->gc(st, gc_mark, gc_keep, &gc, &res)))
		goto cleanup;
	/* Nodes the gc removed must not stay readable through this handle's cache either. */
	prolly__cache_retain(db->cache, gc_keep, &gc);
	/* Learn the epoch the gc moved the store to (an empty write reports it), so that txns begun
	 * from now on carry it; txns begun before keep the old one and fail at commit. */
	memset(&w, 0, sizeof(w));
	if ((rc = st->write(st, &w)))
		goto cleanup;
	uint64_t cur = atomic_load(&db->epoch);
	while (cur < w.current_epoch &&
	       !atomic_compare_exchange_weak(&db->epoch, &cur, w.current_epoch))
		;
	if (out)
		*out = res;
cleanup:
	idset_dispose(&gc.marked);
	return rc;
}
