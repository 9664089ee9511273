/*
 * help.c - one command's help (`prolly COMMAND --help`): its synopsis and text from the command
 * table, then what its BRANCH and KEY arguments accept. Apart from main.c, which holds the table,
 * so that the argument parser (common.c) can print it without reaching back into main.c.
 */
#include "cli.h"

#include <string.h>

void print_command_help(const struct command *cmd, FILE *f)
{
	fprintf(f, "usage: prolly [--store URL] %s%s%s\n\n%s", cmd->name, *cmd->synopsis ? " " : "",
	        cmd->synopsis, cmd->help);
	/* Commands whose BRANCH is written need a branch name; the others read specs. */
	static const char *const writers[] = {"put",         "del",  "apply", "del-range", "revert",
	                                      "cherry-pick", "push", "pull",  NULL};
	int writes = 0;
	for (int i = 0; writers[i]; i++)
		writes |= strcmp(cmd->name, writers[i]) == 0;
	if (writes)
		fputs("\nBRANCH must be a branch name: BRANCH~N and commit ids name old commits,\n"
		      "which cannot be written to.\n",
		      f);
	else if (strcmp(cmd->name, "init") && strcmp(cmd->name, "gc") &&
	         strcmp(cmd->name, "branches") && strcmp(cmd->name, "tags") &&
	         strcmp(cmd->name, "reflog") && strcmp(cmd->name, "recover") &&
	         strcmp(cmd->name, "remote") && strcmp(cmd->name, "clone") &&
	         strcmp(cmd->name, "fetch") && strcmp(cmd->name, "check-proof"))
		fputs("\nWhere a branch is read, BRANCH~N (N commits back), BRANCH@{TIME} (what it named\n"
		      "then, from its reflog) and a commit id work too.\n",
		      f);
	if (strcmp(cmd->name, "init") && strcmp(cmd->name, "gc") && strcmp(cmd->name, "branches") &&
	    strcmp(cmd->name, "tags") && strcmp(cmd->name, "reflog") && strcmp(cmd->name, "recover") &&
	    strcmp(cmd->name, "remote") && strcmp(cmd->name, "clone") && strcmp(cmd->name, "fetch") &&
	    strcmp(cmd->name, "push") && strcmp(cmd->name, "pull") && strcmp(cmd->name, "check-proof"))
		fputs("Keys and values are escaped text: \\\\ \\t \\n \\xHH stand for bytes.\n", f);
}
