/*
 * refs.c - tags, reset, and the ref creation and deletion they share with branch restore.
 *
 * Every function here works like the branch functions of branch.c: one txn whose first store read
 * is the ref, adopting the gc epoch that read returns (so a gc in between makes the commit fail
 * instead of publishing a ref to something it removed), and one compare-and-swap write that also
 * records the reflog entry (reflog.c). A write that lost only to a gc is retried. A creation reads
 * no ref (its write expects the ref absent), and no move reads a commit the handle read as a
 * branch head at the txn's epoch (H4 in head_memo.c): a tag of a branch's head just read costs
 * the write alone.
 */
#include "internal.h"

#include <stdio.h>

#define TAGS_PREFIX "refs/tags/"
#define MAX_RETRIES 8

int prolly__commit_tree_stored(prolly_db *db, const prolly_commit *c, const char *ref)
{
	unsigned char held = 0;
	char hex[PROLLY_ID_HEX_SIZE];
	int rc;
	if (prolly_id_equal(&c->tree, &db->empty_tree))
		return 0;
	if ((rc = prolly__has_nodes(db, &c->tree, 1, &held)) || held)
		return rc;
	prolly_id_to_hex(hex, &c->id);
	return prolly_set_error(PROLLY_EPRUNED,
	                        "cannot point '%s' at commit %s: gc removed its tree (retention kept "
	                        "the commit for the history walks only)",
	                        ref, hex);
}

static int commit_exists(prolly_db *db, const prolly_id *id, const char *ref)
{
	prolly_commit *c = NULL;
	int rc = prolly__commit_read_as(&c, db, id, ref);
	if (rc == PROLLY_ENOTFOUND) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		rc = prolly_set_error(rc, "cannot point '%s' at commit %s: not found", ref, hex);
	} else if (!rc) {
		rc = prolly__commit_tree_stored(db, c, ref);
	}
	prolly_commit_free(c);
	return rc;
}

/* Queues the update, names the operation, commits. 1: lost to a gc only (retry). */
static int publish(prolly_txn *txn, prolly_ref_update *u, const char *op, int *gc_only)
{
	prolly_ref_update conf;
	int rc;
	*gc_only = 0;
	if ((rc = prolly_txn_set_ref(txn, u)) || (rc = prolly_txn_set_reason(txn, op, NULL)))
		return rc;
	memset(&conf, 0, sizeof(conf));
	rc = prolly_txn_commit(txn, &conf, 1);
	if (rc == PROLLY_ECONFLICT && !conf.conflict)
		*gc_only = 1;
	return rc;
}

/*
 * One ref move, in a txn of its own: creates ref (create: it must be absent), or sets it to `to`
 * or removes it (to NULL) from the value it has now (it must exist). A write that lost only to a
 * gc is retried, and with follow one that lost because the ref moved (up to MAX_RETRIES
 * attempts). *cur: the value the last attempt read. *lost: the ref was not as the move needs
 * (PROLLY_ECONFLICT when it exists for a create, PROLLY_ENOTFOUND when it is absent otherwise),
 * or it moved meanwhile (PROLLY_ECONFLICT): the caller words those; other errors keep theirs.
 */
static int ref_move(prolly_id *cur, int *lost, prolly_db *db, const char *ref, int create,
                    const prolly_id *to, const char *op, int follow)
{
	prolly_txn *txn = NULL;
	prolly_ref_update u;
	int exists = 1, gc_only, rc;
	*lost = 0;
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "moving '%s': NULL db", ref);
	for (int attempt = 0;; attempt++) {
		/* A creation reads nothing of the ref: its write expects it absent (the txn has the
		 * handle's epoch; one a gc has passed only costs a retry with the new one). */
		if ((rc = prolly_txn_begin(&txn, db)) ||
		    (!create && (rc = prolly__txn_read_head(txn, ref, cur, &exists, NULL))))
			break;
		if (!create && !exists) {
			*lost = 1;
			rc = PROLLY_ENOTFOUND;
			break;
		}
		/* Known to exist, with its tree, if this handle read it as a head at the txn's epoch
		 * (H4 in head_memo.c). */
		if (to && !prolly__seen_at(&db->heads, to, txn->epoch) && (rc = commit_exists(db, to, ref)))
			break;
		memset(&u, 0, sizeof(u));
		u.name = ref;
		u.expect = create ? PROLLY_REF_EXPECT_ABSENT : PROLLY_REF_EXPECT_VALUE;
		if (!create)
			u.expected = *cur;
		u.remove = !to;
		if (to)
			u.value = *to;
		rc = publish(txn, &u, op, &gc_only);
		*lost = rc == PROLLY_ECONFLICT && !gc_only;
		if (rc != PROLLY_ECONFLICT || (*lost && !follow) || attempt + 1 >= MAX_RETRIES)
			break;
		prolly_txn_free(txn);
		txn = NULL;
	}
	prolly_txn_free(txn);
	return rc;
}

