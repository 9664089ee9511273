/*
 * test_pg_standby.c - the PostgreSQL store on a hot standby of this program's own cluster
 * (scripts/pg-cluster.sh standby): reads work and run again when the standby cancels them or ends
 * their session, writes are refused saying why, and once it is promoted the same handle writes.
 * Each case starts from one fixture (sby_open). The cases skip on a server this program did not
 * start (PROLLY_PG_URL given). The server and what the programs share: tests/lib/pgt.h.
 */
#include "lib/model.h"
#include "lib/pgt.h"
#include "ptest.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* The URL of a hot standby of this program's own cluster, made by the first call (scripts/
 * pg-cluster.sh standby; stopped with the cluster); NULL, the case skipped, on a server this
 * program did not start, or the case failed when the standby cannot be made. */
static const char *standby_url(void)
{
	static char url[1024];
	const char *dir = getenv("PROLLY_PG_DIR"), *script = getenv("PROLLY_PG_SCRIPT");
	if (!dir || !getenv("PROLLY_PG_BIN") || !getenv("PROLLY_PG_PORT")) {
		pgt_skip("a server this program did not start (PROLLY_PG_URL given): no standby made "
		         "of it");
		return NULL;
	}
	if (url[0])
		return url;
	if (!script || !*script)
		script = access("scripts/pg-cluster.sh", X_OK) == 0 ? "scripts/pg-cluster.sh"
		                                                    : "../scripts/pg-cluster.sh";
	char cmd[1200], line[1024];
	double t0 = pgt_now_s();
	snprintf(cmd, sizeof(cmd), "'%s' standby '%s'", script, dir);
	FILE *f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f))
		(void)sscanf(line, "export PROLLY_PG_STANDBY_URL='%1000[^']'", url);
	if (!f || pclose(f) != 0)
		url[0] = 0;
	PT_CHECKF(url[0], "%s failed", cmd);
	if (url[0])
		printf("# standby made in %.1f s\n", pgt_now_s() - t0);
	return url[0] ? url : NULL;
}

/* Waits (up to 30 s) until the standby at url replayed everything the primary (a) wrote. */
static int standby_caught_up(PGconn *a, const char *url)
{
	char lsn[64], q[256];
	PGconn *s = PQconnectdb(url);
	int ok = 0;
	pgt_sql_text(a, "SELECT pg_current_wal_lsn()::text", lsn, sizeof(lsn));
	snprintf(q, sizeof(q), "SELECT (pg_last_wal_replay_lsn() >= '%s'::pg_lsn)::int", lsn);
	for (int i = 0; PQstatus(s) == CONNECTION_OK && i < 300 && !(ok = pgt_sql1(s, q) == 1); i++)
		pgt_sleep_ms(100);
	PQfinish(s);
	return ok;
}

/* Sets schema's meta to version 4 on the primary (a), as an older library left it, and waits
 * until the standby at url replayed it; 1 when it did. */
static int version4_on_standby(PGconn *a, const char *url, const char *schema)
{
	char q[512];
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 4 WHERE key = 'schema_version'", schema);
	return pgt_sql_state(a, q, "") && standby_caught_up(a, url);
}

/* The head of branch on db, and its value of key ("" when absent, "?" on error) into out. */
static prolly_id head_and_get(prolly_db *db, const char *branch, const char *key, char *out,
                              size_t size)
{
	prolly_id head = {{0}};
	prolly_commit *c = NULL;
	snprintf(out, size, "?");
	if (prolly_branch_head(&head, db, branch) || prolly_branch_commit(&c, db, branch))
		return head;
	prolly_buf v = PROLLY_BUF_INIT;
	int rc = prolly_get(&v, db, &c->tree, key, strlen(key));
	if (rc == 0)
		snprintf(out, size, "%.*s", (int)v.size, (const char *)v.ptr);
	else if (rc == PROLLY_ENOTFOUND)
		snprintf(out, size, "%s", "");
	prolly_buf_dispose(&v);
	prolly_commit_free(c);
	return head;
}

/* What every case starts from: a fresh schema and its options, admin connections to the
 * primary (a) and to the standby (s, at url), and a handle on the primary (db; st its store,
 * owned by db). */
