-- writes: every write function, in the caller's transaction. Commit ids hold the time they
-- were made, so they are compared, never shown.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db

-- prolly_branch: a new branch at a REF's commit
SELECT prolly_branch('w', 'main') = prolly_resolve('main') AS branched,
       prolly_branch('w-old', 'main~1') = prolly_resolve('v1') AS from_old_commit;

-- prolly_put: one commit on the head, the branch moved, main untouched. (A statement reads in
-- the snapshot it began with: what a write function wrote is read by the next statement.)
SELECT prolly_put('w', 'k00001', 'one') AS put \gset
SELECT :'put' = prolly_resolve('w') AS returns_head;
SELECT convert_from(prolly_get('w', 'k00001'), 'UTF8') AS w, convert_from(prolly_get('main', 'k00001'), 'UTF8') AS main,
       prolly_resolve('w~1') = prolly_resolve('main') AS parent_is_main;
SELECT message, cardinality(parents) AS n_parents FROM prolly_log('w', 1);
-- the same value again changes nothing: no commit, the head is returned
SELECT prolly_resolve('w') AS head \gset
SELECT prolly_put('w', 'k00001', 'one') = :'head' AS unchanged, prolly_resolve('w') = :'head' AS not_moved;

-- prolly_delete
SELECT prolly_delete('w', 'k00002') <> :'head' AS deleted;
SELECT prolly_get('w', 'k00002') IS NULL AS gone, prolly_count('w') = prolly_count('main') - 1 AS one_less;
SELECT message FROM prolly_log('w', 1);
SELECT prolly_resolve('w') AS head \gset
SELECT prolly_delete('w', 'absent') = :'head' AS absent_unchanged;

-- prolly_commit: many edits in one commit; a NULL value deletes; the last write of a key wins
SELECT prolly_commit('w', ARRAY['a', 'b', 'a', 'k00003', 'c']::bytea[],
                     ARRAY['1', '2', '3', NULL, NULL]::bytea[], 'batch') AS put \gset
SELECT :'put' = prolly_resolve('w') AS returns_head;
SELECT encode(key, 'escape') AS key, encode(value, 'escape') AS value FROM prolly_scan('w', 'a', 'c');
SELECT prolly_get('w', 'k00003') IS NULL AS k3_deleted, message FROM prolly_log('w', 1);
SELECT prolly_commit('w', ARRAY['bin\000\377', 'e']::bytea[], ARRAY['\x00'::bytea, '']::bytea[]) IS NOT NULL AS ok;
SELECT prolly_get('w', 'bin\000\377'::bytea) AS bin, prolly_get('w', 'e') AS empty_value, message FROM prolly_log('w', 1);
SELECT prolly_resolve('w') AS head \gset
SELECT prolly_commit('w', '{}'::bytea[], '{}'::bytea[]) = :'head' AS empty_arrays_unchanged;
-- prolly_commit with expected: lands only on that head (compare-and-swap); else 40001, nothing written
SELECT prolly_resolve('w') AS head \gset
SELECT prolly_commit('w', ARRAY['cas']::bytea[], ARRAY['1']::bytea[], 'cas', :'head') AS cas1 \gset
SELECT :'cas1' = prolly_resolve('w') AS cas_landed, prolly_resolve('w~1') = :'head' AS on_expected;
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L)', 'w', 'cas', '2', :'head'));
SELECT prolly_resolve('w') = :'cas1' AS not_moved, convert_from(prolly_get('w', 'cas'), 'UTF8') AS cas_value;
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L)', 'w', 'cas', '2', 'abc'));
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L)', 'w', 'cas', '2', repeat('g', 64)));
SELECT prolly_commit('w', ARRAY['cas']::bytea[], ARRAY['1']::bytea[], NULL, :'cas1') = :'cas1' AS unchanged_on_expected;
SELECT prolly_commit('w', ARRAY['cas']::bytea[], ARRAY[NULL]::bytea[], NULL, NULL) <> :'cas1' AS null_expected_commits;
-- with merge: a moved head takes edits of other keys (one commit on the head), and refuses
-- (40001, nothing written) edits of a key written since expected, even to the same value
SELECT prolly_resolve('w') AS base \gset
SELECT prolly_commit('w', ARRAY['m1']::bytea[], ARRAY['1']::bytea[], 'other', NULL) AS moved \gset
SELECT prolly_commit('w', ARRAY['m2']::bytea[], ARRAY['2']::bytea[], 'merged', :'base', true) AS merged \gset
SELECT prolly_resolve('w') = :'merged' AS merged_landed, prolly_resolve('w~1') = :'moved' AS on_moved_head,
       convert_from(prolly_get('w', 'm1'), 'UTF8') AS m1, convert_from(prolly_get('w', 'm2'), 'UTF8') AS m2;
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L, true)', 'w', 'm1', '1', :'base'));
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L, true)', 'w', 'm1', '9', :'base'));
SELECT prolly_resolve('w') = :'merged' AS not_moved, convert_from(prolly_get('w', 'm1'), 'UTF8') AS m1;
-- values and keys at the limits
SELECT prolly_put('w', decode(repeat('61', 2048), 'hex'), decode(repeat('62', 65536), 'hex')) IS NOT NULL AS at_limits;
SELECT length(prolly_get('w', decode(repeat('61', 2048), 'hex'))) AS len;

