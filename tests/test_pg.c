/*
 * test_pg.c - the PostgreSQL store against a real server.
 *
 * Uses $PROLLY_PG_URL; when it is unset, starts a throwaway cluster with scripts/pg-cluster.sh
 * and stops it at the end. Without a server every case fails. A case that cannot run what it
 * tests on the server given (skip()) prints "ok N - NAME # SKIP why", "not ok" under CI=true.
 *
 * Every store gets a fresh schema (prolly_t_<pid>_<n>), dropped at the end. Besides the shared
 * conformance suite: chunked inserts counted, a failing third chunk, one-statement writes (cost,
 * conflicts, epoch, requires, non-durable), ordered chunked reads, writers on other refs not
 * blocked, pool timeouts, a backend killed mid-operation and a server restart, the plans of the
 * array reads on a new store's empty tables (index probes), get_ref_objects in one statement, a corrupted row, schema versions (a version-1 schema used as it is, then
 * migrated; a runtime role with least privileges), the version-4 check of every node's hash (a
 * poisoned row refused even to the owner, old rows validated, the migration's lock bounded),
 * reader, writer and gc roles with exactly the documented grants, and passwords kept out of
 * every message.
 */
#include "internal.h"
#include "lib/model.h"
#include "lib/store_conformance.h"
#include "prolly.h"
#include "ptest.h"
#include "rng.h"
#include "store/pg.h"

#include <errno.h>
#include <libpq-fe.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *pg_url;
static char cluster_dir[512]; /* set when this program started the cluster */
static int schema_seq;
static char schemas[256][64];
static int n_schemas;

/* ---- helpers ---------------------------------------------------------------------------------- */

static double now_s(void)
{
	return (double)prolly__mono_ns() / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/*
 * A case that cannot run what it is about calls skip(): it is reported as "ok N - NAME # SKIP
 * why", or, with CI=true in the environment, as "not ok" (CI must run everything).
 */
static char skip_why[512];

__attribute__((format(printf, 1, 2))) static void skip(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(skip_why, sizeof(skip_why), fmt, ap);
	va_end(ap);
	for (char *p = skip_why; *p; p++)
		if (*p == '\n')
			*p = ' ';
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0) {
		fprintf(stderr, "  skipped under CI=true, which counts as a failure: %s\n", skip_why);
		pt_failed_now = 1;
	}
}

static const char *new_schema(void)
{
	if (n_schemas >= 256)
		return "prolly_t_overflow";
	snprintf(schemas[n_schemas], sizeof(schemas[0]), "prolly_t_%d_%d", (int)getpid(), ++schema_seq);
	return schemas[n_schemas++];
}

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static PGconn *admin(void)
{
	PGconn *c = PQconnectdb(pg_url);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "  admin connection failed: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	return c;
}

/* Runs sql on c; returns the first value of the first row as a number (or -1). */
static long long sql1(PGconn *c, const char *sql)
{
	long long v = -1;
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		v = atoll(PQgetvalue(r, 0, 0));
	else if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
		fprintf(stderr, "  sql failed: %s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return v;
}

/* Runs sql on c and says whether it ended with SQLSTATE state ("" for success). */
static int sql_state(PGconn *c, const char *sql, const char *state)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	const char *got = s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK
	                      ? ""
	                      : PQresultErrorField(r, PG_DIAG_SQLSTATE);
	int ok = got && strcmp(got, state) == 0;
	if (!ok)
		fprintf(stderr, "  %s: SQLSTATE %s, want %s: %s", sql, got ? got : "?", state,
		        PQresultErrorMessage(r));
	PQclear(r);
	return ok;
}

static prolly_store *open_pg(const char *schema, size_t batch_items, size_t read_chunk,
                             unsigned pool_size, unsigned timeout_ms)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.batch_items = batch_items;
	o.read_chunk = read_chunk;
	o.pool_size = pool_size;
	o.pool_timeout_ms = timeout_ms;
	prolly_store *st = NULL;
	if (prolly_store_pg_open(&st, pg_url, &o)) {
		fprintf(stderr, "  open failed: %s\n", prolly_last_error());
		return NULL;
	}
	return st;
}

/* The shared conformance suite writes nodes under made-up ids (a store need not check hashes),
 * so its schemas go without the version-4 constraint; poisoned_node_refused tests that. */
static prolly_store *open_fresh(void *ctx)
{
	(void)ctx;
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = st ? admin() : NULL;
	char q[256];
	snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256", schema);
	if (!a || sql1(a, q) != -1 || PQstatus(a) != CONNECTION_OK) {
		prolly_store_close(st);
		st = NULL;
	}
	PQfinish(a);
	return st;
}

static prolly_id mkid(unsigned tag, unsigned i)
{
	prolly_id id;
	for (int k = 0; k < PROLLY_ID_SIZE; k++)
		id.bytes[k] = (unsigned char)(tag * 131 + i * 31 + (unsigned)k * 7 + (k == 0 ? i : 0));
	id.bytes[1] = (unsigned char)tag;
	id.bytes[2] = (unsigned char)i;
	return id;
}

typedef struct tn {
	prolly_store_node sn;
	unsigned char buf[300];
} tn;

/* A node whose id is the SHA-256 of its bytes, as the schema's constraint requires. */
static void tn_make(tn *t, unsigned tag, unsigned i)
{
	for (size_t k = 0; k < sizeof(t->buf); k++)
		t->buf[k] = (unsigned char)(tag + i * 3 + k);
	t->sn.data = t->buf;
	t->sn.size = 100 + i % 150;
	SHA256(t->buf, t->sn.size, t->sn.id.bytes);
}

static prolly_id tn_id(unsigned tag, unsigned i)
{
	tn t;
	tn_make(&t, tag, i);
	return t.sn.id;
}

static prolly_ref_update upd(const char *name, prolly_ref_expect ex, const prolly_id *expected,
                             const prolly_id *value)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.expect = ex;
	if (expected)
		u.expected = *expected;
	if (value)
		u.value = *value;
	else
		u.remove = 1;
	return u;
}

static int write1(prolly_store *st, const prolly_store_node *nodes, size_t n, prolly_ref_update *u)
{
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = nodes;
	w.n_nodes = n;
	w.refs = u;
	w.n_refs = u ? 1 : 0;
	w.durable = 1;
	return st->write(st, &w);
}

static int count_fn(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)data;
	(void)size;
	(*(int *)payload)++;
	return 0;
}

static int present(prolly_store *st, const prolly_id *ids, size_t n)
{
	int calls = 0;
	if (st->get_nodes(st, ids, n, count_fn, &calls))
		return -1;
	return calls;
}

/* ---- chunked publication ---------------------------------------------------------------------- */

PT_TEST(five_nodes_three_insert_statements)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 2, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	tn t[5];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 5; i++) {
		tn_make(&t[i], 1, i);
		sn[i] = t[i].sn;
	}
	prolly_id head = tn_id(1, 0);
	prolly_ref_update u = upd("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, &head);
	prolly_pg_counters c0, c1;
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
	char q[256];
	snprintf(q, sizeof(q),
	         "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'INSERT "
	         "INTO \"%s\".nodes%%'",
	         schema);
	long long pss0 = sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_counters(st, &c0), 0);
	prolly_thread_stats_reset();
	PT_CHECK_RC(write1(st, sn, 5, &u), 0);
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
	long long pss1 = sql1(a, q);
	PT_CHECKF(pss0 >= 0 && pss1 - pss0 == 3, "pg_stat_statements says %lld", pss1 - pss0);
	printf("# 5 nodes, batch_items 2: %llu insert statements, %llu statements, %llu round "
	       "trip(s); pg_stat_statements counted %lld inserts\n",
	       (unsigned long long)(c1.insert_statements - c0.insert_statements),
	       (unsigned long long)ps.statements, (unsigned long long)s.store_round_trips, pss1 - pss0);
	/* The same five again: nothing new is inserted (identical rows are not rewritten). */
	prolly_id ids[5];
	for (int i = 0; i < 5; i++)
		ids[i] = sn[i].id;
	PT_CHECK_RC(write1(st, sn, 5, NULL), 0);
	prolly_pg_counters c2;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c2), 0);
	PT_CHECK(c2.rows_inserted == c1.rows_inserted);
	PT_CHECK(present(st, ids, 5) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

PT_TEST(failure_in_third_chunk_leaves_nothing)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 2, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v0 = mkid(2, 99);
	prolly_ref_update u0 = upd("refs/heads/main", PROLLY_REF_EXPECT_ANY, NULL, &v0);
	PT_CHECK_RC(write1(st, NULL, 0, &u0), 0);
	tn t[5];
	prolly_store_node sn[5];
	prolly_id ids[5];
	for (unsigned i = 0; i < 5; i++) {
		tn_make(&t[i], 2, i);
		sn[i] = t[i].sn;
		ids[i] = sn[i].id;
	}
	prolly_id v1 = mkid(2, 0);
	prolly_ref_update u = upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &v0, &v1);
	prolly_store_pg_fail_chunk(st, 3);
	int rc = write1(st, sn, 5, &u);
	PT_CHECK(rc == PROLLY_ESTORE);
	PT_CHECK(strstr(prolly_last_error(), "insert statement 3 of 3") != NULL);
	printf("# forced failure: %s\n", prolly_last_error());
	PT_CHECK(present(st, ids, 5) == 0);
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	PT_CHECK(sql1(a, q) == 0);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));
	/* The connection is still good and the same write now succeeds. */
	PT_CHECK_RC(write1(st, sn, 5, &u), 0);
	PT_CHECK(present(st, ids, 5) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- one-statement writes (schema version 2) -------------------------------------------------- */

/* What one store call cost: the thread's statements and round trips, the store's insert
 * statements and inserted rows. */
typedef struct cost {
	uint64_t stmts, trips, inserts, rows, store_stmts;
} cost;

static prolly_pg_counters cost_c0;

static void cost_begin(prolly_store *st)
{
	prolly_store_pg_counters(st, &cost_c0);
	prolly_thread_stats_reset();
}

static cost cost_end(prolly_store *st)
{
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
	prolly_pg_counters c1;
	cost k;
	prolly_thread_stats(&s);
	prolly_store_pg_thread_stats(&ps);
	prolly_store_pg_counters(st, &c1);
	k.stmts = ps.statements;
	k.trips = s.store_round_trips;
	k.inserts = c1.insert_statements - cost_c0.insert_statements;
	k.rows = c1.rows_inserted - cost_c0.rows_inserted;
	k.store_stmts = c1.statements - cost_c0.statements;
	return k;
}

/* Statements pg_stat_statements has counted in this database so far (its own queries left out),
 * all of them or only those naming schema. */
static long long pss_calls(PGconn *a, const char *schema)
{
	char q[512], like[96] = "%";
	if (schema)
		snprintf(like, sizeof(like), "%%\"%s\".%%", schema);
	snprintf(q, sizeof(q),
	         "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON "
	         "d.oid = s.dbid WHERE d.datname = current_database() AND s.query NOT LIKE "
	         "'%%pg_stat_statements%%' AND s.query LIKE '%s'",
	         like);
	return sql1(a, q);
}

/* The first value of the first row as text ("" if none). */
static void sql_text(PGconn *c, const char *sql, char *out, size_t size)
{
	PGresult *r = PQexec(c, sql);
	out[0] = 0;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		snprintf(out, size, "%s", PQgetvalue(r, 0, 0));
	else if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fprintf(stderr, "  sql failed: %s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
}

static long long schema_version(PGconn *a, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q), "SELECT value FROM \"%s\".meta WHERE key = 'schema_version'", schema);
	return sql1(a, q);
}