typedef struct sby {
	const char *url, *schema;
	prolly_pg_options o;
	PGconn *a, *s;
	prolly_db *db;
	prolly_store *st;
	int no_delay; /* the standby's max_standby_streaming_delay is 0, reset by sby_close */
} sby;

/* Closes what sby_open opened (the handle on the primary stays open until here) and resets the
 * standby's replay delay sby_no_delay set; any part may be missing. */
static void sby_close(sby *f)
{
	prolly_close(f->db);
	if (f->no_delay) {
		pgt_sql_state(f->s, "ALTER SYSTEM RESET max_standby_streaming_delay", "");
		pgt_sql1(f->s, "SELECT pg_reload_conf()");
	}
	PQfinish(f->s);
	PQfinish(f->a);
}

/* A handle on a store at url (the primary's or the standby's) with f's options; NULL after a
 * failed check. */
static prolly_db *sby_db(const sby *f, const char *url)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PT_CHECKF(prolly_store_pg_open(&st, url, &f->o) == 0 && prolly_db_new(&db, st, NULL) == 0, "%s",
	          prolly_last_error());
	return db;
}

/* Opens f, o.read_chunk and o.pool_size set when not 0: 1 when ready; 0 when the case is
 * skipped (no standby) or failed a check, and then f is closed. */
static int sby_open(sby *f, size_t read_chunk, unsigned pool_size)
{
	memset(f, 0, sizeof(*f));
	if (!(f->url = standby_url()))
		return 0;
	f->schema = pgt_new_schema();
	f->o = (prolly_pg_options)PROLLY_PG_OPTIONS_INIT;
	f->o.schema = f->schema;
	if (read_chunk)
		f->o.read_chunk = read_chunk;
	if (pool_size)
		f->o.pool_size = pool_size;
	f->a = pgt_admin();
	f->s = PQconnectdb(f->url);
	PT_CHECK(f->a && PQstatus(f->s) == CONNECTION_OK);
	if (!pt_failed_now)
		f->db = sby_db(f, pgt_url);
	if (!f->db) {
		sby_close(f);
		return 0;
	}
	f->st = prolly_db_store(f->db);
	return 1;
}

/* Waits until the standby replayed everything the primary wrote, then makes it cancel a read
 * that holds back its replay at once (max_standby_streaming_delay = 0); 1 when it did. */
static int sby_no_delay(sby *f)
{
	if (!standby_caught_up(f->a, f->url) ||
	    !pgt_sql_state(f->s, "ALTER SYSTEM SET max_standby_streaming_delay = 0", ""))
		return 0;
	f->no_delay = 1;
	pgt_sql1(f->s, "SELECT pg_reload_conf()");
	pgt_sleep_ms(200);
	return 1;
}

/*
 * A hot standby of this program's cluster (scripts/pg-cluster.sh standby), on a schema of an
 * older version (4): opening it as prolly_open does (may create, so may migrate) works and reads
 * what the primary wrote; a write and a gc fail at once as store errors saying the server is a
 * hot standby, and the schema is left as it was. A URL listing both servers reaches the standby
 * with target_session_attrs=read-only and the primary with read-write. Before, the open failed
 * ("migrating the schema: cannot execute ALTER TABLE in a read-only transaction").
 */
