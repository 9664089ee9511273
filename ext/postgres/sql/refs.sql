-- refs: the functions of version 0.2 (prolly--0.1--0.2.sql): prolly_tags, prolly_history,
-- prolly_tag, prolly_delete_tag, prolly_delete_branch, prolly_reset, prolly_revert,
-- prolly_cherry_pick. Commit ids hold the time they were made, so they are compared, never shown.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db
SELECT extversion FROM pg_extension WHERE extname = 'prolly';

-- prolly_tags: name order, each with its commit and the commit's tree, as the CLI lists them
SELECT name, commit_id = prolly_resolve('main~1') AS at_main_1,
       tree_id = (SELECT tree_id FROM prolly_log('main~1', 1)) AS tree
FROM prolly_tags();
CREATE TEMP TABLE cli_tags (name text, commit_id text);
\copy cli_tags FROM PROGRAM './regress-cli.sh tags'
SELECT count(*) AS tags, count(*) FILTER (WHERE c.commit_id = t.commit_id) AS same
FROM cli_tags c JOIN prolly_tags() t USING (name);

-- prolly_history: the commits that changed a key, newest first, with its value after each (NULL:
-- deleted); max_rows; a key never set has no row
SELECT convert_from(value, 'UTF8') AS value, message, committed_at <= now() AS past
FROM prolly_history('main', 'k00002');
SELECT convert_from(value, 'UTF8') AS value, message FROM prolly_history('main', 'k00002', 1);
SELECT count(*) FROM prolly_history('main', 'k00002', 0);
SELECT count(*) FROM prolly_history('main', 'never-set');
SELECT value IS NULL AS deleted, message FROM prolly_history('dev', 'k01003');
SELECT encode(value, 'hex') AS value FROM prolly_history('v1', convert_to(E'bin', 'UTF8') || '\x00ff'::bytea);
CREATE TEMP TABLE cli_history (commit_id text, value text);
\copy cli_history FROM PROGRAM './regress-cli.sh history dev k00007'
SELECT array_agg(commit_id) = (SELECT array_agg(commit_id) FROM prolly_history('dev', 'k00007')) AS same_history,
       count(*) AS changes
FROM cli_history;

