/*
 * pg_pipe.c - the PostgreSQL store's pipelines: statements queued on one connection, run in one
 * round trip, their results and errors; the session's settings and the guard that checks them.
 *
 * Every connection lives in pipeline mode, non-blocking; each statement is prepared the first time
 * the connection sends it, in the same pipeline (a new process's CLI command prepares only the
 * few statements it runs: the server's parse of all of them was 5 ms of every command).
 * An operation queues its statements, one Sync, then reads every result while flushing (so a
 * large pipeline cannot deadlock on full socket buffers); a write's large INSERT chunks are
 * sent out one at a time as they are queued (prolly__pg_pipe_send_out, "libpq's output
 * buffer"). Parameters and results are binary (their encoding is in pg_sql.c). A statement
 * that fails aborts the rest of the pipeline; a transaction left in error is rolled back in a
 * second round trip. Errors:
 * SQLSTATE 53100 is PROLLY_EFULL, PLY* (the store's own), 40001 (but on a hot standby) and 40P01
 * PROLLY_ECONFLICT, 57014 PROLLY_ETIMEOUT, any other PROLLY_ESTORE; a lost connection is
 * PROLLY_ESTORE and is reopened by the next operation. No message carries the password
 * (prolly__pg_redact). Connections and the pool are pg_pool.c's.
 */
#include "pg_int.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Pipelines                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* 1 when the server of pg is a hot standby (it reports in_hot_standby: PostgreSQL 14 and
 * later). */
static int in_hot_standby(PGconn *pg)
{
	const char *v = pg ? PQparameterStatus(pg, "in_hot_standby") : NULL;
	return v && strcmp(v, "on") == 0;
}

/* Whether the last pipeline run on this thread failed by a hot standby's recovery conflict
 * (standby_cancelled); cleared by every pool_acquire (prolly__pg_read). */
static _Thread_local int standby_conflict;

int prolly__pg_standby_conflict(void)
{
	return standby_conflict;
}

void prolly__pg_standby_conflict_clear(void)
{
	standby_conflict = 0;
}

void prolly__pg_pipe_init(pipe *p, pg_store *st, pgconn *c, const char *what, result_fn fn,
                          void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->st = st;
	p->c = c;
	p->what = what;
	p->fn = fn;
	p->ctx = ctx;
	p->standby = in_hot_standby(c ? c->pg : NULL);
}

/* 1 for an error result with which the server ends the session (FATAL, PANIC). pgbouncer's
 * errors (query_wait_timeout, a refused transaction block in statement mode) carry only the
 * severity field that PostgreSQL translates, in English, not the untranslated one. */
static int ends_session(const PGresult *r)
{
	const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
	if (!sev)
		sev = PQresultErrorField(r, PG_DIAG_SEVERITY);
	return sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0);
}

/* Keeps in p the reason of the error result r (its primary message, redacted, and SQLSTATE). */
static void keep_error(pipe *p, const PGresult *r)
{
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	snprintf(p->sqlstate, sizeof(p->sqlstate), "%s", state ? state : "");
	prolly__pg_redact(p->msg, sizeof(p->msg), m ? m : PQresultErrorMessage(r), p->st);
	p->fatal = ends_session(r);
}

/*
 * The connection failed. When the server said why before it closed the session (terminated by
 * an administrator, an idle timeout, a shutdown: a FATAL error, still queued or already read),
 * that is the reason given; libpq's own words ("server closed the connection unexpectedly ...
 * the server terminated abnormally") would hide it.
 */
