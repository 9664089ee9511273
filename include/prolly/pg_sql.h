/*
 * prolly/pg_sql.h - the protocol of a store's PostgreSQL schema that every writer of it keeps:
 * the advisory lock keys, the gc's beat, and the statements that the library's PostgreSQL store
 * and the PostgreSQL extension (ext/postgres) both run. Text only: no function, no type, nothing
 * to link. For whoever reads or writes a store's tables beside the library, as the extension does
 * (it sees the public headers only, the store its own folder and these: one home for both).
 *
 * The schema, its functions and the write protocol are described in docs/postgres.md. A
 * statement macro takes the text that stands for the store's schema, as a quoted identifier, in
 * the caller's own template syntax (the store's "@", the extension's "%s"), and gives one string
 * literal. Parameters are numbered $1.... Both callers run them with search_path set to
 * pg_catalog, pg_temp (a role that can CREATE in a schema on the caller's path could otherwise
 * plant, say, a unnest(bytea[]) that beats pg_catalog's); the functions are named with their
 * schema too.
 */
#ifndef PROLLY_PG_SQL_H
#define PROLLY_PG_SQL_H

/* The advisory lock keys, two int4 each: this first half, and hashtext of the schema's quoted
 * name followed by ".meta" (as an SQL literal: '"public".meta'). The schema lock is taken while
 * the schema is created or migrated; the gc lock by a gc for as long as it runs; the write lock
 * shared by every write (inside the schema's prolly_write and prolly_write_begin) and exclusive
 * by the gc's epoch bump. Any role that can connect may take them. */
#define PROLLY_PG_LOCK_INIT 1886547820
#define PROLLY_PG_LOCK_GC 1886547821
#define PROLLY_PG_LOCK_WRITE 1886547822

/* The keys as SQL text, for statements. */
#define PROLLY_PG_STR_(x) #x
#define PROLLY_PG_STR(x) PROLLY_PG_STR_(x)
#define PROLLY_PG_LOCK_INIT_SQL PROLLY_PG_STR(PROLLY_PG_LOCK_INIT)
#define PROLLY_PG_LOCK_GC_SQL PROLLY_PG_STR(PROLLY_PG_LOCK_GC)
#define PROLLY_PG_LOCK_WRITE_SQL PROLLY_PG_STR(PROLLY_PG_LOCK_WRITE)

/* The wait for one of the locks when the session sets no lock_timeout (the server's default
 * waits forever): an interval literal. */
#define PROLLY_PG_LOCK_WAIT_DEFAULT "5s"

/* The gc's beat: while a gc holds the write lock, its session's application_name is this
 * prefix followed by the server's time in ms (transaction-local: COMMIT or ROLLBACK restores the
 * session's own), which pg_stat_activity shows to every role. */
#define PROLLY_PG_BEAT_PREFIX "prolly gc beat "

/*
 * Whether a gc of the schema holds the write lock and is working, asked by a writer whose wait
 * for that lock timed out: one int8 per gc of the schema (none when no gc runs): 1 when the gc
 * holds the write lock exclusive and sent a statement lately, its beat or, where the caller's
 * role may read it, its state_change within the last lock_timeout (PROLLY_PG_LOCK_WAIT_DEFAULT
 * when the session has none; a second at least: a mark also works between its statements); 2
 * when no other session holds the write lock exclusive; 0 for a gc that went idle. META is the
 * SQL text of the literal '"schema".meta' (a parameter or the literal itself). The times are
 * clock_timestamp(): a caller inside a transaction must not measure from its start.
 */
#define PROLLY_PG_SQL_GC_ADVANCING(META)                                                           \
	"SELECT CASE WHEN w.pid IS NULL THEN 2 WHEN w.pid = g.pid AND (a.state_change >= "             \
	"pg_catalog.clock_timestamp() - t.w OR substring(a.application_name FROM "                     \
	"'^" PROLLY_PG_BEAT_PREFIX "([0-9]{1,18})$')::int8 >= (pg_catalog.date_part('epoch', "         \
	"pg_catalog.clock_timestamp() - t.w) * 1000)::int8) THEN 1 ELSE 0 END::int8 "                  \
	"FROM pg_catalog.pg_locks g JOIN pg_catalog.pg_stat_activity a ON a.pid = g.pid "              \
	"CROSS JOIN (SELECT greatest(interval '1s', CASE "                                             \
	"pg_catalog.current_setting('lock_timeout') WHEN '0' THEN '" PROLLY_PG_LOCK_WAIT_DEFAULT       \
	"' ELSE pg_catalog.current_setting('lock_timeout') END::interval) AS w) t "                    \
	"LEFT JOIN pg_catalog.pg_locks w ON w.locktype = 'advisory' AND w.granted "                    \
	"AND w.mode = 'ExclusiveLock' AND w.pid <> pg_catalog.pg_backend_pid() "                       \
	"AND w.database = g.database AND w.classid = " PROLLY_PG_STR(                                  \
	    PROLLY_PG_LOCK_WRITE) "::oid "                                                             \
	                          "AND w.objid = g.objid AND w.objsubid = 2 "                          \
	                          "WHERE g.locktype = 'advisory' AND g.granted AND g.pid <> "          \
	                          "pg_catalog.pg_backend_pid() "                                       \
	                          "AND g.database = (SELECT oid FROM pg_catalog.pg_database WHERE "    \
	                          "datname = "                                                         \
	                          "pg_catalog.current_database()) AND g.classid = " PROLLY_PG_STR(     \
	                              PROLLY_PG_LOCK_GC) "::oid "                                      \
	                                                 "AND g.objid = pg_catalog.hashtext(" META     \
	                                                 ")::oid AND g.objsubid = 2"

