/*
 * store_conformance_nodes.c - the store conformance suite's cases on nodes: ids absent, answered
 * by index, put again, counted; a large node, 10,000 in one write; stat, round trips, has_nodes
 * and find_ids.
 */
#include "store_conformance_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cf_case_missing(cf_case *t, prolly_store *st)
{
	prolly_id ids[3] = {cf_make_id(1, 1), cf_make_id(1, 2), cf_make_id(1, 3)};
	int calls = 0;
	CHECK_RC(t, st->get_nodes(st, ids, 3, cf_count_fn, &calls), 0);
	CHECK(t, calls == 0);
	CHECK_RC(t, st->get_nodes(st, ids, 0, cf_count_fn, &calls), 0);
	CHECK(t, calls == 0);
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/none", &v, NULL), PROLLY_ENOTFOUND);
}

void cf_case_put_get(cf_case *t, prolly_store *st)
{
	cf_tnode n[4] = {cf_tnode_make(2, 0, 1), cf_tnode_make(2, 1, 100), cf_tnode_make(2, 2, 4096),
	                 cf_tnode_make(2, 3, 12)};
	REQUIRE(t, n[0].data && n[1].data && n[2].data && n[3].data);
	CHECK_RC(t, cf_write_nodes(st, n, 3, 1), 0);
	for (int i = 0; i < 3; i++)
		CHECK(t, cf_has_node(st, &n[i]));
	CHECK(t, cf_lacks_node(st, &n[3].id));
	for (int i = 0; i < 4; i++)
		cf_tnode_free(&n[i]);
}

typedef struct by_index {
	int calls[8];
	size_t size[8];
	int same[8];
	const cf_tnode *want[8];
	int stop_after; /* 0: never */
	int total;
} by_index;

static int by_index_fn(void *payload, size_t index, const void *data, size_t size)
{
	by_index *b = payload;
	b->total++;
	if (index < 8) {
		b->calls[index]++;
		b->size[index] = size;
		b->same[index] = b->want[index] && b->want[index]->size == size &&
		                 memcmp(b->want[index]->data, data, size) == 0;
	}
	if (b->stop_after && b->total >= b->stop_after)
		return 77;
	return 0;
}

void cf_case_duplicates(cf_case *t, prolly_store *st)
{
	cf_tnode a = cf_tnode_make(3, 0, 300), b = cf_tnode_make(3, 1, 50);
	prolly_id x = cf_make_id(3, 2), y = cf_make_id(3, 3);
	REQUIRE(t, a.data && b.data);
	cf_tnode both[2] = {a, b};
	CHECK_RC(t, cf_write_nodes(st, both, 2, 0), 0);
	/* A, X, B, A, Y, B, A */
	prolly_id req[7] = {a.id, x, b.id, a.id, y, b.id, a.id};
	const cf_tnode *want[7] = {&a, NULL, &b, &a, NULL, &b, &a};
	by_index r;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 7; i++)
		r.want[i] = want[i];
	CHECK_RC(t, st->get_nodes(st, req, 7, by_index_fn, &r), 0);
	for (int i = 0; i < 7; i++) {
		if (want[i]) {
			CHECK(t, r.calls[i] == 1);
			CHECK(t, r.same[i]);
		} else {
			CHECK(t, r.calls[i] == 0);
		}
	}
	CHECK(t, r.total == 5);

	/* A non-zero callback result stops the call and is returned. */
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 7; i++)
		r.want[i] = want[i];
	r.stop_after = 2;
	CHECK_RC(t, st->get_nodes(st, req, 7, by_index_fn, &r), 77);
	CHECK(t, r.total == 2);
	cf_tnode_free(&a);
	cf_tnode_free(&b);
}

void cf_case_reput(cf_case *t, prolly_store *st)
{
	cf_tnode a = cf_tnode_make(4, 0, 500), b = cf_tnode_make(4, 1, 40);
	REQUIRE(t, a.data && b.data);
	CHECK_RC(t, cf_write_nodes(st, &a, 1, 1), 0);
	CHECK_RC(t, cf_write_nodes(st, &a, 1, 1), 0);
	/* The same id twice in one write, and again with other bytes: the first bytes stay. */
	cf_tnode twice[3] = {b, b, a};
	CHECK_RC(t, cf_write_nodes(st, twice, 3, 0), 0);
	cf_tnode other = cf_tnode_make(4, 99, 500);
	REQUIRE(t, other.data);
	other.id = a.id;
	CHECK_RC(t, cf_write_nodes(st, &other, 1, 0), 0);
	CHECK(t, cf_has_node(st, &a));
	CHECK(t, cf_has_node(st, &b));
	if (st->stat) {
		uint64_t nodes = 0, bytes = 0;
		CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
		CHECK(t, nodes == 2);
		CHECK(t, bytes == 540);
	}
	cf_tnode_free(&a);
	cf_tnode_free(&b);
	cf_tnode_free(&other);
}