void prolly__pg_pipe_broken(pipe *p, const char *why)
{
	PGresult *r;
	if (p->broken)
		return;
	p->broken = 1;
	/* What libpq has read already, never waiting for more (PQisBusy: PQgetResult would block). */
	for (size_t i = 0; !why && !p->failed && i < 2 * p->queued + 16 && !PQisBusy(p->c->pg) &&
	                   (r = PQgetResult(p->c->pg));
	     i++) {
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && ends_session(r))
			keep_error(p, r);
		PQclear(r);
		if (p->fatal)
			break;
	}
	if (p->fatal) {
		char m[sizeof(p->msg)];
		snprintf(m, sizeof(m), "%s", p->msg);
		snprintf(p->msg, sizeof(p->msg), "the server ended the session: %.300s (SQLSTATE %s)%s", m,
		         p->sqlstate,
		         strcmp(m, "query_wait_timeout") == 0
		             ? " (pgbouncer: no server connection of its pool became free within its "
		               "query_wait_timeout; its default_pool_size was in use all that time)"
		             : "");
		return;
	}
	prolly__pg_redact(p->msg, sizeof(p->msg), why ? why : PQerrorMessage(p->c->pg), p->st);
	if (!p->msg[0])
		snprintf(p->msg, sizeof(p->msg), "connection lost");
}

/* The name statement q is prepared under on c (pgconn.tag). */
static void stmt_name(char *out, size_t size, const pgconn *c, int q)
{
	snprintf(out, size, "p%d_%s", q, c->tag);
}

