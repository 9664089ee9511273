/*
 * test_abi.c - the versioned caller-allocated structs of prolly.h ("Versioned structs"):
 *
 *   - every struct of the table `versioned` starts with its version; its PROLLY_*_INIT
 *     initializer and its prolly_*_init() function give the same documented defaults (the row's
 *     check) and version; the function refuses NULL and an unknown version (0: never
 *     initialised; 1000: from a newer header) with PROLLY_EINVAL naming the struct;
 *   - per struct, every entry point that takes it refuses an unknown version the same way,
 *     before anything is done (no directory created, no store opened, output untouched);
 *   - the stores' per-thread counter slots (prolly_store_counters_add), which carry the
 *     PostgreSQL store's own counters, are zeroed by prolly_thread_stats_reset and handed back
 *     from the library's flush threads like the engine's counters.
 *
 * Re-run one test: build/tests/test_abi NAME.
 */
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* rc is PROLLY_EINVAL and the message names the struct's version. */
static int refused(int rc, const char *type)
{
	char want[64];
	snprintf(want, sizeof(want), "%s.version", type);
	if (rc != PROLLY_EINVAL || !strstr(prolly_last_error(), want)) {
		printf("# %s: rc %d, message '%s'\n", type, rc, prolly_last_error());
		return 0;
	}
	return 1;
}

static const unsigned bad_versions[2] = {0, 1000};

/* ---- the table of versioned structs ---------------------------------------------------------- */

/* The documented defaults of each struct, as PROLLY_*_INIT and prolly_*_init() give them. */
static int options_defaults(const prolly_options *o)
{
	return o->cache_bytes == PROLLY_CACHE_AUTO && o->retain_commits == 0 &&
	       o->flush_bytes == (size_t)4 << 20 && o->reflog_days == 14 && o->clock_us == 0 &&
	       o->flags == 0;
}

static int stats_defaults(const prolly_stats *s)
{
	return s->cache_hits == 0 && s->store_round_trips == 0 && s->store_read_items == 0 &&
	       s->bytes_written == 0;
}

static int pg_options_defaults(const prolly_pg_options *o)
{
	return o->schema == NULL && o->pool_size == 0 && o->pool_timeout_ms == 0 &&
	       o->batch_items == 0 && o->read_chunk == 0 && o->gc_batch == 0 && o->no_create == 0;
}

static int pg_stats_defaults(const prolly_pg_stats *s)
{
	return s->statements == 0 && s->pool_waits == 0 && s->pool_wait_ns == 0;
}

static int range_defaults(const prolly_range *r)
{
	return !r->has_lo && !r->has_hi && !r->lo_exclusive && !r->hi_inclusive && !r->reverse &&
	       r->prefix.size == 0 && r->prefix.data == NULL && r->lo.data == NULL;
}

static int tree_stats_defaults(const prolly_tree_stats *s)
{
	return s->records == 0 && s->height == 0 && s->nodes == 0 && s->bytes == 0 && s->leaves == 0;
}

static int merge_options_defaults(const prolly_merge_options *o)
{
	return o->resolve == PROLLY_RESOLVE_FAIL && o->resolve_fn == NULL && o->on_conflict == NULL &&
	       o->payload == NULL && o->allow_unrelated == 0 && o->base == NULL;
}

static int merge_stats_defaults(const prolly_merge_stats *s)
{
	return s->applied == 0 && s->convergent == 0 && s->conflicts == 0;
}

static int sync_options_defaults(const prolly_sync_options *o)
{
	return o->batch == 0 && o->operation == NULL && o->message == NULL;
}

static int sync_stats_defaults(const prolly_sync_stats *s)
{
	return s->commits_copied == 0 && s->nodes_copied == 0 && s->write_calls == 0;
}

static int gc_result_defaults(const prolly_gc_result *r)
{
	return r->nodes_kept == 0 && r->nodes_removed == 0 && r->bytes_removed == 0 &&
	       r->reflog_expired == 0;
}

