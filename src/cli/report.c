/*
 * report.c - how the tool reports on stderr: one line, "prolly: COMMAND: MESSAGE"; and the
 * malloc'd printf (format, vformat) that messages and commit messages are made with.
 *
 * A message quotes what the user typed and what a store holds (names, paths, URLs, keys, the
 * library's message about them), and any of these may hold bytes a terminal acts on: an escape
 * sequence can recolour the screen, retitle the window or hide the rest of the line. So every
 * line goes out through put_line(): the control bytes (C0, DEL, the C1 controls U+0080..U+009F)
 * and every byte of invalid UTF-8 (which a terminal in an 8-bit mode may take for a C1 control)
 * become `\xHH` (text_append, escape.c); text, UTF-8 included, stays as it is. A line longer than
 * the library's messages (1023 bytes) keeps its beginning and its end where the reason is, cut by
 * the library's own rule (prolly_set_error), so a 100 kB argument cannot flood the terminal.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

char *vformat(const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *s = n < 0 ? NULL : malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, again);
	va_end(again);
	return s;
}

char *format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

char *redacted(const char *url)
{
	size_t cap = 3 * strlen(url) + 16; /* "***" for a 1-byte secret: never cut */
	char *shown = malloc(cap);
	if (shown)
		prolly_redact_url(shown, cap, url);
	return shown;
}

/* Whether arg carries a password (prolly_redact_url changes it): a URL typed where a branch,
 * remote, key or number goes, which the library's messages quote as it is ("branch name
 * 'postgresql://u:PASSWORD@h/db' holds byte 0x3a"). 1, 0, or -1 when out of memory. */
static int carries_secret(const char *arg)
{
	char *shown = redacted(arg);
	if (!shown)
		return -1;
	int differs = strcmp(shown, arg) != 0;
	free(shown);
	return differs;
}

/* Hides in *line (malloc'd, replaced) what each argument of the command that carries a password
 * holds: prolly_redact_message with the argument as the connection string hides its password
 * wherever it appears, also where a message quotes part of it. Returns 0 or -1 (out of memory). */
static int hide_arg_secrets(const struct cli *cli, char **line)
{
	for (int i = 1; cli && i < cli->argc; i++) {
		int secret = carries_secret(cli->argv[i]);
		if (secret <= 0) {
			if (secret < 0)
				return -1;
			continue;
		}
		size_t cap = 3 * strlen(*line) + 16;
		char *hidden = malloc(cap);
		if (!hidden)
			return -1;
		prolly_redact_message(hidden, cap, *line, cli->argv[i]);
		free(*line);
		*line = hidden;
	}
	return 0;
}

/* Writes "prolly: [COMMAND: ]head[: tail]\n" to stderr, made safe and clipped (above); the whole
 * line hides what an argument carrying a password holds (hide_arg_secrets). */
static void put_line(const struct cli *cli, const char *head, const char *tail)
{
	struct bytes b = BYTES_INIT;
	fflush(stdout);
	if (text_append(&b, head) || (tail && (bytes_append(&b, ": ", 2) || text_append(&b, tail))) ||
	    bytes_append(&b, "", 1)) {
		fprintf(stderr, "prolly: out of memory\n");
		bytes_dispose(&b);
		return;
	}
	char *line = (char *)b.ptr;         /* the line owns b's bytes from here */
	if (hide_arg_secrets(cli, &line)) { /* say nothing of the line rather than risk it */
		fprintf(stderr, "prolly: out of memory\n");
		free(line);
		return;
	}
	/* The clipping rule has one home, the library's message buffer; nothing reads the message
	 * this replaces (fail_lib copies it before calling here). */
	prolly_set_error(PROLLY_OK, "%s", line);
	free(line);
	fprintf(stderr, "prolly: %s%s%s\n", cli && cli->cmd ? cli->cmd->name : "",
	        cli && cli->cmd ? ": " : "", prolly_last_error());
}

static void vreport(const struct cli *cli, const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap);
	put_line(cli, msg ? msg : "out of memory", NULL);
	free(msg);
}

void report(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(cli, fmt, ap);
	va_end(ap);
}

int usage_error(struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	char *line = msg && cli && cli->cmd ? format("%s (see 'prolly %s --help')", msg, cli->cmd->name)
	                                    : NULL;
	put_line(cli, line ? line : msg ? msg : "out of memory", NULL);
	free(line);
	free(msg);
	return EXIT_USAGE;
}

int fail(struct cli *cli, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(cli, fmt, ap);
	va_end(ap);
	return code;
}

int exit_code_for(int err)
{
	switch (err) {
	case PROLLY_OK: return EXIT_DONE;
	case PROLLY_ENOTFOUND: return EXIT_NOTFOUND;
	case PROLLY_EINVAL:
	case PROLLY_ETOOBIG:
	case PROLLY_EPRUNED: return EXIT_USAGE;
	case PROLLY_EMERGE: return EXIT_MERGE;
	case PROLLY_ECONFLICT: return EXIT_RACE;
	default: return EXIT_STORE;
	}
}

int fail_lib(struct cli *cli, int err, const char *fmt, ...)
{
	/* Copy the message first: reporting must not depend on it surviving other calls. */
	const char *last = prolly_last_error();
	char *detail = format("%s", last && *last ? last : prolly_strerror(err)), *msg = NULL;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		msg = vformat(fmt, ap);
		va_end(ap);
	}
	const char *why = detail ? detail : prolly_strerror(err);
	if (msg)
		put_line(cli, msg, why);
	else
		put_line(cli, why, NULL);
	free(msg);
	free(detail);
	return exit_code_for(err);
}
