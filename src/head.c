/*
 * head.c - a branch's head commit, decoded, with its tree's root, in one store round trip.
 *
 * Reading a branch to query or edit it takes three dependent reads: the ref (branch -> commit
 * id), the commit object (-> tree id), the tree's root node. A store that implements
 * get_ref_objects (PostgreSQL: one statement joining the refs and nodes tables) returns all three
 * at once: the engine asks it to follow the tree id inside the commit, which sits at a fixed
 * offset of the commit format (HEAD_TREE_OFFSET, see commit.c). Everything it returns is checked
 * as if it had been read on its own: the commit must hash to the ref's value and decode (CM1-CM7),
 * the root must hash to the commit's tree id and decode (N1-N7); the root then goes into the
 * cache, so the read or edit that follows starts one level down. Stores without get_ref_objects
 * (those of interface version 1 among them: see store_api.c) take the reads in turn.
 *
 * A store that implements get_ref_objects_known is also told the commit this handle remembers
 * for the ref (head_memo.c) when that commit's root is in the cache; when the ref has not moved,
 * it returns the ref alone and the commit is decoded from the memo, which holds only commits
 * checked as above. (With the root evicted nothing is told, so the root still comes in the same
 * round trip.) When reads of the ref seldom find it moved (H6 in head_memo.c), the ref is read
 * alone first (get_ref), a cheaper statement on PostgreSQL than the one that joins the nodes
 * table; only if it moved does the read above follow, in a second round trip.
 *
 * prolly__txn_read_head makes that read the first read of a txn (every txn that moves an existing
 * branch or ref starts with it: branch.c, branch_merge.c, refs.c) and adopts the gc epoch it
 * returned. Every commit a head read returns is remembered with that epoch (H4 in head_memo.c).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#define HEAD_TREE_OFFSET PROLLY__COMMIT_OFF_TREE /* where a commit's tree id begins */

typedef struct head_ctx {
	prolly_buf obj[2]; /* copies of the commit (0) and the root node (1) */
	int have[2];
	int rc;
} head_ctx;

static int on_object(void *payload, size_t index, const void *data, size_t size)
{
	head_ctx *h = payload;
	if (index > 1 || h->have[index])
		return 0;
	if ((h->rc = prolly__buf_set(&h->obj[index], data, size)))
		return h->rc;
	h->have[index] = 1;
	return 0;
}

int prolly__head_read(prolly_db *db, const char *ref, prolly_id *head, uint64_t *epoch,
                      prolly_commit **out)
{
	prolly_commit *c = NULL, *memo = NULL;
	head_ctx h;
	int rc = 0, ref_first = 0, fetch = 1;

	*out = NULL;
	*epoch = 0;
	if (!db->vt.get_ref_objects_known && !db->vt.get_ref_objects)
		return db->vt.get_ref(db->store, ref, head, epoch);
	memset(&h, 0, sizeof(h));
	if (db->vt.get_ref_objects_known) {
		memo = prolly__head_memo_get(&db->heads, ref, &ref_first);
		if (memo && !prolly_id_equal(&memo->tree, &db->empty_tree)) {
			/* The memo spares the commit's bytes, not the root's round trip: with the root
			 * evicted, ask for both as if nothing were remembered. */
			pnode *root = prolly__cache_get(db->cache, &memo->tree);
			if (root) {
				prolly__node_unref(root);
			} else {
				prolly_commit_free(memo);
				memo = NULL;
			}
		}
		if (memo && ref_first) { /* H6: the ref alone first; if it moved, all of it again */
			rc = db->vt.get_ref(db->store, ref, head, epoch);
			fetch = rc == 0 && !prolly_id_equal(head, &memo->id);
		}
		if (fetch) {
			*epoch = 0;
			rc = db->vt.get_ref_objects_known(db->store, ref, HEAD_TREE_OFFSET,
			                                  memo ? &memo->id : NULL, head, epoch, on_object, &h);
		}
	} else {
		rc = db->vt.get_ref_objects(db->store, ref, HEAD_TREE_OFFSET, head, epoch, on_object, &h);
	}
	if (h.rc)
		rc = h.rc;
	if (rc == 0 && memo && !h.have[0] && prolly_id_equal(head, &memo->id)) {
		prolly_stats d = PROLLY_STATS_INIT;
		d.store_reads = 1;
		prolly__stats_add(db, &d);
		*out = memo; /* the ref has not moved */
		memo = NULL;
		prolly__head_memo_unmoved(&db->heads, ref, head, *epoch); /* H5, H6 */
		prolly__seen_put(&db->heads, head, *epoch); /* H4: a ref's commit is kept by gc */
		goto cleanup;
	}
	if (rc || !h.have[0]) /* an absent commit is left to the caller's usual read */
		goto cleanup;

	prolly_stats d = PROLLY_STATS_INIT;
	prolly_id got;
	d.store_reads = 1;
	d.store_read_items = 2;
	d.cache_misses = 2;
	prolly__hash(&got, h.obj[0].ptr, h.obj[0].size);
	if (!prolly_id_equal(&got, head)) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, head);
		rc = prolly_set_error(PROLLY_ECORRUPT, "commit %s does not hash to its id", hex);
		goto cleanup;
	}
	if ((rc = prolly__commit_decode(&c, head, h.obj[0].ptr, h.obj[0].size)))
		goto cleanup;
	if (h.have[1] && !prolly_id_equal(&c->tree, &db->empty_tree)) {
		pnode *nd;
		if ((rc = prolly__node_decode(&nd, &c->tree, h.obj[1].ptr, h.obj[1].size, 1)))
			goto cleanup;
		d.nodes_read = 1;
		d.bytes_read = h.obj[1].size;
		prolly__cache_put(db->cache, nd, &d.cache_evictions);
		prolly__node_unref(nd);
	}
	prolly__stats_add(db, &d);
	if (db->vt.get_ref_objects_known) { /* H1: checked and decoded above */
		prolly__head_memo_put(&db->heads, ref, head, h.obj[0].ptr, h.obj[0].size, *epoch, 0);
		if (memo) /* H6: told the memo's commit, found another */
			prolly__head_memo_moved(&db->heads, ref);
	}
	prolly__seen_put(&db->heads, head, *epoch);
	*out = c;
	c = NULL;
