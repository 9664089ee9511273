-- inspect: prolly_stats and prolly_verify (version 0.3), the reads that walk whole trees; the
-- CLI's stats and verify give the same figures.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db

-- prolly_stats: the shape of a REF's tree, one row, as `prolly stats`
SELECT * FROM prolly_stats('main');
SELECT records = prolly_count('dev') AS records FROM prolly_stats('dev');
CREATE TEMP TABLE cli_stats (name text, value bigint);
\copy cli_stats FROM PROGRAM './regress-cli.sh stats dev'
SELECT bool_and(c.value = CASE c.name WHEN 'records' THEN s.records WHEN 'height' THEN s.height
                          WHEN 'nodes' THEN s.nodes WHEN 'leaves' THEN s.leaves
                          WHEN 'bytes' THEN s.bytes WHEN 'node_size' THEN s.node_size END) AS same_as_cli,
       count(*) AS figures
FROM cli_stats c, prolly_stats('dev') s;

-- prolly_verify: a row per tree read and checked, each node once; with history every commit's
-- tree (an older commit's tree met before: no row); NULL: every branch and tag, each under its
-- full name (a ref whose tree was met before: a row of 0 nodes)
SELECT ref_name, status, nodes = (SELECT nodes FROM prolly_stats('dev')) AS all_nodes,
       bytes = (SELECT bytes FROM prolly_stats('dev')) AS all_bytes
FROM prolly_verify('dev');
SELECT ref_name, status, count(*) AS trees FROM prolly_verify('dev', history => true) GROUP BY 1, 2;
CREATE TEMP TABLE cli_verify (status text, tree_id text, nodes text, bytes text);
\copy cli_verify FROM PROGRAM './regress-cli.sh verify dev --history'
SELECT array_agg(status || tree_id || nodes || bytes) =
       (SELECT array_agg(status || tree_id || nodes || ' nodes' || bytes || ' bytes') FROM prolly_verify('dev', true))
       AS same_as_cli
FROM cli_verify;
SELECT count(DISTINCT ref_name) = (SELECT count(*) FROM prolly_branches()) + (SELECT count(*) FROM prolly_tags())
       AS every_ref,
       count(*) FILTER (WHERE ref_name = 'refs/tags/v1') AS v1_rows,
       sum(nodes) <= (SELECT count(*) FROM nodes WHERE substring(node FROM 1 FOR 4) = 'PRLY') AS each_node_once,
       count(*) FILTER (WHERE nodes = 0) > 0 AS trees_met_before
FROM prolly_verify();
SELECT count(*) AS with_history FROM prolly_verify(NULL, true) WHERE status = 'ok';

-- damage that the cache would hide is found: every node below the roots altered after a scan
-- read them all (the check constraint dropped to let the damage in)
SELECT count(*) AS scanned FROM prolly_scan('dev');
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
UPDATE nodes SET node = node || '\x00'::bytea WHERE substring(node FROM 1 FOR 4) = 'PRLY'
  AND id NOT IN (SELECT decode(tree_id, 'hex') FROM prolly_branches());
SELECT count(*) AS still_served_from_cache FROM prolly_scan('dev');
SELECT regexp_replace(regress.err($q$SELECT * FROM prolly_verify('dev')$q$), '[0-9a-f]{64}', '<id>', 'g') AS err;
ROLLBACK;
-- a ref's tree missing is damage too (XX001); an older commit's is "pruned" (what gc --keep
-- leaves by design), the walk going on
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
DELETE FROM nodes WHERE id = decode((SELECT tree_id FROM prolly_tags() WHERE name = 'v1'), 'hex');
SELECT regress.err($q$SELECT * FROM prolly_verify('v1')$q$);
SELECT status, count(*) FROM prolly_verify('dev', true) GROUP BY 1 ORDER BY 1;
ROLLBACK;
-- errors: NULL and unknown refs
SELECT regress.err($q$SELECT * FROM prolly_stats(NULL)$q$);
SELECT regress.err($q$SELECT * FROM prolly_stats('no-such-branch')$q$);
SELECT regress.err($q$SELECT * FROM prolly_verify('no-such-branch')$q$);
