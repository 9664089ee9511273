-- prolly--0.2--0.3.sql: version 0.3 of the prolly extension (docs/sql.md). CREATE EXTENSION runs
-- prolly--0.1.sql, prolly--0.1--0.2.sql, then this; ALTER EXTENSION prolly UPDATE runs what a
-- database made with an earlier version lacks. Adds the reads of ref moves, merge bases and
-- merge conflicts, the shape and the integrity of trees, and the deletion of a key range.

\echo Use "ALTER EXTENSION prolly UPDATE" to load this file. \quit

CREATE FUNCTION @extschema@.prolly_reflog(ref text DEFAULT NULL, max_rows int DEFAULT NULL)
RETURNS TABLE (moved_at timestamptz, ref_name text, operation text, old_commit text,
               new_commit text, message text)
AS 'MODULE_PATHNAME', 'pgx_reflog'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 100;

CREATE FUNCTION @extschema@.prolly_merge_base(a text, b text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_merge_base'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_merge_conflicts(into_ref text, from_ref text)
RETURNS TABLE (key bytea, base_value bytea, ours_value bytea, theirs_value bytea)
AS 'MODULE_PATHNAME', 'pgx_merge_conflicts'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 10;

CREATE FUNCTION @extschema@.prolly_delete_range(branch text, from_key bytea, to_key bytea,
                                                message text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_delete_range'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_stats(ref text)
RETURNS TABLE (records bigint, height int, nodes bigint, leaves bigint, bytes bigint,
               node_size int)
AS 'MODULE_PATHNAME', 'pgx_stats'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 1;

CREATE FUNCTION @extschema@.prolly_verify(ref text DEFAULT NULL, history boolean DEFAULT false)
RETURNS TABLE (ref_name text, tree_id text, status text, nodes bigint, bytes bigint)
AS 'MODULE_PATHNAME', 'pgx_verify'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 10;

CREATE FUNCTION @extschema@.prolly_restore_branch(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_restore_branch'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;
