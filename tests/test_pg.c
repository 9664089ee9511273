/*
 * test_pg.c - the PostgreSQL store against a real server: the shared conformance suite and the
 * write and read paths.
 *
 * Besides the conformance suite: chunked inserts counted, a failing third chunk, one-statement
 * writes (cost, conflicts, epoch, requires, non-durable) and ordered chunked reads. The other
 * programs of the store: test_pg_conn.c (writers on other refs not blocked, pool timeouts, a
 * backend killed mid-operation, a server restart), test_pg_standby.c (a hot standby: reads,
 * refused writes, reads run again, promotion), test_pg_reads.c (the plans of the array reads
 * on a new store's empty tables, get_ref_objects in one statement, history read ahead, a
 * corrupted row, gc while the engine writes), test_pg_schema.c (schema versions and migrations,
 * the version-4 check of every node's hash, least-privilege roles, passwords kept out of every
 * message). The server and what they share: tests/lib/pgt.h.
 *
 * `test_pg --storage [RECORDS] [binary]` is a measurement, not a test (docs/postgres.md).
 */
#include "lib/pgt.h"
#include "lib/store_conformance.h"
#include "ptest.h"
#include "rng.h"

#include <stdlib.h>

/* ---- chunked publication ---------------------------------------------------------------------- */

PT_TEST(five_nodes_three_insert_statements)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 2, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	pgt_tn t[5];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 5; i++) {
		pgt_tn_make(&t[i], 1, i);
		sn[i] = t[i].sn;
	}
	prolly_id head = pgt_tn_id(1, 0);
	prolly_ref_update u = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, &head);
	prolly_pg_counters c0, c1;
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
	char q[256];
	snprintf(q, sizeof(q),
	         "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'INSERT "
	         "INTO \"%s\".nodes%%'",
	         schema);
	long long pss0 = pgt_sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c0), 0);
	prolly_thread_stats_reset();
	PT_CHECK_RC(pgt_write1(st, sn, 5, &u), 0);
	PT_CHECK_RC(prolly_thread_stats(&s), 0);
	PT_CHECK_RC(prolly_store_pg_thread_stats(&ps), 0);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c1), 0);
	PT_CHECKF(c1.insert_statements - c0.insert_statements == 3, "%llu insert statements",
	          (unsigned long long)(c1.insert_statements - c0.insert_statements));
	PT_CHECK(c1.rows_inserted - c0.rows_inserted == 5);
	/* BEGIN, prolly_write_begin, 3 inserts, 1 CAS, prolly_write_finish, COMMIT: one round trip. */
	PT_CHECKF(ps.statements == 8, "%llu statements", (unsigned long long)ps.statements);
	PT_CHECKF(s.store_round_trips == 1, "%llu round trips",
	          (unsigned long long)s.store_round_trips);
	long long pss1 = pgt_sql1(a, q);
	PT_CHECKF(pss0 >= 0 && pss1 - pss0 == 3, "pg_stat_statements says %lld", pss1 - pss0);
	printf("# 5 nodes, batch_items 2: %llu insert statements, %llu statements, %llu round "
	       "trip(s); pg_stat_statements counted %lld inserts\n",
	       (unsigned long long)(c1.insert_statements - c0.insert_statements),
	       (unsigned long long)ps.statements, (unsigned long long)s.store_round_trips, pss1 - pss0);
	/* The same five again: nothing new is inserted (identical rows are not rewritten). */
	prolly_id ids[5];
	for (int i = 0; i < 5; i++)
		ids[i] = sn[i].id;
	PT_CHECK_RC(pgt_write1(st, sn, 5, NULL), 0);
	prolly_pg_counters c2;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c2), 0);
	PT_CHECK(c2.rows_inserted == c1.rows_inserted);
	PT_CHECK(pgt_present(st, ids, 5) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

/* A statement is prepared the first time a connection sends it, in the same pipeline (no round
 * trip of its own), and never again on that connection; a Parse answered in a pipeline that then
 * failed still counts as prepared (prepared statements outlive a rolled-back transaction: were it
 * parsed again, the server would refuse the name as taken, 42P05). Before, every connection
 * prepared all 23 statements when it was first used: a new process's one read paid the server's
 * parse of every one. */
PT_TEST(statements_prepared_when_first_sent)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 1, 0);
	PT_REQUIRE(st);
	prolly_pg_counters c0, c1, c2, c3;
	prolly_id head = pgt_mkid(3, 0), other = pgt_mkid(3, 1), wrong = pgt_mkid(3, 2), got;
	uint64_t epoch;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c0), 0);
	PT_CHECKF(c0.prepares == 0, "%llu statements prepared by the open",
	          (unsigned long long)c0.prepares);
	/* The first write on the connection fails its compare-and-swap after its statements were
	 * parsed; the next one reuses them. */
	prolly_ref_update bad = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &wrong, &head);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &bad), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c1), 0);
	PT_CHECKF(c1.prepares > c0.prepares && c1.round_trips - c0.round_trips <= 2,
	          "%llu prepared, %llu round trips", (unsigned long long)c1.prepares,
	          (unsigned long long)(c1.round_trips - c0.round_trips));
	prolly_ref_update u = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, &head);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	u = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &head, &other);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c2), 0);
	/* One read: its statement prepared with it, in its one round trip; again: nothing more. */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, &epoch), 0);
	PT_CHECK(prolly_id_equal(&got, &other));
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, &epoch), 0);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c3), 0);
	PT_CHECKF(c3.prepares - c2.prepares == 1 && c3.round_trips - c2.round_trips == 2,
	          "two reads: %llu prepared, %llu round trips",
	          (unsigned long long)(c3.prepares - c2.prepares),
	          (unsigned long long)(c3.round_trips - c2.round_trips));
	PT_CHECKF(c3.prepares < 23, "%llu prepared in all", (unsigned long long)c3.prepares);
	printf("# prepared: %llu by the open, %llu by a failed write, %llu in all\n",
	       (unsigned long long)c0.prepares, (unsigned long long)(c1.prepares - c0.prepares),
	       (unsigned long long)c3.prepares);
	prolly_store_close(st);
}

