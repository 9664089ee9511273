-- read: every read function, and what the CLI wrote read back identically through SQL.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db

-- prolly_get: a value, an absent key (NULL), a binary key, an old commit
SELECT prolly_get('main', 'k00001') AS k1, prolly_get('main', 'absent') AS absent,
       prolly_get('main', '\x00ff'::bytea) IS NULL AS bin_prefix_absent,
       prolly_get('main', 'bin\000\377'::bytea) AS bin,
       prolly_get('main', 'k00002') AS now, prolly_get('main~1', 'k00002') AS before;
SELECT convert_from(prolly_get('dev', 'k00007'), 'UTF8') AS changed,
       prolly_get('dev', 'k01003') AS deleted, convert_from(prolly_get('dev', 'n00001'), 'UTF8') AS added;
-- a full commit id is a ref too
SELECT prolly_get(prolly_resolve('main~1'), 'k00002') = 'v2'::bytea AS by_commit_id;
SELECT prolly_resolve('main~1') = (SELECT parents[1] FROM prolly_log('main', 1)) AS resolve_is_parent;
SELECT length(prolly_resolve('dev')) AS id_length;
-- a tag, a unique short commit id (one range scan of the nodes index: the store's find_ids),
-- ^N steps
SELECT prolly_resolve('v1') = prolly_resolve('main~1') AS tag,
       prolly_resolve(left(prolly_resolve('dev'), 12)) = prolly_resolve('dev') AS short_id,
       prolly_resolve('main^') = prolly_resolve('main~1') AS caret,
       prolly_resolve('main^0') = prolly_resolve('main') AS caret0,
       convert_from(prolly_get('v1', 'k00002'), 'UTF8') AS at_tag;

-- prolly_get_many: request order, duplicates kept, missing keys NULL
SELECT ord, convert_from(key, 'UTF8') AS key, convert_from(value, 'UTF8') AS value
FROM prolly_get_many('dev', ARRAY['k00014', 'nope', 'k00001', 'k00014', 'n00020', 'k01003']::bytea[]);
-- a key asked for several times in a row, present or missing: a row for each, in request order
SELECT ord, convert_from(key, 'UTF8') AS key, convert_from(value, 'UTF8') AS value
FROM prolly_get_many('dev', ARRAY['k00002', 'k00002', 'k00002', 'nope', 'nope', 'k00001']::bytea[]);
SELECT count(*) FROM prolly_get_many('main', '{}'::bytea[]);

-- prolly_scan: bounds (from inclusive, to exclusive), prefix, max_rows, reverse
SELECT convert_from(key, 'UTF8') AS key, convert_from(value, 'UTF8') AS value
FROM prolly_scan('main', 'k00010', 'k00014');
SELECT convert_from(key, 'UTF8') AS key FROM prolly_scan('main', prefix => 'k0299');
SELECT encode(key, 'escape') AS key FROM prolly_scan('main', max_rows => 3);
SELECT encode(key, 'escape') AS key FROM prolly_scan('main', to_key => 'k00004', reverse => true);
SELECT convert_from(key, 'UTF8') AS key FROM prolly_scan('dev', from_key => 'k02999', max_rows => 4);
SELECT count(*) FROM prolly_scan('main', max_rows => 0);
SELECT count(*) FROM prolly_scan('main', 'k2', 'k1');
SELECT count(*), (array_agg(key))[1] = 'bin\000\377'::bytea AS bin_first FROM prolly_scan('main');
-- in the select list, one row per call
SELECT (prolly_scan('main', 'k00100', max_rows => 2)).key;
-- in a select list rows come one per call, and a LIMIT stops the scan (in FROM, the executor
-- takes them all at once)
SELECT encode((s).key, 'escape') AS key FROM (SELECT prolly_scan('big') AS s LIMIT 2) x;

-- scans across many leaves of big (z0000001..z0200000, value = the number), every node read from
-- the table: each row once and in order, forward and reverse, with bounds, max_rows (no upper
-- bound: the cursor reads no batch ahead of the rows asked for) and a prefix
SET prolly.cache_size = 0;
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((12344 + r)::text, 7, '0')
                                AND convert_from(value, 'UTF8') = (12344 + r)::text) AS in_order
