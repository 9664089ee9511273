/*
 * pg_baseline.h - libpq pieces of the benchmark's PostgreSQL runs: the throwaway cluster (started
 * and stopped through scripts/pg-cluster.sh), a connection for administration and for the plain
 * table baseline, statements counted like the store counts its own (every statement and every
 * round trip is added to the calling thread's prolly counters), and the binary encodings the
 * baseline sends (bytea[] parameters, COPY ... (FORMAT binary) rows).
 *
 * Everything is static inline (see bench_util.h). Errors go through prolly_set_error(), so the
 * benchmark's cell machinery reports them like engine errors. A connection string is never
 * printed: messages name the schema and quote the server's own words.
 */
#ifndef BENCH_PG_BASELINE_H
#define BENCH_PG_BASELINE_H

#include "prolly.h"

#include <libpq-fe.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Counted statements                                                                         */
/* ------------------------------------------------------------------------------------------ */

static inline void pgb_count(uint64_t statements, uint64_t round_trips)
{
	prolly_stats d = PROLLY_STATS_INIT;
	const uint64_t pg[1] = {statements}; /* slot 0: the PostgreSQL store's statements */
	d.store_round_trips = round_trips;
	prolly_stats_add(&d);
	prolly_store_counters_add(pg, 1);
}

/* The server's message without its trailing newline. */
static inline int pgb_error(PGconn *conn, const PGresult *res, const char *what)
{
	const char *m = res ? PQresultErrorMessage(res) : "";
	if (!m || !*m)
		m = PQerrorMessage(conn);
	char shown[512]; /* on one line, anything shaped like a password hidden */
	prolly_redact_message(shown, sizeof(shown), m, NULL);
	return prolly_set_error(PROLLY_ESTORE, "%s: %s", what, shown);
}

static inline void pgb_quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static inline int pgb_connect(PGconn **out, const char *conninfo)
{
	PGconn *c = PQconnectdb(conninfo);
	if (!c)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory connecting to PostgreSQL");
	if (PQstatus(c) != CONNECTION_OK) {
		char shown[512]; /* the password of conninfo hidden, also where libpq quotes a piece */
		prolly_redact_message(shown, sizeof(shown), PQerrorMessage(c), conninfo);
		PQfinish(c);
		return prolly_set_error(PROLLY_ESTORE, "connecting to PostgreSQL (PROLLY_PG_URL): %s",
		                        shown);
	}
	PQsetNoticeProcessor(c, pgb_quiet, NULL); /* DROP ... CASCADE lists what it dropped */
	pgb_count(0, 1);
	*out = c;
	return 0;
}

/* One statement without parameters (one round trip). With out, the result is handed over. */
static inline int pgb_exec(PGconn *conn, const char *sql, PGresult **out)
{
	PGresult *res = PQexecParams(conn, sql, 0, NULL, NULL, NULL, NULL, 1);
	pgb_count(1, 1);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int rc = pgb_error(conn, res, sql);
		PQclear(res);
		return rc;
	}
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}

static inline int pgb_prepare(PGconn *conn, const char *name, const char *sql, int nparams)
{
	PGresult *res = PQprepare(conn, name, sql, nparams, NULL);
	pgb_count(1, 1);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		int rc = pgb_error(conn, res, sql);
		PQclear(res);
		return rc;
	}
	PQclear(res);
	return 0;
}

/* A prepared statement with binary parameters and binary results (one round trip). */
static inline int pgb_run(PGconn *conn, const char *name, int n, const char *const *values,
                          const int *lengths, PGresult **out)
{
	static const int formats[4] = {1, 1, 1, 1};
	PGresult *res = PQexecPrepared(conn, name, n, values, lengths, formats, 1);
	pgb_count(1, 1);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int rc = pgb_error(conn, res, name);
		PQclear(res);
		return rc;
	}
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}

/* A quoted identifier, or -1 if it does not fit (the names used here are plain ASCII). */
static inline int pgb_ident(char *out, size_t n, const char *name)
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

typedef struct pgb_buf {
	unsigned char *p;
	size_t n, cap;
} pgb_buf;

static inline void pgb_buf_free(pgb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static inline int pgb_put(pgb_buf *b, const void *d, size_t len)
{
	if (b->n + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + len)
			cap *= 2;
		unsigned char *p = realloc(b->p, cap);
		if (!p)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a parameter");
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, len);
	b->n += len;
	return 0;
}

static inline int pgb_put32(pgb_buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 8), (unsigned char)v};
	return pgb_put(b, x, 4);
}

static inline int pgb_put16(pgb_buf *b, uint16_t v)
{
	unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
	return pgb_put(b, x, 2);
}

#define PGB_BYTEA_OID 17

