/*
 * history_walks.c - the two long history walks, prolly_log and prolly_merge_base, over a
 * memory store holding two chains of COMMITS commits each that share only their root commit.
 * The log walks one chain (COMMITS commits); the merge base of the two heads walks both
 * (2 * COMMITS). Prints one line per walk: commits walked, then the median and the least CPU
 * milliseconds of ROUNDS runs (CPU time is less disturbed than wall time by other work).
 *
 *   build/bench/history_walks [COMMITS] [ROUNDS]     (default 100000 commits, 5 rounds)
 *
 * Used for the commit graph's id table: run the same source linked against the library before
 * and after a change, interleaved (A B A B ...), and compare.
 */
#include "clock.h"
#include "prolly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double cpu_ms(void)
{
	return (double)bench_cpu_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Appends n commits on top of *head (times from *time_us up), *head then the last of them. */
static int chain(prolly_db *db, prolly_id *head, long n, int64_t *time_us)
{
	prolly_id tree;
	prolly_id_empty_tree(&tree);
	for (long done = 0; done < n;) {
		prolly_txn *txn = NULL;
		int rc = prolly_txn_begin(&txn, db);
		for (long i = 0; !rc && i < 1000 && done < n; i++, done++)
			rc = prolly_commit_create(head, txn, &tree, head, 1, ++*time_us, "walk");
		if (!rc)
			rc = prolly_txn_commit(txn, NULL, 0);
		prolly_txn_free(txn);
		if (rc)
			return rc;
	}
	return 0;
}

static int count_commit(void *payload, const prolly_commit *c)
{
	(void)c;
	++*(long *)payload;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	prolly_db *db = NULL;
	prolly_id root, a, b, base, tree;
	int64_t t = 1;
	double *ms = NULL;
	int rc;

	if (n < 1 || rounds < 1) {
		fprintf(stderr, "usage: history_walks [COMMITS >= 1] [ROUNDS >= 1]\n");
		return 2;
	}
	if (!(ms = malloc((size_t)rounds * 2 * sizeof(*ms))))
		return 1;
	if ((rc = prolly_open(&db, "mem:", NULL)))
		goto fail;
	prolly_id_empty_tree(&tree);
	{
		prolly_txn *txn = NULL;
		rc = prolly_txn_begin(&txn, db);
		if (!rc)
			rc = prolly_commit_create(&root, txn, &tree, NULL, 0, t, "root");
		if (!rc)
			rc = prolly_txn_commit(txn, NULL, 0);
		prolly_txn_free(txn);
		if (rc)
			goto fail;
	}
	a = b = root;
	if ((rc = chain(db, &a, n, &t)) || (rc = chain(db, &b, n, &t)))
		goto fail;
	for (int r = 0; r < rounds; r++) {
		long seen = 0;
		double c0 = cpu_ms();
		if ((rc = prolly_log(db, &a, count_commit, &seen)))
			goto fail;
		ms[r] = cpu_ms() - c0;
		if (seen != n + 1) {
			fprintf(stderr, "log saw %ld commits, expected %ld\n", seen, n + 1);
			rc = 1;
			goto fail;
		}
		c0 = cpu_ms();
		if ((rc = prolly_merge_base(&base, db, &a, &b)))
			goto fail;
		ms[rounds + r] = cpu_ms() - c0;
		if (memcmp(base.bytes, root.bytes, sizeof(root.bytes)) != 0) {
			fprintf(stderr, "merge base is not the root commit\n");
			rc = 1;
			goto fail;
		}
	}
	qsort(ms, (size_t)rounds, sizeof(*ms), cmp_double);
	qsort(ms + rounds, (size_t)rounds, sizeof(*ms), cmp_double);
	printf("log\t%ld commits\tmedian %.1f ms CPU\tleast %.1f ms CPU\n", n + 1, ms[rounds / 2],
	       ms[0]);
	printf("merge-base\t%ld commits\tmedian %.1f ms CPU\tleast %.1f ms CPU\n", 2 * n + 1,
	       ms[rounds + rounds / 2], ms[rounds]);
	prolly_close(db);
	free(ms);
	return 0;
fail:
	if (rc < 0)
		fprintf(stderr, "history_walks: %s\n", prolly_last_error());
	prolly_close(db);
	free(ms);
	return 1;
}
