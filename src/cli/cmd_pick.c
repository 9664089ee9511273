/*
 * cmd_pick.c - `revert BRANCH COMMIT` and `cherry-pick BRANCH COMMIT`: one commit's change undone
 * or applied on BRANCH as a three-way merge (prolly_revert, prolly_cherry_pick), committed as
 * a commit with one parent (BRANCH's head) in one store write that moves BRANCH by
 * compare-and-swap. Conflicts are reported as merge reports them (exit 3, nothing committed).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int run_pick(struct cli *cli, int argc, char **argv, int revert)
{
	const char *msg = NULL, *resolve = NULL, *mainline = NULL;
	struct opt opts[] = {{"mainline", 'm', &mainline, NULL},
	                     {"message", 0, &msg, NULL},
	                     {"resolve", 0, &resolve, NULL},
	                     {"allow-empty", 0, NULL, &cli->allow_empty},
	                     {NULL, 0, NULL, NULL}};
	char *pos[2], *auto_msg = NULL;
	prolly_commit *head_c = NULL, *pick_c = NULL;
	prolly_txn *txn = NULL;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	prolly_id head, target, root, cid;
	uint64_t parent = 0, n_conflicts = 0;
	char hex[PROLLY_ID_HEX_SIZE];
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		goto cleanup;
	if ((rc = parse_resolver(cli, &mo.resolve, resolve)) ||
	    /* -m is git's mainline here, where put's -m is a message: a message typed after it is
	     * told where it goes. */
	    (mainline &&
	     (rc = arg_count(cli, &parent, mainline,
	                     "-m (--mainline, the parent number; a message goes in --message)"))) ||
	    (rc = need_branch_name(cli, pos[0])))
		goto cleanup;
	if (mainline && (parent == 0 || parent > 64)) {
		rc = usage_error(cli, "-m takes a parent number from 1, not '%s'", mainline);
		goto cleanup;
	}
	/* Both commits decoded as they are resolved: nothing reads them again. */
	if ((rc = open_store(cli, STORE_WRITE, NULL)) || (rc = branch_commit(cli, &head_c, pos[0])) ||
	    (rc = resolve_commit_read(cli, &pick_c, pos[1])))
		goto cleanup;
	head = head_c->id;
	target = pick_c->id;
	prolly_id_to_hex(hex, &target);
	if (pick_c->n_parents > 1 && !mainline) {
		rc = usage_error(cli,
		                 "%s is a merge commit (%zu parents): give -m PARENT, the parent whose "
		                 "side the change is measured from",
		                 hex, pick_c->n_parents);
		goto cleanup;
	}
	if (mainline && parent > (pick_c->n_parents > 1 ? pick_c->n_parents : 1)) {
		rc = usage_error(cli, "%s has %zu parent%s; -m %llu names none", hex, pick_c->n_parents,
		                 pick_c->n_parents == 1 ? "" : "s", (unsigned long long)parent);
		goto cleanup;
	}
	mo.on_conflict = print_conflict;
	mo.payload = &n_conflicts;
	if ((err = prolly_txn_begin(&txn, cli->db))) {
		rc = fail_lib(cli, err, "cannot begin a transaction");
		goto cleanup;
	}
	if ((err = prolly_txn_set_reason(txn, revert ? "revert" : "cherry-pick", hex))) {
		rc = fail_lib(cli, err, "cannot name the operation for the reflog");
		goto cleanup;
	}
	err = revert
	          ? prolly_revert(&root, NULL, txn, &head_c->tree, &target, (unsigned)parent, &mo)
	          : prolly_cherry_pick(&root, NULL, txn, &head_c->tree, &target, (unsigned)parent, &mo);
	if (err == PROLLY_EMERGE) {
		rc = fail(cli, EXIT_MERGE,
		          "%llu conflict%s %s %s on '%s'; nothing was committed (--resolve settles them)",
		          (unsigned long long)n_conflicts, n_conflicts == 1 ? "" : "s",
		          revert ? "reverting" : "picking", pos[1], pos[0]);
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot %s %s", revert ? "revert" : "cherry-pick", pos[1]);
		goto cleanup;
	}
	if (prolly_id_equal(&root, &head_c->tree) && !cli->allow_empty) {
		char hh[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hh, &head);
		report(cli, "no change; '%s' stays at %s", pos[0], hh);
		print_id(&head);
		goto cleanup;
	}
	if (!msg) {
		size_t n = prolly_pick_message(NULL, 0, pick_c, revert);
		if (!(auto_msg = malloc(n + 1))) {
			rc = fail(cli, EXIT_STORE, "out of memory");
			goto cleanup;
		}
		prolly_pick_message(auto_msg, n + 1, pick_c, revert);
		msg = auto_msg;
	}
	const prolly_commit *pc = head_c;
	if ((err = prolly_commit_create(&cid, txn, &root, &head, 1,
	                                prolly_next_commit_time(cli->db, &pc, 1), msg)) ||
	    (err = prolly_txn_move_branch(txn, pos[0], &head, &cid))) {
		rc = fail_lib(cli, err, "cannot commit to '%s'", pos[0]);
		goto cleanup;
	}
	if ((rc = publish_branch(cli, txn, pos[0])))
		goto cleanup;
	print_id(&cid);
cleanup:
	prolly_txn_free(txn);
	prolly_commit_free(head_c);
	prolly_commit_free(pick_c);
	free(auto_msg);
	return rc;
}

static int revert_once(struct cli *cli, int argc, char **argv)
{
	return run_pick(cli, argc, argv, 1);
}

static int cherry_pick_once(struct cli *cli, int argc, char **argv)
{
	return run_pick(cli, argc, argv, 0);
}

int cmd_revert(struct cli *cli, int argc, char **argv)
{
	return run_again_on_move(cli, revert_once, argc, argv);
}

int cmd_cherry_pick(struct cli *cli, int argc, char **argv)
{
	return run_again_on_move(cli, cherry_pick_once, argc, argv);
}
