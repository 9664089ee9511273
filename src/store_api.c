/*
 * store_api.c - the engine's side of the store interface (include/prolly/store.h): adopting a
 * store's table of functions, the one check of every write's ref updates, and the helpers the
 * header offers stores.
 *
 * Adopting: prolly_db_new copies the store's table into db->vt, a prolly_store of this
 * library's version, with the members the store's version lacks (or calls differently) left
 * NULL. Everything else calls db->vt.X(db->store, ...) and asks only whether a member is NULL:
 * the store's version is looked at here and nowhere else.
 *
 * Writing: prolly__store_write checks, sorts and de-duplicates the ref updates before the store
 * sees them (S1 in store.h), so that no store does it again.
 */
#include "internal.h"

#include <stddef.h>
#include <stdlib.h>

/* The commit layout get_ancestors follows (format.h, commit.c). */
static const unsigned char commit_magic[PROLLY__MAGIC_SIZE] = {'P', 'R', 'L', 'C'};
const prolly_store_commit_layout prolly__commit_layout = {
    commit_magic, PROLLY__MAGIC_SIZE, PROLLY__COMMIT_OFF_NPARENTS, PROLLY__COMMIT_OFF_PARENTS};
_Static_assert(sizeof(PROLLY_COMMIT_MAGIC) - 1 == PROLLY__MAGIC_SIZE, "a 4-byte magic");

/* Bytes of the table each version has: up to the first member it lacks. */
static size_t table_size(unsigned version)
{
	switch (version) {
	case 1: return offsetof(prolly_store, get_ref_objects);
	case 2: return offsetof(prolly_store, flags);
	case 3:
	case 4: return offsetof(prolly_store, has_nodes); /* 3 and 4 have the same members */
	case 5: return offsetof(prolly_store, get_ref_objects_known);
	case 6: return offsetof(prolly_store, get_refs);
	case 7: return offsetof(prolly_store, node_size);
	default: return sizeof(prolly_store);
	}
}

int prolly__store_adopt(prolly_store *vt, const prolly_store *store)
{
	if (!store || store->version < 1 || store->version > PROLLY_STORE_VERSION)
		return prolly_set_error(PROLLY_EVERSION,
		                        "store interface version %u; this library speaks 1 to %d",
		                        store ? store->version : 0, PROLLY_STORE_VERSION);
	memset(vt, 0, sizeof(*vt));
	memcpy(vt, store, table_size(store->version));
	if (store->version < 4)
		vt->get_ancestors = NULL; /* version 3's took no commit layout */
	if (!vt->get_nodes || !vt->write || !vt->get_ref || !vt->list_refs || !vt->close)
		return prolly_set_error(
		    PROLLY_EINVAL, "store '%s' lacks one of get_nodes, write, get_ref, list_refs, close",
		    vt->kind ? vt->kind : "?");
	if (!vt->kind)
		vt->kind = "store";
	/* A flag this library does not know may say something it must not ignore. */
	if (vt->flags & ~(PROLLY_STORE_REMOTE | PROLLY_STORE_MAPPED))
		return prolly_set_error(PROLLY_EINVAL,
		                        "store '%s' sets flags 0x%x this library does not know (it knows "
		                        "0x%x)",
		                        vt->kind, vt->flags & ~(PROLLY_STORE_REMOTE | PROLLY_STORE_MAPPED),
		                        PROLLY_STORE_REMOTE | PROLLY_STORE_MAPPED);
	if (!prolly_node_size_valid(vt->node_size))
		return prolly_set_error(PROLLY_EINVAL,
		                        "store '%s' has nodes of %u bytes; this library builds trees of "
		                        "nodes of %u to %u bytes, a power of two",
		                        vt->kind, vt->node_size, PROLLY_NODE_SIZE_MIN,
		                        PROLLY_NODE_SIZE_MAX);
	return 0;
}

int prolly_node_size_valid(unsigned n)
{
	return n == 0 || (n >= PROLLY_NODE_SIZE_MIN && n <= PROLLY_NODE_SIZE_MAX && (n & (n - 1)) == 0);
}

static int cmp_update_ptr(const void *a, const void *b)
{
	const prolly_ref_update *x = *(const prolly_ref_update *const *)a;
	const prolly_ref_update *y = *(const prolly_ref_update *const *)b;
	return strcmp(x->name, y->name);
}

