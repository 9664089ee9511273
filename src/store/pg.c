/*
 * pg.c - the PostgreSQL store, through libpq.
 *
 * Tables (in a configurable schema, default public; DDL in init_tmpl below and docs/postgres.md):
 *   nodes (id bytea primary key, node bytea)   STORAGE MAIN, COMPRESSION lz4: compressed, in-line
 *   refs  (name bytea primary key, value bytea) names as bytes: byte order is memcmp order
 *   meta  (key text primary key, value bigint)  rows schema_version (2) and epoch
 * plus small PL/pgSQL functions. prolly_write (schema version 2) publishes a whole write in ONE
 * statement run in its own implicit transaction: epoch check, requires check, node insert and
 * every ref compare-and-swap, the last two inside a BEGIN ... EXCEPTION block that a failed
 * compare-and-swap rolls back while the per-ref outcome survives in local variables. Writes
 * larger than one INSERT chunk (batch_items nodes), and stores on a version-1 schema, use the
 * version-1 pipeline instead: BEGIN, prolly_write_begin (takes the write lock shared -- a
 * transaction-level advisory lock the gc's epoch bump takes exclusive; version-1 schemas lock the
 * epoch row FOR SHARE instead -- and raises PLY01 if the epoch moved), [prolly_write_requires
 * (PLY03 if a required node is missing)], the INSERT chunks, one prolly_ref_cas per ref (one conditional INSERT/UPDATE/DELETE, reporting
 * whether it applied and the current value, flagging a failure in a transaction-local setting),
 * prolly_write_finish (PLY02 if any ref update failed, so the queued COMMIT is skipped), COMMIT:
 * one round trip either way.
 *
 * Schema versions: a new schema is created at version 2; a version-1 schema is migrated (the
 * prolly_write function added, the version set to 2) by prolly_store_pg_init and by an open
 * without no_create when the role may create functions; otherwise the store keeps using the
 * version-1 pipeline (decided at open, switched on by a later init). Newer versions are refused.
 *
 * Every connection lives in pipeline mode, non-blocking, with every statement prepared once.
 * An operation queues its statements, one Sync, then reads every result while flushing (so a
 * large pipeline cannot deadlock on full socket buffers). Parameters and results are binary;
 * array parameters are encoded here in PostgreSQL's binary array format.
 *
 * gc: see gc() and docs/postgres.md ("gc while others write").
 */
#include "store/pg.h"
#include "internal.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SCHEMA_VERSION 2
#define BOOL_OID 16
#define BYTEA_OID 17
#define INT4_OID 23
#define LOCK_INIT 1886547820 /* advisory lock keys (first half): "prol" */
#define LOCK_GC 1886547821
/* 1886547822: writes (shared, inside prolly_write and prolly_write_begin) against the gc's epoch
 * bump (exclusive); written as a literal in the SQL above and below. */
#define GC_REMARKS_OUTSIDE 2 /* sweeps retried after a re-mark without the lock, then with it */

/* ------------------------------------------------------------------------------------------ */
/* Statements                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* '@' stands for the quoted schema name. */
enum {
	Q_BEGIN,
	Q_COMMIT,
	Q_ROLLBACK,
	Q_ASYNC,
	Q_WBEGIN,
	Q_WREQUIRES,
	Q_WINSERT,
	Q_WCAS,
	Q_WFINISH,
	Q_WRITE, /* schema version 2 only: prepared where the function exists */
	Q_EPOCH,
	Q_GETNODES,
	Q_GETREF,
	Q_GETREFOBJS,
	Q_LISTREFS,
	Q_STAT,
	Q_GCBUMP,
	Q_GCREFS,
	Q_GCDELETE,
	N_QUERIES
};

static const char *const query_tmpl[N_QUERIES] = {
    [Q_BEGIN] = "BEGIN",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_ASYNC] = "SET LOCAL synchronous_commit TO off",
    [Q_WBEGIN] = "SELECT @.prolly_write_begin($1::int8)",
    [Q_WREQUIRES] = "SELECT @.prolly_write_requires($1::bytea[])",
    [Q_WINSERT] = "INSERT INTO @.nodes (id, node) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
                  "ON CONFLICT DO NOTHING",
    [Q_WCAS] = "SELECT applied, cur_exists, cur FROM @.prolly_ref_cas($1::bytea, $2::int4, "
               "$3::bytea, $4::bool, $5::bytea)",
    [Q_WFINISH] = "SELECT @.prolly_write_finish()",
    [Q_WRITE] = "SELECT o_epoch, o_inserted, o_applied, o_cur_exists, o_cur FROM "
                "@.prolly_write($1::int8, $2::bool, $3::bytea[], $4::bytea[], $5::bytea[], "
                "$6::bytea[], $7::int4[], $8::bytea[], $9::bool[], $10::bytea[])",
    [Q_EPOCH] = "SELECT value FROM @.meta WHERE key = 'epoch'",
    [Q_GETNODES] = "SELECT r.i, n.node FROM unnest($1::bytea[]) WITH ORDINALITY AS r(id, i) "
                   "JOIN @.nodes n ON n.id = r.id",
    [Q_GETREF] = "SELECT (SELECT value FROM @.refs WHERE name = $1::bytea), "
                 "(SELECT value FROM @.meta WHERE key = 'epoch')",
    /* The ref, the epoch, the object the ref names and the one whose id is at offset $2 of it. */
    [Q_GETREFOBJS] = "SELECT r.value, (SELECT value FROM @.meta WHERE key = 'epoch'), c.node, "
                     "t.node FROM (SELECT $1::bytea AS name) q "
                     "LEFT JOIN @.refs r ON r.name = q.name "
                     "LEFT JOIN @.nodes c ON c.id = r.value "
                     "LEFT JOIN @.nodes t ON octet_length(c.node) >= $2::int4 + 32 "
                     "AND t.id = substring(c.node FROM $2::int4 + 1 FOR 32)",
    [Q_LISTREFS] = "SELECT name, value FROM @.refs WHERE name >= $1::bytea "
                   "AND ($2::bytea IS NULL OR name < $2::bytea) ORDER BY name",
    [Q_STAT] = "SELECT count(*), coalesce(sum(octet_length(node)), 0)::int8 FROM @.nodes",
    /* The exclusive side of the writers' shared advisory lock, then the bump (whose row lock
     * also waits for version-1 writers, which lock the epoch row FOR SHARE). */
    [Q_GCBUMP] = "WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(1886547822, hashtext(#))) "
                 "UPDATE @.meta SET value = value + 1 FROM l WHERE key = 'epoch' RETURNING value",
    [Q_GCREFS] = "SELECT name, value FROM @.refs",
    [Q_GCDELETE] = "WITH d AS (DELETE FROM @.nodes WHERE id = ANY($1::bytea[]) "
                   "RETURNING octet_length(node) AS n) SELECT count(*), coalesce(sum(n), 0)::int8 "
                   "FROM d",
};

/*
 * The schema, idempotently: one DO block, serialised by an advisory lock, that creates the
 * version-1 objects when the meta table is missing, then migrates a version-1 schema to version 2
 * (adds prolly_write, sets schema_version); a new schema thus ends at version 2 in one
 * transaction. '#' stands for the literal 'schema.meta'.
 */
