/*
 * k6.c - K6 over a whole store (k6.h): every id the store lists is read, 256 at a time, and the
 * references of each such batch asked about together, with the store's own functions.
 */
#include "k6.h"

#include "model.h"

#include <stdlib.h>
#include <string.h>

typedef struct k6ref {
	prolly_id id;  /* what an object references */
	size_t owner;  /* the object: its index in the batch's ids */
	int of_commit; /* the object is a commit (a tree or parent), else a node (a child) */
} k6ref;

typedef struct k6ctx {
	prolly_db *db;
	int trees_only; /* retention may keep a commit without its tree or parents */
	prolly_id *ids;
	size_t n, cap;
	k6ref *refs; /* the references of the batch read, asked about together */
	size_t n_refs, refs_cap;
} k6ctx;

static int k6_collect(void *payload, const prolly_id *id, const void *data, size_t size)
{
	k6ctx *k = payload;
	(void)data;
	(void)size;
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->ids = realloc(k->ids, k->cap * sizeof(*k->ids));
		if (!k->ids)
			return PROLLY_ENOMEM;
	}
	k->ids[k->n++] = *id;
	return 0;
}

static int k6_has(prolly_db *db, const prolly_id *id)
{
	unsigned char h = 0;
	if (prolly_id_equal(id, &db->empty_tree))
		return 1;
	return db->vt.has_nodes(db->store, id, 1, &h) == 0 && h;
}

static int k6_ref(k6ctx *k, const prolly_id *id, size_t owner, int of_commit)
{
	if (prolly_id_equal(id, &k->db->empty_tree))
		return 0;
	if (k->n_refs == k->refs_cap) {
		k6ref *r = realloc(k->refs, (k->refs_cap ? 2 * k->refs_cap : 1024) * sizeof(*r));
		if (!r)
			return PROLLY_ENOMEM;
		k->refs = r;
		k->refs_cap = k->refs_cap ? 2 * k->refs_cap : 1024;
	}
	k->refs[k->n_refs++] = (k6ref){*id, owner, of_commit};
	return 0;
}

/* Decodes one object of the batch and notes what it references (k6_ask asks about them). */
static int k6_check_one(void *payload, size_t index, const void *data, size_t size)
{
	k6ctx *k = payload;
	const prolly_id *id = &k->ids[index];
	int rc = 0;
	if (size >= 4 && memcmp(data, PROLLY_COMMIT_MAGIC, 4) == 0 && !k->trees_only) {
		prolly_commit *c = NULL;
		if (prolly__commit_decode(&c, id, data, size))
			return PROLLY_ECORRUPT;
		rc = k6_ref(k, &c->tree, index, 1);
		for (size_t p = 0; p < c->n_parents && !rc; p++)
			rc = k6_ref(k, &c->parents[p], index, 1);
		prolly_commit_free(c);
		return rc;
	}
	if (size >= 4 && memcmp(data, PROLLY_NODE_MAGIC, 4) == 0) {
		pnode *nd = NULL;
		if (prolly__node_decode(&nd, id, data, size, 1))
			return PROLLY_ECORRUPT;
		for (uint32_t j = 0; nd->level && j < nd->n && !rc; j++)
			rc = k6_ref(k, prolly__node_child(nd, j), index, 0);
		prolly__node_unref(nd);
	}
	return rc;
}

/* Asks the store about the batch's references, a few thousand per call (one each made a sync
 * test's check of a PostgreSQL store a round trip per reference). */
static int k6_ask(k6ctx *k)
{
	enum { ASK = 4096 };
	prolly_id *ids = malloc(ASK * sizeof(*ids));
	unsigned char *has = malloc(ASK);
	int rc = ids && has ? 0 : PROLLY_ENOMEM;
	for (size_t at = 0; at < k->n_refs && !rc; at += ASK) {
		size_t m = PROLLY_MIN(ASK, k->n_refs - at);
		for (size_t i = 0; i < m; i++)
			ids[i] = k->refs[at + i].id;
		rc = k->db->vt.has_nodes(k->db->store, ids, m, has);
		for (size_t i = 0; i < m && !rc; i++) {
			const k6ref *r = &k->refs[at + i];
			if (has[i])
				continue;
			rc = r->of_commit
			         ? prolly_set_error(PROLLY_ECORRUPT, "commit %s lacks its tree or a parent",
			                            tm_hex(&k->ids[r->owner]))
			         : prolly_set_error(PROLLY_ECORRUPT, "node %s lacks a child",
			                            tm_hex(&k->ids[r->owner]));
		}
	}
	free(ids);
	free(has);
	k->n_refs = 0;
	return rc;
}

static int ref_target_ok(void *payload, const char *name, const prolly_id *value)
{
	prolly_db *db = payload;
	if (strncmp(name, "refs/", 5) != 0)
		return 0;
	return k6_has(db, value) ? 0
	                         : prolly_set_error(PROLLY_ECORRUPT, "ref %s names a missing %s", name,
	                                            tm_hex(value));
}

/* Every object of db has what it references (K6), and every ref names an object db has. */
int k6_holds_ex(prolly_db *db, int trees_only)
{
	k6ctx k = {db, trees_only, NULL, 0, 0, NULL, 0, 0};
	prolly_id lo, hi;
	memset(lo.bytes, 0, sizeof(lo.bytes));
	memset(hi.bytes, 0xff, sizeof(hi.bytes));
	int rc = db->vt.find_ids(db->store, &lo, &hi, (size_t)1 << 30, k6_collect, &k);
	for (size_t at = 0; at < k.n && !rc; at += 256) {
		size_t m = PROLLY_MIN(256, k.n - at);
		k6ctx sub = {db, trees_only, k.ids + at, m, 0, k.refs, 0, k.refs_cap};
		rc = db->vt.get_nodes(db->store, k.ids + at, m, k6_check_one, &sub);
		k.refs = sub.refs; /* grown, kept for the next batch */
		k.refs_cap = sub.refs_cap;
		if (!rc)
			rc = k6_ask(&sub);
	}
	if (!rc)
		rc = db->vt.list_refs(db->store, "", ref_target_ok, db);
	free(k.refs);
	free(k.ids);
	return rc;
}

int k6_holds(prolly_db *db)
{
	return k6_holds_ex(db, 0);
}
