/*
 * pgconn.c - libpq pieces of the benchmarks (pgconn.h).
 */
#include "pgconn.h"

#include "clock.h"
#include "proc.h"
#include "prolly/store.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Counted statements                                                                         */
/* ------------------------------------------------------------------------------------------ */

void bench_pg_count(uint64_t statements, uint64_t round_trips)
{
	prolly_stats d = PROLLY_STATS_INIT;
	const uint64_t pg[1] = {statements}; /* slot 0: the PostgreSQL store's statements */
	d.store_round_trips = round_trips;
	prolly_stats_add(&d);
	prolly_store_counters_add(pg, 1);
}

static _Thread_local char last_state[6];

const char *bench_pg_sqlstate(void)
{
	return last_state;
}

/* The server's message without its trailing newline. */
int bench_pg_error(PGconn *conn, const PGresult *res, const char *what)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	snprintf(last_state, sizeof(last_state), "%s", st ? st : "");
	const char *m = res ? PQresultErrorMessage(res) : "";
	if (!m || !*m)
		m = PQerrorMessage(conn);
	char shown[512]; /* on one line, anything shaped like a password hidden */
	prolly_redact_message(shown, sizeof(shown), m, NULL);
	return prolly_set_error(PROLLY_ESTORE, "%s: %s", what, shown);
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* The seconds of conn's connect_timeout (0: none), with libpq's floor of 2. */
static int connect_timeout(PGconn *conn)
{
	PQconninfoOption *opts = PQconninfo(conn);
	int t = 0;
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "connect_timeout") == 0 && o->val && o->val[0])
			t = atoi(o->val);
	PQconninfoFree(opts);
	return t <= 0 ? 0 : t < 2 ? 2 : t;
}

/* Drives a started connection to its end. libpq applies connect_timeout only in its own blocking
 * loop, so it is applied here, to the whole attempt. 0, or -1 when it failed or took too long. */
static int connect_poll(PGconn *c)
{
	int timeout = connect_timeout(c);
	uint64_t deadline = bench_now_ns() + (uint64_t)timeout * 1000000000u;
	PostgresPollingStatusType ps = PGRES_POLLING_WRITING; /* where PQconnectStart leaves it */
	if (PQstatus(c) == CONNECTION_BAD)
		return -1;
	while (ps != PGRES_POLLING_OK) {
		if (ps == PGRES_POLLING_FAILED)
			return -1;
		int wait = -1;
		if (timeout) {
			uint64_t now = bench_now_ns();
			if (now >= deadline)
				return -1;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		struct pollfd pfd = {PQsocket(c), ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
		if (pfd.fd >= 0 && poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return -1;
		if (pfd.revents || pfd.fd < 0)
			ps = PQconnectPoll(c);
	}
	return 0;
}

/*
 * The session's search_path: pg_catalog first, then nothing but the session's temporary schema.
 * Under the path a role's or database's setting gives (or the default "$user", public), a role
 * that may CREATE in a schema on it could plant a function the harness's statements call
 * unqualified (pg_backend_pid, hashtext, count, ...) or one that matches their arguments
 * exactly where pg_catalog's is polymorphic (unnest(bytea[])), and it would run with the
 * harness's role. Sent in the startup packet, after the connection string's own options, so it
 * costs no statement and no round trip; the harness names every other object with its schema.
 */
#define SESSION_OPTIONS "-c search_path=pg_catalog,pg_temp"

/* conninfo's own options (else $PGOPTIONS, which libpq reads only where no options are given)
 * followed by SESSION_OPTIONS (malloc'ed; NULL when out of memory). */
static char *session_options(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL); /* NULL: libpq says why later */
	const char *own = getenv("PGOPTIONS");
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "options") == 0 && o->val)
			own = o->val;
	if (!own)
		own = "";
	size_t n = strlen(own) + sizeof(SESSION_OPTIONS) + 1;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s" SESSION_OPTIONS, own, own[0] ? " " : "");
	PQconninfoFree(opts);
	return out;
}

