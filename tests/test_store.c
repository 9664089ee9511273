/*
 * test_store.c - the store conformance suite on the memory and LMDB stores, then LMDB-only tests
 * (persistence, several handles and processes on one directory, map growth, schema versions) and
 * store URLs.
 *
 * `test_store WORD` runs only the conformance runs and tests whose name contains WORD.
 */
#include "lib/store_conformance.h"
#include "prolly.h"
#include "prolly/store.h"
#include "ptest.h"
#include "rng.h"
#include "store/store_int.h" /* prolly_store_mem_table, a test hook */

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- scratch directories ---------------------------------------------------------------------- */

static char scratch[1024];
static int scratch_n;

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new, not yet existing directory path under the scratch directory. */
static void fresh_dir(char *out, size_t size, const char *what)
{
	snprintf(out, size, "%s/%s-%d", scratch, what, scratch_n++);
}

static void make_scratch(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch, sizeof(scratch), "%s/prolly-test-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch)) {
		fprintf(stderr, "cannot create a scratch directory %s: %s\n", scratch, strerror(errno));
		exit(2);
	}
}

/* ---- conformance ------------------------------------------------------------------------------ */

static prolly_store *open_mem(void *ctx)
{
	(void)ctx;
	prolly_store *st = NULL;
	return prolly_store_mem_new(&st) ? NULL : st;
}

static prolly_store *open_lmdb(void *ctx)
{
	(void)ctx;
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	fresh_dir(dir, sizeof(dir), "conformance");
	return prolly_store_lmdb_open(&st, dir, 0) ? NULL : st;
}

/* LMDB again with a map so small that it has to grow during the suite. */
static prolly_store *open_lmdb_small(void *ctx)
{
	(void)ctx;
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	fresh_dir(dir, sizeof(dir), "conformance-small");
	return prolly_store_lmdb_open(&st, dir, 256 << 10) ? NULL : st;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

/* Test id i of tag: i in bytes 8-11 (keep_even reads it), tag in 12-15, and the first eight
 * bytes a mix of both, spread as SHA-256 ids are: the memory store buckets ids by those bytes
 * (src/store/mem.c), and ids alike there went down one chain (a write of 40,000 took 9 s). */
static prolly_id tid(unsigned tag, unsigned i)
{
	prolly_id id;
	uint64_t spread = bench_mix64((uint64_t)tag << 32 | i);
	memset(&id, 0, sizeof(id));
	memcpy(id.bytes, &spread, sizeof(spread));
	memcpy(id.bytes + 8, &i, sizeof(i));
	memcpy(id.bytes + 12, &tag, sizeof(tag));
	return id;
}

static void tbytes(unsigned char *buf, size_t size, unsigned tag, unsigned i)
{
	uint32_t s = tag * 2654435761u ^ (i + 1) * 40503u;
	for (size_t k = 0; k < size; k++) {
		s = s * 1664525u + 1013904223u;
		buf[k] = (unsigned char)(s >> 24);
	}
}

static int put_node(prolly_store *st, unsigned tag, unsigned i, size_t size)
{
	unsigned char *b = malloc(size ? size : 1);
	if (!b)
		return PROLLY_ENOMEM;
	tbytes(b, size, tag, i);
	prolly_store_node n = {tid(tag, i), b, size};
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &n;
	w.n_nodes = 1;
	int rc = st->write(st, &w);
	free(b);
	return rc;
}

/* Writes count nodes tag/first.. of `size` bytes each in one write. */
static int put_nodes(prolly_store *st, unsigned tag, unsigned first, unsigned count, size_t size,
                     int durable)
{
	prolly_store_node *n = calloc(count, sizeof(*n));
	unsigned char *b = malloc((size_t)count * size + 1);
	int rc = PROLLY_ENOMEM;
	if (n && b) {
		for (unsigned i = 0; i < count; i++) {
			tbytes(b + (size_t)i * size, size, tag, first + i);
			n[i].id = tid(tag, first + i);
			n[i].data = b + (size_t)i * size;
			n[i].size = size;
		}
		prolly_store_write w;
		memset(&w, 0, sizeof(w));
		w.nodes = n;
		w.n_nodes = count;
		w.durable = durable;
		rc = st->write(st, &w);
	}
	free(n);
	free(b);
	return rc;
}

typedef struct check1 {
	size_t want_size;
	unsigned tag, i;
	int calls, ok;
} check1;

static int check1_fn(void *payload, size_t index, const void *data, size_t size)
{
	check1 *c = payload;
	(void)index;
	c->calls++;
	if (size != c->want_size)
		return 0;
	unsigned char *b = malloc(size ? size : 1);
	if (!b)
		return PROLLY_ENOMEM;
	tbytes(b, size, c->tag, c->i);
	c->ok = memcmp(b, data, size) == 0;
	free(b);
	return 0;
}

/* 1 if node tag/i is stored with the expected bytes. */
static int node_ok(prolly_store *st, unsigned tag, unsigned i, size_t size)
{
	check1 c = {size, tag, i, 0, 0};
	prolly_id id = tid(tag, i);
	int rc = st->get_nodes(st, &id, 1, check1_fn, &c);
	return rc == 0 && c.calls == 1 && c.ok;
}

static int set_ref(prolly_store *st, const char *name, const prolly_id *v)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.value = *v;
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 1;
	return st->write(st, &w);
}