static const char init_tmpl[] =
    "DO $prolly_init$\n"
    "DECLARE v bigint;\n"
    "BEGIN\n"
    "PERFORM pg_advisory_xact_lock(1886547820, hashtext(#));\n"
    "IF to_regclass(#) IS NULL THEN\n"
    "CREATE SCHEMA IF NOT EXISTS @;\n"
    /* Nodes are compressed (lz4 where the server has it) and stay in their heap row: STORAGE
     * MAIN moves a value out of line only when even compressed it cannot fit a page, so a node
     * read costs no TOAST lookup. */
    "CREATE TABLE @.nodes (id bytea PRIMARY KEY, node bytea NOT NULL);\n"
    "EXECUTE 'ALTER TABLE ' || left(#, -5) || '.nodes ALTER COLUMN node SET STORAGE MAIN';\n"
    "BEGIN\n"
    "  EXECUTE 'ALTER TABLE ' || left(#, -5) || '.nodes ALTER COLUMN node SET COMPRESSION lz4';\n"
    "EXCEPTION WHEN OTHERS THEN NULL;\n"
    "END;\n"
    "CREATE TABLE @.refs (name bytea PRIMARY KEY, value bytea NOT NULL);\n"
    "CREATE TABLE @.meta (key text PRIMARY KEY, value bigint NOT NULL);\n"
    "INSERT INTO @.meta (key, value) VALUES ('schema_version', 1), ('epoch', 1);\n"
    "CREATE FUNCTION @.prolly_write_begin(expected bigint) RETURNS bigint\n"
    "LANGUAGE plpgsql AS $f$\n"
    "DECLARE cur bigint;\n"
    "BEGIN\n"
    "  SELECT value INTO cur FROM @.meta WHERE key = 'epoch' FOR SHARE;\n"
    "  IF expected IS NOT NULL AND cur IS DISTINCT FROM expected THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY01', MESSAGE = 'prolly: the gc epoch moved',\n"
    "      DETAIL = cur::text;\n"
    "  END IF;\n"
    "  RETURN cur;\n"
    "END $f$;\n"
    "CREATE FUNCTION @.prolly_write_requires(ids bytea[]) RETURNS bigint\n"
    "LANGUAGE plpgsql AS $f$\n"
    "DECLARE have bigint;\n"
    "BEGIN\n"
    "  SELECT count(*) INTO have FROM @.nodes WHERE id = ANY(ids);\n"
    "  IF have < cardinality(ids) THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY03',\n"
    "      MESSAGE = 'prolly: nodes this write builds on are missing',\n"
    "      DETAIL = (cardinality(ids) - have)::text;\n"
    "  END IF;\n"
    "  RETURN have;\n"
    "END $f$;\n"
    "CREATE FUNCTION @.prolly_ref_cas(p_name bytea, p_expect int, p_expected bytea,\n"
    "  p_remove boolean, p_value bytea, OUT applied boolean, OUT cur_exists boolean,\n"
    "  OUT cur bytea)\n"
    "LANGUAGE plpgsql AS $f$\n"
    "BEGIN\n"
    "  IF p_expect = 0 THEN\n"
    "    IF p_remove THEN\n"
    "      DELETE FROM @.refs WHERE name = p_name;\n"
    "    ELSE\n"
    "      INSERT INTO @.refs (name, value) VALUES (p_name, p_value)\n"
    "        ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;\n"
    "    END IF;\n"
    "    applied := true;\n"
    "  ELSIF p_expect = 1 THEN\n"
    "    IF p_remove THEN\n"
    "      PERFORM 1 FROM @.refs WHERE name = p_name;\n"
    "      applied := NOT FOUND;\n"
    "    ELSE\n"
    "      INSERT INTO @.refs (name, value) VALUES (p_name, p_value) ON CONFLICT (name) DO "
    "NOTHING;\n"
    "      applied := FOUND;\n"
    "    END IF;\n"
    "  ELSE\n"
    "    IF p_remove THEN\n"
    "      DELETE FROM @.refs WHERE name = p_name AND value = p_expected;\n"
    "    ELSE\n"
    "      UPDATE @.refs SET value = p_value WHERE name = p_name AND value = p_expected;\n"
    "    END IF;\n"
    "    applied := FOUND;\n"
    "  END IF;\n"
    "  IF applied THEN\n"
    "    cur_exists := NOT p_remove;\n"
    "    cur := CASE WHEN p_remove THEN NULL ELSE p_value END;\n"
    "  ELSE\n"
    "    SELECT value INTO cur FROM @.refs WHERE name = p_name;\n"
    "    cur_exists := FOUND;\n"
    "    PERFORM set_config('prolly.ref_conflict', 'yes', true);\n"
    "  END IF;\n"
    "END $f$;\n"
    "CREATE FUNCTION @.prolly_write_finish() RETURNS void\n"
    "LANGUAGE plpgsql AS $f$\n"
    "BEGIN\n"
    "  IF current_setting('prolly.ref_conflict', true) = 'yes' THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY02',\n"
    "      MESSAGE = 'prolly: a ref update found an unexpected value';\n"
    "  END IF;\n"
    "END $f$;\n"
    "END IF;\n"
    "SELECT value INTO v FROM @.meta WHERE key = 'schema_version';\n"
    "IF v = 1 THEN\n"
    /* One write in one statement (see pg_write). The node insert and the compare-and-swaps run
     * in a subtransaction (the EXCEPTION block): a failed compare-and-swap raises PLY02 inside
     * it, which undoes them all, while the outcome of every ref stays in the local arrays. One
     * row per ref, in the order given (name order); one row with NULL ref columns if none. */
    "CREATE FUNCTION @.prolly_write(p_epoch bigint, p_async boolean, p_requires bytea[],\n"
    "  p_ids bytea[], p_nodes bytea[], p_names bytea[], p_expects int[], p_expected bytea[],\n"
    "  p_removes boolean[], p_values bytea[])\n"
    "RETURNS TABLE (o_epoch bigint, o_inserted bigint, o_applied boolean,\n"
    "  o_cur_exists boolean, o_cur bytea)\n"
    "LANGUAGE plpgsql AS $f$\n"
    "DECLARE\n"
    "  v_epoch bigint;\n"
    "  v_have bigint;\n"
    "  v_inserted bigint := 0;\n"
    "  v_n int := coalesce(cardinality(p_names), 0);\n"
    "  v_applied boolean[] := '{}';\n"
    "  v_exists boolean[] := '{}';\n"
    "  v_cur bytea[] := '{}';\n"
    "  v_failed boolean := false;\n"
    "  c record;\n"
    "BEGIN\n"
    /* Writers hold this lock shared, the gc's epoch bump exclusive: it waits for the writes in
     * flight and holds new ones back, with no row lock (a FOR SHARE row lock dirties the meta
     * row and, among concurrent writers, makes a MultiXact every time). */
    "  PERFORM pg_advisory_xact_lock_shared(1886547822, hashtext(#));\n"
    "  SELECT value INTO v_epoch FROM @.meta WHERE key = 'epoch';\n"
    "  IF p_epoch IS NOT NULL AND v_epoch IS DISTINCT FROM p_epoch THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY01', MESSAGE = 'prolly: the gc epoch moved',\n"
    "      DETAIL = v_epoch::text;\n"
    "  END IF;\n"
    /* Local to this statement's transaction, read when it commits. */
    "  IF p_async THEN\n"
    "    PERFORM set_config('synchronous_commit', 'off', true);\n"
    "  END IF;\n"
    "  IF coalesce(cardinality(p_requires), 0) > 0 THEN\n"
    "    SELECT count(*) INTO v_have FROM @.nodes WHERE id = ANY(p_requires);\n"
    "    IF v_have < cardinality(p_requires) THEN\n"
    "      RAISE EXCEPTION USING ERRCODE = 'PLY03',\n"
    "        MESSAGE = 'prolly: nodes this write builds on are missing',\n"
    "        DETAIL = (cardinality(p_requires) - v_have)::text;\n"
    "    END IF;\n"
    "  END IF;\n"
    "  BEGIN\n"
    "    IF coalesce(cardinality(p_ids), 0) > 0 THEN\n"
    "      INSERT INTO @.nodes (id, node) SELECT * FROM unnest(p_ids, p_nodes)\n"
    "        ON CONFLICT DO NOTHING;\n"
    "      GET DIAGNOSTICS v_inserted = ROW_COUNT;\n"
    "    END IF;\n"
    "    FOR i IN 1 .. v_n LOOP\n"
    "      SELECT * INTO c FROM @.prolly_ref_cas(p_names[i], p_expects[i], p_expected[i],\n"
    "        p_removes[i], p_values[i]);\n"
    "      v_applied[i] := c.applied;\n"
    "      v_exists[i] := c.cur_exists;\n"
    "      v_cur[i] := c.cur;\n"
    "      IF NOT c.applied THEN\n"
    "        v_failed := true;\n"
    "      END IF;\n"
    "    END LOOP;\n"
    "    IF v_failed THEN\n"
    "      RAISE EXCEPTION USING ERRCODE = 'PLY02',\n"
    "        MESSAGE = 'prolly: a ref update found an unexpected value';\n"
    "    END IF;\n"
    "  EXCEPTION WHEN SQLSTATE 'PLY02' THEN\n"
    /* Nothing was written: the commit record of the epoch row lock need not be flushed. */
    "    v_inserted := 0;\n"
    "    PERFORM set_config('synchronous_commit', 'off', true);\n"
    "  END;\n"
    "  FOR i IN 1 .. greatest(v_n, 1) LOOP\n"
    "    o_epoch := v_epoch;\n"
    "    o_inserted := v_inserted;\n"
    "    o_applied := v_applied[i];\n"
    "    o_cur_exists := v_exists[i];\n"
    "    o_cur := v_cur[i];\n"
    "    RETURN NEXT;\n"
    "  END LOOP;\n"
    "END $f$;\n"
    "CREATE OR REPLACE FUNCTION @.prolly_write_begin(expected bigint) RETURNS bigint\n"
    "LANGUAGE plpgsql AS $f$\n"
    "DECLARE cur bigint;\n"
    "BEGIN\n"
    "  PERFORM pg_advisory_xact_lock_shared(1886547822, hashtext(#));\n"
    "  SELECT value INTO cur FROM @.meta WHERE key = 'epoch';\n"
    "  IF expected IS NOT NULL AND cur IS DISTINCT FROM expected THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY01', MESSAGE = 'prolly: the gc epoch moved',\n"
    "      DETAIL = cur::text;\n"
    "  END IF;\n"
    "  RETURN cur;\n"
    "END $f$;\n"
    "UPDATE @.meta SET value = 2 WHERE key = 'schema_version';\n"
    "END IF;\n"
    "END\n"
    "$prolly_init$";

/* ------------------------------------------------------------------------------------------ */
/* The store                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct pgconn {
	PGconn *pg;
	int prepared;
	int has_write; /* Q_WRITE is prepared (the schema had prolly_write when prepared) */
} pgconn;

typedef struct waiter {
	pthread_cond_t cv;
	pgconn *got;
	struct waiter *next;
} waiter;

typedef struct counters {
	_Atomic uint64_t round_trips, statements, insert_statements, rows_inserted, rows_read,
	    bytes_read, bytes_sent, pool_waits, pool_wait_ns, pool_timeouts, connects, broken,
	    gc_batches, gc_remarks;
} counters;

typedef struct pg_store {
	prolly_store base;
	char *conninfo;
	char *password; /* NULL if none: every message is scrubbed of it */
	char *target;   /* "host=... port=... dbname=... user=..." for messages */
	char *schema;
	char *qs; /* the schema as a quoted identifier */
	char *sql[N_QUERIES];
	char *init_sql;
	char *meta_literal;
	unsigned pool_size, pool_timeout_ms;
	size_t batch_items, read_chunk, gc_batch;
	int no_create;
	_Atomic int ready; /* the schema is known to exist: connections prepare statements */
	_Atomic int fast;  /* the schema is at version 2: one-statement writes (prolly_write) */
	_Atomic unsigned fail_chunk;

	pthread_mutex_t mu; /* the pool */
	pgconn *conns;
	pgconn **idle;
	size_t n_idle;
	waiter *head, *tail;
	pthread_mutex_t gc_mu; /* one gc at a time per store (across processes: an advisory lock) */
	counters cnt;
} pg_store;

/* A connection pinned to the calling thread (the gc's, while it calls mark()), used for that
 * thread's store calls instead of the pool. */
static _Thread_local pg_store *pin_store;
static _Thread_local pgconn *pin_conn;
static _Thread_local int pin_busy;

/* Refs returned by list_refs on the gc's thread while mark() runs: what the mark started from. */
typedef struct pref {
	char *name;
	size_t len;
	prolly_id value;
} pref;

typedef struct preflist {
	pref *v;
	size_t n, cap;
} preflist;

static _Thread_local pg_store *cap_store;
static _Thread_local preflist *cap_list;

static void cnt_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                              */
/* ------------------------------------------------------------------------------------------ */

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static int read_int8(const PGresult *r, int row, int col, uint64_t *out)
{
	if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
		return -1;
	*out = get_be64((const unsigned char *)PQgetvalue(r, row, col));
	return 0;
}

static int read_bool(const PGresult *r, int row, int col)
{
	return !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == 1 &&
	       PQgetvalue(r, row, col)[0] != 0;
}

/* Replaces every '@' of tmpl with a, every '#' with b. */
static char *subst(const char *tmpl, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = 0;
	for (const char *p = tmpl; *p; p++)
		n += *p == '@' ? la : *p == '#' ? lb : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = tmpl; *p; p++) {
		if (*p == '@') {
			memcpy(o, a, la);
			o += la;
		} else if (*p == '#') {
			memcpy(o, b, lb);
			o += lb;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return out;
}

/* "name" with embedded quotes doubled. */
static char *quote_ident(const char *s)
{
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == '"' ? 2 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = '"';
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			*o++ = '"';
		*o++ = *p;
	}
	*o++ = '"';
	*o = 0;
	return out;
}

/* 'text' with embedded quotes doubled (the schema name has no backslash). */
static char *quote_literal(const char *s)
{
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 2 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			*o++ = '\'';
		*o++ = *p;
	}
	*o++ = '\'';
	*o = 0;
	return out;
}

/*
 * Copies msg into out (size outsz), removing what could be a password: every occurrence of
 * password (when known), the value after "password=", and the part after ':' of a URI's
 * user-info ("scheme://user:SECRET@host"). Trailing newlines are dropped.
 */
static void redact(char *out, size_t outsz, const char *msg, const char *password)
{
	size_t o = 0, plen = password ? strlen(password) : 0;
	const char *p = msg ? msg : "";
	if (!outsz)
		return;
	while (*p && o + 1 < outsz) {
		if (plen && strncmp(p, password, plen) == 0) {
			for (const char *s = "***"; *s && o + 1 < outsz; s++)
				out[o++] = *s;
			p += plen;
			continue;
		}
		if (strncmp(p, "password=", 9) == 0) {
			for (const char *s = "password=***"; *s && o + 1 < outsz; s++)
				out[o++] = *s;
			p += 9;
			while (*p && *p != ' ' && *p != '"' && *p != '\'' && *p != '&')
				p++;
			continue;
		}
		if (strncmp(p, "://", 3) == 0) {
			const char *at = NULL, *colon = NULL, *q = p + 3;
			for (; *q && *q != '/' && *q != ' ' && *q != '"' && *q != '?'; q++) {
				if (*q == '@')
					at = q; /* the last '@' of the authority */
				if (*q == ':' && !at && !colon)
					colon = q;
			}
			if (at && colon && colon < at) {
				for (const char *s = p; s <= colon && o + 1 < outsz; s++)
					out[o++] = *s;
				for (const char *s = "***"; *s && o + 1 < outsz; s++)
					out[o++] = *s;
				p = at;
				continue;
			}
		}
		if (*p == '\n' || *p == '\t') { /* libpq's messages span lines: keep one line */
			if (o && out[o - 1] != ' ')
				out[o++] = ' ';
			p++;
			continue;
		}
		out[o++] = *p++;
	}
	while (o && (out[o - 1] == '\n' || out[o - 1] == ' '))
		o--;
	out[o] = 0;
}

