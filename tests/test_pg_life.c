/*
 * test_pg_life.c - one PostgreSQL store handle kept open across its server's life, as a service
 * keeps it: the database restored in place from an older dump (pg_restore --clean) under the
 * open handle. The server and what the programs share: tests/lib/pgt.h.
 */
#include "lib/pgt.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- the database restored in place ----------------------------------------------------------- */

/* The client programs: from $PROLLY_PG_BIN when set, else from PATH. */
static const char *bin_dir(void)
{
	const char *b = getenv("PROLLY_PG_BIN");
	return b && b[0] ? b : NULL;
}

/* pg_dump -Fc of schema into file; its exit status. */
static int dump_schema(const char *schema, const char *file)
{
	char cmd[2048];
	const char *b = bin_dir();
	snprintf(cmd, sizeof(cmd), "%s%spg_dump -Fc -n '%s' -f '%s' -d '%s'", b ? b : "", b ? "/" : "",
	         schema, file, pgt_url);
	return system(cmd);
}

/* pg_restore --clean of file into the same database, over the live schema; its exit status. */
static int restore_in_place(const char *file)
{
	char cmd[2048];
	const char *b = bin_dir();
	snprintf(cmd, sizeof(cmd), "%s%spg_restore --exit-on-error --clean --if-exists -d '%s' '%s'",
	         b ? b : "", b ? "/" : "", pgt_url, file);
	return system(cmd);
}

/* A handle on a fresh schema, as a service opens it once. */
static prolly_db *open_db(const char **schema)
{
	prolly_db *db = NULL;
	*schema = pgt_new_schema();
	prolly_store *st = pgt_open(*schema, 0, 0, 4, 0);
	if (!st || prolly_db_new(&db, st, NULL)) {
		fprintf(stderr, "  open failed: %s\n", prolly_last_error());
		return NULL;
	}
	return db;
}

static int put(prolly_db *db, prolly_id *head, const char *key)
{
	prolly_edit e = {PROLLY_PUT, {key, strlen(key)}, {"v", 1}};
	return prolly_commit_edits(head, db, "main", &e, 1, key);
}

/* 1 when main's tree, read by a fresh handle on schema, holds key; 0 when not; -1 on error. */
static int main_has(const char *schema, const char *key)
{
	prolly_db *db = NULL;
	prolly_commit *c = NULL;
	prolly_buf v = PROLLY_BUF_INIT;
	int rc = -1;
	if (prolly_db_new(&db, pgt_open(schema, 0, 0, 1, 0), NULL) ||
	    prolly_branch_commit(&c, db, "main"))
		goto cleanup;
	int g = prolly_get(&v, db, &c->tree, key, strlen(key));
	rc = g == 0 ? 1 : g == PROLLY_ENOTFOUND ? 0 : -1;
cleanup:
	if (rc < 0)
		fprintf(stderr, "  reading %s: %s\n", key, prolly_last_error());
	prolly_buf_dispose(&v);
	prolly_commit_free(c);
	prolly_close(db);
	return rc;
}

/* After the restore, a commit of the old handle builds on the restored head: main then holds
 * what the dump held and the new key, not what was committed between the dump and the restore;
 * and a gc through the old handle keeps every node of it. */
static void commits_on_the_restored_head(prolly_db *db, const char *schema)
{
	prolly_id head;
	int rc = put(db, &head, "after-restore");
	PT_CHECKF(rc == 0, "%d: %s", rc, prolly_last_error());
	PT_CHECK_RC(prolly_gc(db, NULL), 0);
	PT_CHECK(main_has(schema, "before-dump") == 1);
	PT_CHECK(main_has(schema, "after-dump") == 0);
	PT_CHECK(main_has(schema, "after-restore") == 1);
}

/* The dump was taken at a lower gc epoch than the handle last saw (two gcs ran since): the
 * restore sets the epoch back. The handle's epoch only grows, so every txn it began checked an
 * epoch the store no longer had: each commit failed with PROLLY_ECONFLICT ("a gc ran"), retried
 * and failed again, for as long as the store's epoch stayed below the old one. */
PT_TEST(restore_to_an_older_epoch_commits_again)
{
	const char *schema;
	char file[256];
	prolly_db *db = open_db(&schema);
	prolly_id head;
	PT_REQUIRE(db);
	snprintf(file, sizeof(file), "/tmp/%s.dump", schema);
	PT_CHECK_RC(put(db, &head, "before-dump"), 0);
	PT_REQUIRE(dump_schema(schema, file) == 0);
	for (int i = 0; i < 2; i++)
		PT_CHECK_RC(prolly_gc(db, NULL), 0);
	PT_CHECK_RC(put(db, &head, "after-dump"), 0);
	PT_REQUIRE(restore_in_place(file) == 0);
	commits_on_the_restored_head(db, schema);
	prolly_close(db);
	remove(file);
}