static int lmdb_snapshot_defaults(const prolly_lmdb_snapshot *s)
{
	return s->txnid == 0 && !s->current && !s->intact && !s->restorable && s->problem[0] == 0;
}

/* X(name, NAME): the struct prolly_<name>, its PROLLY_<NAME>_INIT and PROLLY_<NAME>_VERSION,
 * its prolly_<name>_init() and <name>_defaults() above. */
#define VERSIONED(X)                                                                               \
	X(options, OPTIONS)                                                                            \
	X(stats, STATS)                                                                                \
	X(pg_options, PG_OPTIONS)                                                                      \
	X(pg_stats, PG_STATS)                                                                          \
	X(range, RANGE)                                                                                \
	X(tree_stats, TREE_STATS)                                                                      \
	X(merge_options, MERGE_OPTIONS)                                                                \
	X(merge_stats, MERGE_STATS)                                                                    \
	X(sync_options, SYNC_OPTIONS)                                                                  \
	X(sync_stats, SYNC_STATS)                                                                      \
	X(gc_result, GC_RESULT)                                                                        \
	X(lmdb_snapshot, LMDB_SNAPSHOT)

/* Per struct: its initializer's value, and typeless calls of its init function and check. */
#define GLUE(name, NAME)                                                                           \
	_Static_assert(offsetof(prolly_##name, version) == 0, "prolly_" #name " starts with version"); \
	static const prolly_##name name##_initial = PROLLY_##NAME##_INIT;                              \
	static int name##_init_any(void *p, unsigned v)                                                \
	{                                                                                              \
		return prolly_##name##_init(p, v);                                                         \
	}                                                                                              \
	static int name##_defaults_any(const void *p)                                                  \
	{                                                                                              \
		return name##_defaults(p);                                                                 \
	}
VERSIONED(GLUE)

typedef struct versioned_struct {
	const char *type; /* what a refusal names */
	unsigned version;
	const void *initial; /* PROLLY_<NAME>_INIT */
	int (*init)(void *p, unsigned version);
	int (*defaults)(const void *p);
} versioned_struct;

#define ROW(name, NAME)                                                                            \
	{"prolly_" #name, PROLLY_##NAME##_VERSION, &name##_initial, name##_init_any,                   \
	 name##_defaults_any},
static const versioned_struct versioned[] = {VERSIONED(ROW)};

/* Room for any of them. */
#define MEMBER(name, NAME) prolly_##name name;
typedef union any_versioned {
	VERSIONED(MEMBER)
} any_versioned;

PT_TEST(init_and_defaults)
{
	for (size_t t = 0; t < sizeof(versioned) / sizeof(versioned[0]); t++) {
		const versioned_struct *v = &versioned[t];
		any_versioned b;
		unsigned got;
		memcpy(&got, v->initial, sizeof(got)); /* every one starts with its version */
		PT_CHECKF(got == v->version && v->defaults(v->initial), "%s: the initializer", v->type);
		memset(&b, 0x5a, sizeof(b));
		PT_CHECK_RC(v->init(&b, v->version), 0);
		memcpy(&got, &b, sizeof(got));
		PT_CHECKF(got == v->version && v->defaults(&b), "%s: the init function", v->type);
		PT_CHECK_RC(v->init(NULL, v->version), PROLLY_EINVAL);
		for (int i = 0; i < 2; i++)
			PT_CHECK(refused(v->init(&b, bad_versions[i]), v->type));
	}
}

/* ---- per struct: the entry points that take it ---------------------------------------------- */

static prolly_db *mem_db(void)
{
	prolly_db *db = NULL;
	if (prolly_open(&db, "mem:", NULL) != 0)
		return NULL;
	return db;
}

PT_TEST(options)
{
	char *dir = tm_tmpdir("abi");
	PT_REQUIRE(dir);
	char path[512], url[600];
	snprintf(path, sizeof(path), "%s/new", dir);
	snprintf(url, sizeof(url), "lmdb:%s", path);
	for (int i = 0; i < 2; i++) {
		prolly_options o = PROLLY_OPTIONS_INIT;
		o.version = bad_versions[i];
		prolly_db *db = NULL;
		PT_CHECK(refused(prolly_open(&db, "mem:", &o), "prolly_options"));
		PT_CHECK(db == NULL);
		/* Refused before the store is opened: nothing is created. */
		PT_CHECK(refused(prolly_open_ex(&db, url, &o, PROLLY_OPEN_CREATE), "prolly_options"));
		struct stat sb;
		PT_CHECK(stat(path, &sb) != 0);
		/* prolly_db_new owns the store also on this failure (ASan sees a leak otherwise). */
		prolly_store *st = NULL;
		PT_REQUIRE(prolly_store_mem_new(&st) == 0);
		PT_CHECK(refused(prolly_db_new(&db, st, &o), "prolly_options"));
	}
	tm_rmtree(dir);
	free(dir);
	/* Version 2 added interrupt and its payload, NULL by default. A program built against the
	 * version-1 header has a struct that ends before them: init writes only its fields, and the
	 * library reads only those (the bytes after hold garbage here, which a call would crash on). */
	prolly_options o2, o1;
	PT_REQUIRE(prolly_options_init(&o2, 2) == 0);
	PT_CHECK(o2.version == 2 && options_defaults(&o2) && !o2.interrupt && !o2.interrupt_payload);
	memset(&o1, 0xa5, sizeof(o1));
	PT_REQUIRE(prolly_options_init(&o1, 1) == 0);
	PT_CHECK(o1.version == 1 && options_defaults(&o1));
	unsigned char garbage[sizeof(o1.interrupt)];
	memset(garbage, 0xa5, sizeof(garbage));
	PT_CHECK(memcmp(&o1.interrupt, garbage, sizeof(garbage)) == 0); /* not written */
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_open(&db, "mem:", &o1) == 0);
	prolly_id head;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_get(&v, db, &empty, "k", 1), PROLLY_ENOTFOUND); /* loads: asks nothing */
	PT_CHECK_RC(prolly_branch_head(&head, db, "main"), PROLLY_ENOTFOUND);
	prolly_buf_dispose(&v);
	prolly_close(db);
}

PT_TEST(stats)
{
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_thread_stats_reset();
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_round_trips = 3;
	PT_CHECK_RC(prolly_stats_add(&d), 0);
	for (int i = 0; i < 2; i++) {
		prolly_stats s;
		memset(&s, 0x5a, sizeof(s));
		s.version = bad_versions[i];
		PT_CHECK(refused(prolly_thread_stats(&s), "prolly_stats"));
		PT_CHECK(s.cache_hits == 0x5a5a5a5a5a5a5a5aULL); /* untouched */
		PT_CHECK(refused(prolly_db_stats(db, &s), "prolly_stats"));
		PT_CHECK(refused(prolly_stats_add(&s), "prolly_stats")); /* nothing added */
	}
	prolly_stats got = PROLLY_STATS_INIT;
	PT_CHECK_RC(prolly_thread_stats(&got), 0);
	PT_CHECK(got.store_round_trips == 3);
	PT_CHECK_RC(prolly_db_stats(db, &got), 0);
	PT_CHECK_RC(prolly_thread_stats(NULL), PROLLY_EINVAL);
	prolly_close(db);
}

PT_TEST(pg_options_and_stats)
{
	prolly_store *mem = NULL;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
	for (int i = 0; i < 2; i++) {
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		o.version = bad_versions[i];
		prolly_store *st = NULL;
		/* Refused before any connection: no server is named here at all. */
		PT_CHECK(refused(prolly_store_pg_open(&st, "host=/nonexistent dbname=none", &o),
		                 "prolly_pg_options"));
		PT_CHECK(st == NULL);
		prolly_pg_stats s = PROLLY_PG_STATS_INIT;
		s.version = bad_versions[i];
		PT_CHECK(refused(prolly_store_pg_thread_stats(&s), "prolly_pg_stats"));
		PT_CHECK(refused(prolly_store_pg_stats(&s, mem), "prolly_pg_stats"));
	}
	/* A store that is not PostgreSQL has no PostgreSQL counters. */
	prolly_pg_stats s = PROLLY_PG_STATS_INIT;
	PT_CHECK_RC(prolly_store_pg_stats(&s, mem), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_store_pg_thread_stats(&s), 0);
	prolly_store_close(mem);
}

PT_TEST(store_counter_slots)
{
	prolly_thread_stats_reset();
	const uint64_t d[PROLLY_STORE_COUNTERS + 2] = {5, 7, 11, 0, 0, 0, 0, 13, 99, 99};
	prolly_store_counters_add(d, PROLLY_STORE_COUNTERS + 2); /* the last two are ignored */
	prolly_store_counters_add(d, 1);
	uint64_t got[PROLLY_STORE_COUNTERS + 1];
	prolly_store_thread_counters(got, PROLLY_STORE_COUNTERS + 1);
	PT_CHECK(got[0] == 10 && got[1] == 7 && got[2] == 11 && got[7] == 13);
	PT_CHECK(got[PROLLY_STORE_COUNTERS] == 0);
	/* Slots 0..2 are the PostgreSQL store's, read back by prolly_store_pg_thread_stats. */
	prolly_pg_stats s = PROLLY_PG_STATS_INIT;
	PT_CHECK_RC(prolly_store_pg_thread_stats(&s), 0);
	PT_CHECK(s.statements == 10 && s.pool_waits == 7 && s.pool_wait_ns == 11);
	prolly_thread_stats_reset();
	prolly_store_thread_counters(got, 3);
	PT_CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0);
}

