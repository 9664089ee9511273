/*
 * test_pg_conn.c - the PostgreSQL store's connections against a real server: writers on other
 * refs not blocked, a losing write that inserts no node, pool timeouts and wait counters, a
 * backend killed mid-write, a server restart, a crash that loses a non-durable write under a commit,
 * the reason of a failed connection, the server's notices at connection start kept off stderr,
 * and connect_timeout per host (the hot standby's cases: test_pg_standby.c). The server and what
 * the programs share: tests/lib/pgt.h.
 */
#include "lib/model.h"
#include "lib/pgt.h"
#include "ptest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- concurrency ------------------------------------------------------------------------------ */

typedef struct bg {
	prolly_store *st;
	const char *ref;
	prolly_id expected, value;
	prolly_ref_expect expect;
	unsigned node; /* the written node is pgt_tn_make(9, node); value its id */
	int rc;
	char err[512];
	_Atomic int done;
	double secs;
} bg;

static void bg_node(bg *b, unsigned node)
{
	b->node = node;
	b->value = pgt_tn_id(9, node);
}

static void *bg_write(void *arg)
{
	bg *b = arg;
	double t0 = pgt_now_s();
	pgt_tn t;
	pgt_tn_make(&t, 9, b->node); /* b->value is its id (bg_node) */
	prolly_ref_update u = pgt_upd(b->ref, b->expect, &b->expected, &b->value);
	b->rc = pgt_write1(b->st, &t.sn, 1, &u);
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	b->secs = pgt_now_s() - t0;
	b->done = 1;
	return NULL;
}

/* A background writer of st: writes node pgt_tn_make(9, node) and moves ref to its id, from
 * *expected (PROLLY_REF_EXPECT_VALUE) or from anything (expected NULL). */
static void bg_init(bg *b, prolly_store *st, const char *ref, const prolly_id *expected,
                    unsigned node)
{
	memset(b, 0, sizeof(*b));
	b->st = st;
	b->ref = ref;
	b->expect = expected ? PROLLY_REF_EXPECT_VALUE : PROLLY_REF_EXPECT_ANY;
	if (expected)
		b->expected = *expected;
	bg_node(b, node);
}

/* Opens a transaction on a that holds the row lock of ref in schema's refs table (COMMIT on a
 * releases it). */
static void lock_ref_row(PGconn *a, const char *schema, const char *ref)
{
	char q[384];
	snprintf(q, sizeof(q), "BEGIN; UPDATE \"%s\".refs SET value = value WHERE name = '%s'::bytea",
	         schema, ref);
	pgt_sql1(a, q);
}

/* A transaction holding ref a's row lock (as a slow writer would) blocks writers of a, never
 * those of b. */
PT_TEST(other_ref_is_not_blocked)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id va = pgt_mkid(4, 1), vb = pgt_mkid(4, 2);
	prolly_ref_update ua = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &va);
	prolly_ref_update ub = pgt_upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &vb);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &ua), 0);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &ub), 0);
	lock_ref_row(a, schema, "refs/heads/a");
	bg ba, bb;
	bg_init(&ba, st, "refs/heads/a", &va, 3);
	bg_init(&bb, st, "refs/heads/b", &vb, 4);
	pthread_t ta, tb;
	PT_REQUIRE(pthread_create(&ta, NULL, bg_write, &ba) == 0);
	pgt_sleep_ms(100);
	PT_REQUIRE(pthread_create(&tb, NULL, bg_write, &bb) == 0);
	pthread_join(tb, NULL);
	PT_CHECKF(bb.rc == 0, "%s", bb.err);
	PT_CHECKF(bb.secs < 1.0, "the writer of b took %.3f s", bb.secs);
	pgt_sleep_ms(200);
	PT_CHECK(!ba.done); /* a waits for the lock */
	pgt_sql1(a, "COMMIT");
	pthread_join(ta, NULL);
	PT_CHECKF(ba.rc == 0, "%s", ba.err);
	printf(
	    "# writer of b done in %.1f ms while a was locked; a finished after the lock (%.0f ms)\n",
	    bb.secs * 1000, ba.secs * 1000);
	prolly_store_close(st);
	PQfinish(a);
}

/* A write that loses its compare-and-swap must not insert its nodes first (schema version 3):
 * with another transaction holding a SHARE lock on the nodes table, which every INSERT waits
 * for, losing writes still come back at once with PROLLY_ECONFLICT -- through prolly_write with
 * one ref and with two, and through the pipeline (more nodes than batch_items) -- while a
 * winning write waits for the lock. Nothing of the losers is in the table afterwards. */
typedef struct bgl {
	prolly_store *st;
	prolly_store_node *nodes;
	size_t n_nodes, n_refs;
	prolly_ref_update refs[2];
	int rc;
	_Atomic int done;
} bgl;

static void *bg_losing_write(void *arg)
{
	bgl *b = arg;
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = b->nodes;
	w.n_nodes = b->n_nodes;
	w.refs = b->refs;
	w.n_refs = b->n_refs;
	w.durable = 1;
	b->rc = b->st->write(b->st, &w);
	b->done = 1;
	return NULL;
}

/* Waits up to 20 s for *done; 1 if it came. */
static int wait_done(_Atomic int *done)
{
	for (int i = 0; i < 2000 && !*done; i++)
		pgt_sleep_ms(10);
	return *done != 0;
}

