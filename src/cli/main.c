/*
 * main.c - `prolly [--store URL] COMMAND ...`: global options, the command table, the command
 * list (one command's help: help.c).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_STORE "lmdb:./.prolly"

const struct command commands[] = {
    {"init", cmd_init, "[--node-size N]", "create the store with an empty branch main",
     "Creates the store if needed and a branch 'main' whose first commit holds the empty tree\n"
     "(message \"init\"). Running it again changes nothing, but on PostgreSQL it migrates a\n"
     "schema an older prolly made (exit 5 when it cannot, with the reason).\n"
     "--node-size N makes a new store whose tree nodes aim at N bytes (1024, 2048, 4096 or\n"
     "8192; default 4096): smaller nodes make small edits cheaper, larger ones bulk loads and\n"
     "scans. A store keeps the size it was made with; history moves only between stores of\n"
     "one size (clone makes its destination with the source's).\n"},
    {"put", cmd_put, "BRANCH KEY VALUE [-m MSG] [--allow-empty]", "set KEY to VALUE in one commit",
     "Sets KEY to VALUE on BRANCH in one commit (message \"put KEY\" unless -m) and prints\n"
     "the new commit id. If KEY already has VALUE nothing is committed (see --allow-empty).\n"
     "\n"
     "  -m, --message MSG   commit message\n"
     "  --allow-empty       commit even when nothing changes\n"},
    {"del", cmd_del, "BRANCH KEY [-m MSG] [--allow-empty]", "delete KEY in one commit",
     "Deletes KEY from BRANCH in one commit (message \"del KEY\" unless -m) and prints the\n"
     "new commit id. Exits 1 and commits nothing if KEY is absent.\n"
     "\n"
     "  -m, --message MSG   commit message\n"
     "  --allow-empty       commit even when nothing changes\n"},
    {"del-range", cmd_del_range, "BRANCH FROM TO [-m MSG] [--allow-empty]",
     "delete every key in [FROM, TO) in one commit",
     "Deletes every key K with FROM <= K < TO from BRANCH in one commit (message\n"
     "\"del-range FROM TO\" unless -m) and prints the new commit id. FROM \"\" starts at the\n"
     "first key. Subtrees inside the range are dropped without being read. FROM sorting\n"
     "after TO is a usage error (exit 2). When no key is in the range nothing is committed\n"
     "(see --allow-empty). If another writer moves BRANCH meanwhile, the deletion goes onto\n"
     "its new head unless a key in the range was written there (then exit 4).\n"
     "\n"
     "  -m, --message MSG   commit message\n"
     "  --allow-empty       commit even when nothing changes\n"},
    {"apply", cmd_apply, "BRANCH FILE|- [-m MSG] [--allow-empty]",
     "apply a file of edits in one commit",
     "Applies every line of FILE (- for standard input) in one commit and prints its id.\n"
     "Lines are put<TAB>KEY<TAB>VALUE, del<TAB>KEY or delr<TAB>FROM<TAB>TO (every key in\n"
     "[FROM, TO)), taking effect in order; empty lines and lines starting with # are skipped.\n"
     "A malformed line, or one ending in \\r\\n, rejects the whole file (its line number is\n"
     "named) and nothing is committed. The edits apply to the head BRANCH had when the\n"
     "command started; if it moves meanwhile they land on the new head, unless one of their\n"
     "keys was written meanwhile or the file has a delr line: then nothing is committed and\n"
     "the exit status is 4.\n"
     "A file that changes nothing makes no commit (see --allow-empty).\n"
     "Message \"apply FILE (N edits)\" unless -m.\n"
     "\n"
     "  -m, --message MSG   commit message\n"
     "  --allow-empty       commit even when nothing changes\n"},
    {"get", cmd_get, "BRANCH KEY [--raw]", "print the value of KEY",
     "Prints the value of KEY in BRANCH (or BRANCH~N, or a commit id), escaped. Exits 1 if\n"
     "KEY is absent.\n"
     "\n"
     "  --raw   write the value's bytes as they are, with no escaping and no newline\n"},
    {"get-many", cmd_get_many, "BRANCH", "print the values of the keys on standard input",
     "Reads keys from standard input, one per line (escaped like every key; an empty line is\n"
     "the empty key), and prints KEY<TAB>VALUE for each, in input order; a key that is absent\n"
     "is printed as KEY<TAB>\\- (the mark of a missing value, never an escaped value). Keys\n"
     "are looked up 1024 at a time, one store call per tree level each. A bad line stops the\n"
     "command (exit 2) after the answers to the lines before it. Exits 0 whether or not the\n"
     "keys exist.\n"},
    {"scan", cmd_scan, "BRANCH [--from KEY] [--to KEY] [--prefix P] [--limit N] [--reverse]",
     "list records in key order",
     "Prints KEY<TAB>VALUE lines in key order.\n"
     "\n"
     "  --from KEY    start at KEY (inclusive)\n"
     "  --to KEY      stop before KEY (exclusive)\n"
     "  --prefix P    only keys starting with P\n"
     "  --limit N     at most N lines\n"
     "  --reverse     descending key order (--from and --to still bound the keys)\n"},
    {"diff", cmd_diff, "FROM TO [--from KEY] [--to KEY] [--prefix P] [--limit N]",
     "show what changed from FROM to TO",
     "Prints the differences between the trees of FROM and TO in key order:\n"
     "  +<TAB>KEY<TAB>VALUE          added\n"
     "  -<TAB>KEY<TAB>OLD            removed\n"
     "  ~<TAB>KEY<TAB>OLD<TAB>NEW    changed\n"
     "\n"
     "  --from KEY    only keys >= KEY\n"
     "  --to KEY      only keys < KEY\n"
     "  --prefix P    only keys starting with P\n"
     "  --limit N     at most N lines\n"},
    {"branch", cmd_branch, "NEW FROM | -d NAME [--force] | --restore NAME",
     "create, delete or restore a branch",
     "Creates branch NEW at the commit FROM names (a branch, BRANCH~N or a commit id) and\n"
     "prints that commit id. No node is copied. Exits 2 if NEW exists.\n"
     "\n"
     "  -d, --delete   delete branch NAME instead and print the head it had; the reflog\n"
     "                 keeps that head (and gc its history) for --reflog-days\n"
     "  -f, --force    with -d: delete the last branch too (refused otherwise, exit 2);\n"
     "                 refused without -d: 'prolly reset BRANCH REF' moves a branch\n"
     "  --restore      re-create deleted branch NAME at the head its newest deletion in the\n"
     "                 reflog removed, and print it (exit 1 if the reflog has none)\n"},
    {"branches", cmd_branches, "", "list branches",
     "Prints NAME<TAB>COMMIT<TAB>ROOT for every branch, in name order.\n"},
    {"merge", cmd_merge,
     "INTO FROM [--resolve RESOLVER] [-m MSG] [--base REF] [--allow-unrelated] [--dry-run]",
     "three-way merge FROM into branch INTO",
     "Merges FROM (a branch, BRANCH~N or a commit id) into branch INTO against their merge\n"
     "base and prints INTO's new head. If INTO's head is an ancestor of FROM, INTO fast-\n"
     "forwards; if FROM is already merged, nothing changes. Otherwise a merge commit with\n"
     "both heads as parents is made (message \"merge FROM into INTO\" unless -m).\n"
     "\n"
     "A key changed differently on both sides is a conflict. With --resolve fail (the\n"
     "default) each conflict is printed as !<TAB>KEY<TAB>BASE<TAB>OURS<TAB>THEIRS, where a\n"
     "side that has no value is shown as \\- ; nothing is committed and the exit status is 3.\n"
     "\n"
     "If INTO and FROM have no merge base (unrelated histories, or gc removed the base),\n"
     "nothing is merged and the exit status is 2, unless --base or --allow-unrelated is given.\n"
     "If another writer moves INTO meanwhile, the merge is made again on its new head (up to\n"
     "8 times in all, then exit 4).\n"
     "\n"
     "  --resolve RESOLVER   how to settle conflicts: fail (the default), ours, theirs,\n"
     "                       delete-wins (a key one side deleted and the other changed is\n"
     "                       deleted) or update-wins (it keeps the changed value); with\n"
     "                       these two a key both sides set differently stays a conflict\n"
     "  -m, --message MSG    commit message\n"
     "  --base REF           merge against REF instead of the merge base\n"
     "  --allow-unrelated    without a merge base, merge against an empty tree\n"
     "  --dry-run            change nothing (the store is opened read-only); print what the\n"
     "                       merge would do: up-to-date<TAB>HEAD, fast-forward<TAB>COMMIT, or\n"
     "                       merge<TAB>N<TAB>M<TAB>R (changes taken from FROM, changes both\n"
     "                       sides made alike, conflicts the resolver settled); conflicts\n"
     "                       left are printed and exit 3 as without it\n"},
    {"merge-base", cmd_merge_base, "A B", "print the best common ancestor of A and B",
     "Prints the id of the lowest common ancestor of commits A and B (the newest one when\n"
     "there are several). Exits 1 if they share no history (or retention removed it).\n"},
    {"revert", cmd_revert,
     "BRANCH COMMIT [-m PARENT] [--resolve RESOLVER] [--message MSG] [--allow-empty]",
     "undo one commit's change on BRANCH",
     "Undoes the change COMMIT made (from its parent to it) on BRANCH, as a three-way merge\n"
     "(base: COMMIT's tree, ours: BRANCH's head, theirs: COMMIT's parent's tree), and commits\n"
     "the result with BRANCH's head as the only parent (message \"revert COMMIT: MESSAGE\"\n"
     "unless --message). Prints the new commit id. Conflicts are printed as merge prints them;\n"
     "nothing is committed and the exit status is 3. A merge commit needs -m PARENT (1 or\n"
     "2...): the change is measured from that parent. If nothing changes, nothing is\n"
     "committed (see --allow-empty). If another writer moves BRANCH meanwhile, the revert is\n"
     "made again on its new head (up to 8 times in all, then exit 4).\n"
     "\n"
     "  -m, --mainline PARENT   for a merge commit: the parent the change is measured from\n"
     "  --resolve RESOLVER      settle conflicts as merge does (default fail)\n"
     "  --message MSG           commit message\n"
     "  --allow-empty           commit even when nothing changes\n"},
    {"cherry-pick", cmd_cherry_pick,
     "BRANCH COMMIT [-m PARENT] [--resolve RESOLVER] [--message MSG] [--allow-empty]",
     "apply one commit's change on BRANCH",
     "Applies the change COMMIT made (from its parent to it) on BRANCH, as a three-way merge\n"
     "(base: COMMIT's parent's tree, ours: BRANCH's head, theirs: COMMIT's tree), and commits\n"
     "the result with BRANCH's head as the only parent (message \"MESSAGE (cherry picked\n"
     "from COMMIT)\" unless --message). Prints the new commit id. Conflicts are printed as\n"
     "merge prints them; nothing is committed and the exit status is 3. A merge commit needs\n"
     "-m PARENT. If nothing changes, nothing is committed (see --allow-empty). If another\n"
     "writer moves BRANCH meanwhile, the pick is made again on its new head (up to 8 times\n"
     "in all, then exit 4).\n"
     "\n"
     "  -m, --mainline PARENT   for a merge commit: the parent the change is measured from\n"
     "  --resolve RESOLVER      settle conflicts as merge does (default fail)\n"
     "  --message MSG           commit message\n"
     "  --allow-empty           commit even when nothing changes\n"},
    {"log", cmd_log, "BRANCH [--limit N]", "show the history of BRANCH",
     "Prints one block per commit, newest first, blocks separated by an empty line:\n"
     "  commit<TAB>ID\n"
     "  parent<TAB>ID          (one line per parent)\n"
     "  tree<TAB>ID\n"
     "  date<TAB>YYYY-MM-DDTHH:MM:SS.ffffffZ\n"
     "  message<TAB>MESSAGE    (escaped)\n"
     "\n"
     "  --limit N   at most N commits\n"},
    {"show", cmd_show, "COMMIT [-m PARENT] [--from KEY] [--to KEY] [--prefix P] [--limit N]",
     "show a commit and the change it made",
     "Prints COMMIT (a branch, BRANCH~N, a tag or a commit id) as log prints a commit, then,\n"
     "after an empty line, the change it made as diff prints it: from its parent's tree to its\n"
     "own (a first commit: from the empty tree). A merge commit's change is shown against its\n"
     "first parent, or the parent -m names. Nothing follows the commit when it changed\n"
     "nothing (within the range).\n"
     "\n"
     "  -m, --mainline PARENT   the parent the change is measured from (default 1)\n"
     "  --from KEY    only keys >= KEY\n"
     "  --to KEY      only keys < KEY\n"
     "  --prefix P    only keys starting with P\n"
     "  --limit N     at most N changes\n"},
    {"history", cmd_history, "BRANCH KEY [--limit N]", "show the commits that changed KEY",
     "Prints COMMIT<TAB>VALUE for every commit in BRANCH's history that changed KEY, newest\n"
     "first, with KEY's value after that commit (\\- where the commit deleted it). A commit\n"
     "changed KEY when its value differs from the one in each of its parents. Only the history\n"
     "that leads to KEY's value is shown: from a commit whose value equals a parent's, only\n"
     "that parent is followed (a merge that took one side's value hides the other side), so\n"
     "the first line holds the current value. Each commit costs one lookup of KEY, not a\n"
     "diff. Prints nothing if KEY was never set.\n"
     "\n"
     "  --limit N   at most N commits\n"},
    {"root", cmd_root, "BRANCH", "print the tree root id",
     "Prints the id of the root node of BRANCH's tree.\n"},
    {"stats", cmd_stats, "BRANCH", "print the shape of BRANCH's tree",
     "Prints NAME<TAB>NUMBER lines: records, height, nodes, leaves, bytes, node_size.\n"},
    {"verify", cmd_verify, "BRANCH [--history] | --all [--history]",
     "re-hash every node of BRANCH's tree",
     "Reads every node reachable from BRANCH's tree and checks that it hashes to its id.\n"
     "Prints ok<TAB>TREE<TAB>N nodes<TAB>N bytes per tree verified; exits 5 naming the\n"
     "first corrupt or missing node. Each node is read once: a tree counts the nodes no\n"
     "tree before it shares, and a tree met again is not listed.\n"
     "\n"
     "  --history   verify the tree of every commit in BRANCH's history too; an older\n"
     "              commit that gc kept without its tree (see gc) shows pruned<TAB>TREE\n"
     "  --all       every branch, then every tag, each after a line\n"
     "              branch|tag<TAB>NAME<TAB>COMMIT (no BRANCH then)\n"},
    {"recover", cmd_recover, "[--apply]", "check an LMDB store's snapshots; restore the previous",
     "LMDB stores only. Checks both meta pages of the store and opens the current snapshot\n"
     "read-only in a child process, reading every branch head and every node of its tree.\n"
     "If that fails (or crashes the reader), checks the previous snapshot the same way and\n"
     "prints its branches. Prints meta<TAB>PAGE<TAB>txn N<TAB>current|other<TAB>intact|damaged,\n"
     "current|previous<TAB>sound|damaged<TAB>..., branch<TAB>NAME<TAB>COMMIT<TAB>ROOT lines.\n"
     "Exits 0 when the current snapshot is sound (nothing to recover), 5 when it is damaged.\n"
     "No other process may use the store during --apply.\n"
     "\n"
     "  --apply   make the sound previous snapshot current (the newest transaction is lost)\n"},
    {"gc", cmd_gc, "[--keep N] [--reflog-days D]", "remove nodes no branch needs",
     "Removes every node and commit not reachable from a branch, a tag or a reflog entry,\n"
     "and prints nodes_kept, nodes_removed, bytes_removed and reflog_expired lines. Reflog\n"
     "entries older than D days are removed first. Merge bases of branches and tags are\n"
     "always kept, so retention never changes what a merge does.\n"
     "\n"
     "  --keep N          keep only the newest N (1 or more) commits of each branch, tag and\n"
     "                    reflog entry (default: all)\n"
     "  --reflog-days D   keep reflog entries D days (default 14; 0 expires all of them)\n"},
    /* History and refs (cmd_refs.c). */
    {"reflog", cmd_reflog, "[BRANCH]", "show the moves of branches and tags",
     "Prints the reflog of BRANCH (or of a full ref name such as refs/tags/NAME; of every\n"
     "branch and tag without one), newest first, one move per line:\n"
     "  DATE<TAB>REF<TAB>OPERATION<TAB>OLD<TAB>NEW<TAB>MESSAGE\n"
     "OLD is - for a ref created, NEW is - for a ref deleted; MESSAGE is escaped (often\n"
     "empty). Operations: commit, merge, fast-forward, branch, delete, restore, reset, tag,\n"
     "create, move, and those of other commands. gc keeps entries --reflog-days.\n"},
    {"tag", cmd_tag, "NAME [REF] | -d NAME", "create (or delete) a tag",
     "Creates tag NAME (the ref refs/tags/NAME) at the commit REF names (default main) and\n"
     "prints that commit id. Tags never move: exits 2 if NAME exists. gc keeps what tags\n"
     "name like branch heads.\n"
     "\n"
     "  -d, --delete   delete tag NAME instead and print the commit it named\n"},
    {"tags", cmd_tags, "", "list tags", "Prints NAME<TAB>COMMIT for every tag, in name order.\n"},
    {"reset", cmd_reset, "BRANCH REF", "move a branch to any commit",
     "Moves BRANCH to the commit REF names, by compare-and-swap against the head it reads\n"
     "(exit 4 if the branch moves meanwhile), and prints old<TAB>ID and new<TAB>ID lines.\n"
     "The old head stays in the reflog.\n"},
    /* History between stores (cmd_remote.c). */
    {"remote", cmd_remote, "add NAME URL | list | remove NAME", "manage the stores this one knows",
     "Records other stores by name, in this store (the ref config/remotes/NAME; a clone does\n"
     "not copy them). A URL never holds a password: one with USER:PASSWORD@, password= or\n"
     "sslpassword= is refused (exit 2); keep it in ~/.pgpass, PGPASSFILE or PGPASSWORD:\n"
     "  add NAME URL    record remote NAME (a branch name without '/', at most 46\n"
     "                  bytes); exit 2 if it exists. A relative lmdb:PATH is recorded as\n"
     "                  the absolute path it names from here (it need not exist yet)\n"
     "  list            print NAME<TAB>URL lines, in name order, passwords hidden\n"
     "  remove NAME     forget NAME and its remote-tracking branches NAME/BRANCH (exit 1 if\n"
     "                  there is no such remote)\n"},
    {"clone", cmd_clone, "SRC-URL DEST-URL", "copy a store with all its history",
     "Copies every branch and tag of the store at SRC-URL, with their whole history, into the\n"
     "store at DEST-URL (created if needed; one that has branches is refused, exit 2), records\n"
     "SRC-URL there as remote 'origin' (a relative lmdb:PATH made absolute, as remote add\n"
     "does) and its branches as origin/BRANCH (an SRC-URL with a password is refused, exit 2;\n"
     "the source's remotes are not copied). Prints REF<TAB>COMMIT\n"
     "per ref, then copied<TAB>N commits<TAB>N nodes. The refs move last: an interrupted clone\n"
     "leaves no branch, and running it again finishes it. --store is not used. A mem: store\n"
     "lives as long as one process, so both URLs name LMDB or PostgreSQL stores.\n"},
    {"fetch", cmd_fetch, "REMOTE", "copy a remote's branches as REMOTE/BRANCH",
     "Copies what this store lacks of every branch of REMOTE and moves the remote-tracking\n"
     "branches REMOTE/BRANCH (read-only: a REF wherever one is read, unless a branch or tag is\n"
     "spelled the same) to the remote's heads; those of branches the remote no longer has are\n"
     "removed. No local branch moves. Prints REMOTE/BRANCH<TAB>OLD<TAB>NEW for each that moved\n"
     "(- where there was none, or is none now).\n"},
    {"push", cmd_push, "REMOTE BRANCH [--force]", "copy BRANCH to a remote and move it there",
     "Copies what REMOTE lacks of BRANCH's history, then moves REMOTE's BRANCH to this store's\n"
     "head by compare-and-swap (creating it if absent) and sets REMOTE/BRANCH here. Only a\n"
     "fast-forward: if REMOTE's head is not an ancestor of BRANCH's (fetch and merge or pull\n"
     "first), nothing is changed and the exit status is 4; so is it when another push moves\n"
     "the branch meanwhile. Prints REMOTE/BRANCH<TAB>COMMIT, then copied<TAB>N commits<TAB>N\n"
     "nodes.\n"
     "\n"
     "  -f, --force   move REMOTE's BRANCH even when that drops commits there\n"},
    {"pull", cmd_pull, "REMOTE BRANCH [--resolve RESOLVER] [-m MSG]",
     "fetch, then merge REMOTE/BRANCH into BRANCH",
     "Fetches REMOTE (printing what moved, as fetch does), then merges REMOTE/BRANCH into\n"
     "BRANCH as merge does: a fast-forward when BRANCH's head is an ancestor, else a three-way\n"
     "merge commit (message \"pull REMOTE BRANCH\" unless -m); conflicts are printed as merge\n"
     "prints them, nothing is committed and the exit status is 3. A BRANCH that does not exist\n"
     "here is created at REMOTE/BRANCH. Exit 1 if REMOTE has no BRANCH.\n"
     "\n"
     "  --resolve RESOLVER   how to settle conflicts, as for merge (default fail)\n"
     "  -m, --message MSG    commit message\n"},
    /* Proofs (cmd_proof.c). */
    {"prove", cmd_prove, "REF KEY [--to KEY2] [--max-bytes N]",
     "write a proof of KEY's value (or of a range)",
     "Writes to standard output (redirect it to a file) a proof that the tree of REF holds\n"
     "KEY with its value, or lacks KEY; with --to, that the records with KEY <= K < KEY2 are\n"
     "exactly those the tree holds, none left out. Anyone with the tree id (prolly root REF)\n"
     "checks it with check-proof, without the store. The format is in docs/format.md.\n"
     "\n"
     "  --to KEY2       prove the range [KEY, KEY2) instead of one key\n"
     "  --max-bytes N   refuse, writing nothing, a proof over N bytes (default 268435456, the\n"
     "                  most check-proof reads unless given a larger --max-bytes)\n"},
    {"check-proof", cmd_check_proof, "TREE_ID FILE|- [--max-bytes N]",
     "check a proof against a tree id",
     "Checks the proof in FILE (- for standard input) against TREE_ID with hashing alone,\n"
     "opening no store. A valid proof exits 0 and prints what it proves: present<TAB>KEY<TAB>\n"
     "VALUE or absent<TAB>KEY; for a range, range<TAB>FROM<TAB>TO<TAB>N records, then\n"
     "KEY<TAB>VALUE per record. An invalid one (not of this tree, changed, truncated) exits 3\n"
     "with the reason. Input over 256 MiB is refused (exit 2): prove a narrower range.\n"
     "\n"
     "  --max-bytes N   the most it reads (default 268435456): the proof is held whole\n"},
    {NULL, NULL, NULL, NULL, NULL},
};

