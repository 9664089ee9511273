/*
 * common.c - helpers every command uses: argument parsing, opening the store, resolving branch
 * specs (committing is commit.c's).
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct opt *find_long(const struct opt *opts, const char *name, size_t len)
{
	for (const struct opt *o = opts; o && o->name; o++)
		if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

static const struct opt *find_short(const struct opt *opts, char letter)
{
	for (const struct opt *o = opts; o && o->name; o++)
		if (o->letter && o->letter == letter)
			return o;
	return NULL;
}

int parse_args(struct cli *cli, int argc, char **argv, const struct opt *opts, char **pos, int min,
               int max, int *n_pos)
{
	struct shown sh;
	int n = 0, only_pos = 0;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (n >= max)
				return usage_error(cli, "unexpected argument '%s'", shown_arg(&sh, a));
			pos[n++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			print_command_help(cli->cmd, stdout);
			return HELP_SHOWN;
		}
		const struct opt *o;
		const char *inline_value = NULL;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			o = find_long(opts, name, len);
			if (eq)
				inline_value = eq + 1;
		} else {
			o = find_short(opts, a[1]);
			if (o && a[2] != '\0') {
				if (!o->value)
					o = NULL;
				else
					inline_value = a + 2;
			}
		}
		if (!o && (strcmp(a, "--store") == 0 || strncmp(a, "--store=", 8) == 0))
			return usage_error(cli, "--store goes before the command: prolly --store URL %s ...",
			                   cli->cmd->name);
		if (!o)
			return fail(cli, EXIT_USAGE,
			            "unknown option '%s' (see 'prolly %s --help'; put -- "
			            "before arguments that start with -)",
			            shown_arg(&sh, a), cli->cmd->name);
		if (o->flag) {
			if (inline_value)
				return usage_error(cli, "option --%s takes no value", o->name);
			*o->flag = 1;
			continue;
		}
		if (inline_value) {
			*o->value = inline_value;
		} else {
			if (i + 1 >= argc)
				return usage_error(cli, "option --%s needs a value", o->name);
			*o->value = argv[++i];
		}
	}
	if (n < min)
		return usage_error(cli, "missing arguments: usage: prolly %s %s", cli->cmd->name,
		                   cli->cmd->synopsis);
	*n_pos = n;
	return 0;
}

const char *shown_arg(struct shown *buf, const char *arg)
{
	static const char cut[] = " ...";
	char *whole = redacted(arg);
	size_t n = whole ? strlen(whole) : 0, h = sizeof(buf->text) - sizeof(cut);
	if (!whole) /* out of memory: what fits, passwords hidden all the same */
		prolly_redact_url(buf->text, sizeof(buf->text), arg);
	else if (n < sizeof(buf->text))
		memcpy(buf->text, whole, n + 1);
	else { /* a cut says so; it falls at the start of a UTF-8 character */
		while (h > 0 && ((unsigned char)whole[h] & 0xC0) == 0x80)
			h--;
		memcpy(buf->text, whole, h);
		memcpy(buf->text + h, cut, sizeof(cut));
	}
	free(whole);
	return buf->text;
}

static int is_pg_url(const char *url)
{
	return strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0 ||
	       strchr(url, '=') != NULL;
}

int open_sized(prolly_db **out, const char *url, const prolly_options *opts, unsigned flags,
               unsigned node_size)
{
	prolly_store_options so = PROLLY_STORE_OPTIONS_INIT;
	prolly_store *st;
	int err;
	if (!node_size)
		return prolly_open_ex(out, url, opts, flags);
	so.flags = flags;
	so.node_size = node_size;
	if ((err = prolly_store_open_opts(&st, url, &so)))
		return err;
	return prolly_db_new(out, st, opts); /* owns st, also on failure */
}

