-- errors: every bad input gets its SQLSTATE and a message naming what was wrong.
-- regress.err(q) (setup.sql) runs q and shows the SQLSTATE and message of its error (inside a
-- subtransaction, which the guard must survive as well as a plain error), commit ids (which hold
-- the time they were made) replaced by <id>.
SELECT q, regress.err(q) FROM (VALUES
  ($q$SELECT prolly_get('main', NULL)$q$),
  ($q$SELECT prolly_get(NULL, 'k')$q$),
  ($q$SELECT prolly_get('nosuchbranch', 'k')$q$),
  ($q$SELECT prolly_get('main~99999', 'k')$q$),
  ($q$SELECT prolly_get(repeat('0', 64), 'k')$q$),
  ($q$SELECT prolly_get('bad..name', 'k')$q$),
  ($q$SELECT prolly_get('main~x', 'k')$q$),
  ($q$SELECT prolly_get('', 'k')$q$),
  ($q$SELECT prolly_get('main', decode(repeat('61', 2049), 'hex'))$q$),
  ($q$SELECT length(prolly_get('main', decode(repeat('61', 2048), 'hex')))$q$),
  ($q$SELECT * FROM prolly_get_many('main', NULL)$q$),
  ($q$SELECT * FROM prolly_get_many('main', ARRAY['k00001', NULL]::bytea[])$q$),
  ($q$SELECT * FROM prolly_get_many('main', ARRAY[decode(repeat('61', 2049), 'hex')])$q$),
  ($q$SELECT * FROM prolly_get_many('main', '{{k00001},{k00002}}'::bytea[])$q$),
  ($q$SELECT * FROM prolly_scan(NULL)$q$),
  ($q$SELECT * FROM prolly_scan('main', max_rows => -1)$q$),
  ($q$SELECT * FROM prolly_scan('main', prefix => decode(repeat('61', 2049), 'hex'))$q$),
  ($q$SELECT * FROM prolly_scan('nosuchbranch')$q$),
  ($q$SELECT prolly_count('nosuchbranch')$q$),
  ($q$SELECT prolly_count('main', decode(repeat('61', 2049), 'hex'))$q$),
  ($q$SELECT * FROM prolly_diff('main', 'nosuchbranch')$q$),
  ($q$SELECT * FROM prolly_diff(NULL, 'main')$q$),
  ($q$SELECT * FROM prolly_log('nosuchbranch')$q$),
  ($q$SELECT * FROM prolly_log('main', -1)$q$),
  ($q$SELECT prolly_resolve('nosuchbranch')$q$),
  ($q$SELECT prolly_resolve(NULL)$q$),
  -- more than 64 hex digits: no id, and no short id either (it used to resolve to the commit of
  -- its first 64 digits, and a longer one overran the engine's stack)
  ($q$SELECT prolly_resolve(prolly_resolve('main') || '0')$q$),
  ($q$SELECT prolly_resolve(repeat('d', 200))$q$)
) AS t(q);
-- one of them as psql shows it
SELECT prolly_get('nosuchbranch', 'k');
-- a store schema of a version it does not read: ERROR naming both (55000); version 4 (the id
-- column stored as before, the functions without their own search_path) reads as 6 does
BEGIN;
UPDATE meta SET value = 8 WHERE key = 'schema_version';
SELECT prolly_get('main', 'k00001');
ROLLBACK;
BEGIN;
UPDATE meta SET value = 3 WHERE key = 'schema_version';
SELECT prolly_resolve('main');
ROLLBACK;
BEGIN;
UPDATE meta SET value = 4 WHERE key = 'schema_version';
SELECT encode(prolly_get('main', 'k00001'), 'escape');
ROLLBACK;
SELECT prolly_get('main', 'k00001');  -- the next transaction checks again
-- version 7 is version 6 made with another node size than 4096, held in meta's node_size row
-- (docs/sql.md, "Node size"): without that row, or with one holding no size such a store is made
-- with, the store is damaged (XX001 naming the schema: its trees would be built with a size
-- they were not made with); each failed check is made again at the next call, and 1024 reads
BEGIN;
UPDATE meta SET value = 7 WHERE key = 'schema_version';
SELECT prolly_get('main', 'k00001');
ROLLBACK;
CREATE FUNCTION pg_temp.at_node_size(n bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF n IS NULL THEN
    DELETE FROM meta WHERE key = 'node_size';
  ELSE
    INSERT INTO meta VALUES ('node_size', n) ON CONFLICT (key) DO UPDATE SET value = n;
  END IF;
  RETURN regress.err($q$SELECT encode(prolly_get('main', 'k00001'), 'escape')$q$);
END $$;
BEGIN;
UPDATE meta SET value = 7 WHERE key = 'schema_version';
SELECT n, pg_temp.at_node_size(n)
FROM unnest(ARRAY[NULL, 1000, 4096, 512, 16384, 3072, -1, 1024]) WITH ORDINALITY AS u(n, o) ORDER BY o;
ROLLBACK;

-- a node that does not hash to its id: XX001 naming the id (the cache is off so that the
-- node is read again; the check constraint is dropped to let the damage in)
SET prolly.cache_size = 0;
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
UPDATE nodes SET node = node || '\x00'::bytea
WHERE id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'dev'), 'hex');
SELECT prolly_get('dev', 'k00001');
ROLLBACK;
-- the same, its SQLSTATE shown
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
UPDATE nodes SET node = node || '\x00'::bytea
WHERE id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'dev'), 'hex');
SELECT regress.err($q$SELECT prolly_get('dev', 'k00001')$q$);
ROLLBACK;
-- a tree root that is gone: 42704 (the tree named is not in the store)
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
DELETE FROM nodes WHERE id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'dev'), 'hex');
SELECT regress.err($q$SELECT count(*) FROM prolly_scan('dev')$q$);
-- the point get too, for a key the tree has and one it has not (not a NULL: absent from a tree
-- that cannot be read is not known to be absent)
SELECT regress.err($q$SELECT prolly_get('dev', 'k00001')$q$);
SELECT regress.err($q$SELECT prolly_get('dev', 'nosuchkey')$q$);
SELECT regress.err($q$SELECT * FROM prolly_get_many('dev', ARRAY['k00001']::bytea[])$q$);
-- and a diff, on either side (a tree that gc --keep trimmed is not a corrupt one)
SELECT regress.err($q$SELECT count(*) FROM prolly_diff('main', 'dev')$q$);
SELECT regress.err($q$SELECT count(*) FROM prolly_diff('dev', 'main')$q$);
ROLLBACK;
-- the nodes below the roots gone: XX001
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
DELETE FROM nodes WHERE substring(node FROM 1 FOR 4) = 'PRLY'
  AND id NOT IN (SELECT decode(tree_id, 'hex') FROM prolly_branches());
