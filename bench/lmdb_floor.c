/*
 * lmdb_floor.c - what LMDB itself takes to write node-sized values the way the LMDB store
 * does, with no engine in the way: the floor under the store's write of a build and of a
 * batch (docs/benchmarks/engine.md, "What LMDB alone takes to write a batch").
 *
 *   build/bench/lmdb_floor [NODES] [BATCH] [ROUNDS]     (default 15838 7600 3; counts as "8.3k")
 *
 * Per round, in a fresh environment under $TMPDIR (or /tmp), removed afterwards:
 *   build  NODES values in transactions of 4 MiB (a builder's flush_bytes), each committed with
 *          its data flush, then one mdb_env_sync (the final commit's meta flush);
 *   batch  BATCH more values in one transaction, committed, then mdb_env_sync(env, 1): the
 *          commit of a 10k-edit batch, which is one durable write.
 * The environment's flags are the store's (MDB_NOTLS | MDB_NOMETASYNC; src/store/lmdb.c,
 * "Flags"). Keys are 32 random bytes (ids); value sizes are uniform in [2048, 5450] bytes:
 * mean 3,749, 40% above 4,080 (the most one 4 KiB overflow page holds), against a 1M-record
 * tree of 15,834 nodes, mean 3,750 bytes, 38% above 4,080. Value bytes do not matter to LMDB.
 * Prints a table: milliseconds of mdb_put, of commit and sync, and in all, per phase.
 */
#include "clock.h"
#include "count.h"
#include "rng.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VALUE_MIN 2048
#define VALUE_MAX 5450
#define BUILD_TXN_BYTES (4u << 20)

static double ms_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e6;
}

static int fail(const char *what, int mrc)
{
	fprintf(stderr, "lmdb_floor: %s: %s\n", what, mdb_strerror(mrc));
	return 1;
}

/* Puts n values of random sizes (from buf) under random keys into txn; adds the bytes put. */
static int put_values(MDB_txn *txn, MDB_dbi dbi, bench_rng *r, const unsigned char *buf, long n,
                      size_t *bytes)
{
	for (long i = 0; i < n; i++) {
		uint64_t key[4];
		for (int j = 0; j < 4; j++)
			key[j] = bench_rng_next(r);
		MDB_val k = {sizeof(key), key};
		MDB_val v = {VALUE_MIN + bench_rng_below(r, VALUE_MAX - VALUE_MIN + 1),
		             (void *)(buf + bench_rng_below(r, 4096))};
		int mrc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
		if (mrc)
			return fail("mdb_put", mrc);
		*bytes += v.mv_size;
	}
	return 0;
}

typedef struct phase {
	double put_ms, commit_ms, all_ms;
} phase;

