/*
 * test_node_size.c - a store's node size (prolly.h, "Node size"): chosen when a store is made,
 * kept by it, read by every handle on it, on the memory, LMDB and PostgreSQL stores alike.
 *
 *   - which sizes exist, and every way to ask for another being refused before anything is made;
 *   - the same records make the same tree in every store of one size, and another tree in a
 *     store of another size (about four times the leaves at 1 KiB);
 *   - a store reopened without a size keeps its own, with another is refused (nothing changed),
 *     read-only handles included; a store of 4 KiB nodes keeps its schema version, so older
 *     libraries still open it;
 *   - history moves only between stores of one size (sync SY15; clone makes its destination with
 *     the source's size in the CLI's golden tests);
 *   - a store of interface version 7 builds 4 KiB trees whatever follows its table; one of version 8
 *     reporting an impossible size is refused by prolly_db_new.
 */
#include "lib/pgt.h"
#include "prolly/store.h"
#include "ptest.h"
#include "store.h" /* bench/lib: the benchmarks' store wrapper */

#include <ftw.h>
#include <limits.h>
#include <lmdb.h>
#include <stdlib.h>
#include <unistd.h>

#define RECORDS 3000

static char scratch[256];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void rm_scratch(void)
{
	nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new directory path under this program's scratch directory (removed at exit). */
static void fresh_dir(char *out, size_t size, const char *what)
{
	static int n;
	if (!scratch[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch, sizeof(scratch), "%s/prolly-test-node-size-XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(scratch))
			abort();
		atexit(rm_scratch);
	}
	snprintf(out, size, "%s/%s-%d", scratch, what, n++);
}

static prolly_db *db_of(prolly_store *st)
{
	prolly_db *db = NULL;
	PT_CHECKF(st != NULL, "no store: %s", prolly_last_error());
	if (st)
		PT_CHECKF(prolly_db_new(&db, st, NULL) == 0, "%s", prolly_last_error());
	return db;
}

static prolly_db *open_url(const char *url, unsigned flags, unsigned node_size)
{
	prolly_store_options o = PROLLY_STORE_OPTIONS_INIT;
	prolly_store *st = NULL;
	o.flags = flags;
	o.node_size = node_size;
	PT_CHECKF(prolly_store_open_opts(&st, url, &o) == 0, "%s: %s", url, prolly_last_error());
	return db_of(st);
}

/* RECORDS records committed to main (the same in every call); the tree's root into *root. */
static void fill(prolly_db *db, prolly_id *root)
{
	prolly_edit *e = calloc(RECORDS, sizeof(*e));
	static char keys[RECORDS][16], vals[RECORDS][40];
	prolly_id commit;
	prolly_commit *c = NULL;
	PT_REQUIRE(e);
	for (int i = 0; i < RECORDS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "key%06d", i);
		snprintf(vals[i], sizeof(vals[i]), "value-%d-xxxxxxxxxxxxxxxx", i * 7);
		e[i].op = PROLLY_PUT;
		e[i].key = (prolly_slice){keys[i], strlen(keys[i])};
		e[i].value = (prolly_slice){vals[i], strlen(vals[i])};
	}
	PT_CHECKF(prolly_commit_edits(&commit, db, "main", e, RECORDS, "fill") == 0, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_commit(&c, db, "main"), 0);
	if (c)
		*root = c->tree;
	prolly_commit_free(c);
	free(e);
}

static uint64_t leaves(prolly_db *db, const prolly_id *root)
{
	prolly_tree_stats s = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&s, db, root, 0), 0);
	return s.leaves;
}

