-- prolly--0.1--0.2.sql: version 0.2 of the prolly extension (docs/sql.md). CREATE EXTENSION runs
-- prolly--0.1.sql, then this; ALTER EXTENSION prolly UPDATE runs this alone in a database made
-- with 0.1.

\echo Use "ALTER EXTENSION prolly UPDATE" to load this file. \quit

-- Earlier scripts of 0.1 declared prolly_commit without expected, or without merge (docs/sql.md,
-- "Versions and upgrading"): such a declaration is replaced by the current one. A view or
-- function that depends on the old declaration stops the update (2BP01) until it is dropped.
DROP FUNCTION IF EXISTS @extschema@.prolly_commit(text, bytea[], bytea[], text);
DROP FUNCTION IF EXISTS @extschema@.prolly_commit(text, bytea[], bytea[], text, text);
CREATE OR REPLACE FUNCTION @extschema@.prolly_commit(branch text, keys bytea[], vals bytea[],
                                                     message text DEFAULT NULL,
                                                     expected text DEFAULT NULL,
                                                     merge boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_commit'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_tags()
RETURNS TABLE (name text, commit_id text, tree_id text)
AS 'MODULE_PATHNAME', 'pgx_tags'
LANGUAGE C STABLE PARALLEL RESTRICTED SECURITY INVOKER ROWS 10;

CREATE FUNCTION @extschema@.prolly_history(ref text, key bytea, max_rows int DEFAULT NULL)
RETURNS TABLE (commit_id text, value bytea, committed_at timestamptz, message text)
AS 'MODULE_PATHNAME', 'pgx_history'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED SECURITY INVOKER ROWS 100;

CREATE FUNCTION @extschema@.prolly_delete_branch(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_delete_branch'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_reset(branch text, ref text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_reset'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_tag(name text, ref text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_tag'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_delete_tag(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_delete_tag'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_revert(branch text, commit_ref text, resolve text DEFAULT 'fail',
                                          mainline int DEFAULT NULL, message text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_revert'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

CREATE FUNCTION @extschema@.prolly_cherry_pick(branch text, commit_ref text,
                                               resolve text DEFAULT 'fail',
                                               mainline int DEFAULT NULL,
                                               message text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'pgx_cherry_pick'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;
