/*
 * branch_commits.c - single-edit commits to a branch through prolly_commit_edits, the path
 * every branch move takes (compare-and-swap, and since the reflog one entry object and one ref
 * more in the same write). Prints one line per store: commits, seconds, commits per second, CPU
 * microseconds per commit (less disturbed than wall time by other work on the machine).
 *
 *   build/bench/branch_commits [COMMITS] [STORE...]     (default 2000 commits, mem: and lmdb)
 *
 * An LMDB store is made in a fresh directory under $TMPDIR (or /tmp) and removed afterwards.
 * Used for the reflog's cost (docs/commits.md): run the same source linked against the library
 * before and after, interleaved.
 */
#include "clock.h"
#include "prolly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int run(const char *url, long n)
{
	prolly_db *db = NULL;
	prolly_id c;
	char key[32], val[32];
	int rc = prolly_open(&db, url, NULL);
	if (rc) {
		fprintf(stderr, "cannot open %s: %s\n", url, prolly_last_error());
		return 1;
	}
	double t0 = (double)bench_now_ns() / 1e9, c0 = (double)bench_cpu_ns() / 1e9;
	for (long i = 0; i < n; i++) {
		prolly_edit e;
		snprintf(key, sizeof(key), "key%08ld", (i * 7919) % 100000);
		snprintf(val, sizeof(val), "value%ld", i);
		e.op = PROLLY_PUT;
		e.key.data = key;
		e.key.size = strlen(key);
		e.value.data = val;
		e.value.size = strlen(val);
		if ((rc = prolly_commit_edits(&c, db, "main", &e, 1, "bench"))) {
			fprintf(stderr, "commit %ld: %s\n", i, prolly_last_error());
			break;
		}
	}
	double dt = (double)bench_now_ns() / 1e9 - t0, dc = (double)bench_cpu_ns() / 1e9 - c0;
	printf("%s\t%ld commits\t%.3f s\t%.0f commits/s\t%.1f us CPU/commit\n",
	       strncmp(url, "lmdb:", 5) ? url : "lmdb:", n, dt, (double)n / dt, dc * 1e6 / (double)n);
	prolly_close(db);
	return rc != 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	int bad = 0;
	const char *def[] = {"mem:", "lmdb"};
	int nstores = argc > 2 ? argc - 2 : 2;
	for (int i = 0; i < nstores; i++) {
		const char *s = argc > 2 ? argv[2 + i] : def[i];
		if (strcmp(s, "lmdb") == 0) {
			const char *base = getenv("TMPDIR");
			char dir[4096], url[4200], cmd[4300];
			snprintf(dir, sizeof(dir), "%s/prolly-bc-XXXXXX", base && *base ? base : "/tmp");
			if (!mkdtemp(dir))
				return 1;
			snprintf(url, sizeof(url), "lmdb:%s", dir);
			bad |= run(url, n);
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
			if (system(cmd) != 0)
				fprintf(stderr, "could not remove %s\n", dir);
		} else {
			bad |= run(s, n);
		}
	}
	return bad;
}
