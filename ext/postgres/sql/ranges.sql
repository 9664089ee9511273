-- ranges: prolly_delete_range (version 0.3), every key in [from_key, to_key) deleted in one
-- commit; the tree is the CLI's del-range's.
SELECT current_database() AS db \gset
\setenv PROLLY_TEST_DB :db

SELECT prolly_branch('r', 'main') IS NOT NULL AS branched;
\! ./regress-cli.sh branch r-cli main >/dev/null
SELECT prolly_count('r', 'k00100', 'k00200') AS before, prolly_count('r') AS total;
SELECT prolly_delete_range('r', 'k00100', 'k00200') AS c \gset
SELECT :'c' = prolly_resolve('r') AS returns_head,
       prolly_count('r', 'k00100', 'k00200') AS inside, prolly_count('r') AS total,
       convert_from(prolly_get('r', 'k00099'), 'UTF8') AS below,
       convert_from(prolly_get('r', 'k00200'), 'UTF8') AS at_to;
SELECT message, cardinality(parents) AS parents FROM prolly_log('r', 1);
SELECT operation FROM prolly_reflog('r', 1);
\! ./regress-cli.sh del-range r-cli k00100 k00200 >/dev/null
SELECT (SELECT tree_id FROM prolly_branches() WHERE name = 'r') =
       (SELECT tree_id FROM prolly_branches() WHERE name = 'r-cli') AS same_tree_as_cli;
-- open ends: from the first key (NULL, or the empty key), through the last (NULL)
SELECT prolly_delete_range('r', NULL, 'k00010') IS NOT NULL AS lower_open;
SELECT prolly_count('r', NULL, 'k00010') AS left_below, prolly_count('r') AS total;
SELECT prolly_delete_range('r', 'k02900', NULL, 'the tail') IS NOT NULL AS upper_open;
SELECT prolly_count('r', 'k02900') AS left_above, prolly_count('r') AS total;
SELECT message FROM prolly_log('r', 1);
\! ./regress-cli.sh del-range r-cli '' k00010 >/dev/null
\! ./regress-cli.sh del-range r-cli k02900 '\xff' >/dev/null
SELECT (SELECT tree_id FROM prolly_branches() WHERE name = 'r') =
       (SELECT tree_id FROM prolly_branches() WHERE name = 'r-cli') AS same_tree_as_cli;
-- nothing in the range: no commit, the head returned
SELECT prolly_resolve('r') AS head \gset
SELECT prolly_delete_range('r', 'k00150', 'k00160') = :'head' AS no_commit,
       prolly_delete_range('r', 'k00150', 'k00150') = :'head' AS empty_range;
-- rolled back with its transaction
BEGIN;
SELECT prolly_delete_range('r', '', NULL) IS NOT NULL AS emptied;
SELECT prolly_count('r') AS inside_the_transaction;
ROLLBACK;
SELECT prolly_count('r') AS after_rollback, prolly_resolve('r') = :'head' AS same_head;
-- the whole branch, said so
SELECT prolly_delete_range('r', '', NULL) IS NOT NULL AS emptied;
SELECT prolly_count('r') AS total, prolly_count('r~1') AS before;
-- a large range is dropped by subtrees: 200,000 records, 150,000 of them deleted
SELECT prolly_branch('r-big', 'big') IS NOT NULL AS branched;
SELECT prolly_delete_range('r-big', 'z0000001', 'z0150001') IS NOT NULL AS deleted;
SELECT prolly_count('r-big', 'z') AS z_left;
SELECT convert_from(key, 'UTF8') AS first_z FROM prolly_scan('r-big', 'z', max_rows => 1);
-- errors: both bounds NULL, bounds out of order, a bound too long, NULL or bad or unknown branch,
-- a read-only transaction
SELECT regress.err($q$SELECT prolly_delete_range('r', NULL, NULL)$q$);
SELECT regress.err($q$SELECT prolly_delete_range('r', 'b', 'a')$q$);
SELECT regress.err($q$SELECT prolly_delete_range('r', 'a', repeat('x', 3000)::bytea)$q$);
SELECT regress.err($q$SELECT prolly_delete_range(NULL, 'a', 'b')$q$);
SELECT regress.err($q$SELECT prolly_delete_range('main~1', 'a', 'b')$q$);
SELECT regress.err($q$SELECT prolly_delete_range('no-such-branch', 'a', 'b')$q$);
BEGIN READ ONLY;
SELECT regress.err($q$SELECT prolly_delete_range('r', 'a', 'b')$q$);
ROLLBACK;
SELECT prolly_delete_branch('r') IS NOT NULL, prolly_delete_branch('r-big') IS NOT NULL;
\! ./regress-cli.sh branch -d r-cli >/dev/null