PT_TEST(standby_reads_and_refuses_writes)
{
	const char *dir = getenv("PROLLY_PG_DIR"), *port = getenv("PROLLY_PG_PORT");
	sby f;
	if (!sby_open(&f, 0, 0))
		return;
	prolly_db *db = f.db;
	prolly_edit e[3] = {tm_put("a", "1"), tm_put("b", "2"), tm_put("c", "3")};
	prolly_id head, got;
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", e, 3, "three") == 0);
	PT_REQUIRE(prolly_branch_create(db, "dev", &head) == 0);
	e[0] = tm_put("a", "dev");
	PT_REQUIRE(prolly_commit_edits(&head, db, "dev", e, 1, "one") == 0);
	PT_REQUIRE(version4_on_standby(f.a, f.url, f.schema));

	/* Reads, through an open that may create (and so tries to migrate). */
	PT_REQUIRE((db = sby_db(&f, f.url)) != NULL);
	char v[32];
	got = head_and_get(db, "dev", "a", v, sizeof(v));
	PT_CHECK(prolly_id_equal(&got, &head) && strcmp(v, "dev") == 0);
	head_and_get(db, "main", "c", v, sizeof(v));
	PT_CHECK(strcmp(v, "3") == 0);

	/* Writes and gc: refused at once, saying why. */
	double t0 = pgt_now_s();
	e[0] = tm_put("d", "4");
	PT_CHECK_RC(prolly_commit_edits(&got, db, "main", e, 1, "refused"), PROLLY_ESTORE);
	PT_CHECKF(strstr(prolly_last_error(), "hot standby") != NULL, "put: %s", prolly_last_error());
	printf("# put on the standby: %s\n", prolly_last_error());
	prolly_gc_result gr;
	prolly_gc_result_init(&gr, PROLLY_GC_RESULT_VERSION);
	PT_CHECK_RC(prolly_gc(db, &gr), PROLLY_ESTORE);
	PT_CHECKF(strstr(prolly_last_error(), "hot standby") != NULL, "gc: %s", prolly_last_error());
	PT_CHECKF(pgt_now_s() - t0 < 3, "refusals took %.1f s", pgt_now_s() - t0);
	prolly_close(db);
	PT_CHECK(pgt_schema_version(f.a, f.schema) == 4);

	/* Both servers in one URL: target_session_attrs picks the standby or the primary. */
	for (int rw = 0; rw <= 1; rw++) {
		char both[1400];
		const char *sport = strstr(f.url, "&port=") + 6;
		snprintf(both, sizeof(both),
		         "postgresql://postgres@/prolly?host=%s/sock,%s/standby/sock&port=%s,%s"
		         "&target_session_attrs=%s",
		         dir, dir, port, sport, rw ? "read-write" : "read-only");
		PT_REQUIRE((db = sby_db(&f, both)) != NULL);
		head_and_get(db, "main", "b", v, sizeof(v));
		PT_CHECK(strcmp(v, "2") == 0);
		PT_CHECK_RC(prolly_commit_edits(&got, db, "main", e, 1, "both"), rw ? 0 : PROLLY_ESTORE);
		prolly_close(db);
	}
	PT_CHECK(pgt_schema_version(f.a, f.schema) == 6); /* the primary's open migrated */
	sby_close(&f);
}

/* Takes and releases the ACCESS EXCLUSIVE lock of a table on the primary, again and again, until
 * told to stop: each one is replayed on a standby, where it cancels the reads of that table. */
typedef struct locker {
	const char *sql;
	atomic_int stop;
	int n;
} locker;

static void *lock_loop(void *arg)
{
	locker *l = arg;
	PGconn *c = pgt_admin();
	while (c && !atomic_load(&l->stop) && pgt_sql_state(c, l->sql, ""))
		l->n++;
	PQfinish(c);
	return NULL;
}

/*
 * A hot standby cancels a query that holds back the replay of its primary's WAL (a recovery
 * conflict, after max_standby_streaming_delay: 0 here) with SQLSTATE 40001, the code of a
 * serialization failure. The store mapped every 40001 to PROLLY_ECONFLICT, so a read on a
 * standby (prolly_get, prolly_count, the open itself) failed with "compare-and-swap lost", which
 * no read documents, and the CLI exited 4 ("lost a concurrent update") from scan or get. On a
 * hot standby it is now a store error saying the standby cancelled the read to replay WAL.
 */
