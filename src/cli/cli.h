/*
 * cli.h - what the files of the `prolly` command-line tool share.
 *
 * The tool uses only the public API (prolly.h). main.c parses the global options and dispatches
 * to one cmd_* function per command; common.c holds the helpers every command uses (argument
 * parsing, opening the store, error reporting, the commit path); escape.c converts between the
 * escaped text form of keys and values and their bytes.
 */
#ifndef PROLLY_CLI_H
#define PROLLY_CLI_H

#include "prolly.h"

#include <stdint.h>
#include <stdio.h>

/* Exit codes (documented in docs/prolly.1 and docs/cli.md). */
enum {
	EXIT_DONE = 0,     /* success */
	EXIT_NOTFOUND = 1, /* key, branch or commit not found */
	EXIT_USAGE = 2,    /* bad usage or bad input */
	EXIT_MERGE = 3,    /* merge conflict, nothing committed */
	EXIT_RACE = 4,     /* lost a concurrent update, nothing committed */
	EXIT_STORE = 5     /* store error: unreachable, corrupt, full; or an I/O error */
};

/* Returned by parse_args when --help was given and printed: the command exits 0. */
#define HELP_SHOWN (-1)

/* Shown in place of a value that does not exist (merge conflicts). The escaper never produces
 * it, and the unescaper rejects it, so it cannot be mistaken for a value. */
#define ABSENT_MARK "\\-"

struct cli;

typedef int (*command_fn)(struct cli *cli, int argc, char **argv);

struct command {
	const char *name;
	command_fn run;
	const char *synopsis; /* arguments after the name, for usage lines */
	const char *summary;  /* one line for `prolly --help` */
	const char *help;     /* the rest of `prolly COMMAND --help` */
};

/* State of one invocation. */
struct cli {
	const char *store_url;     /* --store, $PROLLY_STORE or the default */
	char store_shown[512];     /* store_url with any password hidden: the one to print */
	const struct command *cmd; /* the command running */
	int64_t time_us;           /* commit time: $PROLLY_COMMIT_TIME or 0 (now) */
	prolly_db *db;             /* opened by open_store */
};

/* An argument as it may be printed back: passwords hidden by prolly_redact_url (an argument
 * may be a store URL given in the wrong place). Returns buf->text. */
struct shown {
	char text[512];
};
const char *shown_arg(struct shown *buf, const char *arg);

/* The command table (main.c) and the commands (cmd_read.c, cmd_write.c). */
extern const struct command commands[];
const struct command *find_command(const char *name);
/* Prints `prolly COMMAND --help`. */
void print_command_help(const struct command *cmd, FILE *f);

int cmd_init(struct cli *cli, int argc, char **argv);
int cmd_put(struct cli *cli, int argc, char **argv);
int cmd_del(struct cli *cli, int argc, char **argv);
int cmd_apply(struct cli *cli, int argc, char **argv);
int cmd_branch(struct cli *cli, int argc, char **argv);
int cmd_merge(struct cli *cli, int argc, char **argv);
int cmd_gc(struct cli *cli, int argc, char **argv);
int cmd_get(struct cli *cli, int argc, char **argv);
int cmd_scan(struct cli *cli, int argc, char **argv);
int cmd_diff(struct cli *cli, int argc, char **argv);
int cmd_branches(struct cli *cli, int argc, char **argv);
int cmd_log(struct cli *cli, int argc, char **argv);
int cmd_root(struct cli *cli, int argc, char **argv);
int cmd_stats(struct cli *cli, int argc, char **argv);
int cmd_verify(struct cli *cli, int argc, char **argv);

/* ---- escape.c ---------------------------------------------------------------------------- */

/* A growable byte string owned by the CLI. */
struct bytes {
	unsigned char *ptr;
	size_t size;
	size_t cap;
};
#define BYTES_INIT                                                                                 \
	{                                                                                              \
		NULL, 0, 0                                                                                 \
	}

int bytes_append(struct bytes *b, const void *data, size_t size); /* 0 or -1 (out of memory) */
void bytes_dispose(struct bytes *b);

/* Appends the bytes that the escaped text s[0..n) stands for to out. Returns 0, or -1 with *why
 * set to a static description of the bad escape and *where to its offset in s; or -2 when out of
 * memory. */
