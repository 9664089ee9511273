/*
 * cli.h - what the files of the `prolly` command-line tool share.
 *
 * The tool uses only the public API (prolly.h). main.c parses the global options and dispatches
 * to one cmd_* function per command; common.c holds the helpers every command uses (argument
 * parsing, opening the store, the commit path); report.c writes every error line; escape.c
 * converts between the escaped text form of keys and values and their bytes.
 */
#ifndef PROLLY_CLI_H
#define PROLLY_CLI_H

#include "prolly.h"

#include <stdarg.h>
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
/* Returned by publish_branch while cli->retry_moved is set and the branch moved (or a gc ran)
 * since the command read it: nothing was committed, run_again_on_move runs the command again. */
#define RUN_AGAIN (-2)

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
	char *store_shown;         /* store_url with any password hidden (redacted): the one to print */
	const struct command *cmd; /* the command running */
	int64_t time_us;           /* commit time: $PROLLY_COMMIT_TIME or 0 (now) */
	prolly_db *db;             /* opened by open_store */
	int allow_empty;           /* --allow-empty: commit even when the tree does not change */
	int retry_moved;           /* publish_branch: RUN_AGAIN on a moved branch (run_again_on_move) */
	unsigned node_size;        /* init --node-size: the node size of a store it makes (0: 4096) */
	int argc;                  /* the command's arguments, argv[0] its name: an error line */
	char **argv;               /* is redacted whole when one of them carries a password */
};

/* An argument as it may be printed back in an error line: passwords hidden by prolly_redact_url
 * (an argument may be a store URL given in the wrong place), and one of over 511 bytes cut to
 * 511 ending in " ..." (a message quotes it, and the line must keep room for its reason).
 * Returns buf->text. */
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
int cmd_show(struct cli *cli, int argc, char **argv);
int cmd_root(struct cli *cli, int argc, char **argv);
int cmd_stats(struct cli *cli, int argc, char **argv);
int cmd_verify(struct cli *cli, int argc, char **argv);
int cmd_del_range(struct cli *cli, int argc, char **argv);   /* cmd_delrange.c */
int cmd_history(struct cli *cli, int argc, char **argv);     /* cmd_history.c */
int cmd_merge_base(struct cli *cli, int argc, char **argv);  /* cmd_query.c */
int cmd_get_many(struct cli *cli, int argc, char **argv);    /* cmd_query.c */
int cmd_revert(struct cli *cli, int argc, char **argv);      /* cmd_pick.c */
int cmd_cherry_pick(struct cli *cli, int argc, char **argv); /* cmd_pick.c */
/* cmd_merge.c, shared with cmd_pick.c: --resolve's argument (NULL: fail), and the conflict
 * report line (!<TAB>KEY<TAB>BASE<TAB>OURS<TAB>THEIRS) counting into *(uint64_t *)payload. */
int parse_resolver(struct cli *cli, prolly_resolver *out, const char *s);
int print_conflict(void *payload, const prolly_conflict *c);
/* History and refs (cmd_refs.c): reflog, tags, reset. */
int cmd_reflog(struct cli *cli, int argc, char **argv);
int cmd_tag(struct cli *cli, int argc, char **argv);
int cmd_tags(struct cli *cli, int argc, char **argv);
int cmd_reset(struct cli *cli, int argc, char **argv);
/* Writes time_us as YYYY-MM-DDTHH:MM:SS.ffffffZ, the year 4 digits or more (cmd_read.c). */
void print_time(int64_t time_us);
int cmd_recover(struct cli *cli, int argc, char **argv); /* cmd_recover.c */
/* History between stores (cmd_remote.c). */
int cmd_remote(struct cli *cli, int argc, char **argv);
int cmd_clone(struct cli *cli, int argc, char **argv);
int cmd_fetch(struct cli *cli, int argc, char **argv);
int cmd_push(struct cli *cli, int argc, char **argv);
int cmd_pull(struct cli *cli, int argc, char **argv);
/* Proofs (cmd_proof.c). */
int cmd_prove(struct cli *cli, int argc, char **argv);
int cmd_check_proof(struct cli *cli, int argc, char **argv);

/* The commands that commit a change to one branch (put, del, apply, del-range; cmd_write.c):
 * parse_change_args parses their options (-m/--message into *msg, --allow-empty into
 * cli->allow_empty) and exactly n positional arguments into pos, the first a branch name;
 * default_message sets *msg, when no -m gave one, to a message made from fmt (malloc'd into
 * *auto_msg, which the caller frees). Both return 0 or an exit code (reported). */