-- in the caller's transaction: a rollback leaves no ref moved and no node row
SELECT prolly_resolve('w') AS head, (SELECT count(*) FROM nodes) AS nodes_before \gset
BEGIN;
SELECT prolly_put('w', 'rolled', 'back') AS rolled \gset
SELECT :'rolled' <> :'head' AS moved_inside;
SELECT convert_from(prolly_get('w', 'rolled'), 'UTF8') AS seen_inside;
SELECT count(*) > :nodes_before AS nodes_inside FROM nodes;
ROLLBACK;
SELECT prolly_resolve('w') = :'head' AS ref_back, prolly_get('w', 'rolled') IS NULL AS value_gone,
       (SELECT count(*) FROM nodes) = :nodes_before AS no_node_left;
-- the rolled-back commit is gone for this backend too
SELECT regress.err(format('SELECT prolly_get(%L, %L)', :'rolled', 'rolled'));
-- the same tree made again after the rollback (the cache forgot the rolled-back nodes)
SELECT prolly_put('w', 'rolled', 'back') <> :'head' AS made_again;
SELECT count(*) FROM nodes n WHERE n.id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'w'), 'hex');
SELECT convert_from(value, 'UTF8') FROM prolly_scan('w', 'rolled', 'rolled\000');
-- a savepoint rolled back takes its commit with it; several commits in one transaction chain
SELECT prolly_resolve('w') AS head \gset
BEGIN;
SAVEPOINT s;
SELECT prolly_put('w', 'sp', 'undone') IS NOT NULL AS put;
ROLLBACK TO SAVEPOINT s;
SELECT prolly_put('w', 'sp2', 'kept') IS NOT NULL AS put2;
SELECT prolly_put('w', 'sp3', 'kept') IS NOT NULL AS put3;
COMMIT;
SELECT prolly_get('w', 'sp') IS NULL AS undone, convert_from(prolly_get('w', 'sp2'), 'UTF8') AS sp2,
       prolly_resolve('w~2') = :'head' AS two_commits;
-- an error inside a transaction rolls the earlier write back with it
BEGIN;
SELECT prolly_put('w', 'doomed', 'x') IS NOT NULL AS put;
SELECT prolly_put('w', NULL, 'x');
ROLLBACK;
SELECT prolly_get('w', 'doomed') IS NULL AS doomed_gone;
-- savepoints around prolly_commit: ROLLBACK TO takes the commit, the ref's move and its reflog
-- entry with it; the commit id it returned is gone at once, also for this backend (whose cache
-- had read its tree); the next commit, in the same transaction, builds on the head of before
-- the savepoint, and a compare-and-swap expecting the rolled-back commit fails; a savepoint
-- released keeps its commit; an error inside a savepoint leaves the transaction writing
SELECT prolly_branch('svp', 'dev') AS svp0 \gset
BEGIN;
SELECT prolly_put('svp', 'outer', '1') AS svp1 \gset
SAVEPOINT a;
SELECT prolly_commit('svp', ARRAY['in-a', 'outer']::bytea[], ARRAY['x', NULL]::bytea[]) AS sa \gset
SELECT convert_from(prolly_get(:'sa', 'in-a'), 'UTF8') AS seen_in_a, prolly_get('svp', 'outer') IS NULL AS deleted_in_a;
SAVEPOINT b;
SELECT prolly_put('svp', 'in-b', 'y') AS sb \gset
ROLLBACK TO SAVEPOINT a;
SELECT prolly_resolve('svp') = :'svp1' AS ref_back_to_outer,
       convert_from(prolly_get('svp', 'outer'), 'UTF8') AS outer_kept,
       prolly_get('svp', 'in-a') IS NULL AS in_a_gone, prolly_get('svp', 'in-b') IS NULL AS in_b_gone;