SELECT regress.err($q$SELECT count(*) FROM prolly_scan('big')$q$);
ROLLBACK;
SELECT convert_from(prolly_get('dev', 'k00001'), 'UTF8') AS after_rollback;
RESET prolly.cache_size;

-- a commit is hash-checked the first time the backend reads it, then its tree is kept like a
-- decoded node: damage done to its row afterwards (committed here) goes unseen by this backend ...
SELECT prolly_resolve('dev') AS dev_commit \gset
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
UPDATE nodes SET node = node || '\x00'::bytea WHERE id = decode(:'dev_commit', 'hex');
SELECT convert_from(prolly_get('dev', 'k00001'), 'UTF8') AS commit_kept;
-- ... until the store's gc epoch moves (a gc may have removed what is kept): read again
UPDATE meta SET value = value + 1 WHERE key = 'epoch';
SELECT regress.err($q$SELECT prolly_get('dev', 'k00001')$q$);
UPDATE meta SET value = value - 1 WHERE key = 'epoch';
UPDATE nodes SET node = substring(node FROM 1 FOR length(node) - 1)
WHERE id = decode(:'dev_commit', 'hex');
ALTER TABLE nodes ADD CONSTRAINT nodes_id_is_sha256 CHECK (id = sha256(node));
SELECT convert_from(prolly_get('dev', 'k00001'), 'UTF8') AS repaired;