int prolly__ref_create(prolly_db *db, const char *ref, const prolly_id *commit, const char *op)
{
	prolly_id cur;
	int lost, rc = ref_move(&cur, &lost, db, ref, 1, commit, op, 0);
	if (rc == PROLLY_ECONFLICT && lost)
		return prolly_set_error(PROLLY_ECONFLICT, "'%s' already exists", ref);
	return rc;
}

int prolly__ref_delete(prolly_id *out_old, prolly_db *db, const char *ref, const char *op)
{
	/* It moved (or a gc ran): delete whatever it is now. */
	prolly_id cur;
	int lost, rc = ref_move(&cur, &lost, db, ref, 0, NULL, op, 1);
	if (rc == PROLLY_ENOTFOUND && lost)
		return prolly_set_error(PROLLY_ENOTFOUND, "no ref '%s'", ref);
	if (rc == 0 && out_old)
		*out_old = cur;
	return rc;
}

/* ---- tags ---------------------------------------------------------------------------------- */

enum { TAG_CREATE, TAG_DELETE, TAG_GET };

/* The three tag operations: the ref of tag `name` (the branch name rules, and their messages),
 * the ref operation, and the tag's own words for its expected failure (ECONFLICT for a create,
 * ENOTFOUND otherwise; any other error keeps the message it came with). */
static int tag_op(prolly_id *out, prolly_db *db, const char *name, int op, const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "tag '%s': NULL db", name ? name : "(null)");
	int rc = prolly_tag_name_valid(name);
	/* A tag of 64 hex digits, made before that rule, is listed, so it is read and deleted by
	 * name as such a branch is (branch.c BR1); nothing creates one. */
	if (rc == PROLLY_EINVAL && op != TAG_CREATE && name && !prolly__branch_name_check(name, 1))
		rc = 0;
	if (rc)
		return rc;
	snprintf(ref, sizeof(ref), "%s%s", TAGS_PREFIX, name);
	switch (op) {
	case TAG_CREATE:
		rc = prolly__ref_create(db, ref, commit, "tag");
		if (rc == PROLLY_ECONFLICT)
			return prolly_set_error(rc, "tag '%s' already exists", name);
		return rc;
	case TAG_DELETE: rc = prolly__ref_delete(out, db, ref, "delete"); break;
	default: rc = prolly__get_ref(db, ref, out); break;
	}
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(rc, "no tag '%s'", name);
	return rc;
}

int prolly_tag_name_valid(const char *name)
{
	return prolly__name_check(name, "tag", 0);
}

int prolly_tag_create(prolly_db *db, const char *name, const prolly_id *commit)
{
	if (!commit)
		return prolly_set_error(PROLLY_EINVAL, "creating tag '%s' needs a commit", name);
	return tag_op(NULL, db, name, TAG_CREATE, commit);
}

int prolly_tag_delete(prolly_id *out_commit, prolly_db *db, const char *name)
{
	return tag_op(out_commit, db, name, TAG_DELETE, NULL);
}

int prolly_tag_get(prolly_id *out_commit, prolly_db *db, const char *name)
{
	return tag_op(out_commit, db, name, TAG_GET, NULL);
}

typedef struct list_ctx {
	const char *prefix;
	size_t prefix_len;
	prolly_branch_fn fn;
	void *payload;
} list_ctx;

static int on_ref_under(void *payload, const char *name, const prolly_id *value)
{
	list_ctx *lc = payload;
	if (strncmp(name, lc->prefix, lc->prefix_len) != 0 ||
	    prolly__branch_name_check(name + lc->prefix_len, 1)) /* BR1 */
		return 0;
	return lc->fn(lc->payload, name + lc->prefix_len, value);
}

int prolly__list_under(prolly_db *db, const char *prefix, prolly_branch_fn fn, void *payload)
{
	list_ctx lc = {prefix, strlen(prefix), fn, payload};
	return db->vt.list_refs(db->store, prefix, on_ref_under, &lc);
}

int prolly_tag_list(prolly_db *db, prolly_branch_fn fn, void *payload)
{
	if (!db || !fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_tag_list needs a handle and a callback");
	return prolly__list_under(db, TAGS_PREFIX, fn, payload);
}

/* ---- reset --------------------------------------------------------------------------------- */

int prolly_branch_reset(prolly_id *out_old, prolly_db *db, const char *branch,
                        const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1], hex[PROLLY_ID_HEX_SIZE];
	prolly_id cur;
	int lost, rc;

	if ((rc = prolly_branch_name_valid(branch)))
		return rc;
	if (!commit)
		return prolly_set_error(PROLLY_EINVAL, "resetting branch '%s' needs a commit", branch);
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	rc = ref_move(&cur, &lost, db, ref, 0, commit, "reset", 0);
	if (rc == PROLLY_ENOTFOUND && lost)
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", branch);
	if (rc == PROLLY_ECONFLICT && lost) {
		prolly_id_to_hex(hex, &cur);
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "branch '%s' moved away from %s meanwhile; not reset", branch, hex);
	}
	if (rc == 0 && out_old)
		*out_old = cur;
	return rc;
}
