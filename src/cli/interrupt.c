/*
 * interrupt.c - what Ctrl-C (SIGINT) prints during a copy of history between stores.
 *
 * clone, fetch, push and pull may run for minutes, and a user who stops one needs to know what
 * state the destination is in. Dying of SIGINT without a word left them guessing whether a ref
 * moved to a half-copied commit. It cannot have (a sync writes every object before the ref that
 * names it, docs/stores.md "Whole subtrees (K6) and sync"), so the handler says so and says that
 * running the command again finishes it; then the tool dies of SIGINT as before, so the shell
 * sees status 130 and a script running it stops too.
 *
 * The handler only write()s a line made beforehand and raises the signal again: both are
 * async-signal-safe, so it may interrupt anything, a libpq or LMDB call included (an unfinished
 * PostgreSQL transaction is rolled back by the server, an LMDB write transaction is never
 * committed). A SIGINT ignored on entry (a background job of a non-interactive shell) stays
 * ignored. In a child of isolated() only the parent reports: Ctrl-C reaches both, and the child
 * dies of the signal (or with its parent) without a second line.
 */
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static char line[160];
static size_t line_len;
static struct sigaction before; /* the disposition the handler replaced */

static void on_interrupt(int sig)
{
	ssize_t w = write(STDERR_FILENO, line, line_len);
	(void)w;    /* nothing to do about a failed write here: the exit status still says it */
	raise(sig); /* SA_RESETHAND restored SIG_DFL: die of it */
}

void catch_interrupt(const char *command)
{
	static const char *const copies[] = {"clone", "fetch", "push", "pull", NULL};
	struct sigaction sa;
	int i;

	for (i = 0; copies[i] && strcmp(copies[i], command) != 0; i++)
		;
	if (!copies[i] || sigaction(SIGINT, NULL, &before) != 0 || before.sa_handler == SIG_IGN)
		return;
	int n = snprintf(line, sizeof line,
	                 "prolly: %s: interrupted (SIGINT): no ref names a commit that was not "
	                 "copied whole; running it again finishes it\n",
	                 command);
	line_len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	if (sigaction(SIGINT, &sa, NULL) != 0)
		line_len = 0;
}

void release_interrupt(void)
{
	if (line_len)
		(void)sigaction(SIGINT, &before, NULL);
}