PT_TEST(failure_in_third_chunk_leaves_nothing)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 2, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v0 = pgt_mkid(2, 99);
	prolly_ref_update u0 = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_ANY, NULL, &v0);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u0), 0);
	pgt_tn t[5];
	prolly_store_node sn[5];
	prolly_id ids[5];
	for (unsigned i = 0; i < 5; i++) {
		pgt_tn_make(&t[i], 2, i);
		sn[i] = t[i].sn;
		ids[i] = sn[i].id;
	}
	prolly_id v1 = pgt_mkid(2, 0);
	prolly_ref_update u = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &v0, &v1);
	prolly_store_pg_fail_chunk(st, 3);
	int rc = pgt_write1(st, sn, 5, &u);
	PT_CHECK(rc == PROLLY_ESTORE);
	PT_CHECK(strstr(prolly_last_error(), "insert statement 3 of 3") != NULL);
	printf("# forced failure: %s\n", prolly_last_error());
	PT_CHECK(pgt_present(st, ids, 5) == 0);
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	PT_CHECK(pgt_sql1(a, q) == 0);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));
	/* The connection is still good and the same write now succeeds. */
	PT_CHECK_RC(pgt_write1(st, sn, 5, &u), 0);
	PT_CHECK(pgt_present(st, ids, 5) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- one-statement writes (schema version 2) -------------------------------------------------- */

/* Statements pg_stat_statements has counted in this database so far (its own queries left out),
 * all of them or only those naming schema. */
static long long pss_calls(PGconn *a, const char *schema)
{
	char like[96] = "%";
	if (schema)
		snprintf(like, sizeof(like), "%%\"%s\".%%", schema);
	return pgt_pss_calls(a, like);
}

PT_TEST(fast_write_is_one_statement)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	pgt_tn t[4];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 4; i++) {
		pgt_tn_make(&t[i], 20, i);
		sn[i] = t[i].sn;
	}
	sn[4] = sn[1]; /* a duplicate: sent once */
	prolly_id h1 = pgt_mkid(20, 0), h2 = pgt_mkid(20, 1);
	/* Out of name order on purpose: the rows come back in name order. */
	prolly_ref_update u[2] = {pgt_upd("refs/heads/z", PROLLY_REF_EXPECT_ABSENT, NULL, &h2),
	                          pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_ABSENT, NULL, &h1)};
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 5;
	w.refs = u;
	w.n_refs = 2;
	w.durable = 1;
	/* A write first on another ref: the connection's first pipeline to parse a statement also
	 * checks its server session (the guard in pg_pool.c), which pg_stat_statements counts. */
	prolly_id hw = pgt_mkid(20, 7);
	prolly_ref_update warm = pgt_upd("refs/heads/warm", PROLLY_REF_EXPECT_ABSENT, NULL, &hw);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &warm), 0);
	long long all0 = pss_calls(a, NULL), ours0 = pss_calls(a, schema);
	pgt_cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	pgt_cost k = pgt_cost_end(st);
	long long all1 = pss_calls(a, NULL), ours1 = pss_calls(a, schema);
	PT_CHECKF(k.stmts == 1 && k.trips == 1 && k.store_stmts == 1,
	          "%llu statements, %llu round trips", (unsigned long long)k.stmts,
	          (unsigned long long)k.trips);
	PT_CHECKF(k.inserts == 1 && k.rows == 4, "%llu inserts, %llu rows",
	          (unsigned long long)k.inserts, (unsigned long long)k.rows);
	PT_CHECKF(all1 - all0 == 1 && ours1 - ours0 == 1, "pg_stat_statements: %lld, %lld", all1 - all0,
	          ours1 - ours0);
	PT_CHECK(w.current_epoch == 1);
	PT_CHECK(!u[0].conflict && !u[1].conflict);
	printf("# 4 nodes and 2 refs: %llu statement(s), %llu round trip(s); pg_stat_statements "
	       "counted %lld\n",
	       (unsigned long long)k.stmts, (unsigned long long)k.trips, all1 - all0);
	prolly_id got, ids[4];
	for (int i = 0; i < 4; i++)
		ids[i] = sn[i].id;
	PT_CHECK(pgt_present(st, ids, 4) == 4);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h1));
	PT_CHECK_RC(st->get_ref(st, "refs/heads/z", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h2));

	/* The same nodes again, a move and a removal: nothing re-inserted, both refs applied. */
	u[0] = pgt_upd("refs/heads/z", PROLLY_REF_EXPECT_VALUE, &h2, NULL);
	u[1] = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &h1, &h2);
	pgt_cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && k.rows == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/z", &got, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h2));

	/* Refs only, nodes only, unconditional updates: one statement each. */
	prolly_id h3 = pgt_mkid(20, 3);
	prolly_ref_update any = pgt_upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &h3);
	pgt_cost_begin(st);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &any), 0);
	k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && k.inserts == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h3));
	pgt_tn extra;
	pgt_tn_make(&extra, 20, 9);
	pgt_cost_begin(st);
	PT_CHECK_RC(pgt_write1(st, &extra.sn, 1, NULL), 0);
	k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && k.inserts == 1 && k.rows == 1);
	PT_CHECK(pgt_node_count(a, schema) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

PT_TEST(fast_write_conflict_writes_nothing)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v0 = pgt_mkid(21, 50), wrong = pgt_mkid(21, 51), v1 = pgt_mkid(21, 52), got;
	prolly_ref_update u0 = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_ANY, NULL, &v0);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u0), 0);
	pgt_tn t[3];
	prolly_store_node sn[3];
	prolly_id ids[3];
	for (unsigned i = 0; i < 3; i++) {
		pgt_tn_make(&t[i], 21, i);
		sn[i] = t[i].sn;
		ids[i] = sn[i].id;
	}
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 3;
	w.durable = 1;

	/* One failing ref among two: "refs/heads/new" would apply, "refs/heads/main" does not. */
	prolly_ref_update u[2] = {pgt_upd("refs/heads/new", PROLLY_REF_EXPECT_ABSENT, NULL, &v1),
	                          pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &wrong, &v1)};
	w.refs = u;
	w.n_refs = 2;
	pgt_cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	pgt_cost k = pgt_cost_end(st);
	printf("# one of two refs failing: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "refs/heads/main") != NULL);
	PT_CHECK(strstr(prolly_last_error(), "1 of the write's") != NULL);
	PT_CHECK(k.stmts == 1 && k.trips == 1 && k.rows == 0);
	PT_CHECK(!u[0].conflict);
	PT_CHECK(u[1].conflict && u[1].current_exists && prolly_id_equal(&u[1].current, &v0));
	PT_CHECK(w.current_epoch == 1);
	PT_CHECK(pgt_present(st, ids, 3) == 0);
	PT_CHECK(pgt_node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/new", &got, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));

	/* Both failing: one expected absent but present, one expected present but absent. */
	u[0] = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, &v1);
	u[1] = pgt_upd("refs/heads/gone", PROLLY_REF_EXPECT_VALUE, &v0, NULL);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	printf("# both failing: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "2 of the write's") != NULL);
	PT_CHECK(u[0].conflict && u[0].current_exists && prolly_id_equal(&u[0].current, &v0));
	PT_CHECK(u[1].conflict && !u[1].current_exists);
	PT_CHECK(pgt_node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));

	/* The right expectation now succeeds on the same connection. */
	u[0] = pgt_upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &v0, &v1);
	w.n_refs = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PT_CHECK(!u[0].conflict && pgt_present(st, ids, 3) == 3);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v1));
	prolly_store_close(st);
	PQfinish(a);
}