SELECT regress.err(format('SELECT prolly_get(%L, %L)', :'sa', 'in-a')) AS read_sa;
SELECT regress.err(format('SELECT prolly_get(%L, %L)', :'sb', 'in-b')) AS read_sb;
SELECT regress.err(format('SELECT prolly_commit(%L, ARRAY[%L]::bytea[], ARRAY[%L]::bytea[], NULL, %L)', 'svp', 'cas', '1', :'sa')) AS expecting_sa;
SELECT prolly_commit('svp', ARRAY['after']::bytea[], ARRAY['z']::bytea[], NULL, :'svp1') AS svp2 \gset
SAVEPOINT c;
SELECT prolly_put('svp', 'in-c', 'kept') AS sc \gset
RELEASE SAVEPOINT c;
SAVEPOINT d;
SELECT prolly_put('svp', NULL, 'x');
ROLLBACK TO SAVEPOINT d;
SELECT prolly_put('svp', 'after-error', 'ok') AS svp3 \gset
COMMIT;
SELECT array_agg(commit_id ORDER BY ord) = ARRAY[:'svp3', :'sc', :'svp2', :'svp1', :'svp0'] AS chain,
       array_agg(parents[1] ORDER BY ord) = ARRAY[:'sc', :'svp2', :'svp1', :'svp0']::text[] || (SELECT parents[1] FROM prolly_log(:'svp0', 1)) AS parents
FROM (SELECT row_number() OVER () AS ord, * FROM prolly_log('svp', 5)) l;
SELECT string_agg(op || convert_from(key, 'UTF8') || '=' || convert_from(new_value, 'UTF8'), ' ' ORDER BY key) AS svp_new
FROM prolly_diff('dev', 'svp');
CREATE TEMP TABLE svp_reflog (at text, ref text, op text, old text, new text, message text);
\copy svp_reflog FROM PROGRAM './regress-cli.sh reflog svp'
SELECT array_agg(new ORDER BY at DESC, new) @> ARRAY[:'svp3', :'sc', :'svp2', :'svp1'] AS reflogged,
       NOT (array_agg(new) && ARRAY[:'sa', :'sb']) AS rolled_back_not_reflogged, count(*) AS entries
FROM svp_reflog;

-- a long commit stopped by statement_timeout leaves nothing, and the next write works
CREATE TEMP TABLE big_edits AS
SELECT array_agg(('t' || g)::bytea) AS k, array_agg(('v' || g)::bytea) AS v FROM generate_series(1, 200000) g;
SELECT prolly_resolve('w') AS head, (SELECT count(*) FROM nodes) AS nodes_before \gset
SET statement_timeout = '50ms';
\set VERBOSITY terse
SELECT prolly_commit('w', k, v) FROM big_edits;
\set VERBOSITY default
RESET statement_timeout;
SELECT prolly_resolve('w') = :'head' AS ref_kept, (SELECT count(*) FROM nodes) = :nodes_before AS no_node_left;
SELECT prolly_put('w', 'after-timeout', 'ok') <> :'head' AS writes_again;

-- a commit whose new nodes pass 16 MiB goes in as several INSERT statements, every one kept
SELECT prolly_count('w') AS n_before, (SELECT sum(octet_length(node)) FROM nodes) AS bytes_before \gset
SELECT prolly_commit('w', k, v) IS NOT NULL AS committed
FROM (SELECT array_agg(('big' || g)::bytea) AS k, array_agg(convert_to(repeat('x', 100) || g, 'UTF8')) AS v
      FROM generate_series(1, 200000) g) e;