static long long node_count(PGconn *a, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	return sql1(a, q);
}

PT_TEST(fast_write_is_one_statement)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	tn t[4];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 4; i++) {
		tn_make(&t[i], 20, i);
		sn[i] = t[i].sn;
	}
	sn[4] = sn[1]; /* a duplicate: sent once */
	prolly_id h1 = mkid(20, 0), h2 = mkid(20, 1);
	/* Out of name order on purpose: the rows come back in name order. */
	prolly_ref_update u[2] = {upd("refs/heads/z", PROLLY_REF_EXPECT_ABSENT, NULL, &h2),
	                          upd("refs/heads/a", PROLLY_REF_EXPECT_ABSENT, NULL, &h1)};
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 5;
	w.refs = u;
	w.n_refs = 2;
	w.durable = 1;
	long long all0 = pss_calls(a, NULL), ours0 = pss_calls(a, schema);
	cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	cost k = cost_end(st);
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
	PT_CHECK(present(st, ids, 4) == 4);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h1));
	PT_CHECK_RC(st->get_ref(st, "refs/heads/z", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h2));

	/* The same nodes again, a move and a removal: nothing re-inserted, both refs applied. */
	u[0] = upd("refs/heads/z", PROLLY_REF_EXPECT_VALUE, &h2, NULL);
	u[1] = upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &h1, &h2);
	cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	k = cost_end(st);
	PT_CHECK(k.stmts == 1 && k.rows == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/z", &got, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h2));

	/* Refs only, nodes only, unconditional updates: one statement each. */
	prolly_id h3 = mkid(20, 3);
	prolly_ref_update any = upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &h3);
	cost_begin(st);
	PT_CHECK_RC(write1(st, NULL, 0, &any), 0);
	k = cost_end(st);
	PT_CHECK(k.stmts == 1 && k.inserts == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/a", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &h3));
	tn extra;
	tn_make(&extra, 20, 9);
	cost_begin(st);
	PT_CHECK_RC(write1(st, &extra.sn, 1, NULL), 0);
	k = cost_end(st);
	PT_CHECK(k.stmts == 1 && k.inserts == 1 && k.rows == 1);
	PT_CHECK(node_count(a, schema) == 5);
	prolly_store_close(st);
	PQfinish(a);
}

PT_TEST(fast_write_conflict_writes_nothing)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v0 = mkid(21, 50), wrong = mkid(21, 51), v1 = mkid(21, 52), got;
	prolly_ref_update u0 = upd("refs/heads/main", PROLLY_REF_EXPECT_ANY, NULL, &v0);
	PT_CHECK_RC(write1(st, NULL, 0, &u0), 0);
	tn t[3];
	prolly_store_node sn[3];
	prolly_id ids[3];
	for (unsigned i = 0; i < 3; i++) {
		tn_make(&t[i], 21, i);
		sn[i] = t[i].sn;
		ids[i] = sn[i].id;
	}
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 3;
	w.durable = 1;

	/* One failing ref among two: "refs/heads/new" would apply, "refs/heads/main" does not. */
	prolly_ref_update u[2] = {upd("refs/heads/new", PROLLY_REF_EXPECT_ABSENT, NULL, &v1),
	                          upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &wrong, &v1)};
	w.refs = u;
	w.n_refs = 2;
	cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	cost k = cost_end(st);
	printf("# one of two refs failing: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "refs/heads/main") != NULL);
	PT_CHECK(strstr(prolly_last_error(), "1 of the write's") != NULL);
	PT_CHECK(k.stmts == 1 && k.trips == 1 && k.rows == 0);
	PT_CHECK(!u[0].conflict);
	PT_CHECK(u[1].conflict && u[1].current_exists && prolly_id_equal(&u[1].current, &v0));
	PT_CHECK(w.current_epoch == 1);
	PT_CHECK(present(st, ids, 3) == 0);
	PT_CHECK(node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/new", &got, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));

	/* Both failing: one expected absent but present, one expected present but absent. */
	u[0] = upd("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, &v1);
	u[1] = upd("refs/heads/gone", PROLLY_REF_EXPECT_VALUE, &v0, NULL);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	printf("# both failing: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "2 of the write's") != NULL);
	PT_CHECK(u[0].conflict && u[0].current_exists && prolly_id_equal(&u[0].current, &v0));
	PT_CHECK(u[1].conflict && !u[1].current_exists);
	PT_CHECK(node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v0));

	/* The right expectation now succeeds on the same connection. */
	u[0] = upd("refs/heads/main", PROLLY_REF_EXPECT_VALUE, &v0, &v1);
	w.n_refs = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PT_CHECK(!u[0].conflict && present(st, ids, 3) == 3);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/main", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v1));
	prolly_store_close(st);
	PQfinish(a);
}

/* The epoch check (PLY01), requires (PLY03) and a failing statement through the fast path. */
PT_TEST(fast_write_epoch_requires_failure)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	tn t;
	tn_make(&t, 22, 1);
	prolly_id v = mkid(22, 1), missing = mkid(22, 99), got;
	prolly_ref_update u = upd("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &t.sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = 7;
	w.durable = 1;
	cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	cost k = cost_end(st);
	PT_CHECK(k.stmts == 1 && strstr(prolly_last_error(), "gc ran meanwhile") != NULL);
	PT_CHECK(w.current_epoch == 1 && !u.conflict);
	w.check_epoch = 0;
	w.requires = &missing;
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT);
	PT_CHECK(strstr(prolly_last_error(), "a gc removed 1 node(s)") != NULL);
	prolly_store_pg_fail_chunk(st, 1);
	w.requires = NULL;
	w.n_requires = 0;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ESTORE);
	printf("# forced failure of a one-statement write: %s\n", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "nothing was written") != NULL);
	PT_CHECK(node_count(a, schema) == 0);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/e", &got, NULL), PROLLY_ENOTFOUND);
	w.requires = &t.sn.id; /* present once written: the next write builds on it */
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), PROLLY_ECONFLICT); /* not yet: it is in this very write */
	w.n_requires = 0;
	PT_CHECK_RC(st->write(st, &w), 0);
	w.n_requires = 1;
	PT_CHECK_RC(st->write(st, &w), 0);
	PT_CHECK(node_count(a, schema) == 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* A non-durable write turns synchronous_commit off for its own transaction only. */
PT_TEST(fast_write_not_durable)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	tn t;
	tn_make(&t, 23, 1);
	prolly_id v = mkid(23, 1), got;
	prolly_ref_update u = upd("refs/heads/n", PROLLY_REF_EXPECT_ANY, NULL, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &t.sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 0;
	cost_begin(st);
	PT_CHECK_RC(st->write(st, &w), 0);
	cost k = cost_end(st);
	PT_CHECK(k.stmts == 1 && k.trips == 1 && k.rows == 1);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/n", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v));
	/* Read back inside a transaction: the function's setting holds until that transaction
	 * ends, so it is in force when the write's own transaction commits. */
	char q[512], val[64];
	for (int async = 0; async < 2; async++) {
		sql1(a, "BEGIN");
		snprintf(q, sizeof(q),
		         "SELECT count(*) FROM \"%s\".prolly_write(NULL, %s, NULL, NULL, NULL, NULL, "
		         "NULL, NULL, NULL, NULL)",
		         schema, async ? "true" : "false");
		PT_CHECK(sql1(a, q) == 1);
		sql_text(a, "SHOW synchronous_commit", val, sizeof(val));
		PT_CHECKF(strcmp(val, async ? "off" : "on") == 0, "async %d: synchronous_commit %s", async,
		          val);
		sql1(a, "COMMIT");
	}
	sql_text(a, "SHOW synchronous_commit", val, sizeof(val));
	PT_CHECKF(strcmp(val, "on") == 0, "after the transaction: %s", val);
	/* Timed, for the record: 30 ref moves each way. */
	double secs[2];
	for (int durable = 0; durable < 2; durable++) {
		double t0 = now_s();
		w.durable = durable;
		w.n_nodes = 0;
		for (unsigned i = 0; i < 30; i++) {
			u.value = mkid(23, 10 + i);
			PT_CHECK_RC(st->write(st, &w), 0);
		}
		secs[durable] = now_s() - t0;
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
	prolly_store *st = open_pg(new_schema(), 0, 2, 0, 0);
	PT_REQUIRE(st);
	tn t[3];
	prolly_store_node sn[3];
	for (unsigned i = 0; i < 3; i++) {
		tn_make(&t[i], 3, i);
		sn[i] = t[i].sn;
	}
	PT_CHECK_RC(write1(st, sn, 3, NULL), 0);
	prolly_id req[5] = {sn[2].id, mkid(3, 77) /* missing */, sn[0].id, sn[2].id /* duplicate */,
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

/* ---- concurrency ------------------------------------------------------------------------------ */

typedef struct bg {
	prolly_store *st;
	const char *ref;
	prolly_id expected, value;
	prolly_ref_expect expect;
	unsigned node; /* the written node is tn_make(9, node); value its id */
	int rc;
	char err[512];
	_Atomic int done;
	double secs;
} bg;

static void bg_node(bg *b, unsigned node)
{
	b->node = node;
	b->value = tn_id(9, node);
}

static void *bg_write(void *arg)
{
	bg *b = arg;
	double t0 = now_s();
	tn t;
	tn_make(&t, 9, b->node); /* b->value is its id (bg_node) */
	prolly_ref_update u = upd(b->ref, b->expect, &b->expected, &b->value);
	b->rc = write1(b->st, &t.sn, 1, &u);
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	b->secs = now_s() - t0;
	b->done = 1;
	return NULL;
}

/* A background writer of st: writes node tn_make(9, node) and moves ref to its id, from
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
	sql1(a, q);
}

/* A transaction holding ref a's row lock (as a slow writer would) blocks writers of a, never
 * those of b. */
PT_TEST(other_ref_is_not_blocked)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id va = mkid(4, 1), vb = mkid(4, 2);
	prolly_ref_update ua = upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &va);
	prolly_ref_update ub = upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &vb);
	PT_CHECK_RC(write1(st, NULL, 0, &ua), 0);
	PT_CHECK_RC(write1(st, NULL, 0, &ub), 0);
	lock_ref_row(a, schema, "refs/heads/a");
	bg ba, bb;
	bg_init(&ba, st, "refs/heads/a", &va, 3);
	bg_init(&bb, st, "refs/heads/b", &vb, 4);
	pthread_t ta, tb;
	PT_REQUIRE(pthread_create(&ta, NULL, bg_write, &ba) == 0);
	sleep_ms(100);
	PT_REQUIRE(pthread_create(&tb, NULL, bg_write, &bb) == 0);
	pthread_join(tb, NULL);
	PT_CHECKF(bb.rc == 0, "%s", bb.err);
	PT_CHECKF(bb.secs < 1.0, "the writer of b took %.3f s", bb.secs);
	sleep_ms(200);
	PT_CHECK(!ba.done); /* a waits for the lock */
	sql1(a, "COMMIT");
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
		sleep_ms(10);
	return *done != 0;
}

PT_TEST(losing_write_inserts_no_node)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 2, 0, 4, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v1 = mkid(31, 1), v2 = mkid(31, 2), wrong = mkid(31, 99);
	prolly_ref_update ua = upd("refs/heads/a", PROLLY_REF_EXPECT_ANY, NULL, &v1);
	prolly_ref_update ub = upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &v2);
	PT_CHECK_RC(write1(st, NULL, 0, &ua), 0);
	PT_CHECK_RC(write1(st, NULL, 0, &ub), 0);
	tn t[5];
	prolly_store_node sn[5];
	for (unsigned i = 0; i < 5; i++) {
		tn_make(&t[i], 31, 10 + i);
		sn[i] = t[i].sn;
	}
	char q[256];
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".nodes IN SHARE MODE", schema);
	sql1(a, q);

	/* 1 ref, 1 node (prolly_write); 2 refs, one failing, 2 nodes (prolly_write); 1 ref, 5 nodes
	 * in three chunks (the pipeline). */
	bgl lose[3];
	memset(lose, 0, sizeof(lose));
	for (int k = 0; k < 3; k++) {
		lose[k].st = st;
		lose[k].refs[0] = upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &wrong, &v2);
		lose[k].n_refs = 1;
	}
	lose[0].nodes = &sn[0];
	lose[0].n_nodes = 1;
	lose[1].refs[1] = upd("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v2, &v1);
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
			sql1(a, "COMMIT");
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
	win.refs[0] = upd("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &v1, &t[4].sn.id);
	win.n_refs = 1;
	win.nodes = &sn[4];
	win.n_nodes = 1;
	pthread_t tw;
	PT_REQUIRE(pthread_create(&tw, NULL, bg_losing_write, &win) == 0);
	sleep_ms(300);
	PT_CHECK(!win.done);
	sql1(a, "COMMIT");
	pthread_join(tw, NULL);
	PT_CHECK_RC(win.rc, 0);

	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	PT_CHECK(sql1(a, q) == 1);
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
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 2, 300);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v = mkid(5, 1);
	prolly_ref_update u = upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/p");
	bg b[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		bg_init(&b[i], st, "refs/heads/p", NULL, 10 + (unsigned)i);
		PT_REQUIRE(pthread_create(&th[i], NULL, bg_write, &b[i]) == 0);
	}
	sleep_ms(200);
	prolly_pg_stats s = PROLLY_PG_STATS_INIT;
	prolly_thread_stats_reset();
	double t0 = now_s();
	prolly_id got;
	int rc = st->get_ref(st, "refs/heads/p", &got, NULL);
	double waited = now_s() - t0;
	PT_CHECK_RC(prolly_store_pg_thread_stats(&s), 0);
	PT_CHECK(rc == PROLLY_ETIMEOUT);
	PT_CHECKF(waited >= 0.25 && waited < 2.0, "waited %.3f s", waited);
	PT_CHECK(s.pool_waits == 1 && s.pool_wait_ns >= 250000000ULL);
	prolly_pg_stats cum = PROLLY_PG_STATS_INIT; /* the store's own count has the same wait */
	PT_CHECK_RC(prolly_store_pg_stats(&cum, st), 0);
	PT_CHECK(cum.pool_waits >= 1 && cum.pool_wait_ns >= s.pool_wait_ns);
	printf("# pool timeout after %.0f ms: %s\n", waited * 1000, prolly_last_error());
	sql1(a, "COMMIT");
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(b[i].rc == 0, "%s", b[i].err);
	}
	PT_CHECK_RC(st->get_ref(st, "refs/heads/p", &got, NULL), 0);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- broken connections ----------------------------------------------------------------------- */

