-- setup: a store written by the prolly CLI in schema public, and the extension beside it.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db
\! ./regress-cli.sh fixture
CREATE EXTENSION prolly SCHEMA public;
-- every function, with its arguments and rights
SELECT p.proname, p.pronargs AS args, p.pronargdefaults AS defaults, p.proretset AS set,
       p.prosecdef AS definer, p.provolatile AS volatility, p.proisstrict AS strict
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'prolly'
ORDER BY 1;
SELECT name FROM prolly_branches() ORDER BY name;
-- the tests' helper: runs q and returns its SQLSTATE and message ('no error' if none), commit and
-- tree ids shown as <id>
CREATE SCHEMA regress;
CREATE FUNCTION regress.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9a-f]{64}', '<id>', 'g');
END $$;