PT_TEST(standby_recovery_conflict_is_a_store_error)
{
	sby f;
	if (!sby_open(&f, 0, 0))
		return;
	prolly_db *db = f.db;
	/* A tree of some 100 leaves: each read is a few statements of some milliseconds. */
	enum { N = 20000 };
	prolly_edit *e = calloc(N, sizeof(*e));
	char(*kv)[2][24] = calloc(N, sizeof(*kv));
	PT_REQUIRE(e && kv);
	for (int i = 0; i < N; i++) {
		snprintf(kv[i][0], sizeof(kv[i][0]), "k%06d", i);
		snprintf(kv[i][1], sizeof(kv[i][1]), "value %06d", i);
		e[i] = tm_put(kv[i][0], kv[i][1]);
	}
	prolly_id head;
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", e, N, "many") == 0);
	free(e);
	free(kv);
	PT_REQUIRE(sby_no_delay(&f));
	PT_REQUIRE((db = sby_db(&f, f.url)) != NULL);

	char lock_sql[256];
	snprintf(lock_sql, sizeof(lock_sql),
	         "BEGIN; LOCK TABLE \"%s\".nodes IN ACCESS EXCLUSIVE MODE; COMMIT", f.schema);
	locker l = {.sql = lock_sql};
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, lock_loop, &l) == 0);
	/* Reads of every node, the cache cleared each time, until the standby cancels one. */
	int reads = 0, cancelled = 0, others = 0;
	char first[700] = "";
	double t0 = pgt_now_s();
	while (!cancelled && pgt_now_s() - t0 < 20) {
		uint64_t n = 0;
		prolly_commit *c = NULL;
		prolly_db_cache_clear(db);
		int rc = prolly_branch_commit(&c, db, "main");
		if (rc == 0)
			rc = prolly_count(&n, db, &c->tree);
		prolly_commit_free(c);
		reads++;
		if (rc == 0) {
			PT_CHECK(n == N);
			continue;
		}
		/* A cancelled statement, or the whole session ended by the standby (then the connection
		 * is reported lost): both store errors, never a lost compare-and-swap. */
		PT_CHECKF(rc == PROLLY_ESTORE, "read %d: %d: %s", reads, rc, prolly_last_error());
		if (strstr(prolly_last_error(), "SQLSTATE 40001")) {
			cancelled = 1;
			snprintf(first, sizeof(first), "%s", prolly_last_error());
		} else {
			others++;
		}
	}
	atomic_store(&l.stop, 1);
	pthread_join(th, NULL);
	PT_CHECKF(cancelled, "no read cancelled in %d reads (%d other failures) against %d locks",
	          reads, others, l.n);
	PT_CHECKF(!cancelled || strstr(first, "replay"), "%s", first);
	printf("# after %d reads in %.1f s (%d locks on the primary): %s\n", reads, pgt_now_s() - t0,
	       l.n, first);
	/* Once the conflicts stop, the same handle reads again. */
	pgt_sleep_ms(300);
	uint64_t n = 0;
	prolly_commit *c = NULL;
	PT_CHECKF(prolly_branch_commit(&c, db, "main") == 0 && prolly_count(&n, db, &c->tree) == 0 &&
	              n == N,
	          "after: %s", prolly_last_error());
	prolly_commit_free(c);
	prolly_close(db);
	sby_close(&f);
}

/* While armed and until the read retries of st move: waits on server `watch` for a statement
 * of the store reading "schema".nodes (not this session's) and runs `act` on server `on` (%d in
 * it: that statement's pid), again and again. */
typedef struct interferer {
	const char *watch_url, *on_url, *schema, *act;
	prolly_store *st;
	int has; /* the read is has_nodes, not get_nodes */
	atomic_int armed, acts, stop;
} interferer;

static uint64_t read_retries(prolly_store *st)
{
	prolly_pg_counters c;
	return prolly_store_pg_counters(st, &c) == 0 ? c.read_retries : 0;
}

static void *interfere_loop(void *arg)
{
	interferer *f = arg;
	PGconn *w = PQconnectdb(f->watch_url), *o = PQconnectdb(f->on_url);
	char q[512], act[512];
	PQsetNoticeProcessor(o, pgt_quiet, NULL); /* a pid that is gone already: a WARNING */
	snprintf(q, sizeof(q),
	         "SELECT COALESCE(max(pid), 0) FROM pg_stat_activity WHERE state = 'active' AND "
	         "pid <> pg_backend_pid() AND query LIKE '%%unnest%%\"%s\".nodes%%'",
	         f->schema);
	uint64_t start = 0;
	int was_armed = 0;
	while (PQstatus(w) == CONNECTION_OK && PQstatus(o) == CONNECTION_OK && !atomic_load(&f->stop)) {
		int armed = atomic_load(&f->armed);
		if (armed && !was_armed)
			start = read_retries(f->st);
		was_armed = armed;
		long long pid = armed && read_retries(f->st) == start ? pgt_sql1(w, q) : 0;
		if (pid <= 0) {
			pgt_sleep_ms(1);
			continue;
		}
		snprintf(act, sizeof(act), f->act, (int)pid);
		pgt_sql_state(o, act, "");
		atomic_fetch_add(&f->acts, 1);
	}
	PQfinish(w);
	PQfinish(o);
	return NULL;
}