/* Waits until a backend of this database waits for a lock; returns its pid or -1. */
static long long blocked_pid(PGconn *a)
{
	for (int i = 0; i < 100; i++) {
		long long pid = sql1(a, "SELECT pid FROM pg_stat_activity WHERE datname = "
		                        "current_database() AND wait_event_type = 'Lock' LIMIT 1");
		if (pid > 0)
			return pid;
		sleep_ms(20);
	}
	return -1;
}

PT_TEST(backend_killed_mid_write)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v = mkid(6, 1);
	prolly_ref_update u = upd("refs/heads/k", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/k");
	bg b;
	bg_init(&b, st, "refs/heads/k", &v, 62);
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_write, &b) == 0);
	long long pid = blocked_pid(a);
	PT_CHECK(pid > 0);
	char k[128];
	snprintf(k, sizeof(k), "SELECT pg_terminate_backend(%lld)", pid);
	sql1(a, k);
	pthread_join(th, NULL);
	sql1(a, "COMMIT");
	PT_CHECK(b.rc == PROLLY_ESTORE);
	printf("# in flight: %s\n", b.err);
	/* Nothing of it is visible; the next operation reconnects and succeeds. */
	PT_CHECK(present(st, &b.value, 1) == 0);
	prolly_id got;
	PT_CHECK_RC(st->get_ref(st, "refs/heads/k", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &v));
	PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
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
		/* Not our cluster: terminate every other backend of the database instead. */
		prolly_store *st = open_pg(new_schema(), 0, 0, 4, 0);
		PGconn *a = admin();
		PT_REQUIRE(st && a);
		prolly_id v = mkid(7, 1), got;
		prolly_ref_update u = upd("refs/heads/r", PROLLY_REF_EXPECT_ANY, NULL, &v);
		PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
		sql1(a, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
		        "current_database() AND pid <> pg_backend_pid() AND application_name = 'prolly'");
		sleep_ms(100);
		PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
		prolly_store_close(st);
		PQfinish(a);
		skip("not this program's cluster (PROLLY_PG_DIR and PROLLY_PG_BIN unset): backends "
		     "terminated instead of a server restart");
		return;
	}
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 4, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v = mkid(7, 1), got;
	prolly_ref_update u = upd("refs/heads/r", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
	lock_ref_row(a, schema, "refs/heads/r");
	bg b;
	bg_init(&b, st, "refs/heads/r", &v, 72);
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_write, &b) == 0);
	PT_CHECK(blocked_pid(a) > 0);
	/* While the writer holds one connection, this read opens a second one, idle at the restart. */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
	prolly_pg_counters before;
	PT_CHECK_RC(prolly_store_pg_counters(st, &before), 0);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "%s -u postgres -- %s/pg_ctl -D %s/data -m fast -w -t 60 restart >/dev/null 2>&1",
	         getuid() == 0 ? "runuser" : "env", bin, dir);
	if (getuid() != 0)
		snprintf(cmd, sizeof(cmd), "%s/pg_ctl -D %s/data -m fast -w -t 60 restart >/dev/null 2>&1",
		         bin, dir);
	double t0 = now_s();
	int sys = system(cmd);
	double restart_s = now_s() - t0;
	PT_CHECKF(sys == 0, "pg_ctl restart: %d", sys);
	pthread_join(th, NULL);
	/* The fast shutdown ends the blocker first: the write in flight either fails as a store
	 * error, or (one statement, its own transaction) gets its lock and commits before its own
	 * backend is told to stop, and then it reports success. */
	PT_CHECKF(b.rc == PROLLY_ESTORE || b.rc == 0, "%d: %s", b.rc, b.err);
	printf("# in flight during restart: %s\n", b.rc ? b.err : "committed before the shutdown");
	PQfinish(a);
	a = admin();
	PT_REQUIRE(a);
	/* The next operation succeeds: dead idle connections are noticed before use. */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/r", &got, NULL), 0);
	/* A write cut off while committing may have been applied (the server can release the
	 * blocker's lock and commit the writer before the shutdown reaches it), but only wholly:
	 * the ref moved and its node stored, or neither. */
	PT_CHECK(b.rc != 0 || prolly_id_equal(&got, &b.value)); /* a success is applied */
	if (prolly_id_equal(&got, &b.value)) {
		PT_CHECK(present(st, &b.value, 1) == 1);
		printf("# the cut-off write had committed before the shutdown reached it\n");
	} else {
		PT_CHECK(prolly_id_equal(&got, &v));
		PT_CHECK(present(st, &b.value, 1) == 0);
	}
	for (int i = 0; i < 6; i++)
		PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
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

/* ---- get_ref_objects -------------------------------------------------------------------------- */

