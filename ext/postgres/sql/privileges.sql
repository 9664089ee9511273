-- privileges: the functions run with the caller's rights (SECURITY INVOKER).
CREATE ROLE regress_prolly_reader;
CREATE ROLE regress_prolly_nobody;
CREATE ROLE regress_prolly_nometa;
GRANT USAGE ON SCHEMA public TO regress_prolly_reader, regress_prolly_nobody, regress_prolly_nometa;
GRANT SELECT ON nodes, refs, meta TO regress_prolly_reader;
GRANT SELECT ON nodes, refs TO regress_prolly_nometa;

SET ROLE regress_prolly_reader;
SELECT convert_from(prolly_get('main', 'k00001'), 'UTF8') AS v, prolly_count('dev') AS n,
       (SELECT count(*) FROM prolly_branches()) AS branches,
       (SELECT count(*) FROM prolly_diff('main', 'dev')) AS changes;
SELECT prolly_merge_base('main', 'dev') = prolly_resolve('v1') AS base,
       (SELECT count(*) FROM prolly_merge_conflicts('main', 'dev')) AS conflicts,
       (SELECT count(*) > 0 FROM prolly_reflog('main')) AS reflog,
       (SELECT records FROM prolly_stats('dev')) AS records,
       (SELECT status FROM prolly_verify('dev')) AS verified;
SELECT prolly_delete_range('dev', 'k', 'l');             -- 42501: a reader does not write
SELECT prolly_restore_branch('gone');                    -- 42501
RESET ROLE;

SET ROLE regress_prolly_nobody;
SELECT prolly_get('main', 'k00001');                     -- 42501 on nodes
SELECT * FROM prolly_branches();
RESET ROLE;

SET ROLE regress_prolly_nometa;
SELECT prolly_get('main', 'k00001');                     -- 42501 on meta (the version check)
RESET ROLE;

-- row-level security would be bypassed by the index reader: refused
ALTER TABLE refs ENABLE ROW LEVEL SECURITY;
SET ROLE regress_prolly_reader;
SELECT prolly_resolve('main');                           -- 0A000
RESET ROLE;
ALTER TABLE refs DISABLE ROW LEVEL SECURITY;
-- so is meta's (the version check reads its heap directly)
ALTER TABLE meta ENABLE ROW LEVEL SECURITY;
SET ROLE regress_prolly_reader;
SELECT prolly_get('main', 'k00001');                     -- 0A000
RESET ROLE;
ALTER TABLE meta DISABLE ROW LEVEL SECURITY;

REVOKE ALL ON nodes, refs, meta FROM regress_prolly_reader, regress_prolly_nometa;
REVOKE ALL ON SCHEMA public FROM regress_prolly_reader, regress_prolly_nobody, regress_prolly_nometa;
DROP ROLE regress_prolly_reader;
DROP ROLE regress_prolly_nobody;
DROP ROLE regress_prolly_nometa;

-- search_path hijacking: a role that can CREATE in a schema on the caller's search_path plants
-- functions named as those the extension's SQL calls, with an exact signature (which beats
-- pg_catalog's polymorphic one even though pg_catalog is searched first). None may run.
CREATE ROLE regress_prolly_mallory;
CREATE SCHEMA regress_prolly_evil AUTHORIZATION regress_prolly_mallory;
SET ROLE regress_prolly_mallory;
CREATE FUNCTION regress_prolly_evil.unnest(a bytea[]) RETURNS SETOF bytea
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: unnest(bytea[]) ran as %', current_user; END $$;
CREATE FUNCTION regress_prolly_evil.cardinality(a bytea[]) RETURNS int
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: cardinality(bytea[]) ran as %', current_user; END $$;
CREATE FUNCTION regress_prolly_evil.byteaeq(bytea, bytea) RETURNS boolean
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: = on bytea ran as %', current_user; END $$;
CREATE OPERATOR regress_prolly_evil.= (leftarg = bytea, rightarg = bytea,
                                       function = regress_prolly_evil.byteaeq);
RESET ROLE;
-- and, given CREATE on the store's own schema, an overload of one of its functions: called with
-- an untyped NULL, prolly_write_begin(text) would win over the real prolly_write_begin(bigint)
GRANT CREATE ON SCHEMA public TO regress_prolly_mallory;
SET ROLE regress_prolly_mallory;
CREATE FUNCTION public.prolly_write_begin(expected text) RETURNS bigint
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: prolly_write_begin(text) ran as %', current_user; END $$;
RESET ROLE;
SET search_path = regress_prolly_evil, public;
SET prolly.cache_size = 0;
SET prolly.node_reader = spi;                            -- reads nodes through unnest
SELECT convert_from(prolly_get('main', 'k00001'), 'UTF8') AS v, prolly_count('dev') AS n;
SET prolly.node_reader = index;
SELECT count(*) FROM prolly_branches();
BEGIN;                                                   -- the writes' statements too
SELECT length(prolly_put('main', 'hijack', 'x')) AS put,
       length(prolly_commit('main', ARRAY['h1', 'h2']::bytea[], ARRAY['1', NULL]::bytea[])) AS c,
       length(prolly_branch('regress_hijack', 'dev')) AS b,
       length(prolly_merge('main', 'regress_hijack', resolve => 'theirs')) AS m,
       length(prolly_delete_range('main', 'k01', 'k02')) AS r;
ROLLBACK;
-- a path that names pg_catalog after the planted schema: then even an exact match there (the
-- operator = on bytea, in the statements and in the schema's functions they call) loses
SET search_path = regress_prolly_evil, pg_catalog, public;
SET prolly.node_reader = spi;
SELECT convert_from(prolly_get('main', 'k00001'), 'UTF8') AS v, prolly_count('dev') AS n;
SHOW search_path;                                        -- the caller's again after the call
BEGIN;
SELECT length(prolly_put('main', 'hijack', 'x')) AS put,
       length(prolly_branch('regress_hijack', 'dev')) AS b,
       length(prolly_merge('main', 'regress_hijack', resolve => 'theirs')) AS m;
ROLLBACK;
RESET prolly.node_reader;
RESET prolly.cache_size;
RESET search_path;
DROP SCHEMA regress_prolly_evil CASCADE;
DROP FUNCTION public.prolly_write_begin(text);
REVOKE CREATE ON SCHEMA public FROM regress_prolly_mallory;
DROP ROLE regress_prolly_mallory;