int bench_pg_connect_as(PGconn **out, const char *conninfo, const char *app, int timeout_s)
{
	char t[16];
	const char *kw[5] = {"dbname", "options", NULL, NULL, NULL},
	           *val[5] = {conninfo, NULL, NULL, NULL, NULL};
	int k = 2;
	*out = NULL;
	char *options = session_options(conninfo);
	if (!options)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory connecting to PostgreSQL");
	val[1] = options;
	if (app) {
		kw[k] = "application_name";
		val[k++] = app;
	}
	if (timeout_s > 0) {
		snprintf(t, sizeof(t), "%d", timeout_s);
		kw[k] = "connect_timeout";
		val[k++] = t;
	}
	/* Started, not connected, so that the silent notice processor is there before the server
	 * speaks: a session's start can bring notices (a WARNING about an invalid setting of the
	 * database or role), which libpq's default processor prints on stderr, the harness's
	 * progress and error output. */
	PGconn *c = PQconnectStartParams(kw, val, 1);
	free(options);
	if (!c)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory connecting to PostgreSQL");
	PQsetNoticeProcessor(c, quiet, NULL); /* also DROP ... CASCADE listing what it dropped */
	if (connect_poll(c) != 0) {
		char shown[512]; /* the password of conninfo hidden, also where libpq quotes a piece */
		const char *m = PQstatus(c) == CONNECTION_BAD ? PQerrorMessage(c) : "timeout expired";
		prolly_redact_message(shown, sizeof(shown), m, conninfo);
		PQfinish(c);
		return prolly_set_error(PROLLY_ESTORE, "connecting to PostgreSQL (PROLLY_PG_URL): %s",
		                        shown);
	}
	*out = c;
	return 0;
}

int bench_pg_connect(PGconn **out, const char *conninfo)
{
	int rc = bench_pg_connect_as(out, conninfo, NULL, 0);
	if (rc == 0)
		bench_pg_count(0, 1);
	return rc;
}

/* Counts a statement just sent (one round trip) and checks its result: a failure is an error
 * naming what; otherwise the result is handed over to out, or cleared when out is NULL. */
static int finish(PGconn *conn, PGresult *res, const char *what, PGresult **out)
{
	bench_pg_count(1, 1);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int rc = bench_pg_error(conn, res, what);
		PQclear(res);
		return rc;
	}
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}

/* One statement without parameters (one round trip). With out, the result is handed over. */
int bench_pg_exec(PGconn *conn, const char *sql, PGresult **out)
{
	return finish(conn, PQexecParams(conn, sql, 0, NULL, NULL, NULL, NULL, 1), sql, out);
}

int bench_pg_prepare(PGconn *conn, const char *name, const char *sql, int nparams)
{
	return finish(conn, PQprepare(conn, name, sql, nparams, NULL), sql, NULL);
}

/* A prepared statement with binary parameters and binary results (one round trip). */
int bench_pg_run(PGconn *conn, const char *name, int n, const char *const *values,
                 const int *lengths, PGresult **out)
{
	static const int formats[BENCH_PG_MAX_PARAMS] = {1, 1, 1, 1, 1, 1, 1, 1,
	                                                 1, 1, 1, 1, 1, 1, 1, 1};
	if (n > BENCH_PG_MAX_PARAMS)
		return prolly_set_error(PROLLY_EINVAL, "%s: %d parameters, at most %d", name, n,
		                        BENCH_PG_MAX_PARAMS);
	return finish(conn, PQexecPrepared(conn, name, n, values, lengths, formats, 1), name, out);
}

int bench_pg_postmaster(long *out, PGconn *conn)
{
	PGresult *res = NULL;
	*out = 0;
	int rc = bench_pg_exec(conn, "SELECT pg_backend_pid()::text", &res);
	if (rc == 0 && PQntuples(res) == 1)
		*out = bench_parent_pid(strtol(PQgetvalue(res, 0, 0), NULL, 10));
	PQclear(res);
	return rc;
}

long bench_pg_postmaster_at(const char *conninfo)
{
	PGconn *pg = NULL;
	long pm = 0;
	if (bench_pg_connect(&pg, conninfo) == 0)
		bench_pg_postmaster(&pm, pg);
	if (pg)
		PQfinish(pg);
	return pm;
}

