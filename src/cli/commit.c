/*
 * commit.c - the one path by which the CLI commits to a branch, and what it does when another
 * writer moved the branch between the command's read of its head and its compare-and-swap:
 * edits are rebased (prolly_commit_edits_on); ranges and --allow-empty commits go onto the moved
 * head unless a key they write, or one in a range of theirs, was written there; merge, revert and
 * cherry-pick run again (run_again_on_move). Every way, nothing written meanwhile is lost: a
 * conflict is exit 4 (or a merge's exit 3) with nothing committed.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* How many times in all a merge, revert or cherry-pick runs on a branch that keeps moving. */
#define MOVED_ATTEMPTS 8

int run_again_on_move(struct cli *cli, int (*once)(struct cli *, int, char **), int argc,
                      char **argv)
{
	int rc;
	for (int attempt = 1;; attempt++) {
		cli->retry_moved = attempt < MOVED_ATTEMPTS;
		rc = once(cli, argc, argv);
		if (rc != RUN_AGAIN)
			break;
	}
	cli->retry_moved = 0;
	return rc;
}

int publish_branch(struct cli *cli, prolly_txn *txn, const char *branch)
{
	prolly_ref_update conflict;
	memset(&conflict, 0, sizeof conflict);
	int err = prolly_txn_commit(txn, &conflict, 1);
	/* Silent, as a put's rebase is: success prints nothing on stderr, a failure one line. */
	if (err == PROLLY_ECONFLICT && cli->retry_moved &&
	    (!conflict.conflict || conflict.current_exists))
		return RUN_AGAIN;
	if (err == PROLLY_ECONFLICT && conflict.conflict && conflict.current_exists) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, &conflict.current);
		return fail(cli, EXIT_RACE,
		            "branch '%s' moved to %s meanwhile; nothing was "
		            "committed (run the command again)",
		            branch, hex);
	}
	if (err == PROLLY_ECONFLICT && conflict.conflict)
		return fail(cli, EXIT_RACE,
		            "branch '%s' was created or deleted meanwhile; nothing "
		            "was committed",
		            branch);
	if (err == PROLLY_ECONFLICT)
		return fail_lib(cli, err,
		                "lost a concurrent update of '%s'; nothing was committed "
		                "(run the command again)",
		                branch);
	if (err)
		return fail_lib(cli, err, "cannot commit to '%s'", branch);
	return 0;
}

/* How many times a commit of edits reads the moved head again before it gives up (exit 4). */
#define COMMIT_ATTEMPTS 32

/* commit_changes for one batch of edits: prolly_commit_edits_on, so that a head that moved since
 * `head` takes the edits too, unless a key they change was written meanwhile (then nothing is
 * committed, exit 4). Nothing to commit is "no change" when the head had not moved; on a moved
 * head it cannot be told from a commit of someone else's, and the head is printed either way. */
static int commit_rebasing(struct cli *cli, prolly_id *out, const char *branch,
                           const prolly_id *head, const prolly_edit *edits, size_t n,
                           const char *message)
{
	char hex[PROLLY_ID_HEX_SIZE];
	int err = prolly_commit_edits_on(out, NULL, cli->db, branch, head, edits, n, message,
	                                 COMMIT_ATTEMPTS);
	if (err == PROLLY_ECONFLICT)
		return fail_lib(cli, err, NULL);
	if (err)
		return fail_lib(cli, err, "cannot commit to '%s'", branch);
	if (prolly_id_equal(out, head)) {
		prolly_id_to_hex(hex, head);
		report(cli, "no change; '%s' stays at %s", branch, hex);
	}
	return 0;
}

/* The keys a list of changes writes: its edits' keys in key order (sorted once, the first time
 * a head moved under the changes) and its ranges. */
struct touched {
	const struct change *ch;
	size_t n_ch;
	const prolly_slice **keys;
	size_t n_keys;
};

static int cmp_key_ptr(const void *a, const void *b)
{
	const prolly_slice *x = *(const prolly_slice *const *)a, *y = *(const prolly_slice *const *)b;
	return bytes_cmp(x->data, x->size, y->data, y->size);
}

static int touched_init(struct touched *t, const struct change *ch, size_t n_ch)
{
	size_t n = 0;
	t->ch = ch;
	t->n_ch = n_ch;
	for (size_t i = 0; i < n_ch; i++)
		n += ch[i].range ? 0 : ch[i].n;
	t->n_keys = 0;
	if (!(t->keys = malloc((n ? n : 1) * sizeof(*t->keys))))
		return -1;
	for (size_t i = 0; i < n_ch; i++)
		for (size_t j = 0; !ch[i].range && j < ch[i].n; j++)
			t->keys[t->n_keys++] = &ch[i].edits[j].key;
	qsort(t->keys, t->n_keys, sizeof(*t->keys), cmp_key_ptr);
	return 0;
}