FROM prolly_scan('big', 'z0012345', 'z0150000') WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((150000 - r)::text, 7, '0')) AS in_order
FROM prolly_scan('big', 'z0012345', 'z0150000', reverse => true) WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((99999 + r)::text, 7, '0')) AS in_order
FROM prolly_scan('big', 'z0100000', max_rows => 25000) WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((100000 - r)::text, 7, '0')) AS in_order
FROM prolly_scan('big', to_key => 'z0100000', max_rows => 25000, reverse => true) WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((119999 + r)::text, 7, '0')) AS in_order
FROM prolly_scan('big', prefix => 'z012') WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, bool_and(convert_from(key, 'UTF8') = 'z' || lpad((130000 - r)::text, 7, '0')) AS in_order
FROM prolly_scan('big', 'z0125000', prefix => 'z012', reverse => true) WITH ORDINALITY AS s(key, value, r);
SELECT count(*) AS n, min(convert_from((s).key, 'UTF8')) AS first, max(convert_from((s).key, 'UTF8')) AS last
FROM (SELECT prolly_scan('big', 'z0050000') AS s LIMIT 20000) x;
RESET prolly.cache_size;

-- prolly_count: from the per-child counts
SELECT prolly_count('main') AS main, prolly_count('dev') AS dev, prolly_count('big') AS big,
       prolly_count('main', 'k00010', 'k00020') AS ten, prolly_count('main', 'k1') AS none_after,
       prolly_count('main', to_key => 'k00011') AS to_k11, prolly_count('main', 'k2', 'k1') AS reversed;
-- an inverted range whose bounds fall between different records is 0 too, not negative
SELECT prolly_count('main', 'k00020', 'k00010') AS inverted, prolly_count('big', 'k02000', 'k00001') AS inverted_big,
       prolly_count('main', 'k00020', 'k00020') AS empty;
SELECT prolly_count('main', 'k00100', 'k02000') = (SELECT count(*) FROM prolly_scan('main', 'k00100', 'k02000')) AS count_matches_scan;

-- prolly_diff: op, key order, bounds
SELECT op, count(*) FROM prolly_diff('main', 'dev') GROUP BY op ORDER BY op;
SELECT op, convert_from(key, 'UTF8') AS key, convert_from(old_value, 'UTF8') AS old,
       convert_from(new_value, 'UTF8') AS new
FROM prolly_diff('main', 'dev', 'k01000', 'k01010');
SELECT op, convert_from(key, 'UTF8') AS key FROM prolly_diff('main~1', 'main');
SELECT count(*) FROM prolly_diff('dev', 'dev');

-- prolly_log: newest first, parents, max_rows
SELECT message, cardinality(parents) AS n_parents, committed_at <= now() AS past
FROM prolly_log('dev');
SELECT message FROM prolly_log('main', 2);
SELECT count(*) FROM prolly_log('main', 0);
SELECT bool_and(tree_id ~ '^[0-9a-f]{64}$' AND commit_id ~ '^[0-9a-f]{64}$') AS hex_ids FROM prolly_log('big');

-- prolly_branches: name order, each head resolves and its tree is the log's
SELECT b.name, b.commit_id = prolly_resolve(b.name) AS head,
       b.tree_id = (SELECT tree_id FROM prolly_log(b.name, 1)) AS tree
FROM prolly_branches() b ORDER BY b.name;

-- the same trees give the same ids: big was built on main, so main's subtrees are shared
SELECT (SELECT tree_id FROM prolly_branches() WHERE name = 'main')
     = (SELECT tree_id FROM prolly_log('big~1', 1)) AS big_parent_is_main;

