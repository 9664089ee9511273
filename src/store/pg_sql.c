/*
 * pg_sql.c - the PostgreSQL store's SQL: the statement texts, the schema's DDL and its migration
 * (and running them: prolly_store_pg_init), the substitution of the schema name into both, and
 * the binary encoding of parameters and decoding of results.
 *
 * Templates: '@' stands for the quoted schema name, '#' for the literal 'schema.meta' (hashed
 * into the second half of the advisory lock keys, listed in pg_int.h). prolly__pg_sql_init
 * substitutes them once per store at open; a connection prepares each statement the first time
 * it sends it (pg_pipe.c).
 *
 * Schema versions: a new schema is created at version 6. Version 2 added prolly_write; version 3
 * replaced its body (refs are compared and swapped before the nodes are inserted); version 4
 * added the constraint nodes_id_is_sha256 (id = sha256(node)), NOT VALID in the migration's
 * block, then validated in a transaction of its own; version 5 keeps the id in its row (STORAGE
 * PLAIN); version 6 has each function set its own search_path. An older schema is migrated
 * (prolly_write created or replaced, the constraint added, the id's storage set, the functions'
 * search_path set, the version set to 6) by prolly_store_pg_init and
 * by an open without no_create when the role owns the tables; otherwise the store keeps using
 * the schema as it is: prolly_write where it exists (version 2 or 3), else the version-1
 * pipeline (decided at open, switched on by a later init). Newer versions are refused.
 * The functions and the write protocol they serve are described in pg_write.c and
 * docs/postgres.md.
 *
 * Parameters and results are binary; array parameters are encoded here in PostgreSQL's binary
 * array format: a header of five big-endian int32 (1 dimension, has-nulls flag, element type oid,
 * element count, lower bound 1), then per element its length (-1 for NULL) and its bytes.
 */
#include "pg_int.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------------------------ */
/* Statements                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* The size of an id as SQL text. */
#define C_ID PROLLY__STR(PROLLY_ID_SIZE)

/* The transaction that wrote the epoch row's version this statement sees (pg_epoch.c): a restore
 * in place writes the row again, with the dump's value, never with its old xmin. Its types and
 * its operator are named with their schema: the open's version read (version_tmpl) runs before
 * the session's search_path is set (pg_pipe.c). */
#define EPOCH_XMIN                                                                                 \
	"(SELECT xmin::pg_catalog.text::pg_catalog.int8 FROM @.meta WHERE key OPERATOR(pg_catalog.=) " \
	"'epoch')"
/* A write's epoch to check (parameter E) as passed to the schema's function: E while the row is
 * still the version whose xmin is parameter X (NULL: not known), else 0, which no epoch equals.
 * The statement's lock on meta keeps a restore (DROP or TRUNCATE) from landing after this read. */
#define EPOCH_GUARD(E, X)                                                                          \
	"CASE WHEN " X "::int8 IS NULL OR " X "::int8 = " EPOCH_XMIN " THEN " E "::int8 ELSE 0 END"

