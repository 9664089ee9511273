/*
 * branch.c - branches: the refs "refs/heads/NAME" naming commits; their names, heads, creation,
 * deletion, moves, listing, and committing edits to a branch. docs/commits.md explains the
 * protocols; the short version:
 *
 *   - A branch moves only by compare-and-swap: every move is a prolly_ref_update expecting the
 *     head that the change was computed from, published in the same store write as the new
 *     nodes and commit, so a lost race publishes nothing (PROLLY_ECONFLICT).
 *   - Every txn here reads its branch head as its first store read and adopts the gc epoch that
 *     read returned (prolly__txn_read_head, head.c). Everything the txn then reads is reachable
 *     from that head, which every gc up to that epoch retained; a later gc bumps the epoch and
 *     the commit fails.
 *
 * Merging branches is branch_merge.c; tags and reset are refs.c; history walks are
 * commit_graph.c, merge_base.c and log.c.
 *
 * Invariants:
 *   BR1  a branch name passes prolly_branch_name_valid before any ref is built from it; and what
 *       is read back is held to the same rule: a ref under refs/heads/ or refs/tags/ whose rest
 *       is no valid name (another client's row, a hostile store) is not listed as a branch or
 *       tag (refs.c), nor fetched (remote.c), so it is never copied or printed as one. Only
 *       the 64-hex rule is left out there: older libraries created such names, so those
 *       branches stay listed, fetched and copied, resolve.c reads them by name, and
 *       prolly_branch_head and prolly_branch_remove take them (existing_branch_ref), while
 *       nothing creates or moves one;
 *   BR2  commits made on a branch (here and in branch_merge.c) have a time greater than each
 *       parent's (prolly__branch_time), so that "newer" means "not an ancestor" for history made
 *       by this library, whatever the clocks do.
 */
#include "internal.h"

#include <stdio.h>

#define HEADS_PREFIX "refs/heads/"
#define HEADS_PREFIX_LEN 11
#define MAX_RETRIES 8

/* ------------------------------------------------------------------------------------------ */
/* Names                                                                                      */
/* ------------------------------------------------------------------------------------------ */

int prolly__name_check(const char *name, const char *kind, int quiet)
{
/* The message only when asked for: a listing skips a bad name without touching the caller's. */
#define BAD(...) (quiet ? PROLLY_EINVAL : prolly_set_error(PROLLY_EINVAL, __VA_ARGS__))
	size_t len;
	if (!name || !*name)
		return BAD("a %s name cannot be empty", kind);
	len = strlen(name);
	if (len > PROLLY__MAX_BRANCH_NAME)
		return BAD("%s name '%.40s...' has %zu bytes; at most %d", kind, name, len,
		           PROLLY__MAX_BRANCH_NAME);
	if (name[0] == '-' || name[0] == '/')
		return BAD("%s name '%s' starts with '%c'", kind, name, name[0]);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		         ch == '.' || ch == '_' || ch == '/' || ch == '-';
		if (!ok)
			return BAD("%s name '%s' holds byte 0x%02x; allowed are A-Z a-z 0-9 . _ / -", kind,
			           name, ch);
		if (ch == '.' && name[i + 1] == '.')
			return BAD("%s name '%s' contains \"..\"", kind, name);
	}
	/* A name of 64 hex digits would read as a commit id (src/resolve.c); shorter all-hex names
	 * are allowed, and a branch wins over a short commit id spelled the same. Read back
	 * (quiet), such a name is an older library's branch, not junk (BR1). */
	if (!quiet && len == 2 * PROLLY_ID_SIZE && prolly__hex_span(name, len, 0) == len)
		return BAD("%s name '%s' looks like a commit id (64 hex digits)", kind, name);
	return 0;
#undef BAD
}

int prolly__branch_name_check(const char *name, int quiet)
{
	return prolly__name_check(name, "branch", quiet);
}

int prolly_branch_name_valid(const char *name)
{
	return prolly__branch_name_check(name, 0);
}

/* "refs/heads/NAME" into buf (BR1). */
int prolly__branch_ref(char buf[PROLLY_MAX_REF_NAME + 1], const char *branch)
{
	int rc = prolly_branch_name_valid(branch);
	if (rc)
		return rc;
	memcpy(buf, HEADS_PREFIX, HEADS_PREFIX_LEN);
	memcpy(buf + HEADS_PREFIX_LEN, branch, strlen(branch) + 1);
	return 0;
}

