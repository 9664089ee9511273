/*
 * test_pg_life.c - one PostgreSQL store handle kept open across its server's life, as a service
 * keeps it: a pool whose every connection died while idle (terminated, the server restarted),
 * sessions the idle timeouts of the store's role end (between calls, and under a gc's mark), a
 * commit of many nodes cut by a crash, a long scan across a restart, and the database restored in place from an older dump
 * (pg_restore --clean) under the open handle. The server and what the programs share:
 * tests/lib/pgt.h. docs/postgres.md, "Connection loss: what a long-lived handle can rely on".
 */
#include "lib/pgt.h"
#include "ptest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- connections lost while idle ------------------------------------------------------------- */

/* The test server's connection string with application_name=name (pgt_url may be a URL or
 * key=value pairs). */
static void url_named(char *out, size_t size, const char *name)
{
	snprintf(out, size,
	         strncmp(pgt_url, "postgres", 8) != 0 ? "%s application_name=%s"
	         : strchr(pgt_url, '?')               ? "%s&application_name=%s"
	                                              : "%s?application_name=%s",
	         pgt_url, name);
}

/* Waits (5 s at most) until the server has `want` sessions matching `where` (an SQL condition on
 * pg_stat_activity); 1 when it got there. */
static int wait_sessions(PGconn *a, const char *where, long long want)
{
	char q[512];
	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE %s", where);
	for (int i = 0; i < 500; i++) {
		if (pgt_sql1(a, q) == want)
			return 1;
		pgt_sleep_ms(20);
	}
	return 0;
}

typedef struct caller {
	prolly_store *st;
	int write; /* also write, after the read */
	unsigned tag;
	int rc;
	char err[512];
} caller;

static void *call(void *arg)
{
	caller *c = arg;
	prolly_id got, v = pgt_mkid(40, c->tag);
	c->rc = c->st->get_ref(c->st, "refs/heads/p", &got, NULL);
	if (c->rc == 0 && c->write) {
		prolly_ref_update u = pgt_upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &v);
		c->rc = pgt_write1(c->st, NULL, 0, &u);
	}
	snprintf(c->err, sizeof(c->err), "%s", c->rc ? prolly_last_error() : "");
	return NULL;
}

/* n threads calling st at once (each a read, and a write with write); 1 when all succeeded. */
static int call_at_once(prolly_store *st, int n, int write)
{
	caller c[8];
	pthread_t th[8];
	int ok = 1;
	for (int i = 0; i < n; i++) {
		c[i] = (caller){st, write, (unsigned)i, 0, ""};
		if (pthread_create(&th[i], NULL, call, &c[i]) != 0) {
			PT_CHECKF(0, "pthread_create");
			n = i;
			ok = 0;
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(c[i].rc == 0, "caller %d: %s", i, c[i].err);
		ok = ok && c[i].rc == 0;
	}
	return ok;
}

/* A pool of 4 whose every connection is open and idle, then all of them ended at once: by
 * pg_terminate_backend, then (on this program's own cluster) by pg_ctl restart -m immediate
 * and -m fast. Each time the 4 callers that come next at once all succeed, on connections made
 * again (the dead ones are found before use), without reopening the store. */
PT_TEST(pool_of_dead_connections_recovers)
{
	const char *schema = pgt_new_schema();
	char url[1024], name[64], where[128], q[512];
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	prolly_store *st = NULL;
	snprintf(name, sizeof(name), "prolly_life_%d", (int)getpid());
	snprintf(where, sizeof(where), "application_name = '%s'", name);
	url_named(url, sizeof(url), name);
	o.schema = schema;
	o.pool_size = 4;
	PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	prolly_id v = pgt_mkid(40, 99);
	prolly_ref_update u = pgt_upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	/* Four readers held behind a lock on refs: four connections open, then idle in the pool. */
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".refs IN ACCESS EXCLUSIVE MODE", schema);
	pgt_sql1(a, q);
	caller c[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (caller){st, 0, (unsigned)i, 0, ""};
		PT_REQUIRE(pthread_create(&th[i], NULL, call, &c[i]) == 0);
	}
	char waiting[192];
	snprintf(waiting, sizeof(waiting), "%s AND wait_event_type = 'Lock'", where);
	PGconn *w = pgt_admin(); /* a's transaction would see one snapshot of pg_stat_activity */
	PT_CHECK(w && wait_sessions(w, waiting, 4));
	PQfinish(w);
	pgt_sql1(a, "COMMIT");
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(c[i].rc == 0, "%s", c[i].err);
	}
	PT_CHECK(wait_sessions(a, where, 4));
	const char *own = getenv("PROLLY_PG_DIR") && getenv("PROLLY_PG_BIN") ? "" : NULL;
	const char *ends[3] = {"pg_terminate_backend", own ? "-m immediate restart" : NULL,
	                       own ? "-m fast restart" : NULL};
	for (int k = 0; k < 3 && ends[k]; k++) {
		prolly_pg_counters before, after;
		PT_CHECK_RC(prolly_store_pg_counters(st, &before), 0);
		if (k == 0) {
			snprintf(q, sizeof(q),
			         "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE %s",
			         where);
			PT_CHECK(pgt_sql1(a, q) == 4);
			PT_CHECK(wait_sessions(a, where, 0));
		} else {
			PQfinish(a);
			int sys = pgt_pg_ctl(ends[k]);
			PT_CHECKF(sys == 0, "pg_ctl %s: %d", ends[k], sys);
			a = pgt_admin();
			PT_REQUIRE(a);
		}
		PT_CHECKF(call_at_once(st, 4, 1), "after %s", ends[k]);
		PT_CHECK_RC(prolly_store_pg_counters(st, &after), 0);
		printf("# after %s: %llu connections found dead, %llu made again\n", ends[k],
		       (unsigned long long)(after.broken - before.broken),
		       (unsigned long long)(after.connects - before.connects));
		/* Not exactly 4 each: under ThreadSanitizer the 4 callers of a round may not overlap,
		 * and the pool then holds fewer than 4 connections at the next end (3 found dead and 3
		 * made, seen in CI). Every caller succeeded; each dead connection met was replaced. */
		uint64_t dead = after.broken - before.broken, made = after.connects - before.connects;
		PT_CHECKF(dead >= 1 && dead <= 4 && made >= dead && made <= 4, "%llu dead, %llu made",
		          (unsigned long long)dead, (unsigned long long)made);
		/* The four are open again, idle: the next round ends them all. */
		PT_CHECK(wait_sessions(a, where, 4) || call_at_once(st, 4, 0));
	}
	if (!own)
		pgt_skip("a server this program did not start (PROLLY_PG_URL given): backends "
		         "terminated, no server restart");
	prolly_store_close(st);
	PQfinish(a);
}

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

