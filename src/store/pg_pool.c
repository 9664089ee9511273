/*
 * pg_pool.c - the PostgreSQL store's connections: libpq sessions, the pool, and the runs of a
 * read that a hot standby cancelled (pipelines are pg_pipe.c's).
 *
 * A read a hot standby cancels (or whose session it ends) before any row reached the engine runs
 * again, at most READ_RETRIES times (prolly__pg_read). Connecting never prints: the server's
 * notices during startup go to the store's receiver (conn_open), not to stderr.
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
/* Reads run again, and one-statement runs                                                    */
/* ------------------------------------------------------------------------------------------ */

/* After a run of a read failed with rc, having handed `handed` rows: 1 when it is to run again
 * (prolly__pg_read says when), after its pause. */
static int read_again(pg_store *st, int rc, uint64_t handed, int *retries)
{
	if (rc != PROLLY_ESTORE || !prolly__pg_standby_conflict() || handed ||
	    (pin_store == st && pin_conn))
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

	prolly__pg_standby_conflict_clear();
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
