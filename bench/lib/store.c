/*
 * store.c - the pass-through store of store.h.
 */
#include "store.h"

#include "clock.h"
#include "prolly/store.h"

#include <stdio.h>
#include <stdlib.h>

static bench_store *of(prolly_store *st)
{
	return (bench_store *)st;
}

static uint64_t start(const bench_store *s)
{
	return s->flags & BENCH_STORE_TIMED ? bench_now_ns() : 0;
}

static void add_read(bench_store *s, uint64_t t0)
{
	if (s->flags & BENCH_STORE_TIMED)
		atomic_fetch_add(&s->read_ns, bench_now_ns() - t0);
}

static int w_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                       prolly_store_found_fn found, void *payload)
{
	bench_store *s = of(st);
	uint64_t t0 = start(s);
	int rc = s->inner->get_nodes(s->inner, ids, n, found, payload);
	add_read(s, t0);
	return rc;
}

static int w_write(prolly_store *st, prolly_store_write *w)
{
	bench_store *s = of(st);
	if (!(s->flags & BENCH_STORE_TIMED))
		return s->inner->write(s->inner, w);
	int durable = w->durable;
	if (atomic_load(&s->nosync))
		w->durable = 0;
	if (w->durable)
		atomic_fetch_add(&s->durable_writes, 1);
	uint64_t t0 = bench_now_ns();
	int rc = s->inner->write(s->inner, w);
	atomic_fetch_add(&s->write_ns, bench_now_ns() - t0);
	w->durable = durable;
	return rc;
}

static int w_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	bench_store *s = of(st);
	return s->inner->get_ref(s->inner, name, out, epoch);
}

static int w_get_refs(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
                      unsigned char *found, uint64_t *epoch)
{
	bench_store *s = of(st);
	return s->inner->get_refs(s->inner, names, n, out, found, epoch);
}

static int w_get_ref_objects(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                             uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	bench_store *s = of(st);
	uint64_t t0 = start(s);
	int rc = s->inner->get_ref_objects(s->inner, name, follow, out, epoch, found, payload);
	add_read(s, t0);
	return rc;
}

static int w_get_ref_objects_known(prolly_store *st, const char *name, size_t follow,
                                   const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                   prolly_store_found_fn found, void *payload)
{
	bench_store *s = of(st);
	uint64_t t0 = start(s);
	int rc = s->inner->get_ref_objects_known(s->inner, name, follow, known, out, epoch, found,
	                                         payload);
	add_read(s, t0);
	return rc;
}

static int w_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                           const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                           void *payload)
{
	bench_store *s = of(st);
	uint64_t t0 = start(s);
	int rc = s->inner->get_ancestors(s->inner, ids, n, limit, commit, found, payload);
	add_read(s, t0);
	return rc;
}

static int w_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out)
{
	bench_store *s = of(st);
	uint64_t t0 = start(s);
	int rc = s->inner->has_nodes(s->inner, ids, n, out);
	add_read(s, t0);
	return rc;
}

static int w_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	bench_store *s = of(st);
	return s->inner->list_refs(s->inner, prefix, fn, payload);
}

static int w_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                prolly_gc_result *out)
{
	bench_store *s = of(st);
	return s->inner->gc(s->inner, mark, keep, payload, out);
}

static int w_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	bench_store *s = of(st);
	return s->inner->stat(s->inner, nodes, bytes);
}

static void w_close(prolly_store *st)
{
	bench_store *s = of(st);
	if (!(s->flags & BENCH_STORE_BORROW))
		s->inner->close(s->inner);
	free(s);
}

int bench_store_open_local(prolly_store **out, const char *dir, unsigned node_size)
{
	prolly_store_options o = PROLLY_STORE_OPTIONS_INIT;
	char url[4300];
	if (dir && snprintf(url, sizeof(url), "lmdb:%s", dir) >= (int)sizeof(url))
		return prolly_set_error(PROLLY_EINVAL, "the LMDB directory's name is too long");
	o.flags = PROLLY_OPEN_CREATE;
	o.node_size = node_size;
	return prolly_store_open_opts(out, dir ? url : "mem:", &o);
}

int bench_store_wrap(bench_store **out, prolly_store *inner, unsigned flags)
{
	bench_store *s = calloc(1, sizeof(*s));
	if (!s) {
		if (!(flags & BENCH_STORE_BORROW))
			inner->close(inner);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory wrapping the store");
	}
	s->base.version = PROLLY_STORE_VERSION;
	s->base.flags = inner->version >= 3 ? inner->flags : 0;
	s->base.get_ancestors = inner->version >= 4 && inner->get_ancestors ? w_get_ancestors : NULL;
	s->base.has_nodes = inner->version >= 5 && inner->has_nodes ? w_has_nodes : NULL;
	s->base.get_ref_objects_known = inner->version >= 6 && inner->get_ref_objects_known
	                                    ? w_get_ref_objects_known
	                                    : NULL;
	s->base.get_refs = inner->version >= 7 && inner->get_refs ? w_get_refs : NULL;
	s->base.node_size = inner->version >= 8 ? inner->node_size : 0; /* the trees are the store's */
	s->base.kind = inner->kind;
	s->base.get_nodes = w_get_nodes;
	s->base.write = w_write;
	s->base.get_ref = w_get_ref;
	s->base.list_refs = w_list_refs;
	s->base.gc = inner->gc ? w_gc : NULL;
	s->base.stat = inner->stat ? w_stat : NULL;
	s->base.close = w_close;
	s->base.get_ref_objects = inner->version >= 2 && inner->get_ref_objects ? w_get_ref_objects
	                                                                        : NULL;
	s->inner = inner;
	s->flags = flags;
	atomic_init(&s->read_ns, 0);
	atomic_init(&s->write_ns, 0);
	atomic_init(&s->durable_writes, 0);
	atomic_init(&s->nosync, 0);
	*out = s;
	return 0;
}

prolly_store *bench_store_base(bench_store *s)
{
	return &s->base;
}

void bench_store_reset(bench_store *s)
{
	if (!s)
		return;
	atomic_store(&s->read_ns, 0);
	atomic_store(&s->write_ns, 0);
	atomic_store(&s->durable_writes, 0);
}
