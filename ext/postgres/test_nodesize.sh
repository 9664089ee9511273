# ext/postgres/test_nodesize.sh - stores of another node size than 4096 (docs/sql.md, "Node
# size"): a part of test_extension.sh, which sources it (its ok, not_ok, cli, $log, $db, $top,
# $BUILD, $here), in databases of their own:
#   a. schema public: a store `prolly init --node-size 1024` made (schema version 7, its size in
#      meta's node_size row); schema s4: a store of 4096 bytes (a copy of one `prolly init` made in
#      a second database, which keeps the original), the extension's functions declared there too
#      (by hand, from the scripts prolly--0.1.sql, prolly--0.1--0.2.sql and prolly--0.2--0.3.sql), so that one session calls both stores, in one statement;
#   b. the same edits, two rounds of them, made through SQL (prolly_commit) on both stores and
#      through the CLI on the 1 KiB store and on the original of s4: after each round the 1 KiB
#      store's roots are equal and differ from the 4 KiB ones, which are equal too; the final
#      records committed at once through SQL make the same 1 KiB root;
#   c. the session reads what the CLI wrote between its statements, and the CLI reads (get, diff,
#      log, verify) what the session wrote;
#   d. in one transaction, cursors over both stores held open across a change of
#      prolly.cache_size, and both stores read meanwhile: each cursor reads through its handle to
#      its end (a handle is replaced only once nothing holds it), and so do the calls after.

ns=prolly_nodesize
ns_q() { psql -X -At -v ON_ERROR_STOP=1 -d "$1" "${@:2}"; }
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $ns" -c "DROP DATABASE IF EXISTS ${ns}_4k" \
	-c "CREATE DATABASE $ns" -c "CREATE DATABASE ${ns}_4k" >"$log" 2>&1
# The edits: e1 loads 3,000 records (several levels of 1 KiB nodes), e2 changes 100, deletes 50
# and adds 20; a NULL v deletes. Kept as tables beside the store, written out for the CLI as
# `apply` lines, so that both sides make exactly these edits.
edits_sql="CREATE TABLE e1 AS SELECT format('k%s', lpad(g::text, 5, '0')) AS k, 'v' || g AS v
	FROM generate_series(1, 3000) g;
CREATE TABLE e2 AS SELECT format('k%s', lpad((g * 7)::text, 5, '0')) AS k, 'changed' || g AS v
	FROM generate_series(1, 100) g