typedef struct seen {
	int calls, stop_at;
	size_t index[4], size[4];
	unsigned char first[4];
} seen;

static int seen_fn(void *payload, size_t index, const void *data, size_t size)
{
	seen *s = payload;
	if (s->calls < 4) {
		s->index[s->calls] = index;
		s->size[s->calls] = size;
		s->first[s->calls] = size ? *(const unsigned char *)data : 0;
	}
	s->calls++;
	return s->stop_at && s->calls == s->stop_at ? 99 : 0;
}

/* The statements that look an array of ids or names up, prepared as the store prepares them (a
 * generic plan) on the tables of a new store, which are empty: each must probe the primary key
 * per element, never scan the table. A plain join made a hash join over a sequential scan there,
 * and the plan stayed as the table grew (every get_nodes and has_nodes of a clone into a new
 * store read the whole node table). */
PT_TEST(pg_array_statements_probe_the_index)
{
	prolly_store *st = open_pg(new_schema(), 0, 0, 1, 0);
	PGconn *c = admin();
	PT_REQUIRE(st && c);
	static const struct {
		const char *what, *args;
	} stmts[] = {
	    {"get_nodes", "('{}')"},
	    {"has_nodes", "('{}')"},
	    {"get_refs", "('{}')"},
	    {"get_ancestors", "('{}', 10, '\\x50524c43', 4, 12)"},
	};
	PT_CHECK(sql1(c, "SET plan_cache_mode = force_generic_plan") == -1);
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		char name[16], sql[256];
		snprintf(name, sizeof(name), "probe%zu", i);
		const char *text = prolly_store_pg_statement(st, stmts[i].what);
		PT_CHECKF(text, "%s", stmts[i].what);
		if (!text)
			continue;
		PGresult *r = PQprepare(c, name, text, 0, NULL);
		PT_CHECKF(PQresultStatus(r) == PGRES_COMMAND_OK, "prepare %s: %s", stmts[i].what,
		          PQresultErrorMessage(r));
		PQclear(r);
		snprintf(sql, sizeof(sql), "EXPLAIN EXECUTE %s%s", name, stmts[i].args);
		r = PQexec(c, sql);
		PT_CHECKF(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
		char plan[4096] = "";
		size_t at = 0;
		for (int row = 0; PQresultStatus(r) == PGRES_TUPLES_OK && row < PQntuples(r); row++)
			at += (size_t)snprintf(plan + at, at < sizeof(plan) ? sizeof(plan) - at : 0, "%s\n",
			                       PQgetvalue(r, row, 0));
		PQclear(r);
		PT_CHECKF(!strstr(plan, "Seq Scan") && !strstr(plan, "Hash"), "%s:\n%s", stmts[i].what,
		          plan);
		PT_CHECKF(strstr(plan, "Index"), "%s:\n%s", stmts[i].what, plan);
	}
	PQfinish(c);
	prolly_store_close(st);
}

PT_TEST(get_ref_objects_one_statement)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PT_REQUIRE(st && st->get_ref_objects);
	/* A commit-like object: 5 bytes, the 32-byte id of a "root", 20 more bytes. */
	tn root;
	tn_make(&root, 24, 1);
	unsigned char commit[57];
	memset(commit, 'C', sizeof(commit));
	memcpy(commit + 5, root.sn.id.bytes, PROLLY_ID_SIZE);
	prolly_store_node sn[2] = {root.sn, {{{0}}, commit, sizeof(commit)}};
	SHA256(commit, sizeof(commit), sn[1].id.bytes);
	prolly_ref_update u = upd("refs/heads/o", PROLLY_REF_EXPECT_ABSENT, NULL, &sn[1].id);
	PT_CHECK_RC(write1(st, sn, 2, &u), 0);

	seen s;
	prolly_id got;
	uint64_t epoch = 0;
	memset(&s, 0, sizeof(s));
	cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, &epoch, seen_fn, &s), 0);
	cost k = cost_end(st);
	PT_CHECKF(k.stmts == 1 && k.trips == 1 && k.store_stmts == 1, "%llu statements",
	          (unsigned long long)k.stmts);
	PT_CHECK(prolly_id_equal(&got, &sn[1].id) && epoch == 1);
	PT_CHECK(s.calls == 2 && s.index[0] == 0 && s.size[0] == sizeof(commit) && s.first[0] == 'C');
	PT_CHECK(s.index[1] == 1 && s.size[1] == root.sn.size && s.first[1] == root.buf[0]);
	/* found() stopping the call: its code comes back, nothing more is reported. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, NULL, seen_fn, &s), 99);
	PT_CHECK(s.calls == 1);
	/* The followed id names nothing stored. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 6, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(s.calls == 1 && s.index[0] == 0);
	/* The first object is too short to hold an id at that offset (26 + 32 > 57), or far too
	 * short. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 26, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(s.calls == 1);
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", (size_t)-1, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(s.calls == 1);
	/* An id that just fits (bytes 25..56) but names nothing. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 25, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(s.calls == 1);
	/* A ref naming an object that is not stored: the ref, no object. */
	prolly_id nowhere = mkid(24, 3);
	prolly_ref_update u2 = upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &nowhere);
	PT_CHECK_RC(write1(st, NULL, 0, &u2), 0);
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/p", 5, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(s.calls == 0 && prolly_id_equal(&got, &nowhere));
	/* No such ref: ENOTFOUND, found() not called, still one statement; bad arguments. */
	memset(&s, 0, sizeof(s));
	cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/none", 5, &got, &epoch, seen_fn, &s),
	            PROLLY_ENOTFOUND);
	k = cost_end(st);
	PT_CHECK(s.calls == 0 && k.stmts == 1 && k.trips == 1);
	PT_CHECK_RC(st->get_ref_objects(st, "", 5, &got, NULL, seen_fn, &s), PROLLY_EINVAL);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, NULL, NULL, NULL), PROLLY_EINVAL);
	prolly_store_close(st);
}

/* A handle that reads a branch head it read before tells the store which commit it holds: one
 * statement that reads no node while the branch has not moved, the new commit and root when
 * another handle moved it (src/head_memo.c). */
PT_TEST(head_read_again_reads_no_objects)
{
	const char *schema = new_schema();
	prolly_store *st1 = open_pg(schema, 0, 0, 0, 0), *st2 = open_pg(schema, 0, 0, 0, 0);
	prolly_db *w = NULL, *r = NULL;
	PT_REQUIRE(st1 && st2 && st2->get_ref_objects_known);
	PT_REQUIRE(prolly_db_new(&w, st1, NULL) == 0);
	PT_REQUIRE(prolly_db_new(&r, st2, NULL) == 0);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v1", 2}};
	prolly_id c1, c2;
	PT_REQUIRE(prolly_commit_edits(&c1, w, "m", &e, 1, "one") == 0);

	prolly_commit *c = NULL;
	prolly_pg_counters a, b;
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0); /* the first read: commit and root */
	PT_CHECK(c && prolly_id_equal(&c->id, &c1));
	prolly_commit_free(c);
	prolly_store_pg_counters(st2, &a);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0); /* again: the ref alone */
	prolly_store_pg_counters(st2, &b);
	PT_CHECK(c && prolly_id_equal(&c->id, &c1));
	PT_CHECKF(b.statements - a.statements == 1 && b.rows_read == a.rows_read,
	          "%llu statements, %llu node rows", (unsigned long long)(b.statements - a.statements),
	          (unsigned long long)(b.rows_read - a.rows_read));
	prolly_buf v = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
	PT_CHECK(v.size == 2 && memcmp(v.ptr, "v1", 2) == 0);
	prolly_commit_free(c);

	/* Another handle moves the branch: the next read gets the new commit and its root. */
	e.value.data = "v2";
	PT_REQUIRE(prolly_commit_edits(&c2, w, "m", &e, 1, "two") == 0);
	prolly_store_pg_counters(st2, &a);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0);
	prolly_store_pg_counters(st2, &b);
	PT_CHECK(c && prolly_id_equal(&c->id, &c2) && b.rows_read - a.rows_read == 2);
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
	PT_CHECK(v.size == 2 && memcmp(v.ptr, "v2", 2) == 0);
	prolly_commit_free(c);
	prolly_buf_dispose(&v);
	prolly_close(r);
	prolly_close(w);
}

typedef struct bgr {
	prolly_store *st;
	int rc, calls;
	char err[512];
} bgr;

static void *bg_ref_objects(void *arg)
{
	bgr *b = arg;
	seen s;
	prolly_id got;
	memset(&s, 0, sizeof(s));
	b->rc = b->st->get_ref_objects(b->st, "refs/heads/b", 5, &got, NULL, seen_fn, &s);
	b->calls = s.calls;
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	return NULL;
}

/* A backend killed while the call waits (on a lock held here): the call fails like get_ref
 * does, and the next one reconnects. */
static int count_commits(void *payload, const prolly_commit *c)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

/* A history walk on PostgreSQL reads ahead with get_ancestors: a 300-commit log in 2 statements
 * (256 commits a call), the recursive statement (docs/postgres.md). */
PT_TEST(log_reads_history_ahead)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	prolly_db *db = NULL;
	PT_REQUIRE(st && st->version >= 3 && st->get_ancestors);
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	prolly_id e, head = {{0}}, prev = {{0}};
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 300; i++) {
		prolly_txn *txn = NULL;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		PT_REQUIRE(
		    prolly_commit_create(&head, txn, &e, i ? &prev : NULL, i ? 1 : 0, 1000 + i, "c") == 0);
		PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
		prolly_txn_free(txn);
		prev = head;
	}
	int n = 0;
	cost_begin(st);
	PT_CHECK_RC(prolly_log(db, &head, count_commits, &n), 0);
	cost k = cost_end(st);
	printf("# log of 300 commits: %llu statements, %llu round trips\n", (unsigned long long)k.stmts,
	       (unsigned long long)k.trips);
	PT_CHECK(n == 300);
	PT_CHECKF(k.trips <= 3 && k.stmts <= 3, "%llu round trips", (unsigned long long)k.trips);
	prolly_close(db);
}