static int ref_is(prolly_store *st, const char *name, const prolly_id *want)
{
	prolly_id got;
	int rc = st->get_ref(st, name, &got, NULL);
	return rc == 0 && prolly_id_equal(&got, want);
}

static int keep_even(void *payload, const prolly_id *id)
{
	(void)payload;
	unsigned i;
	memcpy(&i, id->bytes + 8, sizeof(i));
	return i % 2 == 0;
}

/* ---- memory-store tests ----------------------------------------------------------------------- */

/* The hash table keeps up with a write of any size: one write of 40,000 nodes into a new store
 * (1,024 buckets) leaves at most one node per bucket, not a doubling per write (which left chains
 * of ~20 here, and of ~8 behind the harness's build of a 1M-record tree). */
PT_TEST(mem_table_grows_with_one_large_write)
{
	prolly_store *st = NULL;
	size_t nodes = 0, buckets = 0;
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_REQUIRE(st);
	PT_CHECK_RC(put_nodes(st, 2, 0, 40000, 16, 0), 0);
	PT_CHECK_RC(prolly_store_mem_table(st, &nodes, &buckets), 0);
	PT_CHECK(nodes == 40000 && buckets > nodes);
	PT_CHECK(node_ok(st, 2, 0, 16) && node_ok(st, 2, 39999, 16));
	prolly_store_close(st);
}

/* ---- LMDB-only tests -------------------------------------------------------------------------- */

PT_TEST(lmdb_persists_across_reopen)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	prolly_id v = tid(1, 100);
	uint64_t epoch = 0, epoch2 = 0;
	fresh_dir(dir, sizeof(dir), "persist");
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), 0);
	PT_REQUIRE(st);
	PT_CHECK_RC(put_nodes(st, 1, 0, 10, 1000, 0), 0);
	PT_CHECK_RC(set_ref(st, "refs/heads/main", &v), 0);
	PT_CHECK_RC(st->gc(st, NULL, keep_even, NULL, NULL), 0);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, &epoch), 0);
	prolly_store_close(st);
	st = NULL;

	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), 0);
	PT_REQUIRE(st);
	PT_CHECK(ref_is(st, "refs/heads/main", &v));
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, &epoch2), 0);
	PT_CHECK(epoch2 == epoch && epoch == 2);
	for (unsigned i = 0; i < 10; i++) {
		if (i % 2 == 0)
			PT_CHECK(node_ok(st, 1, i, 1000));
		else
			PT_CHECK(!node_ok(st, 1, i, 1000));
	}
	uint64_t nodes = 0, bytes = 0;
	PT_CHECK_RC(st->stat(st, &nodes, &bytes), 0);
	PT_CHECK(nodes == 5 && bytes == 5000);
	prolly_store_close(st);
}