PT_TEST(losing_write_inserts_no_node)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 2, 0, 4, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v1 = pgt_mkid(31, 1), v2 = pgt_mkid(31, 2), wrong = pgt_mkid(31, 99);
	prolly_ref_update ua = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &v1);
	prolly_ref_update ub = pgt_upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &v2);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &ua), 0);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &ub), 0);
	pgt_tn t[5];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 5; i++) {
		pgt_tn_make(&t[i], 31, 10 + i);
		sn[i] = t[i].sn;
	}
	char q[256];
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".nodes IN SHARE MODE", schema);
	pgt_sql1(a, q);

	/* 1 ref, 1 node (prolly_write); 2 refs, one failing, 2 nodes (prolly_write); 1 ref, 5 nodes
	 * in three chunks (the pipeline). */
	bgl lose[3];
	memset(lose, 0, sizeof(lose));
	for (int k = 0; k < 3; k++) {
		lose[k].st = st;
		lose[k].refs[0] = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &wrong, &v2);
		lose[k].n_refs = 1;
	}
	lose[0].nodes = &sn[0];
	lose[0].n_nodes = 1;
	lose[1].refs[1] = pgt_upd("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v2, &v1);
	lose[1].n_refs = 2;
	lose[1].nodes = &sn[1];
	lose[1].n_nodes = 2;
	lose[2].nodes = sn;
	lose[2].n_nodes = 5;
	for (int k = 0; k < 3; k++) {
		pthread_t th;
		PT_REQUIRE(pthread_create(&th, NULL, bg_losing_write, &lose[k]) == 0);
		int came = wait_done(&lose[k].done);
		PT_CHECKF(came, "losing write %d waited for the table lock", k);
		if (!came) {
			pgt_sql1(a, "COMMIT");
			pthread_join(th, NULL);
			prolly_store_close(st);
			PQfinish(a);
			return;
		}
		pthread_join(th, NULL);
		PT_CHECK_RC(lose[k].rc, PROLLY_ECONFLICT);
		PT_CHECK(lose[k].refs[0].conflict && lose[k].refs[0].current_exists &&
		         prolly_id_equal(&lose[k].refs[0].current, &v1));
	}
	PT_CHECK(!lose[1].refs[1].conflict);

	/* A winner does insert, so it waits for the lock. */
	bgl win;
	memset(&win, 0, sizeof(win));
	win.st = st;
	win.refs[0] = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &v1, &t[4].sn.id);
	win.n_refs = 1;
	win.nodes = &sn[4];
	win.n_nodes = 1;
	pthread_t tw;
	PT_REQUIRE(pthread_create(&tw, NULL, bg_losing_write, &win) == 0);
	pgt_sleep_ms(300);
	PT_CHECK(!win.done);
	pgt_sql1(a, "COMMIT");
	pthread_join(tw, NULL);
	PT_CHECK_RC(win.rc, 0);

	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	PT_CHECK(pgt_sql1(a, q) == 1);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/b", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v2));
	prolly_store_close(st);
	PQfinish(a);
}

/* Pool of 2, both connections stuck behind a lock: the third caller times out after ~300 ms,
 * and its wait is counted. */
PT_TEST(pool_timeout_and_wait_counters)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 2, 300);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v = pgt_mkid(5, 1);
	prolly_ref_update u = pgt_upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/p");
	bg b[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		bg_init(&b[i], st, "refs/heads/p", NULL, 10 + (unsigned)i);
		PT_REQUIRE(pthread_create(&th[i], NULL, bg_write, &b[i]) == 0);
	}
	pgt_sleep_ms(200);
	prolly_pg_stats s = PROLLY_PG_STATS_INIT;
	prolly_thread_stats_reset();
	double t0 = pgt_now_s();
	prolly_id got;
	int rc = st->get_ref(st, "refs/heads/p", &got, NULL);
	double waited = pgt_now_s() - t0;
	PT_CHECK_RC(prolly_store_pg_thread_stats(&s), 0);
	PT_CHECK(rc == PROLLY_ETIMEOUT);
	PT_CHECKF(waited >= 0.25 && waited < 2.0, "waited %.3f s", waited);
	PT_CHECK(s.pool_waits == 1 && s.pool_wait_ns >= 250000000ULL);
	prolly_pg_stats cum = PROLLY_PG_STATS_INIT; /* the store's own count has the same wait */
	PT_CHECK_RC(prolly_store_pg_stats(&cum, st), 0);
	PT_CHECK(cum.pool_waits >= 1 && cum.pool_wait_ns >= s.pool_wait_ns);
	printf("# pool timeout after %.0f ms: %s\n", waited * 1000, prolly_last_error());
	pgt_sql1(a, "COMMIT");
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(b[i].rc == 0, "%s", b[i].err);
	}
	PT_CHECK_RC(st->get_ref(st, "refs/heads/p", &got, NULL), 0);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- broken connections ----------------------------------------------------------------------- */

PT_TEST(backend_killed_mid_write)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v = pgt_mkid(6, 1);
	prolly_ref_update u = pgt_upd("refs/heads/k", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/k");
	bg b;
	bg_init(&b, st, "refs/heads/k", &v, 62);
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_write, &b) == 0);
	long long pid = pgt_blocked_pid(a);
	PT_CHECK(pid > 0);
	char k[128];
	snprintf(k, sizeof(k), "SELECT pg_terminate_backend(%lld)", pid);
	pgt_sql1(a, k);
	pthread_join(th, NULL);
	pgt_sql1(a, "COMMIT");
	PT_CHECK(b.rc == PROLLY_ESTORE);
	printf("# in flight: %s\n", b.err);
	/* Nothing of it is visible; the next operation reconnects and succeeds. */
	PT_CHECK(pgt_present(st, &b.value, 1) == 0);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/k", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v));
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	prolly_pg_counters c;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
	PT_CHECK(c.broken >= 1);
	prolly_store_close(st);
	PQfinish(a);
}