/* The epoch check (PLY01), requires (PLY03) and a failing statement through the fast path. */
PT_TEST(fast_write_epoch_requires_failure)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	pgt_tn t;
	pgt_tn_make(&t, 22, 1);
	prolly_id v = pgt_mkid(22, 1), missing = pgt_mkid(22, 99), got;
	prolly_ref_update u = pgt_upd("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &t.sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = 7;
	w.durable = 1;
	pgt_cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	pgt_cost k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && strstr(prolly_last_error(), "gc ran meanwhile") != NULL);
	PT_CHECK(w.current_epoch == 1 && !u.conflict);
	w.check_epoch = 0;
	w.requires = &missing;
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	PT_CHECK(strstr(prolly_last_error(), "1 node(s) this write builds on are gone") != NULL);
	prolly_store_pg_fail_chunk(st, 1);
	w.requires = NULL;
	w.n_requires = 0;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ESTORE);
	printf("# forced failure of a one-statement write: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "nothing was written") != NULL);
	PT_CHECK(pgt_node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/e", &got, NULL), PROLLY_ENOTFOUND);
	w.requires = &t.sn.id; /* present once written: the next write builds on it */
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT); /* not yet: it is in this very write */
	w.n_requires = 0;
	PT_CHECK_RC(st->write(st, &w), 0);
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PT_CHECK(pgt_node_count(a, schema) == 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* A non-durable write turns synchronous_commit off for its own transaction only. */
PT_TEST(fast_write_not_durable)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	pgt_tn t;
	pgt_tn_make(&t, 23, 1);
	prolly_id v = pgt_mkid(23, 1), got;
	prolly_ref_update u = pgt_upd("refs/heads/n", PROLLY_REF_EXPECT_ANY, NULL, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &t.sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 0;
	pgt_cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	pgt_cost k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && k.trips == 1 && k.rows == 1);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/n", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v));
	/* Read back inside a transaction: the function's setting holds until that transaction
	 * ends, so it is in force when the write's own transaction commits. */
	char q[512], val[64];
	for (int async = 0; async < 2; async++) {
		pgt_sql1(a, "BEGIN");
		snprintf(q, sizeof(q),
		         "SELECT count(*) FROM \"%s\".prolly_write(NULL, %s, NULL, NULL, NULL, NULL, "
		         "NULL, NULL, NULL, NULL)",
		         schema, async ? "true" : "false");
		PT_CHECK(pgt_sql1(a, q) == 1);
		pgt_sql_text(a, "SHOW synchronous_commit", val, sizeof(val));
		PT_CHECKF(strcmp(val, async ? "off" : "on") == 0, "async %d: synchronous_commit %s", async,
		          val);
		pgt_sql1(a, "COMMIT");
	}
	pgt_sql_text(a, "SHOW synchronous_commit", val, sizeof(val));
	PT_CHECKF(strcmp(val, "on") == 0, "after the transaction: %s", val);
	/* Timed, for the record: 30 ref moves each way. */
	double secs[2];
	for (int durable = 0; durable < 2; durable++) {
		double t0 = pgt_now_s();
		w.durable = durable;
		w.n_nodes = 0;
		for (unsigned i = 0; i < 30; i++) {
			u.value = pgt_mkid(23, 10 + i);
			PT_CHECK_RC(st->write(st, &w), 0);
		}
		secs[durable] = pgt_now_s() - t0;
	}
	printf("# 30 one-ref writes: %.2f ms each not durable, %.2f ms each durable\n",
	       secs[0] * 1000 / 30, secs[1] * 1000 / 30);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- ordered chunked reads -------------------------------------------------------------------- */

typedef struct slots {
	int hits[8];
	size_t size[8];
	unsigned char first[8];
} slots;

static int slot_fn(void *payload, size_t index, const void *data, size_t size)
{
	slots *s = payload;
	if (index < 8) {
		s->hits[index]++;
		s->size[index] = size;
		s->first[index] = size ? *(const unsigned char *)data : 0;
	}
	return 0;
}

PT_TEST(ordered_read_across_chunks)
{
	prolly_store *st = pgt_open(pgt_new_schema(), 0, 2, 0, 0);
	PT_REQUIRE(st);
	pgt_tn t[3];
	prolly_store_node sn[3];
	for (unsigned i = 0; i < 3; i++) {
		pgt_tn_make(&t[i], 3, i);
		sn[i] = t[i].sn;
	}
	PT_CHECK_RC(pgt_write1(st, sn, 3, NULL), 0);
	prolly_id req[5] = {sn[2].id, pgt_mkid(3, 77) /* missing */, sn[0].id, sn[2].id /* duplicate */,
	                    sn[1].id};
	slots s;
	memset(&s, 0, sizeof(s));
	prolly_stats d = PROLLY_STATS_INIT;
	prolly_pg_stats dp = PROLLY_PG_STATS_INIT;
	prolly_thread_stats_reset();
	PT_CHECK_RC(st->get_nodes(st, req, 5, slot_fn, &s), 0);
	prolly_thread_stats(&d);
	prolly_store_pg_thread_stats(&dp);
	int want_idx[5] = {2, -1, 0, 2, 1};
	for (int i = 0; i < 5; i++) {
		if (want_idx[i] < 0) {
			PT_CHECK(s.hits[i] == 0);
			continue;
		}
		PT_CHECKF(s.hits[i] == 1, "slot %d answered %d times", i, s.hits[i]);
		PT_CHECK(s.size[i] == sn[want_idx[i]].size);
		PT_CHECK(s.first[i] == t[want_idx[i]].buf[0]);
	}
	PT_CHECKF(dp.statements == 3 && d.store_round_trips == 1, "%llu statements, %llu round trips",
	          (unsigned long long)dp.statements, (unsigned long long)d.store_round_trips);
	prolly_store_close(st);
}
/* ---- storage measurement: test_pg --storage [RECORDS] ------------------------------------------ */

typedef struct idcol {
	prolly_id *ids;
	size_t n;
} idcol;

static int sink_fn(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)data;
	*(uint64_t *)payload += size;
	return 0;
}

static int storage_bench(long records, int binary)
{
	static const char *modes[3][2] = {
	    {"default (EXTENDED, pglz)",
	     "SET STORAGE EXTENDED, ALTER COLUMN node SET COMPRESSION pglz"},
	    {"COMPRESSION lz4", "SET STORAGE EXTENDED, ALTER COLUMN node SET COMPRESSION lz4"},
	    {"STORAGE EXTERNAL", "SET STORAGE EXTERNAL"}};
	PGconn *a = pgt_admin();
	if (!a)
		return 1;
	printf("# %ld records, keys 'k%%012ld' (13 B), values %s\n", records,
	       binary ? "24 pseudo-random bytes" : "24 pseudo-random hex digits");
	printf("# %-26s %9s %8s %10s %10s %11s %10s\n", "node column", "build s", "nodes", "node MiB",
	       "table MiB", "read all s", "10k rand s");
	for (int m = 0; m < 3; m++) {
		const char *schema = pgt_new_schema();
		prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
		if (!st)
			return 1;
		char q[512];
		snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes ALTER COLUMN node %s", schema,
		         modes[m][1]);
		pgt_sql1(a, q);
		prolly_db *db = NULL;
		prolly_options o;
		prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
		if (prolly_db_new(&db, st, &o))
			return 1;
		double t0 = pgt_now_s();
		prolly_txn *txn = NULL;
		prolly_builder *b = NULL;
		prolly_id root;
		if (prolly_txn_begin(&txn, db) || prolly_builder_new(&b, txn))
			return 1;
		uint64_t rs = 88172645463325252ULL, x;
		for (long i = 0; i < records; i++) {
			char k[32], v[32];
			snprintf(k, sizeof(k), "k%012ld", i);
			x = bench_splitmix64(&rs);
			snprintf(v, sizeof(v), "%016llx%08llx", (unsigned long long)x,
			         (unsigned long long)(x >> 20) & 0xffffffffULL);
			if (binary) {
				uint64_t y = bench_splitmix64(&rs), z = bench_splitmix64(&rs);
				memcpy(v, &x, 8);
				memcpy(v + 8, &y, 8);
				memcpy(v + 16, &z, 8);
			}
			if (prolly_builder_add(b, k, 13, v, 24))
				return 1;
		}
		if (prolly_builder_finish(b, &root))
			return 1;
		prolly_builder_free(b);
		prolly_ref_update u = pgt_upd("refs/trees/bench", PROLLY_REF_EXPECT_ANY, NULL, &root);
		if (prolly_txn_set_ref(txn, &u) || prolly_txn_commit(txn, NULL, 0)) {
			fprintf(stderr, "%s\n", prolly_last_error());
			return 1;
		}
		prolly_txn_free(txn);
		double build = pgt_now_s() - t0;
		uint64_t nodes = 0, bytes = 0;
		st->stat(st, &nodes, &bytes);
		snprintf(q, sizeof(q), "SELECT pg_total_relation_size('\"%s\".nodes')", schema);
		long long tsize = pgt_sql1(a, q);
		/* All ids, then every node in one get_nodes call; then 10k random ones. */
		snprintf(q, sizeof(q), "SELECT id FROM \"%s\".nodes", schema);
		PGresult *r = PQexecParams(a, q, 0, NULL, NULL, NULL, NULL, 1);
		size_t n = (size_t)PQntuples(r);
		prolly_id *ids = malloc((n ? n : 1) * sizeof(*ids));
		for (size_t i = 0; i < n; i++)
			memcpy(ids[i].bytes, PQgetvalue(r, (int)i, 0), PROLLY_ID_SIZE);
		PQclear(r);
		uint64_t got = 0;
		t0 = pgt_now_s();
		st->get_nodes(st, ids, n, sink_fn, &got);
		double read_all = pgt_now_s() - t0;
		prolly_id *rnd = malloc(10000 * sizeof(*rnd));
		for (size_t i = 0; i < 10000; i++) {
			x = bench_splitmix64(&rs);
			rnd[i] = ids[x % n];
		}
		t0 = pgt_now_s();
		st->get_nodes(st, rnd, 10000, sink_fn, &got);
		double read_rnd = pgt_now_s() - t0;
		snprintf(q, sizeof(q),
		         "SELECT string_agg(coalesce(c, 'none') || ':' || k, ' ') FROM (SELECT "
		         "pg_column_compression(node) c, count(*) k FROM \"%s\".nodes GROUP BY 1) s",
		         schema);
		r = PQexec(a, q);
		printf("#   stored as %s\n", PQntuples(r) ? PQgetvalue(r, 0, 0) : "?");
		PQclear(r);
		printf("# %-26s %9.2f %8llu %10.1f %10.1f %11.3f %10.3f\n", modes[m][0], build,
		       (unsigned long long)nodes, (double)bytes / 1048576.0, (double)tsize / 1048576.0,
		       read_all, read_rnd);
		fflush(stdout);
		free(ids);
		free(rnd);
		prolly_close(db);
	}
	PQfinish(a);
	return 0;
}

/* `test_pg --storage [RECORDS] [binary]`: the measurement above instead of the tests. */
static int storage_mode(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--storage") != 0)
		return -1;
	return storage_bench(argc > 2 ? atol(argv[2]) : 1000000,
	                     argc > 3 && strcmp(argv[3], "binary") == 0);
}

PGT_MAIN(pgt_open_fresh, storage_mode)
