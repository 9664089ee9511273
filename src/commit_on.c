/*
 * commit_on.c - snapshot-isolation commits: the edits of a transaction that read commit `base`
 * land on the branch head as of its commit, merged into it when the head moved meanwhile,
 * unless they write a key that was also written since base (include/prolly.h states the rule).
 *
 *   prolly_rebase_edits     ours = base + edits; then the three-way merge (base, ours, head)
 *                           with PROLLY_RESOLVE_FAIL, where a convergent change (both sides
 *                           made the same change to a key) counts as a conflict too
 *   prolly_commit_edits_on  read the head; head == base: commit ours on it; else commit the
 *                           rebase on the head; publish by compare-and-swap; a lost race starts
 *                           over from the head's read (bounded)
 *
 * Invariants:
 *   CO1  a key ours changes from base and head changes from base (whatever the two values) is
 *        never committed: prolly_merge reports a different change as a conflict and an equal
 *        one in stats.convergent; both are PROLLY_EMERGE here, so no update is lost.
 *   CO2  every attempt builds ours again in its own txn: the nodes of the merged tree that come
 *        from ours are nodes of the txn that publishes it (a txn that lost its race published
 *        nothing, and its nodes may have left the cache).
 *   CO3  a commit's only parent is the head its compare-and-swap expects, and its time is later
 *        than that parent's (BR2 of branch.c).
 */
#include "internal.h"

#include <stdlib.h>

int prolly_rebase_edits(prolly_id *out_root, prolly_txn *txn, const prolly_id *base,
                        const prolly_id *head, const prolly_edit *edits, size_t n)
{
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_id ours, merged;
	int rc;

	if (!out_root || !txn || !base || !head || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_rebase_edits: NULL argument");
	if ((rc = prolly_edit_tree(&ours, txn, base, edits, n)))
		return rc;
	if (prolly_id_equal(base, head)) {
		*out_root = ours;
		return 0;
	}
	if (prolly_id_equal(&ours, base)) {
		*out_root = *head; /* the edits write nothing */
		return 0;
	}
	rc = prolly_merge(&merged, &st, txn, base, &ours, head, NULL);
	if (rc == PROLLY_EMERGE || (rc == 0 && st.convergent)) /* CO1 */
		return prolly_set_error(PROLLY_EMERGE, "a key these edits write was also written since the "
		                                       "transaction's snapshot (a write-write conflict)");
	if (rc)
		return rc;
	*out_root = merged;
	return 0;
}

/* One attempt: reads the head, commits the edits on it (rebased when it is not base) and
 * publishes. Returns 0; PROLLY_ECONFLICT for a lost race (*winner: the head that won, when
 * known), *final set when retrying cannot help (a write-write conflict, the branch deleted);
 * other errors. *rebased is set when it merged. */
static int attempt(prolly_id *out_commit, int *rebased, int *final, prolly_id *winner,
                   prolly_db *db, const char *branch, const char *ref, prolly_commit **base_c,
                   const prolly_id *base, const prolly_edit *edits, size_t n, const char *message)
{
	prolly_txn *txn = NULL;
	prolly_commit *hc = NULL;
	prolly_id head, root, cid;
	int exists, rc;

	*rebased = 0;
	*final = 0;
	if ((rc = prolly_txn_begin(&txn, db)) ||
	    (rc = prolly__txn_read_head(txn, ref, &head, &exists, &hc)))
		goto cleanup;
	if (!exists) {
		*final = 1;
		rc = prolly_set_error(PROLLY_ECONFLICT, "branch '%s' was deleted meanwhile", branch);
		goto cleanup;
	}
	*winner = head;
	if (!hc && (rc = prolly__commits_read(db, &head, 1, &hc)))
		goto cleanup;
	if (prolly_id_equal(&head, base)) {
		rc = prolly_edit_tree(&root, txn, &hc->tree, edits, n);
	} else {
		*rebased = 1;
		if (!*base_c && (rc = prolly__commits_read(db, base, 1, base_c)))
			goto cleanup;
		rc = prolly_rebase_edits(&root, txn, &(*base_c)->tree, &hc->tree, edits, n); /* CO2 */
		if (rc == PROLLY_EMERGE) {
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &head);
			*final = 1;
			rc = prolly_set_error(PROLLY_ECONFLICT,
			                      "branch '%s' moved to %s, where a key this commit writes was "
			                      "written since its snapshot; nothing was written; retry",
			                      branch, hex);
		}
	}
	if (rc)
		goto cleanup;
	if (prolly_id_equal(&root, &hc->tree)) {
		*out_commit = head; /* the edits write nothing */
		goto cleanup;
	}
	if ((rc = prolly_commit_create(&cid, txn, &root, &head, 1, prolly__branch_time(hc->time_us),
	                               message ? message : "")) ||
	    (rc = prolly__branch_publish(db, txn, branch, ref, &head, &cid, winner))) /* CO3 */
		goto cleanup;
	*out_commit = cid;
cleanup:
	prolly_commit_free(hc);
	prolly_txn_free(txn);
	return rc;
}

int prolly_commit_edits_on(prolly_id *out_commit, unsigned *out_rebased, prolly_db *db,
                           const char *branch, const prolly_id *base, const prolly_edit *edits,
                           size_t n, const char *message, unsigned max_attempts)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_commit *base_c = NULL;
	prolly_id winner;
	unsigned rebased = 0, tries = max_attempts ? max_attempts : 1;
	int merged, final, known = 0, rc;

	if (out_rebased)
		*out_rebased = 0;
	if (!out_commit || !db || !base || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_commit_edits_on: NULL argument");
	if ((rc = prolly__branch_ref(ref, branch)))
		return rc;
	for (unsigned i = 0; i < tries; i++) {
		rc = attempt(out_commit, &merged, &final, &winner, db, branch, ref, &base_c, base, edits, n,
		             message);
		rebased += (unsigned)merged;
		known = 1;
		if (rc != PROLLY_ECONFLICT || final)
			break;
	}
	if (rc == PROLLY_ECONFLICT && known)
		*out_commit = winner;
	prolly_commit_free(base_c);
	if (out_rebased)
		*out_rebased = rebased;
	return rc;
}