/* 1 on this program's own cluster, which a case may restart or crash; else 0, the case skipped
 * saying what it does not do (on a server given by PROLLY_PG_URL others may be working). */
static int own_cluster(const char *no)
{
	if (getenv("PROLLY_PG_DIR") && getenv("PROLLY_PG_BIN"))
		return 1;
	pgt_skip("a server this program did not start (PROLLY_PG_URL given): %s", no);
	return 0;
}

/* ---- a commit in flight when the server crashes ------------------------------------------------ */

#define BIG 20000

typedef struct big_commit {
	prolly_db *db;
	int rc;
	char err[512];
	_Atomic int done;
} big_commit;

/* Commits BIG keys to main (the store gets them as several writes: T5 in src/txn.c). */
static void *commit_big(void *arg)
{
	big_commit *b = arg;
	prolly_edit *e = calloc(BIG, sizeof(*e));
	char(*k)[16] = calloc(BIG, 16);
	prolly_id c;
	b->rc = PROLLY_ENOMEM;
	if (e && k) {
		for (int i = 0; i < BIG; i++) {
			snprintf(k[i], 16, "big%06d", i);
			e[i] = (prolly_edit){PROLLY_PUT, {k[i], strlen(k[i])}, {"a value of the big one", 22}};
		}
		b->rc = prolly_commit_edits(&c, b->db, "main", e, BIG, "big");
	}
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	free(e);
	free(k);
	b->done = 1;
	return NULL;
}

/* The records of main's tree, read by a fresh handle on schema (-1 on error). */
static long main_records(const char *schema)
{
	prolly_db *db = NULL;
	prolly_commit *c = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	long n = -1;
	if (prolly_db_new(&db, pgt_open(schema, 0, 0, 1, 0), NULL) == 0 &&
	    prolly_branch_commit(&c, db, "main") == 0 &&
	    prolly_tree_stats_get(&ts, db, &c->tree, 1) == 0)
		n = (long)ts.records;
	else
		fprintf(stderr, "  reading main: %s\n", prolly_last_error());
	prolly_commit_free(c);
	prolly_close(db);
	return n;
}

/* A commit of many nodes (written in several writes, the branch moved by the last) in flight
 * when the server crashes (pg_ctl restart -m immediate, once the first of its node writes has
 * landed): it fails or succeeds, and afterwards main is either where it was or at the whole new
 * tree, read back complete; the same commit made again through the same handle lands whole. */