PT_TEST(server_restart)
{
	const char *dir = getenv("PROLLY_PG_DIR"), *bin = getenv("PROLLY_PG_BIN");
	if (!dir || !bin) {
		/* Not this program's cluster (other programs use it too): terminate this store's own
		 * backends instead, known by an application name of their own. */
		char url[1024], name[64], q[256];
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		prolly_store *st = NULL;
		snprintf(name, sizeof(name), "prolly_restart_%ld", (long)getpid());
		snprintf(url, sizeof(url),
		         strncmp(pgt_url, "postgres", 8) != 0 ? "%s application_name=%s"
		         : strchr(pgt_url, '?')               ? "%s&application_name=%s"
		                                              : "%s?application_name=%s",
		         pgt_url, name);
		o.schema = pgt_new_schema();
		o.pool_size = 4;
		PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0);
		PGconn *a = pgt_admin();
		PT_REQUIRE(a);
		prolly_id v = pgt_mkid(7, 1), got;
		prolly_ref_update u = pgt_upd("refs/heads/r", PROLLY_REF_EXPECT_ANY, NULL, &v);
		PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
		snprintf(q, sizeof(q),
		         "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
		         "current_database() AND application_name = '%s'",
		         name);
		PT_CHECK(pgt_sql1(a, q) >= 1);
		pgt_sleep_ms(100);
		PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
		prolly_store_close(st);
		PQfinish(a);
		pgt_skip("a server this program did not start (PROLLY_PG_URL given): this store's "
		         "backends terminated instead of a server restart");
		return;
	}
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 4, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v = pgt_mkid(7, 1), got;
	prolly_ref_update u = pgt_upd("refs/heads/r", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/r");
	bg b;
	bg_init(&b, st, "refs/heads/r", &v, 72);
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_write, &b) == 0);
	PT_CHECK(pgt_blocked_pid(a) > 0);
	/* While the writer holds one connection, this read opens a second one, idle at the restart. */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
	prolly_pg_counters before;
	PT_CHECK_RC(prolly_store_pg_counters(st, &before), 0);
	double t0 = pgt_now_s();
	int sys = pgt_pg_ctl("-m fast restart");
	double restart_s = pgt_now_s() - t0;
	PT_CHECKF(sys == 0, "pg_ctl restart: %d", sys);
	pthread_join(th, NULL);
	/* The fast shutdown ends the blocker first: the write in flight either fails as a store
	 * error, or (one statement, its own transaction) gets its lock and commits before its own
	 * backend is told to stop, and then it reports success. */
	PT_CHECKF(b.rc == PROLLY_ESTORE || b.rc == 0, "%d: %s", b.rc, b.err);
	printf("# in flight during restart: %s\n", b.rc ? b.err : "committed before the shutdown");
	PQfinish(a);
	a = pgt_admin();
	PT_REQUIRE(a);
	/* The next operation succeeds: dead idle connections are noticed before use. */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
	/* A write cut off while committing may have been applied (the server can release the
	 * blocker's lock and commit the writer before the shutdown reaches it), but only wholly:
	 * the ref moved and its node stored, or neither. */
	PT_CHECK(b.rc != 0 || prolly_id_equal(&got, &b.value)); /* a success is applied */
	if (prolly_id_equal(&got, &b.value)) {
		PT_CHECK(pgt_present(st, &b.value, 1) == 1);
		printf("# the cut-off write had committed before the shutdown reached it\n");
	} else {
		PT_CHECK(prolly_id_equal(&got, &v));
		PT_CHECK(pgt_present(st, &b.value, 1) == 0);
	}
	for (int i = 0; i < 6; i++)
		PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	prolly_pg_counters c;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
	PT_CHECKF(before.connects >= 2 && c.broken >= (b.rc ? 2u : 1u),
	          "%llu connects before, %llu broken", (unsigned long long)before.connects,
	          (unsigned long long)c.broken);
	printf("# restart took %.2f s; %llu connections dropped as broken (the idle one, found dead "
	       "before use, and the one in flight if it failed), %llu connects in all\n",
	       restart_s, (unsigned long long)c.broken, (unsigned long long)c.connects);
	prolly_store_close(st);
	PQfinish(a);
}

/* A non-durable write (a bulk build's flush, the halves of a large commit) is lost when the server
 * crashes before its WAL reaches the disk, though it returned success. The commit that builds on it
 * comes later, on a connection to the restarted server, with the gc epoch unchanged: before, the
 * store skipped the check of its requires (only a gc was thought to remove nodes), moved the
 * branch, and the branch named a tree whose leaves were gone. Once the store has seen the server
 * restart, it checks them: the write fails with PROLLY_ECONFLICT and nothing moves. */
/* A durable, epoch-checked write of node top moving ref u, requiring node below. */
static int write_on(prolly_store *st, pgt_tn *top, prolly_ref_update *u, uint64_t epoch,
                    pgt_tn *below)
{
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &top->sn;
	w.n_nodes = 1;
	w.refs = u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = epoch;
	w.durable = 1;
	w.requires = &below->sn.id;
	w.n_requires = 1;
	return st->write(st, &w);
}