PT_TEST(get_ref_objects_broken_connection)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_id v = mkid(25, 1), got;
	prolly_ref_update u = upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
	char q[256];
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".refs IN ACCESS EXCLUSIVE MODE", schema);
	sql1(a, q);
	bgr b;
	memset(&b, 0, sizeof(b));
	b.st = st;
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_ref_objects, &b) == 0);
	long long pid = blocked_pid(a);
	PT_CHECK(pid > 0);
	char k[128];
	snprintf(k, sizeof(k), "SELECT pg_terminate_backend(%lld)", pid);
	sql1(a, k);
	pthread_join(th, NULL);
	sql1(a, "COMMIT");
	PT_CHECK(b.rc == PROLLY_ESTORE && b.calls == 0);
	printf("# get_ref_objects cut off: %s\n", b.err);
	PT_CHECK(strstr(b.err, "get_ref_objects") != NULL);
	seen s;
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/b", 5, &got, NULL, seen_fn, &s), 0);
	PT_CHECK(prolly_id_equal(&got, &v) && s.calls == 0);
	prolly_pg_counters c;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
	PT_CHECK(c.broken >= 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- the engine on top ------------------------------------------------------------------------ */

PT_TEST(altered_row_is_corrupt)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_builder_new(&b, txn) == 0);
	for (int i = 0; i < 2000; i++) {
		char k[32], v[64];
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "value number %d", i);
		PT_CHECK_RC(prolly_builder_add(b, k, strlen(k), v, strlen(v)), 0);
	}
	PT_CHECK_RC(prolly_builder_finish(b, &root), 0);
	prolly_builder_free(b);
	prolly_ref_update u = upd("refs/trees/t", PROLLY_REF_EXPECT_ABSENT, NULL, &root);
	PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	prolly_buf out = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly_get(&out, db, &root, "key000500", 9), 0);
	/* Flip one byte of every leaf in SQL: the schema's constraint refuses it, even to the
	 * owner (a superuser here); without the constraint (damage below SQL, or rows of a schema
	 * older than version 4) the engine's hash check is what catches it. */
	char q[512], flip[512];
	snprintf(flip, sizeof(flip),
	         "UPDATE \"%s\".nodes SET node = set_byte(node, length(node) - 1, "
	         "get_byte(node, length(node) - 1) # 1) WHERE get_byte(node, 5) = 0",
	         schema);
	PT_CHECK(sql_state(a, flip, "23514"));
	snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256", schema);
	PT_CHECK(sql1(a, q) == -1 && sql_state(a, flip, ""));
	prolly_db_cache_clear(db);
	int rc = prolly_get(&out, db, &root, "key000500", 9);
	PT_CHECK(rc == PROLLY_ECORRUPT);
	printf("# altered row: %s\n", prolly_last_error());
	prolly_buf_dispose(&out);
	prolly_close(db);
	PQfinish(a);
}

/* gc with the real engine while two writers commit: values flip between two states, so old
 * nodes come back to life (re-inserted rows that already exist) while the sweep runs. Every
 * branch's head tree must be complete afterwards. */

typedef struct gw {
	prolly_db *db;
	char branch[32];
	_Atomic int *stop;
	int commits, conflicts, errors;
	char err[256];
	unsigned seed;
} gw;

static void *gc_engine_writer(void *arg)
{
	gw *w = arg;
	char keys[40][16];
	prolly_edit e[40];
	uint64_t rs = w->seed, x;
	while (!*w->stop) {
		for (int i = 0; i < 40; i++) {
			x = bench_splitmix64(&rs);
			snprintf(keys[i], sizeof(keys[i]), "k%05u", (unsigned)(x % 3000));
			e[i].op = PROLLY_PUT;
			e[i].key.data = keys[i];
			e[i].key.size = strlen(keys[i]);
			e[i].value.data = (x >> 40) & 1 ? "state-one-value-xxxxxxxx"
			                                : "state-two-value-yyyyyyyy";
			e[i].value.size = 24;
		}
		prolly_id c;
		int rc = prolly_commit_edits(&c, w->db, w->branch, e, 40, "flip");
		if (rc == 0)
			w->commits++;
		else if (rc == PROLLY_ECONFLICT)
			w->conflicts++;
		else {
			if (!w->errors)
				snprintf(w->err, sizeof(w->err), "%d: %s", rc, prolly_last_error());
			w->errors++;
		}
	}
	return NULL;
}

PT_TEST(gc_while_engine_writes)
{
	prolly_store *st = open_pg(new_schema(), 0, 0, 0, 0);
	PT_REQUIRE(st);
	prolly_db *db = NULL;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = 2;
	o.reflog_days = 0; /* retention by commits alone: the reflog would keep every recent head */
	PT_REQUIRE(prolly_db_new(&db, st, &o) == 0);
	_Atomic int stop = 0;
	gw w[2];
	pthread_t th[2];
	/* Both branches start with 3000 keys. */
	for (int b = 0; b < 2; b++) {
		prolly_edit *e = calloc(3000, sizeof(*e));
		char(*k)[16] = calloc(3000, 16);
		PT_REQUIRE(e && k);
		for (int i = 0; i < 3000; i++) {
			snprintf(k[i], 16, "k%05d", i);
			e[i].op = PROLLY_PUT;
			e[i].key.data = k[i];
			e[i].key.size = strlen(k[i]);
			e[i].value.data = "state-one-value-xxxxxxxx";
			e[i].value.size = 24;
		}
		memset(&w[b], 0, sizeof(w[b]));
		snprintf(w[b].branch, sizeof(w[b].branch), "w%d", b);
		prolly_id c;
		PT_CHECK_RC(prolly_commit_edits(&c, db, w[b].branch, e, 3000, "base"), 0);
		free(e);
		free(k);
		w[b].db = db;
		w[b].stop = &stop;
		w[b].seed = (unsigned)b;
	}
	for (int b = 0; b < 2; b++)
		PT_REQUIRE(pthread_create(&th[b], NULL, gc_engine_writer, &w[b]) == 0);
	uint64_t removed = 0;
	int gcs = 0;
	double t0 = now_s();
	for (int i = 0; i < 6; i++) {
		prolly_gc_result r = PROLLY_GC_RESULT_INIT;
		sleep_ms(150);
		int rc = prolly_gc(db, &r);
		PT_CHECKF(rc == 0, "gc %d: %s", i, prolly_last_error());
		if (rc == 0) {
			removed += r.nodes_removed;
			gcs++;
		}
	}
	double secs = now_s() - t0;
	stop = 1;
	for (int b = 0; b < 2; b++) {
		pthread_join(th[b], NULL);
		PT_CHECKF(w[b].errors == 0, "writer %d: %d errors, first %s", b, w[b].errors, w[b].err);
	}
	/* Every head's tree is complete and hashes right, read from the store. */
	prolly_db_cache_clear(db);
	for (int b = 0; b < 2; b++) {
		prolly_id head;
		prolly_commit *c = NULL;
		PT_CHECK_RC(prolly_branch_head(&head, db, w[b].branch), 0);
		PT_CHECK_RC(prolly_commit_read(&c, db, &head), 0);
		if (c) {
			prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
			PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &c->tree, 1), 0);
			PT_CHECK(ts.records == 3000);
			prolly_commit_free(c);
		}
	}
	prolly_pg_counters pc;
	PT_CHECK_RC(prolly_store_pg_counters(st, &pc), 0);
	printf("# %d gcs in %.2f s removed %llu nodes in %llu sweep batches (%llu re-marks) while "
	       "writers committed %d + %d times (%d + %d conflicts)\n",
	       gcs, secs, (unsigned long long)removed, (unsigned long long)pc.gc_batches,
	       (unsigned long long)pc.gc_remarks, w[0].commits, w[1].commits, w[0].conflicts,
	       w[1].conflicts);
	PT_CHECK(w[0].commits > 0 && w[1].commits > 0 && removed > 0);
	prolly_close(db);
}

/* ---- schema ----------------------------------------------------------------------------------- */

PT_TEST(schema_versions_and_no_create)
{
	const char *schema = new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.no_create = 1;
	prolly_store *st = NULL;
	PT_CHECK_RC(prolly_store_pg_open(&st, pg_url, &o), PROLLY_ENOTFOUND);
	PT_CHECK(strstr(prolly_last_error(), "prolly init") != NULL);
	o.no_create = 0;
	PT_REQUIRE(prolly_store_pg_open(&st, pg_url, &o) == 0);
	PT_CHECK_RC(prolly_store_pg_init(st), 0); /* idempotent */
	prolly_store_close(st);
	st = NULL;
	o.no_create = 1;
	PT_REQUIRE(prolly_store_pg_open(&st, pg_url, &o) == 0);
	prolly_store_close(st);
	st = NULL;
	PGconn *a = admin();
	PT_REQUIRE(a);
	char q[256];
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 5 WHERE key = 'schema_version'", schema);
	sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_open(&st, pg_url, &o), PROLLY_EVERSION);
	printf("# newer schema: %s\n", prolly_last_error());
	PQfinish(a);
}

/* Turns a fresh schema back into a version-1 one, as an older library created it. */
static void downgrade(PGconn *a, const char *schema)
{
	char q[512];
	snprintf(q, sizeof(q),
	         "DROP FUNCTION \"%s\".prolly_write(bigint, boolean, bytea[], bytea[], bytea[], "
	         "bytea[], int[], bytea[], boolean[], bytea[]); UPDATE \"%s\".meta SET value = 1 "
	         "WHERE key = 'schema_version'; ALTER TABLE \"%s\".nodes DROP CONSTRAINT IF EXISTS "
	         "nodes_id_is_sha256",
	         schema, schema, schema);
	sql1(a, q);
}

static prolly_store *open_opt(const char *conninfo, const char *schema, int no_create)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.no_create = no_create;
	prolly_store *st = NULL;
	if (prolly_store_pg_open(&st, conninfo, &o)) {
		fprintf(stderr, "  open failed: %s\n", prolly_last_error());
		return NULL;
	}
	return st;
}

/* One node and a ref move from *head (NULL: absent) to that node; returns the statements. */
static uint64_t commit_one(prolly_store *st, unsigned tag, unsigned i, prolly_id *head, int *rc)
{
	tn t;
	tn_make(&t, tag, i);
	prolly_ref_update u = upd(
	    "refs/heads/m", head ? PROLLY_REF_EXPECT_VALUE : PROLLY_REF_EXPECT_ABSENT, head, &t.sn.id);
	cost_begin(st);
	*rc = write1(st, &t.sn, 1, &u);
	cost k = cost_end(st);
	if (*rc == 0 && head)
		*head = t.sn.id;
	return k.stmts;
}