/* prolly_diff callback: 1 (stop) at a key the changes write or a range of theirs holds. */
static int on_moved_key(void *payload, const prolly_diff_entry *e)
{
	const struct touched *t = payload;
	const prolly_slice *k = &e->key;
	size_t lo = 0, hi = t->n_keys;
	for (size_t i = 0; i < t->n_ch; i++) {
		const struct change *c = &t->ch[i];
		if (c->range && bytes_cmp(k->data, k->size, c->from.data, c->from.size) >= 0 &&
		    bytes_cmp(k->data, k->size, c->to.data, c->to.size) < 0)
			return 1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_key_ptr(&t->keys[mid], &k);
		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* One attempt of commit_changes on head; RUN_AGAIN (nothing committed) when the branch moved or
 * a gc ran before its compare-and-swap and retry is set. */
static int changes_once(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                        const struct change *ch, size_t n_ch, const char *message, int retry)
{
	prolly_commit *c = NULL;
	prolly_txn *txn = NULL;
	prolly_id root, cid;
	int rc = 0, err = 0;
	char hex[PROLLY_ID_HEX_SIZE];

	prolly_id_to_hex(hex, head);
	err = prolly_commit_read(&c, cli->db, head);
	if (err) {
		rc = fail_lib(cli, err, "cannot read commit %s (head of '%s')", hex, branch);
		goto cleanup;
	}
	err = prolly_txn_begin(&txn, cli->db);
	if (err) {
		rc = fail_lib(cli, err, "cannot begin a transaction");
		goto cleanup;
	}
	root = c->tree;
	for (size_t i = 0; i < n_ch && !err; i++) {
		prolly_id next;
		if (ch[i].range)
			err = prolly_delete_range(&next, txn, &root, &ch[i].from, &ch[i].to);
		else
			err = prolly_edit_tree(&next, txn, &root, ch[i].edits, ch[i].n);
		root = next;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot edit the tree of '%s'", branch);
		goto cleanup;
	}
	/* An unchanged tree makes no commit unless --allow-empty: the head stays and is printed. */
	if (prolly_id_equal(&root, &c->tree) && !cli->allow_empty) {
		report(cli, "no change; '%s' stays at %s", branch, hex);
		*out = *head;
		goto cleanup;
	}
	const prolly_commit *parent = c;
	err = prolly_commit_create(&cid, txn, &root, head, 1,
	                           prolly_next_commit_time(cli->db, &parent, 1), message);
	if (err) {
		rc = fail_lib(cli, err, "cannot create a commit");
		goto cleanup;
	}
	err = prolly_txn_move_branch(txn, branch, head, &cid);
	if (err) {
		rc = fail_lib(cli, err, "cannot move branch '%s'", branch);
		goto cleanup;
	}
	int was = cli->retry_moved;
	cli->retry_moved = retry;
	rc = publish_branch(cli, txn, branch);
	cli->retry_moved = was;
	if (rc == 0)
		*out = cid;
cleanup:
	prolly_txn_free(txn);
	prolly_commit_free(c);
	return rc;
}

/* Whether the changes may go onto moved (the branch's head now) instead of from: 0 if no key they
 * write changed between the two heads' trees (a diff, costing what changed), EXIT_RACE (reported)
 * if one did, else an exit code. */
static int changes_fit(struct cli *cli, struct touched *t, const char *branch,
                       const prolly_id *from, const prolly_id *moved)
{
	prolly_commit *a = NULL, *b = NULL;
	char hex[PROLLY_ID_HEX_SIZE];
	int err, rc = 0;
	if ((err = prolly_commit_read(&a, cli->db, from)) ||
	    (err = prolly_commit_read(&b, cli->db, moved))) {
		rc = fail_lib(cli, err, "cannot read the moved head of '%s'", branch);
		goto cleanup;
	}
	err = prolly_diff(cli->db, &a->tree, &b->tree, NULL, on_moved_key, t);
	if (err == 1) {
		prolly_id_to_hex(hex, moved);
		rc = fail(cli, EXIT_RACE,
		          "branch '%s' moved to %s meanwhile, writing a key this command writes (or "
		          "deletes in a range); nothing was committed",
		          branch, hex);
	} else if (err) {
		rc = fail_lib(cli, err, "cannot compare the moved head of '%s'", branch);
	}
cleanup:
	prolly_commit_free(a);
	prolly_commit_free(b);
	return rc;
}

int commit_changes(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                   const struct change *ch, size_t n_ch, const char *message)
{
	if (n_ch == 1 && !ch[0].range && !cli->allow_empty)
		return commit_rebasing(cli, out, branch, head, ch[0].edits, ch[0].n, message);
	/* Ranges (and --allow-empty): a head that moved meanwhile takes the changes too, unless a
	 * key they write, or one inside a range of theirs, was written there (then exit 4, nothing
	 * committed), as commit_rebasing does for edits. */
	struct touched t = {ch, n_ch, NULL, 0};
	prolly_id at = *head, now;
	int rc;
	for (int attempt = 1;; attempt++) {
		rc = changes_once(cli, out, branch, &at, ch, n_ch, message, attempt < COMMIT_ATTEMPTS);
		if (rc != RUN_AGAIN)
			break;
		if ((rc = branch_head(cli, &now, branch)))
			break;
		if (!t.keys && touched_init(&t, ch, n_ch)) {
			rc = fail(cli, EXIT_STORE, "out of memory");
			break;
		}
		if ((rc = changes_fit(cli, &t, branch, &at, &now)))
			break;
		at = now;
	}
	free(t.keys);
	return rc;
}

int commit_edits(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                 const prolly_edit *edits, size_t n, const char *message)
{
	struct change one;
	memset(&one, 0, sizeof one);
	one.edits = edits;
	one.n = n;
	return commit_changes(cli, out, branch, head, &one, 1, message);
}