const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void print_help(FILE *f)
{
	fputs("usage: prolly [--store URL] COMMAND [ARGS...]\n"
	      "       prolly COMMAND --help\n"
	      "\n"
	      "A versioned key-value store built on Prolly trees.\n"
	      "\n"
	      "Commands:\n",
	      f);
	int width = 0;
	for (const struct command *c = commands; c->name; c++)
		if ((int)strlen(c->name) > width)
			width = (int)strlen(c->name);
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-*s  %s\n", width, c->name, c->summary);
	fputs("\n"
	      "Options:\n"
	      "  --store URL   lmdb:PATH, mem:, or a PostgreSQL URL or connection string\n"
	      "                (default $PROLLY_STORE, else " DEFAULT_STORE ")\n"
	      "  --help        show this help\n"
	      "  --version     show the version\n"
	      "\n"
	      "Keys and values are text in which \\\\, \\t, \\n and \\xHH stand for bytes; output is\n"
	      "escaped the same way. Exit status: 0 ok, 1 not found, 2 bad usage or input,\n"
	      "3 merge conflict, 4 lost a concurrent update, 5 store error.\n"
	      "See prolly(1) for more.\n",
	      f);
}

static int read_commit_time(int64_t *out)
{
	const char *s = getenv("PROLLY_COMMIT_TIME");
	char *end;
	*out = 0;
	if (!s || !*s)
		return 0;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end != '\0' || v < 0) {
		return fail(NULL, EXIT_USAGE,
		            "PROLLY_COMMIT_TIME must be microseconds since the epoch, not '%s'", s);
	}
	*out = v;
	return 0;
}