SELECT prolly_count('w') - :n_before AS added,
       (SELECT sum(octet_length(node)) FROM nodes) - :bytes_before > 16 * 1024 * 1024 AS over_16_mib,
       convert_from(prolly_get('w', 'big123456'), 'UTF8') = repeat('x', 100) || '123456' AS value_ok,
       (SELECT count(*) FROM prolly_scan('w', 'big', 'bih')) AS scanned;

-- prolly_merge: fast-forward, already merged, three-way, conflicts
SELECT prolly_branch('w2', 'w') IS NOT NULL AS branched;
SELECT prolly_put('w2', 'ff', '1') IS NOT NULL AS put;
SELECT prolly_merge('w', 'w2') = prolly_resolve('w2') AS fast_forward;
SELECT prolly_resolve('w') AS head \gset
SELECT prolly_merge('w', 'w2~1') = :'head' AS already_merged;
SELECT prolly_put('w', 'left', 'l') IS NOT NULL AS l, prolly_put('w2', 'right', 'r') IS NOT NULL AS r;
SELECT prolly_merge('w', 'w2') IS NOT NULL AS merged;
SELECT message, cardinality(parents) AS n_parents, parents[2] = prolly_resolve('w2') AS second_parent
FROM prolly_log('w', 1);
SELECT convert_from(prolly_get('w', 'left'), 'UTF8') AS l, convert_from(prolly_get('w', 'right'), 'UTF8') AS r;
SELECT prolly_put('w', 'x', 'ours') IS NOT NULL AS o, prolly_put('w2', 'x', 'theirs') IS NOT NULL AS t,
       prolly_put('w', 'y\001', 'ours') IS NOT NULL AS o2, prolly_put('w2', 'y\001', 'theirs') IS NOT NULL AS t2;
SELECT prolly_resolve('w') AS head \gset
SELECT regress.err($q$SELECT prolly_merge('w', 'w2')$q$);
SELECT prolly_merge('w', 'w2');
SELECT prolly_resolve('w') = :'head' AS not_moved;
SELECT prolly_merge('w', 'w2', 'ours') IS NOT NULL AS ours;
SELECT convert_from(prolly_get('w', 'x'), 'UTF8') AS x_ours;
SELECT prolly_put('w2', 'x', 'theirs again') IS NOT NULL AS t;
SELECT prolly_merge('w', prolly_resolve('w2'), 'theirs') IS NOT NULL AS theirs_by_commit_id;
SELECT convert_from(prolly_get('w', 'x'), 'UTF8') AS x_theirs;

-- every move is in the reflog, as the CLI shows it (operation, message)
CREATE TEMP TABLE reflog (at text, ref text, op text, old text, new text, message text);
\copy reflog FROM PROGRAM './regress-cli.sh reflog w'
SELECT op, count(*) FROM reflog GROUP BY op ORDER BY op;