int prolly__ref_update_check(const prolly_ref_update *u)
{
	int rc = prolly_store_ref_name_check(u->name);
	if (rc)
		return rc;
	if (u->expect != PROLLY_REF_EXPECT_ANY && u->expect != PROLLY_REF_EXPECT_ABSENT &&
	    u->expect != PROLLY_REF_EXPECT_VALUE)
		return prolly_set_error(PROLLY_EINVAL, "ref '%s' has an unknown expectation %d", u->name,
		                        (int)u->expect);
	return 0;
}

/* S1 and S2 of store.h: the shape of the write, the names and expectations of its updates. */
static int check_write(const prolly_store_write *w)
{
	int rc;
	if ((w->n_nodes && !w->nodes) || (w->n_refs && !w->refs) || (w->n_requires && !w->requires))
		return prolly_set_error(PROLLY_EINVAL, "store write with a NULL nodes, refs or requires");
	for (size_t i = 0; i < w->n_nodes; i++)
		if (w->nodes[i].size && !w->nodes[i].data)
			return prolly_set_error(PROLLY_EINVAL,
			                        "store write: node %zu has %zu bytes but no data", i,
			                        w->nodes[i].size);
	for (size_t i = 0; i < w->n_refs; i++)
		if ((rc = prolly__ref_update_check(&w->refs[i])))
			return rc;
	return 0;
}

int prolly__store_write(prolly_db *db, prolly_store_write *w)
{
	return prolly__store_write_nodes(db, w, NULL);
}

int prolly__store_write_nodes(prolly_db *db, prolly_store_write *w, prolly__shared *const *owners)
{
	prolly_store_write sw = *w;
	const prolly_ref_update **order = NULL;
	prolly_ref_update *sorted = NULL;
	int rc;

	if ((rc = check_write(w)))
		return rc;
	for (size_t i = 0; i < w->n_refs; i++) {
		w->refs[i].conflict = 0;
		w->refs[i].current_exists = 0;
	}
	int in_order = 1;
	for (size_t i = 1; i < w->n_refs && in_order; i++)
		in_order = strcmp(w->refs[i - 1].name, w->refs[i].name) < 0;
	if (!in_order) { /* the store gets a sorted copy; its outcome goes back to the caller's order */
		order = malloc(w->n_refs * sizeof(*order));
		sorted = malloc(w->n_refs * sizeof(*sorted));
		if (!order || !sorted) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory sorting %zu ref updates",
			                      w->n_refs);
			goto cleanup;
		}
		for (size_t i = 0; i < w->n_refs; i++)
			order[i] = &w->refs[i];
		qsort(order, w->n_refs, sizeof(*order), cmp_update_ptr);
		for (size_t i = 0; i < w->n_refs; i++) {
			if (i && strcmp(order[i - 1]->name, order[i]->name) == 0) {
				rc = prolly_set_error(PROLLY_EINVAL, "ref '%s' is updated twice in one write",
				                      order[i]->name);
				goto cleanup;
			}
			sorted[i] = *order[i];
		}
		sw.refs = sorted;
	}
	prolly__handover_write(sw.nodes, sw.n_nodes, owners);
	rc = db->vt.write(db->store, &sw);
	prolly__handover_write(NULL, 0, NULL);
	w->current_epoch = sw.current_epoch;
	if (sorted)
		for (size_t i = 0; i < w->n_refs; i++) {
			prolly_ref_update *u = (prolly_ref_update *)order[i];
			u->conflict = sorted[i].conflict;
			u->current_exists = sorted[i].current_exists;
			u->current = sorted[i].current;
		}

cleanup:
	free(order);
	free(sorted);
	return rc;
}

int prolly_store_init(prolly_store *st, unsigned version)
{
	if (!st)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_init: st is NULL");
	if (version < 1 || version > PROLLY_STORE_VERSION)
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_store_init: store interface version %u; this library "
		                        "speaks 1 to %d",
		                        version, PROLLY_STORE_VERSION);
	memset(st, 0, sizeof(*st));
	st->version = version;
	return 0;
}

int prolly_store_ref_name_check(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > PROLLY_MAX_REF_NAME)
		return prolly_set_error(PROLLY_EINVAL, "a ref name has 1 to %d bytes (got %zu)",
		                        PROLLY_MAX_REF_NAME, len);
	return 0;
}

int prolly_store_check_node(const prolly_id *id, const void *data, size_t size)
{
	if (!id || (size && !data))
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_check_node: NULL id or data");
	return prolly__check_hash(id, data, size);
}
