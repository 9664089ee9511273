/*
 * cmd_refs.c - the reflog, tags and reset: reflog, tag, tags, reset.
 */
#include "cli.h"

#include <string.h>

static void print_opt_id(int has, const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	if (!has) {
		fputs("-", stdout);
		return;
	}
	prolly_id_to_hex(hex, id);
	fputs(hex, stdout);
}

static int print_entry(void *payload, const prolly_reflog_entry *e)
{
	(void)payload;
	print_time(e->time_us);
	/* The entry is the store's: its names may hold anything another client wrote. */
	putchar('\t');
	escape_puts(stdout, e->ref);
	putchar('\t');
	escape_puts(stdout, e->operation);
	putchar('\t');
	print_opt_id(e->has_old, &e->old_id);
	putchar('\t');
	print_opt_id(e->has_new, &e->new_id);
	putchar('\t');
	escape_puts(stdout, e->message);
	putchar('\n');
	return 0;
}

int cmd_reflog(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 0, 1, &n_pos);
	if (rc)
		return rc;
	if (n_pos && strncmp(pos[0], "refs/", 5) != 0 && strchr(pos[0], '~')) {
		struct shown sh; /* need_branch_name would say reflog writes: it lists a ref's moves */
		return fail(cli, EXIT_USAGE,
		            "'%s' is not a branch name: reflog lists the moves of a branch or tag, and "
		            "BRANCH~N names a commit",
		            shown_arg(&sh, pos[0]));
	}
	/* A branch of 64 hex digits that an older prolly made has its reflog like any other (the
	 * library takes that name for reading): need_branch_name, for names to write, refuses it. */
	if (n_pos && strncmp(pos[0], "refs/", 5) != 0 && prolly_id_from_hex(&(prolly_id){0}, pos[0]) &&
	    (rc = need_branch_name(cli, pos[0])))
		return rc;
	if ((rc = open_store(cli, STORE_READ, NULL)))
		return rc;
	err = prolly_reflog(cli->db, n_pos ? pos[0] : NULL, print_entry, NULL);
	if (err)
		return fail_lib(cli, err, "cannot read the reflog");
	return 0;
}

static int print_tag(void *payload, const char *name, const prolly_id *commit)
{
	char hex[PROLLY_ID_HEX_SIZE];
	(void)payload;
	prolly_id_to_hex(hex, commit);
	escape_puts(stdout, name); /* a valid name prints as it is; one rule for all */
	printf("\t%s\n", hex);
	return 0;
}

int cmd_tags(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	int n_pos, rc, err;
	rc = parse_args(cli, argc, argv, opts, pos, 0, 0, &n_pos);
	if (rc || (rc = open_store(cli, STORE_READ, NULL)))
		return rc;
	err = prolly_tag_list(cli->db, print_tag, NULL);
	if (err)
		return fail_lib(cli, err, "cannot list tags");
	return 0;
}

int ref_done(struct cli *cli, int err, const prolly_id *id, int expected, const char *verb,
             const char *kind, const char *name, const char *hint)
{
	if (err == expected && err == PROLLY_ECONFLICT)
		return fail(cli, EXIT_USAGE, "%s '%s' already exists%s", kind, name, hint);
	if (err == expected && err == PROLLY_ENOTFOUND)
		return fail(cli, EXIT_NOTFOUND, "no %s '%s'", kind, name);
	if (err)
		return fail_lib(cli, err, "cannot %s %s '%s'", verb, kind, name);
	print_id(id);
	return 0;
}

int cmd_tag(struct cli *cli, int argc, char **argv)
{
	int del = 0;
	struct opt opts[] = {{"delete", 'd', NULL, &del}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	int n_pos, rc, err;
	prolly_id cid;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 2, &n_pos);
	if (rc)
		return rc;
	/* Tag names follow the branch name rules; a tag of 64 hex digits, which an older prolly may
	 * have made, is left to the library to delete (or to say there is no such tag). */
	err = del && prolly_id_from_hex(&cid, pos[0]) == 0 ? 0 : prolly_tag_name_valid(pos[0]);
	if (err) {
		struct shown sh;
		return fail_lib(cli, err, "'%s' is not a valid tag name", shown_arg(&sh, pos[0]));
	}
	if (del) {
		if (n_pos != 1)
			return usage_error(cli, "-d takes one tag name");
		if ((rc = open_store(cli, STORE_WRITE, NULL)))
			return rc;
		err = prolly_tag_delete(&cid, cli->db, pos[0]);
		return ref_done(cli, err, &cid, PROLLY_ENOTFOUND, "delete", "tag", pos[0], "");
	}
	if ((rc = open_store(cli, STORE_WRITE, NULL)) ||
	    (rc = resolve_commit(cli, &cid, n_pos == 2 ? pos[1] : "main")))
		return rc;
	err = prolly_tag_create(cli->db, pos[0], &cid);
	return ref_done(cli, err, &cid, PROLLY_ECONFLICT, "create", "tag", pos[0],
	                " (tags never move; delete it first)");
}

int cmd_reset(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[2];
	int n_pos, rc, err;
	prolly_id old, cid;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		return rc;
	if ((rc = need_branch_name(cli, pos[0])) || (rc = open_store(cli, STORE_WRITE, NULL)) ||
	    (rc = resolve_commit(cli, &cid, pos[1])))
		return rc;
	err = prolly_branch_reset(&old, cli->db, pos[0], &cid);
	if (err == PROLLY_ENOTFOUND)
		return fail(cli, EXIT_NOTFOUND, "no branch '%s'", pos[0]);
	if (err == PROLLY_ECONFLICT)
		return fail_lib(cli, err, NULL);
	if (err)
		return fail_lib(cli, err, "cannot reset branch '%s'", pos[0]);
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &old);
	printf("old\t%s\n", hex);
	prolly_id_to_hex(hex, &cid);
	printf("new\t%s\n", hex);
	return 0;
}