-- cross: what the CLI prints, SQL reads identically
CREATE TEMP TABLE cli_branches (name text, commit_id text, tree_id text);
\copy cli_branches FROM PROGRAM './regress-cli.sh branches'
SELECT count(*) AS branches, count(*) FILTER (WHERE (c.commit_id, c.tree_id) = (b.commit_id, b.tree_id)) AS same
FROM cli_branches c JOIN prolly_branches() b USING (name);

CREATE TEMP TABLE cli_scan (key text, value text);
\copy cli_scan FROM PROGRAM './regress-cli.sh scan dev --from k --to l'
SELECT (SELECT count(*) FROM cli_scan) AS cli_rows,
       (SELECT count(*) FROM (SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8') FROM prolly_scan('dev', 'k', 'l')
                              EXCEPT SELECT key, value FROM cli_scan) x) AS sql_only,
       (SELECT count(*) FROM (SELECT key, value FROM cli_scan
                              EXCEPT SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8') FROM prolly_scan('dev', 'k', 'l')) x) AS cli_only;

CREATE TEMP TABLE cli_diff (op text, key text, old_value text, new_value text);
\copy cli_diff FROM PROGRAM './regress-cli.sh diff-rows main dev'
SELECT (SELECT count(*) FROM cli_diff) AS cli_rows,
       (SELECT count(*) FROM (SELECT op, convert_from(key, 'UTF8'), convert_from(old_value, 'UTF8'), convert_from(new_value, 'UTF8')
                              FROM prolly_diff('main', 'dev')
                              EXCEPT SELECT * FROM cli_diff) x) AS sql_only,
       (SELECT count(*) FROM (SELECT * FROM cli_diff
                              EXCEPT SELECT op, convert_from(key, 'UTF8'), convert_from(old_value, 'UTF8'), convert_from(new_value, 'UTF8')
                              FROM prolly_diff('main', 'dev')) x) AS cli_only;

CREATE TEMP TABLE cli_log (line text);
\copy cli_log FROM PROGRAM './regress-cli.sh log-ids dev'
SELECT array_agg(line) = (SELECT array_agg(commit_id) FROM prolly_log('dev')) AS same_log FROM cli_log;

CREATE TEMP TABLE cli_stats (k text, v text);
\copy cli_stats FROM PROGRAM './regress-cli.sh stats big'
SELECT v::bigint = prolly_count('big') AS same_count FROM cli_stats WHERE k = 'records';

-- commits dated by hand or by another implementation (any int64 of microseconds): one before
-- timestamptz's first day is -infinity, never a time wrapped into the year 294247 nor an error
-- that hides the whole log; one before 1970 is an earlier date
SET timezone = 'UTC';
CREATE TEMP TABLE odd_time AS
SELECT v.branch, v.t, 'PRLC'::bytea || '\x01'::bytea || substring(n.node FROM 6 FOR 32)
       || '\x00000000'::bytea || v.t || '\x00000000'::bytea AS node
FROM (VALUES ('odd-min', '\x0000000000000080'::bytea), ('odd-before', '\xff7f577cc2d912fd'),
             ('odd-first', '\x0080577cc2d912fd'), ('odd-1969', '\xffffffffffffffff')) v(branch, t),
     nodes n
WHERE n.id = (SELECT value FROM refs WHERE name = convert_to('refs/heads/main', 'UTF8'));
INSERT INTO nodes SELECT sha256(node), node FROM odd_time;
INSERT INTO refs SELECT convert_to('refs/heads/' || branch, 'UTF8'), sha256(node) FROM odd_time;
SELECT o.branch, l.committed_at FROM odd_time o, prolly_log(o.branch) l ORDER BY l.committed_at, o.branch;
DELETE FROM refs WHERE name IN (SELECT convert_to('refs/heads/' || branch, 'UTF8') FROM odd_time);
DELETE FROM nodes WHERE id IN (SELECT sha256(node) FROM odd_time);
RESET timezone;
