/*
 * isolate.c - running a command's store access in a child process, so that damage that crashes
 * the reader is reported (exit 5, naming the signal) instead of taking the tool down.
 *
 * LMDB trusts its file: a damaged page can make liblmdb read through a wild pointer (SIGSEGV),
 * past the end of the mapped file (SIGBUS) or fail an assertion (SIGABRT), inside the library,
 * where no error code can come back. Every command on an lmdb: store therefore runs in a child of
 * fork(); the parent only waits. The cost is one fork per command (the parent has opened
 * nothing yet). Signals that the user or the terminal sends (SIGPIPE, SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT) are not damage: the parent dies of the same signal, as the tool did before. Nor is
 * SIGKILL of the child alone (kill -9 of its pid, the out-of-memory killer, which picks the
 * process that holds the memory): exit 5 saying it was killed, not that the store is damaged.
 *
 * The child must not outlive the parent: a signal sent to the tool's pid alone (kill -9 PID, a
 * supervisor's timeout) reaches only the parent, and an orphaned child would go on to commit the
 * write the user just stopped, behind their back. On Linux the child asks to be killed when the
 * parent dies; elsewhere it runs on as before.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static int passed_on(int sig)
{
	return sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

int isolated(struct cli *cli, int (*fn)(struct cli *cli, void *arg), void *arg, int *sig)
{
	int status;
	pid_t pid, parent = getpid();

	*sig = 0;
	fflush(stdout);
	fflush(stderr);
	/* An inherited SIGCHLD of SIG_IGN would have the child reaped unseen: take it back. */
	signal(SIGCHLD, SIG_DFL);
	pid = fork();
	if (pid < 0) /* no process to spare: run it here, unprotected */
		return fn(cli, arg);
	if (pid == 0) {
		int rc;
#ifdef __linux__
		/* Killed with the parent; a parent that died before the request leaves it to us. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(EXIT_STORE);
#else
		(void)parent;
#endif
		release_interrupt();
		rc = fn(cli, arg);
		prolly_close(cli->db);
		cli->db = NULL;
		exit(finish_output(cli, rc));
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fail(cli, EXIT_STORE, "cannot wait for the reading process: %s",
			            strerror(errno));
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status) && passed_on(WTERMSIG(status)))
		die_by_signal(WTERMSIG(status));
	*sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	return EXIT_STORE;
}

const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGABRT: return "SIGABRT";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGKILL: return "SIGKILL";
	default: return "a signal";
	}
}

struct command_args {
	int argc;
	char **argv;
};

static int run(struct cli *cli, void *arg)
{
	struct command_args *a = arg;
	int rc = cli->cmd->run(cli, a->argc, a->argv);
	return rc == HELP_SHOWN ? EXIT_DONE : rc;
}

int run_command(struct cli *cli, int argc, char **argv)
{
	struct command_args a = {argc, argv};
	int sig;
	if (strncmp(cli->store_url, "lmdb:", 5) != 0 || strcmp(cli->cmd->name, "recover") == 0)
		return run(cli, &a);
	int rc = isolated(cli, run, &a, &sig);
	if (sig == SIGKILL) /* never raised by a fault: another process or the OOM killer */
		return fail(cli, EXIT_STORE,
		            "the process working on the store %s was killed (SIGKILL, signal 9), by "
		            "another process or the out-of-memory killer; that alone is no sign of "
		            "damage, and a write it was making is committed whole or not at all",
		            cli->store_shown);
	if (sig)
		return fail(cli, EXIT_STORE,
		            "reading the store %s crashed the reader (%s, signal %d): the store is "
		            "damaged; see 'prolly recover'",
		            cli->store_shown, signal_name(sig), sig);
	/* The child ran the command, flushed and checked its output and ran the exit handlers; the
	 * parent opened nothing and has written nothing since the fork, so it ends at once with the
	 * child's status. (Its exit handlers would only repeat the child's: under the sanitizers the
	 * leak check at exit costs each process tens of ms of CPU.) */
	_exit(rc);
}