/* '@' stands for the quoted schema name, '#' for the literal 'schema.meta'. */
static const char *const query_tmpl[N_QUERIES] = {
    [Q_BEGIN] = "BEGIN",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_ASYNC] = "SET LOCAL synchronous_commit TO off",
    /* LOCK_BOUND (pg_int.h) bounds the wait for the write lock (any role may hold it) before the
     * function takes it: an argument is evaluated before the call. */
    [Q_WBEGIN] =
        "SELECT e, (SELECT xmin::text::int8 FROM @.meta WHERE key = 'epoch' AND value = e) "
        "FROM @.prolly_write_begin(CASE WHEN " LOCK_BOUND
        " THEN " EPOCH_GUARD("$1", "$2") " END) AS e",
    [Q_WREQUIRES] = "SELECT @.prolly_write_requires($1::bytea[])",
    [Q_WINSERT] = PROLLY_PG_SQL_INSERT_NODES("@"),
    [Q_WCAS] = PROLLY_PG_SQL_REF_CAS("@"),
    [Q_WFINISH] = "SELECT @.prolly_write_finish()",
    [Q_WRITE] =
        "SELECT o_epoch, o_inserted, o_applied, o_cur_exists, o_cur, (SELECT xmin::text::int8 "
        "FROM @.meta WHERE key = 'epoch' AND value = o_epoch) FROM "
        "@.prolly_write(CASE WHEN " LOCK_BOUND " THEN " EPOCH_GUARD(
            "$1", "$11") " END, $2::bool, $3::bytea[], $4::bytea[], $5::bytea[], "
                         "$6::bytea[], $7::int4[], $8::bytea[], $9::bool[], $10::bytea[])",
    [Q_EPOCH] = "SELECT value, xmin::text::int8 FROM @.meta WHERE key = 'epoch'",
    /* The array statements look each element up in a LATERAL subquery with LIMIT 1, which the
     * planner cannot turn into a join: an index probe per element whatever the table's size
     * when the plan was made. Joined plainly (or through EXISTS), a generic plan made while the
     * table is empty or small -- a new store, whose connections prepare their statements soon
     * after init -- hashes the array and scans the whole table, and keeps doing so as the table grows
     * until an ANALYZE invalidates it (test pg_array_statements_probe_the_index). */
    [Q_GETNODES] = PROLLY_PG_SQL_GET_NODES("@"),
    /* The positions (1-based) of the ids the table holds: an index probe each, no node read. */
    [Q_HASNODES] = "SELECT r.i FROM unnest($1::bytea[]) WITH ORDINALITY AS r(id, i) "
                   "CROSS JOIN LATERAL (SELECT 1 FROM @.nodes n WHERE n.id = r.id LIMIT 1) x",
    /* Objects and their ancestors, breadth first along the parents of the commit layout the
     * engine passes (prolly_store_commit_layout: $3 the magic, $4 the offset of the u32 parent
     * count, $5 that of the parent ids; get_byte counts from 0, substring from 1; arithmetic,
     * not | and <<, which PostgreSQL parses left to right at one precedence): UNION
     * keeps each object once, LIMIT stops the recursion early. The parent lookup is a LATERAL
     * subquery with LIMIT 1 so that it stays an index lookup per parent: joined plainly, the
     * generic plan hashes the whole nodes table. The parent positions are unnest(ARRAY(SELECT
     * generate_series(...))), not generate_series(...) itself: the planner takes a set-returning
     * function of unknown arguments for 1000 rows but an array of unknown length for 10, and
     * UNION sizes the hash table it makes at the start of every execution by that estimate:
     * with generate_series, 1,000,010 rows, a table of megabytes (capped by hash_mem) zeroed per
     * execution, which made the first walk of each new connection about 50 ms; now 10,010
     * (test pg_ancestors_statement_estimates_few_rows). */
    [Q_ANCESTORS] =
        "WITH RECURSIVE a(id, node) AS ("
        "SELECT n.id, n.node FROM @.nodes n WHERE n.id = ANY($1::bytea[]) "
        "UNION "
        "SELECT p.id, p.node FROM a CROSS JOIN LATERAL unnest(ARRAY(SELECT generate_series(0, "
        "CASE WHEN octet_length(a.node) >= $5::int4 AND substring(a.node FROM 1 FOR "
        "octet_length($3::bytea)) = $3::bytea THEN least(get_byte(a.node, $4::int4) + 256 * "
        "get_byte(a.node, $4::int4 + 1) + 65536 * get_byte(a.node, $4::int4 + 2) + "
        "16777216::int8 * get_byte(a.node, $4::int4 + 3), (octet_length(a.node) - $5::int4) / " C_ID
        ")::int4 - 1 ELSE -1 END))) AS g(j) "
        "CROSS JOIN LATERAL (SELECT n.id, n.node FROM @.nodes n WHERE n.id = substring(a.node "
        "FROM $5::int4 + 1 + " C_ID " * g.j FOR " C_ID ") LIMIT 1) p) "
        "SELECT id, node FROM a LIMIT $2::int8",
    /* The ref, the epoch and its row's xmin, the epoch row read once; no row without it (a
     * damaged store: pg_refs.c). The fewest plan nodes: on a connection that runs one such
     * statement per read, setting up the plan is a third of the server's time. */
    [Q_GETREF] = "SELECT (SELECT value FROM @.refs WHERE name = $1::bytea), e.value, "
                 "e.xmin::text::int8 FROM @.meta e WHERE e.key = 'epoch'",
    /* One row per name: absent refs with a NULL value; the epoch's subquery runs once. */
    [Q_GETREFS] = "SELECT r.i, x.value, (SELECT value FROM @.meta WHERE key = 'epoch'), " EPOCH_XMIN
                  " "
                  "FROM unnest($1::bytea[]) WITH ORDINALITY AS r(name, i) "
                  "LEFT JOIN LATERAL (SELECT f.value FROM @.refs f WHERE f.name = r.name "
                  "LIMIT 1) x ON true",
    /* The ref, the epoch, the object the ref names and the one whose id is at offset $2 of it;
     * neither object when the ref's value is $3 (the caller holds them): the join key is then
     * NULL, and an index scan on a NULL key reads nothing. */
    [Q_GETREFOBJS] = "SELECT r.value, e.value, c.node, t.node, e.xmin::text::int8 "
                     "FROM @.meta e "
                     "LEFT JOIN @.refs r ON r.name = $1::bytea "
                     "LEFT JOIN @.nodes c ON c.id = NULLIF(r.value, $3::bytea) "
                     "LEFT JOIN @.nodes t ON octet_length(c.node) >= $2::int4 + 32 "
                     "AND t.id = substring(c.node FROM $2::int4 + 1 FOR 32) "
                     "WHERE e.key = 'epoch'",
    /* Two statements, not one with "$2 IS NULL OR name < $2": a generic plan (every
     * statement here runs with one, see pg_pipe.c) of that could bound its index scan only
     * below, and would read every ref after the prefix. */
    [Q_LISTREFS] = "SELECT name, value FROM @.refs WHERE name >= $1::bytea AND name < $2::bytea "
                   "ORDER BY name",
    [Q_LISTFROM] = "SELECT name, value FROM @.refs WHERE name >= $1::bytea ORDER BY name",
    [Q_STAT] = "SELECT count(*), coalesce(sum(octet_length(node)), 0)::int8 FROM @.nodes",
    /* The exclusive side of the writers' shared advisory lock, then the bump (whose row lock
     * also waits for version-1 writers, which lock the epoch row FOR SHARE); the waits bounded
     * as a write's. */
    [Q_GCBUMP] = "WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(CASE WHEN " LOCK_BOUND
                 " THEN " PROLLY_PG_LOCK_WRITE_SQL " END, hashtext(#))) "
                 "UPDATE @.meta SET value = value + 1 FROM l WHERE key = 'epoch' RETURNING value",
    [Q_GCREFS] = "SELECT name, value FROM @.refs",
    [Q_GCDELETE] = "WITH d AS (DELETE FROM @.nodes WHERE id = ANY($1::bytea[]) "
                   "RETURNING octet_length(node) AS n) SELECT count(*), coalesce(sum(n), 0)::int8 "
                   "FROM d",
};

