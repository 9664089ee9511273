/*
 * pgstat.c - server-side counters around a measured cell: a monitoring connection of its own
 * (application_name "prolly-harness-monitor") takes a snapshot before and after, and
 * hp_delta_row writes the differences into the cell's row.
 *
 * One snapshot is one round trip: "SELECT pg_stat_clear_snapshot(); SELECT ..." sent as one
 * simple-protocol string (one implicit transaction), the second statement reading
 *   - pg_stat_statements: sum(calls), sum(total_exec_time) over this database's entries, leaving
 *     out the monitor's own statements (any text naming pg_stat_statements, pg_stat_database,
 *     pg_stat_clear_snapshot or pg_total_relation_size);
 *   - pg_stat_database (this database): xact_commit, xact_rollback, blks_hit, blks_read;
 *   - WAL: the current WAL insert position in bytes (pg_current_wal_lsn() - '0/0'), which grows
 *     by exactly the WAL the cluster writes and, unlike pg_stat_wal.wal_bytes, is not subject to
 *     the statistics delay below; on a standby, pg_stat_wal.wal_bytes (PostgreSQL 14+);
 *   - pg_database_size(current_database()), and over the ordinary tables of the harness's schema
 *     the sum of pg_table_size (heap + TOAST + maps) and of pg_indexes_size.
 *
 * Freshness. pg_stat_statements entries are updated when each statement ends, so the calls are
 * current. pg_stat_database is part of the cumulative statistics system: since PostgreSQL 15 a
 * backend keeps its counts locally and flushes them when it goes idle at most once a second, an
 * idle backend that could not flush retries after about 10 s, and it flushes at exit. So the
 * commits and block counts of other sessions may reach a snapshot up to a second (rarely ~10 s)
 * late; take the "after" snapshot once the workers' connections are idle or closed (closing the
 * pool makes every backend flush at exit) and, for short cells, treat these counters as
 * approximate. pg_stat_clear_snapshot() only drops this backend's cached copy, so a snapshot
 * never reuses values read by the previous one.
 *
 * Without pg_stat_statements (not preloaded, or the extension cannot be created), snapshots still
 * work: stmt_calls and stmt_exec_ms are NaN, so rows show them empty instead of a false 0, and
 * hp_statements_available() says 0.
 */
#include "harness.h"
#include "pgconn.h"
#include "prolly.h"

#include <libpq-fe.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct hp_conn {
	PGconn *pg;
	char *sql;      /* the snapshot query */
	int have_stmts; /* pg_stat_statements is readable */
};

const char *const hp_columns[] = {"pg_calls",          "pg_exec_ms",
                                  "wal_bytes",         "xact_commit",
                                  "xact_rollback",     "blks_hit",
                                  "blks_read",         "db_bytes_before",
                                  "db_bytes_after",    "table_bytes_before",
                                  "table_bytes_after", "index_bytes_before",
                                  "index_bytes_after", NULL};

/* libpq's message on one line, any password of url (NULL: none known) hidden. */
static void pq_err(char *err, size_t errn, const char *what, const PGconn *pg, const char *url)
{
	char m[400];
	prolly_redact_message(m, sizeof(m), pg ? PQerrorMessage(pg) : "out of memory", url);
	bench_seterr(err, errn, "pgstat: %s: %s", what, m);
}

/* Runs sql, ignoring the result; 0 if it succeeded. */
static int try_exec(PGconn *pg, const char *sql)
{
	PGresult *r = PQexec(pg, sql);
	ExecStatusType st = PQresultStatus(r);
	PQclear(r);
	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
}

/* stmts: pg_stat_statements named with its schema (NULL: not readable). */
static char *build_sql(PGconn *pg, const char *schema, const char *stmts_rel)
{
	char *lit = PQescapeLiteral(pg, schema ? schema : "", strlen(schema ? schema : ""));
	int ver = PQserverVersion(pg);
	const char *time_col = ver >= 130000 ? "total_exec_time" : "total_time";
	const char *wal = ver >= 140000 ? "CASE WHEN pg_is_in_recovery() THEN (SELECT wal_bytes FROM "
	                                  "pg_stat_wal) ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), "
	                                  "'0/0') END"
	                                : "CASE WHEN pg_is_in_recovery() THEN 0 ELSE "
	                                  "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') END";
	char stmts[1536];
	size_t n = 4096;
	char *sql = NULL;
	if (!lit)
		return NULL;
	if (stmts_rel)
		snprintf(stmts, sizeof(stmts),
		         "(SELECT coalesce(sum(s.calls), 0) FROM %s s WHERE s.dbid = d.datid "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_statements%%' "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_database%%' "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_clear\\_snapshot%%' "
		         "AND s.query NOT LIKE '%%pg\\_total\\_relation\\_size%%') AS calls, "
		         "(SELECT coalesce(sum(s.%s), 0) FROM %s s WHERE s.dbid = d.datid "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_statements%%' "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_database%%' "
		         "AND s.query NOT LIKE '%%pg\\_stat\\_clear\\_snapshot%%' "
		         "AND s.query NOT LIKE '%%pg\\_total\\_relation\\_size%%') AS exec_ms",
		         stmts_rel, time_col, stmts_rel);
	else
		snprintf(stmts, sizeof(stmts), "NULL AS calls, NULL AS exec_ms");
	if ((sql = malloc(n + strlen(lit) * 2)) != NULL)
		snprintf(
		    sql, n + strlen(lit) * 2,
		    "SELECT pg_stat_clear_snapshot(); "
		    "SELECT %s, d.xact_commit, d.xact_rollback, d.blks_hit, d.blks_read, %s AS wal, "
		    "pg_database_size(d.datid) AS db_bytes, "
		    "(SELECT coalesce(sum(pg_table_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace "
		    "ns ON ns.oid = c.relnamespace WHERE ns.nspname = %s AND c.relkind IN ('r', 'm')) "
		    "AS table_bytes, "
		    "(SELECT coalesce(sum(pg_indexes_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace "
		    "ns ON ns.oid = c.relnamespace WHERE ns.nspname = %s AND c.relkind IN ('r', 'm')) "
		    "AS index_bytes "
		    "FROM pg_stat_database d WHERE d.datname = current_database()",
		    stmts, wal, lit, lit);
	PQfreemem(lit);
	return sql;
}