PT_TEST(lmdb_two_handles_on_one_directory)
{
	char dir[PATH_MAX], other[PATH_MAX + 8];
	prolly_store *a = NULL, *b = NULL, *c = NULL;
	fresh_dir(dir, sizeof(dir), "two-handles/nested/dir"); /* parents are created too */
	snprintf(other, sizeof(other), "lmdb:%s/./", dir);
	PT_CHECK_RC(prolly_store_lmdb_open(&a, dir, 0), 0);
	PT_CHECK_RC(prolly_store_open(&b, other), 0); /* another spelling of the same directory */
	PT_REQUIRE(a && b);
	PT_CHECK(strcmp(a->kind, "lmdb") == 0 && strcmp(b->kind, "lmdb") == 0);
	prolly_id va = tid(2, 1), vb = tid(2, 2);
	PT_CHECK_RC(put_node(a, 2, 1, 300), 0);
	PT_CHECK_RC(set_ref(a, "refs/heads/a", &va), 0);
	PT_CHECK(node_ok(b, 2, 1, 300));
	PT_CHECK(ref_is(b, "refs/heads/a", &va));
	PT_CHECK_RC(put_node(b, 2, 2, 400), 0);
	PT_CHECK_RC(set_ref(b, "refs/heads/b", &vb), 0);
	PT_CHECK(node_ok(a, 2, 2, 400));
	PT_CHECK(ref_is(a, "refs/heads/b", &vb));
	/* Closing one handle leaves the other working; a third handle joins. */
	prolly_store_close(a);
	PT_CHECK(ref_is(b, "refs/heads/a", &va));
	PT_CHECK_RC(prolly_store_lmdb_open(&c, dir, 0), 0);
	PT_REQUIRE(c);
	PT_CHECK(node_ok(c, 2, 1, 300));
	prolly_store_close(b);
	PT_CHECK(node_ok(c, 2, 2, 400));
	prolly_store_close(c);
}

/* A child process opens the directory, reads the parent's writes, writes its own and grows the
 * map well past the parent's; the parent then reads them through the handle it kept open. */
PT_TEST(lmdb_two_processes_on_one_directory)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	prolly_id vp = tid(3, 1), vc = tid(3, 2);
	fresh_dir(dir, sizeof(dir), "two-processes");
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 256 << 10), 0);
	PT_REQUIRE(st);
	PT_CHECK_RC(put_node(st, 3, 1, 500), 0);
	PT_CHECK_RC(set_ref(st, "refs/heads/parent", &vp), 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	PT_REQUIRE(pid >= 0);
	if (pid == 0) {
		prolly_store *cs = NULL;
		int code = 0;
		if (prolly_store_lmdb_open(&cs, dir, 256 << 10)) {
			fprintf(stderr, "child: open: %s\n", prolly_last_error());
			_exit(10);
		}
		if (!ref_is(cs, "refs/heads/parent", &vp) || !node_ok(cs, 3, 1, 500))
			code = 11;
		/* 8 MiB in 64 writes: the map must grow several times. */
		for (unsigned k = 0; k < 64 && !code; k++)
			if (put_nodes(cs, 4, k * 32, 32, 4096, 0)) {
				fprintf(stderr, "child: write: %s\n", prolly_last_error());
				code = 12;
			}
		if (!code && (put_node(cs, 3, 2, 600) || set_ref(cs, "refs/heads/child", &vc)))
			code = 13;
		prolly_store_close(cs);
		_exit(code);
	}
	int status = 0;
	PT_REQUIRE(waitpid(pid, &status, 0) == pid);
	PT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	PT_CHECK(ref_is(st, "refs/heads/child", &vc));
	PT_CHECK(node_ok(st, 3, 2, 600));
	PT_CHECK(node_ok(st, 4, 64 * 32 - 1, 4096));
	/* And the parent can write past its old map size too. */
	PT_CHECK_RC(put_nodes(st, 5, 0, 64, 4096, 1), 0);
	PT_CHECK(node_ok(st, 5, 63, 4096));
	uint64_t nodes = 0;
	PT_CHECK_RC(st->stat(st, &nodes, NULL), 0);
	PT_CHECK(nodes == 2 + 64 * 32 + 64);
	prolly_store_close(st);
}