/* Starts a one-dimensional bytea[] of n elements in PostgreSQL's binary array format. */
static inline int pgb_array_begin(pgb_buf *b, size_t n)
{
	b->n = 0;
	if (pgb_put32(b, 1) || pgb_put32(b, 0) || pgb_put32(b, PGB_BYTEA_OID) ||
	    pgb_put32(b, (uint32_t)n) || pgb_put32(b, 1))
		return PROLLY_ENOMEM;
	return 0;
}

static inline int pgb_array_add(pgb_buf *b, const void *d, size_t len)
{
	if (pgb_put32(b, (uint32_t)len) || pgb_put(b, d, len))
		return PROLLY_ENOMEM;
	return 0;
}

/* COPY ... (FORMAT binary): the header, one row of two bytea fields, the trailer. */
static inline int pgb_copy_header(pgb_buf *b)
{
	static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
	if (pgb_put(b, sig, sizeof(sig)) || pgb_put32(b, 0) || pgb_put32(b, 0))
		return PROLLY_ENOMEM;
	return 0;
}

static inline int pgb_copy_row2(pgb_buf *b, const void *k, size_t klen, const void *v, size_t vlen)
{
	if (pgb_put16(b, 2) || pgb_put32(b, (uint32_t)klen) || pgb_put(b, k, klen) ||
	    pgb_put32(b, (uint32_t)vlen) || pgb_put(b, v, vlen))
		return PROLLY_ENOMEM;
	return 0;
}

static inline int pgb_copy_trailer(pgb_buf *b)
{
	return pgb_put16(b, 0xffff) ? PROLLY_ENOMEM : 0;
}

/* Sends b (and empties it) during a COPY FROM STDIN. */
static inline int pgb_copy_send(PGconn *conn, pgb_buf *b)
{
	if (b->n && PQputCopyData(conn, (const char *)b->p, (int)b->n) != 1)
		return pgb_error(conn, NULL, "sending COPY data");
	b->n = 0;
	return 0;
}

/* Ends a COPY FROM STDIN and reads its result. */
static inline int pgb_copy_end(PGconn *conn)
{
	if (PQputCopyEnd(conn, NULL) != 1)
		return pgb_error(conn, NULL, "ending COPY");
	int rc = 0;
	PGresult *res;
	while ((res = PQgetResult(conn)) != NULL) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = pgb_error(conn, res, "COPY");
		PQclear(res);
	}
	return rc;
}

/* Big-endian 32-bit integer at p (binary results). */
static inline uint32_t pgb_get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------------------------------------ */
/* The throwaway cluster                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Copies the value of `export NAME='VALUE'` in line into out. 1 if the line was it. */
static inline int pgb_export_value(const char *line, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	if (strncmp(line, "export ", 7) != 0 || strncmp(line + 7, name, nl) != 0 ||
	    strncmp(line + 7 + nl, "='", 2) != 0)
		return 0;
	const char *v = line + 7 + nl + 2;
	const char *end = strrchr(v, '\'');
	if (!end || (size_t)(end - v) >= n)
		return 0;
	memcpy(out, v, (size_t)(end - v));
	out[end - v] = '\0';
	return 1;
}

/*
 * Runs `script start` and reads PROLLY_PG_URL and PROLLY_PG_DIR from its output. On failure
 * returns -1 with dir set if the script got as far as making one (the caller stops it).
 */
static inline int pgb_cluster_start(const char *script, char *url, size_t url_n, char *dir,
                                    size_t dir_n)
{
	char cmd[4200];
	url[0] = dir[0] = '\0';
	if (access(script, X_OK) != 0) {
		fprintf(stderr,
		        "error: cannot run %s (%s); run from the repository root or set "
		        "PROLLY_PG_URL\n",
		        script, strerror(errno));
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "'%s' start", script);
	fflush(stdout);
	fflush(stderr);
	FILE *p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "error: cannot run %s: %s\n", script, strerror(errno));
		return -1;
	}
	char line[4200];
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		pgb_export_value(line, "PROLLY_PG_URL", url, url_n);
		pgb_export_value(line, "PROLLY_PG_DIR", dir, dir_n);
	}
	int status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "error: %s start failed (status %d)\n", script, status);
		return -1;
	}
	if (!url[0] || !dir[0]) {
		fprintf(stderr, "error: %s start printed no PROLLY_PG_URL / PROLLY_PG_DIR\n", script);
		return -1;
	}
	return 0;
}

/* Runs `script stop dir` and waits for it. Only async-signal-safe calls: usable from a signal
 * handler. Returns the script's exit status or -1. */
static inline int pgb_cluster_stop(const char *script, const char *dir)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[4];
		argv[0] = (char *)script;
		argv[1] = (char *)"stop";
		argv[2] = (char *)dir;
		argv[3] = NULL;
		execv(script, argv);
		_exit(127);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif /* BENCH_PG_BASELINE_H */