PT_TEST(commit_of_many_nodes_cut_by_a_crash)
{
	if (!own_cluster("no crash"))
		return;
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 4, 0);
	prolly_db *db = NULL;
	prolly_id head, after;
	PT_REQUIRE(st && prolly_db_new(&db, st, NULL) == 0);
	PT_CHECK_RC(put(db, &head, "k"), 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	char active[512];
	snprintf(active, sizeof(active),
	         "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE "
	         "'%%%s%%' AND (query LIKE '%%prolly_write%%' OR query LIKE 'INSERT%%')",
	         schema);
	for (int round = 0; round < 2; round++) {
		big_commit b = {db, 0, "", 0};
		pthread_t th;
		PT_REQUIRE(pthread_create(&th, NULL, commit_big, &b) == 0);
		/* The crash once the server runs one of its writes (bounded: 10 s). */
		int crashed = 0;
		for (double t0 = pgt_now_s(); round == 0 && !b.done && pgt_now_s() - t0 < 10;) {
			if (pgt_sql1(a, active) > 0) {
				int sys = pgt_pg_ctl("-m immediate restart");
				PT_CHECKF(sys == 0, "pg_ctl restart: %d", sys);
				crashed = 1;
				break;
			}
		}
		pthread_join(th, NULL);
		printf("# round %d%s: %s\n", round, crashed ? " (crashed mid-commit)" : "",
		       b.rc ? b.err : "committed");
		PT_CHECKF(round == 0 ? b.rc == 0 || b.rc == PROLLY_ESTORE || b.rc == PROLLY_ECONFLICT
		                     : b.rc == 0,
		          "round %d: %d %s", round, b.rc, b.err);
		if (crashed) {
			PQfinish(a);
			a = pgt_admin();
			PT_REQUIRE(a);
		}
		PT_CHECK_RC(prolly_branch_head(&after, db, "main"), 0);
		long n = main_records(schema);
		PT_CHECKF(prolly_id_equal(&after, &head) ? n == 1 : n == BIG + 1, "%ld records", n);
		PT_CHECK(b.rc != 0 || n == BIG + 1); /* a success is there whole */
		PT_CHECKF(round == 1 || crashed, "the commit ended before the server ran its write");
	}
	prolly_close(db);
	PQfinish(a);
}

/* Reads main's tree to the end from cur, or until a call fails; the records read. The restart
 * (pg_ctl ARGS) comes after `at` records, when args is given. */
static long scan(prolly_cursor *cur, long at, const char *args, int *rc)
{
	prolly_slice k, v;
	long n = 0;
	while ((*rc = prolly_cursor_next(cur, &k, &v)) == 0)
		if (++n == at && args)
			PT_CHECK(pgt_pg_ctl(args) == 0);
	return n;
}

/* A long scan (a cursor over a tree of BIG records, its nodes read in batches, ahead of the
 * reader) across a server restart: it reads on to the end, or fails with PROLLY_ESTORE; a scan
 * opened again on the same handle reads every record. The node cache is cleared first, so the
 * scan does read from the server after the restart. */
PT_TEST(scan_across_a_restart)
{
	if (!own_cluster("no restart"))
		return;
	const char *schema = pgt_new_schema();
	prolly_db *db = NULL;
	prolly_commit *c = NULL;
	prolly_store *st = pgt_open(schema, 0, 0, 2, 0);
	PT_REQUIRE(st && prolly_db_new(&db, st, NULL) == 0);
	big_commit b = {db, 0, "", 0};
	commit_big(&b);
	PT_REQUIRE(b.rc == 0 && prolly_branch_commit(&c, db, "main") == 0);
	const char *modes[2] = {"-m fast restart", "-m immediate restart"};
	for (int m = 0; m < 2; m++) {
		prolly_cursor *cur = NULL;
		int rc;
		prolly_db_cache_clear(db);
		PT_REQUIRE(prolly_cursor_open(&cur, db, &c->tree, NULL) == 0);
		prolly_pg_counters c0, c1;
		PT_CHECK_RC(prolly_store_pg_counters(st, &c0), 0);
		long n = scan(cur, BIG / 4, modes[m], &rc);
		PT_CHECK_RC(prolly_store_pg_counters(st, &c1), 0);
		printf("# scan across pg_ctl %s: %ld records, then %s (%llu round trips, %llu "
		       "connects)\n",
		       modes[m], n, rc == PROLLY_ITEROVER ? "the end" : prolly_last_error(),
		       (unsigned long long)(c1.round_trips - c0.round_trips),
		       (unsigned long long)(c1.connects - c0.connects));
		PT_CHECKF(rc == PROLLY_ITEROVER ? n == BIG : rc == PROLLY_ESTORE, "%d after %ld", rc, n);
		PT_CHECK(c1.connects > c0.connects); /* it read from the restarted server */
		prolly_cursor_free(cur);
		PT_REQUIRE(prolly_cursor_open(&cur, db, &c->tree, NULL) == 0);
		n = scan(cur, 0, NULL, &rc);
		PT_CHECKF(rc == PROLLY_ITEROVER && n == BIG, "%d after %ld", rc, n);
		prolly_cursor_free(cur);
	}
	prolly_commit_free(c);
	prolly_close(db);
}