/* A tiny map fills up: every write either succeeds (the map grew) or fails cleanly with
 * PROLLY_EFULL, and the store stays usable and consistent. */
PT_TEST(lmdb_tiny_map_grows_or_fails_cleanly)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	fresh_dir(dir, sizeof(dir), "tiny");
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 64 << 10), 0);
	PT_REQUIRE(st);
	int ok[41];
	uint64_t want_nodes = 0, want_bytes = 0;
	for (unsigned k = 0; k < 40; k++) {
		int rc = put_nodes(st, 6, k * 16, 16, 8192, k % 8 == 0);
		PT_CHECKF(rc == 0 || rc == PROLLY_EFULL, "write %u: %d %s", k, rc, prolly_last_error());
		ok[k] = rc == 0;
		if (ok[k]) {
			want_nodes += 16;
			want_bytes += 16 * 8192;
		}
	}
	/* One write bigger than the whole map so far. */
	int rc = put_nodes(st, 7, 0, 4, 3 << 20, 1);
	PT_CHECKF(rc == 0 || rc == PROLLY_EFULL, "big write: %d %s", rc, prolly_last_error());
	ok[40] = rc == 0;
	if (ok[40]) {
		want_nodes += 4;
		want_bytes += 4 * (3 << 20);
	}
	prolly_id v = tid(6, 0);
	PT_CHECK_RC(set_ref(st, "refs/heads/after", &v), 0);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned k = 0; k < 40; k++)
			if (ok[k]) {
				PT_CHECK(node_ok(st, 6, k * 16, 8192));
				PT_CHECK(node_ok(st, 6, k * 16 + 15, 8192));
			}
		if (ok[40])
			PT_CHECK(node_ok(st, 7, 3, 3 << 20));
		uint64_t nodes = 0, bytes = 0;
		PT_CHECK_RC(st->stat(st, &nodes, &bytes), 0);
		PT_CHECK(nodes == want_nodes && bytes == want_bytes);
		PT_CHECK(ref_is(st, "refs/heads/after", &v));
		prolly_store_close(st);
		st = NULL;
		if (pass == 0) {
			PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 64 << 10), 0);
			PT_REQUIRE(st);
		}
	}
	PT_CHECKF(ok[0] && ok[39] && ok[40], "this LMDB store grows its map; it refused instead");
}

/* Growth while other threads read and write: the resize gate must neither deadlock nor let a
 * reader see an unmapped page. */
typedef struct grow_arg {
	prolly_store *st;
	unsigned tag;
	int errors;
	_Atomic int *stop;
} grow_arg;

static void *grow_writer(void *p)
{
	grow_arg *a = p;
	for (unsigned k = 0; k < 24; k++)
		if (put_nodes(a->st, a->tag, k * 8, 8, 16384, 0))
			a->errors++;
	return NULL;
}

static void *grow_reader(void *p)
{
	grow_arg *a = p;
	while (!*a->stop) {
		for (unsigned i = 0; i < 8; i++) {
			check1 c = {16384, 20, i, 0, 0};
			prolly_id id = tid(20, i);
			if (a->st->get_nodes(a->st, &id, 1, check1_fn, &c) || c.calls != 1 || !c.ok)
				a->errors++;
		}
	}
	return NULL;
}