/*
 * The schema, idempotently: one DO block, serialised by an advisory lock, that creates the
 * version-1 objects when the meta table is missing, then migrates an older schema one version
 * at a time (3: creates or replaces prolly_write and prolly_write_begin; 4: the node constraint;
 * 5: the id's storage; 6: the functions' search_path), setting schema_version; a new schema thus
 * ends at SCHEMA_VERSION in one transaction. '#' stands for the literal 'schema.meta'.
 */
static const char init_tmpl[] =
    "DO $prolly_init$\n"
    "DECLARE v bigint; created boolean := false;\n"
    "BEGIN\n"
    /* Before anything else: this may run on a connection whose session is not set up yet
     * (SESSION_PATH, pg_int.h); each statement below is planned when first run, after it. */
    "PERFORM " SESSION_PATH ";\n"
    /* The wait for the schema lock is bounded as a write's (LOCK_BOUND, pg_int.h). */
    "PERFORM pg_advisory_xact_lock(CASE WHEN " LOCK_BOUND " THEN " PROLLY_PG_LOCK_INIT_SQL
    " END, hashtext(#));\n"
    "IF to_regclass(#) IS NULL THEN\n"
    "created := true;\n"
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
    "IF v < 3 THEN\n"
    /* One write in one statement (see pg_write.c). The compare-and-swaps come first, so a write
     * that loses one inserts no node: with one ref, nothing has been written when it fails and
     * no subtransaction is needed (nor with none); with several, they and the node insert run in a
     * subtransaction (the EXCEPTION block) that a failed compare-and-swap (PLY02) undoes, while
     * the outcome of every ref stays in the local arrays. One row per ref, in the order given
     * (name order); one row with NULL ref columns if none. Version 2 inserted the nodes first. */
    "CREATE OR REPLACE FUNCTION @.prolly_write(p_epoch bigint, p_async boolean,\n"
    "  p_requires bytea[], p_ids bytea[], p_nodes bytea[], p_names bytea[], p_expects int[],\n"
    "  p_expected bytea[], p_removes boolean[], p_values bytea[])\n"
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
    "  PERFORM pg_advisory_xact_lock_shared(" PROLLY_PG_LOCK_WRITE_SQL ", hashtext(#));\n"
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
    "  IF v_n <= 1 THEN\n"
    "    IF v_n = 1 THEN\n"
    "      SELECT * INTO c FROM @.prolly_ref_cas(p_names[1], p_expects[1], p_expected[1],\n"
    "        p_removes[1], p_values[1]);\n"
    "      v_applied[1] := c.applied;\n"
    "      v_exists[1] := c.cur_exists;\n"
    "      v_cur[1] := c.cur;\n"
    "      v_failed := NOT c.applied;\n"
    "    END IF;\n"
    "    IF NOT v_failed AND coalesce(cardinality(p_ids), 0) > 0 THEN\n"
    "      INSERT INTO @.nodes (id, node) SELECT * FROM unnest(p_ids, p_nodes)\n"
    "        ON CONFLICT DO NOTHING;\n"
    "      GET DIAGNOSTICS v_inserted = ROW_COUNT;\n"
    "    END IF;\n"
    "  ELSE\n"
    "    BEGIN\n"
    "      FOR i IN 1 .. v_n LOOP\n"
    "        SELECT * INTO c FROM @.prolly_ref_cas(p_names[i], p_expects[i], p_expected[i],\n"
    "          p_removes[i], p_values[i]);\n"
    "        v_applied[i] := c.applied;\n"
    "        v_exists[i] := c.cur_exists;\n"
    "        v_cur[i] := c.cur;\n"
    "        IF NOT c.applied THEN\n"
    "          v_failed := true;\n"
    "        END IF;\n"
    "      END LOOP;\n"
    "      IF v_failed THEN\n"
    "        RAISE EXCEPTION USING ERRCODE = 'PLY02',\n"
    "          MESSAGE = 'prolly: a ref update found an unexpected value';\n"
    "      END IF;\n"
    "      IF coalesce(cardinality(p_ids), 0) > 0 THEN\n"
    "        INSERT INTO @.nodes (id, node) SELECT * FROM unnest(p_ids, p_nodes)\n"
    "          ON CONFLICT DO NOTHING;\n"
    "        GET DIAGNOSTICS v_inserted = ROW_COUNT;\n"
    "      END IF;\n"
    "    EXCEPTION WHEN SQLSTATE 'PLY02' THEN\n"
    "      v_inserted := 0;\n"
    "    END;\n"
    "  END IF;\n"
    /* Nothing was written: the commit need not wait for a flush. */
    "  IF v_failed THEN\n"
    "    PERFORM set_config('synchronous_commit', 'off', true);\n"
    "  END IF;\n"
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
    "  PERFORM pg_advisory_xact_lock_shared(" PROLLY_PG_LOCK_WRITE_SQL ", hashtext(#));\n"
    "  SELECT value INTO cur FROM @.meta WHERE key = 'epoch';\n"
    "  IF expected IS NOT NULL AND cur IS DISTINCT FROM expected THEN\n"
    "    RAISE EXCEPTION USING ERRCODE = 'PLY01', MESSAGE = 'prolly: the gc epoch moved',\n"
    "      DETAIL = cur::text;\n"
    "  END IF;\n"
    "  RETURN cur;\n"
    "END $f$;\n"
    "UPDATE @.meta SET value = 3 WHERE key = 'schema_version';\n"
    "END IF;\n"
    /* Version 4: the database checks what it stores. Every node's id is the SHA-256 of its bytes
     * (docs/format.md), so a row that breaks this is junk, and junk under an id a later write
     * will produce would be kept by that write's ON CONFLICT DO NOTHING. Added NOT VALID: in
     * force for every new row at once, without reading the table under this block's ACCESS
     * EXCLUSIVE lock; the existing rows are checked by VALIDATE CONSTRAINT in a transaction of
     * its own (validate_sql below), which lets readers and writers go on meanwhile. */
    "IF v < 4 THEN\n"
    /* The ACCESS EXCLUSIVE lock waits for every open transaction on nodes (a gc's snapshot
     * lasts the whole gc) and, queued, holds back every new reader and writer: wait 5 s at
     * most, then give up (SQLSTATE 55P03) rather than stall them all. The table may have the
     * constraint while meta says an older version: a data-only restore of an older store's
     * rows into tables this block made (docs/postgres.md, "Backups"). */
    "  PERFORM set_config('lock_timeout', '5s', true);\n"
    "  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass(left(#, -5) || "
    "'.nodes')\n"
    "      AND conname = 'nodes_id_is_sha256') THEN\n"
    "    ALTER TABLE @.nodes ADD CONSTRAINT nodes_id_is_sha256 CHECK (id = sha256(node)) NOT "
    "VALID;\n"
    "  END IF;\n"
    "  UPDATE @.meta SET value = 4 WHERE key = 'schema_version';\n"
    "END IF;\n"
    /* Version 5: the id stays in its row. Left EXTENDED (the default), the 32-byte id of every
     * row over 2 kB went to the TOAST table, before PostgreSQL tried to compress the node (its
     * order: out-of-line EXTENDED values first, MAIN values last): half the nodes, each insert
     * paying a TOAST row and its index entry. A change of the catalog alone (rows written
     * before keep theirs), under the lock and lock_timeout of the block. */
    "IF v < 5 THEN\n"
    "  PERFORM set_config('lock_timeout', '5s', true);\n"
    "  ALTER TABLE @.nodes ALTER COLUMN id SET STORAGE PLAIN;\n"
    "  UPDATE @.meta SET value = 5 WHERE key = 'schema_version';\n"
    "END IF;\n"
    /* Version 6: each function sets its own search_path. Their bodies name built-ins and
     * operators (=, hashtext, set_config, ...) unqualified; under a caller's path that names a
     * schema where another role may CREATE before pg_catalog, a planted text = text or hashtext
     * would run with the caller's rights (SECURITY INVOKER). The library and the extension call
     * them under pg_catalog, pg_temp already; this covers anyone calling one by hand. The clause
     * costs a save and restore of the setting per call (2-3 us, docs/postgres.md "Security");
     * SET LOCAL of other settings inside (prolly.ref_conflict, synchronous_commit) still lasts
     * to the end of the transaction. Set here, not in each CREATE above: a new schema passes
     * this block too, and CREATE OR REPLACE (the version-3 step) would drop the clause. */
    "IF v < 6 THEN\n"
    "  ALTER FUNCTION @.prolly_write_begin(bigint) SET search_path = pg_catalog, pg_temp;\n"
    "  ALTER FUNCTION @.prolly_write_requires(bytea[]) SET search_path = pg_catalog, pg_temp;\n"
    "  ALTER FUNCTION @.prolly_ref_cas(bytea, int, bytea, boolean, bytea)\n"
    "    SET search_path = pg_catalog, pg_temp;\n"
    "  ALTER FUNCTION @.prolly_write_finish() SET search_path = pg_catalog, pg_temp;\n"
    "  ALTER FUNCTION @.prolly_write(bigint, boolean, bytea[], bytea[], bytea[], bytea[], int[],\n"
    "    bytea[], boolean[], bytea[]) SET search_path = pg_catalog, pg_temp;\n"
    "  UPDATE @.meta SET value = 6 WHERE key = 'schema_version';\n"
    "END IF;\n"
    /* A schema made here with another node size than 4096 is version 7 (SCHEMA_NODE_SIZE): the
     * size in its node_size row, which libraries of version 6 and older do not read, so they
     * refuse the store rather than write trees of the wrong size into it. An existing schema
     * keeps the size it was made with. prolly_node_size_ is replaced by the size (sql_init). */
    "IF created AND prolly_node_size_ <> 4096 THEN\n"
    "  INSERT INTO @.meta (key, value) VALUES ('node_size', prolly_node_size_);\n"
    "  UPDATE @.meta SET value = 7 WHERE key = 'schema_version';\n"
    "END IF;\n"
    "END\n"
    "$prolly_init$";