static const int binary_formats[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/*
 * The guard before a pipeline's first Parse: fails (22P02, the setting cast to int4) unless the
 * server session carries this connection's own mark ($1), set by session_sql. A statement is
 * parsed under the session's search_path; where a pooler in transaction or statement mode handed
 * the pipeline another server session (one without this connection's settings), the Parse would
 * resolve the statement's unqualified built-in functions under that session's path, and the
 * statement would then run there. A statement already prepared needs no guard: on another
 * session it is missing (26000) and refused.
 */
static const char guard_sql[] =
    "SELECT CASE WHEN pg_catalog.current_setting('prolly_store.session', true) "
    "OPERATOR(pg_catalog.=) $1::pg_catalog.text THEN 1 ELSE COALESCE("
    "pg_catalog.current_setting('prolly_store.session', true), '')::pg_catalog.int4 END";

/* Queues sql, whose one parameter is c's session mark (pgconn.mark); 0 when libpq refused. */
static int send_with_mark(pgconn *c, const char *sql)
{
	const char *vals[1] = {c->mark};
	return PQsendQueryParams(c->pg, sql, 1, NULL, vals, NULL, NULL, 1);
}

/*
 * The session's settings, sent once per connection before its statements run; its row
 * also gives the server's start time (note_server_start).
 * plan_cache_mode (PostgreSQL 12 and later): every statement here looks rows up by primary key
 * or by an array of keys, and the generic plan (index scans, nested loops) is the right one for
 * any parameter. Left to choose, the plan cache keeps making a custom plan at every execution
 * of an array statement (it costs a short array below the generic estimate), and of the
 * statements inside prolly_write: planning then costs more than executing. jit (PostgreSQL 11
 * and later; set together, from 12): every statement here touches a few rows, but the generic
 * plan of the recursive ancestors statement is costed for a million, and compiling it would
 * take longer than running it. search_path (any version): pg_catalog alone, before anything is
 * prepared. The statements here and the schema's functions (whose bodies run with the caller's
 * path) name the store's tables by schema, but call built-in functions unqualified; with the
 * connection's own path a role that can CREATE in a schema on it could plant, say, a
 * unnest(bytea[]), which as an exact match beats pg_catalog's unnest(anyarray) and would run with
 * this store's role (test search_path_cannot_redirect_statements). This statement itself is
 * parsed under the connection's own path, so every function, type and operator in it is named
 * with its schema.
 * prolly_store.session marks the server session as set up by this connection ($1, pgconn.mark:
 * its tag), which guard_sql checks before statements are parsed: a new connection that finds it
 * set shares its server session with another client (a pooler in
 * transaction or statement mode, or in session mode without its reset query), where every
 * setting above and every statement prepared would serve whichever client the pooler sends next.
 * The statement then fails (the marker cast to int4: SQLSTATE 22P02), which rolls its settings
 * back and skips what was queued after it; pipe_run says why (POOLED_SESSION).
 */
static const char session_sql[] =
    "SELECT (pg_catalog.date_part('epoch', pg_catalog.pg_postmaster_start_time()) "
    "OPERATOR(pg_catalog.*) 1000000::pg_catalog.float8)::pg_catalog.int8, "
    "pg_catalog.set_config('prolly_store.session', CASE WHEN COALESCE("
    "pg_catalog.current_setting('prolly_store.session', true), '') OPERATOR(pg_catalog.=) '' "
    "THEN $1::pg_catalog.text ELSE pg_catalog.current_setting('prolly_store.session')"
    "::pg_catalog.int4::pg_catalog.text END, false), "
    "pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false), "
    "(SELECT pg_catalog.set_config('jit', 'off', false) OPERATOR(pg_catalog.||) "
    "pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', false) "
    "WHERE pg_catalog.current_setting('server_version_num')::pg_catalog.int4 "
    "OPERATOR(pg_catalog.>=) 120000)";

void prolly__pg_send_session(pipe *p, pgconn *c)
{
	if (c->session || p->broken)
		return;
	if (!send_with_mark(c, session_sql)) {
		prolly__pg_pipe_broken(p, NULL);
		return;
	}
	p->session_qi = ++p->queued;
}

/* Queues an item of the pipe's own (pipe.extra_q): the Parse of q, or the guard. */
static void send_extra(pipe *p, int q)
{
	pgconn *c = p->c;
	char name[32];
	int ok;
	if (q == EXTRA_GUARD) {
		ok = send_with_mark(c, guard_sql);
	} else {
		stmt_name(name, sizeof(name), c, q);
		ok = PQsendPrepare(c->pg, name, p->st->sql[q], 0, NULL);
		p->parsing |= (uint32_t)1 << q;
	}
	if (!ok) {
		prolly__pg_pipe_broken(p, NULL);
		return;
	}
	p->extra_q[p->n_extra] = (unsigned char)q;
	p->extra_at[p->n_extra++] = p->queued;
}

/* Queues a prepared statement (binary parameters and results), preceded by its Parse when c has
 * not prepared it yet (and by the guard before the pipe's first Parse). A statement is sent only
 * on a connection whose session is set up (the open's pipeline and prolly__pg_conn_setup do it
 * before any). NULL value = SQL NULL. */
void prolly__pg_pipe_send(pipe *p, int q, int n, const char *const *vals, const int *lens)
{
	char name[32];
	if (p->broken)
		return;
	assert(p->c->session);
	if (!((p->c->prepared | p->parsing) & ((uint32_t)1 << q))) {
		if (!p->parsing)
			send_extra(p, EXTRA_GUARD);
		send_extra(p, q);
		if (p->broken)
			return;
	}
	stmt_name(name, sizeof(name), p->c, q);
	if (!PQsendQueryPrepared(p->c->pg, name, n, vals, lens, binary_formats, 1))
		prolly__pg_pipe_broken(p, NULL);
	else
		p->queued++;
}

/* Queues an unprepared statement without parameters. */
void prolly__pg_pipe_send_sql(pipe *p, const char *sql)
{
	if (p->broken)
		return;
	if (!PQsendQueryParams(p->c->pg, sql, 0, NULL, NULL, NULL, NULL, 1))
		prolly__pg_pipe_broken(p, NULL);
	else
		p->queued++;
}

static int wait_socket(PGconn *pg, int want_write)
{
	struct pollfd pfd;
	int r;
	pfd.fd = PQsocket(pg);
	pfd.events = (short)(POLLIN | (want_write ? POLLOUT : 0));
	pfd.revents = 0;
	if (pfd.fd < 0)
		return -1;
	do
		r = poll(&pfd, 1, -1);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -1 : 0;
}

/* libpq's output buffer. libpq keeps what is queued in one output buffer, and in non-blocking
 * mode each flush that the socket cannot take whole (a Unix socket takes about 200 KB at a
 * time: Linux's default send buffer, net.core.wmem_default) moves the rest of the buffer to its
 * front: a pipeline that queues MiBs of node data and then drains pays a copy of the remaining
 * bytes for every ~200 KB sent, quadratic in what is queued. Queueing a statement flushes too
 * (once its message passes 8 KiB), and so does PQconsumeInput. So a write's INSERT chunks are
 * queued and sent with the connection blocking for that time: libpq's own loop then sends the
 * whole message, waiting for the socket and reading what the server sends meanwhile (so neither
 * side can block the other), and moves nothing until it is out. At 10M records the 10k-update
 * batch's client CPU fell by a third when the chunks were first pushed out one by one, and
 * the moves left in that push (flushes in non-blocking mode, 6% of the batch's samples) went
 * with the blocking send (docs/benchmarks/postgres-scale.md, "libpq's output buffer"). */
void prolly__pg_pipe_send_out(pipe *p, int q, int n, const char *const *vals, const int *lens)
{
	PGconn *pg = p->c->pg;
	if (p->broken)
		return;
	if (PQsetnonblocking(pg, 0) != 0) {
		prolly__pg_pipe_broken(p, NULL);
		return;
	}
	prolly__pg_pipe_send(p, q, n, vals, lens);
	if (!p->broken && PQflush(pg) != 0)
		prolly__pg_pipe_broken(p, NULL);
	if (PQsetnonblocking(pg, 1) != 0)
		prolly__pg_pipe_broken(p, NULL);
}

/* The session statement's row: the server's start time. A new connection that reads another one
 * than the store saw before means the server restarted meanwhile (sticky: see pg_int.h). */
static void note_server_start(pg_store *st, const PGresult *r)
{
	uint64_t t, prev;
	if (PQntuples(r) != 1 || prolly__pg_read_int8(r, 0, 0, &t) != 0)
		return;
	prev = atomic_exchange(&st->server_start, t);
	if (prev && prev != t)
		atomic_store(&st->restarted, 1);
}

/*
 * After a failure with SQLSTATE 25006 (read_only_sql_transaction), says in p->msg which database
 * refused and why: the server's own words name neither, and the caller is left to guess whether
 * the store or the server is at fault. The server reports in_hot_standby and
 * default_transaction_read_only to the client (PostgreSQL 14 and later), so this costs no round
 * trip.
 */
static void note_read_only(pipe *p)
{
	PGconn *pg = p->c->pg;
	const char *ro = PQparameterStatus(pg, "default_transaction_read_only");
	const char *host = PQhost(pg), *port = PQport(pg), *db = PQdb(pg);
	char note[400], shown[400];
	size_t len = strlen(p->msg);
	snprintf(note, sizeof(note), "; database %s on %s%s%s is read-only: %s", db ? db : "?",
	         host && host[0] ? host : "?", port && port[0] ? ":" : "", port ? port : "",
	         in_hot_standby(pg)
	             ? "the server is a hot standby (it replays its primary's WAL and refuses every "
	               "write: write through the primary)"
	         : ro && strcmp(ro, "on") == 0
	             ? "the session's default_transaction_read_only is on (from the connection "
	               "string, or a setting of the role or database)"
	             : "the transaction is read-only");
	prolly__pg_redact(shown, sizeof(shown), note, p->st);
	snprintf(p->msg + len, sizeof(p->msg) - len, "%s", shown);
}

/* On a gc's connection, the beat last in the pipeline (see pgconn.beat). Outside a transaction
 * block it lasts only as long as the pipeline's implicit transaction: harmless. */
static void pipe_beat(pipe *p)
{
	pgconn *c = p->c;
	uint64_t now;
	if (!c->beat || !p->queued ||
	    (now = prolly__mono_ns()) - c->beat_ns < (uint64_t)BEAT_EVERY_MS * 1000000)
		return;
	prolly__pg_pipe_send_sql(
	    p, "SELECT pg_catalog.set_config('application_name', '" BEAT_PREFIX "' "
	       "OPERATOR(pg_catalog.||) (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) "
	       "OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)::pg_catalog.int8, true)");
	if (!p->broken) {
		p->beat_qi = p->queued;
		c->beat_ns = now;
	}
}

/* Sends a Sync and reads every result up to it, flushing as it goes. */
static void pipe_drain(pipe *p, size_t *qi, uint64_t *trips)
{
	PGconn *pg = p->c->pg;
	size_t nulls = 0;
	unsigned extra = 0; /* the pipe's own items answered */
	if (p->broken)
		return;
	pipe_beat(p);
	if (PQpipelineSync(pg) != 1) {
		prolly__pg_pipe_broken(p, NULL);
		return;
	}
	(*trips)++;
	for (;;) {
		if (PQstatus(pg) != CONNECTION_OK) {
			prolly__pg_pipe_broken(p, NULL);
			return;
		}
		int fl = PQflush(pg);
		if (fl < 0) {
			prolly__pg_pipe_broken(p, NULL);
			return;
		}
		if (PQisBusy(pg)) {
			if (wait_socket(pg, fl == 1) || !PQconsumeInput(pg)) {
				prolly__pg_pipe_broken(p, NULL);
				return;
			}
			continue;
		}
		PGresult *r = PQgetResult(pg);
		if (!r) {
			/* Between one statement's results and the next: fine a few times, never forever. */
			if (++nulls > 2 * (p->queued + p->n_extra) + 16) {
				prolly__pg_pipe_broken(p, "the connection stopped answering");
				return;
			}
			continue;
		}
		nulls = 0;
		ExecStatusType s = PQresultStatus(r);
		if (s == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			return;
		}
		int own = extra < p->n_extra && p->extra_at[extra] == *qi;
		if (own) {
			unsigned q = p->extra_q[extra++];
			if (q == EXTRA_GUARD && s == PGRES_FATAL_ERROR && !p->failed)
				p->guard_failed = 1;
			else if (q != EXTRA_GUARD && s == PGRES_COMMAND_OK) {
				p->c->prepared |= (uint32_t)1 << q;
				prolly__pg_cnt_add(&p->st->cnt.prepares, 1);
			}
		}
		if (own && s != PGRES_FATAL_ERROR) {
			/* answered or skipped: not a result of the caller's */
		} else if (s == PGRES_TUPLES_OK && p->session_qi == *qi + 1) {
			note_server_start(p->st, r);
		} else if (p->beat_qi == *qi + 1) {
			/* the beat's result: nothing to read, and its failure fails nothing */
		} else if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
			if (!p->fn_rc && !p->failed && p->fn)
				p->fn_rc = p->fn(p->ctx, *qi, r);
		} else if (s != PGRES_PIPELINE_ABORTED && !p->failed) {
			const char *detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
			p->failed = 1;
			p->err_qi = *qi;
			keep_error(p, r);
			prolly__pg_redact(p->detail, sizeof(p->detail), detail, p->st);
			if (strcmp(p->sqlstate, "25006") == 0) {
				note_read_only(p);
			} else if (strcmp(p->sqlstate, "40001") == 0 && in_hot_standby(pg)) {
				/* A recovery conflict, not a serialization failure: no write runs here. */
				size_t len = strlen(p->msg);
				snprintf(p->msg + len, sizeof(p->msg) - len,
				         "; the hot standby cancelled it to go on replaying its primary's WAL "
				         "(max_standby_streaming_delay and hot_standby_feedback on the standby "
				         "decide when): run it again");
			}
		}
		if (!own)
			(*qi)++;
		PQclear(r);
	}
}