int unescape_append(struct bytes *out, const char *s, size_t n, const char **why, size_t *where);

/* Writes data escaped (see the ESCAPES section of the man page). */
void escape_write(FILE *f, const void *data, size_t size);

/* A malloc'd NUL-terminated escaped copy of data, or NULL when out of memory. */
char *escape_dup(const void *data, size_t size);

/* ---- common.c ---------------------------------------------------------------------------- */

/* Describes a command option for parse_args. An option with `value` takes an argument
 * (`--name VALUE` or `--name=VALUE`, or `-c VALUE`); one with `flag` is a switch. */
struct opt {
	const char *name; /* long name without the dashes */
	char letter;      /* short form, or 0 */
	const char **value;
	int *flag;
};

/*
 * Parses argv (argv[0] is the command name) into options and positional arguments. Options may
 * appear anywhere before a `--`; everything after `--` is positional; a lone `-` is positional.
 * opts ends with an entry whose name is NULL. pos receives at most max positional arguments
 * (their count in *n_pos); fewer than min is a usage error. Returns 0, HELP_SHOWN (help was
 * printed), or EXIT_USAGE (after printing the error).
 */
int parse_args(struct cli *cli, int argc, char **argv, const struct opt *opts, char **pos, int min,
               int max, int *n_pos);

/* Prints "prolly: COMMAND: MESSAGE (see 'prolly COMMAND --help')" and returns EXIT_USAGE. */
int usage_error(struct cli *cli, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "prolly: COMMAND: MESSAGE" and returns code. */
int fail(struct cli *cli, int code, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prints "prolly: COMMAND: MESSAGE: <the library's last error>" (or, with fmt NULL, only
 * "prolly: COMMAND: <the library's last error>") and returns the exit code that matches the
 * library error err. */
int fail_lib(struct cli *cli, int err, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The exit code for a library error code. */
int exit_code_for(int err);

/* Opens cli->store_url into cli->db. Unless create is set, a missing lmdb directory is an error
 * rather than a new empty store. opts may be NULL. Returns 0 or an exit code (reported). */
int open_store(struct cli *cli, int create, const prolly_options *opts);

/* Decodes an escaped argument (a key, value or prefix). what names it in error messages.
 * Returns 0 or an exit code (reported). */
int arg_bytes(struct cli *cli, struct bytes *out, const char *arg, const char *what);

/* Parses a non-negative decimal count. Returns 0 or EXIT_USAGE (reported). */
int arg_count(struct cli *cli, uint64_t *out, const char *arg, const char *what);

/* Resolves BRANCH, BRANCH~N or a commit id to a commit. Returns 0 or an exit code (reported). */
int resolve_commit(struct cli *cli, prolly_id *out, const char *spec);

/* Resolves as resolve_commit and reads the commit's tree id. */
int resolve_tree(struct cli *cli, prolly_id *out, const char *spec);

/* Checks that name is a branch name (commands that write need one). Returns 0 or EXIT_USAGE. */
int need_branch_name(struct cli *cli, const char *name);

/* Reads the head of an existing branch (need_branch_name first). Returns 0 or an exit code. */
int branch_head(struct cli *cli, prolly_id *out, const char *branch);

/* The time of a new commit: cli->time_us (or now when 0), moved forward if needed so that it is
 * later than every parent's. History then never goes backwards, whatever the clocks do. */
int64_t commit_time(struct cli *cli, const prolly_commit *const *parents, size_t n);

/*
 * Applies edits to the tree of commit `head`, creates a commit (parent head, time commit_time(),
 * message) and moves `branch` from head to it by compare-and-swap, in one store write. out
 * receives the new commit. Returns 0 or an exit code (reported; EXIT_RACE when the branch moved).
 */
int commit_edits(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                 const prolly_edit *edits, size_t n, const char *message);

/* Commits the txn's queued ref moves; reports a lost race on `branch`. Returns 0 or exit code. */
int publish(struct cli *cli, prolly_txn *txn, const char *branch);

/* Prints an id in hex followed by a newline on stdout. */
void print_id(const prolly_id *id);

/* Makes sure stdout reached its destination; returns code, or EXIT_STORE if writing failed. */
int finish_output(struct cli *cli, int code);

/* malloc'd printf, or NULL when out of memory. */
char *format(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif /* PROLLY_CLI_H */