/* The schema's version: the first statement of every open (no table: a schema to create). It
 * runs before the session's search_path is set (the open's pipeline sets it after), and on a
 * connection that has none when the schema is missing: its operators are named with their
 * schema, as in EPOCH_XMIN (SESSION_PATH, pg_int.h). */
static const char version_tmpl[] =
    "SELECT value, (SELECT value FROM @.meta WHERE key OPERATOR(pg_catalog.=) 'epoch'), " EPOCH_XMIN
    ", (SELECT value FROM @.meta WHERE key OPERATOR(pg_catalog.=) 'node_size')"
    " FROM @.meta WHERE key OPERATOR(pg_catalog.=) 'schema_version'";

/*
 * Checks the rows that were there before the version-4 constraint: a no-op when it is already
 * validated (a new schema's empty table is validated by the first init). Takes SHARE UPDATE
 * EXCLUSIVE on nodes, which conflicts with neither reads nor inserts; reads every node once.
 */
static const char validate_tmpl[] =
    "DO $prolly_validate$\n"
    "BEGIN\n"
    "PERFORM " SESSION_PATH ";\n"
    "IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass(left(#, -5) || '.nodes')\n"
    "    AND conname = 'nodes_id_is_sha256' AND NOT convalidated) THEN\n"
    "  ALTER TABLE @.nodes VALIDATE CONSTRAINT nodes_id_is_sha256;\n"
    "END IF;\n"
    "END\n"
    "$prolly_validate$";

