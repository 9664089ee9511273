/*
 * cmd_recover.c - `prolly recover [--apply]`: finds an LMDB store's newest snapshot damaged and
 * brings back the one before it (docs/stores.md, "LMDB: damage and recovery").
 *
 * Each snapshot is opened read-only in a child process (isolate.c), so a crash inside liblmdb is
 * a finding, not the end of the command; a child killed by SIGKILL (kill -9, the out-of-memory
 * killer) found nothing: its snapshot is unchecked, as isolate.c's rule for commands. A snapshot is sound when every branch head's commit
 * and every node of its tree read back and hash to their ids.
 */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct check {
	unsigned flags;    /* PROLLY_OPEN_READONLY, maybe | PROLLY_OPEN_PREVIOUS */
	const char *label; /* "current" or "previous" */
	int list;          /* print the branches found */
};

/* What check_snapshot returns when the snapshot could not be opened for a reason that says
 * nothing about damage (permissions, a read-only file system, no memory, ...). */
#define UNCHECKED EXIT_USAGE
/* What check returns when the output could not be written (said already, in the one error
 * line): no verdict on the snapshot, which a failed write must not pass for damage (recover
 * would go on to the previous snapshot and, with --apply, make it current over a sound one).
 * Passed from the checking child to the parent only, never the tool's exit status. */
#define OUTPUT_FAILED 64

/* In the child: opens the snapshot and checks it. Prints "LABEL<TAB>sound<TAB>N branches",
 * "LABEL<TAB>damaged<TAB>WHY" or "LABEL<TAB>unchecked<TAB>WHY" on stdout; returns 0 when sound,
 * EXIT_STORE when damaged, UNCHECKED when the open failed with neither PROLLY_ECORRUPT nor
 * PROLLY_ENOTFOUND (what damaged meta pages and databases give). */
static int check_snapshot(struct cli *cli, const struct check *ck)
{
	struct branch_list h = {NULL, NULL, 0, 0, 0, 0};
	int err, rc = 0;
	char *why = NULL; /* malloc'd: a branch name and the library's message, whole */

	err = prolly_open_ex(&cli->db, cli->store_url, NULL, ck->flags);
	if (err && err != PROLLY_ECORRUPT && err != PROLLY_ENOTFOUND) {
		printf("%s\tunchecked\t", ck->label);
		escape_puts(stdout, prolly_last_error());
		putchar('\n');
		return UNCHECKED;
	}
	if (!err)
		err = prolly_branch_list(cli->db, list_branches, &h);
	if (h.oom)
		err = PROLLY_ENOMEM;
	if (err)
		why = format("%s", prolly_last_error());
	for (size_t i = 0; i < h.n && !err; i++) {
		prolly_commit *c = NULL;
		prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
		char chex[PROLLY_ID_HEX_SIZE], thex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(chex, &h.heads[i]);
		err = prolly_commit_read(&c, cli->db, &h.heads[i]);
		if (!err) {
			prolly_id_to_hex(thex, &c->tree);
			err = prolly_tree_stats_get(&ts, cli->db, &c->tree, 1);
		}
		prolly_commit_free(c);
		if (err)
			why = format("branch '%s': %s", h.names[i], prolly_last_error());
		else if (ck->list)
			printf("branch\t%s\t%s\t%s\n", h.names[i], chex, thex);
	}
	if (err) {
		printf("%s\tdamaged\t", ck->label);
		const char *w = why ? why : "out of memory";
		escape_puts(stdout, w);
		putchar('\n');
		rc = EXIT_STORE;
	} else {
		printf("%s\tsound\t%zu branch%s\n", ck->label, h.n, h.n == 1 ? "" : "es");
	}
	branch_list_dispose(&h);
	free(why);
	return rc;
}

/* In the child: check_snapshot, whose verdict counts only once its lines are written. */
static int check_and_say(struct cli *cli, void *arg)
{
	int rc = check_snapshot(cli, arg);
	return finish_output(cli, 0) ? OUTPUT_FAILED : rc;
}

