/*
 * cmd_remote.c - history between stores: remote, clone, fetch, push, pull.
 *
 * Remotes are recorded in the store (prolly_remote_add: the library's remote.c says where). A
 * URL is printed only through prolly_redact_url, never as given.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens url as a second store (flags PROLLY_OPEN_*; a store it makes has nodes of node_size, 0
 * for the default), reporting failure with the URL redacted. */
static int open_other(struct cli *cli, prolly_db **out, const char *url, unsigned flags,
                      unsigned node_size)
{
	int err = open_sized(out, url, NULL, flags, node_size), rc;
	if (!err)
		return 0;
	char *shown = redacted(url); /* leaves the library's message, which fail_lib reads, alone */
	const char *s = shown ? shown : "(out of memory)";
	if (err == PROLLY_ENOTFOUND)
		rc = fail(cli, EXIT_STORE, "no store at %s", s);
	else
		rc = fail_lib(cli, err, "cannot open store %s", s) == EXIT_USAGE ? EXIT_USAGE : EXIT_STORE;
	free(shown);
	return rc;
}

/* The current directory as the shell spelled it ($PWD, when that names it: the symlinks the user
 * went through stay, as they do in what the user typed), else as the kernel has it. Malloc'd;
 * NULL with errno set when it cannot be known. */