/* ------------------------------------------------------------------------------------------ */
/* Building the statements                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Replaces every '@' of tmpl with a, every '#' with b. */
char *prolly__pg_subst(const char *tmpl, const char *a, const char *b)
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

/* s with every `token` replaced by `with` (malloc'd; NULL when out of memory). */
static char *replace_all(const char *s, const char *token, const char *with)
{
	size_t lt = strlen(token), lw = strlen(with), n = strlen(s) + 1;
	for (const char *p = strstr(s, token); p; p = strstr(p + lt, token))
		n = n - lt + lw;
	char *out = malloc(n), *o = out;
	if (!out)
		return NULL;
	for (const char *p; (p = strstr(s, token)); s = p + lt) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		memcpy(o, with, lw);
		o += lw;
	}
	strcpy(o, s);
	return out;
}

/* s between two q characters, every q in it doubled: "name" (an identifier) or 'text' (a
 * literal; the schema name has no backslash). */
static char *quote(const char *s, char q)
{
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == q ? 2 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = q;
	for (const char *p = s; *p; p++) {
		if (*p == q)
			*o++ = q;
		*o++ = *p;
	}
	*o++ = q;
	*o = 0;
	return out;
}

/*
 * The store's statements for st->schema: its quoted identifier (st->qs), the literal
 * 'schema.meta' (st->meta_literal), every template with both substituted (st->sql) and the init
 * block (st->init_sql). Whatever was set is freed by the store's close, also after a failure.
 */