-- reading nodes through SPI gives the same results as the index reader
SET prolly.node_reader = spi;
SET prolly.cache_size = 0;
SELECT prolly_count('main') AS main, count(*) AS scanned, sum(length(value)) AS bytes FROM prolly_scan('main');
BEGIN;
ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;
UPDATE nodes SET node = node || '\x00'::bytea
WHERE id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'dev'), 'hex');
SELECT prolly_get('dev', 'k00001');
ROLLBACK;
RESET prolly.node_reader;
RESET prolly.cache_size;
SET prolly.node_reader = 'nonsense';

-- a refs row that holds no id, met inside the engine's read of the ref: XX001
BEGIN;
INSERT INTO refs VALUES ('refs/heads/short'::bytea, '\x0102'::bytea);
SELECT regress.err($q$SELECT prolly_resolve('short')$q$);
ROLLBACK;
SELECT count(*) AS branches FROM prolly_branches();

-- the functions use the tables of their own schema: an extension in a schema without a store
DROP EXTENSION prolly;
CREATE SCHEMA nostore;
CREATE EXTENSION prolly SCHEMA nostore;
SELECT regress.err($q$SELECT nostore.prolly_get('main', 'k00001')$q$);
SELECT nostore.prolly_get('main', 'k00001');
DROP EXTENSION prolly;
DROP SCHEMA nostore;
-- ... and in a schema of its own (a name that needs quoting) holding a copy of the store whose
-- main was moved to dev's head: the functions there read that schema's tables, not public's
CREATE SCHEMA "Store 2";
CREATE TABLE "Store 2".nodes (id bytea PRIMARY KEY, node bytea NOT NULL);
CREATE TABLE "Store 2".refs (name bytea PRIMARY KEY, value bytea NOT NULL);
CREATE TABLE "Store 2".meta (key text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO "Store 2".nodes SELECT * FROM public.nodes;
INSERT INTO "Store 2".refs SELECT * FROM public.refs;
INSERT INTO "Store 2".meta SELECT * FROM public.meta;
UPDATE "Store 2".refs SET value = (SELECT value FROM public.refs WHERE name = 'refs/heads/dev'::bytea)
WHERE name = 'refs/heads/main'::bytea;
CREATE EXTENSION prolly SCHEMA "Store 2";
SELECT "Store 2".prolly_resolve('main') = "Store 2".prolly_resolve('dev') AS moved,
       "Store 2".prolly_count('main') AS main_count,
       (SELECT count(*) FROM "Store 2".prolly_diff('main', 'dev')) AS diff;
DROP EXTENSION prolly;
DROP SCHEMA "Store 2" CASCADE;
CREATE EXTENSION prolly SCHEMA public;
SELECT convert_from(prolly_get('main', 'k00001'), 'UTF8') AS back, prolly_count('main') AS main_count;

-- a name or ref too long to repeat: the message quotes its first 64 bytes and says how long it
-- was (a client's 100 kB argument must not come back as a 100 kB message)
SELECT q, length(e) AS message_length, e FROM (
  SELECT q, regress.err(q) AS e FROM (VALUES
    ($q$SELECT prolly_get(repeat('x', 100000), 'k')$q$),
    ($q$SELECT prolly_resolve(repeat('y', 100000) || '~x')$q$),
    ($q$SELECT * FROM prolly_diff('main', repeat('z', 5000))$q$),
    ($q$SELECT prolly_put(repeat('q', 100000), 'k', 'v')$q$),
    ($q$SELECT prolly_branch('x', repeat('w', 100000))$q$),
    ($q$SELECT prolly_merge('main', repeat('v', 100000))$q$),
    ($q$SELECT prolly_merge('main', 'dev', repeat('u', 100000))$q$),
    ($q$SELECT prolly_get(repeat('é', 40), 'k')$q$),
    -- the engine cuts a long name at 40 bytes, inside a character of 3: that byte shows as '?'
    ($q$SELECT prolly_put(repeat('€', 100), 'k', 'v')$q$)
  ) AS t(q)) AS u;