int open_store(struct cli *cli, int mode, const prolly_options *opts)
{
	if (cli->db) /* open already: a command run again (run_again_on_move) */
		return 0;
	const char *url = cli->store_url, *shown = cli->store_shown;
	prolly_options with_clock;
	if (cli->time_us) { /* PROLLY_COMMIT_TIME is the clock of reflog entries and gc too */
		if (opts)
			with_clock = *opts;
		else
			prolly_options_init(&with_clock, PROLLY_OPTIONS_VERSION);
		with_clock.clock_us = cli->time_us;
		opts = &with_clock;
	}
	unsigned flags = mode == STORE_CREATE ? PROLLY_OPEN_CREATE
	                 : mode == STORE_READ ? PROLLY_OPEN_READONLY
	                                      : 0;
	int err = open_sized(&cli->db, url, opts, flags, cli->node_size);
	/* The creating open migrates an older schema only where the role may, and leaves old rows
	 * that fail the node check for init: prolly_store_pg_init reports both (docs/postgres.md). */
	if (!err && mode == STORE_CREATE && is_pg_url(url) &&
	    (err = prolly_store_pg_init(prolly_db_store(cli->db))))
		return fail_lib(cli, err, "cannot initialize %s", shown);
	if (err == PROLLY_ENOTFOUND)
		return fail(cli, EXIT_STORE, "no store at %s (create one with 'prolly init')", shown);
	if (err) {
		/* A URL of a known kind that cannot be opened is an unreachable store; PROLLY_EINVAL
		 * is bad usage only for a URL the library does not understand. */
		int known = strncmp(url, "lmdb:", 5) == 0 || strcmp(url, "mem:") == 0 || is_pg_url(url);
		int code = fail_lib(cli, err, "cannot open store %s", shown);
		return code == EXIT_USAGE && !known ? EXIT_USAGE : code == EXIT_RACE ? code : EXIT_STORE;
	}
	return 0;
}

int arg_bytes(struct cli *cli, struct bytes *out, const char *arg, const char *what)
{
	const char *why = NULL;
	size_t where = 0;
	out->size = 0;
	int rc = unescape_append(out, arg, strlen(arg), &why, &where);
	if (rc == -2)
		return fail(cli, EXIT_STORE, "out of memory");
	if (rc)
		return fail(cli, EXIT_USAGE, "bad %s '%s': %s at offset %zu", what, arg, why, where);
	return 0;
}

int arg_key_as(struct cli *cli, struct bytes *out, const char *arg, const char *what)
{
	int rc = arg_bytes(cli, out, arg, what);
	if (rc == 0 && out->size > PROLLY_MAX_KEY)
		rc = fail(cli, EXIT_USAGE, "the %s is %zu bytes; at most %d are allowed", what, out->size,
		          PROLLY_MAX_KEY);
	return rc;
}

int arg_key(struct cli *cli, struct bytes *out, const char *arg)
{
	return arg_key_as(cli, out, arg, "key");
}

int arg_count(struct cli *cli, uint64_t *out, const char *arg, const char *what)
{
	char *end;
	if (arg[0] < '0' || arg[0] > '9')
		return usage_error(cli, "%s must be a non-negative integer, not '%s'", what, arg);
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || *end != '\0')
		return usage_error(cli, "%s must be a non-negative integer, not '%s'", what, arg);
	*out = (uint64_t)v;
	return 0;
}

/* A failed resolve of spec: the library's message names the spec and what is wrong with it
 * (for PROLLY_EPRUNED, how far back the reflog of NAME@{...} reaches); other errors get it. */
static int resolve_failed(struct cli *cli, int err, const char *spec)
{
	if (err == PROLLY_ENOTFOUND || err == PROLLY_EINVAL || err == PROLLY_EPRUNED)
		return fail_lib(cli, err, NULL);
	return fail_lib(cli, err, "cannot resolve '%s'", spec);
}

int resolve_commit(struct cli *cli, prolly_id *out, const char *spec)
{
	prolly_commit *c = NULL;
	int err;
	/* A bare name: the branch's ref, commit and root in one round trip, after which a ref made
	 * or moved to it reads nothing more (prolly_resolve_commit). With steps (~N, ^N), the walk
	 * reads the commits it needs and the last one needs no other read. */
	if (!strpbrk(spec, "~^")) {
		err = prolly_resolve_commit(&c, cli->db, spec);
		if (c)
			*out = c->id;
		prolly_commit_free(c);
	} else {
		err = prolly_resolve(out, cli->db, spec);
	}
	return err ? resolve_failed(cli, err, spec) : 0;
}

