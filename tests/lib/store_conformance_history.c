/*
 * store_conformance_history.c - the store conformance suite's cases on what gc and sync rely on:
 * the gc epoch, gc itself, a ref and its objects in one call, get_ancestors along a commit layout,
 * and the reflog through the engine.
 */
#include "store_conformance_int.h"

#include "passthru.h"

#include "format.h"
#include "internal.h" /* prolly__commit_layout, what the engine passes get_ancestors */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cf_case_epoch(cf_case *t, prolly_store *st)
{
	prolly_id v = cf_make_id(11, 1);
	uint64_t epoch = 0;
	CHECK_RC(t, cf_write_refs(st, NULL, 0, &epoch), 0);
	REQUIRE(t, epoch != 0);

	cf_tnode n = cf_tnode_make(11, 2, 90);
	REQUIRE(t, n.data);
	prolly_store_node sn = cf_as_store_node(&n);
	prolly_ref_update u = cf_ref_update("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	/* An empty write that checks the epoch (a store may answer it without a write
	 * transaction) refuses a stale one too, and reports the store's. */
	prolly_store_write empty = cf_write_of(NULL, 0, NULL, 0);
	empty.check_epoch = 1;
	empty.epoch = epoch + 1;
	CHECK_RC(t, st->write(st, &empty), PROLLY_ECONFLICT);
	CHECK(t, empty.current_epoch == epoch);
	empty.epoch = epoch;
	empty.current_epoch = 0;
	CHECK_RC(t, st->write(st, &empty), 0);
	CHECK(t, empty.current_epoch == epoch);

	prolly_store_write w = cf_write_of(&sn, 1, &u, 1);
	w.check_epoch = 1;
	w.epoch = epoch + 1;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch == epoch);
	CHECK(t, u.conflict == 0);
	CHECK(t, cf_lacks_node(st, &n.id));
	CHECK(t, cf_ref_is(st, "refs/heads/e", NULL));

	w.epoch = epoch;
	w.current_epoch = 0;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, w.current_epoch == epoch);
	CHECK(t, cf_has_node(st, &n));
	CHECK(t, cf_ref_is(st, "refs/heads/e", &v));
	cf_tnode_free(&n);
}

/* gc */

#define GC_NODES 200

typedef struct gc_ctx {
	cf_case *t;
	prolly_store *st;
	cf_tnode nodes[GC_NODES];
	int marked;
	int keep_calls;
	int keep_before_mark;
	uint64_t old_epoch;
	/* a writer started during mark() */
	pthread_t writer;
	int writer_started;
	_Atomic int writer_done;
	int writer_rc;
	uint64_t writer_epoch;
} gc_ctx;

static void *gc_writer(void *arg)
{
	gc_ctx *g = arg;
	cf_tnode n = cf_tnode_make(12, 5000, 77);
	prolly_store_node sn = cf_as_store_node(&n);
	prolly_id v = cf_make_id(12, 5001);
	prolly_ref_update u = cf_ref_update("refs/heads/late", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	prolly_store_write w = cf_write_of(&sn, 1, &u, 1);
	w.check_epoch = 1;
	w.epoch = g->old_epoch;
	w.durable = 1;
	g->writer_rc = g->st->write(g->st, &w);
	g->writer_epoch = w.current_epoch;
	g->writer_done = 1;
	cf_tnode_free(&n);
	return NULL;
}

static int gc_mark(void *payload)
{
	gc_ctx *g = payload;
	cf_case *t = g->t;
	prolly_store *st = g->st;
	/* mark() may read the store from the gc's own thread. */
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, NULL), 0);
	CHECK(t, prolly_id_equal(&v, &g->nodes[0].id));
	CHECK(t, cf_has_node(st, &g->nodes[0]));
	cf_listed l;
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "", cf_listed_fn, &l), 0);
	CHECK(t, l.n == 1 || g->writer_started);
	/* Writers are excluded while mark() runs, or fail: a write begun now waits for the gc or is
	 * refused with PROLLY_ECONFLICT. (A store may
	 * call mark() again when it retries a gc; only the first call starts the writer.) */
	if (!g->writer_started && pthread_create(&g->writer, NULL, gc_writer, g) == 0) {
		g->writer_started = 1;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
		/* A store whose gc lets writers run while it marks (PostgreSQL) fails them instead. */
		CHECK(t, !g->writer_done || g->writer_rc == PROLLY_ECONFLICT);
	}
	g->marked = 1;
	return 0;
}