/* The ref of a branch that is read or removed, not written: a valid name, or one of 64 hex
 * digits that libraries before that rule created (BR1; whether it exists is the caller's
 * lookup). Any other name is PROLLY_EINVAL with prolly_branch_name_valid's message. */
static int existing_branch_ref(char buf[PROLLY_MAX_REF_NAME + 1], const char *branch)
{
	int rc = prolly__branch_ref(buf, branch);
	if (rc != PROLLY_EINVAL || !branch || prolly__branch_name_check(branch, 1))
		return rc;
	snprintf(buf, PROLLY_MAX_REF_NAME + 1, "%s%s", HEADS_PREFIX, branch);
	return 0;
}

int64_t prolly__branch_time(const prolly_db *db, int64_t newest_parent)
{
	int64_t now = prolly__db_now(db);
	if (now > newest_parent)
		return now;
	return newest_parent < INT64_MAX ? newest_parent + 1 : newest_parent; /* BR2 */
}

/* BR2 for the commits callers make with prolly_commit_create: the CLI's and the PostgreSQL
 * extension's merges, picks and edits. */
int64_t prolly_next_commit_time(const prolly_db *db, const prolly_commit *const *parents, size_t n)
{
	int64_t newest = INT64_MIN;
	int any = 0;
	for (size_t i = 0; parents && i < n; i++)
		if (parents[i] && (!any || parents[i]->time_us > newest)) {
			newest = parents[i]->time_us;
			any = 1;
		}
	return any ? prolly__branch_time(db, newest) : prolly__db_now(db);
}
/* ------------------------------------------------------------------------------------------ */
/* Branch heads and moves                                                                     */
/* ------------------------------------------------------------------------------------------ */

int prolly_branch_head(prolly_id *out_commit, prolly_db *db, const char *branch)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_branch_head: NULL db");
	int rc = existing_branch_ref(ref, branch);
	if (rc)
		return rc;
	rc = prolly__get_ref(db, ref, out_commit);
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", branch);
	return rc;
}

int prolly_txn_move_branch(prolly_txn *txn, const char *branch, const prolly_id *expected,
                           const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_ref_update u;
	int rc = prolly__branch_ref(ref, branch);
	if (rc)
		return rc;
	if (!commit)
		return prolly_set_error(PROLLY_EINVAL, "moving branch '%s' needs a commit", branch);
	memset(&u, 0, sizeof(u));
	u.name = ref;
	if (expected) {
		u.expect = PROLLY_REF_EXPECT_VALUE;
		u.expected = *expected;
	} else {
		u.expect = PROLLY_REF_EXPECT_ABSENT;
	}
	u.value = *commit;
	return prolly_txn_set_ref(txn, &u);
}

/* After a failed commit of a branch move: a clear message, and the head that won if known. gc_ran:
 * the txn saw the gc epoch move. */
static int lost_race(prolly_db *db, const char *branch, const char *ref, const prolly_ref_update *c,
                     int gc_ran, prolly_id *winner, int *have_winner)
{
	char hex[PROLLY_ID_HEX_SIZE], why[1024];
	*have_winner = 0;
	if (c->conflict) {
		if (c->current_exists) {
			*winner = c->current;
			*have_winner = 1;
			prolly_id_to_hex(hex, &c->current);
			return prolly_set_error(PROLLY_ECONFLICT, "branch '%s' moved to %s meanwhile; retry",
			                        branch, hex);
		}
		return prolly_set_error(PROLLY_ECONFLICT, "branch '%s' was deleted meanwhile", branch);
	}
	/* No ref conflict: the gc epoch moved, or the store found nodes the write builds on gone
	 * (a crash lost a write that was not durable: its message says so). Tell the caller where
	 * the branch is now. */
	snprintf(why, sizeof(why), "%s", prolly_last_error());
	if (prolly__get_ref(db, ref, winner) == 0)
		*have_winner = 1;
	if (!gc_ran)
		return prolly_set_error(PROLLY_ECONFLICT, "nothing was committed to branch '%s': %s",
		                        branch, why);
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "a gc ran while committing to branch '%s'; nothing was written; retry",
	                        branch);
}