static int check(struct cli *cli, struct check *ck)
{
	int sig, rc;
	if (finish_output(cli, 0)) /* the lines before the check, which the child would inherit */
		return OUTPUT_FAILED;
	rc = isolated(cli, check_and_say, ck, &sig);
	if (sig == SIGKILL) { /* never raised by a fault: another process or the OOM killer */
		printf("%s\tunchecked\tthe checking process was killed (SIGKILL, signal 9), by another "
		       "process or the out-of-memory killer; that alone is no sign of damage\n",
		       ck->label);
		return UNCHECKED;
	}
	if (sig)
		printf("%s\tdamaged\treading it crashed the reader (%s, signal %d)\n", ck->label,
		       signal_name(sig), sig);
	return rc;
}

int cmd_recover(struct cli *cli, int argc, char **argv)
{
	int apply = 0;
	struct opt opts[] = {{"apply", 0, NULL, &apply}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	prolly_lmdb_snapshot snap[2] = {PROLLY_LMDB_SNAPSHOT_INIT, PROLLY_LMDB_SNAPSHOT_INIT};
	int n_pos, rc, err, keep = -1;

	rc = parse_args(cli, argc, argv, opts, pos, 0, 0, &n_pos);
	if (rc)
		return rc;
	if (strncmp(cli->store_url, "lmdb:", 5) != 0)
		return usage_error(cli, "recover works on LMDB stores (lmdb:PATH) only, not %s",
		                   cli->store_shown);
	const char *path = cli->store_url + 5;
	err = prolly_lmdb_snapshots(snap, path);
	if (err == PROLLY_ENOTFOUND)
		return fail(cli, EXIT_STORE, "no store at %s (create one with 'prolly init')",
		            cli->store_shown);
	if (err)
		return fail_lib(cli, err, "cannot read the meta pages of %s", cli->store_shown);
	for (int i = 0; i < 2; i++) {
		printf("meta\t%d\ttxn %llu\t%s\t", i, (unsigned long long)snap[i].txnid,
		       snap[i].current ? "current" : "other");
		if (snap[i].intact)
			printf("intact\n");
		else
			printf("damaged: %s\n", snap[i].problem);
		if (snap[i].restorable)
			keep = i;
	}
	struct check cur = {PROLLY_OPEN_READONLY, "current", 0};
	rc = check(cli, &cur);
	if (rc == OUTPUT_FAILED)
		return EXIT_STORE;
	if (rc == 0) {
		printf("nothing to recover\n");
		return 0;
	}
	if (rc == UNCHECKED)
		return fail(cli, EXIT_STORE,
		            "could not check %s, for a reason that is no sign of damage (above): "
		            "nothing restored",
		            cli->store_shown);
	if (keep < 0 && (snap[0].intact || snap[1].intact))
		return fail(cli, EXIT_STORE,
		            "the other meta page of %s is the empty environment from before the store "
		            "was made: nothing to restore",
		            cli->store_shown);
	if (keep < 0)
		return fail(cli, EXIT_STORE, "both meta pages of %s are damaged: nothing to restore",
		            cli->store_shown);
	struct check prev = {PROLLY_OPEN_READONLY | PROLLY_OPEN_PREVIOUS, "previous", 1};
	rc = check(cli, &prev);
	if (rc == OUTPUT_FAILED)
		return EXIT_STORE;
	if (rc == UNCHECKED)
		return fail(cli, EXIT_STORE,
		            "the current snapshot is damaged; the snapshot of meta page %d (transaction "
		            "%llu) could not be checked (above): nothing restored",
		            keep, (unsigned long long)snap[keep].txnid);
	if (rc != 0)
		return fail(cli, EXIT_STORE,
		            "the snapshot of meta page %d (transaction %llu) is damaged too: nothing "
		            "to restore",
		            keep, (unsigned long long)snap[keep].txnid);
	if (!apply)
		return fail(cli, EXIT_STORE,
		            "the store is damaged; the snapshot of meta page %d (transaction %llu) is "
		            "sound: 'prolly recover --apply' makes it current",
		            keep, (unsigned long long)snap[keep].txnid);
	fflush(stdout);
	err = prolly_lmdb_restore_previous(path);
	if (err)
		return fail_lib(cli, err, "cannot restore meta page %d of %s", keep, cli->store_shown);
	printf("restored\ttxn %llu\t(meta page %d copied over meta page %d)\n",
	       (unsigned long long)snap[keep].txnid, keep, !keep);
	return 0;
}
