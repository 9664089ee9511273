/*
 * pg_pool.c - the PostgreSQL store's connections: libpq sessions, the pool, pipelines and the
 * translation of errors.
 *
 * Every connection lives in pipeline mode, non-blocking; each statement is prepared the first time
 * the connection sends it, in the same pipeline (a new process's CLI command prepares only the
 * few statements it runs: the server's parse of all of them was 5 ms of every command).
 * An operation queues its statements, one Sync, then reads every result while flushing (so a
 * large pipeline cannot deadlock on full socket buffers). Parameters and results are binary (their
 * encoding is in pg_sql.c). A statement that fails aborts the rest of the pipeline; a transaction
 * left in error is rolled back in a second round trip. A read a hot standby cancels (or whose
 * session it ends) before any row reached the engine runs again, at most READ_RETRIES times
 * (prolly__pg_read). Errors:
 * SQLSTATE 53100 is PROLLY_EFULL, PLY* (the store's own), 40001 (but on a hot standby) and 40P01
 * PROLLY_ECONFLICT, 57014 PROLLY_ETIMEOUT, any other PROLLY_ESTORE; a lost connection is
 * PROLLY_ESTORE and is reopened by the next operation. No message carries the password (prolly__pg_redact). Connecting never prints:
 * the server's notices during startup go to the store's receiver (conn_open), not to stderr.
 *
 * The pool: pool_size slots, each connected on first use. Idle slots form a stack, connected ones
 * on top (the warmest is taken next), unconnected ones at the bottom; when none is idle (or others
 * wait already), threads queue first come, first served and give up after pool_timeout_ms. A slot
 * is made ready when taken (a session the server closed while idle is dropped; it is connected and
 * its statements prepared as needed) and closed when given back broken or with a transaction
 * open. The gc pins one connection to its thread while mark() runs: that thread's store calls use
 * it instead of the pool.
 */
#include "pg_int.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

struct waiter {
	pthread_cond_t cv;
	pgconn *got;
	struct waiter *next;
};

/* A connection pinned to the calling thread (the gc's, while it calls mark()), used for that
 * thread's store calls instead of the pool. */
static _Thread_local pg_store *pin_store;
static _Thread_local pgconn *pin_conn;
static _Thread_local int pin_busy;