PT_TEST(crash_lost_nodes_fail_the_write)
{
	const char *dir = getenv("PROLLY_PG_DIR"), *bin = getenv("PROLLY_PG_BIN");
	if (!dir || !bin) {
		pgt_skip("a server this program did not start (PROLLY_PG_URL given): no crash");
		return;
	}
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 4, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v = pgt_mkid(8, 1), got;
	prolly_ref_update u = pgt_upd("refs/heads/c", PROLLY_REF_EXPECT_ANY, NULL, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	uint64_t epoch = w.current_epoch;
	/* The WAL writer sleeps 10 s: an asynchronous commit stays in the server's memory. */
	pgt_sql1(a, "ALTER SYSTEM SET wal_writer_delay = '10s'");
	pgt_sql1(a, "SELECT pg_reload_conf()");
	pgt_sleep_ms(300);
	pgt_tn leaf, top;
	pgt_tn_make(&leaf, 81, 1);
	pgt_tn_make(&top, 81, 2);
	memset(&w, 0, sizeof(w));
	w.nodes = &leaf.sn;
	w.n_nodes = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PQfinish(a);
	int sys = pgt_pg_ctl("-m immediate restart");
	PT_CHECKF(sys == 0, "pg_ctl restart: %d", sys);
	a = pgt_admin();
	PT_REQUIRE(a);
	pgt_sql1(a, "ALTER SYSTEM RESET wal_writer_delay");
	pgt_sql1(a, "SELECT pg_reload_conf()");
	PT_CHECKF(pgt_present(st, &leaf.sn.id, 1) == 0, "the node written without waiting for the "
	                                                "WAL survived the crash: nothing to test");
	/* The commit on top of it: epoch unchanged, the lost leaf among its requires. */
	u = pgt_upd("refs/heads/c", PROLLY_REF_EXPECT_VALUE, &v, &top.sn.id);
	PT_CHECK_RC(write_on(st, &top, &u, epoch, &leaf), PROLLY_ECONFLICT);
	printf("# %s\n", prolly_last_error());
	PT_CHECK_RC(st->get_ref(st, "refs/heads/c", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v));
	PT_CHECK(pgt_present(st, &top.sn.id, 1) == 0);
	/* With the leaf written again the commit goes through. */
	memset(&w, 0, sizeof(w));
	w.nodes = &leaf.sn;
	w.n_nodes = 1;
	w.durable = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PT_CHECK_RC(write_on(st, &top, &u, epoch, &leaf), 0);
	prolly_store_close(st);
	PQfinish(a);
}

/* The same through the engine: a builder's flushes (non-durable) land, the server crashes before
 * the commit, and the commit that moves the branch to the built tree fails with PROLLY_ECONFLICT
 * saying the nodes are gone (not that a gc ran: none did) instead of publishing a tree the
 * server lost part of; the same build committed again lands whole. */
static int build_and_publish(prolly_db *db, const prolly_id *head, int crash, prolly_id *tree)
{
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id c, winner;
	char k[32], v[64];
	int rc = prolly_txn_begin(&txn, db);
	if (rc == 0)
		rc = prolly_builder_new(&b, txn);
	for (int i = 0; i < 20000 && rc == 0; i++) {
		int kl = snprintf(k, sizeof(k), "key%08d", i);
		int vl = snprintf(v, sizeof(v), "value %d of a tree that the crash cuts", i);
		rc = prolly_builder_add(b, k, (size_t)kl, v, (size_t)vl);
	}
	if (rc == 0)
		rc = prolly_builder_finish(b, tree);
	prolly_builder_free(b);
	if (rc == 0)
		rc = prolly_commit_create(&c, txn, tree, head, 1, 0, "crash");
	if (rc == 0 && crash && (rc = prolly__txn_flush_wait(txn)) == 0) { /* every flush landed */
		int sys = pgt_pg_ctl("-m immediate restart");
		PT_CHECKF(sys == 0, "pg_ctl restart: %d", sys);
	}
	if (rc == 0)
		rc = prolly__branch_publish(db, txn, "main", "refs/heads/main", head, &c, &winner);
	prolly_txn_free(txn);
	return rc;
}

PT_TEST(crash_lost_flush_fails_the_commit)
{
	const char *dir = getenv("PROLLY_PG_DIR"), *bin = getenv("PROLLY_PG_BIN");
	if (!dir || !bin) {
		pgt_skip("a server this program did not start (PROLLY_PG_URL given): no crash");
		return;
	}
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.flush_bytes = 64 << 10; /* a flush every few leaves */
	prolly_db *db = NULL;
	PGconn *a = pgt_admin();
	PT_REQUIRE(a && prolly_db_new(&db, pgt_open(pgt_new_schema(), 0, 0, 4, 0), &o) == 0);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	prolly_id head, got, tree;
	PT_CHECK_RC(prolly_commit_edits(&head, db, "main", &e, 1, "first"), 0);
	pgt_sql1(a, "ALTER SYSTEM SET wal_writer_delay = '10s'");
	pgt_sql1(a, "SELECT pg_reload_conf()");
	PQfinish(a);
	pgt_sleep_ms(300);
	int rc = build_and_publish(db, &head, 1, &tree);
	PT_CHECK_RC(rc, PROLLY_ECONFLICT);
	printf("# %s\n", prolly_last_error());
	PT_CHECKF(strstr(prolly_last_error(), "are gone") && !strstr(prolly_last_error(), "gc ran"),
	          "%s", prolly_last_error());
	a = pgt_admin();
	PT_REQUIRE(a);
	pgt_sql1(a, "ALTER SYSTEM RESET wal_writer_delay");
	pgt_sql1(a, "SELECT pg_reload_conf()");
	PT_CHECK_RC(prolly_branch_head(&got, db, "main"), 0);
	PT_CHECK(prolly_id_equal(&got, &head));
	/* Again: the flushes write the lost leaves anew, and the whole tree reads back. */
	PT_CHECK_RC(build_and_publish(db, &head, 0, &tree), 0);
	prolly_db_cache_clear(db);
	prolly_cursor *cur = NULL;
	prolly_slice key, val;
	size_t n = 0;
	PT_REQUIRE(prolly_cursor_open(&cur, db, &tree, NULL) == 0);
	while ((rc = prolly_cursor_next(cur, &key, &val)) == 0)
		n++;
	PT_CHECKF(rc == PROLLY_ITEROVER && n == 20000, "rc %d after %zu records: %s", rc, n,
	          prolly_last_error());
	prolly_cursor_free(cur);
	prolly_close(db);
	PQfinish(a);
}

/* The test server's connection string with one more keyword, kv in key=value form and kv_url as a
 * URL's query parameter (pgt_url may be either). */
static void url_plus(char *out, size_t size, const char *kv, const char *kv_url)
{
	if (strncmp(pgt_url, "postgres", 8) != 0)
		snprintf(out, size, "%s %s", pgt_url, kv);
	else
		snprintf(out, size, "%s%c%s", pgt_url, strchr(pgt_url, '?') ? '&' : '?', kv_url);
}

/* The store sets no timeout of its own on a statement: the server's settings apply, given in the
 * connection string like any libpq keyword (docs/postgres.md, "Timeouts"). A write blocked on a
 * ref's row lock with lock_timeout = 200 ms fails after it with PROLLY_ETIMEOUT naming the timeout,
 * writes nothing (its nodes and ref are one transaction), and the store works on. */
PT_TEST(lock_timeout_from_the_connection_string)
{
	const char *schema = pgt_new_schema();
	char url[1024];
	url_plus(url, sizeof(url), "options='-c lock_timeout=200'", "options=-c%20lock_timeout%3D200");
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL;
	PGconn *a = pgt_admin();
	PT_REQUIRE(a && prolly_store_pg_open(&st, url, &o) == 0);
	prolly_id v1 = pgt_mkid(41, 1), got;
	prolly_ref_update u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_ANY, NULL, &v1);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	long long nodes = pgt_node_count(a, schema);
	lock_ref_row(a, schema, "refs/heads/t");
	pgt_tn t;
	pgt_tn_make(&t, 41, 2);
	u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_VALUE, &v1, &t.sn.id);
	double t0 = pgt_now_s();
	int rc = pgt_write1(st, &t.sn, 1, &u);
	double waited = pgt_now_s() - t0;
	PT_CHECK_RC(rc, PROLLY_ETIMEOUT);
	PT_CHECKF(strstr(prolly_last_error(), "lock timeout"), "%s", prolly_last_error());
	PT_CHECKF(waited >= 0.15 && waited < 5.0, "failed after %.3f s", waited);
	pgt_sql1(a, "COMMIT");
	PT_CHECK(pgt_node_count(a, schema) == nodes);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/t", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v1));
	PT_CHECK_RC(pgt_write1(st, &t.sn, 1, &u), 0);
	printf("# blocked write gave up after %.0f ms: %s\n", waited * 1000, prolly_last_error());
	prolly_store_close(st);
	PQfinish(a);
}