void cf_case_stat(cf_case *t, prolly_store *st)
{
	if (!st->stat) {
		t->skip = "the store has no stat";
		return;
	}
	uint64_t nodes = 99, bytes = 99;
	CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
	CHECK(t, nodes == 0 && bytes == 0);
	cf_tnode n[3] = {cf_tnode_make(13, 0, 10), cf_tnode_make(13, 1, 20), cf_tnode_make(13, 2, 30)};
	REQUIRE(t, n[0].data && n[1].data && n[2].data);
	CHECK_RC(t, cf_write_nodes(st, n, 3, 0), 0);
	CHECK_RC(t, cf_write_nodes(st, n, 2, 0), 0);
	prolly_id v = cf_make_id(13, 9);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/s", &v), 0);
	CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
	CHECK(t, nodes == 3 && bytes == 60);
	for (int i = 0; i < 3; i++)
		cf_tnode_free(&n[i]);
}

void cf_case_round_trips(cf_case *t, prolly_store *st)
{
	prolly_id id = cf_make_id(14, 1), v;
	int calls = 0;
	cf_listed l;
	memset(&l, 0, sizeof(l));
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats_reset();
	CHECK_RC(t, cf_set_ref(st, "refs/heads/r", &id), 0);
	CHECK_RC(t, st->get_nodes(st, &id, 1, cf_count_fn, &calls), 0);
	CHECK_RC(t, st->get_ref(st, "refs/heads/r", &v, NULL), 0);
	CHECK_RC(t, st->list_refs(st, "", cf_listed_fn, &l), 0);
	prolly_thread_stats(&s);
	CHECK(t, s.store_round_trips >= 4);
}

void cf_case_large(cf_case *t, prolly_store *st)
{
	size_t sizes[3] = {65536, 65537, (1u << 20) + 3};
	cf_tnode n[3];
	for (int i = 0; i < 3; i++)
		n[i] = cf_tnode_make(17, (uint64_t)i, sizes[i]);
	REQUIRE(t, n[0].data && n[1].data && n[2].data);
	CHECK_RC(t, cf_write_nodes(st, n, 3, 1), 0);
	for (int i = 0; i < 3; i++)
		CHECK(t, cf_has_node(st, &n[i]));
	for (int i = 0; i < 3; i++)
		cf_tnode_free(&n[i]);
}

#define MANY 10000

typedef struct many_ctx {
	int calls;
	int wrong;
	unsigned char *scratch;
} many_ctx;

static size_t many_size(size_t i)
{
	return 50 + (i * 37) % 251;
}

static int many_fn(void *payload, size_t index, const void *data, size_t size)
{
	many_ctx *m = payload;
	m->calls++;
	if (size != many_size(index)) {
		m->wrong++;
		return 0;
	}
	cf_fill(m->scratch, size, 18 * 7919 + index);
	if (memcmp(m->scratch, data, size) != 0)
		m->wrong++;
	return 0;
}

void cf_case_many(cf_case *t, prolly_store *st)
{
	cf_tnode *n = calloc(MANY, sizeof(*n));
	prolly_id *ids = calloc(MANY + 1, sizeof(*ids));
	many_ctx m = {0, 0, malloc(512)};
	uint64_t total = 0;
	if (!n || !ids || !m.scratch) {
		t->bad = 1;
		goto cleanup;
	}
	for (size_t i = 0; i < MANY; i++) {
		n[i] = cf_tnode_make(18, i, many_size(i));
		if (!n[i].data) {
			t->bad = 1;
			goto cleanup;
		}
		ids[i] = n[i].id;
		total += n[i].size;
	}
	ids[MANY] = cf_make_id(18, MANY + 5); /* absent */
	CHECK_RC(t, cf_write_nodes(st, n, MANY, 1), 0);
	CHECK_RC(t, st->get_nodes(st, ids, MANY + 1, many_fn, &m), 0);
	CHECK(t, m.calls == MANY);
	CHECK(t, m.wrong == 0);
	if (st->stat) {
		uint64_t nodes = 0, bytes = 0;
		CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
		CHECK(t, nodes == MANY && bytes == total);
	}

cleanup:
	if (n)
		for (size_t i = 0; i < MANY; i++)
			cf_tnode_free(&n[i]);
	free(n);
	free(ids);
	free(m.scratch);
}

/* find_ids (interface version 3, optional): the objects whose id lies in [lo, hi], in order. */
typedef struct fid {
	int calls, bad_head;
	prolly_id id[16];
	const cf_tnode *nodes;
	size_t n_nodes;
} fid;