-- errors: each with its SQLSTATE
SELECT q, regress.err(q) FROM (VALUES
  ($q$SELECT prolly_put(NULL, 'k', 'v')$q$),
  ($q$SELECT prolly_put('w', NULL, 'v')$q$),
  ($q$SELECT prolly_put('w', 'k', NULL)$q$),
  ($q$SELECT prolly_put('nosuchbranch', 'k', 'v')$q$),
  ($q$SELECT prolly_put('w~1', 'k', 'v')$q$),
  ($q$SELECT prolly_put('bad..name', 'k', 'v')$q$),
  ($q$SELECT prolly_put('w', decode(repeat('61', 2049), 'hex'), 'v')$q$),
  ($q$SELECT prolly_put('w', 'k', decode(repeat('61', 65537), 'hex'))$q$),
  ($q$SELECT prolly_delete('w', NULL)$q$),
  ($q$SELECT prolly_delete('nosuchbranch', 'k')$q$),
  ($q$SELECT prolly_commit('w', ARRAY['a', 'b']::bytea[], ARRAY['1']::bytea[])$q$),
  ($q$SELECT prolly_commit('w', ARRAY['a', NULL]::bytea[], ARRAY['1', '2']::bytea[])$q$),
  ($q$SELECT prolly_commit('w', NULL, ARRAY['1']::bytea[])$q$),
  ($q$SELECT prolly_commit('w', ARRAY['a']::bytea[], NULL)$q$),
  ($q$SELECT prolly_commit('w', '{{a},{b}}'::bytea[], '{{1},{2}}'::bytea[])$q$),
  ($q$SELECT prolly_commit('w', ARRAY['a', decode(repeat('61', 2049), 'hex')], ARRAY['1', '2']::bytea[])$q$),
  ($q$SELECT prolly_commit('w', ARRAY['a']::bytea[], ARRAY[decode(repeat('61', 65537), 'hex')])$q$),
  ($q$SELECT prolly_commit('nosuchbranch', ARRAY['a']::bytea[], ARRAY['1']::bytea[])$q$),
  ($q$SELECT prolly_branch('w', 'main')$q$),
  ($q$SELECT prolly_branch('new', 'nosuchbranch')$q$),
  ($q$SELECT prolly_branch('new', 'main~x')$q$),
  ($q$SELECT prolly_branch('new', NULL)$q$),
  ($q$SELECT prolly_branch(repeat('0', 64), 'main')$q$),
  ($q$SELECT prolly_merge('nosuchbranch', 'main')$q$),
  ($q$SELECT prolly_merge('w', 'nosuchbranch')$q$),
  ($q$SELECT prolly_merge('w', 'main', 'mine')$q$)
) AS t(q);
SELECT prolly_branch('new', 'main') IS NOT NULL AS not_made_by_the_errors, count(*) AS branches FROM prolly_branches();
-- a read-only transaction refuses writes (25006)
BEGIN READ ONLY;
SELECT prolly_put('w', 'k', 'v');
ROLLBACK;

-- unrelated histories: 55000. The CLI's init makes a root commit of its own when main is away.
UPDATE refs SET name = 'refs/heads/main-away' WHERE name = 'refs/heads/main';
\! ./regress-cli.sh init >/dev/null
UPDATE refs SET name = 'refs/heads/lone' WHERE name = 'refs/heads/main';
UPDATE refs SET name = 'refs/heads/main' WHERE name = 'refs/heads/main-away';
SELECT regress.err($q$SELECT prolly_merge('w', 'lone')$q$);
SELECT prolly_count('main') AS main_back;

-- cross: the same edits through the CLI and through SQL give the same tree ids, and each reads
-- what the other wrote
SELECT prolly_branch('via-sql', 'dev') IS NOT NULL AS branched;
\! ./regress-cli.sh branch via-cli dev >/dev/null
\! seq 1 500 | awk '{ printf "put\tx%05d\tvalue %d\n", $1 * 3, $1 }' > /tmp/prolly-regress-edits
\! seq 1 200 | awk '{ printf "del\tk%05d\n", $1 * 11 }' >> /tmp/prolly-regress-edits
\! ./regress-cli.sh apply via-cli /tmp/prolly-regress-edits >/dev/null
SELECT prolly_commit('via-sql', array_agg(('x' || lpad((g * 3)::text, 5, '0'))::bytea ORDER BY g),
                     array_agg(('value ' || g)::bytea ORDER BY g)) IS NOT NULL AS puts
FROM generate_series(1, 500) g;
SELECT prolly_commit('via-sql', array_agg(('k' || lpad((g * 11)::text, 5, '0'))::bytea),
                     array_agg(NULL::bytea)) IS NOT NULL AS dels
