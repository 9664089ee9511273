/*
 * cmd_write.c - commands that change the store: init, put, del, apply, branch.
 * (merge and gc are in cmd_merge.c.)
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* "initialized URL": the URL was typed (or set in $PROLLY_STORE), and may hold any byte. */
static int say_initialized(struct cli *cli, const char *already)
{
	fputs(already, stdout);
	fputs("initialized ", stdout);
	escape_puts(stdout, cli->store_shown);
	putchar('\n');
	return 0;
}

int cmd_init(struct cli *cli, int argc, char **argv)
{
	const char *size = NULL;
	struct opt opts[] = {{"node-size", 0, &size, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	int n_pos, rc, err;
	prolly_txn *txn = NULL;
	prolly_id head, empty, cid;

	rc = parse_args(cli, argc, argv, opts, pos, 0, 0, &n_pos);
	if (rc)
		return rc;
	if (size) {
		char *end;
		struct shown sh;
		errno = 0;
		unsigned long n = strtoul(size, &end, 10);
		if (errno || end == size || *end || size[0] == '-' || n == 0 || n > UINT_MAX ||
		    !prolly_node_size_valid((unsigned)n))
			return usage_error(cli, "--node-size '%s': use 1024, 2048, 4096 or 8192 (bytes)",
			                   shown_arg(&sh, size));
		cli->node_size = (unsigned)n;
	}
	rc = open_store(cli, STORE_CREATE, NULL);
	if (rc)
		return rc;
	err = prolly_branch_head(&head, cli->db, "main");
	if (err == 0)
		return say_initialized(cli, "already ");
	if (err != PROLLY_ENOTFOUND)
		return fail_lib(cli, err, "cannot read branch 'main' in %s", cli->store_shown);

	prolly_id_empty_tree(&empty);
	err = prolly_txn_begin(&txn, cli->db);
	if (!err)
		err = prolly_commit_create(&cid, txn, &empty, NULL, 0,
		                           prolly_next_commit_time(cli->db, NULL, 0), "init");
	if (!err)
		err = prolly_txn_move_branch(txn, "main", NULL, &cid);
	if (!err)
		err = prolly_txn_commit(txn, NULL, 0);
	if (err == PROLLY_ECONFLICT) {
		/* Another process created main meanwhile: the store is initialized all the same. */
		rc = say_initialized(cli, "already ");
	} else if (err) {
		rc = fail_lib(cli, err, "cannot initialize %s", cli->store_shown);
	} else {
		rc = say_initialized(cli, "");
	}
	prolly_txn_free(txn);
	return rc;
}

/* Checks sizes here so that the message names the argument. */
int parse_change_args(struct cli *cli, int argc, char **argv, const char **msg, char **pos, int n)
{
	struct opt opts[] = {{"message", 'm', msg, NULL},
	                     {"allow-empty", 0, NULL, &cli->allow_empty},
	                     {NULL, 0, NULL, NULL}};
	int n_pos, rc = parse_args(cli, argc, argv, opts, pos, n, n, &n_pos);
	return rc ? rc : need_branch_name(cli, pos[0]);
}

int default_message(struct cli *cli, const char **msg, char **auto_msg, const char *fmt, ...)
{
	va_list ap;
	if (*msg)
		return 0;
	va_start(ap, fmt);
	*auto_msg = vformat(fmt, ap);
	va_end(ap);
	if (!*auto_msg)
		return fail(cli, EXIT_STORE, "out of memory");
	*msg = *auto_msg;
	return 0;
}

static int check_size(struct cli *cli, const struct bytes *b, size_t limit, const char *what)
{
	if (b->size <= limit)
		return 0;
	return fail(cli, EXIT_USAGE, "%s is %zu bytes; at most %zu are allowed", what, b->size, limit);
}

int cmd_put(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL;
	char *pos[3], *auto_msg = NULL, *ekey = NULL;
	struct bytes key = BYTES_INIT, val = BYTES_INIT;
	prolly_id head, cid;
	int rc;

	if ((rc = parse_change_args(cli, argc, argv, &msg, pos, 3)) ||
	    (rc = arg_key(cli, &key, pos[1])) || (rc = arg_bytes(cli, &val, pos[2], "value")) ||
	    (rc = check_size(cli, &val, PROLLY_MAX_VALUE, "the value")))
		goto cleanup;
	if (!msg && !(ekey = escape_dup(key.ptr, key.size))) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if ((rc = default_message(cli, &msg, &auto_msg, "put %s", ekey)) ||
	    (rc = open_store(cli, STORE_WRITE, NULL)) || (rc = branch_head(cli, &head, pos[0])))
		goto cleanup;
	prolly_edit e = {PROLLY_PUT, {key.ptr, key.size}, {val.ptr, val.size}};
	rc = commit_edits(cli, &cid, pos[0], &head, &e, 1, msg);
	if (rc == 0)
		print_id(&cid);
cleanup:
	free(auto_msg);
	free(ekey);
	bytes_dispose(&key);
	bytes_dispose(&val);
	return rc;
}

int cmd_del(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL;
	char *pos[2], *auto_msg = NULL, *ekey = NULL;
	struct bytes key = BYTES_INIT;
	prolly_buf old = PROLLY_BUF_INIT;
	prolly_commit *c = NULL;
	prolly_id head, cid;
	int rc, err;

	if ((rc = parse_change_args(cli, argc, argv, &msg, pos, 2)) ||
	    (rc = arg_key(cli, &key, pos[1])))
		goto cleanup;
	ekey = escape_dup(key.ptr, key.size);
	if (!ekey) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if ((rc = default_message(cli, &msg, &auto_msg, "del %s", ekey)) ||
	    (rc = open_store(cli, STORE_WRITE, NULL)) || (rc = branch_commit(cli, &c, pos[0])))
		goto cleanup;
	head = c->id;
	/* Deleting an absent key is reported rather than committed as an empty change. */
	err = prolly_get(&old, cli->db, &c->tree, key.ptr, key.size);
	if (err == PROLLY_ENOTFOUND) {
		rc = fail(cli, EXIT_NOTFOUND, "key '%s' not found in %s; nothing was committed", ekey,
		          pos[0]);
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot read '%s'", pos[0]);
		goto cleanup;
	}
	prolly_edit e = {PROLLY_DEL, {key.ptr, key.size}, {NULL, 0}};
	rc = commit_edits(cli, &cid, pos[0], &head, &e, 1, msg);
	if (rc == 0)
		print_id(&cid);
cleanup:
	prolly_commit_free(c);
	prolly_buf_dispose(&old);
	free(auto_msg);
	free(ekey);
	bytes_dispose(&key);
	return rc;
}

/* ---- apply (its input is read by input.c) ------------------------------------------------- */

int cmd_apply(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL;
	char *pos[2], *auto_msg = NULL;
	struct edit_file ef = {BYTES_INIT, NULL, 0, 0};
	prolly_edit *edits = NULL;
	struct change *changes = NULL;
	size_t n_changes = 0;
	prolly_id head, cid;
	int rc;

	if ((rc = parse_change_args(cli, argc, argv, &msg, pos, 2)))
		goto cleanup;
	/* The head is read before the input: a missing branch fails before a long input is read,
	 * and a branch that moves while it is read is a lost update (exit 4), never overwritten. */
	if ((rc = open_store(cli, STORE_WRITE, NULL)) || (rc = branch_head(cli, &head, pos[0])))
		goto cleanup;
	const char *name = strcmp(pos[1], "-") == 0 ? "<stdin>" : pos[1];
	if ((rc = read_edit_file(cli, &ef, pos[1], name)))
		goto cleanup;
	edits = calloc(ef.n ? ef.n : 1, sizeof *edits);
	changes = calloc(ef.n ? ef.n : 1, sizeof *changes);
	if (!edits || !changes) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < ef.n; i++) {
		const struct pending *p = &ef.items[i];
		edits[i].op = p->op;
		edits[i].key.data = bytes_at(&ef.arena, p->koff);
		edits[i].key.size = p->klen;
		edits[i].value.data = p->op == PROLLY_PUT ? bytes_at(&ef.arena, p->voff) : NULL;
		edits[i].value.size = p->vlen;
	}
	/* Runs of put and del lines are one batch each; a delr line is a step of its own, so that
	 * it removes what earlier lines put in its range and later lines put back survive. */
	for (size_t i = 0; i < ef.n; i++) {
		const struct pending *p = &ef.items[i];
		struct change *c = &changes[n_changes];
		if (p->range) {
			c->range = 1;
			c->from = (prolly_slice){bytes_at(&ef.arena, p->koff), p->klen};
			c->to = (prolly_slice){bytes_at(&ef.arena, p->voff), p->vlen};
			n_changes++;
		} else if (n_changes && !changes[n_changes - 1].range) {
			changes[n_changes - 1].n++;
		} else {
			c->edits = &edits[i];
			c->n = 1;
			n_changes++;
		}
	}
	if ((rc = default_message(cli, &msg, &auto_msg, "apply %s (%zu edit%s)", pos[1], ef.n,
	                          ef.n == 1 ? "" : "s")))
		goto cleanup;
	rc = commit_changes(cli, &cid, pos[0], &head, changes, n_changes, msg);
	if (rc == 0)
		print_id(&cid);
cleanup:
	free(auto_msg);
	free(changes);
	free(edits);
	edit_file_dispose(&ef);
	return rc;
}

/* ---- branch ------------------------------------------------------------------------------ */

static int count_branch(void *payload, const char *name, const prolly_id *commit)
{
	(void)name;
	(void)commit;
	++*(size_t *)payload;
	return 0;
}

/* branch -d NAME [--force]: prints the head it removed (the reflog keeps it too). */
static int delete_branch(struct cli *cli, const char *name, int force)
{
	prolly_id head;
	size_t n = 0;
	int rc, err;
	/* A name of 64 hex digits is no new branch's, but an older prolly's may exist: the library
	 * removes it, or says there is no such branch. */
	if ((prolly_id_from_hex(&head, name) && (rc = need_branch_name(cli, name))) ||
	    (rc = open_store(cli, STORE_WRITE, NULL)))
		return rc;
	if (!force) {
		if ((err = prolly_branch_list(cli->db, count_branch, &n)))
			return fail_lib(cli, err, "cannot list branches");
		if (n == 1 && prolly_branch_head(&head, cli->db, name) == 0)
			return fail(cli, EXIT_USAGE,
			            "'%s' is the last branch; --force deletes it (gc then removes its "
			            "history once the reflog expires)",
			            name);
	}
	err = prolly_branch_remove(&head, cli->db, name);
	return ref_done(cli, err, &head, PROLLY_ENOTFOUND, "delete", "branch", name, "");
}

int cmd_branch(struct cli *cli, int argc, char **argv)
{
	int del = 0, force = 0, restore = 0;
	struct opt opts[] = {{"delete", 'd', NULL, &del},
	                     {"force", 'f', NULL, &force},
	                     {"restore", 0, NULL, &restore},
	                     {NULL, 0, NULL, NULL}};
	char *pos[2];
	int n_pos, rc, err;
	prolly_id cid;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 2, &n_pos);
	if (rc)
		return rc;
	if (del && restore)
		return usage_error(cli, "-d and --restore do not go together");
	/* Ignored, it read as git's `branch -f NEW FROM` (move NEW) and then failed on "already
	 * exists", as if the option had not been typed. */
	if (force && !del)
		return usage_error(cli,
		                   "--force goes with -d only ('prolly reset BRANCH REF' moves a branch)");
	if (del) {
		if (n_pos != 1)
			return usage_error(cli, "-d takes one branch name");
		return delete_branch(cli, pos[0], force);
	}
	if (restore) {
		if (n_pos != 1)
			return usage_error(cli, "--restore takes one branch name");
		if ((rc = need_branch_name(cli, pos[0])) || (rc = open_store(cli, STORE_WRITE, NULL)))
			return rc;
		err = prolly_branch_restore(&cid, cli->db, pos[0]);
		return ref_done(cli, err, &cid, PROLLY_ECONFLICT, "restore", "branch", pos[0], "");
	}
	if (n_pos != 2)
		return usage_error(cli, "missing arguments: usage: prolly branch NEW FROM");
	if ((rc = need_branch_name(cli, pos[0])) || (rc = open_store(cli, STORE_WRITE, NULL)) ||
	    (rc = resolve_commit(cli, &cid, pos[1])))
		return rc;
	/* REMOTE/BRANCH names a remote-tracking branch, which only fetch and push move: a branch
	 * spelled so would hide it. */
	const char *slash = strchr(pos[0], '/');
	char remote[256];
	if (slash && (size_t)(slash - pos[0]) < sizeof(remote)) {
		prolly_buf url = PROLLY_BUF_INIT;
		snprintf(remote, sizeof(remote), "%.*s", (int)(slash - pos[0]), pos[0]);
		err = prolly_remote_url(&url, cli->db, remote);
		prolly_buf_dispose(&url);
		/* A damaged record (PROLLY_ECORRUPT) still names a remote: its name stays taken. */
		if (err == 0 || err == PROLLY_ECORRUPT)
			return fail(cli, EXIT_USAGE,
			            "'%s' would hide the remote-tracking branch of remote '%s'%s, which "
			            "only fetch and push move",
			            pos[0], remote,
			            err ? " (its record is damaged; 'prolly remote remove' removes it)" : "");
		if (err != PROLLY_ENOTFOUND && err != PROLLY_EINVAL)
			return fail_lib(cli, err, "cannot read remote '%s'", remote);
	}
	err = prolly_branch_create(cli->db, pos[0], &cid);
	return ref_done(cli, err, &cid, PROLLY_ECONFLICT, "create", "branch", pos[0], "");
}