/* get_nodes (has_nodes when f->has) of n ids no node has (so that no row reaches the callback)
 * on f->st, while f acts on its own thread; the store's read retries during it into *retries. */
static int read_interfered(interferer *f, const char *act, const prolly_id *ids, size_t n,
                           uint64_t *retries)
{
	int calls = 0, rc;
	pthread_t th;
	uint64_t before = read_retries(f->st);
	unsigned char *out = f->has ? calloc(n, 1) : NULL;
	f->act = act;
	atomic_store(&f->armed, 1);
	if ((f->has && !out) || pthread_create(&th, NULL, interfere_loop, f) != 0) {
		free(out);
		return -100;
	}
	if (f->has) {
		rc = f->st->has_nodes(f->st, ids, n, out);
		for (size_t i = 0; i < n && rc == 0; i++)
			calls += out[i];
		free(out);
	} else {
		rc = f->st->get_nodes(f->st, ids, n, pgt_count_fn, &calls);
	}
	atomic_store(&f->armed, 0);
	atomic_store(&f->stop, 1);
	pthread_join(th, NULL);
	*retries = read_retries(f->st) - before;
	PT_CHECKF(atomic_load(&f->acts) > 0, "the read ended before '%s' ran", act);
	PT_CHECK(calls == 0);
	return rc;
}

/*
 * A hot standby cancels a read that holds back its replay of the primary's WAL (40001), or ends
 * its session (57P01, 57P04, a lost connection): the read failed with PROLLY_ESTORE, though
 * running it again on a fresh snapshot was safe, as no row had reached the engine yet. On a
 * standby such a read now runs again (at most READ_RETRIES times), reconnecting when its session
 * ended; on a primary a read whose session ends still fails. Each case stops one long get_nodes
 * (some 200,000 ids, one statement) once, while it runs: a LOCK TABLE on the primary (replayed on
 * the standby, with max_standby_streaming_delay = 0 it cancels the read), pg_terminate_backend.
 */
PT_TEST(standby_cancelled_read_runs_again)
{
	sby f;
	if (!sby_open(&f, 1 << 20, 0)) /* read_chunk: one statement for every id */
		return;
	const char *url = f.url, *schema = f.schema;
	prolly_store *st = f.st, *sst = NULL;
	enum { N = 200000 };
	prolly_id *ids = calloc(N, sizeof(*ids));
	PT_REQUIRE(ids);
	for (unsigned i = 0; i < N; i++)
		ids[i] = pgt_mkid(77, i);
	PT_REQUIRE(sby_no_delay(&f));
	PT_REQUIRE(prolly_store_pg_open(&sst, url, &f.o) == 0);

	char lock_sql[256], primary_url[1024];
	snprintf(lock_sql, sizeof(lock_sql),
	         "BEGIN; LOCK TABLE \"%s\".nodes IN ACCESS EXCLUSIVE MODE; COMMIT", schema);
	snprintf(primary_url, sizeof(primary_url), "%s", pgt_url);
	interferer fl = {.watch_url = url, .on_url = primary_url, .schema = schema, .st = sst};
	uint64_t retries = 0;
	double t0 = pgt_now_s();
	/* The standby cancels the statement: the read runs again, once. */
	int rc = read_interfered(&fl, lock_sql, ids, N, &retries);
	PT_CHECKF(rc == 0 && retries == 1, "cancelled: rc %d, %llu retries: %s", rc,
	          (unsigned long long)retries, prolly_last_error());
	printf("# cancelled read: rc %d after %llu retries in %.2f s (%d locks)\n", rc,
	       (unsigned long long)retries, pgt_now_s() - t0, atomic_load(&fl.acts));

	/* The same for has_nodes, which did not run again (it failed with PROLLY_ESTORE). */
	interferer fh = {
	    .watch_url = url, .on_url = primary_url, .schema = schema, .st = sst, .has = 1};
	rc = read_interfered(&fh, lock_sql, ids, N, &retries);
	PT_CHECKF(rc == 0 && retries == 1, "has_nodes cancelled: rc %d, %llu retries: %s", rc,
	          (unsigned long long)retries, prolly_last_error());

	/* The standby ends the session: the read reconnects and runs again. */
	interferer g = {.watch_url = url, .on_url = url, .schema = schema, .st = sst};
	t0 = pgt_now_s();
	rc = read_interfered(&g, "SELECT pg_terminate_backend(%d)", ids, N, &retries);
	PT_CHECKF(rc == 0 && retries == 1, "terminated: rc %d, %llu retries: %s", rc,
	          (unsigned long long)retries, prolly_last_error());
	printf("# terminated read: rc %d after %llu retries in %.2f s\n", rc,
	       (unsigned long long)retries, pgt_now_s() - t0);

	/* On the primary a read whose session ends is not run again. */
	interferer h = {.watch_url = primary_url, .on_url = primary_url, .schema = schema, .st = st};
	rc = read_interfered(&h, "SELECT pg_terminate_backend(%d)", ids, N, &retries);
	PT_CHECKF(rc == PROLLY_ESTORE && retries == 0, "primary: rc %d, %llu retries: %s", rc,
	          (unsigned long long)retries, prolly_last_error());

	/* A read nothing interrupts: one round trip, no retry. */
	int calls = 0;
	PT_CHECK(sst->get_nodes(sst, ids, 10, pgt_count_fn, &calls) == 0 && calls == 0);
	pgt_cost_begin(sst);
	PT_CHECK(sst->get_nodes(sst, ids, 10, pgt_count_fn, &calls) == 0 && calls == 0);
	PT_CHECK(pgt_cost_end(sst).trips == 1);

	free(ids);
	prolly_store_close(sst);
	sby_close(&f);
}