UNION ALL SELECT format('k%s', lpad((1000 + g * 3)::text, 5, '0')), NULL FROM generate_series(1, 50) g
UNION ALL SELECT format('n%s', lpad(g::text, 5, '0')), 'new' || g FROM generate_series(1, 20) g;"
apply_lines() { # $1: the table
	ns_q "$ns" -c "SELECT CASE WHEN v IS NULL THEN format(E'del\t%s', k) ELSE format(E'put\t%s\t%s', k, v) END
		FROM $1 ORDER BY k"
}
{
	cli "${ns}_4k" init && cli "$ns" init --node-size 1024 &&
		pg_dump -n public -f "$log.s4" "${ns}_4k" &&
		sed -e 's/"public"/"s4"/g' -e 's/public\./s4./g' -e 's/SCHEMA public/SCHEMA s4/g' "$log.s4" |
		ns_q "$ns" -q -f - &&
		ns_q "$ns" -q -c "CREATE EXTENSION prolly SCHEMA public" -c "$edits_sql" &&
		sed -e '/^\\echo /d' -e 's/@extschema@/s4/g' -e "s|MODULE_PATHNAME|\$libdir/prolly|g" \
			"$here/prolly--0.1.sql" "$here/prolly--0.1--0.2.sql" "$here/prolly--0.2--0.3.sql" | ns_q "$ns" -q -f - &&
		apply_lines e1 >"$log.e1" && apply_lines e2 >"$log.e2" &&
		cli "${ns}_4k" branch cli main && cli "${ns}_4k" apply cli "$log.e1" && cli "${ns}_4k" apply cli "$log.e2"
} >>"$log" 2>&1
rc=$?
meta=$(ns_q "$ns" -c "SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM meta WHERE key <> 'epoch'
	UNION ALL SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM s4.meta WHERE key <> 'epoch'" 2>&1 | paste -sd' ')
if [ "$rc" = 0 ] && [ "$meta" = "node_size=1024,schema_version=7 schema_version=6" ]; then
	ok "a store of 1 KiB nodes (prolly init --node-size 1024: $meta) and one of 4 KiB in schema s4, the functions declared in both"
else
	sed 's/^/# /' "$log"
	not_ok "a store of 1 KiB nodes and one of 4 KiB (rc=$rc, meta: $meta)"
fi

# One session; the CLI runs between its statements (\!), writing its output to files.
export NS_CLI="$top/$BUILD/prolly --store dbname=$ns" NS_LOG="$log"
ns_q "$ns" -q -f - >"$log.sql" 2>&1 <<'EOF'
\echo round1
SELECT prolly_branch('sql', 'main') IS NOT NULL, s4.prolly_branch('sql', 'main') IS NOT NULL;
SELECT prolly_commit('sql', k, v) IS NOT NULL, s4.prolly_commit('sql', k, v) IS NOT NULL
FROM (SELECT array_agg(convert_to(k, 'UTF8')) AS k, array_agg(convert_to(v, 'UTF8')) AS v FROM e1) e;
\! $NS_CLI branch cli main >/dev/null && $NS_CLI apply cli "$NS_LOG.e1" >/dev/null
SELECT a.tree_id = b.tree_id, a.tree_id <> c.tree_id, prolly_count('cli')
FROM prolly_log('sql', 1) a, prolly_log('cli', 1) b, s4.prolly_log('sql', 1) c;
\echo round2
SELECT prolly_commit('sql', k, v) IS NOT NULL, s4.prolly_commit('sql', k, v) IS NOT NULL
FROM (SELECT array_agg(convert_to(k, 'UTF8')) AS k, array_agg(convert_to(v, 'UTF8')) AS v FROM e2) e;
\! $NS_CLI apply cli "$NS_LOG.e2" >/dev/null
SELECT a.tree_id = b.tree_id, a.tree_id <> c.tree_id, prolly_count('cli'),
       convert_from(prolly_get('cli', 'k00007'), 'UTF8'), prolly_get('cli', 'k01003') IS NULL
FROM prolly_log('sql', 1) a, prolly_log('cli', 1) b, s4.prolly_log('sql', 1) c;
\echo once
SELECT prolly_branch('once', 'main') IS NOT NULL;
SELECT prolly_commit('once', array_agg(key), array_agg(value)) IS NOT NULL FROM prolly_scan('cli');
SELECT a.tree_id = b.tree_id FROM prolly_log('once', 1) a, prolly_log('sql', 1) b;
\echo trees
SELECT tree_id FROM prolly_log('sql', 1);
SELECT tree_id FROM s4.prolly_log('sql', 1);
\echo lockstep
SELECT count(*), count(a), count(b) FROM (SELECT prolly_scan('sql') AS a, s4.prolly_scan('sql') AS b) x;
\echo held
BEGIN;
DECLARE c1 CURSOR FOR SELECT prolly_scan('sql');
DECLARE c4 CURSOR FOR SELECT s4.prolly_scan('sql');
MOVE 1000 IN c1;
MOVE 10 IN c4;
SET prolly.cache_size = '1MB';
SELECT prolly_count('cli'), s4.prolly_count('sql'), prolly_put('sql', 'held', '1') IS NOT NULL,
       s4.prolly_put('sql', 'held', '4') IS NOT NULL;
MOVE ALL IN c1;
\echo :ROW_COUNT
MOVE ALL IN c4;
\echo :ROW_COUNT
COMMIT;
SELECT (SELECT count(*) FROM prolly_scan('sql')), (SELECT count(*) FROM s4.prolly_scan('sql')),
       convert_from(prolly_get('sql', 'held'), 'UTF8') || convert_from(s4.prolly_get('sql', 'held'), 'UTF8');
RESET prolly.cache_size;
EOF
got=$(sed '/^lockstep$/,$d' "$log.sql" | paste -sd' ')
got_held=$(sed -n '/^lockstep$/,$p' "$log.sql" | paste -sd' ')
t1=$(sed -n '/^trees$/{n;p;}' "$log.sql")
t4=$(sed -n '/^trees$/{n;n;p;}' "$log.sql")
want="round1 t|t t|t t|t|3000 round2 t|t t|t|2970|changed1|t once t t t trees $t1 $t4"
want_held="lockstep 2970|2970|2970 held 2970|2970|t|t 1970 2960 2971|2971|14"
# the CLI reads what the session wrote: its tree, a record, no difference from the CLI's branch,
# every node; and the 4 KiB root is the one the CLI made in the original store
cli_tree=$(cli "$ns" log cli --limit 1 2>&1 | awk -F '\t' '$1 == "tree" { print $2 }')
cli_sql_tree=$(cli "$ns" log sql~1 --limit 1 2>&1 | awk -F '\t' '$1 == "tree" { print $2 }')
cli_get=$(cli "$ns" get sql k00007 2>&1)
cli_diff=$(cli "$ns" diff sql~1 cli 2>&1)
cli_verify=$(cli "$ns" verify sql 2>&1)
v_rc=$?
tree_4k=$(cli "${ns}_4k" log cli --limit 1 2>&1 | awk -F '\t' '$1 == "tree" { print $2 }')
nodes_1k=$(echo "$cli_verify" | awk -F '\t' '{ print $3 }')
nodes_4k=$(cli "${ns}_4k" verify cli 2>&1 | awk -F '\t' '{ print $3 }')
if [ "$got" = "$want" ] && [ -n "$t1" ] && [ "$t1" != "$t4" ] && [ "$cli_tree" = "$t1" ] &&
	[ "$cli_sql_tree" = "$t1" ] && [ "$tree_4k" = "$t4" ] && [ "$cli_get" = changed1 ] &&
	[ -z "$cli_diff" ] && [ "$v_rc" = 0 ]; then
	ok "the same edits through SQL and the CLI make the same root at 1 KiB (${t1:0:12}, $nodes_1k), another at 4 KiB (${t4:0:12}, $nodes_4k, as the CLI makes there); each reads the other's writes"
else
	diff <(echo "$want" | tr ' ' '\n') <(echo "$got" | tr ' ' '\n') | sed 's/^/# /'
	echo "# cli: tree of cli $cli_tree, of sql~1 $cli_sql_tree, 4k $tree_4k, get '$cli_get', verify $v_rc: $cli_verify" | head -n 5
	echo "$cli_diff" | head -n 5 | sed 's/^/# diff: /'
	not_ok "stores of 1 KiB and 4 KiB nodes through SQL and the CLI"
fi
if [ "$got_held" = "$want_held" ]; then
	ok "cursors over a 1 KiB and a 4 KiB store held open across a change of prolly.cache_size read to their end; one statement scans both in lockstep"
else
	diff <(echo "$want_held" | tr ' ' '\n') <(echo "$got_held" | tr ' ' '\n') | sed 's/^/# /'
	not_ok "cursors over stores of two node sizes"
fi
rm -f "$log.s4" "$log.e1" "$log.e2" "$log.sql"
unset NS_CLI NS_LOG
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $ns" -c "DROP DATABASE IF EXISTS ${ns}_4k" >/dev/null 2>&1