static int gc_keep(void *payload, const prolly_id *id)
{
	gc_ctx *g = payload;
	g->keep_calls++; /* counted over every attempt */
	if (!g->marked)
		g->keep_before_mark = 1;
	for (int i = 0; i < GC_NODES; i++)
		if (prolly_id_equal(id, &g->nodes[i].id))
			return i % 3 == 0;
	return 0;
}

static int keep_all(void *payload, const prolly_id *id)
{
	(void)payload;
	(void)id;
	return 1;
}

void cf_case_gc(cf_case *t, prolly_store *st)
{
	if (!st->gc) {
		t->skip = "the store has no gc";
		return;
	}
	gc_ctx *g = calloc(1, sizeof(*g));
	REQUIRE(t, g);
	g->t = t;
	g->st = st;
	uint64_t removed_bytes = 0, kept = 0;
	for (int i = 0; i < GC_NODES; i++) {
		g->nodes[i] = cf_tnode_make(12, (uint64_t)i, 20 + (size_t)i * 3);
		if (!g->nodes[i].data)
			t->bad = 1;
		if (i % 3 == 0)
			kept++;
		else
			removed_bytes += g->nodes[i].size;
	}
	if (t->bad)
		goto cleanup;
	CHECK_RC(t, cf_write_nodes(st, g->nodes, GC_NODES, 1), 0);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/main", &g->nodes[0].id), 0);
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &g->old_epoch), 0);

	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	CHECK_RC(t, st->gc(st, gc_mark, gc_keep, g, &res), 0);
	if (g->writer_started)
		pthread_join(g->writer, NULL);
	CHECK(t, g->marked && !g->keep_before_mark);
	CHECK(t, g->keep_calls >= GC_NODES);
	CHECK(t, res.nodes_kept == kept);
	CHECK(t, res.nodes_removed == GC_NODES - kept);
	CHECK(t, res.bytes_removed == removed_bytes);
	for (int i = 0; i < GC_NODES; i++) {
		if (i % 3 == 0)
			CHECK(t, cf_has_node(st, &g->nodes[i]));
		else
			CHECK(t, cf_lacks_node(st, &g->nodes[i].id));
	}
	if (st->stat) {
		uint64_t nodes = 0;
		CHECK_RC(t, st->stat(st, &nodes, NULL), 0);
		CHECK(t, nodes == kept);
	}

	/* The epoch moved; the write that waited for the gc was refused; so is any write still
	 * carrying the old epoch. */
	uint64_t new_epoch = 0;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &new_epoch), 0);
	CHECK(t, new_epoch > g->old_epoch);
	CHECK(t, g->writer_started);
	CHECK(t, g->writer_rc == PROLLY_ECONFLICT);
	CHECK(t, g->writer_epoch > g->old_epoch && g->writer_epoch <= new_epoch);
	CHECK(t, cf_ref_is(st, "refs/heads/late", NULL));
	prolly_id late = cf_make_id(12, 5000);
	CHECK(t, cf_lacks_node(st, &late));

	prolly_ref_update u = cf_ref_update("refs/heads/x", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	prolly_store_write w = cf_write_of(NULL, 0, &u, 1);
	w.check_epoch = 1;
	w.epoch = g->old_epoch;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch == new_epoch);
	CHECK(t, cf_ref_is(st, "refs/heads/x", NULL));
	w.epoch = new_epoch;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, cf_ref_is(st, "refs/heads/x", &v));

	/* A gc that keeps everything removes nothing and still bumps the epoch. */
	prolly_gc_result_init(&res, PROLLY_GC_RESULT_VERSION);
	CHECK_RC(t, st->gc(st, NULL, keep_all, NULL, &res), 0);
	CHECK(t, res.nodes_kept == kept && res.nodes_removed == 0 && res.bytes_removed == 0);
	uint64_t third = 0;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &third), 0);
	CHECK(t, third > new_epoch);

