/*
 * test_pg_conn.c - the PostgreSQL store's connections against a real server: writers on other
 * refs not blocked, a losing write that inserts no node, pool timeouts and wait counters, a
 * backend killed mid-write, a server restart, a crash that loses a non-durable write under a commit,
 * the reason of a failed connection, the server's notices at connection start kept off stderr,
 * connect_timeout per host, and a hot standby (reads work and run again when it cancels them,
 * writes are refused saying why, and once it is promoted the same handle writes). The server and
 * what the programs share: tests/lib/pgt.h.
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PGconn *a = pgt_admin();
	PT_REQUIRE(a && prolly_store_pg_open(&st, pgt_url, &o) == 0 &&
	           prolly_db_new(&db, st, NULL) == 0);
	prolly_edit e[3] = {tm_put("a", "1"), tm_put("b", "2"), tm_put("c", "3")};
	prolly_id head, got;
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", e, 3, "three") == 0);
	PT_REQUIRE(prolly_branch_create(db, "dev", &head) == 0);
	e[0] = tm_put("a", "dev");
	PT_REQUIRE(prolly_commit_edits(&head, db, "dev", e, 1, "one") == 0);
	prolly_close(db);
	db = NULL;
	PT_REQUIRE(version4_on_standby(a, url, schema));

	/* Reads, through an open that may create (and so tries to migrate). */
	PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);
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
	db = NULL;
	PT_CHECK(pgt_schema_version(a, schema) == 4);

	/* Both servers in one URL: target_session_attrs picks the standby or the primary. */
	for (int rw = 0; rw <= 1; rw++) {
		char both[1400];
		const char *sport = strstr(url, "&port=") + 6;
		snprintf(both, sizeof(both),
		         "postgresql://postgres@/prolly?host=%s/sock,%s/standby/sock&port=%s,%s"
		         "&target_session_attrs=%s",
		         dir, dir, port, sport, rw ? "read-write" : "read-only");
		PT_REQUIRE(prolly_store_pg_open(&st, both, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);
		head_and_get(db, "main", "b", v, sizeof(v));
		PT_CHECK(strcmp(v, "2") == 0);
		PT_CHECK_RC(prolly_commit_edits(&got, db, "main", e, 1, "both"), rw ? 0 : PROLLY_ESTORE);
		prolly_close(db);
		db = NULL;
	}
	PT_CHECK(pgt_schema_version(a, schema) == 5); /* the primary's open migrated */
	PQfinish(a);
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PGconn *a = pgt_admin(), *s = PQconnectdb(url);
	PT_REQUIRE(a && PQstatus(s) == CONNECTION_OK);
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);
	/* A tree of some 100 leaves: each read is a few statements of some milliseconds. */
	enum { N = 20000 };
	prolly_edit *e = calloc(N, sizeof(*e));
	char(*kv)[2][16] = calloc(N, sizeof(*kv));
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
	prolly_close(db);
	db = NULL;
	PT_REQUIRE(standby_caught_up(a, url));
	PT_REQUIRE(pgt_sql_state(s, "ALTER SYSTEM SET max_standby_streaming_delay = 0", ""));
	pgt_sql1(s, "SELECT pg_reload_conf()");
	pgt_sleep_ms(200);
	PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);

	char lock_sql[256];
	snprintf(lock_sql, sizeof(lock_sql),
	         "BEGIN; LOCK TABLE \"%s\".nodes IN ACCESS EXCLUSIVE MODE; COMMIT", schema);
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
	pgt_sql_state(s, "ALTER SYSTEM RESET max_standby_streaming_delay", "");
	pgt_sql1(s, "SELECT pg_reload_conf()");
	PQfinish(s);
	PQfinish(a);
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.read_chunk = 1 << 20; /* one statement for every id */
	prolly_store *st = NULL, *sst = NULL;
	PGconn *a = pgt_admin(), *s = PQconnectdb(url);
	PT_REQUIRE(a && PQstatus(s) == CONNECTION_OK);
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0);
	enum { N = 200000 };
	prolly_id *ids = calloc(N, sizeof(*ids));
	PT_REQUIRE(ids);
	for (unsigned i = 0; i < N; i++)
		ids[i] = pgt_mkid(77, i);
	PT_REQUIRE(standby_caught_up(a, url));
	PT_REQUIRE(pgt_sql_state(s, "ALTER SYSTEM SET max_standby_streaming_delay = 0", ""));
	pgt_sql1(s, "SELECT pg_reload_conf()");
	pgt_sleep_ms(200);
	PT_REQUIRE(prolly_store_pg_open(&sst, url, &o) == 0);

	char lock_sql[256], primary_url[1024];
	snprintf(lock_sql, sizeof(lock_sql),
	         "BEGIN; LOCK TABLE \"%s\".nodes IN ACCESS EXCLUSIVE MODE; COMMIT", schema);
	snprintf(primary_url, sizeof(primary_url), "%s", pgt_url);
	interferer f = {.watch_url = url, .on_url = primary_url, .schema = schema, .st = sst};
	uint64_t retries = 0;
	double t0 = pgt_now_s();
	/* The standby cancels the statement: the read runs again, once. */
	int rc = read_interfered(&f, lock_sql, ids, N, &retries);
	PT_CHECKF(rc == 0 && retries == 1, "cancelled: rc %d, %llu retries: %s", rc,
	          (unsigned long long)retries, prolly_last_error());
	printf("# cancelled read: rc %d after %llu retries in %.2f s (%d locks)\n", rc,
	       (unsigned long long)retries, pgt_now_s() - t0, atomic_load(&f.acts));

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
	prolly_store_close(st);
	pgt_sql_state(s, "ALTER SYSTEM RESET max_standby_streaming_delay", "");
	pgt_sql1(s, "SELECT pg_reload_conf()");
	PQfinish(s);
	PQfinish(a);
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL;
	PGconn *s = PQconnectdb(url);
	PT_REQUIRE(PQstatus(s) == CONNECTION_OK);
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0);
	prolly_store_close(st);
	opener op = {.url = url, .schema = schema};
	blocked b = {.fn = open_read, .arg = &op};
	if (blocked_read_terminated(s, schema, "meta", &b)) {
		prolly_pg_counters c = {0};
		if (op.st)
			prolly_store_pg_counters(op.st, &c);
		PT_CHECKF(b.rc == 0 && c.read_retries == 1, "rc %d, %llu retries: %s", b.rc,
		          (unsigned long long)c.read_retries, b.err);
	}
	if (op.st)
		prolly_store_close(op.st);
	PQfinish(s);
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL, *sst = NULL;
	PGconn *a = pgt_admin(), *s = PQconnectdb(url);
	PT_REQUIRE(a && PQstatus(s) == CONNECTION_OK);
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0);
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
	PT_REQUIRE(pgt_write1(st, sn, N, NULL) == 0);
	PT_REQUIRE(standby_caught_up(a, url));
	PT_REQUIRE(prolly_store_pg_open(&sst, url, &o) == 0);

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
		if (!blocked_read_terminated(s, schema, "nodes", &b))
			continue;
		uint64_t retries = read_retries(sst) - before;
		PT_CHECKF(b.rc == 0 && retries == 1 && r.got == N,
		          "%s: rc %d, %llu retries, %llu found: %s", reads[i].name, b.rc,
		          (unsigned long long)retries, (unsigned long long)r.got, b.err);
	}
	prolly_store_close(sst);
	prolly_store_close(st);
	PQfinish(s);
	PQfinish(a);
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
	const char *url = standby_url();
	if (!url)
		return;
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.pool_size = 2;
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PGconn *a = pgt_admin(), *s = PQconnectdb(url);
	PT_REQUIRE(a && PQstatus(s) == CONNECTION_OK);
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);
	prolly_edit e[1] = {tm_put("a", "1")};
	prolly_id head, got;
	PT_REQUIRE(prolly_commit_edits(&head, db, "main", e, 1, "one") == 0);
	prolly_close(db);
	db = NULL;
	PT_REQUIRE(version4_on_standby(a, url, schema));

	PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0 && prolly_db_new(&db, st, NULL) == 0);
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
	PT_REQUIRE(prolly_store_pg_open(&st, url, &o) == 0);
	prolly_store_close(st);
	PT_CHECK(pgt_schema_version(s, schema) == 5);
	PQfinish(s);
	PQfinish(a);
}

PGT_MAIN(NULL, NULL)
