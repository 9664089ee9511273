/*
 * branch_merge.c - merging one branch into another (prolly_merge_branches): the merge base
 * (merge_base.c), then a fast-forward, nothing, or a three-way merge of the trees (merge.c) made
 * into a merge commit, and the branch moved by compare-and-swap as every branch move is
 * (branch.c).
 */
#include "internal.h"

#include <stdio.h>

int prolly_merge_branches(prolly_id *out_commit, prolly_merge_stats *stats, prolly_db *db,
                          const char *into, const char *from, const prolly_merge_options *opts,
                          const char *message)
{
	char iref[PROLLY_MAX_REF_NAME + 1], fref[PROLLY_MAX_REF_NAME + 1];
	char msg[2 * PROLLY__MAX_BRANCH_NAME + 32];
	prolly_txn *txn = NULL;
	prolly_commit *cs[3] = {NULL, NULL, NULL}; /* base, into, from */
	prolly_id heads[3], result, root, base_tree;
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	int exists, rc, have_base = 0;

	if ((rc = prolly__merge_check(opts, stats)))
		goto cleanup;
	if (!db) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_merge_branches: NULL db");
		goto cleanup;
	}
	if ((rc = prolly__branch_ref(iref, into)) || (rc = prolly__branch_ref(fref, from)))
		goto cleanup;
	if ((rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	if ((rc = prolly__txn_read_head(txn, iref, &heads[1], &exists, NULL)))
		goto cleanup;
	if (!exists) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s' to merge into", into);
		goto cleanup;
	}
	if ((rc = prolly__txn_read_head(txn, fref, &heads[2], &exists, NULL)))
		goto cleanup;
	if (!exists) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s' to merge from", from);
		goto cleanup;
	}
	result = heads[1];
	if (prolly_id_equal(&heads[1], &heads[2]))
		goto done; /* same head: nothing to do */
	if (opts && opts->base) {
		heads[0] = *opts->base;
		have_base = 1;
	} else if ((rc = prolly__merge_base(&heads[0], db, &heads[1], &heads[2])) == 0) {
		have_base = 1;
	} else if ((rc == PROLLY_ENOTFOUND || rc == PROLLY_EPRUNED) && opts && opts->allow_unrelated) {
		rc = 0; /* merge against the empty tree, as asked */
	} else {
		if (rc == PROLLY_ENOTFOUND)
			prolly_set_error(rc,
			                 "branches '%s' and '%s' share no history; not merged (allow "
			                 "unrelated histories or name a base to merge anyway)",
			                 into, from);
		else if (rc == PROLLY_EPRUNED)
			prolly_set_error(rc,
			                 "the merge base of '%s' and '%s' is gone (removed by retention); not "
			                 "merged (name a base, or allow unrelated histories)",
			                 into, from);
		goto cleanup;
	}
	/* An explicit base always gives a three-way merge, never a shortcut. */
	if (have_base && !(opts && opts->base) && prolly_id_equal(&heads[0], &heads[2]))
		goto done; /* from is already in into */
	if (have_base && !(opts && opts->base) && prolly_id_equal(&heads[0], &heads[1])) {
		result = heads[2]; /* fast-forward */
		if ((rc = prolly_txn_set_reason(txn, "fast-forward", NULL)))
			goto cleanup;
	} else {
		if (have_base) {
			if ((rc = prolly__commits_read(db, heads, 3, cs))) {
				/* The caller's base naming a tree or a reflog entry is bad input, as for every
				 * id a caller passes as a commit; the heads' damage stays PROLLY_ECORRUPT. */
				if (opts && opts->base)
					rc = prolly__commit_named_error(db, rc, opts->base, "base");
				if (rc == PROLLY_ENOTFOUND && !(opts && opts->base))
					rc = prolly_set_error(PROLLY_EPRUNED,
					                      "the merge base of '%s' and '%s' is gone (removed by "
					                      "retention); not merged",
					                      into, from);
				goto cleanup;
			}
			base_tree = cs[0]->tree;
			uint64_t cnt; /* the base's tree must still be there: retention may have taken it */
			rc = prolly_count(&cnt, db, &base_tree);
			if (rc == PROLLY_ENOTFOUND && opts && opts->allow_unrelated && !opts->base) {
				base_tree = db->empty_tree; /* the base's tree is gone: as asked, none */
				rc = 0;
			}
			if (rc) {
				if (rc == PROLLY_ENOTFOUND)
					rc = prolly_set_error(PROLLY_EPRUNED,
					                      "the tree of the merge base of '%s' and '%s' was "
					                      "removed by retention; not merged",
					                      into, from);
				goto cleanup;
			}
		} else {
			base_tree = db->empty_tree;
			if ((rc = prolly__commits_read(db, heads + 1, 2, cs + 1)))
				goto cleanup;
		}
		if ((rc = prolly_merge(&root, &st, txn, &base_tree, &cs[1]->tree, &cs[2]->tree, opts)))
			goto cleanup;
		if (!message) {
			snprintf(msg, sizeof(msg), "merge '%s' into '%s'", from, into);
			message = msg;
		}
		if ((rc = prolly_commit_create(
		         &result, txn, &root, &heads[1], 2,
		         prolly__branch_time(db, PROLLY_MAX(cs[1]->time_us, cs[2]->time_us)), message)))
			goto cleanup;
	}
	if ((rc = prolly__branch_publish(db, txn, into, iref, &heads[1], &result, NULL)))
		goto cleanup;
done:
	if (out_commit)
		*out_commit = result;
	prolly__merge_stats_put(stats, &st);
cleanup:
	for (int i = 0; i < 3; i++)
		prolly_commit_free(cs[i]);
	prolly_txn_free(txn);
	return rc;
}
