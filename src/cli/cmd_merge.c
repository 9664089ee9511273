/*
 * cmd_merge.c - merge and gc.
 *
 * merge is built from the lower-level calls (merge base, prolly_merge, commit, branch move) rather
 * than prolly_merge_branches so that the merge commit takes its time from PROLLY_COMMIT_TIME like
 * every other commit the CLI makes.
 */
#include "cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void print_side(const prolly_slice *s, int exists)
{
	putchar('\t');
	if (exists)
		escape_write(stdout, s->data, s->size);
	else
		fputs(ABSENT_MARK, stdout);
}

int print_conflict(void *payload, const prolly_conflict *c)
{
	uint64_t *count = payload;
	++*count;
	putchar('!');
	print_side(&c->key, 1);
	print_side(&c->base, c->base_exists);
	print_side(&c->ours, c->ours_exists);
	print_side(&c->theirs, c->theirs_exists);
	putchar('\n');
	return 0;
}

int parse_resolver(struct cli *cli, prolly_resolver *out, const char *s)
{
	if (!s || strcmp(s, "fail") == 0)
		*out = PROLLY_RESOLVE_FAIL;
	else if (strcmp(s, "ours") == 0)
		*out = PROLLY_RESOLVE_OURS;
	else if (strcmp(s, "theirs") == 0)
		*out = PROLLY_RESOLVE_THEIRS;
	else if (strcmp(s, "delete-wins") == 0)
		*out = PROLLY_RESOLVE_DELETE_WINS;
	else if (strcmp(s, "update-wins") == 0)
		*out = PROLLY_RESOLVE_UPDATE_WINS;
	else
		return usage_error(
		    cli, "--resolve takes fail, ours, theirs, delete-wins or update-wins, not '%s'", s);
	return 0;
}

/* Reads a commit, reporting failure. */
static int read_commit(struct cli *cli, prolly_commit **out, const prolly_id *id, const char *what)
{
	int err = prolly_commit_read(out, cli->db, id);
	if (err) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		return fail_lib(cli, err, "cannot read commit %s (%s)", hex, what);
	}
	return 0;
}