/* 1 when p failed because a hot standby cancelled its statement to go on replaying WAL (40001:
 * nothing else raises it there, no write runs on a standby) or ended its session (57P01 and
 * 57P04, "terminating connection", or the connection simply lost). */
static int standby_cancelled(const pipe *p)
{
	if (!p->standby)
		return 0;
	return p->broken ||
	       (p->failed && (strcmp(p->sqlstate, "40001") == 0 || strcmp(p->sqlstate, "57P01") == 0 ||
	                      strcmp(p->sqlstate, "57P04") == 0));
}

/* The refusal of a server session shared with other clients (a pooler's transaction or
 * statement mode). */
#define POOLED_SESSION                                                                             \
	"%s: a connection pooler in transaction or statement mode (pgbouncer pool_mode = "             \
	"transaction or statement) is in the way; the store needs a server session of its own for "    \
	"each of its connections: pool_mode = session, with its default server_reset_query "           \
	"(docs/postgres.md, \"Connection poolers\"); nothing was done"

/*
 * Runs what was queued: one round trip (two if the transaction must be rolled back after a
 * failure). Returns 0, fn's non-zero result, or a PROLLY_E* code with the message set (server
 * errors mapped by SQLSTATE; the caller may refine PLY* conflicts). Counts statements and round
 * trips on the calling thread and in the store.
 */