-- prolly_tag, prolly_delete_tag: a new tag at a REF's commit; gone again, returning what it named
-- (a read function of the same statement does not see it: its snapshot is the statement's)
SELECT prolly_tag('rel-1', 'dev') = prolly_resolve('dev') AS tagged;
SELECT prolly_resolve('rel-1') = prolly_resolve('dev') AS resolves;
SELECT name FROM prolly_tags() ORDER BY name;
\! ./regress-cli.sh tags | cut -f1
BEGIN;
SELECT prolly_tag('rolled-back', 'main') IS NOT NULL AS tagged;
ROLLBACK;
SELECT count(*) AS rolled_back FROM prolly_tags() WHERE name = 'rolled-back';
SELECT prolly_delete_tag('rel-1') = prolly_resolve('dev') AS deleted;
SELECT name FROM prolly_tags();

-- prolly_delete_branch: the branch's ref removed (its commits stay for gc to judge), returning its
-- head; in a transaction that rolls back it stays
SELECT prolly_branch('doomed', 'dev~1') = prolly_resolve('dev~1') AS branched;
BEGIN;
SELECT prolly_delete_branch('doomed') = prolly_resolve('dev~1') AS deleted;
SELECT count(*) FROM prolly_branches() WHERE name = 'doomed';
ROLLBACK;
SELECT count(*) AS kept FROM prolly_branches() WHERE name = 'doomed';
SELECT prolly_delete_branch('doomed') = prolly_resolve('dev~1') AS deleted;
\! ./regress-cli.sh branches | cut -f1 | grep -c doomed
SELECT prolly_branch('doomed', 'main') = prolly_resolve('main') AS made_again;
SELECT prolly_delete_branch('doomed') IS NOT NULL AS deleted_again;

-- prolly_reset: a branch moved to any commit (back, or to another line), returning it; the
-- reflog says reset, and the CLI reads the branch there
SELECT prolly_branch('moving', 'dev') IS NOT NULL AS branched;
SELECT prolly_reset('moving', 'main~1') = prolly_resolve('main~1') AS reset_back;
SELECT prolly_resolve('moving') = prolly_resolve('v1') AS at_v1;
SELECT prolly_reset('moving', 'dev') = prolly_resolve('dev') AS reset_across;
\! ./regress-cli.sh reflog moving | cut -f3 | head -n 3
CREATE TEMP TABLE cli_root (id text);
\copy cli_root FROM PROGRAM './regress-cli.sh root moving'
SELECT id = (SELECT tree_id FROM prolly_branches() WHERE name = 'dev') AS cli_reads_it FROM cli_root;
BEGIN;
SELECT prolly_reset('moving', 'main') IS NOT NULL AS reset;
ROLLBACK;
SELECT prolly_resolve('moving') = prolly_resolve('dev') AS rolled_back;
SELECT prolly_delete_branch('moving') IS NOT NULL AS deleted;

-- prolly_revert, prolly_cherry_pick: one commit's change undone or applied on a branch's head as a
-- three-way merge, one commit with the head as parent; the same tree as the CLI's for the same
-- change; nothing to do, no commit
SELECT prolly_branch('picks', 'main') IS NOT NULL AS branched;
SELECT prolly_put('picks', 'p1', 'one') AS c1 \gset
SELECT prolly_put('picks', 'p2', 'two') AS c2 \gset
SELECT prolly_branch('picks-cli', 'picks') IS NOT NULL AS branched;
SELECT prolly_revert('picks', :'c1') AS r1 \gset
SELECT :'r1' = prolly_resolve('picks') AS reverted;
SELECT prolly_get('picks', 'p1') IS NULL AS p1_gone, convert_from(prolly_get('picks', 'p2'), 'UTF8') AS p2,
       (SELECT message = 'revert ' || :'c1' || ': ' || (SELECT message FROM prolly_log(:'c1', 1)) FROM prolly_log('picks', 1)) AS message,
       (SELECT parents = ARRAY[:'c2'] FROM prolly_log('picks', 1)) AS parent;
\setenv C1 :c1
\! ./regress-cli.sh revert picks-cli "$C1" >/dev/null
SELECT (SELECT tree_id FROM prolly_branches() WHERE name = 'picks')
     = (SELECT tree_id FROM prolly_branches() WHERE name = 'picks-cli') AS same_tree_as_cli,
       (SELECT message FROM prolly_log('picks', 1)) = (SELECT message FROM prolly_log('picks-cli', 1)) AS same_message_as_cli;
SELECT prolly_revert('picks', :'c1') = prolly_resolve('picks') AS nothing_to_undo,
       (SELECT count(*) FROM prolly_log('picks')) = (SELECT count(*) FROM prolly_log('picks~1')) + 1 AS no_commit;
-- picked again: the message names the commit picked, after its own message
SELECT prolly_cherry_pick('picks', :'c1') IS NOT NULL AS picked_again;
SELECT message = (SELECT message FROM prolly_log(:'c1', 1)) || ' (cherry picked from ' || :'c1' || ')' AS message
FROM prolly_log('picks', 1);
SELECT prolly_branch('picked', 'main') IS NOT NULL AS branched;
SELECT prolly_cherry_pick('picked', :'c1', message => 'p1 again') IS NOT NULL AS picked;
SELECT convert_from(prolly_get('picked', 'p1'), 'UTF8') AS p1, prolly_get('picked', 'p2') IS NULL AS no_p2,
       (SELECT message FROM prolly_log('picked', 1)) AS message;
\! ./regress-cli.sh reflog picked | cut -f3 | head -n 1
-- a key the head changed too: PY001 listing it, nothing written; resolve settles it
SELECT prolly_put('picked', 'p2', 'mine') IS NOT NULL AS put;
SELECT regress.err(format('SELECT prolly_cherry_pick(%L, %L)', 'picked', :'c2')) AS conflict;
SELECT convert_from(prolly_get('picked', 'p2'), 'UTF8') AS p2_kept;
SELECT prolly_cherry_pick('picked', :'c2', resolve => 'theirs') IS NOT NULL AS picked;
SELECT convert_from(prolly_get('picked', 'p2'), 'UTF8') AS p2;
-- a merge commit: mainline says which parent's side the change is measured from
SELECT prolly_merge('picks', 'dev') IS NOT NULL AS merged;
SELECT regress.err($q$SELECT prolly_revert('picked', 'picks')$q$) AS no_mainline;
SELECT prolly_revert('picks', 'picks', mainline => 1) IS NOT NULL AS reverted;
SELECT count(*) AS dev_edits_undone FROM prolly_diff('picks~1', 'picks');  -- dev's 170 edits
SELECT prolly_delete_branch(b) IS NOT NULL AS deleted FROM unnest(ARRAY['picks', 'picks-cli', 'picked']) b;

-- errors: a documented SQLSTATE and a message naming what was wrong; nothing written
SELECT q, regress.err(q) FROM (VALUES
  ($q$SELECT * FROM prolly_history('main', NULL)$q$),
  ($q$SELECT * FROM prolly_history(NULL, 'k')$q$),
  ($q$SELECT * FROM prolly_history('nosuchbranch', 'k')$q$),
  ($q$SELECT * FROM prolly_history('main', 'k', -1)$q$),
  ($q$SELECT * FROM prolly_history('main', decode(repeat('61', 2049), 'hex'))$q$),
  ($q$SELECT prolly_tag('v1', 'main')$q$),
  ($q$SELECT prolly_tag('bad name', 'main')$q$),
  ($q$SELECT prolly_tag(repeat('t', 201), 'main')$q$),
  ($q$SELECT prolly_tag(repeat('0', 64), 'main')$q$),
  ($q$SELECT prolly_tag('new', 'nosuchbranch')$q$),
  ($q$SELECT prolly_tag('new', 'main~x')$q$),
  ($q$SELECT prolly_tag(NULL, 'main')$q$),
  ($q$SELECT prolly_tag('new', NULL)$q$),
  ($q$SELECT prolly_delete_tag('nosuchtag')$q$),
  ($q$SELECT prolly_delete_tag('bad name')$q$),
  ($q$SELECT prolly_delete_tag(NULL)$q$),
  ($q$SELECT prolly_delete_branch('nosuchbranch')$q$),
  ($q$SELECT prolly_delete_branch('bad name')$q$),
  ($q$SELECT prolly_delete_branch(NULL)$q$),
  ($q$SELECT prolly_reset('nosuchbranch', 'main')$q$),
  ($q$SELECT prolly_reset('dev', 'nosuchbranch')$q$),
  ($q$SELECT prolly_reset('dev~1', 'main')$q$),
  ($q$SELECT prolly_reset('dev', NULL)$q$),
  ($q$SELECT prolly_reset(NULL, 'main')$q$),
  ($q$SELECT prolly_reset('dev', (SELECT tree_id FROM prolly_branches() WHERE name = 'main'))$q$),
  ($q$SELECT prolly_revert('dev', NULL)$q$),
  ($q$SELECT prolly_revert(NULL, 'main')$q$),
  ($q$SELECT prolly_revert('nosuchbranch', 'main')$q$),
  ($q$SELECT prolly_revert('dev', 'nosuchbranch')$q$),
  ($q$SELECT prolly_cherry_pick('dev', 'main', 'mine')$q$),
  ($q$SELECT prolly_cherry_pick('dev', 'main', mainline => -1)$q$),
  ($q$SELECT prolly_cherry_pick('dev', 'main', mainline => 2)$q$)
) AS t(q);
SELECT (SELECT string_agg(name, ',') FROM prolly_tags()) AS tags,
       (SELECT count(*) FROM prolly_branches()) AS branches;
BEGIN READ ONLY;
SELECT prolly_tag('ro', 'main');
ROLLBACK;

-- privileges: a reader reads tags and history but creates or deletes nothing (42501); the writer
-- grants of docs/postgres.md do both
CREATE ROLE regress_prolly_writer;
CREATE ROLE regress_prolly_reader;
GRANT USAGE ON SCHEMA public TO regress_prolly_writer, regress_prolly_reader;
GRANT SELECT, INSERT ON nodes TO regress_prolly_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON refs TO regress_prolly_writer;
GRANT SELECT ON meta TO regress_prolly_writer;
GRANT SELECT ON nodes, refs, meta TO regress_prolly_reader;
SET ROLE regress_prolly_reader;
SELECT (SELECT count(*) FROM prolly_tags()) AS tags,
       (SELECT count(*) FROM prolly_history('main', 'k00002')) AS changes;
SELECT prolly_tag('by-reader', 'main');
SELECT prolly_delete_tag('v1');
SELECT prolly_delete_branch('dev');
SELECT prolly_reset('dev', 'main');
SELECT prolly_revert('dev', 'dev');
RESET ROLE;
SET ROLE regress_prolly_writer;
SELECT prolly_tag('made-by-writer', 'main') IS NOT NULL AS tagged;
SELECT prolly_delete_tag('made-by-writer') IS NOT NULL AS untagged;
SELECT prolly_branch('made-by-writer', 'main') IS NOT NULL AS branched;
SELECT prolly_reset('made-by-writer', 'dev') IS NOT NULL AS reset;
SELECT prolly_revert('made-by-writer', 'made-by-writer') IS NOT NULL AS reverted;
SELECT prolly_delete_branch('made-by-writer') IS NOT NULL AS deleted;
RESET ROLE;
SELECT (SELECT string_agg(name, ',') FROM prolly_tags()) AS tags,
       (SELECT count(*) FROM prolly_branches() WHERE name = 'dev') AS dev;
REVOKE ALL ON nodes, refs, meta FROM regress_prolly_writer, regress_prolly_reader;
REVOKE ALL ON SCHEMA public FROM regress_prolly_writer, regress_prolly_reader;
DROP ROLE regress_prolly_writer;
DROP ROLE regress_prolly_reader;