cleanup:
	for (int i = 0; i < GC_NODES; i++)
		cf_tnode_free(&g->nodes[i]);
	free(g);
}

typedef struct objs {
	int calls;
	size_t index[4];
	size_t size[4];
	unsigned char first[4];
} objs;

static int objs_fn(void *payload, size_t index, const void *data, size_t size)
{
	objs *o = payload;
	if (o->calls < 4) {
		o->index[o->calls] = index;
		o->size[o->calls] = size;
		o->first[o->calls] = size ? ((const unsigned char *)data)[0] : 0;
	}
	o->calls++;
	return 0;
}

/* get_ref_objects_known where the store has it (known NULL is then get_ref_objects), else
 * get_ref_objects. */
static int ref_objects(prolly_store *st, const char *name, size_t follow, const prolly_id *known,
                       prolly_id *out, uint64_t *epoch, objs *o)
{
	if (st->version >= 6 && st->get_ref_objects_known)
		return st->get_ref_objects_known(st, name, follow, known, out, epoch, objs_fn, o);
	return st->get_ref_objects(st, name, follow, out, epoch, objs_fn, o);
}

/* get_ref_objects (interface version 2, optional) and get_ref_objects_known (version 6,
 * optional): the ref, the object it names and the object named at offset `follow` of that one,
 * from one snapshot; nothing but the ref when it names the known id. */
void cf_case_ref_objects(cf_case *t, prolly_store *st)
{
	int known_too = st->version >= 6 && st->get_ref_objects_known;
	if (!known_too && (st->version < 2 || !st->get_ref_objects)) {
		t->skip = "the store has neither get_ref_objects nor get_ref_objects_known";
		return;
	}
	/* head -> a 60-byte object whose bytes 5..37 are the id of a 3000-byte object */
	cf_tnode leaf = cf_tnode_make(15, 1, 3000);
	REQUIRE(t, leaf.data);
	unsigned char commit[60];
	memset(commit, 'c', sizeof(commit));
	memcpy(commit + 5, leaf.id.bytes, PROLLY_ID_SIZE);
	cf_tnode head = {cf_make_id(15, 2), commit, sizeof(commit)};
	prolly_store_node sn[2] = {cf_as_store_node(&leaf), cf_as_store_node(&head)};
	prolly_store_write w = cf_write_of(sn, 2, NULL, 0);
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/o", &head.id), 0);

	objs o;
	prolly_id got;
	uint64_t epoch = 0;
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, NULL, &got, &epoch, &o), 0);
	CHECK(t, prolly_id_equal(&got, &head.id) && epoch >= 1);
	CHECK(t, o.calls == 2 && o.index[0] == 0 && o.size[0] == 60 && o.first[0] == 'c');
	CHECK(t, o.index[1] == 1 && o.size[1] == 3000 && o.first[1] == leaf.data[0]);

	/* the followed id names nothing: only the first object */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 6, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 1 && o.index[0] == 0);
	/* the first object is too short to hold the id at that offset */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 40, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 1);
	/* the ref names an object that is not stored: no call */
	prolly_id nowhere = cf_make_id(15, 3);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/p", &nowhere), 0);
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/p", 5, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 0 && prolly_id_equal(&got, &nowhere));
	/* no such ref */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/none", 5, NULL, &got, NULL, &o), PROLLY_ENOTFOUND);
	CHECK(t, o.calls == 0);
	if (known_too) {
		/* the ref names the known id: the ref and the epoch, no object */
		memset(&o, 0, sizeof(o));
		epoch = 0;
		got = nowhere;
		CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, &head.id, &got, &epoch, &o), 0);
		CHECK(t, o.calls == 0 && prolly_id_equal(&got, &head.id) && epoch >= 1);
		/* another known id: both objects, as without one */
		memset(&o, 0, sizeof(o));
		CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, &nowhere, &got, NULL, &o), 0);
		CHECK(t, o.calls == 2 && o.size[0] == 60 && o.size[1] == 3000);
		memset(&o, 0, sizeof(o));
		CHECK_RC(t, ref_objects(st, "refs/heads/none", 5, &head.id, &got, NULL, &o),
		         PROLLY_ENOTFOUND);
		CHECK(t, o.calls == 0);
	}
	cf_tnode_free(&leaf);
}