/* The end of a command that creates, restores or deletes a branch or tag (cmd_refs.c): err is
 * the library's result. 0 prints id; the failure the operation expects (PROLLY_ECONFLICT:
 * "KIND 'NAME' already exists" and hint, exit 2; PROLLY_ENOTFOUND: "no KIND 'NAME'", exit 1) is
 * said in the command's words; any other as "cannot VERB KIND 'NAME'". Returns the exit code. */
int ref_done(struct cli *cli, int err, const prolly_id *id, int expected, const char *verb,
             const char *kind, const char *name, const char *hint);
int parse_change_args(struct cli *cli, int argc, char **argv, const char **msg, char **pos, int n);
int default_message(struct cli *cli, const char **msg, char **auto_msg, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 4, 5)))
#endif
    ;

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
/* The CLI's one growth rule (it sees only prolly.h, so not the library's): makes room for need
 * elements of elem bytes in the array *arrp (the address of a T *) of capacity *cap, doubling
 * from first. 0, or -1 (out of memory) with the array untouched. The macro skips the call when
 * there is room and evaluates its arguments more than once. */
int grow_array(void *arrp, size_t *cap, size_t need, size_t elem, size_t first);
#define GROW_ARRAY(arr, cap, need, first)                                                          \
	((need) <= (cap) ? 0 : grow_array(&(arr), &(cap), (need), sizeof(*(arr)), (first)))
/* The bytes at offset off (at most b->size) of b. An arena that only ever received empty strings
 * never allocated: its ptr is NULL, and adding even 0 to a NULL pointer is undefined behaviour,
 * so offsets into an arena go through here. */
const unsigned char *bytes_at(const struct bytes *b, size_t off);
void bytes_dispose(struct bytes *b);
/* Byte order of two strings (a shorter prefix first), as the store orders keys: <0, 0, >0. */
int bytes_cmp(const void *a, size_t alen, const void *b, size_t blen);

/* Appends the bytes that the escaped text s[0..n) stands for to out. Returns 0, or -1 with *why
 * set to a static description of the bad escape and *where to its offset in s; or -2 when out of
 * memory. */
int unescape_append(struct bytes *out, const char *s, size_t n, const char **why, size_t *where);

/* Writes data escaped (see the ESCAPES section of the man page). */
void escape_write(FILE *f, const void *data, size_t size);
/* Writes the string s escaped: how every text a user or a store gave goes to standard output
 * (names, messages, URLs), never as it is. */
void escape_puts(FILE *f, const char *s);
/* Writes value escaped, or ABSENT_MARK when value is NULL, and a newline. */
void escape_value_line(FILE *f, const void *value, size_t size);

/* A malloc'd NUL-terminated escaped copy of data, or NULL when out of memory. */
char *escape_dup(const void *data, size_t size);

/* Appends the message s to out made safe for a terminal: control bytes (C0, DEL, C1) and every
 * byte of invalid UTF-8 as \xHH, the rest (UTF-8 text, backslashes) as it is. Returns 0 or -1
 * (out of memory). */
int text_append(struct bytes *out, const char *s);

/* ---- input.c: the line inputs of apply and get-many ----------------------------------------- */

/* Reads one line of f into line (without its '\n'; NUL bytes kept), as getline does but reading
 * no more than max bytes of it: *too_long is set for a longer line, whose rest stays unread, so
 * that one endless line cannot take all memory. Returns 1 for a line, 0 at the end of the input
 * (or a read error: see ferror), -2 when out of memory. */
int read_line_max(FILE *f, struct bytes *line, size_t max, int *too_long);

/* One line of an apply file: the op, and offsets into the arena (which moves as it grows). */
struct pending {
	prolly_op op;
	int range; /* delr: key is FROM, value is TO */
	size_t koff, klen, voff, vlen;
};

/* An apply file read whole: its lines in order, their keys and values decoded into the arena.
 * Zero it (or {BYTES_INIT, NULL, 0, 0}) before reading; free with edit_file_dispose. */
struct edit_file {
	struct bytes arena; /* decoded keys and values */
	struct pending *items;
	size_t n, cap;
};

/* Reads and parses the apply input at path ("-": standard input) into ef, which name calls it in
 * messages (file:LINE: ...). Returns 0, or an exit code (reported): EXIT_NOTFOUND for a missing
 * file, EXIT_USAGE for one that cannot be opened or read and for a malformed line (every line is
 * checked before anything is committed), EXIT_STORE when out of memory. */