static char *current_dir(void)
{
	const char *pwd = getenv("PWD");
	struct stat a, b;
	if (pwd && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return strdup(pwd);
	return getcwd(NULL, 0);
}

/* *out = url to record as a remote (malloc'd): url itself, but a relative "lmdb:PATH" becomes the
 * absolute path it names from the current directory, which need not exist yet. A later fetch or
 * push runs from any directory and would read a relative path from there (exit 5, no store). */
static int recorded_url(struct cli *cli, char **out, const char *url)
{
	int lmdb = strncmp(url, "lmdb:", 5) == 0;
	const char *path = lmdb ? url + 5 : "";
	char *dir = NULL;
	*out = NULL;
	if (!lmdb || path[0] == '/' || path[0] == 0) {
		*out = strdup(url);
	} else if (!(dir = current_dir())) {
		struct shown sh;
		return fail(cli, EXIT_STORE, "cannot find the current directory, to record %s whole: %s",
		            shown_arg(&sh, url), strerror(errno));
	} else {
		while (path[0] == '.' && path[1] == '/') /* "./x" is "x" */
			for (path += 2; *path == '/'; path++) {
			}
		if (strcmp(path, ".") == 0)
			path = "";
		*out = format("lmdb:%s%s%s", dir, *path && strcmp(dir, "/") ? "/" : "", path);
	}
	free(dir);
	return *out ? 0 : fail(cli, EXIT_STORE, "out of memory");
}

/* 1 when the recorded URLs a and b name one store: the same text, or two lmdb: paths to one
 * directory (compared by device and inode, so "x", "x/", "x/." and a symlink to x all match).
 * Opening one LMDB environment as source and destination would make the library refuse the
 * second open with advice a clone's user cannot follow ("close those handles"). */
static int same_store(const char *a, const char *b)
{
	struct stat sa, sb;
	if (strcmp(a, b) == 0)
		return 1;
	if (strncmp(a, "lmdb:", 5) != 0 || strncmp(b, "lmdb:", 5) != 0)
		return 0;
	return stat(a + 5, &sa) == 0 && stat(b + 5, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Opens the store remote `name` of cli->db stands for. */
static int open_remote(struct cli *cli, prolly_db **out, const char *name, unsigned flags)
{
	prolly_buf url = PROLLY_BUF_INIT;
	int err = prolly_remote_url(&url, cli->db, name), rc;
	if (err)
		return fail_lib(cli, err, NULL);
	char *u = malloc(url.size + 1);
	if (!u) {
		prolly_buf_dispose(&url);
		return fail(cli, EXIT_STORE, "out of memory");
	}
	memcpy(u, url.ptr, url.size);
	u[url.size] = 0;
	prolly_buf_dispose(&url);
	if (strncmp(u, "lmdb:", 5) == 0 && u[5] && u[5] != '/') {
		/* Recorded as typed by a prolly before recorded_url: it named a store from the directory
		 * remote add ran in, which nothing recorded. Opened from here it may name another store,
		 * or none; only the user knows which one was meant. */
		char *shown = redacted(u); /* name: a valid remote name, or prolly_remote_url failed */
		rc = fail(cli, EXIT_USAGE,
		          "remote '%s' has the relative path %s (recorded by an older prolly), which names "
		          "a different store from each directory: record it whole with 'prolly remote "
		          "remove %s' and 'prolly remote add %s lmdb:/ABSOLUTE/PATH'",
		          name, shown ? shown : "(out of memory)", name, name);
		free(shown);
	} else
		rc = open_other(cli, out, u, flags, 0);
	free(u);
	return rc;
}

static void print_opt_id(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	if (!id) {
		fputs("-", stdout);
		return;
	}
	prolly_id_to_hex(hex, id);
	fputs(hex, stdout);
}

static void print_copied(const prolly_sync_stats *st)
{
	printf("copied\t%llu commits\t%llu nodes\n", (unsigned long long)st->commits_copied,
	       (unsigned long long)st->nodes_copied);
}

/* ---- remote ---------------------------------------------------------------------------------- */

static int print_remote(void *payload, const char *name, const char *url)
{
	char *shown = redacted(url);
	(void)payload;
	if (!shown)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory");
	escape_puts(stdout, name);
	putchar('\t');
	/* Another client may have stored the URL: its bytes must not drive the terminal. */
	escape_puts(stdout, shown);
	putchar('\n');
	free(shown);
	return 0;
}

int cmd_remote(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[3];
	struct shown sh;
	int n_pos, rc, err;

	if ((rc = parse_args(cli, argc, argv, opts, pos, 1, 3, &n_pos)))
		return rc;
	const char *sub = pos[0];
	if (strcmp(sub, "list") == 0) {
		if (n_pos != 1)
			return usage_error(cli, "list takes no arguments");
		if ((rc = open_store(cli, STORE_READ, NULL)))
			return rc;
		if ((err = prolly_remote_list(cli->db, print_remote, NULL)))
			return fail_lib(cli, err, "cannot list remotes");
		return 0;
	}
	if (strcmp(sub, "add") == 0) {
		if (n_pos != 3)
			return usage_error(cli, "usage: prolly remote add NAME URL");
		char *url;
		if ((rc = open_store(cli, STORE_WRITE, NULL)) || (rc = recorded_url(cli, &url, pos[2])))
			return rc;
		err = prolly_remote_add(cli->db, pos[1], url);
		free(url);
		if (err == PROLLY_ECONFLICT)
			return fail(cli, EXIT_USAGE, "remote '%s' already exists", pos[1]);
		if (err)
			return fail_lib(cli, err, "cannot add remote '%s'", shown_arg(&sh, pos[1]));
		return 0;
	}
	if (strcmp(sub, "remove") == 0) {
		if (n_pos != 2)
			return usage_error(cli, "usage: prolly remote remove NAME");
		if ((rc = open_store(cli, STORE_WRITE, NULL)))
			return rc;
		if ((err = prolly_remote_remove(cli->db, pos[1])))
			return fail_lib(cli, err, NULL);
		return 0;
	}
	return usage_error(cli, "unknown subcommand '%s' (add, list or remove)", shown_arg(&sh, sub));
}

/* ---- clone ----------------------------------------------------------------------------------- */

struct refs {
	prolly_ref_update *u;
	char **names;
	size_t n, cap;
	const char *prefix;
};

/* Appends the creation of ref PREFIX+NAME at commit (copied, so it may point into r). */
static int add_ref(struct refs *r, const char *prefix, const char *name, const prolly_id *commit)
{
	prolly_id value = *commit;
	if (GROW_ARRAY(r->u, r->cap, r->n + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory");
	char **nn = realloc(r->names, r->cap * sizeof(*nn));
	if (!nn)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory");
	r->names = nn;
	if (!(r->names[r->n] = format("%s%s", prefix, name)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory");
	prolly_ref_update *u = &r->u[r->n++];
	memset(u, 0, sizeof(*u));
	u->name = r->names[r->n - 1];
	u->expect = PROLLY_REF_EXPECT_ABSENT;
	u->value = value;
	return 0;
}

static int collect_ref(void *payload, const char *name, const prolly_id *commit)
{
	struct refs *r = payload;
	return add_ref(r, r->prefix, name, commit);
}

/* 0 if db's remote "origin" is url: the record an interrupted clone of the same source left. */
static int origin_is(struct cli *cli, const char *url, const char *shown)
{
	prolly_buf have = PROLLY_BUF_INIT;
	int err = prolly_remote_url(&have, cli->db, "origin"), rc = 0;
	if (err)
		rc = fail_lib(cli, err, "cannot read remote 'origin'");
	else if (have.size != strlen(url) || memcmp(have.ptr, url, have.size) != 0)
		rc = fail(cli, EXIT_USAGE,
		          "%s has a remote 'origin' for another store: clone only into a new store", shown);
	prolly_buf_dispose(&have);
	return rc;
}

static int count_branch(void *payload, const char *name, const prolly_id *commit)
{
	(void)name;
	(void)commit;
	++*(size_t *)payload;
	return 0;
}

int cmd_clone(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[2];
	prolly_db *src = NULL;
	struct refs r = {NULL, NULL, 0, 0, NULL};
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	size_t have = 0, n_heads = 0, n_shown = 0;
	char *shown = NULL, *origin = NULL, *dest = NULL;
	int n_pos, rc, err;

	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)))
		return rc;
	/* The source becomes remote "origin" (a relative lmdb: path made absolute): a URL it cannot
	 * record is refused before anything is opened or created. */
	if ((rc = recorded_url(cli, &origin, pos[0])) || (rc = recorded_url(cli, &dest, pos[1])))
		goto cleanup;
	if ((err = prolly_remote_url_valid(origin))) {
		rc = fail_lib(cli, err, "cannot clone");
		goto cleanup;
	}
	if (same_store(origin, dest)) {
		struct shown sh, sh2;
		rc = strcmp(pos[0], pos[1]) == 0
		         ? usage_error(cli, "'%s' is both the source and the destination",
		                       shown_arg(&sh, pos[0]))
		         : usage_error(cli, "'%s' and '%s' are the same store: clone into another one",
		                       shown_arg(&sh, pos[0]), shown_arg(&sh2, pos[1]));
		goto cleanup;
	}
	/* The destination is made with the source's node size (SY15 in the library's sync.c). */
	if ((rc = open_other(cli, &src, pos[0], PROLLY_OPEN_READONLY, 0)) ||
	    (rc = open_other(cli, &cli->db, pos[1], PROLLY_OPEN_CREATE, prolly_db_node_size(src))))
		goto cleanup;
	if ((err = prolly_branch_list(cli->db, count_branch, &have))) {
		rc = fail_lib(cli, err, "cannot read the destination");
		goto cleanup;
	}
	if (!(shown = redacted(pos[1]))) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if (have) {
		rc = fail(cli, EXIT_USAGE, "%s already has branches: clone only into a new store", shown);
		goto cleanup;
	}
	/* The source becomes remote "origin", its branches origin/BRANCH; the source's own remotes
	 * (config/remotes/) are its configuration and stay there. The remote is recorded first and
	 * the remote-tracking refs move with the branches and tags in the sync's one write, so a
	 * clone cut off anywhere (killed, disk full, connection lost) leaves either no branch, and
	 * running it again finishes it, or the whole clone: never branches without their remote,
	 * which a second clone would refuse. */
	if ((err = prolly_remote_add(cli->db, "origin", origin)) == PROLLY_ECONFLICT) {
		if ((rc = origin_is(cli, origin, shown)))
			goto cleanup;
	} else if (err) {
		rc = fail_lib(cli, err, "cannot record remote 'origin'");
		goto cleanup;
	}
	r.prefix = "refs/heads/";
	if ((err = prolly_branch_list(src, collect_ref, &r)) == 0) {
		n_heads = r.n;
		r.prefix = "refs/tags/";
		err = prolly_tag_list(src, collect_ref, &r);
	}
	n_shown = r.n;
	for (size_t i = 0; i < n_heads && !err; i++) /* what prolly_fetch would record (RM2) */
		err = add_ref(&r, "remotes/origin/", r.names[i] + strlen("refs/heads/"), &r.u[i].value);
	if (err) {
		rc = fail_lib(cli, err, "cannot list the source's branches and tags");
		goto cleanup;
	}
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.operation = "clone";
	err = prolly_sync(&st, cli->db, src, NULL, 0, r.u, r.n, &o);
	for (size_t i = 0; i < r.n && err == PROLLY_ECONFLICT; i++)
		if (r.u[i].conflict) {
			/* A ref the clone creates is there at another commit (a tag, or a remote-tracking
			 * branch of an earlier clone whose branches were deleted): no rerun gets past it. */
			rc = fail(cli, EXIT_USAGE,
			          "%s already has '%s' at another commit: clone only into a new store; "
			          "no branch was made",
			          shown, r.u[i].name);
			goto cleanup;
		}
	if (err) {
		/* Damage (a ref of the source at a tree or at nothing, a missing tree) stays there: only
		 * a cut clone is finished by running it again. */
		rc = fail_lib(cli, err,
		              err == PROLLY_ECORRUPT || err == PROLLY_EINVAL || err == PROLLY_ENOTFOUND
		                  ? "clone failed (running it again will not help)"
		                  : "clone failed (run it again to finish it)");
		goto cleanup;
	}
	for (size_t i = 0; i < n_shown; i++) {
		escape_puts(stdout, r.u[i].name);
		putchar('\t');
		print_opt_id(&r.u[i].value);
		putchar('\n');
	}
	print_copied(&st);

cleanup:
	for (size_t i = 0; i < r.n; i++)
		free(r.names[i]);
	free(r.names);
	free(r.u);
	prolly_close(src);
	free(origin);
	free(dest);
	free(shown);
	return rc;
}

/* ---- fetch ----------------------------------------------------------------------------------- */

static int print_fetched(void *payload, const char *branch, const prolly_id *old_commit,
                         const prolly_id *new_commit)
{
	escape_puts(stdout, payload);
	putchar('/');
	/* A tracking ref of this store's: another client may have made it. */
	escape_puts(stdout, branch);
	putchar('\t');
	print_opt_id(old_commit);
	putchar('\t');
	print_opt_id(new_commit);
	putchar('\n');
	return 0;
}

/* Fetches remote name into cli->db (open), printing what moved. */
static int fetch_remote(struct cli *cli, const char *name)
{
	prolly_db *remote = NULL;
	int rc, err;
	if ((rc = open_remote(cli, &remote, name, PROLLY_OPEN_READONLY)))
		return rc;
	err = prolly_fetch(NULL, cli->db, remote, name, print_fetched, (void *)name);
	if (err)
		rc = fail_lib(cli, err, "cannot fetch from '%s'", name);
	prolly_close(remote);
	return rc;
}

int cmd_fetch(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	int n_pos, rc;
	if ((rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos)) ||
	    (rc = open_store(cli, STORE_WRITE, NULL)))
		return rc;
	return fetch_remote(cli, pos[0]);
}

/* ---- push ------------------------------------------------------------------------------------ */

int cmd_push(struct cli *cli, int argc, char **argv)
{
	int force = 0;
	struct opt opts[] = {{"force", 'f', NULL, &force}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	prolly_db *remote = NULL;
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	prolly_id head;
	int n_pos, rc, err;
	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)) ||
	    (rc = need_branch_name(cli, pos[1])) || (rc = open_store(cli, STORE_WRITE, NULL)) ||
	    (rc = branch_head(cli, &head, pos[1])) || (rc = open_remote(cli, &remote, pos[0], 0)))
		return rc;
	err = prolly_push(&st, cli->db, remote, pos[0], pos[1], force);
	if (err)
		rc = fail_lib(cli, err, "cannot push '%s' to '%s'", pos[1], pos[0]);
	else {
		escape_puts(stdout, pos[0]);
		putchar('/');
		escape_puts(stdout, pos[1]);
		putchar('\t');
		print_opt_id(&head);
		putchar('\n');
		print_copied(&st);
	}
	prolly_close(remote);
	return rc;
}

/* ---- pull ------------------------------------------------------------------------------------ */

int cmd_pull(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL, *resolve = NULL;
	struct opt opts[] = {
	    {"resolve", 0, &resolve, NULL}, {"message", 'm', &msg, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[2], *tracking = NULL, *auto_msg = NULL;
	prolly_id theirs, ours;
	int n_pos, rc, err;
	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)) ||
	    (rc = need_branch_name(cli, pos[1])) || (rc = open_store(cli, STORE_WRITE, NULL)) ||
	    (rc = fetch_remote(cli, pos[0])))
		return rc;
	if (!(tracking = format("%s/%s", pos[0], pos[1])))
		return fail(cli, EXIT_STORE, "out of memory");
	err = prolly_resolve(&theirs, cli->db, tracking);
	if (err) {
		rc = err == PROLLY_ENOTFOUND
		         ? fail(cli, EXIT_NOTFOUND, "remote '%s' has no branch '%s'", pos[0], pos[1])
		         : fail_lib(cli, err, "cannot read '%s'", tracking);
		goto cleanup;
	}
	err = prolly_branch_head(&ours, cli->db, pos[1]);
	if (err == PROLLY_ENOTFOUND) { /* a new branch here: it starts at theirs */
		if ((err = prolly_branch_create(cli->db, pos[1], &theirs)))
			rc = fail_lib(cli, err, "cannot create branch '%s'", pos[1]);
		else
			print_id(&theirs);
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot read branch '%s'", pos[1]);
		goto cleanup;
	}
	/* The rest is `prolly merge BRANCH REMOTE/BRANCH`, conflicts and exit 3 included. */
	if (!msg && !(msg = auto_msg = format("pull %s %s", pos[0], pos[1]))) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	char *margv[7];
	int margc = 0;
	margv[margc++] = argv[0];
	margv[margc++] = pos[1];
	margv[margc++] = tracking;
	margv[margc++] = "--message";
	margv[margc++] = (char *)msg;
	if (resolve) {
		margv[margc++] = "--resolve";
		margv[margc++] = (char *)resolve;
	}
	prolly_close(cli->db); /* cmd_merge opens the store itself */
	cli->db = NULL;
	fflush(stdout);
	rc = cmd_merge(cli, margc, margv);

cleanup:
	free(tracking);
	free(auto_msg);
	return rc;
}