/* Bytes in the commit layout of src/commit.c, at the offsets of src/format.h ("PRLC", version 1,
 * a tree id, a u32 parent count, the parents, a time, an empty message) with the given parents;
 * returns the size. */
static size_t commit_bytes(unsigned char *out, const prolly_id *parents, uint32_t np)
{
	size_t tail = PROLLY__COMMIT_OFF_PARENTS + PROLLY_ID_SIZE * (size_t)np;
	memcpy(out, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE);
	out[PROLLY__COMMIT_OFF_VERSION] = PROLLY_FORMAT_VERSION;
	memset(out + PROLLY__COMMIT_OFF_TREE, 't', PROLLY_ID_SIZE);
	for (int i = 0; i < 4; i++)
		out[PROLLY__COMMIT_OFF_NPARENTS + i] = (unsigned char)(np >> (8 * i));
	if (np)
		memcpy(out + PROLLY__COMMIT_OFF_PARENTS, parents, np * sizeof(*parents));
	memset(out + tail, 0, PROLLY__COMMIT_TAIL_MESSAGE); /* time 0, message length 0 */
	return tail + PROLLY__COMMIT_TAIL_MESSAGE;
}

typedef struct anc {
	int calls;
	prolly_id id[8];
} anc;

static int anc_fn(void *payload, const prolly_id *id, const void *data, size_t size)
{
	anc *a = payload;
	(void)data;
	(void)size;
	if (a->calls < 8)
		a->id[a->calls] = *id;
	a->calls++;
	return 0;
}

static int anc_has(const anc *a, const prolly_id *id)
{
	for (int i = 0; i < a->calls && i < 8; i++)
		if (prolly_id_equal(&a->id[i], id))
			return 1;
	return 0;
}

/* A commit layout of another shape than the engine's: the store must follow what it is given
 * (offsets and magic), not assume the engine's format. */
static const unsigned char other_magic[3] = {'Q', 'Z', '!'};
static const prolly_store_commit_layout other_layout = {other_magic, 3, 9, 17};

/* Bytes of a "commit" in other_layout: magic, filler, the u32 count at 9, parents from 17. */
static size_t other_commit_bytes(unsigned char *out, const prolly_id *parents, uint32_t np)
{
	memset(out, '.', 17);
	memcpy(out, other_magic, sizeof(other_magic));
	for (int i = 0; i < 4; i++)
		out[9 + i] = (unsigned char)(np >> (8 * i));
	if (np)
		memcpy(out + 17, parents, np * sizeof(*parents));
	return 17 + PROLLY_ID_SIZE * (size_t)np;
}

/* get_ancestors (interface version 4, optional): objects and the commits they descend from,
 * along the commit layout passed. */
