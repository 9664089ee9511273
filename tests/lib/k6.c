/*
 * k6.c - K6 over a whole store (k6.h): every id the store lists is read and its references asked
 * about one by one, with the store's own functions.
 */
#include "k6.h"

#include "model.h"

#include <stdlib.h>
#include <string.h>

typedef struct k6ctx {
	prolly_db *db;
	int trees_only; /* retention may keep a commit without its tree or parents */
	prolly_id *ids;
	size_t n, cap;
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

static int k6_check_one(void *payload, size_t index, const void *data, size_t size)
{
	k6ctx *k = payload;
	(void)index;
	const prolly_id *id = &k->ids[index];
	if (size >= 4 && memcmp(data, PROLLY_COMMIT_MAGIC, 4) == 0 && !k->trees_only) {
		prolly_commit *c = NULL;
		if (prolly__commit_decode(&c, id, data, size))
			return PROLLY_ECORRUPT;
		int ok = k6_has(k->db, &c->tree);
		for (size_t p = 0; p < c->n_parents; p++)
			ok = ok && k6_has(k->db, &c->parents[p]);
		prolly_commit_free(c);
		return ok ? 0
		          : prolly_set_error(PROLLY_ECORRUPT, "commit %s lacks its tree or a parent",
		                             tm_hex(id));
	}
	if (size >= 4 && memcmp(data, PROLLY_NODE_MAGIC, 4) == 0) {
		pnode *nd = NULL;
		if (prolly__node_decode(&nd, id, data, size, 1))
			return PROLLY_ECORRUPT;
		int ok = 1;
		for (uint32_t j = 0; nd->level && j < nd->n && ok; j++)
			ok = k6_has(k->db, prolly__node_child(nd, j));
		prolly__node_unref(nd);
		return ok ? 0 : prolly_set_error(PROLLY_ECORRUPT, "node %s lacks a child", tm_hex(id));
	}
	return 0;
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
	k6ctx k = {db, trees_only, NULL, 0, 0};
	prolly_id lo, hi;
	memset(lo.bytes, 0, sizeof(lo.bytes));
	memset(hi.bytes, 0xff, sizeof(hi.bytes));
	int rc = db->vt.find_ids(db->store, &lo, &hi, (size_t)1 << 30, k6_collect, &k);
	for (size_t at = 0; at < k.n && !rc; at += 256) {
		size_t m = PROLLY_MIN(256, k.n - at);
		k6ctx sub = {db, trees_only, k.ids + at, m, 0};
		rc = db->vt.get_nodes(db->store, k.ids + at, m, k6_check_one, &sub);
	}
	if (!rc)
		rc = db->vt.list_refs(db->store, "", ref_target_ok, db);
	free(k.ids);
	return rc;
}

int k6_holds(prolly_db *db)
{
	return k6_holds_ex(db, 0);
}
