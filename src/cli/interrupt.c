/*
 * interrupt.c - what Ctrl-C (SIGINT), SIGTERM or SIGHUP print during a copy of history between
 * stores.
 *
 * clone, fetch, push and pull may run for minutes, and a user who stops one needs to know what
 * state the destination is in. Dying of a signal without a word left them guessing whether a ref
 * moved to a half-copied commit. It cannot have (a sync writes every object before the ref that
 * names it, docs/stores.md "Whole subtrees (K6) and sync"), so the handler says so and says that
 * running the command again finishes it; then the tool dies of that signal as before, so the
 * shell sees 128 + its number (130 for Ctrl-C, 143 for a plain kill, 129 for a closed terminal)
 * and a script running it stops too.
 *
 * The handler only write()s a line made beforehand and raises the signal again: both are
 * async-signal-safe, so it may interrupt anything, a libpq or LMDB call included (an unfinished
 * PostgreSQL transaction is rolled back by the server, an LMDB write transaction is never
 * committed). A signal ignored on entry (SIGINT in a background job of a non-interactive shell,
 * SIGHUP under nohup) stays ignored. In a child of isolated() only the parent reports: Ctrl-C
 * reaches both, and the child dies of the signal (or with its parent) without a second line;
 * the child killed alone by one of them makes the parent end the same way (die_by_signal), with
 * the line.
 */
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
static const char *const caught_name[] = {"SIGINT", "SIGTERM", "SIGHUP"};
#define N_CAUGHT (sizeof caught / sizeof caught[0])

static char line[N_CAUGHT][160];
static size_t line_len[N_CAUGHT];         /* 0: that signal's disposition was left alone */
static struct sigaction before[N_CAUGHT]; /* the dispositions the handler replaced */

static void on_signal(int sig)
{
	for (size_t i = 0; i < N_CAUGHT; i++) {
		if (caught[i] != sig)
			continue;
		ssize_t w = write(STDERR_FILENO, line[i], line_len[i]);
		(void)w; /* nothing to do about a failed write here: the exit status still says it */
	}
	raise(sig); /* SA_RESETHAND restored SIG_DFL: die of it */
}

void catch_interrupt(const char *command)
{
	static const char *const copies[] = {"clone", "fetch", "push", "pull", NULL};
	struct sigaction sa;
	int i;

	for (i = 0; copies[i] && strcmp(copies[i], command) != 0; i++)
		;
	if (!copies[i])
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t k = 0; k < N_CAUGHT; k++)
		sigaddset(&sa.sa_mask, caught[k]); /* one line, whichever comes first */
	sa.sa_flags = SA_RESETHAND;
	for (size_t k = 0; k < N_CAUGHT; k++) {
		if (sigaction(caught[k], NULL, &before[k]) != 0 || before[k].sa_handler == SIG_IGN)
			continue;
		int n = snprintf(line[k], sizeof line[k],
		                 "prolly: %s: interrupted (%s): no ref names a commit that was not "
		                 "copied whole; running it again finishes it\n",
		                 command, caught_name[k]);
		line_len[k] = n < 0 ? 0 : (size_t)n < sizeof line[k] ? (size_t)n : sizeof line[k] - 1;
		if (sigaction(caught[k], &sa, NULL) != 0)
			line_len[k] = 0;
	}
}

void release_interrupt(void)
{
	for (size_t k = 0; k < N_CAUGHT; k++)
		if (line_len[k])
			(void)sigaction(caught[k], &before[k], NULL);
}

void die_by_signal(int sig)
{
	for (size_t k = 0; k < N_CAUGHT; k++)
		if (caught[k] == sig && line_len[k])
			raise(sig); /* the handler writes its line and raises it again, by default */
	signal(sig, SIG_DFL);
	raise(sig);
}