void cf_case_ancestors(cf_case *t, prolly_store *st)
{
	const prolly_store_commit_layout *cl = &prolly__commit_layout;
	if (st->version < 4 || !st->get_ancestors) {
		t->skip = "the store has no get_ancestors";
		return;
	}
	/* c0 <- c1 <- c2 <- m -> c0 (two paths to c0), and a leaf-like object that is no commit */
	unsigned char b[4][53 + 64];
	cf_tnode n[5];
	n[0].id = cf_make_id(17, 0);
	n[1].id = cf_make_id(17, 1);
	n[2].id = cf_make_id(17, 2);
	n[3].id = cf_make_id(17, 3);
	prolly_id mp[2] = {n[2].id, n[0].id};
	n[0].size = commit_bytes(b[0], NULL, 0);
	n[1].size = commit_bytes(b[1], &n[0].id, 1);
	n[2].size = commit_bytes(b[2], &n[1].id, 1);
	n[3].size = commit_bytes(b[3], mp, 2);
	for (int i = 0; i < 4; i++)
		n[i].data = b[i];
	n[4] = cf_tnode_make(17, 4, 100);
	REQUIRE(t, n[4].data);
	CHECK_RC(t, cf_write_nodes(st, n, 5, 1), 0);

	anc a;
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 100, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 4 && anc_has(&a, &n[0].id) && anc_has(&a, &n[1].id) &&
	             anc_has(&a, &n[2].id) && anc_has(&a, &n[3].id));
	/* at most `limit` objects, the asked one among them */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 2, cl, anc_fn, &a), 0);
	CHECK(t, a.calls >= 1 && a.calls <= 2 && anc_has(&a, &n[3].id));
	/* a duplicate answered once, an absent id not at all */
	prolly_id ask[3] = {n[1].id, n[1].id, cf_make_id(17, 99)};
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, ask, 3, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 2 && anc_has(&a, &n[1].id) && anc_has(&a, &n[0].id));
	/* an object that is no commit is reported, not followed */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[4].id, 1, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 1 && anc_has(&a, &n[4].id));
	/* the same history read with another layout: these objects are no commits in it */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 100, &other_layout, anc_fn, &a), 0);
	CHECK(t, a.calls == 1 && anc_has(&a, &n[3].id));

	/* objects in the other layout: o2 -> o1 -> o0, followed with that layout only */
	unsigned char ob[3][17 + 32];
	cf_tnode o[3];
	for (int i = 0; i < 3; i++)
		o[i].id = cf_make_id(17, 10 + i);
	o[0].size = other_commit_bytes(ob[0], NULL, 0);
	o[1].size = other_commit_bytes(ob[1], &o[0].id, 1);
	o[2].size = other_commit_bytes(ob[2], &o[1].id, 1);
	for (int i = 0; i < 3; i++)
		o[i].data = ob[i];
	CHECK_RC(t, cf_write_nodes(st, o, 3, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, &other_layout, anc_fn, &a), 0);
	CHECK(t,
	      a.calls == 3 && anc_has(&a, &o[0].id) && anc_has(&a, &o[1].id) && anc_has(&a, &o[2].id));
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 1);
	/* a parent count larger than the object holds is cut to what it holds: o3 claims three
	 * parents and holds one (o2), whose history is followed */
	unsigned char o3b[17 + 32];
	cf_tnode o3;
	o3.id = cf_make_id(17, 13);
	o3.size = other_commit_bytes(o3b, &o[2].id, 1);
	o3b[9] = 3;
	o3.data = o3b;
	CHECK_RC(t, cf_write_nodes(st, &o3, 1, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o3.id, 1, 10, &other_layout, anc_fn, &a), 0);
	CHECK(t, a.calls == 4 && anc_has(&a, &o3.id) && anc_has(&a, &o[0].id));
	/* a layout whose count overlaps the parents is refused */
	prolly_store_commit_layout bad = {other_magic, 3, 15, 17};
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, &bad, anc_fn, &a), PROLLY_EINVAL);
	cf_tnode_free(&n[4]);

	/* A long history where every commit is met twice: h[i] has parents h[i-1] and h[i-2]. Each
	 * object is reported once however often it is met, and never more than limit of them. */
	enum { LONG = 3000 };
	unsigned char(
	    *hb)[PROLLY__COMMIT_OFF_PARENTS + 2 * PROLLY_ID_SIZE + PROLLY__COMMIT_TAIL_MESSAGE] =
	    calloc(LONG, sizeof(*hb));
	cf_tnode *h = calloc(LONG, sizeof(*h));
	REQUIRE(t, hb && h);
	for (int i = 0; i < LONG; i++)
		h[i].id = cf_make_id(18, (uint64_t)i);
	for (int i = 0; i < LONG; i++) {
		prolly_id hp[2] = {h[i ? i - 1 : 0].id, h[i > 1 ? i - 2 : 0].id};
		h[i].size = commit_bytes(hb[i], hp, (uint32_t)(i < 2 ? i : 2));
		h[i].data = hb[i];
	}
	CHECK_RC(t, cf_write_nodes(st, h, LONG, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &h[LONG - 1].id, 1, 2 * LONG, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == LONG);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &h[LONG - 1].id, 1, LONG / 3, cl, anc_fn, &a), 0);
	CHECK(t, a.calls >= 1 && a.calls <= LONG / 3);
	free(hb);
	free(h);
}

/* ---- the reflog through the engine ---------------------------------------------------------- */

typedef struct rl {
	int n;
	char op[8][16];
	int has_old[8], has_new[8];
	prolly_id old_id[8], new_id[8];
} rl;