int read_edit_file(struct cli *cli, struct edit_file *ef, const char *path, const char *name);
/* read_edit_file of the open stream f (read to its end; not closed). */
int read_edits(struct cli *cli, struct edit_file *ef, FILE *f, const char *name);
void edit_file_dispose(struct edit_file *ef); /* NULL ok */

/* ---- isolate.c: store access in a child process (see the file) ---------------------------- */

/* Runs fn(cli, arg) in a child process and returns its exit code. If a signal that means damage
 * (not SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, which the caller then dies of too) ended the
 * child, *sig receives it and EXIT_STORE is returned, nothing reported. */
int isolated(struct cli *cli, int (*fn)(struct cli *cli, void *arg), void *arg, int *sig);

/* "SIGSEGV", "SIGBUS", ... for the signals isolated() reports. */
const char *signal_name(int sig);

/* Runs cli->cmd and returns its exit code; a crash is reported. On lmdb: stores the command runs
 * in a child (isolated) and, when the child exited, the process ends here with its status
 * (_exit: the child already flushed the output and ran the exit handlers). */
int run_command(struct cli *cli, int argc, char **argv);

/* ---- interrupt.c: Ctrl-C, SIGTERM, SIGHUP during clone, fetch, push, pull (see the file) ---- */

/* For clone, fetch, push and pull (no other command): has SIGINT, SIGTERM and SIGHUP print one
 * line saying that no ref names a partly copied commit and that running the command again
 * finishes it, then end the tool by that signal as before (status 130, 143, 129 in a shell). A
 * signal ignored on entry stays ignored. */
void catch_interrupt(const char *command);

/* Gives those signals back the dispositions catch_interrupt found (in a child of isolated(), so
 * that one Ctrl-C prints one line, the parent's). */
void release_interrupt(void);

/* Ends the tool by sig (the child of isolated() died of it): through catch_interrupt's handler
 * where it holds sig, so the line is printed, else by sig's default action. Returns only if sig
 * does not end a process by default. */
void die_by_signal(int sig);

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

/* Reporting (report.c). Every line goes to stderr as "prolly: COMMAND: MESSAGE" (no COMMAND
 * before one is known), its control bytes as \xHH and cut to at most 1023 bytes around " ... "
 * if longer, so what a user typed or a store holds cannot drive the terminal. */