int prolly__pg_pipe_run(pipe *p)
{
	pg_store *st = p->st;
	size_t qi = 0;
	uint64_t trips = 0, stmts = p->queued;
	int rc = 0;

	pipe_drain(p, &qi, &trips);
	if (!p->broken && PQtransactionStatus(p->c->pg) == PQTRANS_INERROR) {
		pipe rb;
		size_t rqi = 0;
		prolly__pg_pipe_init(&rb, st, p->c, p->what, NULL, NULL);
		if ((p->c->prepared & ((uint32_t)1 << Q_ROLLBACK)) && strcmp(p->sqlstate, "26000") != 0)
			prolly__pg_pipe_send(&rb, Q_ROLLBACK, 0, NULL, NULL);
		else
			prolly__pg_pipe_send_sql(&rb, "ROLLBACK");
		pipe_drain(&rb, &rqi, &trips);
		stmts += rb.queued;
		if (rb.broken || rb.failed)
			prolly__pg_pipe_broken(p, "the rollback failed");
	}
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_round_trips = trips;
	prolly_stats_add(&d);
	prolly__pg_thread_add(stmts, 0, 0);
	prolly__pg_cnt_add(&st->cnt.round_trips, trips);
	prolly__pg_cnt_add(&st->cnt.statements, stmts);

	if (p->broken) {
		int is_write = strcmp(p->what, "write") == 0;
		rc = prolly_set_error(PROLLY_ESTORE,
		                      "postgres: %s: the connection to %s failed: %s (the next operation "
		                      "reconnects%s)",
		                      p->what, st->target, p->msg,
		                      is_write ? "; a write cut off while committing may or may not have "
		                                 "been applied, wholly or not at all: read the refs to know"
		                               : "");
	} else if (p->failed) {
		int code = PROLLY_ESTORE;
		if (strcmp(p->sqlstate, "53100") == 0)
			code = PROLLY_EFULL;
		else if (strncmp(p->sqlstate, "PLY", 3) == 0 || strcmp(p->sqlstate, "40P01") == 0 ||
		         (strcmp(p->sqlstate, "40001") == 0 && !in_hot_standby(p->c->pg)))
			code = PROLLY_ECONFLICT;
		else if (strcmp(p->sqlstate, "57014") == 0)
			code = PROLLY_ETIMEOUT;
		else if (strcmp(p->sqlstate, "23514") == 0) /* nodes_id_is_sha256: bytes not of the id */
			code = PROLLY_ECORRUPT;
		if (p->session_qi == p->err_qi + 1 && strcmp(p->sqlstate, "22P02") == 0)
			rc = prolly_set_error(PROLLY_ESTORE, "postgres: %s: " POOLED_SESSION, p->what,
			                      "a new connection found its server session set up by another "
			                      "one (or by a client of a pooler since switched to session "
			                      "mode, which keeps such sessions as they are until RECONNECT on "
			                      "its admin console)");
		else if (p->guard_failed || (strcmp(p->sqlstate, "26000") == 0 && p->c->prepared))
			/* This connection prepared statements, yet the server session lacks one of them:
			 * another session answers, a pooler's in transaction or statement mode. */
			rc = prolly_set_error(PROLLY_ESTORE, "postgres: %s: " POOLED_SESSION, p->what,
			                      p->guard_failed
			                          ? "an operation landed on a server session this connection "
			                            "did not set up"
			                          : "the server session lost this connection's prepared "
			                            "statements");
		else
			rc = prolly_set_error(code, "postgres: %s: %s (SQLSTATE %s)", p->what, p->msg,
			                      p->sqlstate);
	} else if (p->fn_rc) {
		rc = p->fn_rc;
	}
	standby_conflict = rc != 0 && standby_cancelled(p);
	return rc;
}