static int rl_fn(void *payload, const prolly_reflog_entry *e)
{
	rl *r = payload;
	if (r->n < 8) {
		snprintf(r->op[r->n], sizeof(r->op[0]), "%s", e->operation);
		r->has_old[r->n] = e->has_old;
		r->has_new[r->n] = e->has_new;
		r->old_id[r->n] = e->old_id;
		r->new_id[r->n] = e->new_id;
	}
	r->n++;
	return 0;
}

/* A handle on st through a pass-through store (owned by the handle) that leaves st open (the
 * suite closes it), at interface version 1: the engine must do with the oldest interface. */
static int open_fwd(prolly_db **db, prolly_store *st, unsigned reflog_days)
{
	tp_store *f = tp_new(sizeof(*f), st);
	prolly_options o;
	if (!f)
		return PROLLY_ENOMEM;
	f->keep_inner = 1;
	f->base.version = 1;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.clock_us = 1700000000000000;
	o.reflog_days = reflog_days;
	return prolly_db_new(db, &f->base, &o);
}

/* Commits, a branch, a delete and a restore, each with its reflog entry in the same write; gc
 * keeps the entries within the horizon and expires them after it. */
void cf_case_reflog(cf_case *t, prolly_store *st)
{
	prolly_db *db = NULL;
	prolly_id c1, c2, back;
	prolly_edit e;
	rl r;
	CHECK_RC(t, open_fwd(&db, st, 14), 0);
	REQUIRE(t, db);
	memset(&e, 0, sizeof(e));
	e.op = PROLLY_PUT;
	e.key.data = "k";
	e.key.size = 1;
	e.value.data = "v";
	e.value.size = 1;
	CHECK_RC(t, prolly_commit_edits(&c1, db, "main", &e, 1, "one"), 0);
	e.value.data = "w";
	CHECK_RC(t, prolly_commit_edits(&c2, db, "main", &e, 1, "two"), 0);
	CHECK_RC(t, prolly_branch_create(db, "dev", &c1), 0);
	CHECK_RC(t, prolly_branch_delete(db, "dev"), 0);
	/* (One fixed clock: entries of equal time come in entry id order, so look for each.) */
	memset(&r, 0, sizeof(r));
	CHECK_RC(t, prolly_reflog(db, "main", rl_fn, &r), 0);
	REQUIRE(t, r.n == 2);
	int k = r.has_old[0] ? 0 : 1;
	CHECK(t, strcmp(r.op[k], "commit") == 0 && r.has_old[k] && prolly_id_equal(&r.old_id[k], &c1) &&
	             prolly_id_equal(&r.new_id[k], &c2) && !r.has_old[1 - k] &&
	             prolly_id_equal(&r.new_id[1 - k], &c1));
	memset(&r, 0, sizeof(r));
	CHECK_RC(t, prolly_reflog(db, "dev", rl_fn, &r), 0);
	REQUIRE(t, r.n == 2);
	k = r.has_new[0] ? 1 : 0;
	CHECK(t, strcmp(r.op[k], "delete") == 0 && !r.has_new[k] && strcmp(r.op[1 - k], "branch") == 0);
	if (st->gc) {
		prolly_gc_result res = PROLLY_GC_RESULT_INIT;
		CHECK_RC(t, prolly_gc(db, &res), 0);
		CHECK(t, res.reflog_expired == 0);
	}
	CHECK_RC(t, prolly_branch_restore(&back, db, "dev"), 0);
	CHECK(t, prolly_id_equal(&back, &c1));
	prolly_close(db);
	db = NULL;
	if (st->gc) { /* a handle whose horizon is 0 days expires every entry */
		prolly_gc_result res = PROLLY_GC_RESULT_INIT;
		CHECK_RC(t, open_fwd(&db, st, 0), 0);
		REQUIRE(t, db);
		CHECK_RC(t, prolly_gc(db, &res), 0);
		CHECK(t, res.reflog_expired == 5);
		memset(&r, 0, sizeof(r));
		CHECK_RC(t, prolly_reflog(db, NULL, rl_fn, &r), 0);
		CHECK(t, r.n == 0);
		prolly_close(db);
	}
}