int bench_pg_ext_schema_of(char *out, size_t n, PGconn *conn, const char *ext)
{
	PGresult *res = NULL;
	char sql[256];
	out[0] = '\0';
	snprintf(sql, sizeof(sql),
	         "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
	         "ON n.oid = e.extnamespace WHERE e.extname = '%.64s'",
	         ext);
	int rc = bench_pg_exec(conn, sql, &res);
	if (rc == 0 && PQntuples(res) == 1)
		snprintf(out, n, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

int bench_pg_ext_schema(char *out, size_t n, PGconn *conn)
{
	return bench_pg_ext_schema_of(out, n, conn, "prolly");
}

int bench_pg_ext_object(char *out, size_t n, PGconn *conn, const char *ext, const char *object)
{
	char s[128], q[160];
	int rc = bench_pg_ext_schema_of(s, sizeof(s), conn, ext);
	out[0] = '\0';
	if (rc == 0 && s[0] && bench_pg_ident(q, sizeof(q), s) == 0)
		snprintf(out, n, "%s.%s", q, object);
	return rc;
}

void bench_pg_drop_prolly(PGconn *conn, const char *schema)
{
	char in[128];
	if (schema && (bench_pg_ext_schema(in, sizeof(in), conn) != 0 || strcmp(in, schema) != 0))
		return;
	bench_pg_exec(conn, "DROP EXTENSION IF EXISTS prolly", NULL);
}

void bench_pg_drop_prolly_at(const char *conninfo)
{
	PGconn *c = NULL;
	if (bench_pg_connect(&c, conninfo) == 0)
		bench_pg_drop_prolly(c, NULL);
	PQfinish(c);
}

/* A quoted identifier, or -1 if it does not fit (the names used here are plain ASCII). */
int bench_pg_ident(char *out, size_t n, const char *name)
{
	size_t k = 0;
	if (k + 1 >= n)
		return -1;
	out[k++] = '"';
	for (const char *p = name; *p; p++) {
		if (k + 3 >= n)
			return -1;
		if (*p == '"')
			out[k++] = '"';
		out[k++] = *p;
	}
	out[k++] = '"';
	out[k] = '\0';
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Binary encodings                                                                           */
/* ------------------------------------------------------------------------------------------ */

#define BYTEA_OID 17

/* Starts a one-dimensional bytea[] of n elements in PostgreSQL's binary array format. */
int bench_pg_array_begin(bench_buf *b, size_t n)
{
	return bench_pg_array_begin_type(b, n, BYTEA_OID);
}

int bench_pg_array_begin_type(bench_buf *b, size_t n, uint32_t elem_oid)
{
	bench_buf_clear(b);
	if (bench_buf_put32be(b, 1) || bench_buf_put32be(b, 0) || bench_buf_put32be(b, elem_oid) ||
	    bench_buf_put32be(b, (uint32_t)n) || bench_buf_put32be(b, 1))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
	return 0;
}

int bench_pg_array_add(bench_buf *b, const void *d, size_t len)
{
	if (bench_buf_put32be(b, (uint32_t)len) || bench_buf_put(b, d, len))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
	return 0;
}

int bench_pg_array_add_null(bench_buf *b)
{
	if (bench_buf_put32be(b, UINT32_MAX)) /* length -1 */
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
	return 0;
}

int bench_pg_copy_row_begin(bench_buf *b, uint16_t nfields)
{
	if (bench_buf_put16be(b, nfields))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding COPY data");
	return 0;
}

/* COPY ... (FORMAT binary): the header, one row of two bytea fields, the trailer. */
int bench_pg_copy_header(bench_buf *b)
{
	static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
	if (bench_buf_put(b, sig, sizeof(sig)) || bench_buf_put32be(b, 0) || bench_buf_put32be(b, 0))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
	return 0;
}

int bench_pg_copy_row2(bench_buf *b, const void *k, size_t klen, const void *v, size_t vlen)
{
	if (bench_buf_put16be(b, 2) || bench_buf_put32be(b, (uint32_t)klen) ||
	    bench_buf_put(b, k, klen) || bench_buf_put32be(b, (uint32_t)vlen) ||
	    bench_buf_put(b, v, vlen))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
	return 0;
}

int bench_pg_copy_trailer(bench_buf *b)
{
	return bench_buf_put16be(b, 0xffff)
	           ? prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter")
	           : 0;
}

/* Sends b (and empties it) during a COPY FROM STDIN. */
int bench_pg_copy_send(PGconn *conn, bench_buf *b)
{
	if (b->n && PQputCopyData(conn, b->p, (int)b->n) != 1)
		return bench_pg_error(conn, NULL, "sending COPY data");
	bench_buf_clear(b);
	return 0;
}

/* Ends a COPY FROM STDIN and reads its result. */
int bench_pg_copy_end(PGconn *conn)
{
	if (PQputCopyEnd(conn, NULL) != 1)
		return bench_pg_error(conn, NULL, "ending COPY");
	int rc = 0;
	PGresult *res;
	while ((res = PQgetResult(conn)) != NULL) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = bench_pg_error(conn, res, "COPY");
		PQclear(res);
	}
	return rc;
}

/* Big-endian 32-bit integer at p (binary results). */
uint32_t bench_pg_get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
