-- lineage: the reads of version 0.3 (prolly--0.2--0.3.sql): prolly_reflog, prolly_merge_base,
-- prolly_merge_conflicts; prolly_restore_branch and REF@{...}, which the reflog serves. Commit
-- ids hold the time they were made, so they are compared, never shown.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db
SELECT extversion FROM pg_extension WHERE extname = 'prolly';

-- prolly_merge_base: dev was branched from main~1 (the tag v1); either order; an ancestor is its
-- own merge base; the CLI's answer is the same; unrelated histories have none (NULL)
SELECT prolly_merge_base('main', 'dev') = prolly_resolve('v1') AS main_dev,
       prolly_merge_base('dev', 'main') = prolly_resolve('v1') AS dev_main,
       prolly_merge_base('main~1', 'main') = prolly_resolve('main~1') AS ancestor,
       prolly_merge_base('main', 'main') = prolly_resolve('main') AS itself;
CREATE TEMP TABLE cli_base (id text);
\copy cli_base FROM PROGRAM './regress-cli.sh merge-base main dev'
SELECT id = prolly_merge_base('main', 'dev') AS same_as_cli FROM cli_base;
SELECT prolly_merge_base('main', 'lone') IS NULL AS unrelated;
SELECT regress.err($q$SELECT prolly_merge_base(NULL, 'main')$q$);
SELECT regress.err($q$SELECT prolly_merge_base('main', 'no-such-branch')$q$);
SELECT regress.err($q$SELECT prolly_merge_base('main', 'main~99')$q$);

-- prolly_merge_conflicts: what prolly_merge would report, as rows in key order (NULL: the side has
-- no such key); convergent changes, one-sided ones and deletes of an unchanged key are not
-- conflicts. It writes nothing.
SELECT prolly_branch('c-ours', 'main') IS NOT NULL AS ours,
       prolly_branch('c-theirs', 'main') IS NOT NULL AS theirs;
SELECT prolly_commit('c-ours',
         ARRAY['k00010', 'k00011', 'k00012', 'k00013', 'only-ours', 'both-new']::bytea[],
         ARRAY['ours10', NULL, 'ours12', 'same13', 'o', 'new-ours']::bytea[]) IS NOT NULL AS ours;
SELECT prolly_commit('c-theirs',
         ARRAY['k00010', 'k00011', 'k00012', 'k00013', 'only-theirs', 'both-new', 'k00014']::bytea[],
         ARRAY['theirs10', 'theirs11', NULL, 'same13', 't', 'new-theirs', NULL]::bytea[]) IS NOT NULL AS theirs;
SELECT count(*) AS nodes FROM nodes \gset
SELECT convert_from(key, 'UTF8') AS key, convert_from(base_value, 'UTF8') AS base,
       convert_from(ours_value, 'UTF8') AS ours, convert_from(theirs_value, 'UTF8') AS theirs
FROM prolly_merge_conflicts('c-ours', 'c-theirs');
SELECT count(*) = :nodes AS wrote_nothing FROM nodes;
-- the other way round: ours and theirs swap
SELECT convert_from(key, 'UTF8') AS key, convert_from(ours_value, 'UTF8') AS ours
FROM prolly_merge_conflicts('c-theirs', 'c-ours');
-- the CLI's merge reports the same keys (and commits nothing, exit 3)
\! ./regress-cli.sh merge c-ours c-theirs 2>/dev/null | cut -f1,2; true
-- prolly_merge fails on them (PY001, the same count), and once merged there is nothing left
SELECT regress.err($q$SELECT prolly_merge('c-ours', 'c-theirs')$q$);
SELECT prolly_merge('c-ours', 'c-theirs', 'theirs') IS NOT NULL AS merged;
SELECT count(*) AS left_after_merge FROM prolly_merge_conflicts('c-ours', 'c-theirs');
-- no merge to make: the same commit, a fast-forward, an ancestor
SELECT (SELECT count(*) FROM prolly_merge_conflicts('main', 'main')) AS same,
       (SELECT count(*) FROM prolly_merge_conflicts('main~1', 'main')) AS fast_forward,
       (SELECT count(*) FROM prolly_merge_conflicts('main', 'main~1')) AS merged_already,
       (SELECT count(*) FROM prolly_merge_conflicts('main', 'dev')) AS no_conflict;
-- in a read-only transaction, by REF of any kind
BEGIN READ ONLY;
SELECT count(*) AS conflicts FROM prolly_merge_conflicts('c-ours~1', 'c-theirs');
ROLLBACK;
-- errors: NULL, unknown refs, unrelated histories
SELECT regress.err($q$SELECT * FROM prolly_merge_conflicts(NULL, 'main')$q$);
SELECT regress.err($q$SELECT * FROM prolly_merge_conflicts('main', NULL)$q$);
SELECT regress.err($q$SELECT * FROM prolly_merge_conflicts('main', 'no-such-branch')$q$);
SELECT regress.err($q$SELECT * FROM prolly_merge_conflicts('main', 'lone')$q$);
SELECT prolly_delete_branch('c-ours') IS NOT NULL AS deleted,
       prolly_delete_branch('c-theirs') IS NOT NULL AS deleted;