/* The gc's mark for idle_timeouts_of_the_role: reads a ref through the gc's snapshot, waits
 * until the server has ended that session (idle in its transaction longer than the role allows),
 * reads again and returns what that read returned. */
typedef struct slow_mark {
	prolly_store *st;
	const char *role;
	int waited, rc;
	char err[512];
} slow_mark;

static int mark_slowly(void *payload)
{
	slow_mark *m = payload;
	char where[160];
	prolly_id got;
	PGconn *w = pgt_admin();
	int rc = m->st->get_ref(m->st, "refs/heads/main", &got, NULL);
	snprintf(where, sizeof(where), "usename = '%s' AND state LIKE 'idle in transaction%%'",
	         m->role);
	m->waited = rc == 0 && w && wait_sessions(w, where, 0);
	PQfinish(w);
	m->rc = rc ? rc : m->st->get_ref(m->st, "refs/heads/main", &got, NULL);
	snprintf(m->err, sizeof(m->err), "%s", m->rc ? prolly_last_error() : "");
	return m->rc;
}

static int keep_all(void *payload, const prolly_id *id)
{
	(void)payload;
	(void)id;
	return 1;
}

/* Sessions the server ends on its own: idle_session_timeout and idle_in_transaction_session_timeout
 * set on the store's role, as an administrator sets them (1 s and 2 s: with 200 ms and 500 ms a
 * loaded machine paused a put or the gc long enough between two statements for the server to end
 * it, and the case failed once). Connections it ended while they sat
 * idle in the pool are made again before use: the commits after them succeed. The gc's snapshot
 * is a transaction left open while mark() works: ended under a mark, the gc fails with
 * PROLLY_ESTORE saying the connection was lost and removes nothing, and the next gc works. */
PT_TEST(idle_timeouts_of_the_role)
{
	const char *schema = pgt_new_schema();
	char role[64], q[512], conninfo[1024], where[128];
	prolly_store *st = pgt_open(schema, 0, 0, 1, 0); /* the schema, made by the admin */
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_store_close(st);
	snprintf(role, sizeof(role), "prolly_idle_%d", (int)getpid());
	snprintf(q, sizeof(q),
	         "CREATE ROLE %s LOGIN IN ROLE \"%s\"; ALTER ROLE %s SET idle_session_timeout = "
	         "'1s'; ALTER ROLE %s SET idle_in_transaction_session_timeout = '2s'",
	         role, PQuser(a), role, role);
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	snprintf(conninfo, sizeof(conninfo), "host=%s port=%s dbname=%s user=%s", PQhost(a), PQport(a),
	         PQdb(a), role);
	PGconn *probe = PQconnectdb(conninfo);
	int can_login = PQstatus(probe) == CONNECTION_OK;
	if (!can_login)
		pgt_skip("this server does not let a new role log in without a password from here: %s",
		         PQerrorMessage(probe));
	PQfinish(probe);
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	prolly_db *db = NULL;
	prolly_id head;
	o.schema = schema;
	o.pool_size = 3;
	if (can_login && prolly_store_pg_open(&st, conninfo, &o) == 0 &&
	    prolly_db_new(&db, st, NULL) == 0) {
		snprintf(where, sizeof(where), "usename = '%s'", role);
		PT_CHECK_RC(put(db, &head, "one"), 0);
		PT_CHECK(wait_sessions(a, where, 0)); /* every session ended while idle */
		PT_CHECK_RC(put(db, &head, "two"), 0);
		PT_CHECK(wait_sessions(a, where, 0));
		long long nodes = pgt_node_count(a, schema);
		slow_mark m = {st, role, 0, 0, ""};
		prolly_gc_result r = PROLLY_GC_RESULT_INIT;
		PT_CHECK_RC(st->gc(st, mark_slowly, keep_all, &m, &r), PROLLY_ESTORE);
		PT_CHECK(m.waited && m.rc == PROLLY_ESTORE);
		printf("# gc whose snapshot the server ended: %s\n", m.err);
		PT_CHECK(strstr(m.err, "idle-in-transaction timeout"));
		PT_CHECK(pgt_node_count(a, schema) == nodes);
		PT_CHECK_RC(prolly_gc(db, NULL), 0);
		PT_CHECK_RC(put(db, &head, "three"), 0);
		PT_CHECK(main_has(schema, "one") == 1 && main_has(schema, "three") == 1);
		prolly_pg_counters c;
		PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
		printf("# %llu connections found ended, %llu made\n", (unsigned long long)c.broken,
		       (unsigned long long)c.connects);
		PT_CHECK(c.broken >= 3);
	} else if (can_login) {
		PT_CHECKF(0, "open as %s: %s", role, prolly_last_error());
	}
	prolly_close(db);
	snprintf(q, sizeof(q), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	pgt_sql1(a, q);
	PQfinish(a);
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