int prolly__branch_publish(prolly_db *db, prolly_txn *txn, const char *branch, const char *ref,
                           const prolly_id *expected, const prolly_id *commit, prolly_id *winner)
{
	prolly_ref_update conf;
	int rc;
	if ((rc = prolly_txn_move_branch(txn, branch, expected, commit)))
		return rc;
	memset(&conf, 0, sizeof(conf));
	rc = prolly_txn_commit(txn, &conf, 1);
	if (rc == PROLLY_ECONFLICT) {
		prolly_id w;
		int have;
		rc = lost_race(db, branch, ref, &conf, atomic_load(&db->epoch) > txn->epoch, &w, &have);
		if (have && winner)
			*winner = w;
	}
	return rc;
}

/*
 * One try of prolly_commit_edits. With may_guess, a handle whose last commit of this branch met
 * no other writer builds on it without reading the ref (H5 in head_memo.c: *guessed is set); the
 * write's compare-and-swap and epoch check make a wrong guess a PROLLY_ECONFLICT with nothing
 * written. Otherwise the head is read first, as the txn's first read.
 */
static int commit_try(prolly_id *out_commit, prolly_db *db, const char *branch, const char *ref,
                      const prolly_edit *edits, size_t n, const char *message, int may_guess,
                      int *guessed)
{
	prolly_txn *txn = NULL;
	prolly_commit *hc = NULL;
	prolly_buf bytes = PROLLY_BUF_INIT;
	prolly_id head, tree, root, cid, last;
	int exists = 0, quiet = 0, rc;
	uint64_t epoch = 0;
	int64_t t;

	*guessed = 0;
	if ((rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	if (may_guess && (hc = prolly__head_memo_guess(&db->heads, ref, &epoch))) {
		if (epoch == txn->epoch) { /* no gc this handle knows of since (H4) */
			head = hc->id;
			exists = quiet = *guessed = 1;
		} else {
			prolly_commit_free(hc);
			hc = NULL;
		}
	}
	if (!*guessed) {
		int had = prolly__head_memo_peek(&db->heads, ref, &last);
		if ((rc = prolly__txn_read_head(txn, ref, &head, &exists, &hc)))
			goto cleanup;
		/* Quiet: the ref is where this handle last saw it, or was never seen (H5). */
		quiet = !had || (exists && prolly_id_equal(&last, &head));
	}
	if (exists) {
		if (!hc && (rc = prolly__commits_read(db, &head, 1, &hc)))
			goto gone;
		tree = hc->tree;
		t = prolly__branch_time(db, hc->time_us);
	} else {
		/* A branch that does not exist yet starts with a root commit of the edits. */
		tree = db->empty_tree;
		t = prolly__db_now(db);
	}
	if ((rc = prolly_edit_tree(&root, txn, &tree, edits, n)))
		goto gone;
	if ((rc = prolly__commit_make(&cid, &bytes, txn, &root, exists ? &head : NULL, exists ? 1 : 0,
	                              t, message ? message : "")))
		goto cleanup;
	if ((rc = prolly__branch_publish(db, txn, branch, ref, exists ? &head : NULL, &cid,
	                                 out_commit)))
		goto cleanup;
	/* H5: the write passed its epoch check at txn->epoch with the ref now naming cid. */
	prolly__head_memo_put(&db->heads, ref, &cid, bytes.ptr, bytes.size, txn->epoch, quiet);
	prolly__seen_put(&db->heads, &cid, txn->epoch); /* H4: the next commit's parent */
	if (out_commit)
		*out_commit = cid;
	goto cleanup;
gone:
	/* The head we read may have moved on and its commit or nodes been removed by a gc (beyond
	 * retention) before we read them: that is a lost race, not damage, if the branch moved. */
	if (exists && (rc == PROLLY_ENOTFOUND || rc == PROLLY_ECORRUPT)) {
		prolly_id now;
		int err = rc, r = prolly__get_ref(db, ref, &now);
		if ((r == 0 && !prolly_id_equal(&now, &head)) || r == PROLLY_ENOTFOUND) {
			if (r == 0 && out_commit)
				*out_commit = now;
			rc = prolly_set_error(PROLLY_ECONFLICT,
			                      "branch '%s' moved while this commit was "
			                      "being made (and a gc removed what it was built on); retry",
			                      branch);
		} else {
			rc = err;
		}
	}
cleanup:
	prolly_buf_dispose(&bytes);
	prolly_commit_free(hc);
	prolly_txn_free(txn);
	return rc;
}

int prolly_commit_edits(prolly_id *out_commit, prolly_db *db, const char *branch,
                        const prolly_edit *edits, size_t n, const char *message)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	int guessed, rc;

	if (!db || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_commit_edits: NULL argument");
	if ((rc = prolly__branch_ref(ref, branch)))
		return rc;
	rc = commit_try(out_commit, db, branch, ref, edits, n, message, 1, &guessed);
	if (rc == PROLLY_ECONFLICT && guessed) {
		/* The guess lost (another writer, or a gc): what a read of the head would have met. */
		prolly__head_memo_distrust(&db->heads, ref);
		rc = commit_try(out_commit, db, branch, ref, edits, n, message, 0, &guessed);
	}
	return rc;
}

int prolly_branch_create(prolly_db *db, const char *name, const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1], hex[PROLLY_ID_HEX_SIZE];
	prolly_txn *txn = NULL;
	prolly_commit *c = NULL;
	prolly_ref_update conf;
	int rc;

	if ((rc = prolly__branch_ref(ref, name)))
		goto cleanup;
	if (!db) {
		rc = prolly_set_error(PROLLY_EINVAL, "creating branch '%s': NULL db", name);
		goto cleanup;
	}
	if (!commit) {
		rc = prolly_set_error(PROLLY_EINVAL, "creating branch '%s' needs a commit", name);
		goto cleanup;
	}
	prolly_id_to_hex(hex, commit);
	for (int attempt = 0;; attempt++) {
		/* No read of the ref: the write expects it absent, and fails if it exists. The txn has
		 * the handle's epoch; one a gc has passed only costs a retry with the new one. */
		if ((rc = prolly_txn_begin(&txn, db)))
			goto cleanup;
		/* The commit and its tree must exist now (and the epoch check keeps a gc from removing
		 * them): known if this handle read the commit as a head at the txn's epoch (H4 in
		 * head_memo.c), else read. */
		if (!prolly__seen_at(&db->heads, commit, txn->epoch)) {
			if ((rc = prolly__commit_read_as(&c, db, commit, name))) {
				if (rc == PROLLY_ENOTFOUND)
					prolly_set_error(rc, "cannot create branch '%s': commit %s not found", name,
					                 hex);
				goto cleanup;
			}
			rc = prolly__commit_tree_stored(db, c, ref);
			prolly_commit_free(c);
			c = NULL;
		}
		if (rc || (rc = prolly_txn_move_branch(txn, name, NULL, commit)) ||
		    (rc = prolly_txn_set_reason(txn, "branch", NULL)))
			goto cleanup;
		memset(&conf, 0, sizeof(conf));
		rc = prolly_txn_commit(txn, &conf, 1);
		if (rc != PROLLY_ECONFLICT)
			goto cleanup;
		if (conf.conflict) {
			rc = prolly_set_error(PROLLY_ECONFLICT, "branch '%s' already exists", name);
			goto cleanup;
		}
		if (attempt + 1 >= MAX_RETRIES)
			goto cleanup; /* gc kept running: give up with its message */
		prolly_txn_free(txn);
		txn = NULL;
	}
cleanup:
	prolly_commit_free(c);
	prolly_txn_free(txn);
	return rc;
}

int prolly_branch_delete(prolly_db *db, const char *name)
{
	return prolly_branch_remove(NULL, db, name);
}

int prolly_branch_remove(prolly_id *out_head, prolly_db *db, const char *name)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	int rc = existing_branch_ref(ref, name);
	if (rc)
		return rc;
	rc = prolly__ref_delete(out_head, db, ref, "delete");
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(rc, "no branch '%s'", name);
	if (rc == PROLLY_ECONFLICT)
		return prolly_set_error(rc, "branch '%s' kept moving; not deleted", name);
	return rc;
}

int prolly_branch_list(prolly_db *db, prolly_branch_fn fn, void *payload)
{
	if (!db || !fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_branch_list needs a handle and a callback");
	return prolly__list_under(db, HEADS_PREFIX, fn, payload);
}