static int merge_once(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL, *resolve = NULL, *base_spec = NULL;
	int unrelated = 0, dry_run = 0;
	struct opt opts[] = {{"resolve", 0, &resolve, NULL}, {"message", 'm', &msg, NULL},
	                     {"base", 0, &base_spec, NULL},  {"allow-unrelated", 0, NULL, &unrelated},
	                     {"dry-run", 0, NULL, &dry_run}, {NULL, 0, NULL, NULL}};
	char *pos[2], *auto_msg = NULL;
	prolly_commit *ours_c = NULL, *theirs_c = NULL, *base_c = NULL;
	prolly_txn *txn = NULL;
	prolly_id ours, theirs, base, base_tree, merged, cid;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	uint64_t n_conflicts = 0;
	int n_pos, rc, err, have_base;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		goto cleanup;
	const char *into = pos[0], *from = pos[1];
	if ((rc = parse_resolver(cli, &mo.resolve, resolve)) || (rc = need_branch_name(cli, into)) ||
	    (rc = open_store(cli, dry_run ? STORE_READ : STORE_WRITE, NULL)) ||
	    (rc = branch_commit(cli, &ours_c, into)) ||
	    (rc = resolve_commit_read(cli, &theirs_c, from)))
		goto cleanup;
	/* Both commits are kept: the merge below reads neither again. */
	ours = ours_c->id;
	theirs = theirs_c->id;

	/* --base is resolved first: one that names no commit is an error even when there is
	 * nothing to merge (it used to pass unread then, exit 0). */
	if (base_spec && (rc = resolve_commit(cli, &base, base_spec)))
		goto cleanup;
	/* Already merged, or a fast-forward: no merge commit. */
	if (prolly_id_equal(&ours, &theirs)) {
		if (dry_run)
			fputs("up-to-date\t", stdout);
		print_id(&ours);
		goto cleanup;
	}
	/* The base: --base, else the merge base; without one, only --allow-unrelated goes on. */
	err = base_spec ? 0 : prolly_merge_base(&base, cli->db, &ours, &theirs);
	if (err == PROLLY_ENOTFOUND && !unrelated) {
		rc = fail(cli, EXIT_USAGE,
		          "'%s' and '%s' share no history; nothing was merged (--allow-unrelated "
		          "merges against an empty base, --base REF against REF)",
		          into, from);
		goto cleanup;
	}
	if (err == PROLLY_EPRUNED && !unrelated) {
		rc = fail(cli, EXIT_USAGE,
		          "the merge base of '%s' and '%s' is gone (gc removed part of their "
		          "history); nothing was merged (--base REF names one, --allow-unrelated "
		          "merges against an empty base)",
		          into, from);
		goto cleanup;
	}
	if (err && err != PROLLY_ENOTFOUND && err != PROLLY_EPRUNED) {
		rc = fail_lib(cli, err, "cannot find the merge base of '%s' and '%s'", into, from);
		goto cleanup;
	}
	have_base = err == 0;
	/* With --base, always a three-way merge against it (never a fast-forward). */
	if (have_base && !base_spec && prolly_id_equal(&base, &theirs)) {
		if (dry_run)
			fputs("up-to-date\t", stdout);
		print_id(&ours);
		goto cleanup;
	}
	if (have_base && !base_spec && prolly_id_equal(&base, &ours)) {
		uint64_t n;
		/* A commit gc kept without its tree (for the history walks) cannot become a head. */
		if ((err = prolly_count(&n, cli->db, &theirs_c->tree)) == PROLLY_ENOTFOUND) {
			rc = fail(cli, EXIT_USAGE,
			          "the tree of '%s' was removed by gc; '%s' was not fast-forwarded to it", from,
			          into);
			goto cleanup;
		}
		if (err) {
			rc = fail_lib(cli, err, "cannot read the tree of '%s'", from);
			goto cleanup;
		}
		if (dry_run) {
			fputs("fast-forward\t", stdout);
			print_id(&theirs);
			goto cleanup;
		}
		if ((err = prolly_txn_begin(&txn, cli->db)) ||
		    (err = prolly_txn_move_branch(txn, into, &ours, &theirs)) ||
		    (err = prolly_txn_set_reason(txn, "fast-forward", NULL))) {
			rc = fail_lib(cli, err, "cannot move branch '%s'", into);
			goto cleanup;
		}
		if ((rc = publish_branch(cli, txn, into)))
			goto cleanup;
		print_id(&theirs);
		goto cleanup;
	}

	/* A true merge. Without common history (--allow-unrelated) the base is the empty tree. */
	if (have_base) {
		uint64_t n;
		if ((rc = read_commit(cli, &base_c, &base, "the merge base")))
			goto cleanup;
		base_tree = base_c->tree;
		err = prolly_count(&n, cli->db, &base_tree);
		if (err == PROLLY_ENOTFOUND && unrelated && !base_spec) {
			prolly_id_empty_tree(&base_tree); /* the base's tree is gone: as asked, none */
			err = 0;
		}
		if (err == PROLLY_ENOTFOUND) {
			rc = fail(cli, EXIT_USAGE,
			          "the tree of the merge base of '%s' and '%s' was removed by gc; nothing "
			          "was merged (--base REF names another base)",
			          into, from);
			goto cleanup;
		}
		if (err) {
			rc = fail_lib(cli, err, "cannot read the tree of the merge base");
			goto cleanup;
		}
	} else {
		prolly_id_empty_tree(&base_tree);
	}
	mo.on_conflict = print_conflict;
	mo.payload = &n_conflicts;
	/* A dry run decides every key as the merge would and makes nothing. */
	if (dry_run) {
		err = prolly_merge_preview(&ms, cli->db, &base_tree, &ours_c->tree, &theirs_c->tree, &mo);
	} else if ((err = prolly_txn_begin(&txn, cli->db))) {
		rc = fail_lib(cli, err, "cannot begin a transaction");
		goto cleanup;
	} else {
		err = prolly_merge(&merged, &ms, txn, &base_tree, &ours_c->tree, &theirs_c->tree, &mo);
	}
	if (err == PROLLY_EMERGE) {
		rc = fail(cli, EXIT_MERGE,
		          "%llu conflict%s merging '%s' into '%s'; nothing was "
		          "committed (--resolve ours or theirs settles them)",
		          (unsigned long long)n_conflicts, n_conflicts == 1 ? "" : "s", from, into);
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot merge '%s' into '%s'", from, into);
		goto cleanup;
	}
	if (dry_run) {
		/* the changes taken from FROM, those made alike on both sides, the conflicts settled */
		printf("merge\t%llu\t%llu\t%llu\n", (unsigned long long)ms.applied,
		       (unsigned long long)ms.convergent, (unsigned long long)ms.conflicts);
		goto cleanup;
	}
	if (!msg) {
		auto_msg = format("merge %s into %s", from, into);
		if (!auto_msg) {
			rc = fail(cli, EXIT_STORE, "out of memory");
			goto cleanup;
		}
		msg = auto_msg;
	}
	prolly_id parents[2] = {ours, theirs};
	const prolly_commit *pc[2] = {ours_c, theirs_c};
	if ((err = prolly_commit_create(&cid, txn, &merged, parents, 2,
	                                prolly_next_commit_time(cli->db, pc, 2), msg)) ||
	    (err = prolly_txn_move_branch(txn, into, &ours, &cid))) {
		rc = fail_lib(cli, err, "cannot commit the merge");
		goto cleanup;
	}
	if ((rc = publish_branch(cli, txn, into)))
		goto cleanup;
	print_id(&cid);
cleanup:
	prolly_txn_free(txn);
	prolly_commit_free(ours_c);
	prolly_commit_free(theirs_c);
	prolly_commit_free(base_c);
	free(auto_msg);
	return rc;
}