cleanup:
	prolly_commit_free(memo);
	prolly_commit_free(c);
	prolly_buf_dispose(&h.obj[0]);
	prolly_buf_dispose(&h.obj[1]);
	return rc;
}

int prolly__head_read_raise(prolly_db *db, const char *ref, prolly_id *head, prolly_commit **out)
{
	uint64_t epoch = 0;
	int rc = prolly__head_read(db, ref, head, &epoch, out);
	if ((rc == 0 || rc == PROLLY_ENOTFOUND) && epoch)
		prolly__raise_epoch(db, epoch);
	return rc;
}

int prolly_branch_commit(prolly_commit **out, prolly_db *db, const char *branch)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_id head;
	int rc;

	if (out)
		*out = NULL;
	if (!out || !db || !branch)
		return prolly_set_error(PROLLY_EINVAL, "prolly_branch_commit: NULL argument");
	if ((rc = prolly_branch_name_valid(branch)))
		return rc;
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	rc = prolly__head_read_raise(db, ref, &head, out);
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", branch);
	if (rc == 0 && !*out) /* a store without get_ref_objects, or the commit is absent */
		rc = prolly_commit_read(out, db, &head);
	return rc;
}

/*
 * Reads a ref (a branch head) as the first read of txn and adopts the gc epoch the store returned
 * with it: the head is retained by every gc up to that epoch (a gc excludes writers, so a head read
 * during one is the head its mark saw), and a later gc makes the txn's commit fail. This spares the
 * spurious conflict a txn would get from a stale handle epoch after another process's gc. *exists
 * is set to 0 when the ref is absent (not an error here).
 */
int prolly__txn_read_head(prolly_txn *txn, const char *ref, prolly_id *head, int *exists,
                          prolly_commit **hc)
{
	prolly_db *db = txn->db;
	uint64_t epoch = 0;
	/* With hc: the commit and its tree's root too, in the same call where the store can. */
	int rc = hc ? prolly__head_read(db, ref, head, &epoch, hc)
	            : db->vt.get_ref(db->store, ref, head, &epoch);
	if (rc && rc != PROLLY_ENOTFOUND)
		return rc;
	*exists = rc == 0;
	if (epoch) {
		prolly__raise_epoch(db, epoch);
		if (epoch > txn->epoch)
			txn->epoch = epoch;
	}
	/* H4: a branch head, read at epoch (also where prolly__head_read fell back to get_ref), so
	 * that a commit made on it in this txn need not ask the store about it (commit.c). */
	if (*exists && epoch && strncmp(ref, "refs/heads/", 11) == 0)
		prolly__seen_put(&db->heads, head, epoch);
	return 0;
}
