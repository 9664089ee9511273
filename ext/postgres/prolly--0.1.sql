-- prolly--0.1.sql: version 0.1 of the prolly extension, its read and write functions
-- (docs/sql.md). CREATE EXTENSION runs it, then the update scripts (prolly--0.1--0.2.sql, ...).
-- Create it in the schema where `prolly init` made the store's tables:
--   CREATE EXTENSION prolly SCHEMA s;
-- Every function reads the tables nodes, refs and meta of the schema it lives in, with the
-- caller's rights (SECURITY INVOKER).
-- Released: a change goes into a new update script, never here. A database keeps the
-- declarations its CREATE EXTENSION or ALTER EXTENSION made, and a new prolly.so serves those of
-- every earlier script (docs/sql.md, "Versions and upgrading"): an argument added to a function
-- needs a default and a read guarded by PG_NARGS() (write.c, arg_given).

\echo Use "CREATE EXTENSION prolly SCHEMA <the store's schema>" to load this file. \quit

CREATE FUNCTION @extschema@.prolly_get(ref text, key bytea)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pgx_get'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_get_many(ref text, keys bytea[])
RETURNS TABLE (ord int, key bytea, value bytea)
AS 'MODULE_PATHNAME', 'pgx_get_many'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_scan(ref text, from_key bytea DEFAULT NULL,
                                        to_key bytea DEFAULT NULL, prefix bytea DEFAULT NULL,
                                        max_rows bigint DEFAULT NULL, reverse boolean DEFAULT false)
RETURNS TABLE (key bytea, value bytea)
AS 'MODULE_PATHNAME', 'pgx_scan'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 1000;

CREATE FUNCTION @extschema@.prolly_count(ref text, from_key bytea DEFAULT NULL,
                                         to_key bytea DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgx_count'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_diff(from_ref text, to_ref text, from_key bytea DEFAULT NULL,
                                        to_key bytea DEFAULT NULL)
RETURNS TABLE (op text, key bytea, old_value bytea, new_value bytea)
AS 'MODULE_PATHNAME', 'pgx_diff'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 1000;

CREATE FUNCTION @extschema@.prolly_log(ref text, max_rows int DEFAULT NULL)
RETURNS TABLE (commit_id text, parents text[], tree_id text, committed_at timestamptz,
               message text)
AS 'MODULE_PATHNAME', 'pgx_log'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 100;

CREATE FUNCTION @extschema@.prolly_branches()
RETURNS TABLE (name text, commit_id text, tree_id text)
AS 'MODULE_PATHNAME', 'pgx_branches'
LANGUAGE C STABLE PARALLEL RESTRICTED SECURITY INVOKER ROWS 10;

CREATE FUNCTION @extschema@.prolly_resolve(ref text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_resolve'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER;

-- Writes, in the caller's transaction (they commit or roll back with it); they need the writer
-- grants of docs/postgres.md and are VOLATILE (a read-only transaction refuses them).

CREATE FUNCTION @extschema@.prolly_commit(branch text, keys bytea[], vals bytea[],
                                          message text DEFAULT NULL, expected text DEFAULT NULL,
                                          merge boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_commit'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_put(branch text, key bytea, value bytea)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_put'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_delete(branch text, key bytea)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_delete'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_branch(name text, from_ref text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_branch'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_merge(into_branch text, from_ref text,
                                         resolve text DEFAULT 'fail')
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_merge'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;