/* A read run on a thread of its own (blocked_read_terminated): fn(arg), its result and message. */
typedef struct blocked {
	int (*fn)(void *arg);
	void *arg;
	int rc;
	char err[700];
} blocked;

static void *blocked_thread(void *arg)
{
	blocked *b = arg;
	b->rc = b->fn(b->arg);
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	return NULL;
}

/*
 * Runs b->fn on a thread while a transaction of the primary holds "schema".table ACCESS
 * EXCLUSIVE, which the standby's replay then holds too: the read waits for it on the standby
 * (server s), is terminated there once (pg_terminate_backend: the standby ends its session, as
 * in a recovery conflict), runs again and waits again, and gets its answer once the primary
 * commits, 100 ms later. 1 when all that happened (b->rc then the read's result), 0 (with a
 * failed check) when the read never waited on the standby.
 */
static int blocked_read_terminated(PGconn *s, const char *schema, const char *table, blocked *b)
{
	PGconn *a = pgt_admin(), *locker = pgt_admin();
	char q[512];
	int held = 0, started = 0;
	long long pid = 0;
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".%s IN ACCESS EXCLUSIVE MODE", schema, table);
	if (!a || !locker || !pgt_sql_state(locker, q, ""))
		goto cleanup;
	/* Once a commit flushed its WAL, the standby's replay holds the lock too (a read of the table
	 * there times out waiting for it). */
	PT_CHECK(pgt_sql_state(a, "SELECT pg_current_xact_id()", ""));
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".%s", schema, table);
	pgt_sql_state(s, "SET lock_timeout = 50", "");
	for (int i = 0; i < 100 && !held; i++) {
		PGresult *r = PQexec(s, q);
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		held = state && strcmp(state, "55P03") == 0;
		PQclear(r);
		if (!held)
			pgt_sleep_ms(20);
	}
	pgt_sql_state(s, "RESET lock_timeout", "");
	PT_CHECKF(held, "the standby never held the lock on %s", table);

	pthread_t th;
	started = held && pthread_create(&th, NULL, blocked_thread, b) == 0;
	snprintf(q, sizeof(q),
	         "SELECT COALESCE(max(pid), 0) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
	         "AND pid <> pg_backend_pid() AND query LIKE '%%\"%s\".%s%%'",
	         schema, table);
	for (double t0 = pgt_now_s(); started && pid <= 0 && pgt_now_s() - t0 < 10;)
		if ((pid = pgt_sql1(s, q)) <= 0)
			pgt_sleep_ms(2);
	PT_CHECKF(!started || pid > 0, "the read never waited for %s", table);
	if (pid > 0) {
		snprintf(q, sizeof(q), "SELECT pg_terminate_backend(%lld)", pid);
		pgt_sql1(s, q);
		pgt_sleep_ms(100); /* the read runs again, and waits for the lock again */
	}
	pgt_sql_state(locker, "COMMIT", "");
	if (started)
		pthread_join(th, NULL);