PT_TEST(sizes_and_refusals)
{
	static const unsigned good[] = {0, 1024, 2048, 4096, 8192};
	static const unsigned bad[] = {1, 512, 1000, 1023, 3072, 16384, UINT_MAX};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		PT_CHECKF(prolly_node_size_valid(good[i]), "%u", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		PT_CHECKF(!prolly_node_size_valid(bad[i]), "%u", bad[i]);

	/* Refused before anything is made: no directory appears. */
	char dir[PATH_MAX], url[PATH_MAX + 8];
	fresh_dir(dir, sizeof(dir), "refused");
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	prolly_store_options o;
	prolly_store *st = NULL;
	PT_CHECK_RC(prolly_store_options_init(&o, PROLLY_STORE_OPTIONS_VERSION), 0);
	PT_CHECK(o.flags == 0 && o.node_size == 0);
	o.flags = PROLLY_OPEN_CREATE;
	o.node_size = 1000;
	PT_CHECK_RC(prolly_store_open_opts(&st, url, &o), PROLLY_EINVAL);
	PT_CHECK(st == NULL && access(dir, F_OK) != 0);
	o.node_size = 1024;
	o.version = 2;
	PT_CHECK_RC(prolly_store_open_opts(&st, url, &o), PROLLY_EINVAL);
	PT_CHECK(strstr(prolly_last_error(), "prolly_store_options.version") != NULL);
	PT_CHECK(st == NULL && access(dir, F_OK) != 0);
	PT_CHECK_RC(prolly_store_options_init(&o, 0), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_store_options_init(NULL, 1), PROLLY_EINVAL);
	/* NULL options: flags 0 (open an existing store), the default size */
	PT_CHECK_RC(prolly_store_open_opts(&st, url, NULL), PROLLY_ENOTFOUND);
	PT_CHECK(prolly_db_node_size(NULL) == 0);
}

PT_TEST(same_records_same_tree_per_size)
{
	char dir[PATH_MAX], url[PATH_MAX + 8];
	prolly_id m1, m4, l1;
	fresh_dir(dir, sizeof(dir), "lmdb1k");
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	prolly_db *mem1 = open_url("mem:", 0, 1024), *mem4 = open_url("mem:", 0, 0);
	prolly_db *lm1 = open_url(url, PROLLY_OPEN_CREATE, 1024);
	PT_REQUIRE(mem1 && mem4 && lm1);
	PT_CHECK(prolly_db_node_size(mem1) == 1024 && prolly_db_node_size(mem4) == 4096);
	PT_CHECK(prolly_db_node_size(lm1) == 1024);
	fill(mem1, &m1);
	fill(mem4, &m4);
	fill(lm1, &l1);
	PT_CHECK(prolly_id_equal(&m1, &l1));
	PT_CHECK(!prolly_id_equal(&m1, &m4));
	uint64_t a = leaves(mem1, &m1), b = leaves(mem4, &m4);
	PT_CHECKF(a >= 3 * b && a <= 5 * b, "leaves at 1 KiB %llu, at 4 KiB %llu",
	          (unsigned long long)a, (unsigned long long)b);

	/* The PostgreSQL store of the same size makes the same tree. */
	prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
	prolly_store *st = NULL;
	prolly_id p1;
	po.schema = pgt_new_schema();
	po.node_size = 1024;
	PT_CHECKF(prolly_store_pg_open(&st, pgt_url, &po) == 0, "%s", prolly_last_error());
	prolly_db *pg1 = db_of(st);
	if (pg1) {
		PT_CHECK(prolly_db_node_size(pg1) == 1024);
		fill(pg1, &p1);
		PT_CHECK(prolly_id_equal(&m1, &p1));
	}
	prolly_close(pg1);
	prolly_close(mem1);
	prolly_close(mem4);
	prolly_close(lm1);
}

/* The schema_version row of the LMDB store in dir (-1: none). */
static long lmdb_schema(const char *dir)
{
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	MDB_val k = {14, (void *)"schema_version"}, v;
	long out = -1;
	if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 4) ||
	    mdb_env_open(env, dir, MDB_RDONLY, 0644))
		goto done;
	if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_dbi_open(txn, "meta", 0, &dbi))
		goto done;
	if (mdb_get(txn, dbi, &k, &v) == 0 && v.mv_size == 4)
		out = (long)((unsigned char *)v.mv_data)[0];
done:
	if (txn)
		mdb_txn_abort(txn);
	if (env)
		mdb_env_close(env);
	return out;
}

PT_TEST(lmdb_keeps_its_size)
{
	char dir[PATH_MAX], url[PATH_MAX + 8], dir4[PATH_MAX], url4[PATH_MAX + 8];
	prolly_store_options o = PROLLY_STORE_OPTIONS_INIT;
	prolly_store *st = NULL;
	prolly_id root, again;
	fresh_dir(dir, sizeof(dir), "keeps");
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	prolly_db *db = open_url(url, PROLLY_OPEN_CREATE, 2048);
	PT_REQUIRE(db);
	fill(db, &root);
	prolly_close(db);
	PT_CHECK(lmdb_schema(dir) == 3); /* libraries that know no node_size row refuse it */

	/* Reopened without a size: its own. */
	db = open_url(url, 0, 0);
	PT_CHECK(db && prolly_db_node_size(db) == 2048);
	prolly_close(db);
	db = open_url(url, PROLLY_OPEN_READONLY, 0);
	PT_CHECK(db && prolly_db_node_size(db) == 2048);
	prolly_close(db);
	/* With another: refused, naming both; nothing changed. */
	o.flags = PROLLY_OPEN_CREATE;
	o.node_size = 4096;
	PT_CHECK_RC(prolly_store_open_opts(&st, url, &o), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "2048") && strstr(prolly_last_error(), "4096"), "%s",
	          prolly_last_error());
	PT_CHECK(st == NULL);
	db = open_url(url, 0, 2048);
	PT_REQUIRE(db);
	fill(db, &again); /* the same records again: no change */
	PT_CHECK(prolly_id_equal(&root, &again));
	prolly_close(db);
	PT_CHECK(lmdb_schema(dir) == 3);

	/* A store of 4 KiB nodes stays at version 2, asked for by size or not. */
	fresh_dir(dir4, sizeof(dir4), "four");
	snprintf(url4, sizeof(url4), "lmdb:%s", dir4);
	db = open_url(url4, PROLLY_OPEN_CREATE, 4096);
	PT_REQUIRE(db);
	fill(db, &root);
	prolly_close(db);
	PT_CHECK(lmdb_schema(dir4) == 2);
}

