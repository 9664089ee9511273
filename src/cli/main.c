/*
 * main.c - `prolly [--store URL] COMMAND ...`: global options, the command table, help.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STORE "lmdb:./.prolly"

const struct command commands[] = {
    {"init", cmd_init, "", "create the store with an empty branch main",
     "Creates the store if needed and a branch 'main' whose first commit holds the empty tree\n"
     "(message \"init\"). Running it again changes nothing.\n"},
    {"put", cmd_put, "BRANCH KEY VALUE [-m MSG]", "set KEY to VALUE in one commit",
     "Sets KEY to VALUE on BRANCH in one commit (message \"put KEY\" unless -m) and prints\n"
     "the new commit id.\n"
     "\n"
     "  -m, --message MSG   commit message\n"},
    {"del", cmd_del, "BRANCH KEY [-m MSG]", "delete KEY in one commit",
     "Deletes KEY from BRANCH in one commit (message \"del KEY\" unless -m) and prints the\n"
     "new commit id. Exits 1 and commits nothing if KEY is absent.\n"
     "\n"
     "  -m, --message MSG   commit message\n"},
    {"apply", cmd_apply, "BRANCH FILE|- [-m MSG]", "apply a file of edits in one commit",
     "Applies every line of FILE (- for standard input) in one commit and prints its id.\n"
     "Lines are put<TAB>KEY<TAB>VALUE or del<TAB>KEY; empty lines and lines starting with #\n"
     "are skipped. A malformed line rejects the whole file (its line number is named) and\n"
     "nothing is committed. The edits apply to the head BRANCH had when the command started;\n"
     "if it moves meanwhile, nothing is committed and the exit status is 4.\n"
     "Message \"apply FILE (N edits)\" unless -m.\n"
     "\n"
     "  -m, --message MSG   commit message\n"},
    {"get", cmd_get, "BRANCH KEY [--raw]", "print the value of KEY",
     "Prints the value of KEY in BRANCH (or BRANCH~N, or a commit id), escaped. Exits 1 if\n"
     "KEY is absent.\n"
     "\n"
     "  --raw   write the value's bytes as they are, with no escaping and no newline\n"},
    {"scan", cmd_scan, "BRANCH [--from KEY] [--to KEY] [--prefix P] [--limit N] [--reverse]",
     "list records in key order",
     "Prints KEY<TAB>VALUE lines in key order.\n"
     "\n"
     "  --from KEY    start at KEY (inclusive)\n"
     "  --to KEY      stop before KEY (exclusive)\n"
     "  --prefix P    only keys starting with P\n"
     "  --limit N     at most N lines\n"
     "  --reverse     descending key order (--from and --to still bound the keys)\n"},
    {"diff", cmd_diff, "FROM TO", "show what changed from FROM to TO",
     "Prints the differences between the trees of FROM and TO in key order:\n"
     "  +<TAB>KEY<TAB>VALUE          added\n"
     "  -<TAB>KEY<TAB>OLD            removed\n"
     "  ~<TAB>KEY<TAB>OLD<TAB>NEW    changed\n"},
    {"branch", cmd_branch, "NEW FROM | -d NAME", "create (or delete) a branch",
     "Creates branch NEW at the commit FROM names (a branch, BRANCH~N or a commit id) and\n"
     "prints that commit id. No node is copied. Exits 2 if NEW exists.\n"
     "\n"
     "  -d, --delete   delete branch NAME instead (its nodes stay until gc)\n"},
    {"branches", cmd_branches, "", "list branches",
     "Prints NAME<TAB>COMMIT<TAB>ROOT for every branch, in name order.\n"},
    {"merge", cmd_merge, "INTO FROM [--resolve fail|ours|theirs] [-m MSG]",
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
     "  --resolve fail|ours|theirs   how to settle conflicts (default fail)\n"
     "  -m, --message MSG            commit message\n"},
    {"log", cmd_log, "BRANCH [--limit N]", "show the history of BRANCH",
     "Prints one block per commit, newest first, blocks separated by an empty line:\n"
     "  commit<TAB>ID\n"
     "  parent<TAB>ID          (one line per parent)\n"
     "  tree<TAB>ID\n"
     "  date<TAB>YYYY-MM-DDTHH:MM:SS.ffffffZ\n"
     "  message<TAB>MESSAGE    (escaped)\n"
     "\n"
     "  --limit N   at most N commits\n"},
    {"root", cmd_root, "BRANCH", "print the tree root id",
     "Prints the id of the root node of BRANCH's tree.\n"},
    {"stats", cmd_stats, "BRANCH", "print the shape of BRANCH's tree",
     "Prints NAME<TAB>NUMBER lines: records, height, nodes, leaves, bytes.\n"},
    {"verify", cmd_verify, "BRANCH [--history]", "re-hash every node of BRANCH's tree",
     "Reads every node reachable from BRANCH's tree and checks that it hashes to its id.\n"
     "Prints ok<TAB>TREE<TAB>N nodes<TAB>N bytes per tree verified; exits 5 naming the\n"
     "first corrupt or missing node.\n"
     "\n"
     "  --history   verify the tree of every commit in BRANCH's history too\n"},
    {"gc", cmd_gc, "[--keep N]", "remove nodes no branch needs",
     "Removes every node and commit not reachable from a branch and prints nodes_kept,\n"
     "nodes_removed and bytes_removed lines.\n"
     "\n"
     "  --keep N   keep only the newest N commits of each branch (default: all)\n"},
    {NULL, NULL, NULL, NULL, NULL},
};

const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void print_command_help(const struct command *cmd, FILE *f)
{
	fprintf(f, "usage: prolly [--store URL] %s%s%s\n\n%s", cmd->name, *cmd->synopsis ? " " : "",
	        cmd->synopsis, cmd->help);
	if (strcmp(cmd->name, "init") && strcmp(cmd->name, "gc") && strcmp(cmd->name, "branches"))
		fputs("\nWhere a branch is read, BRANCH~N (N commits back) and a commit id work too.\n"
		      "Keys and values are escaped text: \\\\ \\t \\n \\xHH stand for bytes.\n",
		      f);
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
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fputs("\n"
	      "Options:\n"
	      "  --store URL   lmdb:PATH or mem: (default $PROLLY_STORE, else " DEFAULT_STORE ")\n"
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
		fprintf(stderr,
		        "prolly: PROLLY_COMMIT_TIME must be microseconds since the epoch, "
		        "not '%s'\n",
		        s);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = {NULL, {0}, NULL, 0, NULL};
	const char *env = getenv("PROLLY_STORE");
	struct shown sh; /* an argument printed back, passwords hidden */
	int i = 1, rc;

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
		if (i + 1 >= argc) {
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
	prolly_redact_url(cli.store_shown, sizeof(cli.store_shown), cli.store_url);
	if (!*cli.store_url) {
		cli.cmd = NULL;
		return fail(&cli, EXIT_USAGE, "the store URL is empty");
	}
	rc = read_commit_time(&cli.time_us);
	if (rc)
		return rc;
	rc = cli.cmd->run(&cli, argc - i, argv + i);
	if (rc == HELP_SHOWN)
		rc = EXIT_DONE;
	prolly_close(cli.db);
	return finish_output(&cli, rc);
}