/* Pins c to the calling thread for st's store calls (st NULL and c NULL: unpins). */
void prolly__pg_pin(pg_store *st, pgconn *c)
{
	pin_store = st;
	pin_conn = c;
	pin_busy = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/*
 * Copies msg into out (size outsz) on one line, with every password hidden (prolly__redact,
 * redact.c): the store's password and sslpassword wherever they appear, a URL's user-information
 * password, and the value of every KEY=VALUE whose key may hold one. st may be NULL.
 */
void prolly__pg_redact(char *out, size_t outsz, const char *msg, const pg_store *st)
{
	const char *secrets[2] = {st ? st->password : NULL, st ? st->sslpassword : NULL};
	prolly__redact(out, outsz, msg, secrets, 2, 1);
}

static void quiet_notice(void *arg, const PGresult *res)
{
	(void)arg;
	(void)res;
}

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

/* After a run of a read failed with rc, having handed `handed` rows: 1 when it is to run again
 * (prolly__pg_read says when), after its pause. */
static int read_again(pg_store *st, int rc, uint64_t handed, int *retries)
{
	if (rc != PROLLY_ESTORE || !standby_conflict || handed || (pin_store == st && pin_conn))
		return 0;
	if (*retries >= READ_RETRIES) {
		if (*retries)
			prolly_set_error(rc, "%s (the store ran it %d times, cancelled each time)",
			                 prolly_last_error(), *retries + 1);
		return 0;
	}
	prolly__pg_cnt_add(&st->cnt.read_retries, 1);
	/* 20 ms, then 40: time for the replay that needed the cancellation to move on. */
	struct timespec pause = {0, 20000000L << *retries};
	while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
		;
	(*retries)++;
	return 1;
}

int prolly__pg_read(pg_store *st, read_once_fn once, void *ctx)
{
	int rc, retries = 0;
	uint64_t handed;
	do {
		handed = 0;
		rc = once(st, ctx, &handed);
	} while (rc && read_again(st, rc, handed, &retries));
	return rc;
}

int prolly__pg_run1(pg_store *st, const char *what, int q, const char *sql, int n,
                    const char *const *vals, const int *lens, result_fn fn, void *ctx)
{
	pgconn *c = NULL;
	pipe p;
	int rc;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	prolly__pg_pipe_init(&p, st, c, what, fn, ctx);
	if (sql)
		prolly__pg_pipe_send_sql(&p, sql);
	else
		prolly__pg_pipe_send(&p, q, n, vals, lens);
	rc = prolly__pg_pipe_run(&p);
	prolly__pg_pool_done(st, c, &p);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Connections and the pool                                                                   */
/* ------------------------------------------------------------------------------------------ */

void prolly__pg_conn_close(pg_store *st, pgconn *c, int broken)
{
	if (c->pg) {
		PQfinish(c->pg);
		c->pg = NULL;
		if (broken)
			prolly__pg_cnt_add(&st->cnt.broken, 1);
	}
	c->prepared = 0;
	c->session = 0;
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

int prolly__pg_conn_setup(pg_store *st, pgconn *c)
{
	pipe p;
	int rc;
	if (c->session)
		return 0;
	prolly__pg_pipe_init(&p, st, c, "setting the session up", NULL, NULL);
	prolly__pg_send_session(&p, c);
	if ((rc = prolly__pg_pipe_run(&p)) == 0)
		c->session = 1;
	return rc;
}

static int conn_connect(pg_store *st, pgconn *c);

int prolly__pg_conn_renew(pg_store *st, pgconn *c)
{
	prolly__pg_conn_close(st, c, 0);
	return conn_connect(st, c);
}

/* libpq's message about pg, redacted, whole (a host name can be long, and the reason comes after
 * it): "*** " for each hidden secret at most triples a byte, so 3 x its length suffices. NULL when
 * out of memory. */
static char *conn_message(PGconn *pg, const pg_store *st)
{
	const char *m = PQerrorMessage(pg);
	size_t cap = 3 * strlen(m) + 16;
	char *out = malloc(cap);
	if (out)
		prolly__pg_redact(out, cap, m, st);
	return out;
}

/*
 * Connecting. libpq's PQconnectdbParams would print on stderr every notice the server sends
 * before the session is ready (a WARNING about an invalid setting of the database or the role, a
 * collation version mismatch, "terminating connection due to immediate shutdown command"): the
 * notice receiver of a connection can only be set once it exists, and PQconnectdbParams returns it
 * connected. So the connection is started with PQconnectStartParams, given its receiver (which
 * keeps the notices for the message of a connection that then fails) and driven with
 * PQconnectPoll. libpq applies connect_timeout only in its own blocking loop, so the store
 * applies it here, to each host of the list as libpq documents it: the host that takes longer is
 * given up and the connection started again on the hosts after it (the same keywords, host,
 * hostaddr and port cut to the rest), failing with libpq's "timeout expired" after the last one.
 * Every other part of connecting (several hosts, target_session_attrs, passwords) is libpq's.
 */

/* The server's notices while a connection starts: severity and message, "; " between them. */
typedef struct start_notes {
	char text[512];
	size_t len;
} start_notes;

static void keep_notice(void *arg, const PGresult *res)
{
	start_notes *n = arg;
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	if (!msg || n->len + 1 >= sizeof(n->text))
		return;
	int w = snprintf(n->text + n->len, sizeof(n->text) - n->len, "%s%s: %s", n->len ? "; " : "",
	                 sev ? sev : "NOTICE", msg);
	if (w > 0)
		n->len = n->len + (size_t)w < sizeof(n->text) ? n->len + (size_t)w : sizeof(n->text) - 1;
}

/* What the connection's host list is (host, hostaddr, port: as libpq resolved them, from the
 * string, the environment or a service file) and its connect_timeout in seconds (0: none). */
typedef struct host_list {
	PQconninfoOption *opts;
	const char *list[3]; /* host, hostaddr, port; "" when unset */
	int timeout;
} host_list;

static const char *const host_keys[3] = {"host", "hostaddr", "port"};

/* The n-th element (from 0) of the comma-separated list s, as [*from, *to); 0 if there is none. */
static int list_elem(const char *s, int n, const char **from, const char **to)
{
	for (int i = 0; i < n; i++) {
		s = strchr(s, ',');
		if (!s)
			return 0;
		s++;
	}
	const char *e = strchr(s, ',');
	*from = s;
	*to = e ? e : s + strlen(s);
	return 1;
}

static int list_len(const char *s)
{
	int n = 1;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

static int elem_is(const char *s, int n, const char *want)
{
	const char *a, *b;
	return list_elem(s, n, &a, &b) && strlen(want) == (size_t)(b - a) &&
	       memcmp(a, want, (size_t)(b - a)) == 0;
}

/* Reads pg's options into h; -1 (the error set) on an invalid connect_timeout or out of memory. */
static int hosts_read(host_list *h, PGconn *pg, const pg_store *st)
{
	memset(h, 0, sizeof(*h));
	for (int k = 0; k < 3; k++)
		h->list[k] = "";
	h->opts = PQconninfo(pg);
	if (!h->opts)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory connecting");
	for (PQconninfoOption *o = h->opts; o->keyword; o++) {
		for (int k = 0; k < 3; k++)
			if (o->val && strcmp(o->keyword, host_keys[k]) == 0)
				h->list[k] = o->val;
		if (o->val && o->val[0] && strcmp(o->keyword, "connect_timeout") == 0) {
			char *end;
			errno = 0;
			long t = strtol(o->val, &end, 10);
			while (*end == ' ')
				end++;
			if (errno || *end || t > INT_MAX)
				return prolly_set_error(PROLLY_ESTORE,
				                        "postgres: cannot connect to %s: invalid integer value "
				                        "\"%s\" for connection option \"connect_timeout\"",
				                        st->target, o->val);
			h->timeout = t <= 0 ? 0 : t < 2 ? 2 : (int)t; /* libpq's floor of 2 s */
		}
	}
	return 0;
}

/* The index in h's list of the host pg is connecting to, looked for from `from` on, then from
 * `first` (libpq goes through its list in order; with target_session_attrs=prefer-standby it may
 * start over); from when it is not found. PQhost is the host, or the hostaddr of an entry without
 * one. */
static int hosts_current(const host_list *h, PGconn *pg, int from, int first)
{
	const char *host = PQhost(pg), *port = PQport(pg);
	int n = list_len(h->list[0][0] ? h->list[0] : h->list[1]);
	int ports = list_len(h->list[2]) > 1;
	for (int pass = 0; pass < 2 && host; pass++)
		for (int i = pass ? first : from; i < n; i++) {
			int k = elem_is(h->list[0], i, "") ? 1 : 0;
			if (elem_is(h->list[k], i, host) && (!ports || !port || elem_is(h->list[2], i, port)))
				return i;
		}
	return from;
}

/* The elements of the comma-separated list s after the first n; NULL when out of memory. */
static char *list_rest(const char *s, int n)
{
	const char *a, *b;
	return strdup(list_elem(s, n, &a, &b) ? a : "");
}

/* Starts a connection on st's connection string with the hosts of h after the first `skip` (all
 * when skip is 0), its notices kept in notes. NULL when out of memory. */
static PGconn *conn_start(pg_store *st, const host_list *h, int skip, start_notes *notes)
{
	const char *kw[6] = {"dbname", "fallback_application_name", NULL};
	const char *val[6] = {st->conninfo, "prolly", NULL};
	char *rest[3] = {NULL, NULL, NULL};
	PGconn *pg = NULL;
	if (skip) {
		int n = list_len(h->list[0][0] ? h->list[0] : h->list[1]);
		for (int k = 0; k < 3; k++) {
			/* A list of one (a port for every host) or none stays as it is. */
			int cut = list_len(h->list[k]) == n && n > 1;
			rest[k] = cut ? list_rest(h->list[k], skip) : strdup(h->list[k]);
			if (!rest[k])
				goto cleanup;
			kw[2 + k] = host_keys[k];
			val[2 + k] = rest[k];
		}
	}
	pg = PQconnectStartParams(kw, val, 1);
	if (pg)
		PQsetNoticeReceiver(pg, keep_notice, notes);
cleanup:
	for (int k = 0; k < 3; k++)
		free(rest[k]);
	return pg;
}

/* The error of a failed connection: the hosts given up (before, may be NULL), libpq's message (pg
 * may be NULL) and the server's notices, on one line, redacted. */
static int conn_failed(pg_store *st, PGconn *pg, const char *before, const start_notes *notes)
{
	const char *m = pg ? PQerrorMessage(pg) : "";
	int m_len = (int)strlen(m);
	while (m_len > 0 && (m[m_len - 1] == '\n' || m[m_len - 1] == ' '))
		m_len--; /* libpq ends it with a newline */
	size_t len = (before ? strlen(before) : 0) + (size_t)m_len + notes->len + 32;
	char *all = malloc(len), *out = malloc(3 * len + 16);
	int rc;
	if (!all || !out) {
		rc = prolly_set_error(PROLLY_ESTORE, "postgres: cannot connect to %s: %s", st->target,
		                      "(out of memory for the reason)");
		goto cleanup;
	}
	snprintf(all, len, "%s%.*s%s%s%s", before ? before : "", m_len, m,
	         notes->len ? " (the server said: " : "", notes->text, notes->len ? ")" : "");
	prolly__pg_redact(out, 3 * len + 16, all, st);
	rc = prolly_set_error(PROLLY_ESTORE, "postgres: cannot connect to %s: %s", st->target, out);
cleanup:
	free(all);
	free(out);
	return rc;
}

/* Connects *out (NULL on failure) on st's connection string, connect_timeout applied per host. */
static int conn_open(pg_store *st, PGconn **out)
{
	start_notes notes = {.len = 0};
	host_list h = {.opts = NULL};
	char *before = NULL; /* "connection to server ... failed: timeout expired" of hosts given up */
	int cur = 0, skip = 0, rc = 0, n_hosts = 1;
	uint64_t deadline = 0;
	PGconn *pg = conn_start(st, &h, 0, &notes);
	if (!pg) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory connecting");
		goto cleanup;
	}
	if (PQstatus(pg) == CONNECTION_BAD) {
		rc = conn_failed(st, pg, NULL, &notes);
		goto cleanup;
	}
	if ((rc = hosts_read(&h, pg, st)))
		goto cleanup;
	n_hosts = list_len(h.list[0][0] ? h.list[0] : h.list[1]);
	PostgresPollingStatusType ps = PGRES_POLLING_WRITING; /* where PQconnectStart leaves it */
	while (ps != PGRES_POLLING_OK) {
		if (ps == PGRES_POLLING_FAILED) {
			rc = conn_failed(st, pg, before, &notes);
			goto cleanup;
		}
		int at = h.timeout ? hosts_current(&h, pg, cur, skip) : cur;
		if (h.timeout && (at != cur || !deadline)) {
			cur = at;
			deadline = prolly__mono_ns() + (uint64_t)h.timeout * 1000000000u;
		}
		struct pollfd pfd = {PQsocket(pg), ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
		int wait = -1;
		if (h.timeout) {
			uint64_t now = prolly__mono_ns();
			wait = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
		}
		int got = wait == 0 || pfd.fd < 0 ? 0 : poll(&pfd, 1, wait);
		if (got < 0 && errno != EINTR) {
			rc = prolly_set_error(PROLLY_ESTORE, "postgres: cannot connect to %s: poll: %s",
			                      st->target, strerror(errno));
			goto cleanup;
		}
		if (got == 0 && h.timeout && prolly__mono_ns() >= deadline) {
			/* The host took too long: the next one, as libpq's own loop would. */
			const char *host = PQhost(pg), *port = PQport(pg);
			size_t len = (before ? strlen(before) : 0) + strlen(host ? host : "") +
			             strlen(port ? port : "") + 80;
			char *b = malloc(len);
			if (!b) {
				rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory connecting");
				goto cleanup;
			}
			snprintf(b, len, "%sconnection to server at \"%s\", port %s failed: timeout expired\n",
			         before ? before : "", host ? host : "", port ? port : "");
			free(before);
			before = b;
			PQfinish(pg);
			pg = NULL;
			if (cur + 1 >= n_hosts) {
				rc = conn_failed(st, NULL, before, &notes);
				goto cleanup;
			}
			skip = cur = cur + 1;
			deadline = 0;
			pg = conn_start(st, &h, skip, &notes);
			if (!pg) {
				rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory connecting");
				goto cleanup;
			}
			ps = PQstatus(pg) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
			continue;
		}
		ps = PQconnectPoll(pg);
	}
	PQsetNoticeReceiver(pg, quiet_notice, NULL); /* notes is about to go */
	*out = pg;
	pg = NULL;
cleanup:
	PQconninfoFree(h.opts);
	free(before);
	PQfinish(pg);
	return rc;
}

/* A new tag for c's statement names: random, or made of the clock, the slot's address and a
 * counter where the kernel has no randomness to give. */
static void conn_tag(pgconn *c)
{
	static _Atomic uint64_t serial;
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = prolly__mono_ns() ^ ((uint64_t)(uintptr_t)c << 16) ^
		    (atomic_fetch_add(&serial, 1) << 48);
	snprintf(c->tag, sizeof(c->tag), "%016" PRIx64, v);
	snprintf(c->mark, sizeof(c->mark), "set up by prolly connection %s", c->tag);
}

static int conn_connect(pg_store *st, pgconn *c)
{
	char *msg = NULL;
	PGconn *pg = NULL;
	int rc = conn_open(st, &pg);
	if (rc)
		return rc;
	if (PQsetnonblocking(pg, 1) != 0 || PQenterPipelineMode(pg) != 1) {
		msg = conn_message(pg, st);
		rc = prolly_set_error(PROLLY_ESTORE,
		                      "postgres: cannot enter pipeline mode on %s (libpq >= 14 "
		                      "needed): %s",
		                      st->target, msg ? msg : "(out of memory for the reason)");
		goto cleanup;
	}
	c->pg = pg;
	c->prepared = 0;
	c->session = 0;
	conn_tag(c);
	prolly__pg_cnt_add(&st->cnt.connects, 1);
	pg = NULL; /* the slot owns it */
cleanup:
	free(msg);
	PQfinish(pg);
	return rc;
}

/* Makes an acquired slot usable: drops a connection the server closed while it sat idle, connects,
 * sets the session up (once the store is open: the open's first round trip does it for its own
 * connection). */
static int conn_ready(pg_store *st, pgconn *c)
{
	int rc;
	if (c->pg) {
		/* Nothing is outstanding on an idle connection, so anything to read (a FATAL message
		 * from a terminated backend, end of file) means the session is gone or going. */
		struct pollfd pfd = {PQsocket(c->pg), POLLIN, 0};
		if (pfd.fd < 0 || PQstatus(c->pg) != CONNECTION_OK || poll(&pfd, 1, 0) != 0)
			prolly__pg_conn_close(st, c, 1);
	}
	if (!c->pg && (rc = conn_connect(st, c)))
		return rc;
	if (atomic_load(&st->ready) && !c->session && (rc = prolly__pg_conn_setup(st, c))) {
		prolly__pg_conn_close(st, c, 1);
		return rc;
	}
	return 0;
}

void prolly__pg_pool_release(pg_store *st, pgconn *c, int broken)
{
	if (!c)
		return;
	if (pin_store == st && c == pin_conn) {
		pin_busy = 0;
		return;
	}
	if (c->pg &&
	    (broken || PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE))
		prolly__pg_conn_close(st, c, 1);
	pthread_mutex_lock(&st->mu);
	if (st->head) {
		waiter *w = st->head;
		st->head = w->next;
		if (!st->head)
			st->tail = NULL;
		w->got = c;
		pthread_cond_signal(&w->cv);
	} else if (c->pg) {
		st->idle[st->n_idle++] = c; /* taken next: the warmest connection */
	} else {
		/* An unconnected slot goes to the bottom: connected ones are used first. */
		memmove(&st->idle[1], &st->idle[0], st->n_idle * sizeof(*st->idle));
		st->idle[0] = c;
		st->n_idle++;
	}
	pthread_mutex_unlock(&st->mu);
}

/* A connection: the thread's pinned one, an idle one, or the first one released to the waiters'
 * queue (first come, first served) within pool_timeout_ms. */
int prolly__pg_pool_acquire(pg_store *st, pgconn **out)
{
	pgconn *c = NULL;
	int waited = 0, rc;
	uint64_t t0 = 0;

	standby_conflict = 0;
	if (pin_store == st && pin_conn && !pin_busy) {
		pin_busy = 1;
		*out = pin_conn;
		return 0;
	}
	pthread_mutex_lock(&st->mu);
	if (st->n_idle && !st->head) {
		c = st->idle[--st->n_idle];
	} else {
		waiter w;
		pthread_condattr_t ca;
		struct timespec dl;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w.cv, &ca);
		pthread_condattr_destroy(&ca);
		w.got = NULL;
		w.next = NULL;
		if (st->tail)
			st->tail->next = &w;
		else
			st->head = &w;
		st->tail = &w;
		waited = 1;
		t0 = prolly__mono_ns();
		prolly__deadline(&dl, CLOCK_MONOTONIC, st->pool_timeout_ms);
		while (!w.got) {
			int e = pthread_cond_timedwait(&w.cv, &st->mu, &dl);
			if (e == ETIMEDOUT && !w.got) {
				waiter **pp = &st->head, *prev = NULL;
				for (; *pp && *pp != &w; pp = &(*pp)->next)
					prev = *pp;
				if (*pp)
					*pp = w.next;
				if (st->tail == &w)
					st->tail = prev;
				break;
			}
		}
		c = w.got;
		pthread_cond_destroy(&w.cv);
	}
	pthread_mutex_unlock(&st->mu);
	if (waited) {
		uint64_t ns = prolly__mono_ns() - t0;
		prolly__pg_thread_add(0, 1, ns);
		prolly__pg_cnt_add(&st->cnt.pool_waits, 1);
		prolly__pg_cnt_add(&st->cnt.pool_wait_ns, ns);
	}
	if (!c) {
		prolly__pg_cnt_add(&st->cnt.pool_timeouts, 1);
		return prolly_set_error(PROLLY_ETIMEOUT,
		                        "postgres: no connection to %s became free within %u ms (pool of "
		                        "%u)",
		                        st->target, st->pool_timeout_ms, st->pool_size);
	}
	if ((rc = conn_ready(st, c))) {
		prolly__pg_pool_release(st, c, 1);
		return rc;
	}
	*out = c;
	return 0;
}

/* Releases c after an operation; a connection whose pipe failed at the connection level (or is in
 * an unexpected state) is closed, to be reopened by the next acquire. */
void prolly__pg_pool_done(pg_store *st, pgconn *c, const pipe *p)
{
	prolly__pg_pool_release(st, c, p && p->broken);
}