PT_TEST(postgres_keeps_its_size)
{
	prolly_pg_options po;
	prolly_store *st = NULL;
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	/* Version 1 of the options has no node_size: its init writes no byte past no_create. */
	unsigned char raw[sizeof(prolly_pg_options) + 8];
	memset(raw, 0xAB, sizeof(raw));
	PT_CHECK_RC(prolly_pg_options_init((prolly_pg_options *)(void *)raw, 1), 0);
	PT_CHECK(raw[offsetof(prolly_pg_options, node_size)] == 0xAB);
	PT_CHECK_RC(prolly_pg_options_init(&po, PROLLY_PG_OPTIONS_VERSION), 0);
	PT_CHECK(po.node_size == 0);

	po.schema = pgt_new_schema();
	po.node_size = 8192;
	PT_CHECKF(prolly_store_pg_open(&st, pgt_url, &po) == 0, "%s", prolly_last_error());
	PT_CHECK(st && st->node_size == 8192);
	prolly_store_close(st);
	st = NULL;
	PT_CHECK(pgt_schema_version(a, po.schema) == 7);
	po.node_size = 0;
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &po), 0);
	PT_CHECK(st && st->node_size == 8192);
	prolly_store_close(st);
	st = NULL;
	po.node_size = 1024;
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &po), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "8192") && strstr(prolly_last_error(), "1024"), "%s",
	          prolly_last_error());
	po.node_size = 3000;
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &po), PROLLY_EINVAL);

	/* A default schema stays at version 6 (older libraries keep opening it). */
	po.schema = pgt_new_schema();
	po.node_size = 4096;
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &po), 0);
	PT_CHECK(st && st->node_size == 0);
	prolly_store_close(st);
	PT_CHECK(pgt_schema_version(a, po.schema) == 6);
	PQfinish(a);
}

PT_TEST(history_moves_between_stores_of_one_size)
{
	prolly_db *src = open_url("mem:", 0, 1024), *other = open_url("mem:", 0, 0),
	          *same = open_url("mem:", 0, 1024);
	prolly_id root, head;
	PT_REQUIRE(src && other && same);
	fill(src, &root);
	PT_CHECK_RC(prolly_branch_head(&head, src, "main"), 0);
	prolly_ref_update u, u2;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/main";
	u.expect = PROLLY_REF_EXPECT_ANY;
	u.value = head;
	u2 = u;
	PT_CHECK_RC(prolly_sync(NULL, other, src, NULL, 0, &u, 1, NULL), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "1024") && strstr(prolly_last_error(), "4096"), "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(&head, other, "main"), PROLLY_ENOTFOUND);
	uint64_t nodes = 1;
	PT_CHECK_RC(prolly_db_store(other)->stat(prolly_db_store(other), &nodes, NULL), 0);
	PT_CHECK(nodes == 0);
	PT_CHECK_RC(prolly_sync(NULL, same, src, NULL, 0, &u2, 1, NULL), 0);
	PT_CHECK_RC(prolly_branch_head(&root, same, "main"), 0);
	prolly_close(src);
	prolly_close(other);
	prolly_close(same);
}

PT_TEST(store_interface_versions)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	/* Version 7 has no node_size: whatever the bytes after its table, 4 KiB trees. */
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_REQUIRE(st);
	st->version = 7;
	st->node_size = 1024;
	PT_CHECK_RC(prolly_db_new(&db, st, NULL), 0);
	PT_CHECK(db && prolly_db_node_size(db) == 4096);
	prolly_close(db);
	db = NULL;
	/* Version 8 with a size the library does not build: refused (and the store closed). */
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_REQUIRE(st);
	st->node_size = 3000;
	PT_CHECK_RC(prolly_db_new(&db, st, NULL), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "3000") != NULL, "%s", prolly_last_error());
	PT_CHECK(db == NULL);
}

/* A store wrapping another (the benchmarks' timing wrapper) builds the inner store's trees: the
 * scale suite's C client once made 4 KiB trees on a 1 KiB store through it, which its SQL cells
 * caught (the extension's trees differed). */
PT_TEST(wrappers_keep_the_size)
{
	prolly_store_options o = PROLLY_STORE_OPTIONS_INIT;
	prolly_store *inner = NULL;
	bench_store *w = NULL;
	prolly_db *db = NULL;
	o.node_size = 2048;
	PT_CHECK_RC(prolly_store_open_opts(&inner, "mem:", &o), 0);
	PT_REQUIRE(inner);
	PT_CHECK_RC(bench_store_wrap(&w, inner, BENCH_STORE_TIMED), 0);
	PT_REQUIRE(w);
	PT_CHECK_RC(prolly_db_new(&db, bench_store_base(w), NULL), 0);
	PT_CHECK(db && prolly_db_node_size(db) == 2048);
	prolly_close(db);
}

PGT_MAIN(NULL, NULL)