/* Counts, in store slot 5, every node the tap store writes: on whichever thread writes it. */
static void count_written(void *payload, const prolly_id *id, const void *data, size_t size)
{
	(void)payload, (void)id, (void)data, (void)size;
	const uint64_t d[6] = {0, 0, 0, 0, 0, 1};
	prolly_store_counters_add(d, 6);
}

PT_TEST(store_counter_slots_come_back_from_flush_threads)
{
	tm_db t;
	PT_REQUIRE(tm_db_open(&t, 0, "abi", 1, 0, 4096) == 0);
	t.tap->on_write = count_written;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	prolly_thread_stats_reset();
	PT_REQUIRE(prolly_txn_begin(&txn, t.db) == 0);
	PT_REQUIRE(prolly_builder_new(&b, txn) == 0);
	for (unsigned i = 0; i < 20000; i++) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%08u", i);
		snprintf(v, sizeof(v), "value %u", i);
		PT_REQUIRE(prolly_builder_add(b, k, strlen(k), v, strlen(v)) == 0);
	}
	PT_CHECK_RC(prolly_builder_finish(b, &root), 0);
	prolly_builder_free(b);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	prolly_stats st = PROLLY_STATS_INIT;
	uint64_t slot[6];
	PT_CHECK_RC(prolly_thread_stats(&st), 0);
	prolly_store_thread_counters(slot, 6);
	PT_CHECKF(st.nodes_written > 10 && slot[5] == st.nodes_written,
	          "%llu nodes written, %llu counted in the slot", (unsigned long long)st.nodes_written,
	          (unsigned long long)slot[5]);
	tm_db_close(&t);
}