static int round_run(const char *dir, long nodes, long batch, uint64_t seed, phase *build, phase *b)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	bench_rng r;
	unsigned char *buf = malloc(VALUE_MAX + 4096);
	int mrc, rc = 1;

	bench_rng_seed(&r, seed);
	if (!buf)
		goto cleanup;
	for (size_t i = 0; i < VALUE_MAX + 4096; i++)
		buf[i] = (unsigned char)bench_rng_next(&r);
	if ((mrc = mdb_env_create(&env)) || (mrc = mdb_env_set_maxdbs(env, 4)) ||
	    (mrc = mdb_env_set_mapsize(env, (size_t)4 << 30)) ||
	    (mrc = mdb_env_open(env, dir, MDB_NOTLS | MDB_NOMETASYNC, 0644))) {
		rc = fail("open", mrc);
		goto cleanup;
	}
	if ((mrc = mdb_txn_begin(env, NULL, 0, &txn)) ||
	    (mrc = mdb_dbi_open(txn, "nodes", MDB_CREATE, &dbi))) {
		rc = fail("create", mrc);
		goto cleanup; /* aborts txn if it began */
	}
	mrc = mdb_txn_commit(txn);
	txn = NULL; /* a commit frees the transaction, failed or not */
	if (mrc) {
		rc = fail("create", mrc);
		goto cleanup;
	}

	memset(build, 0, sizeof(*build));
	uint64_t t_all = bench_now_ns();
	for (long done = 0; done < nodes;) {
		size_t bytes = 0;
		uint64_t t0 = bench_now_ns();
		if ((mrc = mdb_txn_begin(env, NULL, 0, &txn))) {
			rc = fail("begin", mrc);
			goto cleanup;
		}
		long n = 0;
		while (done + n < nodes && bytes < BUILD_TXN_BYTES) {
			if (put_values(txn, dbi, &r, buf, 1, &bytes))
				goto cleanup;
			n++;
		}
		done += n;
		build->put_ms += ms_since(t0);
		t0 = bench_now_ns();
		mrc = mdb_txn_commit(txn);
		txn = NULL;
		if (mrc) {
			rc = fail("commit", mrc);
			goto cleanup;
		}
		build->commit_ms += ms_since(t0);
	}
	uint64_t t0 = bench_now_ns();
	if ((mrc = mdb_env_sync(env, 1))) {
		rc = fail("sync", mrc);
		goto cleanup;
	}
	build->commit_ms += ms_since(t0);
	build->all_ms = ms_since(t_all);

	size_t bytes = 0;
	t0 = bench_now_ns();
	if ((mrc = mdb_txn_begin(env, NULL, 0, &txn))) {
		rc = fail("begin", mrc);
		goto cleanup;
	}
	if (put_values(txn, dbi, &r, buf, batch, &bytes))
		goto cleanup;
	b->put_ms = ms_since(t0);
	uint64_t t1 = bench_now_ns();
	mrc = mdb_txn_commit(txn);
	txn = NULL;
	if (mrc || (mrc = mdb_env_sync(env, 1))) {
		rc = fail("commit", mrc);
		goto cleanup;
	}
	b->commit_ms = ms_since(t1);
	b->all_ms = ms_since(t0);
	rc = 0;

cleanup:
	if (txn)
		mdb_txn_abort(txn);
	if (env)
		mdb_env_close(env);
	free(buf);
	return rc;
}

/* argv[i] as a count (bench_parse_count: "7600", "8.3k"), or def when absent; 0 when bad. */
static uint64_t arg_count(int argc, char **argv, int i, uint64_t def)
{
	uint64_t v;
	if (argc <= i)
		return def;
	return bench_parse_count(argv[i], strlen(argv[i]), &v) || v > 100000000 ? 0 : v;
}

int main(int argc, char **argv)
{
	long nodes = (long)arg_count(argc, argv, 1, 15838);
	long batch = (long)arg_count(argc, argv, 2, 7600);
	int rounds = (int)arg_count(argc, argv, 3, 3);
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[4096], path[4200];

	if (nodes <= 0 || batch <= 0 || rounds <= 0 || argc > 4) {
		fprintf(stderr, "usage: lmdb_floor [NODES] [BATCH] [ROUNDS]  (counts from 1 to 100M)\n");
		return 2;
	}
	printf("| round | build: put ms | commit and sync ms | all ms | batch of %ld: put ms | "
	       "commit and sync ms | all ms |\n|---|---:|---:|---:|---:|---:|---:|\n",
	       batch);
	for (int i = 0; i < rounds; i++) {
		phase build = {0}, b = {0};
		snprintf(dir, sizeof(dir), "%s/lmdb_floor.XXXXXX", tmp);
		if (!mkdtemp(dir)) {
			perror("lmdb_floor: mkdtemp");
			return 1;
		}
		int rc = round_run(dir, nodes, batch, (uint64_t)i + 1, &build, &b);
		snprintf(path, sizeof(path), "%s/data.mdb", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/lock.mdb", dir);
		unlink(path);
		rmdir(dir);
		if (rc)
			return 1;
		printf("| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", i + 1, build.put_ms,
		       build.commit_ms, build.all_ms, b.put_ms, b.commit_ms, b.all_ms);
		fflush(stdout);
	}
	return 0;
}