int hp_connect(hp_conn **out, const char *url, const char *schema, char *err, size_t errn)
{
	hp_conn *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c) {
		bench_seterr(err, errn, "pgstat: out of memory");
		return -1;
	}
	if (bench_pg_connect_as(&c->pg, url, "prolly-harness-monitor", 15)) {
		bench_seterr(err, errn, "pgstat: cannot connect: %s", prolly_last_error());
		goto fail;
	}
	/* Best effort: the extension may exist already, be missing, or need privileges we lack.
	 * Named with its schema (the session's search_path is pg_catalog's alone); created in public,
	 * where the connection's default path put it before. */
	char rel[200] = "", probe[256];
	(void)bench_pg_ext_object(rel, sizeof(rel), c->pg, "pg_stat_statements", "pg_stat_statements");
	if (!rel[0]) {
		(void)try_exec(c->pg, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public");
		(void)bench_pg_ext_object(rel, sizeof(rel), c->pg, "pg_stat_statements",
		                          "pg_stat_statements");
	}
	snprintf(probe, sizeof(probe), "SELECT 1 FROM %s LIMIT 1", rel);
	c->have_stmts = rel[0] && try_exec(c->pg, probe) == 0;
	if (!(c->sql = build_sql(c->pg, schema, c->have_stmts ? rel : NULL))) {
		pq_err(err, errn, "building the snapshot query", c->pg, NULL);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	hp_close(c);
	return -1;
}

void hp_close(hp_conn *c)
{
	if (!c)
		return;
	if (c->pg)
		PQfinish(c->pg);
	free(c->sql);
	free(c);
}

int hp_statements_available(const hp_conn *c)
{
	return c && c->have_stmts;
}

static double num(const PGresult *r, int col)
{
	return PQgetisnull(r, 0, col) ? NAN : strtod(PQgetvalue(r, 0, col), NULL);
}

int hp_snap(hp_conn *c, hp_snapshot *s, char *err, size_t errn)
{
	PGresult *r = NULL;
	int rc = -1;
	memset(s, 0, sizeof(*s));
	if (!c || !c->pg) {
		bench_seterr(err, errn, "pgstat: no monitoring connection");
		return -1;
	}
	if (PQstatus(c->pg) != CONNECTION_OK)
		PQreset(c->pg); /* the server restarted or dropped us: one more try */
	r = PQexec(c->pg, c->sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQnfields(r) != 10) {
		pq_err(err, errn, "snapshot query", c->pg, NULL);
		goto cleanup;
	}
	s->stmt_calls = num(r, 0);
	s->stmt_exec_ms = num(r, 1);
	s->xact_commit = num(r, 2);
	s->xact_rollback = num(r, 3);
	s->blks_hit = num(r, 4);
	s->blks_read = num(r, 5);
	s->wal_bytes = num(r, 6);
	s->db_bytes = num(r, 7);
	s->table_bytes = num(r, 8);
	s->index_bytes = num(r, 9);
	s->valid = 1;
	rc = 0;
cleanup:
	PQclear(r);
	return rc;
}

static void size_col(hrow *row, const char *col, double v)
{
	if (isfinite(v) && v >= 0)
		hrow_u64(row, col, (uint64_t)v);
	else
		hrow_str(row, col, "");
}

void hp_delta_row(hrow *row, const hp_snapshot *a, const hp_snapshot *b)
{
	if (!row || !a || !b || !a->valid || !b->valid)
		return;
	hrow_f64(row, "pg_calls", b->stmt_calls - a->stmt_calls);
	hrow_f64(row, "pg_exec_ms", b->stmt_exec_ms - a->stmt_exec_ms);
	hrow_f64(row, "wal_bytes", b->wal_bytes - a->wal_bytes);
	hrow_f64(row, "xact_commit", b->xact_commit - a->xact_commit);
	hrow_f64(row, "xact_rollback", b->xact_rollback - a->xact_rollback);
	hrow_f64(row, "blks_hit", b->blks_hit - a->blks_hit);
	hrow_f64(row, "blks_read", b->blks_read - a->blks_read);
	size_col(row, "db_bytes_before", a->db_bytes);
	size_col(row, "db_bytes_after", b->db_bytes);
	size_col(row, "table_bytes_before", a->table_bytes);
	size_col(row, "table_bytes_after", b->table_bytes);
	size_col(row, "index_bytes_before", a->index_bytes);
	size_col(row, "index_bytes_after", b->index_bytes);
}