PT_TEST(lmdb_map_grows_under_concurrent_use)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	_Atomic int stop = 0;
	fresh_dir(dir, sizeof(dir), "grow-threads");
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 128 << 10), 0);
	PT_REQUIRE(st);
	PT_CHECK_RC(put_nodes(st, 20, 0, 8, 16384, 0), 0);
	grow_arg w[4], r[3];
	pthread_t tw[4], tr[3];
	for (int i = 0; i < 3; i++) {
		r[i] = (grow_arg){st, 20, 0, &stop};
		PT_REQUIRE(pthread_create(&tr[i], NULL, grow_reader, &r[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		w[i] = (grow_arg){st, 21 + (unsigned)i, 0, &stop};
		PT_REQUIRE(pthread_create(&tw[i], NULL, grow_writer, &w[i]) == 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(tw[i], NULL);
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(tr[i], NULL);
	for (int i = 0; i < 4; i++)
		PT_CHECKF(w[i].errors == 0, "writer %d: %d errors", i, w[i].errors);
	for (int i = 0; i < 3; i++)
		PT_CHECKF(r[i].errors == 0, "reader %d: %d errors", i, r[i].errors);
	uint64_t nodes = 0;
	PT_CHECK_RC(st->stat(st, &nodes, NULL), 0);
	PT_CHECK(nodes == 8 + 4 * 24 * 8);
	PT_CHECK(node_ok(st, 24, 24 * 8 - 1, 16384));
	prolly_store_close(st);
}

/* Writes the schema_version row of the store in dir directly with liblmdb. */
static int poke_schema(const char *dir, const void *value, size_t size)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	int rc;
	if ((rc = mdb_env_create(&env)))
		return rc;
	if ((rc = mdb_env_set_maxdbs(env, 4)) || (rc = mdb_env_open(env, dir, 0, 0644)) ||
	    (rc = mdb_txn_begin(env, NULL, 0, &txn)))
		goto done;
	if ((rc = mdb_dbi_open(txn, "meta", 0, &dbi))) {
		mdb_txn_abort(txn);
		goto done;
	}
	/* Stamped like every write of the store (src/store/lmdb.c, invariant LT1). */
	uint64_t id = mdb_txn_id(txn);
	MDB_val k = {14, "schema_version"}, v = {size, (void *)value};
	MDB_val kt = {3, "txn"}, vt = {8, &id};
	if ((rc = mdb_put(txn, dbi, &k, &v, 0)) || (rc = mdb_put(txn, dbi, &kt, &vt, 0))) {
		mdb_txn_abort(txn);
		goto done;
	}
	rc = mdb_txn_commit(txn);
done:
	mdb_env_close(env);
	return rc;
}

PT_TEST(lmdb_newer_schema_is_refused)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	prolly_id v = tid(8, 1);
	fresh_dir(dir, sizeof(dir), "schema");
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), 0);
	PT_REQUIRE(st);
	PT_CHECK_RC(set_ref(st, "refs/heads/main", &v), 0);
	prolly_store_close(st);
	st = NULL;

	unsigned char four[4] = {4, 0, 0, 0}, three[4] = {3, 0, 0, 0}, two[4] = {2, 0, 0, 0},
	              bad[3] = {1, 0, 0};
	PT_REQUIRE(poke_schema(dir, four, 4) == 0);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), PROLLY_EVERSION);
	PT_CHECKF(strstr(prolly_last_error(), "schema version 4") != NULL, "message: %s",
	          prolly_last_error());
	PT_CHECK(st == NULL);

	/* Version 3 is a store of another node size than 4096: without its node_size row it is
	 * damaged, not a store of 4 KiB nodes. */
	PT_REQUIRE(poke_schema(dir, three, 4) == 0);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "node_size") != NULL, "message: %s", prolly_last_error());
	PT_CHECK(st == NULL);

	PT_REQUIRE(poke_schema(dir, bad, 3) == 0);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), PROLLY_ECORRUPT);
	PT_CHECK(st == NULL);

	/* Refusing changed nothing: back at version 2 the store opens with its data. */
	PT_REQUIRE(poke_schema(dir, two, 4) == 0);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, dir, 0), 0);
	PT_REQUIRE(st);
	PT_CHECK(ref_is(st, "refs/heads/main", &v));
	prolly_store_close(st);
}

