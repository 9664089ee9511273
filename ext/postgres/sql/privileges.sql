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