cleanup:
	PQfinish(locker);
	PQfinish(a);
	return started && pid > 0;
}

typedef struct opener {
	const char *url;
	const char *schema;
	prolly_store *st;
} opener;

static int open_read(void *arg)
{
	opener *o = arg;
	prolly_pg_options opts = PROLLY_PG_OPTIONS_INIT;
	opts.schema = o->schema;
	return prolly_store_pg_open(&o->st, o->url, &opts);
}

/*
 * The open's first round trip (the schema version, the session's settings, the statements'
 * preparation) only reads, yet when a hot standby ended its session (here pg_terminate_backend
 * while the open waits for meta, which a transaction of the primary holds ACCESS EXCLUSIVE and
 * the standby's replay so holds too) the open failed with PROLLY_ESTORE, as a read did. It now
 * runs again on a new connection, like the reads.
 */
PT_TEST(standby_cancelled_open_runs_again)
{
	sby f;
	if (!sby_open(&f, 0, 0))
		return;
	opener op = {.url = f.url, .schema = f.schema};
	blocked b = {.fn = open_read, .arg = &op};
	if (blocked_read_terminated(f.s, f.schema, "meta", &b)) {
		prolly_pg_counters c = {0};
		if (op.st)
			prolly_store_pg_counters(op.st, &c);
		PT_CHECKF(b.rc == 0 && c.read_retries == 1, "rc %d, %llu retries: %s", b.rc,
		          (unsigned long long)c.read_retries, b.err);
	}
	if (op.st)
		prolly_store_close(op.st);
	sby_close(&f);
}

/* The store's other reads, each on the standby's store st over the nodes of a commit. */
typedef struct reader {
	prolly_store *st;
	const prolly_id *ids;
	size_t n;
	uint64_t got; /* what the read found: nodes present, counted, or listed */
} reader;

static int read_has_nodes(void *arg)
{
	reader *r = arg;
	unsigned char out[64];
	int rc = r->st->has_nodes(r->st, r->ids, r->n, out);
	r->got = 0;
	for (size_t i = 0; i < r->n && rc == 0; i++)
		r->got += out[i];
	return rc;
}

static int read_stat(void *arg)
{
	reader *r = arg;
	return r->st->stat(r->st, &r->got, NULL);
}

static int count_obj(void *payload, const prolly_id *id, const void *data, size_t size)
{
	(void)id;
	(void)data;
	(void)size;
	++*(uint64_t *)payload;
	return 0;
}

static int read_find_ids(void *arg)
{
	reader *r = arg;
	prolly_id lo, hi;
	memset(lo.bytes, 0, sizeof(lo.bytes));
	memset(hi.bytes, 0xff, sizeof(hi.bytes));
	r->got = 0;
	return r->st->find_ids(r->st, &lo, &hi, 1000, count_obj, &r->got);
}

/*
 * Every read of the store runs again when a hot standby cancels it or ends its session before
 * a row reached the engine: has_nodes, stat and find_ids did not (only get_nodes,
 * get_ancestors and the ref reads did), and failed with PROLLY_ESTORE where the others
 * succeeded after one rerun. Each here waits on the standby for the nodes table, which a
 * transaction of the primary holds, and is terminated there once.
 */