/* A standard stream the caller closed (`>&-`, a daemon's cron job) leaves its number free, and the
 * store's first open() would take it: an error line, a "no change" note or a scan's output would
 * then be written into lock.mdb or data.mdb (a meta page), or a PostgreSQL socket. Each closed
 * one gets /dev/null opened the wrong way round, so its number is taken and using the stream
 * still fails as on a closed one (EBADF: a write error for stdout, exit 5). Returns 0 or -1. */
static int hold_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
		if (got != fd) {
			if (got >= 0)
				close(got);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = {0};
	const char *env = getenv("PROLLY_STORE");
	struct shown sh; /* an argument printed back, passwords hidden */
	int i = 1, rc;

	if (hold_std_fds())
		return EXIT_STORE; /* no /dev/null: stderr may be closed too, so say nothing */
	cli.store_url = env && *env ? env : DEFAULT_STORE;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			print_help(stdout);
			return finish_output(&cli, EXIT_DONE);
		}
		if (strcmp(a, "--version") == 0) {
			printf("prolly %s\n", PROLLY_VERSION_STRING);
			return finish_output(&cli, EXIT_DONE);
		}
		if (strcmp(a, "--store") == 0) {
			if (i + 1 >= argc)
				return fail(&cli, EXIT_USAGE,
				            "option --store needs a value (see 'prolly "
				            "--help')");
			cli.store_url = argv[++i];
		} else if (strncmp(a, "--store=", 8) == 0) {
			cli.store_url = a + 8;
		} else {
			return fail(&cli, EXIT_USAGE, "unknown option '%s' (see 'prolly --help')",
			            shown_arg(&sh, a));
		}
	}
	if (i >= argc)
		return fail(&cli, EXIT_USAGE,
		            "no command given; usage: prolly [--store URL] COMMAND "
		            "[ARGS...] (see 'prolly --help')");
	if (strcmp(argv[i], "help") == 0) {
		/* help has no page of its own: `help help` and `help --help` are the overview, as
		 * `help` alone (they were "unknown command"). */
		const char *of = i + 1 < argc ? argv[i + 1] : NULL;
		if (i + 2 < argc)
			return fail(&cli, EXIT_USAGE,
			            "help takes one command, not '%s' too (see 'prolly --help')",
			            shown_arg(&sh, argv[i + 2]));
		if (!of || !strcmp(of, "help") || !strcmp(of, "--help") || !strcmp(of, "-h")) {
			print_help(stdout);
			return finish_output(&cli, EXIT_DONE);
		}
		const struct command *c = find_command(argv[i + 1]);
		if (!c)
			return fail(&cli, EXIT_USAGE, "unknown command '%s' (see 'prolly --help')",
			            shown_arg(&sh, argv[i + 1]));
		print_command_help(c, stdout);
		return finish_output(&cli, EXIT_DONE);
	}
	cli.cmd = find_command(argv[i]);
	if (!cli.cmd)
		return fail(&cli, EXIT_USAGE, "unknown command '%s' (see 'prolly --help')",
		            shown_arg(&sh, argv[i]));
	if (!*cli.store_url) {
		cli.cmd = NULL;
		return fail(&cli, EXIT_USAGE, "the store URL is empty");
	}
	if (!(cli.store_shown = redacted(cli.store_url)))
		return fail(&cli, EXIT_STORE, "out of memory");
	if (!(rc = read_commit_time(&cli.time_us))) {
		cli.argc = argc - i;
		cli.argv = argv + i;
		catch_interrupt(cli.cmd->name);
		rc = run_command(&cli, argc - i, argv + i);
		prolly_close(cli.db);
		rc = finish_output(&cli, rc);
	}
	free(cli.store_shown);
	return rc;
}