/* gc callbacks that keep every node. */
static int keep_all(void *payload, const prolly_id *id)
{
	(void)payload;
	(void)id;
	return 1;
}

/* Takes the advisory lock (key1, the schema's hash) on a, as a session lock: advisory locks need
 * no privilege, so any role that can connect may do this. 1 when held. */
static int hold_lock(PGconn *a, long key1, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q), "SELECT pg_advisory_lock(%ld, hashtext('\"%s\".meta'))", key1, schema);
	return pgt_sql_state(a, q, "");
}

/* One write of two nodes, timed, expected to give up with PROLLY_ETIMEOUT naming the holder (its pid and
 * application_name) within [lo, hi) seconds; nothing written, the ref where it was. */
static void write_gives_up(prolly_store *st, PGconn *a, const char *schema, double lo, double hi)
{
	prolly_id v1 = pgt_mkid(43, 1), got;
	pgt_tn t[2];
	prolly_store_node sn[2];
	char pid[32];
	for (unsigned i = 0; i < 2; i++) {
		pgt_tn_make(&t[i], 43, 2 + i);
		sn[i] = t[i].sn;
	}
	prolly_ref_update u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_VALUE, &v1, &t[0].sn.id);
	long long nodes = pgt_node_count(a, schema);
	snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(a));
	double t0 = pgt_now_s();
	int rc = pgt_write1(st, sn, 2, &u);
	double waited = pgt_now_s() - t0;
	PT_CHECK_RC(rc, PROLLY_ETIMEOUT);
	PT_CHECKF(strstr(prolly_last_error(), pid) && strstr(prolly_last_error(), "lock holder") &&
	              strstr(prolly_last_error(), "write lock"),
	          "%s", prolly_last_error());
	PT_CHECKF(waited >= lo && waited < hi, "gave up after %.3f s", waited);
	PT_CHECK(pgt_node_count(a, schema) == nodes);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/t", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v1));
	printf("# write gave up after %.0f ms: %s\n", waited * 1000, prolly_last_error());
}

/* The same for a gc, held back by the lock key1. */
static void gc_gives_up(prolly_store *st, PGconn *a, const char *what, double lo, double hi)
{
	char pid[32];
	prolly_gc_result res;
	memset(&res, 0, sizeof(res));
	snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(a));
	double t0 = pgt_now_s();
	int rc = st->gc(st, NULL, keep_all, NULL, &res);
	double waited = pgt_now_s() - t0;
	PT_CHECK_RC(rc, PROLLY_ETIMEOUT);
	PT_CHECKF(strstr(prolly_last_error(), pid) && strstr(prolly_last_error(), what), "%s",
	          prolly_last_error());
	PT_CHECKF(waited >= lo && waited < hi, "gave up after %.3f s", waited);
	printf("# gc gave up after %.0f ms: %s\n", waited * 1000, prolly_last_error());
}

/* The write lock is an advisory lock, and advisory locks carry no privilege: any session of any
 * role that can connect could take it (or a gc stuck while holding it), and every writer and gc
 * then waited forever, saying nothing. They now wait lock_timeout at most (the store's default,
 * 5 s, when the session sets none; the connection string's when it does) and fail with
 * PROLLY_ETIMEOUT naming the session that holds the lock; once it is released, all goes on. */