FROM generate_series(1, 200) g;
SELECT a.tree_id = b.tree_id AS same_tree, a.commit_id <> b.commit_id AS different_commits
FROM prolly_branches() a, prolly_branches() b WHERE a.name = 'via-sql' AND b.name = 'via-cli';
-- one commit through the CLI, one through SQL, the same single edit: the same tree again
SELECT prolly_put('via-sql', 'same', 'edit') IS NOT NULL AS put;
\! ./regress-cli.sh put via-cli same edit >/dev/null
SELECT a.tree_id = b.tree_id AS same_tree_again
FROM prolly_branches() a, prolly_branches() b WHERE a.name = 'via-sql' AND b.name = 'via-cli';
-- a commit of more edits than one batch of the engine takes (65,536 edits or 16 MiB of keys and
-- values: write.c), in no order, a key given twice (the last wins), deletes, new keys before and
-- among the old ones: the tree the CLI's single edit of the same lines makes
CREATE TEMP TABLE many (ord int, op text, key text, val text);
INSERT INTO many
SELECT row_number() OVER (ORDER BY md5(g::text)), op, key, val FROM (
  SELECT g, 'put', 'z' || lpad(g::text, 7, '0'), repeat('y', 300) || g FROM generate_series(1, 60000) g
  UNION ALL
  SELECT g, CASE WHEN g % 10 = 0 THEN 'del' ELSE 'put' END, 'z' || lpad(g::text, 7, '0'),
         CASE WHEN g % 10 = 0 THEN NULL ELSE 'w' || g END FROM generate_series(100001, 190000) g
  UNION ALL
  SELECT g, 'put', 'a' || g, 'new' || g FROM generate_series(1, 1000) g
  UNION ALL
  SELECT g, 'put', 'z0150000x' || g, 'among' FROM generate_series(1, 500) g) e(g, op, key, val);
INSERT INTO many VALUES (0, 'put', 'z0000005', 'first'), (200000, 'put', 'z0000005', 'last'),
                        (200001, 'del', 'z0000007', NULL);
SELECT op || E'\t' || key || coalesce(E'\t' || val, '') FROM many ORDER BY ord
\g (format=unaligned tuples_only=on) /tmp/prolly-regress-many
SELECT prolly_branch('many-sql', 'big') IS NOT NULL AS branched;
\! ./regress-cli.sh branch many-cli big >/dev/null && ./regress-cli.sh apply many-cli /tmp/prolly-regress-many >/dev/null
SELECT prolly_commit('many-sql', array_agg(convert_to(key, 'UTF8') ORDER BY ord),
                     array_agg(convert_to(val, 'UTF8') ORDER BY ord)) IS NOT NULL AS committed
FROM many;
SELECT a.tree_id = b.tree_id AS same_tree_many, prolly_count('many-sql') AS records,
       convert_from(prolly_get('many-sql', 'z0000005'), 'UTF8') AS last_wins,
       prolly_get('many-sql', 'z0000007') IS NULL AS deleted
FROM prolly_branches() a, prolly_branches() b WHERE a.name = 'many-sql' AND b.name = 'many-cli';
\! rm -f /tmp/prolly-regress-many
-- a CLI commit message holding a byte that is not UTF-8 (0xff): that byte reads as \xff, the
-- characters around it (a tab, an e-acute) as they are
\! ./regress-cli.sh put via-cli msg 1 -m "$(printf 'caf\303\251\tbad \377 byte')" >/dev/null
SELECT replace(message, E'\t', '<tab>') AS message,
       message = E'caf\u00e9\tbad \\xff byte' AS only_the_bad_byte
FROM prolly_log('via-cli', 1);
-- the CLI reads what SQL wrote ...
CREATE TEMP TABLE cli_get (v text);
\copy cli_get FROM PROGRAM './regress-cli.sh get via-sql x00300'
\copy cli_get FROM PROGRAM './regress-cli.sh get w x'
SELECT * FROM cli_get;
CREATE TEMP TABLE cli_log (line text);
\copy cli_log FROM PROGRAM './regress-cli.sh log-ids w'
SELECT array_agg(line) = (SELECT array_agg(commit_id) FROM prolly_log('w')) AS same_log FROM cli_log;
\! ./regress-cli.sh verify w >/dev/null && ./regress-cli.sh verify via-sql >/dev/null && echo verify ok
-- ... and the CLI writes on what SQL wrote, which SQL reads
\! ./regress-cli.sh put w from-cli yes >/dev/null
SELECT convert_from(prolly_get('w', 'from-cli'), 'UTF8') AS from_cli, convert_from(prolly_get('w', 'x'), 'UTF8') AS x;
\! rm -f /tmp/prolly-regress-edits