-- prolly_reflog: the moves of a ref, newest first, each entry's old commit the new one of the
-- entry after it; the same entries as the CLI's reflog; a deleted branch keeps its reflog
SELECT prolly_branch('lin', 'main') IS NOT NULL AS branched;
SELECT prolly_put('lin', 'a', '1') IS NOT NULL AS put;
SELECT prolly_delete('lin', 'a') IS NOT NULL AS deleted;
SELECT prolly_reset('lin', 'main~1') IS NOT NULL AS reset;
SELECT ref_name, operation, old_commit IS NULL AS created, message, moved_at <= now() AS past
FROM prolly_reflog('lin');
SELECT bool_and(r.old_commit = n.new_commit) AS chained
FROM (SELECT *, row_number() OVER () AS i FROM prolly_reflog('lin')) r
JOIN (SELECT *, row_number() OVER () AS i FROM prolly_reflog('lin')) n ON n.i = r.i + 1;
SELECT new_commit = prolly_resolve('lin') AS newest_is_head FROM prolly_reflog('lin', 1);
CREATE TEMP TABLE cli_reflog (moved_at text, ref_name text, operation text, old_commit text,
                              new_commit text, message text);
\copy cli_reflog FROM PROGRAM './regress-cli.sh reflog lin'
SELECT array_agg(operation || old_commit || new_commit) =
       (SELECT array_agg(operation || coalesce(old_commit, '-') || new_commit) FROM prolly_reflog('lin'))
       AS same_as_cli
FROM cli_reflog;
-- a full ref name, a tag's, max_rows, every ref (NULL), a deleted branch, a branch never made
SELECT count(*) AS by_full_name FROM prolly_reflog('refs/heads/lin');
SELECT ref_name, operation FROM prolly_reflog('refs/tags/v1');
SELECT count(*) AS one FROM prolly_reflog('lin', 1);
SELECT count(*) AS none FROM prolly_reflog('lin', 0);
SELECT count(DISTINCT ref_name) > 5 AS many_refs, count(*) FILTER (WHERE ref_name = 'refs/heads/lin') AS lin
FROM prolly_reflog();
SELECT prolly_resolve('lin') AS lin_head \gset
SELECT prolly_delete_branch('lin') IS NOT NULL AS deleted;
SELECT operation, new_commit IS NULL AS gone FROM prolly_reflog('lin', 1);
SELECT count(*) AS never FROM prolly_reflog('never-made');
-- prolly_restore_branch: a deleted branch made again at the head its deletion removed, from the
-- reflog (reflogged restore); in a transaction that rolls back it stays deleted
BEGIN;
SELECT prolly_restore_branch('lin') = :'lin_head' AS restored;
ROLLBACK;
SELECT count(*) AS still_deleted FROM prolly_branches() WHERE name = 'lin';
SELECT prolly_restore_branch('lin') = :'lin_head' AS restored;
SELECT prolly_resolve('lin') = :'lin_head' AS at_its_head, operation FROM prolly_reflog('lin', 1);
\! ./regress-cli.sh reflog lin | cut -f3 | head -n 2
SELECT regress.err($q$SELECT prolly_restore_branch('lin')$q$);
SELECT regress.err($q$SELECT prolly_restore_branch('never-made')$q$);
SELECT regress.err($q$SELECT prolly_restore_branch(NULL)$q$);
SELECT prolly_delete_branch('lin') IS NOT NULL AS deleted_again;
-- errors: a bad name, a negative max_rows
SELECT regress.err($q$SELECT * FROM prolly_reflog('main~1')$q$);
SELECT regress.err($q$SELECT * FROM prolly_reflog('lin', -1)$q$);

-- REF@{N} and REF@{TIME}: what a branch named N moves ago, or at a time, from its reflog, also
-- for a branch deleted since; a time as to_char writes it in UTC, or a timestamptz as PostgreSQL
-- prints it with DateStyle ISO; before the branch existed, or while deleted, 42704; 22023 for
-- what is not a count or a time
SELECT prolly_resolve('lin@{1}') = :'lin_head' AS before_its_deletion;
SELECT new_commit AS first_head, to_char(moved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS made_at
FROM (SELECT *, row_number() OVER () AS i, count(*) OVER () AS n FROM prolly_reflog('lin')) r
WHERE i = n \gset
SELECT prolly_resolve('lin@{' || :'made_at' || '}') = :'first_head' AS at_its_creation;
SET DateStyle = ISO;
SELECT prolly_resolve('lin@{' || (:'made_at'::timestamptz + interval '0 s') || '}') = :'first_head' AS at_a_timestamptz;
RESET DateStyle;
SELECT prolly_get('lin@{' || :'made_at' || '}', 'k00001') = prolly_get(:'first_head', 'k00001') AS reads_there;
SELECT regress.err($q$SELECT prolly_resolve('lin@{0}')$q$);
SELECT regress.err($q$SELECT prolly_resolve('lin@{1999-12-31 23:59}')$q$);
SELECT regress.err($q$SELECT prolly_resolve('lin@{yesterday}')$q$);
SELECT regress.err($q$SELECT prolly_resolve('lin@{1')$q$);