PT_TEST(lmdb_bad_paths)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	prolly_store *st = NULL;
	fresh_dir(dir, sizeof(dir), "badpath");
	PT_REQUIRE(mkdir(dir, 0755) == 0);
	snprintf(file, sizeof(file), "%s/file", dir);
	FILE *f = fopen(file, "w");
	PT_REQUIRE(f);
	fclose(f);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, file, 0), PROLLY_EINVAL);
	PT_CHECK(st == NULL);
	snprintf(file, sizeof(file), "%s/file/sub", dir);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, file, 0), PROLLY_ESTORE);
	PT_CHECK(strstr(prolly_last_error(), "cannot create directory") != NULL);
	PT_CHECK_RC(prolly_store_lmdb_open(&st, "", 0), PROLLY_EINVAL);
	PT_CHECK(st == NULL);
}

PT_TEST(store_urls)
{
	prolly_store *st = NULL;
	char dir[PATH_MAX], url[PATH_MAX + 8];
	PT_CHECK_RC(prolly_store_open(&st, "mem:"), 0);
	PT_REQUIRE(st);
	PT_CHECK(strcmp(st->kind, "mem") == 0 && st->version == PROLLY_STORE_VERSION);
	prolly_store_close(st);
	st = NULL;

	fresh_dir(dir, sizeof(dir), "url");
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	PT_CHECK_RC(prolly_store_open(&st, url), 0);
	PT_REQUIRE(st);
	PT_CHECK(strcmp(st->kind, "lmdb") == 0 && st->version == PROLLY_STORE_VERSION);
	prolly_store_close(st);
	st = NULL;

	/* PostgreSQL URLs reach the PostgreSQL store: nothing listens on port 1, and the password
	 * never shows in the message. */
	const char *pg[] = {"postgres://u:sekrit@127.0.0.1:1/db",
	                    "postgresql://u:sekrit@127.0.0.1:1/db",
	                    "host=127.0.0.1 port=1 user=u password=sekrit dbname=db"};
	for (int i = 0; i < 3; i++) {
		PT_CHECK_RC(prolly_store_open(&st, pg[i]), PROLLY_ESTORE);
		PT_CHECK(strstr(prolly_last_error(), "sekrit") == NULL);
		PT_CHECK(st == NULL);
	}
	PT_CHECK_RC(prolly_store_open(&st, "lmdb:"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_store_open(&st, "sqlite:x.db"), PROLLY_EINVAL);
	PT_CHECK(strstr(prolly_last_error(), "sqlite:x.db") != NULL);
	PT_CHECK(strstr(prolly_last_error(), "lmdb:PATH") != NULL);
	PT_CHECK_RC(prolly_store_open(&st, NULL), PROLLY_EINVAL);
	PT_CHECK(st == NULL);
	prolly_store_close(NULL);
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;
	make_scratch();

	if (!only || strstr("conformance mem", only))
		store_conformance_run("mem", open_mem, NULL, &passed, &failed);
	if (!only || strstr("conformance lmdb", only))
		store_conformance_run("lmdb", open_lmdb, NULL, &passed, &failed);
	if (!only || strstr("conformance lmdb-small-map", only))
		store_conformance_run("lmdb-small-map", open_lmdb_small, NULL, &passed, &failed);

	for (int i = 0; i < pt_ncases; i++) {
		if (only && !strstr(pt_cases[i].name, only))
			continue;
		pt_failed_now = 0;
		pt_cases[i].fn();
		int n = passed + failed + 1;
		if (pt_failed_now) {
			failed++;
			printf("not ok %d - %s\n", n, pt_cases[i].name);
		} else {
			passed++;
			printf("ok %d - %s\n", n, pt_cases[i].name);
		}
		fflush(stdout);
	}
	rm_rf(scratch);
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