PT_TEST(write_lock_holder_cannot_stall_writers)
{
	const char *schema = pgt_new_schema();
	char url[1024];
	int is_url = strncmp(pgt_url, "postgres", 8) == 0;
	snprintf(url, sizeof(url), "%s%s", pgt_url,
	         !is_url                ? " options='-c lock_timeout=300'"
	         : strchr(pgt_url, '?') ? "&options=-c%20lock_timeout%3D300"
	                                : "?options=-c%20lock_timeout%3D300");
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.batch_items = 1; /* its writes of two nodes take the pipeline, st's one statement */
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0), *fast = NULL;
	PGconn *a = pgt_admin();
	prolly_gc_result res;
	PT_REQUIRE(a && st && prolly_store_pg_open(&fast, url, &o) == 0);
	prolly_id v1 = pgt_mkid(43, 1);
	prolly_ref_update u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_ANY, NULL, &v1);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	pgt_sql1(a, "SET application_name = 'lock holder'");
	PT_REQUIRE(hold_lock(a, 1886547822, schema));
	/* The store's default bound, then the connection string's. */
	write_gives_up(st, a, schema, 4.5, 9.0);
	write_gives_up(fast, a, schema, 0.25, 3.0);
	gc_gives_up(fast, a, "write lock", 0.25, 3.0);
	pgt_sql1(a, "SELECT pg_advisory_unlock_all()");
	/* The lock that keeps gcs apart, held the same way. */
	PT_REQUIRE(hold_lock(a, 1886547821, schema));
	gc_gives_up(fast, a, "gc lock", 0.25, 3.0);
	pgt_sql1(a, "SELECT pg_advisory_unlock_all()");
	/* Released: writes and gc go through on both stores. */
	pgt_tn t;
	pgt_tn_make(&t, 43, 9);
	u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_VALUE, &v1, &t.sn.id);
	PT_CHECK_RC(pgt_write1(st, &t.sn, 1, &u), 0);
	u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_VALUE, &t.sn.id, &v1);
	PT_CHECK_RC(pgt_write1(fast, NULL, 0, &u), 0);
	memset(&res, 0, sizeof(res));
	PT_CHECK_RC(st->gc(st, NULL, keep_all, NULL, &res), 0);
	PT_CHECK_RC(fast->gc(fast, NULL, keep_all, NULL, &res), 0);
	prolly_store_close(fast);
	prolly_store_close(st);
	PQfinish(a);
}

/* A gc whose sweep finds the refs moved under it, each time it marks: the third time, its
 * fourth mark runs with the write lock held, and starts a writer (of another ref) meanwhile. */
typedef struct remark_gc {
	prolly_store *st, *other; /* the gc's store; another handle, which moves refs/heads/t */
	prolly_id marked[8];
	size_t n_marked;
	int calls;
	int stuck;     /* the mark under the lock sleeps, sending nothing, instead of reading refs */
	double hold_s; /* how long the mark under the lock lasts */
	bg writer;
	int two_nodes; /* the writer writes two nodes (the pipeline, on a store of batch_items 1) */
	pthread_t thread;
	int started;
} remark_gc;

/* bg_write with a second node: on a store of batch_items 1, the version-1 pipeline. */
static void *bg_write_two(void *arg)
{
	bg *b = arg;
	double t0 = pgt_now_s();
	pgt_tn t[2];
	prolly_store_node sn[2];
	for (unsigned i = 0; i < 2; i++) {
		pgt_tn_make(&t[i], 9, b->node + 500 * i);
		sn[i] = t[i].sn;
	}
	prolly_ref_update u = pgt_upd(b->ref, b->expect, &b->expected, &b->value);
	b->rc = pgt_write1(b->st, sn, 2, &u);
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	b->secs = pgt_now_s() - t0;
	b->done = 1;
	return NULL;
}

static int remark_ref_fn(void *payload, const char *name, const prolly_id *value)
{
	remark_gc *g = payload;
	(void)name;
	if (g->n_marked < 8)
		g->marked[g->n_marked++] = *value;
	return 0;
}

static int remark_mark(void *payload)
{
	remark_gc *g = payload;
	int rc;
	g->n_marked = 0;
	if ((rc = g->st->list_refs(g->st, "", remark_ref_fn, g)))
		return rc;
	if (++g->calls <= 3) { /* move the ref: the sweep that follows finds it moved */
		prolly_id to = pgt_mkid(44, (unsigned)(10 + g->calls));
		prolly_ref_update u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_ANY, NULL, &to);
		return pgt_write1(g->other, NULL, 0, &u);
	}
	if (g->calls > 4)
		return 0;
	/* The fourth mark, the write lock held: a writer waits for it meanwhile. */
	g->started = pthread_create(&g->thread, NULL, g->two_nodes ? bg_write_two : bg_write,
	                            &g->writer) == 0;
	for (double t0 = pgt_now_s(); pgt_now_s() - t0 < g->hold_s;) {
		prolly_id got;
		pgt_sleep_ms(20);
		if (!g->stuck && (rc = g->st->get_ref(g->st, "refs/heads/t", &got, NULL)))
			return rc;
	}
	return 0;
}

static int remark_keep(void *payload, const prolly_id *id)
{
	remark_gc *g = payload;
	for (size_t i = 0; i < g->n_marked; i++)
		if (prolly_id_equal(&g->marked[i], id))
			return 1;
	return 0;
}

/* Runs that gc on st (lock_timeout 300 ms) with one garbage node to sweep; the refs move through
 * other, the writer writes through writer (two nodes when two_nodes). */
static int remark_gc_run(prolly_store *st, prolly_store *other, prolly_store *writer, int two_nodes,
                         int stuck, unsigned node, remark_gc *g)
{
	prolly_gc_result res;
	pgt_tn junk;
	memset(g, 0, sizeof(*g));
	memset(&res, 0, sizeof(res));
	g->st = st;
	g->other = other;
	g->stuck = stuck;
	g->hold_s = 1.4; /* not a multiple of lock_timeout: the waits end while it works */
	g->two_nodes = two_nodes;
	bg_init(&g->writer, writer, "refs/heads/w", NULL, node);
	pgt_tn_make(&junk, 44, 100 + node);
	if (pgt_write1(other, &junk.sn, 1, NULL))
		return -1;
	int rc = st->gc(st, remark_mark, remark_keep, g, &res);
	if (g->started)
		pthread_join(g->thread, NULL);
	printf("# gc rc %d after %d marks, %llu removed; writer rc %d after %.0f ms%s%s\n", rc,
	       g->calls, (unsigned long long)res.nodes_removed, g->writer.rc, g->writer.secs * 1000,
	       g->writer.rc ? ": " : "", g->writer.err);
	return rc;
}