PT_TEST(schema_v1_keeps_working_and_migrates)
{
	const char *schema = new_schema();
	PGconn *a = admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pg_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(schema_version(a, schema) == 4);
	prolly_store_close(st);
	downgrade(a, schema);
	PT_REQUIRE(schema_version(a, schema) == 1);

	/* no_create: used as it is, through the version-1 pipeline. */
	st = open_opt(pg_url, schema, 1);
	PT_REQUIRE(st);
	PT_CHECK(schema_version(a, schema) == 1);
	prolly_id head = tn_id(26, 0);
	int rc;
	uint64_t n = commit_one(st, 26, 0, NULL, &rc);
	PT_CHECK_RC(rc, 0);
	/* BEGIN, prolly_write_begin, INSERT, prolly_ref_cas, prolly_write_finish, COMMIT */
	PT_CHECKF(n == 6, "%llu statements", (unsigned long long)n);
	n = commit_one(st, 26, 1, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECK(n == 6);
	prolly_id wrong = mkid(26, 77);
	n = commit_one(st, 26, 2, &wrong, &rc);
	PT_CHECK_RC(rc, PROLLY_ECONFLICT);
	PT_CHECK(n == 7); /* and a ROLLBACK */
	seen s;
	prolly_id got;
	memset(&s, 0, sizeof(s));
	cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/m", 5, &got, NULL, seen_fn, &s), 0);
	cost k = cost_end(st);
	PT_CHECK(k.stmts == 1 && s.calls == 1 && prolly_id_equal(&got, &head));

	/* init migrates, and this store switches to one-statement writes. */
	PT_CHECK_RC(prolly_store_pg_init(st), 0);
	PT_CHECK(schema_version(a, schema) == 4);
	n = commit_one(st, 26, 3, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECKF(n == 1, "%llu statements after init", (unsigned long long)n);
	PT_CHECK_RC(prolly_store_pg_init(st), 0); /* idempotent */
	PT_CHECK(schema_version(a, schema) == 4);
	prolly_store_close(st);

	/* An open that may create migrates too. */
	downgrade(a, schema);
	st = open_opt(pg_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(schema_version(a, schema) == 4);
	n = commit_one(st, 26, 4, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECK(n == 1);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/m", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &head));
	prolly_store_close(st);

	/* A version-2 schema (prolly_write there, the version row at 2): used as it is with
	 * no_create, one statement a write; an open that may create brings it to version 3. */
	char q[256];
	snprintf(q, sizeof(q),
	         "UPDATE \"%s\".meta SET value = 2 WHERE key = 'schema_version'; ALTER TABLE "
	         "\"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256",
	         schema, schema);
	sql1(a, q);
	for (int no_create = 1; no_create >= 0; no_create--) {
		st = open_opt(pg_url, schema, no_create);
		PT_REQUIRE(st);
		PT_CHECK(schema_version(a, schema) == (no_create ? 2 : 4));
		n = commit_one(st, 26, 6 - (unsigned)no_create, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 1);
		prolly_store_close(st);
	}
	PQfinish(a);
}

/* ---- what the database checks, and who may do what ------------------------------------------- */

/*
 * A row under an id that a later write will produce, holding other bytes, is refused by the
 * schema (nodes_id_is_sha256), whoever inserts it: here the owner, a superuser. Without the
 * constraint the junk stayed (the write's ON CONFLICT DO NOTHING kept it) and every later read
 * of that node failed its hash check.
 */
PT_TEST(poisoned_node_refused)
{
	const char *schema = new_schema();
	prolly_store *st = open_pg(schema, 0, 0, 0, 0);
	PGconn *a = admin();
	PT_REQUIRE(st && a);
	tn t;
	tn_make(&t, 40, 1);
	char hex[PROLLY_ID_HEX_SIZE], q[512];
	prolly_id_to_hex(hex, &t.sn.id);
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes (id, node) VALUES ('\\x%s', 'junk')", schema,
	         hex);
	PT_CHECK(sql_state(a, q, "23514"));
	/* Nor through the store: a node whose bytes are not those of its id. */
	tn junk;
	tn_make(&junk, 40, 2);
	junk.sn.id = t.sn.id;
	prolly_ref_update u = upd("refs/heads/p", PROLLY_REF_EXPECT_ABSENT, NULL, &t.sn.id);
	PT_CHECK_RC(write1(st, &junk.sn, 1, &u), PROLLY_ECORRUPT);
	printf("# poisoned write: %s\n", prolly_last_error());
	PT_CHECK(present(st, &t.sn.id, 1) == 0);
	/* The honest write that follows lands, and its node reads back as written. */
	PT_CHECK_RC(write1(st, &t.sn, 1, &u), 0);
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes WHERE id = sha256(node)", schema);
	PT_CHECK(sql1(a, q) == 1);
	/* Not even an UPDATE of the owner may change a stored node's bytes. */
	snprintf(q, sizeof(q), "UPDATE \"%s\".nodes SET node = node || '\\x00'::bytea", schema);
	PT_CHECK(sql_state(a, q, "23514"));
	prolly_store_close(st);
	PQfinish(a);
}

/* Migrating a version-3 schema that holds junk: the open adds the constraint (in force at once)
 * and leaves the old rows; prolly_store_pg_init reports them (PROLLY_ECORRUPT) until they are
 * removed, then validates. */
PT_TEST(migration_validates_old_rows)
{
	const char *schema = new_schema();
	PGconn *a = admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pg_url, schema, 0);
	PT_REQUIRE(st);
	prolly_store_close(st);
	char q[512];
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256; UPDATE \"%s\".meta SET "
	         "value = 3 WHERE key = 'schema_version'; INSERT INTO \"%s\".nodes VALUES "
	         "(sha256('a'), 'not a'), (sha256('b'), 'b')",
	         schema, schema, schema);
	PT_CHECK(sql_state(a, q, ""));
	st = open_opt(pg_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(schema_version(a, schema) == 4);
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_constraint WHERE conname = 'nodes_id_is_sha256' AND "
	         "conrelid = '\"%s\".nodes'::regclass AND %s convalidated",
	         schema, "NOT");
	PT_CHECK(sql1(a, q) == 1);
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes VALUES (sha256('c'), 'not c')", schema);
	PT_CHECK(sql_state(a, q, "23514")); /* in force for new rows before validation */
	PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ECORRUPT);
	printf("# %s\n", prolly_last_error());
	snprintf(q, sizeof(q), "DELETE FROM \"%s\".nodes WHERE id <> sha256(node)", schema);
	PT_CHECK(sql_state(a, q, ""));
	PT_CHECK_RC(prolly_store_pg_init(st), 0);
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_constraint WHERE conname = 'nodes_id_is_sha256' AND "
	         "conrelid = '\"%s\".nodes'::regclass AND convalidated",
	         schema);
	PT_CHECK(sql1(a, q) == 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* The migration's table lock waits 5 s at most: a long transaction on nodes (as a gc's snapshot
 * is) makes it give up instead of holding every reader and writer back behind it. An open goes
 * on with the old schema; prolly_store_pg_init fails, and succeeds once the table is free. */
PT_TEST(migration_lock_bounded)
{
	const char *schema = new_schema();
	PGconn *a = admin(), *b = admin();
	PT_REQUIRE(a && b);
	prolly_store *st = open_opt(pg_url, schema, 0);
	PT_REQUIRE(st);
	prolly_store_close(st);
	char q[512];
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256; UPDATE \"%s\".meta SET "
	         "value = 3 WHERE key = 'schema_version'",
	         schema, schema);
	PT_CHECK(sql_state(a, q, ""));
	snprintf(q, sizeof(q), "BEGIN; SELECT count(*) FROM \"%s\".nodes", schema);
	sql1(b, q); /* holds ACCESS SHARE on nodes until it ends */
	double t0 = now_s();
	st = open_opt(pg_url, schema, 0);
	double open_s = now_s() - t0;
	PT_CHECK(st != NULL);
	PT_CHECKF(open_s > 4.5 && open_s < 30, "open took %.1f s", open_s);
	PT_CHECK(schema_version(a, schema) == 3);
	/* The store works on the old schema. */
	if (st) {
		int rc;
		PT_CHECK(commit_one(st, 42, 0, NULL, &rc) == 1 && rc == 0);
		PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ESTORE);
		printf("# init while the table is in use: %s\n", prolly_last_error());
		sql1(b, "COMMIT");
		PT_CHECK_RC(prolly_store_pg_init(st), 0);
		PT_CHECK(schema_version(a, schema) == 4);
		prolly_store_close(st);
	}
	printf("# open while the table was in use took %.1f s and kept version 3\n", open_s);
	PQfinish(b);
	PQfinish(a);
}

/* tmpl with '@' replaced by the quoted schema name and '~' by role. */
static void subst_sr(char *out, size_t cap, const char *tmpl, const char *schema, const char *role)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < cap; p++) {
		if (*p == '@')
			o += (size_t)snprintf(out + o, cap - o, "\"%s\"", schema);
		else if (*p == '~')
			o += (size_t)snprintf(out + o, cap - o, "%s", role);
		else
			out[o++] = *p;
		if (o >= cap)
			o = cap - 1;
	}
	out[o] = 0;
}

/* A login role with a random password and the grants of tmpl ('@' the schema, '~' the role);
 * its connection string in conninfo. 0 on success. */
static int make_role(PGconn *a, const char *role, const char *schema, const char *tmpl,
                     char *conninfo, size_t cap)
{
	char pw[33], q[2048], g[1536];
	uint64_t rs = (uint64_t)(now_s() * 1e6) ^ (uint64_t)getpid() << 24 ^ (uint64_t)strlen(role), x;
	for (int i = 0; i < 32; i++) {
		x = bench_splitmix64(&rs);
		pw[i] = "abcdefghijklmnopqrstuvwxyz012345"[x % 32];
	}
	pw[32] = 0;
	subst_sr(g, sizeof(g), tmpl, schema, role);
	snprintf(q, sizeof(q), "CREATE ROLE %s LOGIN PASSWORD '%s'; %s", role, pw, g);
	if (!sql_state(a, q, ""))
		return -1;
	snprintf(conninfo, cap, "host=%s port=%s dbname=%s user=%s password=%s", PQhost(a), PQport(a),
	         PQdb(a), role, pw);
	return 0;
}