PT_TEST(standby_every_read_runs_again)
{
	sby f;
	if (!sby_open(&f, 0, 0))
		return;
	prolly_store *sst = NULL;
	enum { N = 5 };
	pgt_tn t[N];
	prolly_store_node sn[N];
	prolly_id ids[N + 1];
	for (unsigned i = 0; i < N; i++) {
		pgt_tn_make(&t[i], 31, i);
		sn[i] = t[i].sn;
		ids[i] = t[i].sn.id;
	}
	ids[N] = pgt_mkid(31, 999); /* absent */
	PT_REQUIRE(pgt_write1(f.st, sn, N, NULL) == 0);
	PT_REQUIRE(standby_caught_up(f.a, f.url));
	PT_REQUIRE(prolly_store_pg_open(&sst, f.url, &f.o) == 0);

	static const struct {
		const char *name;
		int (*fn)(void *arg);
	} reads[] = {{"has_nodes", read_has_nodes}, {"stat", read_stat}, {"find_ids", read_find_ids}};
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		reader r = {sst, ids, N + 1, 0};
		blocked b = {.fn = reads[i].fn, .arg = &r};
		/* Once unhindered: the connection it then takes has its statements prepared (a
		 * preparation would wait for the lock too). */
		PT_CHECK(reads[i].fn(&r) == 0 && r.got == N);
		uint64_t before = read_retries(sst);
		if (!blocked_read_terminated(f.s, f.schema, "nodes", &b))
			continue;
		uint64_t retries = read_retries(sst) - before;
		PT_CHECKF(b.rc == 0 && retries == 1 && r.got == N,
		          "%s: rc %d, %llu retries, %llu found: %s", reads[i].name, b.rc,
		          (unsigned long long)retries, (unsigned long long)r.got, b.err);
	}
	prolly_store_close(sst);
	sby_close(&f);
}

/*
 * A standby promoted (pg_promote(), as pg_ctl promote) while a handle opened on it is open: the
 * handle's next write works, on the connections it opened while the server was a standby and on
 * new ones. Its schema, of an older version (4) that the open on the standby could not migrate,
 * stays so until an open that may create migrates it. Last in the file: the standby of this
 * program is a primary afterwards, so no standby case may run after it.
 */
PT_TEST(standby_promoted_takes_writes)
{
	sby f;
	if (!sby_open(&f, 0, 2))
		return;
	const char *url = f.url, *schema = f.schema;
	PGconn *s = f.s;
	prolly_store *st = NULL;
	prolly_db *db = f.db;
	prolly_edit e[1] = {tm_put("a", "1")};
	prolly_id head, got;
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", e, 1, "one") == 0);
	PT_REQUIRE(version4_on_standby(f.a, url, schema));

	PT_REQUIRE((db = sby_db(&f, url)) != NULL);
	char v[32];
	head_and_get(db, "main", "a", v, sizeof(v));
	PT_CHECK(strcmp(v, "1") == 0);
	e[0] = tm_put("b", "2");
	PT_CHECK_RC(prolly_commit_edits(&got, db, "main", e, 1, "refused"), PROLLY_ESTORE);
	PT_CHECK(strstr(prolly_last_error(), "hot standby") != NULL);

	PT_REQUIRE(pgt_sql1(s, "SELECT pg_promote(true, 60)::int") == 1);
	PT_CHECK(pgt_sql1(s, "SELECT pg_is_in_recovery()::int") == 0);
	/* The server tells the sessions it had that it is no standby any more. */
	PT_CHECK(strcmp(PQparameterStatus(s, "in_hot_standby"), "off") == 0);
	/* The same handle, on the connection it opened while the server was a standby. */
	PT_CHECKF(prolly_commit_edits(&got, db, "main", e, 1, "after promotion") == 0, "commit: %s",
	          prolly_last_error());
	head_and_get(db, "main", "b", v, sizeof(v));
	PT_CHECK(strcmp(v, "2") == 0);
	/* The gc takes a second connection, made after the promotion. */
	prolly_gc_result gr;
	prolly_gc_result_init(&gr, PROLLY_GC_RESULT_VERSION);
	PT_CHECKF(prolly_gc(db, &gr) == 0, "gc: %s", prolly_last_error());
	prolly_close(db);
	PT_CHECK(pgt_schema_version(s, schema) == 4);
	/* An open that may create migrates it there now. */
	PT_REQUIRE(prolly_store_pg_open(&st, url, &f.o) == 0);
	prolly_store_close(st);
	PT_CHECK(pgt_schema_version(s, schema) == 6);
	sby_close(&f);
}

PGT_MAIN(NULL, NULL)