/* A gc on a store that others keep writing marks again with the write lock held (after two
 * sweeps found the refs moved), and that mark may last longer than lock_timeout: before, every
 * writer meanwhile gave up with PROLLY_ETIMEOUT naming the gc, although the gc was working and
 * let it through moments later. A writer now waits again while the holder is a gc that keeps
 * sending statements, and goes through once the batch commits; a gc that holds the lock and
 * sends nothing for a whole lock_timeout (stuck) still fails the writer, naming its session. */
PT_TEST(writers_wait_for_a_gc_that_advances)
{
	const char *schema = pgt_new_schema();
	char url[1024];
	url_plus(url, sizeof(url), "options='-c lock_timeout=300'", "options=-c%20lock_timeout%3D300");
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL, *other = NULL, *writer = NULL, *piped = NULL;
	PGconn *a = pgt_admin();
	remark_gc g;
	char role[96], q[1024], kv[160], kv_url[160];
	PT_REQUIRE(a && prolly_store_pg_open(&st, url, &o) == 0 &&
	           prolly_store_pg_open(&other, url, &o) == 0);
	/* The writers connect as a role of their own, with a writer's grants: such a role may not
	 * read the gc session's state and times in pg_stat_activity, only its application_name. */
	snprintf(role, sizeof(role), "%s_w", schema);
	snprintf(q, sizeof(q),
	         "CREATE ROLE %s LOGIN; GRANT USAGE ON SCHEMA \"%s\" TO %s; "
	         "GRANT SELECT, INSERT ON \"%s\".nodes TO %s; "
	         "GRANT SELECT, INSERT, UPDATE, DELETE ON \"%s\".refs TO %s; "
	         "GRANT SELECT ON \"%s\".meta TO %s",
	         role, schema, role, schema, role, schema, role, schema, role);
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	snprintf(kv, sizeof(kv), "user=%s options='-c lock_timeout=300'", role);
	snprintf(kv_url, sizeof(kv_url), "user=%s&options=-c%%20lock_timeout%%3D300", role);
	url_plus(url, sizeof(url), kv, kv_url);
	o.no_create = 1;
	PT_REQUIRE(prolly_store_pg_open(&writer, url, &o) == 0);
	o.batch_items = 1;
	PT_REQUIRE(prolly_store_pg_open(&piped, url, &o) == 0);
	prolly_id v1 = pgt_mkid(44, 1);
	prolly_ref_update u = pgt_upd("refs/heads/t", PROLLY_REF_EXPECT_ANY, NULL, &v1);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);

	PT_CHECK_RC(remark_gc_run(st, other, writer, 0, 0, 1, &g), 0);
	PT_CHECK(g.calls == 4 && g.started);
	PT_CHECKF(g.writer.rc == 0, "%s", g.writer.err);
	PT_CHECKF(g.writer.secs > 0.6, "the writer did not wait: %.3f s", g.writer.secs);
	/* The same for a write through the pipeline (BEGIN, prolly_write_begin, ...). */
	PT_CHECK_RC(remark_gc_run(st, other, piped, 1, 0, 3, &g), 0);
	PT_CHECK(g.calls == 4 && g.started);
	PT_CHECKF(g.writer.rc == 0, "%s", g.writer.err);
	PT_CHECKF(g.writer.secs > 0.6, "the writer did not wait: %.3f s", g.writer.secs);

	PT_CHECK_RC(remark_gc_run(st, other, writer, 0, 1, 2, &g), 0);
	PT_CHECK(g.calls == 4 && g.started);
	PT_CHECK_RC(g.writer.rc, PROLLY_ETIMEOUT);
	PT_CHECKF(strstr(g.writer.err, "write lock") && strstr(g.writer.err, "held by pid"), "%s",
	          g.writer.err);
	PT_CHECKF(g.writer.secs < 2.5, "gave up after %.3f s", g.writer.secs);
	prolly_store_close(piped);
	prolly_store_close(writer);
	prolly_store_close(other);
	prolly_store_close(st);
	snprintf(q, sizeof(q), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	pgt_sql1(a, q);
	PQfinish(a);
}

/* libpq's reason for a failed connection comes after the host it names, which can be long: the
 * message keeps it. Before, the reason went through a 600-byte buffer and a 700-byte socket
 * directory left "... /hhh" with no reason at all. */
PT_TEST(connect_failure_keeps_the_reason)
{
	char dir[720] = "/tmp/", url[800];
	memset(dir + 5, 'h', sizeof(dir) - 6);
	dir[sizeof(dir) - 1] = 0;
	snprintf(url, sizeof(url), "host=%s dbname=prolly_absent", dir);
	prolly_store *st = NULL;
	PT_CHECK_RC(prolly_store_pg_open(&st, url, NULL), PROLLY_ESTORE);
	const char *msg = prolly_last_error();
	PT_CHECKF(strstr(msg, "cannot connect") && strstr(msg, "too long") && strlen(msg) < 1024, "%s",
	          msg);
	PT_CHECK(st == NULL);
}

/* The library loads libpq at the first PostgreSQL URL (src/store/pq.h). Where it cannot (a machine
 * without libpq5; the test names a library that does not exist), opening a PostgreSQL store or
 * checking its URL fails with PROLLY_EUNSUPPORTED naming the library, the redactor still hides a
 * password, and the other stores open. */
