/*
 * pgconn.h - libpq pieces of the benchmarks' PostgreSQL work (bench_pg_*): a connection for
 * administration and for the scale engine's plain-table baseline, statements counted like the
 * PostgreSQL store counts its own (every statement and every round trip is added to the calling
 * thread's prolly counters), and the binary encodings the baseline sends (bytea[] parameters,
 * COPY ... (FORMAT binary) rows) into a bench_buf.
 *
 * Errors go through prolly_set_error() (PROLLY_ESTORE, PROLLY_ENOMEM), so the engine's cells
 * report them like engine errors. A connection string is never printed: messages pass through
 * prolly_redact_message().
 */
#ifndef BENCH_PGCONN_H
#define BENCH_PGCONN_H

#include "buf.h"
#include "prolly.h"

#include <libpq-fe.h>

#include <stddef.h>
#include <stdint.h>

/* Adds statements and round trips to the calling thread's prolly counters. */
void bench_pg_count(uint64_t statements, uint64_t round_trips);
/* Sets the prolly error "what: <the server's message>" and returns PROLLY_ESTORE; remembers the
 * failure's SQLSTATE for bench_pg_sqlstate. */
int bench_pg_error(PGconn *conn, const PGresult *res, const char *what);
/* The SQLSTATE of the calling thread's last failed statement ("" if the server gave none):
 * "40001" tells a lost race from a failure. */
const char *bench_pg_sqlstate(void);
/* Connects, counted as one round trip. The server's notices are silenced from the start of the
 * session (its startup WARNINGs, DROP ... CASCADE listing what it dropped, IF NOT EXISTS
 * skipping): the harness's stderr is its progress and errors. 0, PROLLY_ENOMEM or PROLLY_ESTORE
 * (the reason, redacted; *out NULL). */
int bench_pg_connect(PGconn **out, const char *conninfo);
/* The same for the harness's own connections outside any measured operation (not counted): app
 * as application_name (NULL: conninfo's), timeout_s as connect_timeout (0: conninfo's), which
 * applies to the whole attempt. Both set the session's search_path to pg_catalog, pg_temp in
 * the startup packet (after conninfo's own options; no round trip): statements name every object
 * outside pg_catalog with its schema, and a function planted on the path of the role or the
 * database is never called. */
int bench_pg_connect_as(PGconn **out, const char *conninfo, const char *app, int timeout_s);
/* One statement without parameters (one round trip). With out, the result is handed over. */
int bench_pg_exec(PGconn *conn, const char *sql, PGresult **out);
int bench_pg_prepare(PGconn *conn, const char *name, const char *sql, int nparams);
/* A prepared statement (at most BENCH_PG_MAX_PARAMS parameters) with binary parameters and
 * binary results. */
#define BENCH_PG_MAX_PARAMS 16
int bench_pg_run(PGconn *conn, const char *name, int n, const char *const *values,
                 const int *lengths, PGresult **out);
/* The postmaster of the server conn is connected to (the parent of conn's backend; the server
 * must run on this machine) into *out, 0 when the parent is unknown. One statement: 0, or
 * PROLLY_ESTORE when it fails (*out is then 0). */
int bench_pg_postmaster(long *out, PGconn *conn);
/* The same through a connection of its own to conninfo, closed before returning: the
 * postmaster's pid, or 0 when it cannot be found (no connection, a failed statement, a server
 * on another machine). */
long bench_pg_postmaster_at(const char *conninfo);
/* The schema the prolly extension of conn's database is installed in, into out ("" when it is
 * not installed). One statement: 0, or PROLLY_ESTORE when it fails. */
int bench_pg_ext_schema(char *out, size_t n, PGconn *conn);
/* The same for the extension ext (a plain name of the harness's own). */
int bench_pg_ext_schema_of(char *out, size_t n, PGconn *conn, const char *ext);
/* object (a relation or function of extension ext) named with the extension's quoted schema
 * ("public".pg_stat_statements) into out, "" when ext is not installed. As above. */
int bench_pg_ext_object(char *out, size_t n, PGconn *conn, const char *ext, const char *object);
/* DROP EXTENSION prolly on conn's database: the end of a suite whose sql contender installed it
 * (the next suite installs it in its own schema). With schema, only when it is installed there.
 * Failures are ignored. */
void bench_pg_drop_prolly(PGconn *conn, const char *schema);
/* The same through a connection of its own to conninfo (any schema). */
void bench_pg_drop_prolly_at(const char *conninfo);
/* A quoted identifier, or -1 if it does not fit (the names used here are plain ASCII). */
int bench_pg_ident(char *out, size_t n, const char *name);
/* Big-endian 32-bit integer at p (binary results). */
uint32_t bench_pg_get32(const unsigned char *p);

/* bytea[] in PostgreSQL's binary array format: begin (empties b) with the element count, then
 * each element. 0 or PROLLY_ENOMEM. */
int bench_pg_array_begin(bench_buf *b, size_t n);
int bench_pg_array_add(bench_buf *b, const void *d, size_t len);
int bench_pg_array_add_null(bench_buf *b); /* a NULL element */
/* The same for an array of another element type (20: int8[]); elements added as above. */
int bench_pg_array_begin_type(bench_buf *b, size_t n, uint32_t elem_oid);
/* COPY ... (FORMAT binary): the header, rows of two bytea fields, the trailer. */
int bench_pg_copy_header(bench_buf *b);
int bench_pg_copy_row2(bench_buf *b, const void *k, size_t klen, const void *v, size_t vlen);
/* A row of nfields fields, each then added with bench_pg_array_add (the same length-prefixed
 * encoding). */
int bench_pg_copy_row_begin(bench_buf *b, uint16_t nfields);
int bench_pg_copy_trailer(bench_buf *b);
/* Sends b (and empties it) during a COPY FROM STDIN; ends a COPY and reads its result. */
int bench_pg_copy_send(PGconn *conn, bench_buf *b);
int bench_pg_copy_end(PGconn *conn);

#endif /* BENCH_PGCONN_H */