PT_TEST(range)
{
	prolly_range b = PROLLY_RANGE_INIT;
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	prolly_cursor *cur = NULL;
	PT_CHECK_RC(prolly_cursor_open(&cur, db, &empty, &b), 0);
	PT_CHECK_RC(prolly_cursor_next(cur, NULL, NULL), PROLLY_ITEROVER);
	prolly_cursor_free(cur);
	for (int i = 0; i < 2; i++) {
		prolly_range r = PROLLY_RANGE_INIT;
		r.version = bad_versions[i];
		cur = NULL;
		PT_CHECK(refused(prolly_cursor_open(&cur, db, &empty, &r), "prolly_range"));
		PT_CHECK(cur == NULL);
	}
	prolly_close(db);
}

static int diff_none(void *payload, const prolly_diff_entry *e)
{
	(void)payload, (void)e;
	return 1;
}

PT_TEST(range_in_diff)
{
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	prolly_range r = PROLLY_RANGE_INIT;
	PT_CHECK_RC(prolly_diff(db, &empty, &empty, &r, diff_none, NULL), 0);
	r.version = 0;
	PT_CHECK(refused(prolly_diff(db, &empty, &empty, &r, diff_none, NULL), "prolly_range"));
	prolly_close(db);
}

PT_TEST(tree_stats)
{
	prolly_tree_stats b = PROLLY_TREE_STATS_INIT;
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_tree_stats_get(&b, db, &empty, 0), 0);
	PT_CHECK(b.version == PROLLY_TREE_STATS_VERSION && b.height == 1 && b.nodes == 1);
	for (int i = 0; i < 2; i++) {
		prolly_tree_stats s;
		memset(&s, 0x5a, sizeof(s));
		s.version = bad_versions[i];
		PT_CHECK(refused(prolly_tree_stats_get(&s, db, &empty, 0), "prolly_tree_stats"));
		PT_CHECK(s.nodes == 0x5a5a5a5a5a5a5a5aULL);
	}
	PT_CHECK_RC(prolly_tree_stats_get(NULL, db, &empty, 0), PROLLY_EINVAL);
	prolly_close(db);
}