/* Inserts nodes: $1 their ids, $2 their bytes (bytea[] each, as long as each other); a node the
 * table holds already is left as it is. Writers insert in id order, so that two of them never
 * wait for each other's rows in opposite orders. The two unnests stand in the select list, which
 * pairs their elements in order and hands each row straight to the insert: unnest of two arrays
 * in FROM first copied every node into a tuplestore (a temporary file past work_mem), 9% of the
 * statement's time for 12,000 nodes of 3.8 KB (docs/postgres.md, "Inserting nodes"). */
#define PROLLY_PG_SQL_INSERT_NODES(S)                                                              \
	"INSERT INTO " S ".nodes (id, node) SELECT pg_catalog.unnest($1::bytea[]), "                   \
	"pg_catalog.unnest($2::bytea[]) ON CONFLICT DO NOTHING"

/* One ref's compare-and-swap by the schema's prolly_ref_cas ($1 name, $2 the expectation, $3 the
 * expected value, $4 remove, $5 the new value; docs/postgres.md): one row, applied, cur_exists,
 * cur. */
#define PROLLY_PG_SQL_REF_CAS(S)                                                                   \
	"SELECT applied, cur_exists, cur FROM " S ".prolly_ref_cas($1::bytea, $2::int4, $3::bytea, "   \
	"$4::bool, $5::bytea)"

/* The same compare-and-swap as one plain statement per expectation and removal, with
 * prolly_ref_cas's rules (docs/postgres.md): $1 the name, $2 the expected value, $3 the new
 * value, bytea each (NULL where the case uses none). PROLLY_PG_SQL_CAS(S)[expect][remove] is the
 * statement for a prolly_ref_expect and a removal (0 or 1); PROLLY_PG_CAS_APPLIED says whether it
 * applied from the rows it affected (or, for ABSENT with a removal, a SELECT, returned: applied
 * when none); after a loss, PROLLY_PG_SQL_REF_VALUE ($1 the name) reads the current value, no row
 * when the ref is absent. Without PL/pgSQL's call around them (a function call, its search_path
 * setting and a statement of its own inside) a ref costs a fraction of the function's time:
 * the extension moves its refs with these (docs/benchmarks/sql.md, "The refs as plain
 * statements"). tests/test_pg_cas.c holds them to prolly_ref_cas in every case. */
/* clang-format off */
#define PROLLY_PG_SQL_CAS(S) {                                                                     \
	{"INSERT INTO " S ".refs (name, value) VALUES ($1, $3) "                                       \
	 "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",     /* ANY, set */                 \
	 "DELETE FROM " S ".refs WHERE name = $1"},                     /* ANY, remove */              \
	{"INSERT INTO " S ".refs (name, value) VALUES ($1, $3) "                                       \
	 "ON CONFLICT (name) DO NOTHING",                               /* ABSENT, create */           \
	 "SELECT 1 FROM " S ".refs WHERE name = $1"},                   /* ABSENT, remove: a check */  \
	{"UPDATE " S ".refs SET value = $3 WHERE name = $1 AND value = $2",    /* VALUE, move */       \
	 "DELETE FROM " S ".refs WHERE name = $1 AND value = $2"}}             /* VALUE, remove */
/* clang-format on */
#define PROLLY_PG_CAS_APPLIED(expect, remove, rows)                                                \
	((expect) == 0 || (((expect) == 1 && (remove)) ? (rows) == 0 : (rows) == 1))
#define PROLLY_PG_SQL_REF_VALUE(S) "SELECT value FROM " S ".refs WHERE name = $1"

/* The nodes whose ids are $1 (bytea[]): a row (i, node) per id the table holds, i its position
 * from 1. Each id is looked up in a LATERAL subquery with LIMIT 1, which the planner cannot turn
 * into a join: an index probe per id, even in a generic plan made while the table was small (a
 * join would hash the array and scan the table for as long as that plan is kept). */
#define PROLLY_PG_SQL_GET_NODES(S)                                                                 \
	"SELECT r.i, x.node FROM pg_catalog.unnest($1::bytea[]) WITH ORDINALITY AS r(id, i) "          \
	"CROSS JOIN LATERAL (SELECT n.node FROM " S ".nodes n WHERE n.id = r.id LIMIT 1) x"

#endif /* PROLLY_PG_SQL_H */