int prolly__pg_sql_init(pg_store *st)
{
	char *qmeta;
	st->qs = quote(st->schema, '"');
	qmeta = st->qs ? malloc(strlen(st->qs) + 6) : NULL;
	if (qmeta) {
		strcpy(qmeta, st->qs);
		strcat(qmeta, ".meta");
		st->meta_literal = quote(qmeta, '\'');
		free(qmeta);
	}
	if (!st->qs || !st->meta_literal)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	for (int q = 0; q < N_QUERIES; q++)
		if (!(st->sql[q] = prolly__pg_subst(query_tmpl[q], st->qs, st->meta_literal)))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	char size[16], *init = NULL;
	snprintf(size, sizeof(size), "%u", prolly__node_size_of(st->node_size));
	if (!(init = replace_all(init_tmpl, "prolly_node_size_", size)))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	st->init_sql = prolly__pg_subst(init, st->qs, st->meta_literal);
	free(init);
	if (!st->init_sql ||
	    !(st->validate_sql = prolly__pg_subst(validate_tmpl, st->qs, st->meta_literal)) ||
	    !(st->version_sql = prolly__pg_subst(version_tmpl, st->qs, st->meta_literal)))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Binary parameters and results                                                              */
/* ------------------------------------------------------------------------------------------ */

void prolly__pg_put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

void prolly__pg_put_be64(unsigned char *p, uint64_t v)
{
	prolly__pg_put_be32(p, (uint32_t)(v >> 32));
	prolly__pg_put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int prolly__pg_read_int8(const PGresult *r, int row, int col, uint64_t *out)
{
	if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
		return -1;
	*out = get_be64((const unsigned char *)PQgetvalue(r, row, col));
	return 0;
}

int prolly__pg_read_bool(const PGresult *r, int row, int col)
{
	return !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == 1 &&
	       PQgetvalue(r, row, col)[0] != 0;
}

/* Starts a one-dimensional array of n elements of type oid in b (replacing its contents). */
int prolly__pg_array_begin(prolly_buf *b, size_t n, uint32_t oid)
{
	unsigned char h[20];
	if (n > INT32_MAX)
		return prolly_set_error(PROLLY_EINVAL, "postgres: an array of %zu elements is too long", n);
	prolly__pg_put_be32(h, 1);
	prolly__pg_put_be32(h + 4, 0);
	prolly__pg_put_be32(h + 8, oid);
	prolly__pg_put_be32(h + 12, (uint32_t)n);
	prolly__pg_put_be32(h + 16, 1);
	b->size = 0;
	return prolly__buf_put(b, h, sizeof(h));
}

int prolly__pg_array_add(prolly_buf *b, const void *data, size_t size)
{
	unsigned char l[4];
	int rc;
	if (size > 0x3fffffff)
		return prolly_set_error(PROLLY_ETOOBIG, "postgres: a value of %zu bytes is over 1 GiB",
		                        size);
	prolly__pg_put_be32(l, (uint32_t)size);
	if ((rc = prolly__buf_put(b, l, 4)))
		return rc;
	return size ? prolly__buf_put(b, data, size) : 0;
}

/* A NULL element (length -1; the header's has-nulls flag set). */
int prolly__pg_array_add_null(prolly_buf *b)
{
	unsigned char l[4];
	prolly__pg_put_be32(l, 0xffffffffu);
	prolly__pg_put_be32(b->ptr + 4, 1);
	return prolly__buf_put(b, l, 4);
}

int prolly__pg_array_too_big(size_t size)
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

/* The version read's row: the schema version, the gc epoch (0 where unreadable), its row's
 * xmin (0: unknown) and the node_size row (0: none). */
typedef struct version_row {
	uint64_t version, epoch, xmin, node_size;
} version_row;

static int version_fn(void *ctx, size_t qi, const PGresult *r)
{
	version_row *v = ctx;
	if (qi != 0)
		return 0;
	if (PQntuples(r) != 1 || prolly__pg_read_int8(r, 0, 0, &v->version) != 0)
		v->version = 0;
	if (PQntuples(r) != 1 || PQnfields(r) < 2 || prolly__pg_read_int8(r, 0, 1, &v->epoch) != 0)
		v->epoch = 0;
	if (PQntuples(r) == 1)
		prolly__pg_read_int8(r, 0, 2, &v->xmin);
	if (PQntuples(r) != 1 || PQnfields(r) < 4 || PQgetisnull(r, 0, 3) ||
	    prolly__pg_read_int8(r, 0, 3, &v->node_size) != 0)
		v->node_size = 0;
	return 0;
}

/* prolly__pg_read_version, and with prepare prolly__pg_open_pipeline. */
static int read_version(pg_store *st, pgconn *c, uint64_t *version, int *missing, int prepare)
{
	version_row row = {0, 0, 0, 0};
	pipe p;
	int rc;
	*version = 0;
	*missing = 0;
	prolly__pg_pipe_init(&p, st, c, "reading the schema version", version_fn, &row);
	prolly__pg_pipe_send_sql(&p, st->version_sql);
	if (prepare)
		prolly__pg_send_session(&p, c);
	rc = prolly__pg_pipe_run(&p);
	*version = row.version;
	st->meta_node_size = row.node_size;
	if (row.epoch)
		atomic_store(&st->open_epoch, prolly__pg_epoch_seen(st, row.epoch, row.xmin));
	if (rc == 0 && prepare)
		c->session = 1;
	if (rc == 0 || !p.failed || p.broken)
		return rc;
	if (p.err_qi == 0) { /* the version itself: no tables is a schema to create (and the
	                      * session's setup queued after it was skipped) */
		if (strcmp(p.sqlstate, "42P01") != 0 && strcmp(p.sqlstate, "3F000") != 0)
			return rc;
		*missing = 1;
		return 0;
	}
	/* The session's setup failed (another client's mark: a pooler switched to session mode hands
	 * out sessions it has not reset): the caller goes the long way on a new connection, which
	 * pgbouncer gives a session it just reset, and sets that one up. */
	return prolly__pg_conn_renew(st, c);
}

int prolly__pg_read_version(pg_store *st, pgconn *c, uint64_t *version, int *missing)
{
	return read_version(st, c, version, missing, 0);
}

int prolly__pg_open_pipeline(pg_store *st, pgconn *c, uint64_t *version, int *missing)
{
	return read_version(st, c, version, missing, 1);
}

int prolly__pg_check_version(pg_store *st, uint64_t version)
{
	uint64_t n = st->meta_node_size;
	if (version > SCHEMA_NODE_SIZE)
		return prolly_set_error(
		    PROLLY_EVERSION,
		    "postgres: schema \"%s\" on %s has prolly schema version %llu; this "
		    "library knows versions up to %d (upgrade prolly)",
		    st->schema, st->target, (unsigned long long)version, SCHEMA_NODE_SIZE);
	if (version < 1)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: schema \"%s\" on %s has a meta table without a valid "
		                        "schema_version row",
		                        st->schema, st->target);
	if (version == SCHEMA_NODE_SIZE &&
	    (n == 0 || n > PROLLY_NODE_SIZE_MAX || n == PROLLY_NODE_SIZE_DEFAULT ||
	     !prolly_node_size_valid((unsigned)n)))
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: schema \"%s\" on %s is at schema version %d but has no "
		                        "valid node_size row in its meta table (%llu)",
		                        st->schema, st->target, SCHEMA_NODE_SIZE, (unsigned long long)n);
	return 0;
}