/* The dump was taken at the epoch the handle holds (no gc since): the restore removes the
 * commit the handle made after it, and the handle took that commit, read as main's head at an
 * epoch the store reports again, as still stored (H4). A branch created at it succeeded, naming
 * a commit the store lacks (and every later read of the branches failed). */
PT_TEST(restore_at_the_same_epoch_forgets_the_heads)
{
	const char *schema;
	char file[256];
	prolly_db *db = open_db(&schema);
	prolly_id head, lost;
	PT_REQUIRE(db);
	snprintf(file, sizeof(file), "/tmp/%s.dump", schema);
	PT_CHECK_RC(put(db, &head, "before-dump"), 0);
	PT_REQUIRE(dump_schema(schema, file) == 0);
	PT_CHECK_RC(put(db, &lost, "after-dump"), 0);
	PT_CHECK_RC(prolly_branch_head(&head, db, "main"), 0); /* read at the epoch of the dump */
	PT_REQUIRE(restore_in_place(file) == 0);
	int rc = prolly_branch_create(db, "at-lost", &lost);
	PT_CHECKF(rc == PROLLY_ENOTFOUND, "%d: %s", rc, rc ? prolly_last_error() : "created");
	printf("# branch at the lost commit: %s\n", prolly_last_error());
	commits_on_the_restored_head(db, schema);
	prolly_close(db);
	remove(file);
}

/* The store's side alone, on both ways of writing (one statement; the pipeline a write of more
 * than batch_items nodes takes): the epoch row written again with its own value, as a restore
 * of a dump taken at that epoch writes it. An epoch-checked write with the epoch read before
 * fails, writing nothing, and the epoch it reports is above every earlier one; with that epoch
 * the write goes through. Before, the row's value was all the check compared, and the write
 * passed. */
PT_TEST(epoch_row_written_again_fails_the_epoch_check)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 2, 0, 2, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	char q[256];
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = value WHERE key = 'epoch'", schema);
	prolly_id prev = pgt_mkid(30, 0), got;
	prolly_ref_update u0 = pgt_upd("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, &prev);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u0), 0);
	for (unsigned n = 1; n <= 3; n += 2) { /* 1 node: one statement; 3: the pipeline */
		prolly_id none = pgt_mkid(30, n);
		prolly_ref_update u = pgt_upd("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, &none);
		prolly_store_write w;
		memset(&w, 0, sizeof(w));
		PT_CHECK_RC(st->write(st, &w), 0); /* reads the epoch */
		uint64_t before = w.current_epoch;
		pgt_sql1(a, q);
		pgt_tn t[3];
		prolly_store_node nodes[3];
		for (unsigned i = 0; i < n; i++) {
			pgt_tn_make(&t[i], 31 + n, i);
			nodes[i] = t[i].sn;
		}
		memset(&w, 0, sizeof(w));
		w.nodes = nodes;
		w.n_nodes = n;
		w.refs = &u;
		w.n_refs = 1;
		w.check_epoch = 1;
		w.epoch = before;
		w.durable = 1;
		PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
		printf("# %u node(s): %s\n", n, prolly_last_error());
		PT_CHECK(strstr(prolly_last_error(), "written again"));
		PT_CHECKF(w.current_epoch > before, "%llu after %llu", (unsigned long long)w.current_epoch,
		          (unsigned long long)before);
		PT_CHECK(pgt_present(st, &t[0].sn.id, 1) == 0);
		PT_CHECK_RC(st->get_ref(st, "refs/heads/e", &got, NULL), 0);
		PT_CHECK(prolly_id_equal(&got, &prev));
		w.epoch = w.current_epoch;
		PT_CHECK_RC(st->write(st, &w), 0);
		PT_CHECK(pgt_present(st, &t[0].sn.id, 1) == 1);
		uint64_t e = 0;
		PT_CHECK_RC(st->get_ref(st, "refs/heads/e", &got, &e), 0);
		PT_CHECK(e == w.epoch && prolly_id_equal(&got, &none));
		prev = none;
	}
	prolly_pg_counters c;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
	PT_CHECKF(c.epoch_rewrites == 2, "%llu", (unsigned long long)c.epoch_rewrites);
	prolly_store_close(st);
	PQfinish(a);
}

PGT_MAIN(NULL, NULL)