PT_TEST(merge_options_and_stats)
{
	prolly_merge_options b = PROLLY_MERGE_OPTIONS_INIT;
	prolly_merge_stats d;
	memset(&d, 0x5a, sizeof(d));
	PT_CHECK_RC(prolly_merge_stats_init(&d, PROLLY_MERGE_STATS_VERSION), 0);
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id empty, out, head;
	prolly_id_empty_tree(&empty);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", &e, 1, "one") == 0);
	PT_REQUIRE(prolly_branch_create(db, "dev", &head) == 0);
	prolly_txn *txn = NULL;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(prolly_merge(&out, &d, txn, &empty, &empty, &empty, &b), 0);
	PT_CHECK(d.version == PROLLY_MERGE_STATS_VERSION);
	for (int i = 0; i < 2; i++) {
		prolly_merge_options o = PROLLY_MERGE_OPTIONS_INIT;
		prolly_merge_stats s = PROLLY_MERGE_STATS_INIT;
		o.version = bad_versions[i];
		PT_CHECK(refused(prolly_merge(&out, NULL, txn, &empty, &empty, &empty, &o),
		                 "prolly_merge_options"));
		PT_CHECK(refused(prolly_cherry_pick(&out, NULL, txn, &empty, &head, 0, &o),
		                 "prolly_merge_options"));
		PT_CHECK(
		    refused(prolly_revert(&out, NULL, txn, &empty, &head, 0, &o), "prolly_merge_options"));
		PT_CHECK(refused(prolly_merge_branches(NULL, NULL, db, "main", "dev", &o, NULL),
		                 "prolly_merge_options"));
		s.version = bad_versions[i];
		PT_CHECK(refused(prolly_merge(&out, &s, txn, &empty, &empty, &empty, NULL),
		                 "prolly_merge_stats"));
		PT_CHECK(refused(prolly_merge_branches(NULL, &s, db, "main", "dev", NULL, NULL),
		                 "prolly_merge_stats"));
		PT_CHECK(s.applied == 0);
	}
	prolly_txn_free(txn);
	prolly_close(db);
}