static int fid_fn(void *payload, const prolly_id *id, const void *data, size_t size)
{
	fid *f = payload;
	if (f->calls < 16)
		f->id[f->calls] = *id;
	f->calls++;
	for (size_t i = 0; i < f->n_nodes; i++) {
		const cf_tnode *n = &f->nodes[i];
		size_t head = n->size < PROLLY_STORE_ID_HEAD ? n->size : PROLLY_STORE_ID_HEAD;
		if (prolly_id_equal(&n->id, id) &&
		    (size < head || size > n->size || memcmp(data, n->data, head) != 0))
			f->bad_head = 1;
	}
	return 0;
}

/* has_nodes (version 5) answers what get_nodes would find, by position, duplicates included. */
void cf_case_has_nodes(cf_case *t, prolly_store *st)
{
	if (st->version < 5 || !st->has_nodes) {
		t->skip = "the store has no has_nodes";
		return;
	}
	cf_tnode a = cf_tnode_make(29, 0, 200), b = cf_tnode_make(29, 1, 5000);
	REQUIRE(t, a.data && b.data);
	cf_tnode both[2] = {a, b};
	CHECK_RC(t, cf_write_nodes(st, both, 2, 1), 0);
	prolly_id ids[5] = {cf_make_id(29, 7), a.id, b.id, a.id, cf_make_id(29, 8)};
	unsigned char out[5];
	memset(out, 9, sizeof(out));
	CHECK_RC(t, st->has_nodes(st, ids, 5, out), 0);
	CHECK(t, out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 1 && out[4] == 0);
	CHECK_RC(t, st->has_nodes(st, ids, 0, out), 0);
	cf_tnode_free(&a);
	cf_tnode_free(&b);
}

void cf_case_find_ids(cf_case *t, prolly_store *st)
{
	if (st->version < 3 || !st->find_ids) {
		t->skip = "the store has no find_ids";
		return;
	}
	/* Ids 0xab 0xcd ..., around the prefix "abc": below, inside (4), exactly at both ends, above. */
	static const unsigned char first[7][3] = {
	    {0xab, 0xbf, 0xff}, {0xab, 0xc0, 0x00}, {0xab, 0xc3, 0x10}, {0xab, 0xc3, 0x11},
	    {0xab, 0xcf, 0xff}, {0xab, 0xd0, 0x00}, {0x00, 0x00, 0x00}};
	cf_tnode n[7];
	for (int i = 0; i < 7; i++) {
		n[i] = cf_tnode_make(23, (uint64_t)i, i == 6 ? 3 : 40 + (size_t)i);
		REQUIRE(t, n[i].data);
		memcpy(n[i].id.bytes, first[i], 3);
	}
	memset(n[1].id.bytes + 3, 0, PROLLY_ID_SIZE - 3);
	memset(n[4].id.bytes + 3, 0xff, PROLLY_ID_SIZE - 3);
	CHECK_RC(t, cf_write_nodes(st, n, 7, 1), 0);
	prolly_id lo, hi;
	memset(lo.bytes, 0, sizeof lo.bytes);
	memset(hi.bytes, 0xff, sizeof hi.bytes);
	lo.bytes[0] = hi.bytes[0] = 0xab;
	lo.bytes[1] = 0xc0;
	hi.bytes[1] = 0xcf;
	fid f;
	memset(&f, 0, sizeof f);
	f.nodes = n;
	f.n_nodes = 7;
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 4 && !f.bad_head);
	CHECK(t, f.calls < 4 ||
	             (prolly_id_equal(&f.id[0], &n[1].id) && prolly_id_equal(&f.id[1], &n[2].id) &&
	              prolly_id_equal(&f.id[2], &n[3].id) && prolly_id_equal(&f.id[3], &n[4].id)));
	/* the limit keeps the first ones */
	memset(&f, 0, sizeof f);
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 2, fid_fn, &f), 0);
	CHECK(t, f.calls == 2 && prolly_id_equal(&f.id[0], &n[1].id) &&
	             prolly_id_equal(&f.id[1], &n[2].id));
	/* a range with nothing in it; a short object is reported whole */
	lo.bytes[1] = 0xe0;
	hi.bytes[1] = 0xef;
	memset(&f, 0, sizeof f);
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 0);
	memset(lo.bytes, 0, sizeof lo.bytes);
	hi = lo;
	hi.bytes[0] = 0x0f;
	memset(&f, 0, sizeof f);
	f.nodes = n;
	f.n_nodes = 7;
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 1 && !f.bad_head);
	for (int i = 0; i < 7; i++)
		cf_tnode_free(&n[i]);
}
