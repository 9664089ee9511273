/*
 * pick.c - applying one commit's change elsewhere (cherry-pick) or undoing it (revert).
 *
 * Both are three-way merges (prolly_merge) of the tree they land on ("ours") with:
 *   cherry-pick C:  base = C's parent's tree, theirs = C's tree   (C's change, applied)
 *   revert C:       base = C's tree, theirs = C's parent's tree   (C's change, undone)
 * "C's parent" is its only parent, or for a merge commit the one `mainline` names (1-based);
 * a root commit's parent tree is the empty tree. Conflicts are prolly_merge's: reported through
 * opts->on_conflict, settled by opts->resolve. Commits made in the txn and not yet published are
 * read from it. prolly_pick_message is the message a caller gives the result's commit by
 * default.
 */
#include "internal.h"

#include <stdio.h>

/* A commit made in txn and not yet published, or one the handle read last as a branch head
 * (commits are immutable and were hash-checked: only their contents are needed here), or else
 * one in the store. what (the caller's word for the commit it named) makes a tree id there bad
 * input, PROLLY_EINVAL, rather than a corrupt commit (S2 in resolve.c); NULL for a parent. */
static int read_commit(prolly_commit **out, prolly_txn *txn, const prolly_id *id, const char *what)
{
	const void *bytes;
	size_t size;
	if (prolly__txn_find_raw(txn, id, &bytes, &size) == 0)
		return prolly__commit_decode(out, id, bytes, size);
	if ((*out = prolly__head_memo_find(&txn->db->heads, id)))
		return 0;
	if (what)
		return prolly__commit_read_as(out, txn->db, id, what);
	return prolly_commit_read(out, txn->db, id);
}

static int pick(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                const prolly_id *onto, const prolly_id *commit, unsigned mainline, int revert,
                const prolly_merge_options *opts)
{
	prolly_commit *c = NULL, *p = NULL;
	prolly_id parent_tree;
	char hex[PROLLY_ID_HEX_SIZE];
	int rc;
	if (!out_root || !txn || !onto || !commit)
		return prolly_set_error(PROLLY_EINVAL, "%s: NULL argument",
		                        revert ? "prolly_revert" : "prolly_cherry_pick");
	if ((rc = prolly__merge_check(opts, stats)) ||
	    (rc = prolly__txn_usable(txn, revert ? "prolly_revert" : "prolly_cherry_pick")))
		return rc;
	prolly_id_to_hex(hex, commit);
	if ((rc = read_commit(&c, txn, commit, revert ? "revert" : "cherry-pick")))
		goto cleanup;
	if (c->n_parents > 1 && mainline == 0) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "commit %s is a merge of %zu parents: say which parent's side "
		                      "to take the change from (mainline 1..%zu)",
		                      hex, c->n_parents, c->n_parents);
		goto cleanup;
	}
	if (mainline > (c->n_parents ? c->n_parents : 1) || (mainline > 1 && c->n_parents < 2)) {
		rc = prolly_set_error(PROLLY_EINVAL, "commit %s has %zu parent%s; no parent %u", hex,
		                      c->n_parents, c->n_parents == 1 ? "" : "s", mainline);
		goto cleanup;
	}
	if (c->n_parents == 0) {
		parent_tree = txn->db->empty_tree;
	} else {
		const prolly_id *pid = &c->parents[mainline ? mainline - 1 : 0];
		if ((rc = read_commit(&p, txn, pid, NULL))) {
			if (rc == PROLLY_ENOTFOUND)
				prolly_set_error(rc, "the parent of commit %s is gone (retention)", hex);
			goto cleanup;
		}
		parent_tree = p->tree;
	}
	if (revert)
		rc = prolly_merge(out_root, stats, txn, &c->tree, onto, &parent_tree, opts);
	else
		rc = prolly_merge(out_root, stats, txn, &parent_tree, onto, &c->tree, opts);
cleanup:
	prolly_commit_free(c);
	prolly_commit_free(p);
	return rc;
}

int prolly_cherry_pick(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                       const prolly_id *onto, const prolly_id *commit, unsigned mainline,
                       const prolly_merge_options *opts)
{
	return pick(out_root, stats, txn, onto, commit, mainline, 0, opts);
}

int prolly_revert(prolly_id *out_root, prolly_merge_stats *stats, prolly_txn *txn,
                  const prolly_id *onto, const prolly_id *commit, unsigned mainline,
                  const prolly_merge_options *opts)
{
	return pick(out_root, stats, txn, onto, commit, mainline, 1, opts);
}

size_t prolly_pick_message(char *out, size_t cap, const prolly_commit *picked, int revert)
{
	static const char rev_fmt[] = "revert %s: %.*s", pick_fmt[] = "%.*s (cherry picked from %s)";
	char hex[PROLLY_ID_HEX_SIZE];
	if (!picked) {
		if (cap)
			out[0] = '\0';
		return 0;
	}
	/* the fixed part: the format without its three conversions (6 bytes), and the id */
	size_t fixed = (revert ? sizeof(rev_fmt) : sizeof(pick_fmt)) - 1 - 6 + PROLLY_ID_HEX_SIZE - 1;
	const char *msg = picked->message ? picked->message : "";
	size_t keep = strlen(msg);
	if (keep > PROLLY_MAX_MESSAGE - fixed) {
		keep = PROLLY_MAX_MESSAGE - fixed;
		while (keep > 0 && ((unsigned char)msg[keep] & 0xC0) == 0x80)
			keep--; /* msg[keep] begins what is cut: never inside a UTF-8 character */
	}
	prolly_id_to_hex(hex, &picked->id);
	int n = revert ? snprintf(out, cap, rev_fmt, hex, (int)keep, msg)
	               : snprintf(out, cap, pick_fmt, (int)keep, msg, hex);
	assert(n >= 0 && (size_t)n <= PROLLY_MAX_MESSAGE);
	return n < 0 ? 0 : (size_t)n;
}