PT_TEST(without_libpq)
{
	const char *url = "postgresql://u:Secr3tPw@127.0.0.1:1/db";
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	char out[512];
	setenv("PROLLY_TEST_LIBPQ", "libprolly-test-absent-pq.so.5", 1);
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, NULL), PROLLY_EUNSUPPORTED);
	PT_CHECKF(strstr(prolly_last_error(), "libprolly-test-absent-pq.so.5 cannot be loaded") &&
	              strstr(prolly_last_error(), "libpq5"),
	          "%s", prolly_last_error());
	PT_CHECK(st == NULL);
	PT_CHECK_RC(prolly_open(&db, url, NULL), PROLLY_EUNSUPPORTED);
	PT_CHECKF(!strstr(prolly_last_error(), "Secr3tPw"), "%s", prolly_last_error());
	PT_CHECK(db == NULL);
	prolly_redact_message(out, sizeof(out), "cannot reach postgresql://u:Secr3tPw@127.0.0.1:1/db",
	                      url);
	PT_CHECKF(!strstr(out, "Secr3tPw") && strstr(out, "cannot reach"), "%s", out);
	PT_CHECK_RC(prolly_open(&db, "mem:", NULL), 0);
	prolly_close(db);
	unsetenv("PROLLY_TEST_LIBPQ");
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, NULL), 0);
	prolly_store_close(st);
}

typedef struct warn_run {
	const char *url, *bad_url; /* bad_url: the same database, a session it will not take */
	char err[1024];
} warn_run;

static int warn_ops(void *arg)
{
	warn_run *w = arg;
	prolly_store *st = NULL;
	prolly_id v = pgt_mkid(43, 1), got;
	int rc = prolly_store_pg_open(&st, w->url, NULL);
	if (rc == 0) {
		prolly_ref_update u = pgt_upd("refs/heads/w", PROLLY_REF_EXPECT_ANY, NULL, &v);
		rc = pgt_write1(st, NULL, 0, &u);
	}
	if (rc == 0)
		rc = st->get_ref(st, "refs/heads/w", &got, NULL);
	if (rc == 0 && !prolly_id_equal(&got, &v))
		rc = -100;
	prolly_store_close(st);
	st = NULL;
	if (rc == 0 && prolly_store_pg_open(&st, w->bad_url, NULL) != PROLLY_ESTORE)
		rc = -101;
	snprintf(w->err, sizeof(w->err), "%s", prolly_last_error());
	prolly_store_close(st);
	return rc;
}

/* The server's notices while a session starts (here a WARNING about a database's invalid setting,
 * sent each time a session starts on it) never reach stderr (docs/cli.md: nothing on stderr on
 * success), and a connection that then fails keeps them in its message. Before, libpq's default
 * notice printer got them: the store set its silent receiver only after PQconnectdbParams
 * returned, and "WARNING:  invalid value for parameter ..." was printed by every command. */
PT_TEST(startup_warnings_stay_off_stderr)
{
	char db[64], q[256], url[1024], bad[1200], out[2048];
	snprintf(db, sizeof(db), "prolly_t_%d_warn", (int)getpid());
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	snprintf(q, sizeof(q), "CREATE DATABASE %s", db);
	pgt_sql1(a, q);
	snprintf(q, sizeof(q), "ALTER DATABASE %s SET default_text_search_config = 'nosuch'", db);
	pgt_sql1(a, q);
	snprintf(q, sizeof(q), "dbname=%s", db);
	url_plus(url, sizeof(url), q, q);
	snprintf(bad, sizeof(bad), "%s%s", url,
	         strncmp(url, "postgres", 8) ? " target_session_attrs=standby"
	                                     : "&target_session_attrs=standby");
	warn_run w = {.url = url, .bad_url = bad};
	int rc = tm_stderr_of(warn_ops, &w, out, sizeof(out));
	PT_CHECKF(rc == 0, "rc %d: %s", rc, w.err);
	PT_CHECKF(out[0] == 0, "stderr: %s", out);
	PT_CHECKF(strstr(w.err, "hot standby") && strstr(w.err, "default_text_search_config"), "%s",
	          w.err);
	printf("# failed connection: %s\n", w.err);
	snprintf(q, sizeof(q), "DROP DATABASE %s WITH (FORCE)", db);
	pgt_sql1(a, q);
	PQfinish(a);
}

/* A socket on 127.0.0.1 that takes connections (the kernel completes them) and never answers;
 * its port in *port. -1 on failure. */
static int silent_listener(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	socklen_t len = sizeof(sa);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* connect_timeout as libpq applies it in its own loop, which the store no longer uses: each host
 * of a list is given the time, a host that does not answer in it is given up for the next one,
 * and the last one's failure says "timeout expired". */
PT_TEST(connect_timeout_moves_to_the_next_host)
{
	int port = 0, fd = silent_listener(&port);
	PGconn *a = pgt_admin();
	PT_REQUIRE(fd >= 0 && a);
	char hosts[512], url[1024];
	snprintf(hosts, sizeof(hosts), "host=127.0.0.1,%s&port=%d,%s&connect_timeout=1", PQhost(a),
	         port, PQport(a));
	char kv[512];
	snprintf(kv, sizeof(kv), "host=127.0.0.1,%s port=%d,%s connect_timeout=1", PQhost(a), port,
	         PQport(a));
	url_plus(url, sizeof(url), kv, hosts);
	prolly_store *st = NULL;
	double t0 = pgt_now_s();
	int rc = prolly_store_pg_open(&st, url, NULL);
	double took = pgt_now_s() - t0;
	PT_CHECKF(rc == 0, "%s", prolly_last_error());
	PT_CHECKF(took >= 1.9 && took < 6, "connected after %.3f s", took); /* libpq's floor: 2 s */
	prolly_store_close(st);
	st = NULL;
	snprintf(url, sizeof(url), "host=127.0.0.1 port=%d dbname=prolly connect_timeout=2", port);
	t0 = pgt_now_s();
	PT_CHECK_RC(prolly_store_pg_open(&st, url, NULL), PROLLY_ESTORE);
	took = pgt_now_s() - t0;
	PT_CHECKF(strstr(prolly_last_error(), "timeout expired"), "%s", prolly_last_error());
	PT_CHECKF(took >= 1.9 && took < 6, "gave up after %.3f s", took);
	PT_CHECK(st == NULL);
	printf("# silent host given up after %.3f s: %s\n", took, prolly_last_error());
	close(fd);
	PQfinish(a);
}

PGT_MAIN(NULL, NULL)