/*
 * Validates the version-4 constraint over the rows written before it (validate_tmpl), in a
 * transaction of its own. A row whose bytes do not hash to its id is PROLLY_ECORRUPT.
 */
static int validate_on(pg_store *st, pgconn *c)
{
	pipe p;
	int rc;
	prolly__pg_pipe_init(&p, st, c, "checking that every stored node hashes to its id", NULL, NULL);
	prolly__pg_pipe_send_sql(&p, st->validate_sql);
	if ((rc = prolly__pg_pipe_run(&p)) && p.failed && strcmp(p.sqlstate, "23514") == 0)
		rc = prolly_set_error(PROLLY_ECORRUPT,
		                      "postgres: schema \"%s\" on %s holds nodes whose bytes do not hash "
		                      "to their id (find them with SELECT id FROM nodes WHERE id <> "
		                      "sha256(node); they were written before schema version 4 checked it)",
		                      st->schema, st->target);
	return rc;
}

/*
 * Creates the schema if it is missing and migrates an older one (the init DO block), then
 * validates the version-4 constraint (validate_on). With validate (prolly_store_pg_init), also on
 * a current schema (to finish a validation that failed before), and rows that fail it are an
 * error; without, they are left for prolly_store_pg_init to report. *version receives the
 * version in force afterwards. With may_skip, a migration the role has no right to run
 * (SQLSTATE 42501), that a read-only session cannot run (25006: a hot standby, or
 * default_transaction_read_only), or that did not get the table lock within the block's
 * lock_timeout (55P03), is not an error: the whole block rolled back and the schema stays as it
 * was.
 */
int prolly__pg_init_on(pg_store *st, pgconn *c, uint64_t *version, int may_skip, int validate)
{
	int missing = 0, rc;
	pipe p;
	if ((rc = prolly__pg_read_version(st, c, version, &missing)))
		return rc;
	if (!missing && (rc = prolly__pg_check_version(st, *version)))
		return rc;
	if (!missing && *version >= SCHEMA_VERSION) /* 7 is 6 with another node size */
		return validate ? validate_on(st, c) : 0;
	prolly__pg_pipe_init(&p, st, c, missing ? "creating the schema" : "migrating the schema", NULL,
	                     NULL);
	prolly__pg_pipe_send_sql(&p, st->init_sql);
	if ((rc = prolly__pg_pipe_run(&p))) {
		if (may_skip && !missing && p.failed &&
		    (strcmp(p.sqlstate, "42501") == 0 || strcmp(p.sqlstate, "25006") == 0))
			return 0;
		if (p.failed && strcmp(p.sqlstate, "55P03") == 0)
			rc = prolly__pg_lock_timeout(st, c, &p, LOCK_INIT, 0, "nothing was changed");
		if (may_skip && !missing && p.failed && strcmp(p.sqlstate, "55P03") == 0) {
			snprintf(st->migrate_msg, sizeof(st->migrate_msg), "%s", prolly_last_error());
			atomic_store(&st->migrate_gave_up, rc);
			return 0;
		}
		return rc;
	}
	if ((rc = prolly__pg_read_version(st, c, version, &missing)))
		return rc;
	if (missing)
		return prolly_set_error(PROLLY_ESTORE,
		                        "postgres: schema \"%s\" on %s: the tables are "
		                        "still missing after creating them",
		                        st->schema, st->target);
	if ((rc = prolly__pg_check_version(st, *version)))
		return rc;
	/* An open that migrated goes on when old rows fail the check (the constraint is in force
	 * for new rows all the same); prolly_store_pg_init reports them. */
	rc = validate_on(st, c);
	return rc == PROLLY_ECORRUPT && !validate ? 0 : rc;
}

int prolly_store_pg_init(prolly_store *base)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	int rc;
	if (!st || !st->base.kind || strcmp(st->base.kind, "postgres") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_init: not a PostgreSQL store");
	uint64_t version = 0;
	int gave_up = atomic_exchange(&st->migrate_gave_up, 0), missing = 0;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	/* The open just waited lock_timeout for this migration: say so rather than wait again. */
	if (gave_up && (rc = prolly__pg_read_version(st, c, &version, &missing)) == 0 && !missing &&
	    version < SCHEMA_VERSION)
		rc = prolly_set_error(gave_up, "%s", st->migrate_msg);
	if (rc == 0)
		rc = prolly__pg_init_on(st, c, &version, 0, 1);
	if (rc == 0) {
		atomic_store(&st->ready, 1);
		atomic_store(&st->fast, version >= 2);
		rc = prolly__pg_conn_setup(st, c);
	}
	prolly__pg_pool_release(st, c, rc != 0 && (!c->pg || PQstatus(c->pg) != CONNECTION_OK));
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Who holds a lock                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* The rows of the holders' query, formatted as they come. */
typedef struct holders {
	char setting[32]; /* the session's lock_timeout ("0": none, the store's default applied) */
	char text[400];
	size_t len;
	int n;
} holders;

static const char *text_col(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col);
}