/* malloc'd printf, or NULL when out of memory. */
char *format(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The same with a va_list, which it uses up as vsnprintf does (the caller va_ends it). */
char *vformat(const char *fmt, va_list ap);

/* Prints "prolly: COMMAND: MESSAGE" (not a failure: a note such as "no change"). */
void report(const struct cli *cli, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* url (a store URL, or an argument that may be one) through prolly_redact_url, whole: malloc'd,
 * NULL when out of memory. The one way a URL is printed. */
char *redacted(const char *url);

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

/* How open_store opens (PROLLY_OPEN_* flags): STORE_WRITE an existing store, creating nothing;
 * STORE_CREATE creates it if missing (init only); STORE_READ an existing store read-only (no
 * file, table or row is written: commands that only read). */
enum { STORE_WRITE = 0, STORE_CREATE = 1, STORE_READ = 2 };

/* Opens cli->store_url into cli->db as mode says. A store that does not exist is "no store at
 * URL" (EXIT_STORE) unless mode is STORE_CREATE. opts may be NULL. Returns 0 or an exit code
 * (reported). */
int open_store(struct cli *cli, int mode, const prolly_options *opts);

/* prolly_open_ex with the node size of a store the open makes (0: the default; an existing store
 * of another size is PROLLY_EINVAL): the library's code, its message set. */
int open_sized(prolly_db **out, const char *url, const prolly_options *opts, unsigned flags,
               unsigned node_size);

/* Decodes an escaped argument (a key, value or prefix). what names it in error messages.
 * Returns 0 or an exit code (reported). */
int arg_bytes(struct cli *cli, struct bytes *out, const char *arg, const char *what);

/* arg_bytes for a key, which is also refused (EXIT_USAGE) when longer than PROLLY_MAX_KEY: no
 * such key can be stored, so a read of one is a mistake rather than "not found". */
int arg_key(struct cli *cli, struct bytes *out, const char *arg);
/* arg_key for a key bound or prefix (what names it: "--from key"), refused alike. */
int arg_key_as(struct cli *cli, struct bytes *out, const char *arg, const char *what);

/* Parses a non-negative decimal count. Returns 0 or EXIT_USAGE (reported). */
int arg_count(struct cli *cli, uint64_t *out, const char *arg, const char *what);

/* Resolves BRANCH, BRANCH~N or a commit id to a commit. Returns 0 or an exit code (reported). */
int resolve_commit(struct cli *cli, prolly_id *out, const char *spec);

/* Resolves as resolve_commit, the commit itself decoded into *out (prolly_resolve_commit: a
 * bare branch's ref, commit and root in one round trip where the store can). */
int resolve_commit_read(struct cli *cli, prolly_commit **out, const char *spec);
/* Resolves as resolve_commit and reads the commit's tree id. */
int resolve_tree(struct cli *cli, prolly_id *out, const char *spec);

/* Checks that name is a branch name (commands that write need one). Returns 0 or EXIT_USAGE. */
int need_branch_name(struct cli *cli, const char *name);

/* Reads the head commit of an existing branch (need_branch_name first), with its tree's root in
 * the same round trip where the store can (prolly_branch_commit); a commit that lands on it next
 * (prolly_commit_edits_on) then reads no head again. Free *out with prolly_commit_free. Returns
 * 0 or an exit code (*out NULL). */
int branch_commit(struct cli *cli, prolly_commit **out, const char *branch);

/* branch_commit, keeping the commit's id only. */
int branch_head(struct cli *cli, prolly_id *out, const char *branch);

/*
 * Applies edits to the tree of commit `head`, creates a commit (parent head, time prolly_next_commit_time(),
 * message) and moves `branch` from head to it by compare-and-swap, in one store write. out
 * receives the new commit (or head, when the tree is unchanged: see commit_changes). Returns 0 or
 * an exit code (reported; EXIT_RACE when the branch moved).
 */
int commit_edits(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                 const prolly_edit *edits, size_t n, const char *message);

/* One step of a change made by commit_changes: a batch of edits (prolly_edit_tree), or, with
 * range set, the deletion of every key in [from, to) (prolly_delete_range). */
struct change {
	const prolly_edit *edits;
	size_t n;
	int range;
	prolly_slice from, to;
};

/* commit_edits with several steps applied in order to the same tree. When the tree comes out
 * unchanged and cli->allow_empty is 0, nothing is committed: "no change" goes to stderr, *out
 * receives head, and the result is 0. A branch that moved from head meanwhile takes the changes
 * unless a key they write, or one inside a range of theirs, changed there (a diff of the two
 * heads' trees): then nothing is committed, exit 4 (commit.c). */
int commit_changes(struct cli *cli, prolly_id *out, const char *branch, const prolly_id *head,
                   const struct change *ch, size_t n_ch, const char *message);

/* Commits the txn's queued ref moves; reports a lost race on `branch`. Returns 0 or exit code;
 * RUN_AGAIN instead of the report while cli->retry_moved is set, when `branch` moved to another
 * commit or a gc ran meanwhile (nothing reported). */
int publish_branch(struct cli *cli, prolly_txn *txn, const char *branch);

/* Runs once (merge, revert, cherry-pick: a three-way merge on the branch's head) and, while it
 * returns RUN_AGAIN, again on the moved head, up to MOVED_ATTEMPTS times in all; the last
 * attempt reports a lost race as publish_branch does (exit 4). A key the other writer changed
 * that the command changes too is then a conflict of the new merge (exit 3), never lost. */
int run_again_on_move(struct cli *cli, int (*once)(struct cli *, int, char **), int argc,
                      char **argv);

/* Prints an id in hex followed by a newline on stdout. */
void print_id(const prolly_id *id);

/* The branches of a store, collected by list_branches (a prolly_branch_fn; payload a struct
 * branch_list zeroed by the caller) so that their commits are read after the listing, not
 * inside its callback. oom: a name or slot could not be allocated (the listing then stopped).
 * Free with branch_list_dispose. */
struct branch_list {
	char **names;
	prolly_id *heads;
	size_t n, capn, caph;
	int oom;
};
int list_branches(void *payload, const char *name, const prolly_id *commit);
void branch_list_dispose(struct branch_list *bl);

/* Makes sure stdout reached its destination; returns code, or EXIT_STORE (reported) if writing
 * failed and code was 0 (a failed command has reported already: one error line). */
int finish_output(struct cli *cli, int code);

#endif /* PROLLY_CLI_H */
