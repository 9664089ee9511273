/*
 * pgt.c - what the PostgreSQL store's test programs share (pgt.h).
 */
#include "pgt.h"

#include "model.h"
#include "store_conformance.h"

#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *pgt_url;

#define MAX_SCHEMAS 256

static int schema_seq;
static char schemas[MAX_SCHEMAS][64];
static int n_schemas;
static char skip_why[512];
static int skip_failed; /* a skip under CI=true */

/* ---- time ----------------------------------------------------------------------------------- */

double pgt_now_s(void)
{
	return (double)prolly__mono_ns() / 1e9;
}

void pgt_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void pgt_skip(const char *fmt, ...)
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
		skip_failed = 1;
	}
}

/* ---- SQL ------------------------------------------------------------------------------------ */

const char *pgt_new_schema(void)
{
	if (n_schemas >= MAX_SCHEMAS)
		return "prolly_t_overflow";
	snprintf(schemas[n_schemas], sizeof(schemas[0]), "prolly_t_%d_%d", (int)getpid(), ++schema_seq);
	return schemas[n_schemas++];
}

void pgt_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

PGconn *pgt_admin(void)
{
	PGconn *c = PQconnectdb(pgt_url);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "  admin connection failed: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, pgt_quiet, NULL);
	return c;
}

long long pgt_sql1(PGconn *c, const char *sql)
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

long long pgt_pss_calls(PGconn *c, const char *like)
{
	char q[512];
	snprintf(q, sizeof(q),
	         "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON "
	         "d.oid = s.dbid WHERE d.datname = current_database() AND s.query NOT LIKE "
	         "'%%pg_stat_statements%%' AND s.query LIKE '%s'",
	         like);
	return pgt_sql1(c, q);
}

void pgt_sql_text(PGconn *c, const char *sql, char *out, size_t size)
{
	PGresult *r = PQexec(c, sql);
	out[0] = 0;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		snprintf(out, size, "%s", PQgetvalue(r, 0, 0));
	else if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fprintf(stderr, "  sql failed: %s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
}

int pgt_sql_state(PGconn *c, const char *sql, const char *state)
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

long long pgt_schema_version(PGconn *a, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q), "SELECT value FROM \"%s\".meta WHERE key = 'schema_version'", schema);
	return pgt_sql1(a, q);
}

long long pgt_node_count(PGconn *a, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes", schema);
	return pgt_sql1(a, q);
}

long long pgt_blocked_pid(PGconn *a)
{
	for (int i = 0; i < 100; i++) {
		long long pid = pgt_sql1(a, "SELECT pid FROM pg_stat_activity WHERE datname = "
		                            "current_database() AND wait_event_type = 'Lock' LIMIT 1");
		if (pid > 0)
			return pid;
		pgt_sleep_ms(20);
	}
	return -1;
}

int pgt_pg_ctl(const char *args)
{
	const char *dir = getenv("PROLLY_PG_DIR"), *bin = getenv("PROLLY_PG_BIN");
	char cmd[1024];
	if (!dir || !bin)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s%s/pg_ctl -D %s/data %s -w -t 60 >/dev/null 2>&1",
	         getuid() == 0 ? "runuser -u postgres -- " : "", bin, dir, args);
	return system(cmd);
}

/* ---- stores --------------------------------------------------------------------------------- */

prolly_store *pgt_open(const char *schema, size_t batch_items, size_t read_chunk,
                       unsigned pool_size, unsigned timeout_ms)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.batch_items = batch_items;
	o.read_chunk = read_chunk;
	o.pool_size = pool_size;
	o.pool_timeout_ms = timeout_ms;
	prolly_store *st = NULL;
	if (prolly_store_pg_open(&st, pgt_url, &o)) {
		fprintf(stderr, "  open failed: %s\n", prolly_last_error());
		return NULL;
	}
	return st;
}

prolly_store *pgt_open_fresh(void *ctx)
{
	(void)ctx;
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = st ? pgt_admin() : NULL;
	char q[256];
	snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256", schema);
	if (!a || pgt_sql1(a, q) != -1 || PQstatus(a) != CONNECTION_OK) {
		prolly_store_close(st);
		st = NULL;
	}
	PQfinish(a);
	return st;
}

/* ---- nodes and writes ----------------------------------------------------------------------- */