static void drop_role(PGconn *a, const char *role)
{
	char q[256];
	snprintf(q, sizeof(q), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	sql1(a, q);
}

/* The grants of docs/postgres.md ("Roles and grants"), exactly. */
#define READER_GRANTS "GRANT USAGE ON SCHEMA @ TO ~; GRANT SELECT ON @.nodes, @.refs, @.meta TO ~; "
#define WRITER_GRANTS                                                                              \
	"GRANT USAGE ON SCHEMA @ TO ~; GRANT SELECT, INSERT ON @.nodes TO ~; "                         \
	"GRANT SELECT, INSERT, UPDATE, DELETE ON @.refs TO ~; GRANT SELECT ON @.meta TO ~; "
#define GC_GRANTS WRITER_GRANTS "GRANT DELETE ON @.nodes TO ~; GRANT UPDATE ON @.meta TO ~; "

static int put1(prolly_db *db, const char *branch, const char *key, const char *value)
{
	prolly_edit e = tm_put(key, value);
	prolly_id c;
	return prolly_commit_edits(&c, db, branch, &e, 1, "roles");
}

static prolly_db *open_db_as(const char *conninfo, const char *schema)
{
	prolly_store *st = open_opt(conninfo, schema, 1);
	prolly_db *db = NULL;
	if (st && prolly_db_new(&db, st, NULL)) {
		fprintf(stderr, "  prolly_db_new: %s\n", prolly_last_error());
		return NULL;
	}
	return db;
}

/* The setup of a role test: a schema its owner created, the admin connection, and login roles
 * prolly_TAG_PID with the grants of docs/postgres.md (roles_begin), dropped by roles_end. */
typedef struct roles {
	const char *schema;
	PGconn *admin;
	int n;
	char name[3][64];
	char conninfo[3][600];
} roles;

/* 1 when the roles exist and the first can log in; 0 when that is not possible here (a skip,
 * or a failed check); roles_end in either case. */
static int roles_begin(roles *r, int n, const char *const *tags, const char *const *grants)
{
	memset(r, 0, sizeof(*r));
	r->schema = new_schema();
	r->admin = admin();
	PT_CHECK(r->admin);
	if (!r->admin)
		return 0;
	prolly_store *own = open_opt(pg_url, r->schema, 0);
	PT_CHECK(own);
	if (!own)
		return 0;
	prolly_store_close(own);
	for (; r->n < n; r->n++) {
		snprintf(r->name[r->n], sizeof(r->name[0]), "prolly_%s_%d", tags[r->n], (int)getpid());
		int rc = make_role(r->admin, r->name[r->n], r->schema, grants[r->n], r->conninfo[r->n],
		                   sizeof(r->conninfo[0]));
		PT_CHECK(rc == 0);
		if (rc)
			return 0;
	}
	PGconn *probe = PQconnectdb(r->conninfo[0]);
	int can_login = PQstatus(probe) == CONNECTION_OK;
	if (!can_login)
		skip("this server does not let a new role log in with a password from here: %s",
		     PQerrorMessage(probe));
	PQfinish(probe);
	return can_login;
}

static void roles_end(roles *r)
{
	for (int i = 0; i < r->n; i++)
		drop_role(r->admin, r->name[i]);
	PQfinish(r->admin);
}

/*
 * Three roles with exactly the documented grants on a schema the owner created: the writer
 * commits, branches and merges, but cannot store a node whose bytes are not its id's, cannot
 * change meta (so cannot set schema_version and stop every client) and cannot run gc; the reader
 * reads and cannot write; the gc role runs gc.
 */
PT_TEST(roles_least_grants)
{
	static const char *const tags[] = {"wr", "rd", "gc"};
	static const char *const grants[] = {WRITER_GRANTS, READER_GRANTS, GC_GRANTS};
	roles r;
	if (!roles_begin(&r, 3, tags, grants))
		goto out;
	const char *schema = r.schema, *ci_wr = r.conninfo[0], *ci_rd = r.conninfo[1],
	           *ci_gc = r.conninfo[2];
	PGconn *a = r.admin, *w = PQconnectdb(ci_wr);
	PT_REQUIRE(PQstatus(w) == CONNECTION_OK);
	PQsetNoticeProcessor(w, quiet, NULL);

	/* The writer: commits, a branch, a merge. */
	prolly_db *db = open_db_as(ci_wr, schema);
	PT_REQUIRE(db);
	PT_CHECK_RC(put1(db, "main", "a", "1"), 0);
	prolly_id head;
	PT_CHECK_RC(prolly_branch_head(&head, db, "main"), 0);
	PT_CHECK_RC(prolly_branch_create(db, "dev", &head), 0);
	PT_CHECK_RC(put1(db, "dev", "b", "2"), 0);
	PT_CHECK_RC(put1(db, "main", "c", "3"), 0);
	prolly_id merged;
	PT_CHECK_RC(prolly_merge_branches(&merged, NULL, db, "main", "dev", NULL, "merge dev"), 0);
	PT_CHECK_RC(prolly_branch_delete(db, "dev"), 0);
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &gr), PROLLY_ESTORE); /* no UPDATE on meta, no DELETE on nodes */
	printf("# gc as the writer: %s\n", prolly_last_error());
	prolly_close(db);

	/* ... but no junk under a real id, and no say over meta. */
	char q[512];
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes (id, node) VALUES (sha256('x'), 'junk')",
	         schema);
	PT_CHECK(sql_state(w, q, "23514"));
	prolly_store *ws = open_opt(ci_wr, schema, 1);
	PT_REQUIRE(ws);
	tn t, junk;
	tn_make(&t, 41, 1);
	tn_make(&junk, 41, 2);
	junk.sn.id = t.sn.id;
	PT_CHECK_RC(write1(ws, &junk.sn, 1, NULL), PROLLY_ECORRUPT);
	PT_CHECK(present(ws, &t.sn.id, 1) == 0);
	prolly_store_close(ws);
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 99 WHERE key = 'schema_version'",
	         schema);
	PT_CHECK(sql_state(w, q, "42501"));
	PT_CHECK(schema_version(a, schema) == 4);

	/* The reader: reads, cannot write. */
	db = open_db_as(ci_rd, schema);
	PT_REQUIRE(db);
	prolly_commit *c = NULL;
	PT_CHECK_RC(prolly_branch_commit(&c, db, "main"), 0);
	if (c) {
		prolly_buf out = PROLLY_BUF_INIT;
		PT_CHECK_RC(prolly_get(&out, db, &c->tree, "b", 1), 0);
		PT_CHECK(out.size == 1 && out.ptr[0] == '2');
		prolly_buf_dispose(&out);
		prolly_commit_free(c);
	}
	PT_CHECK_RC(put1(db, "main", "d", "4"), PROLLY_ESTORE);
	printf("# write as the reader: %s\n", prolly_last_error());
	prolly_close(db);

	/* The gc role: gc runs (and the writer's branch stays whole). */
	db = open_db_as(ci_gc, schema);
	PT_REQUIRE(db);
	prolly_gc_result_init(&gr, PROLLY_GC_RESULT_VERSION);
	PT_CHECK_RC(prolly_gc(db, &gr), 0);
	PT_CHECK_RC(put1(db, "main", "e", "5"), 0);
	prolly_close(db);
	PQfinish(w);
out:
	roles_end(&r);
}

/* A writer with exactly the grants of docs/postgres.md on a schema turned back into version 1:
 * an open without no_create cannot migrate (no CREATE on the schema) and keeps the old
 * pipeline. */
PT_TEST(runtime_role_least_privileges)
{
	static const char *const tags[] = {"rt"};
	static const char *const grants[] = {WRITER_GRANTS};
	roles r;
	if (!roles_begin(&r, 1, tags, grants)) {
		roles_end(&r);
		return;
	}
	const char *schema = r.schema, *conninfo = r.conninfo[0];
	PGconn *a = r.admin;
	prolly_store *st = open_opt(conninfo, schema, 1);
	PT_CHECK(st != NULL);
	prolly_id head = tn_id(27, 0), got;
	int rc;
	if (st) {
		uint64_t n = commit_one(st, 27, 0, NULL, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 1);
		PT_CHECK_RC(st->get_ref(st, "refs/heads/m", &got, NULL), 0);
		PT_CHECK(prolly_id_equal(&got, &head));
		prolly_store_close(st);
	}
	downgrade(a, schema);
	st = open_opt(conninfo, schema, 0);
	PT_CHECK(st != NULL);
	PT_CHECK(schema_version(a, schema) == 1);
	if (st) {
		uint64_t n = commit_one(st, 27, 1, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 6);
		PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ESTORE); /* no right to migrate */
		printf("# init as the runtime role: %s\n", prolly_last_error());
		n = commit_one(st, 27, 2, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 6);
		prolly_store_close(st);
	}
	roles_end(&r);
}

/* ---- passwords -------------------------------------------------------------------------------- */

static void no_secret(const char *conninfo, const char *secret, int want)
{
	prolly_store *st = NULL;
	int rc = prolly_store_pg_open(&st, conninfo, NULL);
	PT_CHECKF(rc == want, "rc %d want %d: %s", rc, want, prolly_last_error());
	PT_CHECKF(strstr(prolly_last_error(), secret) == NULL, "secret leaked: %s",
	          prolly_last_error());
	if (rc == 0)
		prolly_store_close(st);
	else
		printf("# %s\n", prolly_last_error());
}