static void quiet_notice(void *arg, const PGresult *res)
{
	(void)arg;
	(void)res;
}

/* ------------------------------------------------------------------------------------------ */
/* Pipelines                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef int (*result_fn)(void *ctx, size_t qi, const PGresult *r);

typedef struct pipe {
	pg_store *st;
	pgconn *c;
	const char *what;
	size_t queued;
	result_fn fn;
	void *ctx;
	int fn_rc;  /* first non-zero result of fn; fn is not called again */
	int failed; /* a statement failed on the server */
	int broken; /* the connection failed */
	size_t err_qi;
	char sqlstate[6];
	char msg[600];
	char detail[200];
} pipe;

static void pipe_init(pipe *p, pg_store *st, pgconn *c, const char *what, result_fn fn, void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->st = st;
	p->c = c;
	p->what = what;
	p->fn = fn;
	p->ctx = ctx;
}

static void pipe_broken(pipe *p, const char *why)
{
	if (!p->broken) {
		p->broken = 1;
		redact(p->msg, sizeof(p->msg), why ? why : PQerrorMessage(p->c->pg), p->st->password);
		if (!p->msg[0])
			snprintf(p->msg, sizeof(p->msg), "connection lost");
	}
}

static const int binary_formats[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* Queues a prepared statement (binary parameters and results). NULL value = SQL NULL. */
static void pipe_send(pipe *p, int q, int n, const char *const *vals, const int *lens)
{
	char name[16];
	if (p->broken)
		return;
	snprintf(name, sizeof(name), "p%d", q);
	if (!PQsendQueryPrepared(p->c->pg, name, n, vals, lens, binary_formats, 1))
		pipe_broken(p, NULL);
	else
		p->queued++;
}

/* Queues an unprepared statement without parameters. */
static void pipe_send_sql(pipe *p, const char *sql)
{
	if (p->broken)
		return;
	if (!PQsendQueryParams(p->c->pg, sql, 0, NULL, NULL, NULL, NULL, 1))
		pipe_broken(p, NULL);
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

/* Sends a Sync and reads every result up to it, flushing as it goes. */
static void pipe_drain(pipe *p, size_t *qi, uint64_t *trips)
{
	PGconn *pg = p->c->pg;
	size_t nulls = 0;
	if (p->broken)
		return;
	if (PQpipelineSync(pg) != 1) {
		pipe_broken(p, NULL);
		return;
	}
	(*trips)++;
	for (;;) {
		if (PQstatus(pg) != CONNECTION_OK) {
			pipe_broken(p, NULL);
			return;
		}
		int fl = PQflush(pg);
		if (fl < 0) {
			pipe_broken(p, NULL);
			return;
		}
		if (PQisBusy(pg)) {
			if (wait_socket(pg, fl == 1) || !PQconsumeInput(pg)) {
				pipe_broken(p, NULL);
				return;
			}
			continue;
		}
		PGresult *r = PQgetResult(pg);
		if (!r) {
			/* Between one statement's results and the next: fine a few times, never forever. */
			if (++nulls > 2 * p->queued + 16) {
				pipe_broken(p, "the connection stopped answering");
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
		if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
			if (!p->fn_rc && !p->failed && p->fn)
				p->fn_rc = p->fn(p->ctx, *qi, r);
		} else if (s != PGRES_PIPELINE_ABORTED && !p->failed) {
			const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			const char *detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
			const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
			p->failed = 1;
			p->err_qi = *qi;
			snprintf(p->sqlstate, sizeof(p->sqlstate), "%s", state ? state : "");
			redact(p->msg, sizeof(p->msg), m ? m : PQresultErrorMessage(r), p->st->password);
			redact(p->detail, sizeof(p->detail), detail, p->st->password);
		}
		(*qi)++;
		PQclear(r);
	}
}

/*
 * Runs what was queued: one round trip (two if the transaction must be rolled back after a
 * failure). Returns 0, fn's non-zero result, or a PROLLY_E* code with the message set (server
 * errors mapped by SQLSTATE; the caller may refine PLY* conflicts). Counts statements and round
 * trips on the calling thread and in the store.
 */
static int pipe_run(pipe *p)
{
	pg_store *st = p->st;
	size_t qi = 0;
	uint64_t trips = 0, stmts = p->queued;
	int rc = 0;

	pipe_drain(p, &qi, &trips);
	if (!p->broken && PQtransactionStatus(p->c->pg) == PQTRANS_INERROR) {
		pipe rb;
		size_t rqi = 0;
		pipe_init(&rb, st, p->c, p->what, NULL, NULL);
		pipe_send(&rb, Q_ROLLBACK, 0, NULL, NULL);
		if (!p->c->prepared) {
			rb.queued = 0;
			rb.broken = 0;
			pipe_send_sql(&rb, "ROLLBACK");
		}
		pipe_drain(&rb, &rqi, &trips);
		stmts += rb.queued;
		if (rb.broken || rb.failed)
			pipe_broken(p, "the rollback failed");
	}
	prolly_stats d;
	memset(&d, 0, sizeof(d));
	d.store_round_trips = trips;
	d.store_statements = stmts;
	prolly_stats_add(&d);
	cnt_add(&st->cnt.round_trips, trips);
	cnt_add(&st->cnt.statements, stmts);

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
		else if (strncmp(p->sqlstate, "PLY", 3) == 0 || strcmp(p->sqlstate, "40001") == 0 ||
		         strcmp(p->sqlstate, "40P01") == 0)
			code = PROLLY_ECONFLICT;
		else if (strcmp(p->sqlstate, "57014") == 0)
			code = PROLLY_ETIMEOUT;
		rc = prolly_set_error(code, "postgres: %s: %s (SQLSTATE %s)", p->what, p->msg, p->sqlstate);
	} else if (p->fn_rc) {
		rc = p->fn_rc;
	}
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Connections and the pool                                                                   */
/* ------------------------------------------------------------------------------------------ */

static void conn_close(pg_store *st, pgconn *c, int broken)
{
	if (c->pg) {
		PQfinish(c->pg);
		c->pg = NULL;
		if (broken)
			cnt_add(&st->cnt.broken, 1);
	}
	c->prepared = 0;
	c->has_write = 0;
}

/* Prepares every statement not prepared yet on c; Q_WRITE only on a version-2 schema (on a
 * version-1 schema its function does not exist). */
static int conn_prepare(pg_store *st, pgconn *c)
{
	int fast = atomic_load(&st->fast);
	pipe p;
	pipe_init(&p, st, c, "preparing statements", NULL, NULL);
	for (int q = 0; q < N_QUERIES && !p.broken; q++) {
		char name[16];
		if (q == Q_WRITE ? !fast || c->has_write : c->prepared)
			continue;
		snprintf(name, sizeof(name), "p%d", q);
		if (!PQsendPrepare(c->pg, name, st->sql[q], 0, NULL))
			pipe_broken(&p, NULL);
		else
			p.queued++;
	}
	int rc = pipe_run(&p);
	if (rc == 0) {
		c->prepared = 1;
		c->has_write = fast;
	}
	return rc;
}

static int conn_connect(pg_store *st, pgconn *c)
{
	const char *kw[] = {"dbname", "fallback_application_name", NULL};
	const char *val[] = {st->conninfo, "prolly", NULL};
	char msg[600];
	PGconn *pg = PQconnectdbParams(kw, val, 1);
	if (!pg)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory connecting");
	if (PQstatus(pg) != CONNECTION_OK) {
		redact(msg, sizeof(msg), PQerrorMessage(pg), st->password);
		PQfinish(pg);
		return prolly_set_error(PROLLY_ESTORE, "postgres: cannot connect to %s: %s", st->target,
		                        msg);
	}
	PQsetNoticeReceiver(pg, quiet_notice, NULL);
	if (PQsetnonblocking(pg, 1) != 0 || PQenterPipelineMode(pg) != 1) {
		redact(msg, sizeof(msg), PQerrorMessage(pg), st->password);
		PQfinish(pg);
		return prolly_set_error(PROLLY_ESTORE,
		                        "postgres: cannot enter pipeline mode on %s (libpq >= 14 "
		                        "needed): %s",
		                        st->target, msg);
	}
	c->pg = pg;
	c->prepared = 0;
	cnt_add(&st->cnt.connects, 1);
	return 0;
}

/* Makes an acquired slot usable: drops a connection the server closed while it sat idle, connects,
 * prepares. */
static int conn_ready(pg_store *st, pgconn *c)
{
	int rc;
	if (c->pg) {
		/* Nothing is outstanding on an idle connection, so anything to read (a FATAL message
		 * from a terminated backend, end of file) means the session is gone or going. */
		struct pollfd pfd = {PQsocket(c->pg), POLLIN, 0};
		if (pfd.fd < 0 || PQstatus(c->pg) != CONNECTION_OK || poll(&pfd, 1, 0) != 0)
			conn_close(st, c, 1);
	}
	if (!c->pg && (rc = conn_connect(st, c)))
		return rc;
	if (atomic_load(&st->ready) && (!c->prepared || (!c->has_write && atomic_load(&st->fast))) &&
	    (rc = conn_prepare(st, c))) {
		conn_close(st, c, 1);
		return rc;
	}
	return 0;
}

static void pool_release(pg_store *st, pgconn *c, int broken)
{
	if (!c)
		return;
	if (pin_store == st && c == pin_conn) {
		pin_busy = 0;
		return;
	}
	if (c->pg &&
	    (broken || PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE))
		conn_close(st, c, 1);
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
static int pool_acquire(pg_store *st, pgconn **out)
{
	pgconn *c = NULL;
	int waited = 0, rc;
	uint64_t t0 = 0;

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
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += st->pool_timeout_ms / 1000;
		dl.tv_nsec += (long)(st->pool_timeout_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
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
		prolly_stats d;
		memset(&d, 0, sizeof(d));
		d.pool_waits = 1;
		d.pool_wait_ns = ns;
		prolly_stats_add(&d);
		cnt_add(&st->cnt.pool_waits, 1);
		cnt_add(&st->cnt.pool_wait_ns, ns);
	}
	if (!c) {
		cnt_add(&st->cnt.pool_timeouts, 1);
		return prolly_set_error(PROLLY_ETIMEOUT,
		                        "postgres: no connection to %s became free within %u ms (pool of "
		                        "%u)",
		                        st->target, st->pool_timeout_ms, st->pool_size);
	}
	if ((rc = conn_ready(st, c))) {
		pool_release(st, c, 1);
		return rc;
	}
	*out = c;
	return 0;
}

/* Releases c after an operation; a connection whose pipe failed at the connection level (or is in
 * an unexpected state) is closed, to be reopened by the next acquire. */
static void pool_done(pg_store *st, pgconn *c, const pipe *p)
{
	pool_release(st, c, p && p->broken);
}

/* ------------------------------------------------------------------------------------------ */
/* bytea[] parameters                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Starts a one-dimensional array of n elements of type oid in b (replacing its contents). */
static int array_begin(prolly_buf *b, size_t n, uint32_t oid)
{
	unsigned char h[20];
	if (n > INT32_MAX)
		return prolly_set_error(PROLLY_EINVAL, "postgres: an array of %zu elements is too long", n);
	put_be32(h, 1);
	put_be32(h + 4, 0);
	put_be32(h + 8, oid);
	put_be32(h + 12, (uint32_t)n);
	put_be32(h + 16, 1);
	b->size = 0;
	return prolly__buf_put(b, h, sizeof(h));
}

static int array_add(prolly_buf *b, const void *data, size_t size)
{
	unsigned char l[4];
	int rc;
	if (size > 0x3fffffff)
		return prolly_set_error(PROLLY_ETOOBIG, "postgres: a value of %zu bytes is over 1 GiB",
		                        size);
	put_be32(l, (uint32_t)size);
	if ((rc = prolly__buf_put(b, l, 4)))
		return rc;
	return size ? prolly__buf_put(b, data, size) : 0;
}

/* A NULL element (length -1; the header's has-nulls flag set). */
static int array_add_null(prolly_buf *b)
{
	unsigned char l[4];
	put_be32(l, 0xffffffffu);
	put_be32(b->ptr + 4, 1);
	return prolly__buf_put(b, l, 4);
}

static int array_too_big(size_t size)
{
	if (size > INT32_MAX)
		return prolly_set_error(PROLLY_ETOOBIG,
		                        "postgres: a statement parameter of %zu bytes is over 2 GiB; lower "
		                        "batch_items",
		                        size);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Schema                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static int version_fn(void *ctx, size_t qi, const PGresult *r)
{
	uint64_t *v = ctx;
	(void)qi;
	if (PQntuples(r) == 1 && read_int8(r, 0, 0, v) == 0)
		return 0;
	*v = 0;
	return 0;
}

/* Reads the schema version: 0 with *missing set when the tables do not exist. */
static int read_version(pg_store *st, pgconn *c, uint64_t *version, int *missing)
{
	char *q = subst("SELECT value FROM @.meta WHERE key = 'schema_version'", st->qs, "");
	pipe p;
	int rc;
	*version = 0;
	*missing = 0;
	if (!q)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	pipe_init(&p, st, c, "reading the schema version", version_fn, version);
	pipe_send_sql(&p, q);
	rc = pipe_run(&p);
	if (rc && p.failed && (strcmp(p.sqlstate, "42P01") == 0 || strcmp(p.sqlstate, "3F000") == 0)) {
		*missing = 1;
		rc = 0;
	}
	free(q);
	return rc;
}

static int check_version(pg_store *st, uint64_t version)
{
	if (version > SCHEMA_VERSION)
		return prolly_set_error(
		    PROLLY_EVERSION,
		    "postgres: schema \"%s\" on %s has prolly schema version %llu; this "
		    "library knows versions up to %d (upgrade prolly)",
		    st->schema, st->target, (unsigned long long)version, SCHEMA_VERSION);
	if (version < 1)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: schema \"%s\" on %s has a meta table without a valid "
		                        "schema_version row",
		                        st->schema, st->target);
	return 0;
}

/*
 * Creates the schema if it is missing and migrates an older one (the init DO block); *version
 * receives the version in force afterwards. With may_skip, a migration the role has no right to
 * run (SQLSTATE 42501: the whole block rolled back) is not an error: the schema stays as it was.
 */
static int init_on(pg_store *st, pgconn *c, uint64_t *version, int may_skip)
{
	int missing = 0, rc;
	pipe p;
	if ((rc = read_version(st, c, version, &missing)))
		return rc;
	if (!missing && ((rc = check_version(st, *version)) || *version == SCHEMA_VERSION))
		return rc;
	pipe_init(&p, st, c, missing ? "creating the schema" : "migrating the schema", NULL, NULL);
	pipe_send_sql(&p, st->init_sql);
	if ((rc = pipe_run(&p))) {
		if (may_skip && !missing && p.failed && strcmp(p.sqlstate, "42501") == 0)
			return 0;
		return rc;
	}
	if ((rc = read_version(st, c, version, &missing)))
		return rc;
	if (missing)
		return prolly_set_error(PROLLY_ESTORE,
		                        "postgres: schema \"%s\" on %s: the tables are "
		                        "still missing after creating them",
		                        st->schema, st->target);
	return check_version(st, *version);
}

int prolly_store_pg_init(prolly_store *base)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	int rc;
	if (!st || !st->base.kind || strcmp(st->base.kind, "postgres") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_init: not a PostgreSQL store");
	uint64_t version = 0;
	if ((rc = pool_acquire(st, &c)))
		return rc;
	rc = init_on(st, c, &version, 0);
	if (rc == 0) {
		atomic_store(&st->ready, 1);
		atomic_store(&st->fast, version >= 2);
		if (!c->prepared || (!c->has_write && version >= 2))
			rc = conn_prepare(st, c);
	}
	pool_release(st, c, rc != 0 && (!c->pg || PQstatus(c->pg) != CONNECTION_OK));
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* write                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static int check_ref_name(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > PROLLY_MAX_REF_NAME)
		return prolly_set_error(PROLLY_EINVAL, "postgres: a ref name has 1 to %d bytes (got %zu)",
		                        PROLLY_MAX_REF_NAME, len);
	return 0;
}

static int cmp_node_ptr(const void *a, const void *b)
{
	const prolly_store_node *x = *(const prolly_store_node *const *)a;
	const prolly_store_node *y = *(const prolly_store_node *const *)b;
	return memcmp(x->id.bytes, y->id.bytes, PROLLY_ID_SIZE);
}

static int cmp_update_ptr(const void *a, const void *b)
{
	const prolly_ref_update *x = *(const prolly_ref_update *const *)a;
	const prolly_ref_update *y = *(const prolly_ref_update *const *)b;
	return strcmp(x->name, y->name);
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, PROLLY_ID_SIZE);
}

typedef struct wctx {
	prolly_store_write *w;
	prolly_ref_update **refs; /* in name order */
	int fast;                 /* one prolly_write statement (else the version-1 pipeline) */
	size_t q_begin, q_ins0, n_ins, q_cas0;
	uint64_t epoch;
	int have_epoch;
	uint64_t inserted;
	int conflict; /* a ref update failed its expectation */
	int bad;
} wctx;

/* A ref update's outcome from the columns (applied, cur_exists, cur) starting at col. */
static void ref_outcome(wctx *x, prolly_ref_update *u, const PGresult *r, int row, int col)
{
	if (read_bool(r, row, col))
		return;
	u->conflict = 1;
	x->conflict = 1;
	u->current_exists = read_bool(r, row, col + 1);
	if (u->current_exists) {
		if (PQgetisnull(r, row, col + 2) || PQgetlength(r, row, col + 2) != PROLLY_ID_SIZE)
			x->bad = 1;
		else
			memcpy(u->current.bytes, PQgetvalue(r, row, col + 2), PROLLY_ID_SIZE);
	}
}

/* prolly_write's rows: (epoch, inserted, applied, cur_exists, cur), one per ref in name order,
 * or one with NULL ref columns when the write has no ref. */
static void fast_rows(wctx *x, const PGresult *r)
{
	size_t n = x->w->n_refs;
	if (PQnfields(r) != 5 || (size_t)PQntuples(r) != (n ? n : 1) || read_int8(r, 0, 0, &x->epoch) ||
	    read_int8(r, 0, 1, &x->inserted)) {
		x->bad = 1;
		return;
	}
	x->have_epoch = 1;
	for (size_t i = 0; i < n; i++) {
		if (PQgetisnull(r, (int)i, 2)) {
			x->bad = 1;
			return;
		}
		ref_outcome(x, x->refs[i], r, (int)i, 2);
	}
}

static int write_fn(void *ctx, size_t qi, const PGresult *r)
{
	wctx *x = ctx;
	if (x->fast) {
		fast_rows(x, r);
	} else if (qi == x->q_begin) {
		if (PQntuples(r) == 1 && read_int8(r, 0, 0, &x->epoch) == 0)
			x->have_epoch = 1;
	} else if (qi >= x->q_ins0 && qi < x->q_ins0 + x->n_ins) {
		x->inserted += strtoull(PQcmdTuples((PGresult *)r), NULL, 10);
	} else if (qi >= x->q_cas0 && qi < x->q_cas0 + x->w->n_refs) {
		if (PQntuples(r) != 1 || PQnfields(r) != 3)
			x->bad = 1;
		else
			ref_outcome(x, x->refs[qi - x->q_cas0], r, 0, 0);
	}
	return 0;
}

static int validate_write(prolly_store_write *w)
{
	if ((w->n_nodes && !w->nodes) || (w->n_refs && !w->refs) || (w->n_requires && !w->requires))
		return prolly_set_error(PROLLY_EINVAL,
		                        "postgres: write with a NULL nodes, refs or requires array");
	for (size_t i = 0; i < w->n_nodes; i++)
		if (w->nodes[i].size && !w->nodes[i].data)
			return prolly_set_error(PROLLY_EINVAL, "postgres: node %zu has %zu bytes but no data",
			                        i, w->nodes[i].size);
	for (size_t i = 0; i < w->n_refs; i++) {
		int rc;
		if ((rc = check_ref_name(w->refs[i].name)))
			return rc;
		if (w->refs[i].expect != PROLLY_REF_EXPECT_ANY &&
		    w->refs[i].expect != PROLLY_REF_EXPECT_ABSENT &&
		    w->refs[i].expect != PROLLY_REF_EXPECT_VALUE)
			return prolly_set_error(PROLLY_EINVAL,
			                        "postgres: ref '%s' has an unknown expectation %d",
			                        w->refs[i].name, (int)w->refs[i].expect);
		w->refs[i].conflict = 0;
		w->refs[i].current_exists = 0;
	}
	return 0;
}

static int conflict_message(const prolly_store_write *w)
{
	size_t failing = 0;
	const prolly_ref_update *first = NULL;
	char want[PROLLY_ID_HEX_SIZE], now[PROLLY_ID_HEX_SIZE];
	for (size_t i = 0; i < w->n_refs; i++)
		if (w->refs[i].conflict) {
			if (!first)
				first = &w->refs[i];
			failing++;
		}
	if (!first)
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "postgres: a ref update failed its expectation; nothing was "
		                        "written");
	prolly_id_to_hex(want, &first->expected);
	if (first->current_exists)
		prolly_id_to_hex(now, &first->current);
	else
		snprintf(now, sizeof(now), "absent");
	if (first->expect == PROLLY_REF_EXPECT_ABSENT)
		return prolly_set_error(
		    PROLLY_ECONFLICT,
		    "postgres: ref '%s' was expected to be absent but is %s (%zu of the "
		    "write's ref updates failed; nothing was written)",
		    first->name, now, failing);
	return prolly_set_error(
	    PROLLY_ECONFLICT,
	    "postgres: ref '%s' was expected to be %s but is %s (%zu of the write's "
	    "ref updates failed; nothing was written)",
	    first->name, want, now, failing);
}

/* A write with nothing to write: reads the epoch (one statement, no transaction). */
static int write_empty(pg_store *st, prolly_store_write *w)
{
	pgconn *c = NULL;
	wctx x;
	pipe p;
	int rc;
	memset(&x, 0, sizeof(x));
	x.w = w;
	x.q_begin = 0;
	x.q_ins0 = x.q_cas0 = SIZE_MAX;
	if ((rc = pool_acquire(st, &c)))
		return rc;
	pipe_init(&p, st, c, "reading the gc epoch", write_fn, &x);
	pipe_send(&p, Q_EPOCH, 0, NULL, NULL);
	rc = pipe_run(&p);
	pool_done(st, c, &p);
	if (rc)
		return rc;
	if (!x.have_epoch)
		return prolly_set_error(PROLLY_ECORRUPT, "postgres: the meta table has no epoch row");
	w->current_epoch = x.epoch;
	if (w->check_epoch && w->epoch != x.epoch)
		return prolly_set_error(
		    PROLLY_ECONFLICT,
		    "postgres: a gc ran meanwhile (the write expected gc epoch %llu, the "
		    "store is at %llu); nothing was written",
		    (unsigned long long)w->epoch, (unsigned long long)x.epoch);
	return 0;
}

/* A write ready to send: nodes in id order without duplicates (concurrent publishers lock ids in
 * the same order), refs in name order (each at most once), requires sorted without duplicates
 * (only for a write that does not check the epoch: every sweep batch of the gc bumps it). */
typedef struct wplan {
	const prolly_store_node **nodes;
	size_t n;
	prolly_ref_update **refs;
	prolly_id *req;
	size_t n_req;
} wplan;

static void plan_dispose(wplan *pl)
{
	free(pl->nodes);
	free(pl->refs);
	free(pl->req);
	memset(pl, 0, sizeof(*pl));
}

static int plan_write(wplan *pl, const prolly_store_write *w)
{
	memset(pl, 0, sizeof(*pl));
	if (w->n_nodes) {
		if (!(pl->nodes = malloc(w->n_nodes * sizeof(*pl->nodes))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory writing %zu nodes",
			                        w->n_nodes);
		for (size_t i = 0; i < w->n_nodes; i++)
			pl->nodes[i] = &w->nodes[i];
		qsort(pl->nodes, w->n_nodes, sizeof(*pl->nodes), cmp_node_ptr);
		for (size_t i = 0; i < w->n_nodes; i++)
			if (!pl->n ||
			    memcmp(pl->nodes[pl->n - 1]->id.bytes, pl->nodes[i]->id.bytes, PROLLY_ID_SIZE))
				pl->nodes[pl->n++] = pl->nodes[i];
	}
	if (w->n_refs) {
		if (!(pl->refs = malloc(w->n_refs * sizeof(*pl->refs))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory writing %zu refs",
			                        w->n_refs);
		for (size_t i = 0; i < w->n_refs; i++)
			pl->refs[i] = &w->refs[i];
		qsort(pl->refs, w->n_refs, sizeof(*pl->refs), cmp_update_ptr);
		for (size_t i = 1; i < w->n_refs; i++)
			if (strcmp(pl->refs[i - 1]->name, pl->refs[i]->name) == 0)
				return prolly_set_error(PROLLY_EINVAL,
				                        "postgres: ref '%s' is updated twice in one write",
				                        pl->refs[i]->name);
	}
	if (w->n_requires && !w->check_epoch) {
		if (!(pl->req = malloc(w->n_requires * sizeof(*pl->req))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		memcpy(pl->req, w->requires, w->n_requires * sizeof(*pl->req));
		qsort(pl->req, w->n_requires, sizeof(*pl->req), cmp_id);
		for (size_t i = 0; i < w->n_requires; i++)
			if (!pl->n_req || memcmp(&pl->req[pl->n_req - 1], &pl->req[i], PROLLY_ID_SIZE))
				pl->req[pl->n_req++] = pl->req[i];
	}
	return 0;
}

/* The id array (a) and node array (b) of nodes [at, at + m) of pl; b gets a wrong element type
 * when the test hook wants this chunk to fail. */
static int encode_nodes(prolly_buf *a, prolly_buf *b, const wplan *pl, size_t at, size_t m,
                        int fail, uint64_t *sent)
{
	int rc;
	if ((rc = array_begin(a, m, BYTEA_OID)) ||
	    (rc = array_begin(b, m, fail ? INT4_OID : BYTEA_OID)))
		return rc;
	for (size_t i = at; i < at + m; i++) {
		if ((rc = array_add(a, pl->nodes[i]->id.bytes, PROLLY_ID_SIZE)) ||
		    (rc = array_add(b, pl->nodes[i]->data, pl->nodes[i]->size)))
			return rc;
		*sent += pl->nodes[i]->size;
	}
	return array_too_big(b->size);
}

static int encode_requires(prolly_buf *a, const wplan *pl)
{
	int rc = array_begin(a, pl->n_req, BYTEA_OID);
	for (size_t i = 0; i < pl->n_req && !rc; i++)
		rc = array_add(a, pl->req[i].bytes, PROLLY_ID_SIZE);
	return rc ? rc : array_too_big(a->size);
}

/* The version-1 pipeline: BEGIN, [SET LOCAL synchronous_commit], prolly_write_begin,
 * [prolly_write_requires], one INSERT per chunk of batch nodes, one prolly_ref_cas per ref,
 * [prolly_write_finish], COMMIT. Chunks are sent as they are encoded. */
static int send_pipeline(pipe *p, wctx *x, const wplan *pl, const prolly_store_write *w,
                         size_t batch, unsigned fail, prolly_buf *a, prolly_buf *b, uint64_t *sent)
{
	char ebuf[8];
	const char *vals[5];
	int lens[5], rc;
	pipe_send(p, Q_BEGIN, 0, NULL, NULL);
	if (!w->durable)
		pipe_send(p, Q_ASYNC, 0, NULL, NULL);
	put_be64((unsigned char *)ebuf, w->epoch);
	vals[0] = w->check_epoch ? ebuf : NULL;
	lens[0] = 8;
	x->q_begin = p->queued;
	pipe_send(p, Q_WBEGIN, 1, vals, lens);
	if (pl->n_req) {
		if ((rc = encode_requires(a, pl)))
			return rc;
		vals[0] = (const char *)a->ptr;
		lens[0] = (int)a->size;
		pipe_send(p, Q_WREQUIRES, 1, vals, lens);
	}
	x->q_ins0 = p->queued;
	for (size_t k = 0; k < x->n_ins; k++) {
		size_t at = k * batch;
		if ((rc = encode_nodes(a, b, pl, at, PROLLY_MIN(batch, pl->n - at), fail == k + 1, sent)))
			return rc;
		vals[0] = (const char *)a->ptr;
		lens[0] = (int)a->size;
		vals[1] = (const char *)b->ptr;
		lens[1] = (int)b->size;
		pipe_send(p, Q_WINSERT, 2, vals, lens);
		/* Let the server start on this chunk while the next one is encoded. */
		if (!p->broken && PQflush(p->c->pg) < 0)
			pipe_broken(p, NULL);
	}
	x->q_cas0 = p->queued;
	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = pl->refs[i];
		unsigned char expect[4], remove = u->remove ? 1 : 0;
		put_be32(expect, (uint32_t)u->expect);
		vals[0] = u->name;
		lens[0] = (int)strlen(u->name);
		vals[1] = (const char *)expect;
		lens[1] = 4;
		vals[2] = u->expect == PROLLY_REF_EXPECT_VALUE ? (const char *)u->expected.bytes : NULL;
		lens[2] = PROLLY_ID_SIZE;
		vals[3] = (const char *)&remove;
		lens[3] = 1;
		vals[4] = u->remove ? NULL : (const char *)u->value.bytes;
		lens[4] = PROLLY_ID_SIZE;
		pipe_send(p, Q_WCAS, 5, vals, lens);
	}
	if (w->n_refs)
		pipe_send(p, Q_WFINISH, 0, NULL, NULL);
	pipe_send(p, Q_COMMIT, 0, NULL, NULL);
	return 0;
}

/* Arrays of the fast write: requires, ids, nodes, names, expects, expected, removes, values. */
enum { FA_REQ, FA_IDS, FA_NODES, FA_NAMES, FA_EXPECTS, FA_EXPECTED, FA_REMOVES, FA_VALUES, N_FA };

/*
 * One statement, run in its own implicit transaction: SELECT ... FROM prolly_write(epoch, async,
 * requires, ids, nodes, names, expects, expected, removes, values), all of a write that fits one
 * INSERT chunk. Everything is encoded before anything is sent. NULL array elements stand where
 * prolly_ref_cas takes NULL (expected unless EXPECT_VALUE, the value of a removal).
 */
static int send_fast(pipe *p, const wplan *pl, const prolly_store_write *w, unsigned fail,
                     prolly_buf *fa, uint64_t *sent)
{
	size_t r = w->n_refs;
	char ebuf[8], async = w->durable ? 0 : 1;
	const char *vals[2 + N_FA];
	int lens[2 + N_FA], rc;
	if (pl->n_req && (rc = encode_requires(&fa[FA_REQ], pl)))
		return rc;
	if (pl->n && (rc = encode_nodes(&fa[FA_IDS], &fa[FA_NODES], pl, 0, pl->n, fail == 1, sent)))
		return rc;
	if (r && ((rc = array_begin(&fa[FA_NAMES], r, BYTEA_OID)) ||
	          (rc = array_begin(&fa[FA_EXPECTS], r, INT4_OID)) ||
	          (rc = array_begin(&fa[FA_EXPECTED], r, BYTEA_OID)) ||
	          (rc = array_begin(&fa[FA_REMOVES], r, BOOL_OID)) ||
	          (rc = array_begin(&fa[FA_VALUES], r, BYTEA_OID))))
		return rc;
	for (size_t i = 0; i < r; i++) {
		const prolly_ref_update *u = pl->refs[i];
		unsigned char expect[4], remove = u->remove ? 1 : 0;
		put_be32(expect, (uint32_t)u->expect);
		if ((rc = array_add(&fa[FA_NAMES], u->name, strlen(u->name))) ||
		    (rc = array_add(&fa[FA_EXPECTS], expect, 4)) ||
		    (rc = u->expect == PROLLY_REF_EXPECT_VALUE
		              ? array_add(&fa[FA_EXPECTED], u->expected.bytes, PROLLY_ID_SIZE)
		              : array_add_null(&fa[FA_EXPECTED])) ||
		    (rc = array_add(&fa[FA_REMOVES], &remove, 1)) ||
		    (rc = u->remove ? array_add_null(&fa[FA_VALUES])
		                    : array_add(&fa[FA_VALUES], u->value.bytes, PROLLY_ID_SIZE)))
			return rc;
	}
	put_be64((unsigned char *)ebuf, w->epoch);
	vals[0] = w->check_epoch ? ebuf : NULL;
	lens[0] = 8;
	vals[1] = &async;
	lens[1] = 1;
	for (int k = 0; k < N_FA; k++) {
		int used = k == FA_REQ ? pl->n_req > 0 : k <= FA_NODES ? pl->n > 0 : r > 0;
		vals[2 + k] = used ? (const char *)fa[k].ptr : NULL;
		lens[2 + k] = used ? (int)fa[k].size : 0;
	}
	pipe_send(p, Q_WRITE, 2 + N_FA, vals, lens);
	return 0;
}

static int pg_write(prolly_store *base, prolly_store_write *w)
{
	pg_store *st = (pg_store *)base;
	prolly_buf fa[N_FA];
	wplan pl;
	pgconn *c = NULL;
	uint64_t sent = 0;
	wctx x;
	pipe p;
	int rc = 0, have_pipe = 0, unsent = 0;

	memset(fa, 0, sizeof(fa));
	memset(&pl, 0, sizeof(pl));
	memset(&x, 0, sizeof(x));
	if (!w)
		return prolly_set_error(PROLLY_EINVAL, "postgres: write without a write");
	if ((rc = validate_write(w)))
		return rc;
	if (!w->n_nodes && !w->n_refs && !(w->n_requires && !w->check_epoch))
		return write_empty(st, w);
	if ((rc = plan_write(&pl, w)) || (rc = pool_acquire(st, &c)))
		goto cleanup;

	size_t chunks = (pl.n + st->batch_items - 1) / st->batch_items;
	unsigned fail = atomic_load(&st->fail_chunk);
	if (fail && fail <= chunks)
		atomic_store(&st->fail_chunk, 0);
	else
		fail = 0;
	x.w = w;
	x.refs = pl.refs;
	x.fast = c->has_write && chunks <= 1;
	x.q_begin = x.q_ins0 = x.q_cas0 = SIZE_MAX;
	x.n_ins = chunks;
	pipe_init(&p, st, c, "write", write_fn, &x);
	have_pipe = 1;
	if (x.fast)
		rc = send_fast(&p, &pl, w, fail, fa, &sent);
	else
		rc = send_pipeline(&p, &x, &pl, w, st->batch_items, fail, &fa[0], &fa[1], &sent);
	if (rc) {
		unsent = p.queued > 0; /* queued without a Sync: the connection is not reusable */
		goto cleanup;
	}
	rc = pipe_run(&p);

	cnt_add(&st->cnt.insert_statements, chunks);
	if (x.have_epoch)
		w->current_epoch = x.epoch;
	if (rc == 0 && x.bad)
		rc = prolly_set_error(PROLLY_ECORRUPT, "postgres: a ref update returned a malformed row");
	else if (rc == 0 && x.conflict) /* the fast path reports failed refs in its rows */
		rc = conflict_message(w);
	if (rc == 0) {
		cnt_add(&st->cnt.rows_inserted, x.inserted);
		cnt_add(&st->cnt.bytes_sent, sent);
	}
	if (rc && p.failed && strcmp(p.sqlstate, "PLY01") == 0) {
		uint64_t cur = strtoull(p.detail, NULL, 10);
		w->current_epoch = cur;
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "postgres: a gc ran meanwhile (the write expected gc epoch %llu, the "
		                      "store is at %llu); nothing was written",
		                      (unsigned long long)w->epoch, (unsigned long long)cur);
	} else if (rc && p.failed && strcmp(p.sqlstate, "PLY02") == 0) {
		rc = conflict_message(w);
	} else if (rc && p.failed && strcmp(p.sqlstate, "PLY03") == 0) {
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "postgres: a gc removed %s node(s) this write builds on; nothing was "
		                      "written (retry from the current refs)",
		                      p.detail);
	} else if (rc && p.failed && x.fast) {
		rc = prolly_set_error(rc, "postgres: write: %s (SQLSTATE %s); nothing was written", p.msg,
		                      p.sqlstate);
	} else if (rc && p.failed && p.err_qi >= x.q_ins0 && p.err_qi < x.q_ins0 + x.n_ins) {
		rc = prolly_set_error(rc,
		                      "postgres: write: node insert statement %zu of %zu failed: %s "
		                      "(SQLSTATE %s); nothing was written",
		                      p.err_qi - x.q_ins0 + 1, x.n_ins, p.msg, p.sqlstate);
	}
	if (rc && rc != PROLLY_ECONFLICT)
		for (size_t i = 0; i < w->n_refs; i++)
			w->refs[i].conflict = 0;

cleanup:
	if (c)
		pool_release(st, c, unsent || (have_pipe && p.broken));
	for (int k = 0; k < N_FA; k++)
		prolly_buf_dispose(&fa[k]);
	plan_dispose(&pl);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Reads                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct gctx {
	pg_store *st;
	size_t n, chunk;
	prolly_store_found_fn found;
	void *payload;
	uint64_t rows, bytes;
} gctx;

static int get_fn(void *ctx, size_t qi, const PGresult *r)
{
	gctx *g = ctx;
	int rows = PQntuples(r);
	for (int i = 0; i < rows; i++) {
		uint64_t ord;
		if (read_int8(r, i, 0, &ord) || ord == 0)
			return prolly_set_error(PROLLY_ESTORE, "postgres: get_nodes: a malformed row");
		size_t idx = qi * g->chunk + (size_t)(ord - 1);
		if (idx >= g->n || PQgetisnull(r, i, 1))
			return prolly_set_error(PROLLY_ESTORE, "postgres: get_nodes: a row out of range");
		size_t len = (size_t)PQgetlength(r, i, 1);
		g->rows++;
		g->bytes += len;
		int rc = g->found(g->payload, idx, PQgetvalue(r, i, 1), len);
		if (rc)
			return rc;
	}
	return 0;
}

static int pg_get_nodes(prolly_store *base, const prolly_id *ids, size_t n,
                        prolly_store_found_fn found, void *payload)
{
	pg_store *st = (pg_store *)base;
	prolly_buf a = PROLLY_BUF_INIT;
	pgconn *c = NULL;
	gctx g;
	pipe p;
	int rc = 0, have_pipe = 0;

	if (!n)
		return 0;
	if (!ids || !found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: get_nodes without ids or callback");
	if ((rc = pool_acquire(st, &c)))
		return rc;
	memset(&g, 0, sizeof(g));
	g.st = st;
	g.n = n;
	g.chunk = st->read_chunk;
	g.found = found;
	g.payload = payload;
	pipe_init(&p, st, c, "get_nodes", get_fn, &g);
	have_pipe = 1;
	/* One statement per read_chunk ids, all in one round trip. */
	for (size_t at = 0; at < n; at += st->read_chunk) {
		size_t m = PROLLY_MIN(st->read_chunk, n - at);
		const char *vals[1];
		int lens[1];
		if ((rc = array_begin(&a, m, BYTEA_OID)))
			goto cleanup;
		for (size_t i = at; i < at + m; i++)
			if ((rc = array_add(&a, ids[i].bytes, PROLLY_ID_SIZE)))
				goto cleanup;
		vals[0] = (const char *)a.ptr;
		lens[0] = (int)a.size;
		pipe_send(&p, Q_GETNODES, 1, vals, lens);
	}
	rc = pipe_run(&p);
	cnt_add(&st->cnt.rows_read, g.rows);
	cnt_add(&st->cnt.bytes_read, g.bytes);
cleanup:
	pool_done(st, c, have_pipe ? &p : NULL);
	prolly_buf_dispose(&a);
	return rc;
}

typedef struct rctx {
	int found, bad, have_epoch;
	prolly_id value;
	uint64_t epoch;
} rctx;

static int ref_fn(void *ctx, size_t qi, const PGresult *r)
{
	rctx *x = ctx;
	(void)qi;
	if (PQntuples(r) != 1)
		return 0;
	if (read_int8(r, 0, 1, &x->epoch) == 0)
		x->have_epoch = 1;
	if (!PQgetisnull(r, 0, 0)) {
		if (PQgetlength(r, 0, 0) != PROLLY_ID_SIZE)
			x->bad = 1;
		else {
			memcpy(x->value.bytes, PQgetvalue(r, 0, 0), PROLLY_ID_SIZE);
			x->found = 1;
		}
	}
	return 0;
}

static int pg_get_ref(prolly_store *base, const char *name, prolly_id *out, uint64_t *epoch)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	rctx x;
	pipe p;
	int rc;
	if ((rc = check_ref_name(name)))
		return rc;
	if ((rc = pool_acquire(st, &c)))
		return rc;
	memset(&x, 0, sizeof(x));
	pipe_init(&p, st, c, "get_ref", ref_fn, &x);
	const char *vals[1] = {name};
	int lens[1] = {(int)strlen(name)};
	pipe_send(&p, Q_GETREF, 1, vals, lens);
	rc = pipe_run(&p);
	pool_done(st, c, &p);
	if (rc)
		return rc;
	if (epoch && x.have_epoch)
		*epoch = x.epoch;
	if (x.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not "
		                        "%d bytes",
		                        name, PROLLY_ID_SIZE);
	if (!x.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = x.value;
	return 0;
}

typedef struct roctx {
	rctx ref;
	prolly_store_found_fn found;
	void *payload;
	uint64_t rows, bytes;
} roctx;

/* One row: (ref value, epoch, the object it names, the followed object). found() is called only
 * for a well-formed ref, in index order. */
static int refobjs_fn(void *ctx, size_t qi, const PGresult *r)
{
	roctx *x = ctx;
	int rc = 0;
	ref_fn(&x->ref, qi, r);
	if (!x->ref.found || PQntuples(r) != 1 || PQnfields(r) != 4)
		return 0;
	for (int i = 0; i < 2 && !rc; i++) {
		if (PQgetisnull(r, 0, 2 + i))
			break;
		size_t len = (size_t)PQgetlength(r, 0, 2 + i);
		x->rows++;
		x->bytes += len;
		rc = x->found(x->payload, (size_t)i, PQgetvalue(r, 0, 2 + i), len);
	}
	return rc;
}

/* get_ref and the two objects it leads to (see prolly.h): one statement, one round trip. */
static int pg_get_ref_objects(prolly_store *base, const char *name, size_t follow, prolly_id *out,
                              uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	unsigned char off[4];
	roctx x;
	pipe p;
	int rc;
	if ((rc = check_ref_name(name)))
		return rc;
	if (!found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: get_ref_objects without a callback");
	if ((rc = pool_acquire(st, &c)))
		return rc;
	memset(&x, 0, sizeof(x));
	x.found = found;
	x.payload = payload;
	put_be32(off, (uint32_t)follow);
	pipe_init(&p, st, c, "get_ref_objects", refobjs_fn, &x);
	/* An offset past any object's reach follows nothing (NULL). */
	const char *vals[2] = {name, follow <= INT32_MAX - PROLLY_ID_SIZE ? (const char *)off : NULL};
	int lens[2] = {(int)strlen(name), 4};
	pipe_send(&p, Q_GETREFOBJS, 2, vals, lens);
	rc = pipe_run(&p);
	pool_done(st, c, &p);
	cnt_add(&st->cnt.rows_read, x.rows);
	cnt_add(&st->cnt.bytes_read, x.bytes);
	if (rc)
		return rc;
	if (epoch && x.ref.have_epoch)
		*epoch = x.ref.epoch;
	if (x.ref.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not %d bytes", name,
		                        PROLLY_ID_SIZE);
	if (!x.ref.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = x.ref.value;
	return 0;
}

static int preflist_push(preflist *l, const char *name, size_t len, const prolly_id *value)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		pref *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv)
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory listing refs");
		l->v = nv;
		l->cap = ncap;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory listing refs");
	memcpy(copy, name, len);
	copy[len] = 0;
	l->v[l->n].name = copy;
	l->v[l->n].len = len;
	l->v[l->n].value = *value;
	l->n++;
	return 0;
}

static void preflist_dispose(preflist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int list_fn(void *ctx, size_t qi, const PGresult *r)
{
	preflist *l = ctx;
	int rows = PQntuples(r), rc;
	(void)qi;
	for (int i = 0; i < rows; i++) {
		prolly_id v;
		size_t len = (size_t)PQgetlength(r, i, 0);
		if (PQgetisnull(r, i, 0) || PQgetlength(r, i, 1) != PROLLY_ID_SIZE ||
		    memchr(PQgetvalue(r, i, 0), 0, len))
			return prolly_set_error(PROLLY_ECORRUPT,
			                        "postgres: the refs table holds a malformed row");
		memcpy(v.bytes, PQgetvalue(r, i, 1), PROLLY_ID_SIZE);
		if ((rc = preflist_push(l, PQgetvalue(r, i, 0), len, &v)))
			return rc;
	}
	return 0;
}

static int pg_list_refs(prolly_store *base, const char *prefix, prolly_store_ref_fn fn,
                        void *payload)
{
	pg_store *st = (pg_store *)base;
	preflist l = {NULL, 0, 0};
	pgconn *c = NULL;
	char *hi = NULL;
	pipe p;
	int rc;
	size_t plen = prefix ? strlen(prefix) : 0;

	if (!fn)
		return prolly_set_error(PROLLY_EINVAL, "postgres: list_refs without a callback");
	/* Names from prefix (inclusive) to its successor (exclusive): the prefix with trailing 0xff
	 * bytes dropped and its last byte incremented; none if it is all 0xff. */
	size_t hlen = plen;
	if (plen) {
		if (!(hi = malloc(plen))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
			goto cleanup;
		}
		memcpy(hi, prefix, plen);
		while (hlen && (unsigned char)hi[hlen - 1] == 0xff)
			hlen--;
		if (hlen)
			hi[hlen - 1] = (char)((unsigned char)hi[hlen - 1] + 1);
	}
	if ((rc = pool_acquire(st, &c)))
		goto cleanup;
	pipe_init(&p, st, c, "list_refs", list_fn, &l);
	const char *vals[2] = {plen ? prefix : "", hlen ? hi : NULL};
	int lens[2] = {(int)plen, (int)hlen};
	pipe_send(&p, Q_LISTREFS, 2, vals, lens);
	rc = pipe_run(&p);
	pool_done(st, c, &p);
	if (rc)
		goto cleanup;
	/* The gc's mark(): remember what it saw. */
	if (cap_store == st && cap_list)
		for (size_t i = 0; i < l.n && !rc; i++)
			rc = preflist_push(cap_list, l.v[i].name, l.v[i].len, &l.v[i].value);
	for (size_t i = 0; i < l.n && !rc; i++)
		rc = fn(payload, l.v[i].name, &l.v[i].value);
cleanup:
	preflist_dispose(&l);
	free(hi);
	return rc;
}

typedef struct sctx {
	uint64_t a, b;
	int have;
} sctx;

static int two_int8_fn(void *ctx, size_t qi, const PGresult *r)
{
	sctx *x = ctx;
	(void)qi;
	if (PQntuples(r) == 1 && read_int8(r, 0, 0, &x->a) == 0 && read_int8(r, 0, 1, &x->b) == 0)
		x->have = 1;
	return 0;
}

static int pg_stat(prolly_store *base, uint64_t *nodes, uint64_t *bytes)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	sctx x = {0, 0, 0};
	pipe p;
	int rc;
	if ((rc = pool_acquire(st, &c)))
		return rc;
	pipe_init(&p, st, c, "stat", two_int8_fn, &x);
	pipe_send(&p, Q_STAT, 0, NULL, NULL);
	rc = pipe_run(&p);
	pool_done(st, c, &p);
	if (rc)
		return rc;
	if (!x.have)
		return prolly_set_error(PROLLY_ESTORE, "postgres: stat: a malformed row");
	if (nodes)
		*nodes = x.a;
	if (bytes)
		*bytes = x.b;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* gc                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static int cmp_pref(const void *a, const void *b)
{
	const pref *x = a, *y = b;
	int c = prolly__keycmp(x->name, x->len, y->name, y->len);
	return c ? c : memcmp(x->value.bytes, y->value.bytes, PROLLY_ID_SIZE);
}

/* 1 if every (name, value) of now is in seen (sorted): the marked set covers every tree the refs
 * name now, since what is reachable from an id depends on the id alone. */
static int refs_covered(const preflist *now, const preflist *seen)
{
	for (size_t i = 0; i < now->n; i++)
		if (!seen->n || !bsearch(&now->v[i], seen->v, seen->n, sizeof(pref), cmp_pref))
			return 0;
	return 1;
}

/* Calls mark() with the thread's store calls going to c (NULL: the pool), recording the refs it
 * lists into seen (sorted afterwards). */
static int run_mark(pg_store *st, pgconn *c, prolly_gc_mark_fn mark, void *payload, preflist *seen)
{
	int rc;
	preflist_dispose(seen);
	cap_store = st;
	cap_list = seen;
	if (c) {
		pin_store = st;
		pin_conn = c;
		pin_busy = 0;
	}
	rc = mark(payload);
	cap_store = NULL;
	cap_list = NULL;
	pin_store = NULL;
	pin_conn = NULL;
	pin_busy = 0;
	if (seen->n)
		qsort(seen->v, seen->n, sizeof(pref), cmp_pref);
	return rc;
}

typedef struct candctx {
	prolly_buf ids;   /* n * 32 bytes */
	prolly_buf sizes; /* n * uint64 */
	size_t n;
} candctx;

static int cand_fn(void *ctx, size_t qi, const PGresult *r)
{
	candctx *x = ctx;
	int rows = PQntuples(r), rc;
	(void)qi;
	for (int i = 0; i < rows; i++) {
		uint64_t size;
		if (PQgetlength(r, i, 0) != PROLLY_ID_SIZE || read_int8(r, i, 1, &size))
			continue; /* not a node id this library wrote: never removed */
		if ((rc = prolly__buf_put(&x->ids, PQgetvalue(r, i, 0), PROLLY_ID_SIZE)) ||
		    (rc = prolly__buf_put(&x->sizes, &size, sizeof(size))))
			return rc;
		x->n++;
	}
	return 0;
}

typedef struct sweepctx {
	preflist now;
	sctx del;
	size_t q_refs, q_del;
} sweepctx;

static int sweep_fn(void *ctx, size_t qi, const PGresult *r)
{
	sweepctx *x = ctx;
	if (qi == x->q_refs)
		return list_fn(&x->now, qi, r);
	if (qi == x->q_del)
		return two_int8_fn(&x->del, qi, r);
	return 0;
}

/* Keeps in ids/sizes (n entries) only those keep() refuses; returns the new count. */
static size_t filter_doomed(prolly_gc_keep_fn keep, void *payload, prolly_id *ids, uint64_t *sizes,
                            size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!keep(payload, &ids[i])) {
			ids[m] = ids[i];
			sizes[m] = sizes[i];
			m++;
		}
	return m;
}

/*
 * One sweep transaction on connection b: lock the epoch row (waiting for writes in flight,
 * holding new ones back) and bump it, read the refs; if they name anything the mark did not start
 * from, roll back, mark again and retry (after GC_REMARKS_OUTSIDE such retries, mark again while
 * holding the lock, on this connection); then delete what is still unmarked and commit.
 */
static int sweep(pg_store *st, pgconn *b, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep,
                 void *payload, preflist *seen, prolly_id *ids, uint64_t *sizes, size_t n,
                 uint64_t *removed, uint64_t *removed_bytes)
{
	prolly_buf arr = PROLLY_BUF_INIT;
	sweepctx x;
	pipe p;
	int rc = 0;
	memset(&x, 0, sizeof(x));
	for (int attempt = 0;; attempt++) {
		if (!n)
			goto cleanup;
		preflist_dispose(&x.now);
		x.q_refs = 2;
		x.q_del = SIZE_MAX;
		pipe_init(&p, st, b, "gc sweep", sweep_fn, &x);
		pipe_send(&p, Q_BEGIN, 0, NULL, NULL);
		pipe_send(&p, Q_GCBUMP, 0, NULL, NULL);
		pipe_send(&p, Q_GCREFS, 0, NULL, NULL);
		if ((rc = pipe_run(&p)))
			goto cleanup;
		if (!mark || refs_covered(&x.now, seen))
			break;
		cnt_add(&st->cnt.gc_remarks, 1);
		if (attempt < GC_REMARKS_OUTSIDE) {
			pipe_init(&p, st, b, "gc sweep", NULL, NULL);
			pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
			if ((rc = pipe_run(&p)) || (rc = run_mark(st, NULL, mark, payload, seen)))
				goto cleanup;
			n = filter_doomed(keep, payload, ids, sizes, n);
			continue;
		}
		/* Writers are held back now: the refs cannot move while mark() runs. */
		if ((rc = run_mark(st, b, mark, payload, seen)))
			goto cleanup;
		n = filter_doomed(keep, payload, ids, sizes, n);
		break;
	}
	if (!n) {
		pipe_init(&p, st, b, "gc sweep", NULL, NULL);
		pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
		rc = pipe_run(&p);
		goto cleanup;
	}
	if ((rc = array_begin(&arr, n, BYTEA_OID)))
		goto cleanup;
	for (size_t i = 0; i < n && !rc; i++)
		rc = array_add(&arr, ids[i].bytes, PROLLY_ID_SIZE);
	if (rc)
		goto cleanup;
	x.q_refs = SIZE_MAX;
	x.q_del = 0;
	pipe_init(&p, st, b, "gc sweep", sweep_fn, &x);
	const char *vals[1] = {(const char *)arr.ptr};
	int lens[1] = {(int)arr.size};
	pipe_send(&p, Q_GCDELETE, 1, vals, lens);
	pipe_send(&p, Q_COMMIT, 0, NULL, NULL);
	if ((rc = pipe_run(&p)))
		goto cleanup;
	*removed += x.del.a;
	*removed_bytes += x.del.b;
	cnt_add(&st->cnt.gc_batches, 1);
cleanup:
	if (rc && b->pg && PQstatus(b->pg) == CONNECTION_OK &&
	    PQtransactionStatus(b->pg) != PQTRANS_IDLE) {
		pipe_init(&p, st, b, "gc sweep", NULL, NULL);
		pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
		pipe_run(&p);
	}
	preflist_dispose(&x.now);
	prolly_buf_dispose(&arr);
	return rc;
}

static int pg_gc(prolly_store *base, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                 prolly_gc_result *out)
{
	pg_store *st = (pg_store *)base;
	pgconn *a = NULL, *b = NULL;
	preflist seen = {NULL, 0, 0};
	candctx cand;
	pipe p;
	char lock_sql[160], fetch_sql[64];
	uint64_t listed = 0, removed = 0, removed_bytes = 0;
	int rc = 0, locked = 0, a_bad = 0;

	memset(&cand, 0, sizeof(cand));
	if (!keep)
		return prolly_set_error(PROLLY_EINVAL, "postgres: gc without a keep callback");
	if (st->pool_size < 2)
		return prolly_set_error(PROLLY_EINVAL,
		                        "postgres: gc needs two connections (pool_size >= 2)");
	pthread_mutex_lock(&st->gc_mu);
	if ((rc = pool_acquire(st, &a)) || (rc = pool_acquire(st, &b)))
		goto cleanup;

	/* 1. One gc at a time on this schema, across processes (a session advisory lock on a). */
	snprintf(lock_sql, sizeof(lock_sql), "SELECT pg_advisory_lock(%d, hashtext(%s))", LOCK_GC,
	         st->meta_literal);
	pipe_init(&p, st, a, "gc lock", NULL, NULL);
	pipe_send_sql(&p, lock_sql);
	if ((rc = pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	locked = 1;
	/* 2. Bump the epoch: writes begun before the gc now fail their epoch check. */
	pipe_init(&p, st, b, "gc epoch", NULL, NULL);
	pipe_send(&p, Q_GCBUMP, 0, NULL, NULL);
	if ((rc = pipe_run(&p)))
		goto cleanup;
	/* 3. The snapshot candidates come from: nodes inserted after it are never candidates. */
	pipe_init(&p, st, a, "gc snapshot", NULL, NULL);
	pipe_send_sql(&p, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
	pipe_send_sql(&p, "SELECT 1");
	if ((rc = pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	/* 4. Mark, reading refs and nodes through that same snapshot. */
	if (mark && (rc = run_mark(st, a, mark, payload, &seen)))
		goto cleanup;
	/* 5. Sweep: candidates from the snapshot, gc_batch at a time, each batch in one short
	 * transaction on b. */
	pipe_init(&p, st, a, "gc candidates", NULL, NULL);
	{
		char *decl = subst("DECLARE prolly_gc NO SCROLL CURSOR FOR SELECT id, "
		                   "octet_length(node)::int8 FROM @.nodes",
		                   st->qs, "");
		if (!decl) {
			rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
			goto cleanup;
		}
		pipe_send_sql(&p, decl);
		free(decl);
	}
	if ((rc = pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	snprintf(fetch_sql, sizeof(fetch_sql), "FETCH FORWARD %zu FROM prolly_gc", st->gc_batch);
	for (;;) {
		cand.ids.size = cand.sizes.size = 0;
		cand.n = 0;
		pipe_init(&p, st, a, "gc candidates", cand_fn, &cand);
		pipe_send_sql(&p, fetch_sql);
		if ((rc = pipe_run(&p))) {
			a_bad = p.broken;
			goto cleanup;
		}
		if (!cand.n)
			break;
		listed += cand.n;
		prolly_id *ids = (prolly_id *)(void *)cand.ids.ptr;
		uint64_t *sizes = (uint64_t *)(void *)cand.sizes.ptr;
		size_t n = filter_doomed(keep, payload, ids, sizes, cand.n);
		if ((rc = sweep(st, b, mark, keep, payload, &seen, ids, sizes, n, &removed,
		                &removed_bytes)))
			goto cleanup;
	}
	pipe_init(&p, st, a, "gc end", NULL, NULL);
	pipe_send_sql(&p, "CLOSE prolly_gc");
	pipe_send_sql(&p, "COMMIT");
	if ((rc = pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	if (out) {
		out->nodes_kept = listed - removed;
		out->nodes_removed = removed;
		out->bytes_removed = removed_bytes;
	}

cleanup:
	if (a && a->pg && PQstatus(a->pg) == CONNECTION_OK) {
		int rb = 0;
		pipe_init(&p, st, a, "gc end", NULL, NULL);
		if (PQtransactionStatus(a->pg) != PQTRANS_IDLE)
			pipe_send_sql(&p, "ROLLBACK");
		if (locked) {
			snprintf(lock_sql, sizeof(lock_sql), "SELECT pg_advisory_unlock(%d, hashtext(%s))",
			         LOCK_GC, st->meta_literal);
			pipe_send_sql(&p, lock_sql);
		}
		if (p.queued) {
			char keep_msg[1024];
			snprintf(keep_msg, sizeof(keep_msg), "%s", prolly_last_error());
			rb = pipe_run(&p);
			if (rc)
				prolly_set_error(rc, "%s", keep_msg);
		}
		if (rb)
			a_bad = 1; /* closing the session releases its advisory lock */
	}
	pool_release(st, a, a_bad);
	pool_release(st, b, 0);
	pthread_mutex_unlock(&st->gc_mu);
	preflist_dispose(&seen);
	prolly_buf_dispose(&cand.ids);
	prolly_buf_dispose(&cand.sizes);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Open and close                                                                             */
/* ------------------------------------------------------------------------------------------ */

static void pg_close(prolly_store *base)
{
	pg_store *st = (pg_store *)base;
	if (!st)
		return;
	if (st->conns)
		for (unsigned i = 0; i < st->pool_size; i++)
			conn_close(st, &st->conns[i], 0);
	free(st->conns);
	free(st->idle);
	for (int q = 0; q < N_QUERIES; q++)
		free(st->sql[q]);
	free(st->init_sql);
	free(st->meta_literal);
	free(st->conninfo);
	free(st->password);
	free(st->target);
	free(st->schema);
	free(st->qs);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->gc_mu);
	free(st);
}

/* Password (for scrubbing) and a printable target, from the connection string. */
static int parse_conninfo(pg_store *st, const char *conninfo)
{
	char *err = NULL, msg[600];
	PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
	const char *host = NULL, *port = NULL, *db = NULL, *user = NULL, *hostaddr = NULL;
	if (!opts) {
		redact(msg, sizeof(msg), err ? err : "out of memory", NULL);
		PQfreemem(err);
		return prolly_set_error(PROLLY_EINVAL, "postgres: cannot parse the connection string: %s",
		                        msg);
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (strcmp(o->keyword, "password") == 0 && o->val[0])
			st->password = strdup(o->val);
		else if (strcmp(o->keyword, "host") == 0)
			host = o->val;
		else if (strcmp(o->keyword, "hostaddr") == 0)
			hostaddr = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			port = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			db = o->val;
		else if (strcmp(o->keyword, "user") == 0)
			user = o->val;
	}
	char t[512];
	snprintf(t, sizeof(t), "%s%s%s%s%s%s%s%s%s%s", db ? "database " : "", db ? db : "",
	         host || hostaddr ? " on " : "",
	         host       ? host
	         : hostaddr ? hostaddr
	                    : "",
	         port ? ":" : "", port ? port : "", user ? " as " : "", user ? user : "", "", "");
	redact(msg, sizeof(msg), t[0] ? t : "the default database", st->password);
	st->target = strdup(msg);
	PQconninfoFree(opts);
	if (!st->target)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	return 0;
}

int prolly_store_pg_open(prolly_store **out, const char *conninfo, const prolly_pg_options *opts)
{
	pg_store *st = NULL;
	pgconn *c = NULL;
	char *qs = NULL;
	int rc = 0;

	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_open: out is NULL");
	if (!conninfo)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_open: conninfo is NULL");
	if (!(st = calloc(1, sizeof(*st))))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->gc_mu, NULL);
	st->base.version = PROLLY_STORE_VERSION;
	st->base.kind = "postgres";
	st->base.get_nodes = pg_get_nodes;
	st->base.write = pg_write;
	st->base.get_ref = pg_get_ref;
	st->base.list_refs = pg_list_refs;
	st->base.gc = pg_gc;
	st->base.stat = pg_stat;
	st->base.close = pg_close;
	st->base.get_ref_objects = pg_get_ref_objects;

	const char *schema = opts && opts->schema && opts->schema[0] ? opts->schema : "public";
	st->pool_size = opts && opts->pool_size ? opts->pool_size : 8;
	st->pool_timeout_ms = opts && opts->pool_timeout_ms ? opts->pool_timeout_ms : 5000;
	st->batch_items = opts && opts->batch_items ? opts->batch_items : 1024;
	st->read_chunk = opts && opts->read_chunk ? opts->read_chunk : 4096;
	st->gc_batch = opts && opts->gc_batch ? opts->gc_batch : 10000;
	st->no_create = opts ? opts->no_create : 0;
	if (strlen(schema) > 63 || strchr(schema, '\\')) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "postgres: schema name '%s' is longer than 63 bytes or has a "
		                      "backslash",
		                      schema);
		goto cleanup;
	}
	if (st->pool_size > 10000) {
		rc = prolly_set_error(PROLLY_EINVAL, "postgres: pool_size %u is too large", st->pool_size);
		goto cleanup;
	}
	if (!(st->conninfo = strdup(conninfo)) || !(st->schema = strdup(schema))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	if ((rc = parse_conninfo(st, conninfo)))
		goto cleanup;
	qs = st->qs = quote_ident(schema);
	char *qmeta = qs ? malloc(strlen(qs) + 6) : NULL;
	if (qmeta) {
		strcpy(qmeta, qs);
		strcat(qmeta, ".meta");
		st->meta_literal = quote_literal(qmeta);
		free(qmeta);
	}
	if (!qs || !st->meta_literal) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	for (int q = 0; q < N_QUERIES; q++)
		if (!(st->sql[q] = subst(query_tmpl[q], qs, st->meta_literal))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
			goto cleanup;
		}
	if (!(st->init_sql = subst(init_tmpl, qs, st->meta_literal))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	st->conns = calloc(st->pool_size, sizeof(*st->conns));
	st->idle = calloc(st->pool_size, sizeof(*st->idle));
	if (!st->conns || !st->idle) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	for (unsigned i = 0; i < st->pool_size; i++)
		st->idle[st->n_idle++] = &st->conns[st->pool_size - 1 - i];

	/* Connect once: the server is there, the schema exists (or is created) and is not newer. */
	if ((rc = pool_acquire(st, &c)))
		goto cleanup;
	uint64_t version = 0;
	int missing = 0;
	if ((rc = read_version(st, c, &version, &missing)))
		goto cleanup;
	if (missing && st->no_create) {
		rc = prolly_set_error(PROLLY_ENOTFOUND,
		                      "postgres: schema \"%s\" on %s has no prolly tables (create them "
		                      "with 'prolly init')",
		                      st->schema, st->target);
		goto cleanup;
	}
	/* A missing schema is created at the current version; an older one is migrated unless
	 * no_create (or the role may not), else used as it is. */
	if (missing || (!st->no_create && version >= 1 && version < SCHEMA_VERSION))
		rc = init_on(st, c, &version, !missing);
	else
		rc = check_version(st, version);
	if (rc)
		goto cleanup;
	atomic_store(&st->ready, 1);
	atomic_store(&st->fast, version >= 2);
	if ((rc = conn_prepare(st, c)))
		goto cleanup;
	pool_release(st, c, 0);
	c = NULL;
	*out = &st->base;
	st = NULL;

cleanup:
	if (c)
		pool_release(st, c, 1);
	pg_close(st ? &st->base : NULL);
	return rc;
}

int prolly_store_pg_counters(prolly_store *base, prolly_pg_counters *out)
{
	pg_store *st = (pg_store *)base;
	if (!st || !out || !st->base.kind || strcmp(st->base.kind, "postgres") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_counters: not a PostgreSQL store");
	out->round_trips = atomic_load(&st->cnt.round_trips);
	out->statements = atomic_load(&st->cnt.statements);
	out->insert_statements = atomic_load(&st->cnt.insert_statements);
	out->rows_inserted = atomic_load(&st->cnt.rows_inserted);
	out->rows_read = atomic_load(&st->cnt.rows_read);
	out->bytes_read = atomic_load(&st->cnt.bytes_read);
	out->bytes_sent = atomic_load(&st->cnt.bytes_sent);
	out->pool_waits = atomic_load(&st->cnt.pool_waits);
	out->pool_wait_ns = atomic_load(&st->cnt.pool_wait_ns);
	out->pool_timeouts = atomic_load(&st->cnt.pool_timeouts);
	out->connects = atomic_load(&st->cnt.connects);
	out->broken = atomic_load(&st->cnt.broken);
	out->gc_batches = atomic_load(&st->cnt.gc_batches);
	out->gc_remarks = atomic_load(&st->cnt.gc_remarks);
	return 0;
}

void prolly_store_pg_fail_chunk(prolly_store *base, unsigned chunk)
{
	pg_store *st = (pg_store *)base;
	if (st && st->base.kind && strcmp(st->base.kind, "postgres") == 0)
		atomic_store(&st->fail_chunk, chunk);
}