prolly_id pgt_mkid(unsigned tag, unsigned i)
{
	prolly_id id;
	for (int k = 0; k < PROLLY_ID_SIZE; k++)
		id.bytes[k] = (unsigned char)(tag * 131 + i * 31 + (unsigned)k * 7 + (k == 0 ? i : 0));
	id.bytes[1] = (unsigned char)tag;
	id.bytes[2] = (unsigned char)i;
	return id;
}

void pgt_tn_make(pgt_tn *t, unsigned tag, unsigned i)
{
	for (size_t k = 0; k < sizeof(t->buf); k++)
		t->buf[k] = (unsigned char)(tag + i * 3 + k);
	t->sn.data = t->buf;
	t->sn.size = 100 + i % 150;
	SHA256(t->buf, t->sn.size, t->sn.id.bytes);
}

prolly_id pgt_tn_id(unsigned tag, unsigned i)
{
	pgt_tn t;
	pgt_tn_make(&t, tag, i);
	return t.sn.id;
}

prolly_ref_update pgt_upd(const char *name, prolly_ref_expect ex, const prolly_id *expected,
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

int pgt_write1(prolly_store *st, const prolly_store_node *nodes, size_t n, prolly_ref_update *u)
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

int pgt_count_fn(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)data;
	(void)size;
	(*(int *)payload)++;
	return 0;
}

int pgt_present(prolly_store *st, const prolly_id *ids, size_t n)
{
	int calls = 0;
	if (st->get_nodes(st, ids, n, pgt_count_fn, &calls))
		return -1;
	return calls;
}

int pgt_seen_fn(void *payload, size_t index, const void *data, size_t size)
{
	pgt_seen *s = payload;
	if (s->calls < 4) {
		s->index[s->calls] = index;
		s->size[s->calls] = size;
		s->first[s->calls] = size ? *(const unsigned char *)data : 0;
	}
	s->calls++;
	return s->stop_at && s->calls == s->stop_at ? 99 : 0;
}

/* ---- the cost of a store call --------------------------------------------------------------- */

static prolly_pg_counters cost_c0;

void pgt_cost_begin(prolly_store *st)
{
	prolly_store_pg_counters(st, &cost_c0);
	prolly_thread_stats_reset();
}

pgt_cost pgt_cost_end(prolly_store *st)
{
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_pg_stats ps = PROLLY_PG_STATS_INIT;
	prolly_pg_counters c1;
	pgt_cost k;
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

/* ---- main ----------------------------------------------------------------------------------- */

static void drop_schemas(void)
{
	PGconn *a = pgt_admin();
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

int pgt_main(int argc, char **argv, const pgt_case *cases, int n_cases, int *failed_now,
             prolly_store *(*conformance)(void *ctx), int (*special)(int argc, char **argv))
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	/* A server this program did not start is never restarted, even when the environment names
	 * its directory (eval "$(scripts/pg-cluster.sh start)" exports PROLLY_PG_DIR): other
	 * programs use it at the same time. */
	if (getenv("PROLLY_PG_URL")) {
		unsetenv("PROLLY_PG_DIR");
		unsetenv("PROLLY_PG_BIN");
	}
	/* On return the cases run in a child of this process; the parent stops the cluster. */
	if (tm_pg_guard_tap() != 0)
		return 1;
	pgt_url = getenv("PROLLY_PG_URL");
	PGconn *probe = pgt_admin();
	if (!probe) {
		printf("not ok 1 - cannot connect to $PROLLY_PG_URL\n# 0 passed, 1 failed\n");
		return 1;
	}
	PQfinish(probe);

	int status = special ? special(argc, argv) : -1;
	if (status >= 0) {
		drop_schemas();
		return status;
	}
	if (conformance && (!only || strstr("conformance postgres", only)))
		store_conformance_run("postgres", conformance, NULL, &passed, &failed);
	for (int i = 0; i < n_cases; i++) {
		if (only && !strstr(cases[i].name, only))
			continue;
		*failed_now = 0;
		skip_failed = 0;
		skip_why[0] = 0;
		cases[i].fn();
		int n = passed + failed + 1, bad = *failed_now || skip_failed;
		if (bad)
			failed++;
		else
			passed++;
		printf("%s %d - %s%s%s\n", bad ? "not ok" : "ok", n, cases[i].name,
		       skip_why[0] ? " # SKIP " : "", skip_why);
		fflush(stdout);
	}
	drop_schemas();
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
