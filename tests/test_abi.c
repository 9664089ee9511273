/*
 * test_abi.c - the versioned caller-allocated structs of prolly.h ("Versioned structs"):
 *
 *   - per struct, the PROLLY_*_INIT initializer and the prolly_*_init() function give the same
 *     documented defaults and version;
 *   - per struct, an unknown version (0: never initialised; PROLLY_*_VERSION + 1: from a newer
 *     header) is PROLLY_EINVAL naming the struct, from the init function and from every entry
 *     point that takes the struct, before anything is done (no directory created, no store
 *     opened, output untouched);
 *   - the stores' per-thread counter slots (prolly_store_counters_add), which carry the
 *     PostgreSQL store's own counters, are zeroed by prolly_thread_stats_reset and handed back
 *     from the library's flush threads like the engine's counters.
 *
 * Re-run one test: build/tests/test_abi NAME.
 */
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

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

static prolly_db *mem_db(void)
{
	prolly_db *db = NULL;
	if (prolly_open(&db, "mem:", NULL) != 0)
		return NULL;
	return db;
}

PT_TEST(options)
{
	prolly_options a = PROLLY_OPTIONS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_options_init(&b, PROLLY_OPTIONS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_OPTIONS_VERSION && b.version == PROLLY_OPTIONS_VERSION);
	PT_CHECK(a.cache_bytes == (size_t)256 << 20 && b.cache_bytes == a.cache_bytes);
	PT_CHECK(a.retain_commits == 0 && b.retain_commits == 0);
	PT_CHECK(a.flush_bytes == (size_t)4 << 20 && b.flush_bytes == a.flush_bytes);
	PT_CHECK(a.reflog_days == 14 && b.reflog_days == 14);
	PT_CHECK(a.clock_us == 0 && b.clock_us == 0 && a.flags == 0 && b.flags == 0);
	PT_CHECK_RC(prolly_options_init(NULL, PROLLY_OPTIONS_VERSION), PROLLY_EINVAL);

	char *dir = tm_tmpdir("abi");
	PT_REQUIRE(dir);
	char path[512], url[600];
	snprintf(path, sizeof(path), "%s/new", dir);
	snprintf(url, sizeof(url), "lmdb:%s", path);
	for (int i = 0; i < 2; i++) {
		prolly_options o = PROLLY_OPTIONS_INIT;
		PT_CHECK(refused(prolly_options_init(&o, bad_versions[i]), "prolly_options"));
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
}

PT_TEST(stats)
{
	prolly_stats a = PROLLY_STATS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_stats_init(&b, PROLLY_STATS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_STATS_VERSION && b.version == PROLLY_STATS_VERSION);
	PT_CHECK(a.cache_hits == 0 && b.cache_hits == 0 && b.store_round_trips == 0 &&
	         b.store_read_items == 0 && b.bytes_written == 0);
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_thread_stats_reset();
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_round_trips = 3;
	PT_CHECK_RC(prolly_stats_add(&d), 0);
	for (int i = 0; i < 2; i++) {
		prolly_stats s;
		PT_CHECK(refused(prolly_stats_init(&s, bad_versions[i]), "prolly_stats"));
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
	prolly_pg_options a = PROLLY_PG_OPTIONS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_pg_options_init(&b, PROLLY_PG_OPTIONS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_PG_OPTIONS_VERSION && b.version == PROLLY_PG_OPTIONS_VERSION);
	PT_CHECK(a.schema == NULL && b.schema == NULL && b.pool_size == 0 && b.pool_timeout_ms == 0 &&
	         b.batch_items == 0 && b.read_chunk == 0 && b.gc_batch == 0 && b.no_create == 0);

	prolly_pg_stats c = PROLLY_PG_STATS_INIT, d;
	memset(&d, 0x5a, sizeof(d));
	PT_CHECK_RC(prolly_pg_stats_init(&d, PROLLY_PG_STATS_VERSION), 0);
	PT_CHECK(c.version == PROLLY_PG_STATS_VERSION && d.version == PROLLY_PG_STATS_VERSION);
	PT_CHECK(d.statements == 0 && d.pool_waits == 0 && d.pool_wait_ns == 0);

	prolly_store *mem = NULL;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
	for (int i = 0; i < 2; i++) {
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		PT_CHECK(refused(prolly_pg_options_init(&o, bad_versions[i]), "prolly_pg_options"));
		o.version = bad_versions[i];
		prolly_store *st = NULL;
		/* Refused before any connection: no server is named here at all. */
		PT_CHECK(refused(prolly_store_pg_open(&st, "host=/nonexistent dbname=none", &o),
		                 "prolly_pg_options"));
		PT_CHECK(st == NULL);
		prolly_pg_stats s;
		PT_CHECK(refused(prolly_pg_stats_init(&s, bad_versions[i]), "prolly_pg_stats"));
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
	prolly_range a = PROLLY_RANGE_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_range_init(&b, PROLLY_RANGE_VERSION), 0);
	PT_CHECK(a.version == PROLLY_RANGE_VERSION && b.version == PROLLY_RANGE_VERSION);
	PT_CHECK(!b.has_lo && !b.has_hi && !b.lo_exclusive && !b.hi_inclusive && !b.reverse &&
	         b.prefix.size == 0 && b.prefix.data == NULL && b.lo.data == NULL);
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
		PT_CHECK(refused(prolly_range_init(&r, bad_versions[i]), "prolly_range"));
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
	prolly_tree_stats a = PROLLY_TREE_STATS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_tree_stats_init(&b, PROLLY_TREE_STATS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_TREE_STATS_VERSION && b.version == PROLLY_TREE_STATS_VERSION);
	PT_CHECK(b.records == 0 && b.height == 0 && b.nodes == 0 && b.bytes == 0 && b.leaves == 0);
	prolly_db *db = mem_db();
	PT_REQUIRE(db);
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_tree_stats_get(&b, db, &empty, 0), 0);
	PT_CHECK(b.version == PROLLY_TREE_STATS_VERSION && b.height == 1 && b.nodes == 1);
	for (int i = 0; i < 2; i++) {
		prolly_tree_stats s;
		PT_CHECK(refused(prolly_tree_stats_init(&s, bad_versions[i]), "prolly_tree_stats"));
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
	prolly_merge_options a = PROLLY_MERGE_OPTIONS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_merge_options_init(&b, PROLLY_MERGE_OPTIONS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_MERGE_OPTIONS_VERSION &&
	         b.version == PROLLY_MERGE_OPTIONS_VERSION);
	PT_CHECK(a.resolve == PROLLY_RESOLVE_FAIL && b.resolve == PROLLY_RESOLVE_FAIL);
	PT_CHECK(b.resolve_fn == NULL && b.on_conflict == NULL && b.payload == NULL &&
	         b.allow_unrelated == 0 && b.base == NULL);
	prolly_merge_stats c = PROLLY_MERGE_STATS_INIT, d;
	memset(&d, 0x5a, sizeof(d));
	PT_CHECK_RC(prolly_merge_stats_init(&d, PROLLY_MERGE_STATS_VERSION), 0);
	PT_CHECK(c.version == PROLLY_MERGE_STATS_VERSION && d.version == PROLLY_MERGE_STATS_VERSION);
	PT_CHECK(d.applied == 0 && d.convergent == 0 && d.conflicts == 0);

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
		PT_CHECK(refused(prolly_merge_options_init(&o, bad_versions[i]), "prolly_merge_options"));
		PT_CHECK(refused(prolly_merge_stats_init(&s, bad_versions[i]), "prolly_merge_stats"));
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
	prolly_sync_options a = PROLLY_SYNC_OPTIONS_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_sync_options_init(&b, PROLLY_SYNC_OPTIONS_VERSION), 0);
	PT_CHECK(a.version == PROLLY_SYNC_OPTIONS_VERSION && b.version == PROLLY_SYNC_OPTIONS_VERSION);
	PT_CHECK(b.batch == 0 && b.operation == NULL && b.message == NULL);
	prolly_sync_stats c = PROLLY_SYNC_STATS_INIT, d;
	memset(&d, 0x5a, sizeof(d));
	PT_CHECK_RC(prolly_sync_stats_init(&d, PROLLY_SYNC_STATS_VERSION), 0);
	PT_CHECK(c.version == PROLLY_SYNC_STATS_VERSION && d.version == PROLLY_SYNC_STATS_VERSION);
	PT_CHECK(d.commits_copied == 0 && d.nodes_copied == 0 && d.write_calls == 0);

	prolly_db *src = mem_db(), *dst = mem_db();
	PT_REQUIRE(src && dst);
	prolly_id head;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	PT_REQUIRE(prolly_commit_edits(&head, src, "main", &e, 1, "one") == 0);
	for (int i = 0; i < 2; i++) {
		prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
		prolly_sync_stats s;
		PT_CHECK(refused(prolly_sync_options_init(&o, bad_versions[i]), "prolly_sync_options"));
		PT_CHECK(refused(prolly_sync_stats_init(&s, bad_versions[i]), "prolly_sync_stats"));
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
	prolly_gc_result a = PROLLY_GC_RESULT_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_gc_result_init(&b, PROLLY_GC_RESULT_VERSION), 0);
	PT_CHECK(a.version == PROLLY_GC_RESULT_VERSION && b.version == PROLLY_GC_RESULT_VERSION);
	PT_CHECK(b.nodes_kept == 0 && b.nodes_removed == 0 && b.bytes_removed == 0 &&
	         b.reflog_expired == 0);
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
		PT_CHECK(refused(prolly_gc_result_init(&r, bad_versions[i]), "prolly_gc_result"));
		memset(&r, 0x5a, sizeof(r));
		r.version = bad_versions[i];
		PT_CHECK(refused(prolly_gc(db, &r), "prolly_gc_result"));
		PT_CHECK(r.nodes_kept == 0x5a5a5a5a5a5a5a5aULL);
	}
	prolly_close(db);
}

PT_TEST(lmdb_snapshot)
{
	prolly_lmdb_snapshot a = PROLLY_LMDB_SNAPSHOT_INIT, b;
	memset(&b, 0x5a, sizeof(b));
	PT_CHECK_RC(prolly_lmdb_snapshot_init(&b, PROLLY_LMDB_SNAPSHOT_VERSION), 0);
	PT_CHECK(a.version == PROLLY_LMDB_SNAPSHOT_VERSION &&
	         b.version == PROLLY_LMDB_SNAPSHOT_VERSION);
	PT_CHECK(b.txnid == 0 && !b.current && !b.intact && !b.restorable && b.problem[0] == 0);
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
		PT_CHECK(refused(prolly_lmdb_snapshot_init(&b, bad_versions[i]), "prolly_lmdb_snapshot"));
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