-- privileges: the writer grants of docs/postgres.md write; a reader, or a writer without UPDATE
-- on refs, gets permission denied (42501) and writes nothing
CREATE ROLE regress_prolly_writer;
CREATE ROLE regress_prolly_reader;
CREATE ROLE regress_prolly_noupdate;
GRANT USAGE ON SCHEMA public TO regress_prolly_writer, regress_prolly_reader, regress_prolly_noupdate;
GRANT SELECT, INSERT ON nodes TO regress_prolly_writer, regress_prolly_noupdate;
GRANT SELECT, INSERT, UPDATE, DELETE ON refs TO regress_prolly_writer;
GRANT SELECT, INSERT, DELETE ON refs TO regress_prolly_noupdate;
GRANT SELECT ON meta TO regress_prolly_writer, regress_prolly_noupdate;
GRANT SELECT ON nodes, refs, meta TO regress_prolly_reader;
SET ROLE regress_prolly_writer;
SELECT prolly_branch('by-writer', 'w') IS NOT NULL AS branched;
SELECT prolly_put('by-writer', 'who', 'writer') IS NOT NULL AS put;
SELECT prolly_merge('w', 'by-writer') IS NOT NULL AS merged;
SELECT convert_from(prolly_get('w', 'who'), 'UTF8') AS who;
RESET ROLE;
-- the write functions call neither prolly_write_begin nor prolly_ref_cas (the C client's writes
-- do): a writer without EXECUTE on them writes
REVOKE EXECUTE ON FUNCTION prolly_write_begin(bigint),
  prolly_ref_cas(bytea, int, bytea, boolean, bytea) FROM PUBLIC;
SET ROLE regress_prolly_writer;
SELECT prolly_put('by-writer', 'who2', 'writer') IS NOT NULL AS put_without_them;
SELECT prolly_branch('by-writer-2', 'by-writer') IS NOT NULL AS branched_without_them;
SELECT prolly_delete_branch('by-writer-2') IS NOT NULL AS deleted_without_them;
RESET ROLE;
GRANT EXECUTE ON FUNCTION prolly_write_begin(bigint),
  prolly_ref_cas(bytea, int, bytea, boolean, bytea) TO PUBLIC;
SET ROLE regress_prolly_reader;
SELECT prolly_put('w', 'who', 'reader');
SELECT prolly_branch('by-reader', 'main');
SELECT convert_from(prolly_get('w', 'who'), 'UTF8') AS still_reads;
RESET ROLE;
SET ROLE regress_prolly_noupdate;
SELECT prolly_put('w', 'who', 'noupdate');
RESET ROLE;
SELECT convert_from(prolly_get('w', 'who'), 'UTF8') AS who, count(*) FILTER (WHERE name LIKE 'by-%') AS by_branches
FROM prolly_branches();
REVOKE ALL ON nodes, refs, meta FROM regress_prolly_writer, regress_prolly_reader, regress_prolly_noupdate;
REVOKE ALL ON SCHEMA public FROM regress_prolly_writer, regress_prolly_reader, regress_prolly_noupdate;
DROP ROLE regress_prolly_writer;
DROP ROLE regress_prolly_reader;
DROP ROLE regress_prolly_noupdate;

-- a parent dated the last int64 microsecond (a far-future clock): commits on it keep that time,
-- never one wrapped to the first (-infinity, older than the parent)
\setenv PROLLY_COMMIT_TIME 9223372036854775807
\! ./regress-cli.sh branch late main >/dev/null && ./regress-cli.sh put late far 1 >/dev/null
\setenv PROLLY_COMMIT_TIME
SELECT prolly_branch('late2', 'late') IS NOT NULL AS branched;
SELECT prolly_put('late', 'far', '2') IS NOT NULL AS put, prolly_put('late2', 'far2', '3') IS NOT NULL AS put2;
SELECT prolly_merge('late', 'late2') IS NOT NULL AS merged;
SELECT message, committed_at = '294247-01-10 04:00:54.775807+00' AS last_microsecond
FROM prolly_log('late', 4) ORDER BY message;
\! ./regress-cli.sh branch -d late --force >/dev/null && ./regress-cli.sh branch -d late2 --force >/dev/null