PT_TEST(sync_options_and_stats)
{
	prolly_sync_options b = PROLLY_SYNC_OPTIONS_INIT;
	prolly_sync_stats d = PROLLY_SYNC_STATS_INIT;
	prolly_db *src = mem_db(), *dst = mem_db();
	PT_REQUIRE(src && dst);
	prolly_id head;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, src, "main", &e, 1, "one") == 0);
	for (int i = 0; i < 2; i++) {
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		prolly_sync_stats s;
		o.version = bad_versions[i];
		PT_CHECK(
		    refused(prolly_sync(NULL, dst, src, &head, 1, NULL, 0, &o), "prolly_sync_options"));
		memset(&s, 0x5a, sizeof(s));
		s.version = bad_versions[i];
		PT_CHECK(refused(prolly_sync(&s, dst, src, &head, 1, NULL, 0, NULL), "prolly_sync_stats"));
		PT_CHECK(refused(prolly_fetch(&s, dst, src, "origin", NULL, NULL), "prolly_sync_stats"));
		PT_CHECK(refused(prolly_push(&s, src, dst, "origin", "main", 0), "prolly_sync_stats"));
		PT_CHECK(s.commits_copied == 0x5a5a5a5a5a5a5a5aULL);
	}
	/* nothing was copied by the refused calls */
	prolly_commit *cm = NULL;
	PT_CHECK_RC(prolly_commit_read(&cm, dst, &head), PROLLY_ENOTFOUND);
	prolly_commit_free(cm);
	PT_CHECK_RC(prolly_sync(&d, dst, src, &head, 1, NULL, 0, &b), 0);
	PT_CHECK(d.version == PROLLY_SYNC_STATS_VERSION && d.commits_copied == 1);
	prolly_close(src);
	prolly_close(dst);
}

PT_TEST(gc_result)
{
	prolly_gc_result b = PROLLY_GC_RESULT_INIT;
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id head;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", &e, 1, "one") == 0);
	PT_CHECK_RC(prolly_gc(db, &b), 0);
	PT_CHECK(b.version == PROLLY_GC_RESULT_VERSION && b.nodes_kept >= 2);
	PT_CHECK_RC(prolly_gc(db, NULL), 0);
	for (int i = 0; i < 2; i++) {
		prolly_gc_result r;
		memset(&r, 0x5a, sizeof(r));
		r.version = bad_versions[i];
		PT_CHECK(refused(prolly_gc(db, &r), "prolly_gc_result"));
		PT_CHECK(r.nodes_kept == 0x5a5a5a5a5a5a5a5aULL);
	}
	prolly_close(db);
}

PT_TEST(lmdb_snapshot)
{
	char *dir = tm_tmpdir("abi-snap");
	PT_REQUIRE(dir);
	char url[600];
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_open(&db, url, NULL) == 0);
	prolly_close(db);
	prolly_lmdb_snapshot snap[2] = {PROLLY_LMDB_SNAPSHOT_INIT, PROLLY_LMDB_SNAPSHOT_INIT};
	PT_CHECK_RC(prolly_lmdb_snapshots(snap, dir), 0);
	PT_CHECK(snap[0].version == PROLLY_LMDB_SNAPSHOT_VERSION &&
	         (snap[0].current || snap[1].current));
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++) { /* either element */
			prolly_lmdb_snapshot s[2] = {PROLLY_LMDB_SNAPSHOT_INIT, PROLLY_LMDB_SNAPSHOT_INIT};
			s[j].version = bad_versions[i];
			PT_CHECK(refused(prolly_lmdb_snapshots(s, dir), "prolly_lmdb_snapshot"));
			PT_CHECK(s[0].txnid == 0 && s[1].txnid == 0);
		}
	}
	tm_rmtree(dir);
	free(dir);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