static int holders_fn(void *ctx, size_t qi, const PGresult *r)
{
	holders *h = ctx;
	if (qi == 0) {
		if (PQntuples(r) == 1)
			snprintf(h->setting, sizeof(h->setting), "%s", text_col(r, 0, 0));
		return 0;
	}
	for (int i = 0; i < PQntuples(r) && PQnfields(r) == 4; i++, h->n++) {
		if (h->n >= 3 || h->len >= sizeof(h->text) - 1)
			continue;
		int k = snprintf(h->text + h->len, sizeof(h->text) - h->len,
		                 "%spid %s (role %s, application '%s', %s)", h->n ? ", " : "",
		                 text_col(r, i, 0), text_col(r, i, 1), text_col(r, i, 2),
		                 text_col(r, i, 3));
		h->len = k < 0 ? h->len : PROLLY_MIN(sizeof(h->text) - 1, h->len + (size_t)k);
	}
	return 0;
}

static int advancing_fn(void *ctx, size_t qi, const PGresult *r)
{
	int *out = ctx;
	uint64_t v;
	(void)qi;
	for (int i = 0; i < PQntuples(r); i++)
		if (prolly__pg_read_int8(r, i, 0, &v) == 0 && v <= 2 && *out < (int)v)
			*out = (int)v;
	return 0;
}

int prolly__pg_gc_advancing(pg_store *st, pgconn *c)
{
	/* A gc of the schema holds the gc lock, on the session that takes the write lock exclusive
	 * (pg_gc.c); the statement (prolly/pg_sql.h, which the extension runs too) asks whether it
	 * sent a statement lately: its beat (pgconn.beat) or its state_change. */
	static const char tmpl[] = PROLLY_PG_SQL_GC_ADVANCING("#");
	char *sql;
	int how = 0;
	pipe q;
	if (!c->pg || PQstatus(c->pg) != CONNECTION_OK ||
	    !(sql = prolly__pg_subst(tmpl, st->qs, st->meta_literal)))
		return 0;
	prolly__pg_pipe_init(&q, st, c, "finding who holds a lock", advancing_fn, &how);
	prolly__pg_pipe_send_sql(&q, sql);
	if (prolly__pg_pipe_run(&q))
		how = 0;
	free(sql);
	return how;
}

int prolly__pg_lock_timeout(pg_store *st, pgconn *c, const pipe *p, long key1, int shared_waiter,
                            const char *outcome)
{
	const char *lock = key1 == LOCK_GC     ? "the gc lock"
	                   : key1 == LOCK_INIT ? "the schema lock (held while a schema is created or "
	                                         "migrated)"
	                                       : "the write lock";
	char tmpl[700], *sql = NULL, why[sizeof(p->msg)];
	holders h;
	pipe q;
	memset(&h, 0, sizeof(h));
	snprintf(why, sizeof(why), "%s", p->msg);
	/* pg_locks and the role and application_name columns of pg_stat_activity are readable by
	 * every role. A shared waiter is held back by exclusive holders only. */
	snprintf(tmpl, sizeof(tmpl),
	         "SELECT l.pid::text, coalesce(a.usename::text, '?'), "
	         "coalesce(a.application_name, ''), l.mode FROM pg_locks l "
	         "LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
	         "WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid() "
	         "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
	         "AND l.classid = %ld::oid AND l.objid = hashtext(#)::oid AND l.objsubid = 2%s "
	         "ORDER BY l.pid",
	         key1, shared_waiter ? " AND l.mode = 'ExclusiveLock'" : "");
	if (c->pg && PQstatus(c->pg) == CONNECTION_OK &&
	    (sql = prolly__pg_subst(tmpl, st->qs, st->meta_literal))) {
		prolly__pg_pipe_init(&q, st, c, "finding who holds a lock", holders_fn, &h);
		/* The waiting connection may be one whose session is not set up (an init's):
		 * SESSION_PATH, for the rest of this pipeline's implicit transaction. */
		prolly__pg_pipe_send_sql(
		    &q, "SELECT pg_catalog.current_setting('lock_timeout'), " SESSION_PATH);
		prolly__pg_pipe_send_sql(&q, sql);
		if (prolly__pg_pipe_run(&q))
			h.n = -1;
		free(sql);
	} else {
		h.n = -1;
	}
	const char *tv = h.setting[0] && strcmp(h.setting, "0") != 0 ? h.setting : LOCK_WAIT_DEFAULT;
	const char *tw = h.setting[0] && strcmp(h.setting, "0") != 0
	                     ? " (the session's)"
	                     : " (the store's default; set lock_timeout in the connection string to "
	                       "change it)";
	if (h.n <= 0 && key1 == LOCK_INIT) /* a table lock of the migration (its own 5 s bound) */
		return prolly_set_error(PROLLY_ESTORE, "postgres: %s: %s (SQLSTATE 55P03)", p->what, why);
	if (h.n > 0)
		return prolly_set_error(PROLLY_ETIMEOUT,
		                        "postgres: %s: waited lock_timeout %s%s for %s of schema \"%s\" on "
		                        "%s, held by %s%s (an advisory lock, which any role may take: wait "
		                        "for that session or end it); %s",
		                        p->what, tv, tw, lock, st->schema, st->target, h.text,
		                        h.n > 3 ? " and others" : "", outcome);
	return prolly_set_error(PROLLY_ETIMEOUT,
	                        "postgres: %s: waited lock_timeout %s%s for a lock (%s, or the row "
	                        "of a ref another transaction was writing)%s: %s (SQLSTATE 55P03); %s",
	                        p->what, tv, tw, lock,
	                        h.n < 0 ? "" : "; no other session holds the advisory lock now", why,
	                        outcome);
}