int cmd_merge(struct cli *cli, int argc, char **argv)
{
	return run_again_on_move(cli, merge_once, argc, argv);
}

int cmd_gc(struct cli *cli, int argc, char **argv)
{
	const char *keep = NULL, *days = NULL;
	struct opt opts[] = {
	    {"keep", 0, &keep, NULL}, {"reflog-days", 0, &days, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	int n_pos, rc, err;
	prolly_options po;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	uint64_t n = 0, d = 14;

	rc = parse_args(cli, argc, argv, opts, pos, 0, 0, &n_pos);
	if (rc)
		return rc;
	/* One rule, one message, whatever is wrong with the value. */
	if (keep && (keep[0] < '1' || keep[0] > '9' || strspn(keep, "0123456789") != strlen(keep) ||
	             strlen(keep) > 9))
		return usage_error(cli,
		                   "--keep takes a whole number of commits from 1 to 999999999, not "
		                   "'%s' (omit it to keep all)",
		                   keep);
	if (keep)
		n = strtoull(keep, NULL, 10);
	if (days && (!*days || strspn(days, "0123456789") != strlen(days) || strlen(days) > 6))
		return usage_error(
		    cli, "--reflog-days takes a whole number of days from 0 to 999999, not '%s'", days);
	if (days)
		d = strtoull(days, NULL, 10);
	prolly_options_init(&po, PROLLY_OPTIONS_VERSION);
	po.retain_commits = (unsigned)n;
	po.reflog_days = (unsigned)d;
	if ((rc = open_store(cli, STORE_WRITE, &po)))
		return rc;
	err = prolly_gc(cli->db, &res);
	if (err)
		return fail_lib(cli, err, "gc failed");
	printf("nodes_kept\t%llu\nnodes_removed\t%llu\nbytes_removed\t%llu\nreflog_expired\t%llu\n",
	       (unsigned long long)res.nodes_kept, (unsigned long long)res.nodes_removed,
	       (unsigned long long)res.bytes_removed, (unsigned long long)res.reflog_expired);
	return 0;
}
