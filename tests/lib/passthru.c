/*
 * passthru.c - the tests' pass-through store (passthru.h).
 */
#include "passthru.h"

#include <stdlib.h>
#include <string.h>

void tp_note(prolly_store *st, const char *what)
{
	tp_store *w = (tp_store *)(void *)st;
	if (w->on_call)
		w->on_call(w, what);
}

int tp_get_nodes(prolly_store *st, const prolly_id *ids, size_t n, prolly_store_found_fn found,
                 void *payload)
{
	tp_note(st, "get_nodes");
	return tp_inner(st)->get_nodes(tp_inner(st), ids, n, found, payload);
}

int tp_write(prolly_store *st, prolly_store_write *w)
{
	tp_note(st, "write");
	return tp_inner(st)->write(tp_inner(st), w);
}

static int tp_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	tp_note(st, "get_ref");
	return tp_inner(st)->get_ref(tp_inner(st), name, out, epoch);
}

static int tp_get_refs(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
                       unsigned char *found, uint64_t *epoch)
{
	tp_note(st, "get_refs");
	return tp_inner(st)->get_refs(tp_inner(st), names, n, out, found, epoch);
}

static int tp_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	tp_note(st, "list_refs");
	return tp_inner(st)->list_refs(tp_inner(st), prefix, fn, payload);
}

static int tp_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                 prolly_gc_result *out)
{
	tp_note(st, "gc");
	return tp_inner(st)->gc(tp_inner(st), mark, keep, payload, out);
}

static int tp_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	tp_note(st, "stat");
	return tp_inner(st)->stat(tp_inner(st), nodes, bytes);
}

static int tp_get_ref_objects(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                              uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	tp_note(st, "get_ref_objects");
	return tp_inner(st)->get_ref_objects(tp_inner(st), name, follow, out, epoch, found, payload);
}

static int tp_get_ref_objects_known(prolly_store *st, const char *name, size_t follow,
                                    const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                    prolly_store_found_fn found, void *payload)
{
	tp_note(st, "get_ref_objects_known");
	return tp_inner(st)->get_ref_objects_known(tp_inner(st), name, follow, known, out, epoch, found,
	                                           payload);
}

static int tp_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                            void *payload)
{
	tp_note(st, "get_ancestors");
	return tp_inner(st)->get_ancestors(tp_inner(st), ids, n, limit, commit, found, payload);
}

static int tp_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                       prolly_store_obj_fn found, void *payload)
{
	tp_note(st, "find_ids");
	return tp_inner(st)->find_ids(tp_inner(st), lo, hi, limit, found, payload);
}

static int tp_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out)
{
	tp_note(st, "has_nodes");
	return tp_inner(st)->has_nodes(tp_inner(st), ids, n, out);
}

void tp_close(prolly_store *st)
{
	tp_store *w = (tp_store *)(void *)st;
	if (!w)
		return;
	if (w->inner && !w->keep_inner)
		w->inner->close(w->inner);
	if (w->owned)
		free(w);
}

void tp_init(tp_store *w, prolly_store *in)
{
	memset(w, 0, sizeof(*w));
	prolly_store_init(&w->base, PROLLY_STORE_VERSION);
	w->inner = in;
	w->base.kind = in->kind;
	w->base.get_nodes = tp_get_nodes;
	w->base.write = tp_write;
	w->base.get_ref = tp_get_ref;
	w->base.list_refs = tp_list_refs;
	w->base.gc = in->gc ? tp_gc : NULL;
	w->base.stat = in->stat ? tp_stat : NULL;
	w->base.close = tp_close;
	if (in->version >= 2)
		w->base.get_ref_objects = in->get_ref_objects ? tp_get_ref_objects : NULL;
	if (in->version >= 3) {
		w->base.flags = in->flags;
		w->base.find_ids = in->find_ids ? tp_find_ids : NULL;
	}
	if (in->version >= 4)
		w->base.get_ancestors = in->get_ancestors ? tp_get_ancestors : NULL;
	if (in->version >= 5)
		w->base.has_nodes = in->has_nodes ? tp_has_nodes : NULL;
	if (in->version >= 6)
		w->base.get_ref_objects_known = in->get_ref_objects_known ? tp_get_ref_objects_known : NULL;
	if (in->version >= 7)
		w->base.get_refs = in->get_refs ? tp_get_refs : NULL;
	if (in->version >= 8)
		w->base.node_size = in->node_size;
}

void *tp_new(size_t size, prolly_store *inner)
{
	tp_store *w = size >= sizeof(tp_store) ? calloc(1, size) : NULL;
	if (!w) {
		if (inner)
			inner->close(inner);
		return NULL;
	}
	tp_init(w, inner);
	w->owned = 1;
	return w;
}