PT_TEST(password_never_in_messages)
{
	no_secret("postgresql://someone:Sup3rS3cret@127.0.0.1:1/prolly?connect_timeout=2",
	          "Sup3rS3cret", PROLLY_ESTORE);
	no_secret("host=127.0.0.1 port=1 user=x password=Sup3rS3cret dbname=prolly connect_timeout=2",
	          "Sup3rS3cret", PROLLY_ESTORE);
	no_secret("postgresql://someone:Sup3rS3cret@127.0.0.1:notaport/prolly", "Sup3rS3cret",
	          PROLLY_ESTORE);
	no_secret("postgresql://someone:Sup3rS3cret@[::1/prolly", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 password='Sup3r S3cret' bogus=1", "S3cret", PROLLY_EINVAL);
	/* libpq quotes a piece of a connection string it cannot parse: a misspelled keyword, a
	 * percent-encoding, the second word of an unquoted password. */
	no_secret("host=127.0.0.1 port=1 PASSWORD=Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 passwd=Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("postgresql://u:Sup3r%zzS3cret@127.0.0.1:1/db", "S3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 password=Sup3r S3cret", "S3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 password Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 connect_timeout=2 sslpassword=Sup3rS3cret", "Sup3rS3cret",
	          PROLLY_ESTORE);
	const char *pw = getenv("PROLLY_PG_PW_URL");
	if (pw) {
		/* Right user, wrong password: authentication fails. */
		char bad[512];
		const char *at = strchr(pw + strlen("postgresql://"), '@');
		const char *colon = strchr(pw + strlen("postgresql://"), ':');
		PT_REQUIRE(at && colon && colon < at);
		snprintf(bad, sizeof(bad), "%.*sWr0ngPassw0rd%s", (int)(colon + 1 - pw), pw, at);
		no_secret(bad, "Wr0ngPassw0rd", PROLLY_ESTORE);
		/* The right one: works; a killed backend's message still hides it. */
		char secret[128];
		snprintf(secret, sizeof(secret), "%.*s", (int)(at - colon - 1), colon + 1);
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		o.schema = new_schema();
		prolly_store *st = NULL;
		PGconn *a = admin();
		PT_REQUIRE(a);
		char q[256];
		snprintf(q, sizeof(q), "CREATE SCHEMA \"%s\" AUTHORIZATION prolly_pw", o.schema);
		sql1(a, q);
		PT_CHECKF(prolly_store_pg_open(&st, pw, &o) == 0, "%s", prolly_last_error());
		if (st) {
			prolly_id v = mkid(8, 1), got;
			prolly_ref_update u = upd("refs/heads/pw", PROLLY_REF_EXPECT_ANY, NULL, &v);
			PT_CHECK_RC(write1(st, NULL, 0, &u), 0);
			sql1(a, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = "
			        "'prolly_pw'");
			sleep_ms(100);
			/* Either noticed before use (and reconnected) or failed: never the password. */
			int rc = st->get_ref(st, "refs/heads/pw", &got, NULL);
			PT_CHECK(rc == 0 || rc == PROLLY_ESTORE);
			PT_CHECK(strstr(prolly_last_error(), secret) == NULL);
			prolly_store_close(st);
		}
		PQfinish(a);
	} else {
		skip("PROLLY_PG_PW_URL unset (a server not started by scripts/pg-cluster.sh): no "
		     "password authentication tried, only the URLs above");
	}
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
	PGconn *a = admin();
	if (!a)
		return 1;
	printf("# %ld records, keys 'k%%012ld' (13 B), values %s\n", records,
	       binary ? "24 pseudo-random bytes" : "24 pseudo-random hex digits");
	printf("# %-26s %9s %8s %10s %10s %11s %10s\n", "node column", "build s", "nodes", "node MiB",
	       "table MiB", "read all s", "10k rand s");
	for (int m = 0; m < 3; m++) {
		const char *schema = new_schema();
		prolly_store *st = open_pg(schema, 0, 0, 0, 0);
		if (!st)
			return 1;
		char q[512];
		snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes ALTER COLUMN node %s", schema,
		         modes[m][1]);
		sql1(a, q);
		prolly_db *db = NULL;
		prolly_options o;
		prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
		if (prolly_db_new(&db, st, &o))
			return 1;
		double t0 = now_s();
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
		prolly_ref_update u = upd("refs/trees/bench", PROLLY_REF_EXPECT_ANY, NULL, &root);
		if (prolly_txn_set_ref(txn, &u) || prolly_txn_commit(txn, NULL, 0)) {
			fprintf(stderr, "%s\n", prolly_last_error());
			return 1;
		}
		prolly_txn_free(txn);
		double build = now_s() - t0;
		uint64_t nodes = 0, bytes = 0;
		st->stat(st, &nodes, &bytes);
		snprintf(q, sizeof(q), "SELECT pg_total_relation_size('\"%s\".nodes')", schema);
		long long tsize = sql1(a, q);
		/* All ids, then every node in one get_nodes call; then 10k random ones. */
		snprintf(q, sizeof(q), "SELECT id FROM \"%s\".nodes", schema);
		PGresult *r = PQexecParams(a, q, 0, NULL, NULL, NULL, NULL, 1);
		size_t n = (size_t)PQntuples(r);
		prolly_id *ids = malloc((n ? n : 1) * sizeof(*ids));
		for (size_t i = 0; i < n; i++)
			memcpy(ids[i].bytes, PQgetvalue(r, (int)i, 0), PROLLY_ID_SIZE);
		PQclear(r);
		uint64_t got = 0;
		t0 = now_s();
		st->get_nodes(st, ids, n, sink_fn, &got);
		double read_all = now_s() - t0;
		prolly_id *rnd = malloc(10000 * sizeof(*rnd));
		for (size_t i = 0; i < 10000; i++) {
			x = bench_splitmix64(&rs);
			rnd[i] = ids[x % n];
		}
		t0 = now_s();
		st->get_nodes(st, rnd, 10000, sink_fn, &got);
		double read_rnd = now_s() - t0;
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

/* ---- main ------------------------------------------------------------------------------------- */

static int start_cluster(void)
{
	const char *script = getenv("PROLLY_PG_SCRIPT");
	char cmd[1024], line[1024];
	if (!script)
		script = access("scripts/pg-cluster.sh", X_OK) == 0 ? "scripts/pg-cluster.sh"
		                                                    : "../scripts/pg-cluster.sh";
	snprintf(cmd, sizeof(cmd), "%s start", script);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *k = line;
		if (strncmp(line, "export ", 7) != 0 || !eq)
			continue;
		k += 7;
		*eq = 0;
		char *v = eq + 1;
		size_t n = strlen(v);
		while (n && (v[n - 1] == '\n' || v[n - 1] == '\''))
			v[--n] = 0;
		if (*v == '\'')
			v++;
		setenv(k, v, 1);
		if (strcmp(k, "PROLLY_PG_DIR") == 0)
			snprintf(cluster_dir, sizeof(cluster_dir), "%s", v);
	}
	int rc = pclose(f);
	if (rc != 0 || !getenv("PROLLY_PG_URL"))
		return -1;
	/* Remember where the script is for stopping. */
	setenv("PROLLY_PG_SCRIPT_USED", script, 1);
	return 0;
}

static volatile pid_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static void drop_schemas(void)
{
	PGconn *a = admin();
	if (!a)
		return;
	for (int i = 0; i < n_schemas; i++) {
		char q[128];
		snprintf(q, sizeof(q), "DROP SCHEMA IF EXISTS \"%s\" CASCADE", schemas[i]);
		PGresult *r = PQexec(a, q);
		PQclear(r);
	}
	PQfinish(a);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	if (!getenv("PROLLY_PG_URL")) {
		double t0 = now_s();
		if (start_cluster()) {
			printf("not ok 1 - could not start a PostgreSQL cluster with scripts/pg-cluster.sh "
			       "(set PROLLY_PG_URL to use an existing server)\n# 0 passed, 1 failed\n");
			return 1;
		}
		printf("# started a throwaway cluster in %s (%.1f s)\n", cluster_dir, now_s() - t0);
	} else {
		/* A server we do not own: never restart it. */
		if (!getenv("PROLLY_PG_DIR"))
			unsetenv("PROLLY_PG_BIN");
	}
	if (cluster_dir[0]) {
		/* Run the cases in a child, so that the cluster is stopped whatever happens to them. */
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			printf("not ok 1 - fork failed\n");
			failed = 1;
			goto out;
		}
		if (pid > 0) {
			/* A SIGTERM (test timeouts), SIGINT or SIGHUP ends the cases, not this process: it
			 * still stops the cluster. */
			struct sigaction sa;
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = forward_signal;
			sigemptyset(&sa.sa_mask);
			child_pid = pid;
			sigaction(SIGTERM, &sa, NULL);
			sigaction(SIGINT, &sa, NULL);
			sigaction(SIGHUP, &sa, NULL);
			int status = 0;
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			char cmd[1200];
			snprintf(cmd, sizeof(cmd), "%s stop '%s'", getenv("PROLLY_PG_SCRIPT_USED"),
			         cluster_dir);
			if (system(cmd) != 0)
				printf("# could not stop the cluster in %s\n", cluster_dir);
			if (WIFSIGNALED(status)) {
				printf("not ok - the test process died of signal %d\n", WTERMSIG(status));
				return 1;
			}
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		}
		cluster_dir[0] = 0; /* the child leaves stopping to the parent */
	}
	pg_url = getenv("PROLLY_PG_URL");
	PGconn *probe = admin();
	if (!probe) {
		printf("not ok 1 - cannot connect to $PROLLY_PG_URL\n# 0 passed, 1 failed\n");
		failed = 1;
		goto out;
	}
	PQfinish(probe);

	if (only && strcmp(only, "--storage") == 0) {
		failed = storage_bench(argc > 2 ? atol(argv[2]) : 1000000,
		                       argc > 3 && strcmp(argv[3], "binary") == 0);
		drop_schemas();
		goto out;
	}
	if (!only || strstr("conformance postgres", only))
		store_conformance_run("postgres", open_fresh, NULL, &passed, &failed);
	for (int i = 0; i < pt_ncases; i++) {
		if (only && !strstr(pt_cases[i].name, only))
			continue;
		pt_failed_now = 0;
		skip_why[0] = 0;
		pt_cases[i].fn();
		int n = passed + failed + 1;
		if (pt_failed_now) {
			failed++;
			printf("not ok %d - %s%s%s\n", n, pt_cases[i].name, skip_why[0] ? " # SKIP " : "",
			       skip_why);
		} else {
			passed++;
			printf("ok %d - %s%s%s\n", n, pt_cases[i].name, skip_why[0] ? " # SKIP " : "",
			       skip_why);
		}
		fflush(stdout);
	}
	drop_schemas();
out:
	if (cluster_dir[0]) {
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "%s stop '%s'", getenv("PROLLY_PG_SCRIPT_USED"), cluster_dir);
		if (system(cmd) != 0)
			printf("# could not stop the cluster in %s\n", cluster_dir);
	}
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