int resolve_commit_read(struct cli *cli, prolly_commit **out, const char *spec)
{
	int err = prolly_resolve_commit(out, cli->db, spec);
	return err ? resolve_failed(cli, err, spec) : 0;
}

/* The tree of spec's commit: for a branch, its ref, commit and root in one round trip where the
 * store can (prolly_resolve_commit), so the read that follows starts one level down. */
int resolve_tree(struct cli *cli, prolly_id *out, const char *spec)
{
	prolly_commit *c = NULL;
	int rc = resolve_commit_read(cli, &c, spec);
	if (rc == 0)
		*out = c->tree;
	prolly_commit_free(c);
	return rc;
}

int need_branch_name(struct cli *cli, const char *name)
{
	/* Like every int function of the library: 0 when valid, PROLLY_EINVAL saying why not. */
	int err = prolly_branch_name_valid(name);
	if (err == 0)
		return 0;
	size_t len = strlen(name);
	int hex = len == 2 * PROLLY_ID_SIZE && strspn(name, "0123456789abcdefABCDEF") == len;
	struct shown sh;
	if (strchr(name, '~'))
		return fail(cli, EXIT_USAGE,
		            "'%s' is not a branch name: %s writes to a branch, and "
		            "BRANCH~N names an old commit",
		            shown_arg(&sh, name), cli->cmd->name);
	if (hex) /* hex digits only: nothing to escape */
		/* Older libraries made such branches; they are read and deleted, never written. */
		return fail(cli, EXIT_USAGE,
		            "'%s' is not a valid branch name: %s; a branch of that name, which an older "
		            "prolly may have made, is read but never written: 'prolly branch NEW %s' "
		            "copies it to a new name, then 'prolly branch -d %s' removes it",
		            name, prolly_last_error(), name, name);
	return fail_lib(cli, PROLLY_EINVAL, "'%s' is not a valid branch name", shown_arg(&sh, name));
}

int branch_commit(struct cli *cli, prolly_commit **out, const char *branch)
{
	int err = prolly_branch_commit(out, cli->db, branch);
	if (err == PROLLY_ENOTFOUND) /* "no branch 'x'", or the commit it names is gone */
		return fail_lib(cli, err, NULL);
	if (err)
		return fail_lib(cli, err, "cannot read branch '%s'", branch);
	return 0;
}

int branch_head(struct cli *cli, prolly_id *out, const char *branch)
{
	prolly_commit *c = NULL;
	int rc = branch_commit(cli, &c, branch);
	if (rc == 0)
		*out = c->id;
	prolly_commit_free(c);
	return rc;
}

void print_id(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	printf("%s\n", hex);
}

int list_branches(void *payload, const char *name, const prolly_id *commit)
{
	struct branch_list *bl = payload;
	if (GROW_ARRAY(bl->names, bl->capn, bl->n + 1, 16) ||
	    GROW_ARRAY(bl->heads, bl->caph, bl->n + 1, 16) || !(bl->names[bl->n] = strdup(name))) {
		bl->oom = 1;
		return 1;
	}
	bl->heads[bl->n++] = *commit;
	return 0;
}

void branch_list_dispose(struct branch_list *bl)
{
	for (size_t i = 0; i < bl->n; i++)
		free(bl->names[i]);
	free(bl->names);
	free(bl->heads);
}

int finish_output(struct cli *cli, int code)
{
	/* A command that failed has said why in its one line (prove's "cannot write the proof"
	 * among them): a second line about the output would break that rule. */
	if ((fflush(stdout) != 0 || ferror(stdout)) && code == 0) {
		int e = errno;
		return fail(cli, EXIT_STORE, "cannot write the output: %s", strerror(e));
	}
	return code;
}
