# ext/postgres/test_txn.sh - the SQL functions inside PostgreSQL's transaction machinery, with
# several sessions: a part of test_extension.sh, which sources it (its ok, not_ok, cli,
# sleeping, $log), in a database of its own (docs/sql.md, "Transactions and isolation levels"):
#   a. a gc that runs after a REPEATABLE READ or SERIALIZABLE transaction took its snapshot: that
#      transaction's next write fails with 40001 and writes nothing (before, prolly_branch of a
#      commit the gc had removed, still in the snapshot, made a branch naming deleted nodes);
#   b. per isolation level, a writer whose branch another session moved after its snapshot, or
#      moves while it waits for the row: REPEATABLE READ and SERIALIZABLE get 40001, and a
#      writer that waited for a transaction that rolled back writes; no write lost;
#   c. SERIALIZABLE: two transactions that each read one branch and write the other; one of
#      them fails (40001);
#   d. cursors WITH HOLD over prolly_scan and prolly_diff (in the select list and in FROM),
#      fetched in pieces across commits of other sessions and of their own transaction: every
#      row is of the snapshot the cursor was declared in;
#   e. PREPARE TRANSACTION after writes, then ROLLBACK PREPARED or COMMIT PREPARED from another
#      session: the branch ends where the decision says, and the preparing session, its caches
#      warm, reads and writes on the right head (skipped when max_prepared_transactions is 0).

txn=prolly_txn
txn_q() { psql -X -At -q -d "$txn" "$@"; }
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $txn" -c "CREATE DATABASE $txn" >"$log" 2>&1
{
	cli "$txn" init && seq 1 300 | awk '{ printf "put\tk%05d\tv%d\n", $1, $1 }' | cli "$txn" apply main - -m load &&
		txn_q -c "CREATE EXTENSION prolly SCHEMA public"
} >>"$log" 2>&1 || sed 's/^/# /' "$log"
# The second session of a psql script: \! "$TXN_Q" -c '...' (run by the shell psql starts).
export TXN_Q="psql -X -At -q -d $txn"


# a. A gc between the snapshot and the write.
bad=
for level in "REPEATABLE READ" SERIALIZABLE; do
	b=gc${level%% *}
	cli "$txn" branch "tmp$b" main >"$log" 2>&1
	x=$(cli "$txn" put "tmp$b" gone "$b" 2>>"$log" | tail -n 1)
	txn_q -v VERBOSITY=sqlstate >"$log.a" 2>&1 <<EOF
BEGIN ISOLATION LEVEL $level;
SELECT count(*) FROM prolly_branches();
\\! $top/$BUILD/prolly --store dbname=$txn branch -d tmp$b >/dev/null && $top/$BUILD/prolly --store dbname=$txn gc --reflog-days 0 >/dev/null
SELECT prolly_branch('$b', '$x');
ROLLBACK;
BEGIN ISOLATION LEVEL $level;
SELECT count(*) FROM prolly_branches();
\\! $top/$BUILD/prolly --store dbname=$txn gc >/dev/null
SELECT prolly_put('main', '$b', 'lost');
ROLLBACK;
BEGIN ISOLATION LEVEL $level;
SELECT prolly_put('main', '$b', 'kept') IS NOT NULL;
COMMIT;
SELECT count(*) FROM prolly_branches() WHERE name = '$b';
SELECT convert_from(prolly_get('main', '$b'), 'UTF8');
EOF
	got=$(paste -sd' ' "$log.a")
	[ "$got" = "2 ERROR:  40001 1 ERROR:  40001 t 0 kept" ] || bad+=" $level: $got;"
done
if [ -z "$bad" ] && cli "$txn" verify main >>"$log" 2>&1; then
	ok "a gc after a REPEATABLE READ or SERIALIZABLE transaction's snapshot: its writes fail with 40001, nothing written"
else
	sed 's/^/# /' "$log"
	not_ok "a gc after a transaction's snapshot:$bad"
fi

# b. Per isolation level: moved after the snapshot (40001), moved by the transaction waited for
#    (40001), and a wait for one that rolled back (writes).
bad=
for level in "REPEATABLE READ" SERIALIZABLE; do
	b=iso${level%% *}
	txn_q -c "SELECT prolly_branch('$b', 'main')" >/dev/null
	txn_q -v VERBOSITY=sqlstate >"$log.a" 2>&1 <<EOF
BEGIN ISOLATION LEVEL $level;
SELECT convert_from(prolly_get('$b', 'k00001'), 'UTF8');
\\! \$TXN_Q -c "SELECT prolly_put('$b', 'other', '1')" >/dev/null
SELECT prolly_commit('$b', ARRAY['mine']::bytea[], ARRAY['1']::bytea[]);
ROLLBACK;
EOF
	PGAPPNAME=prolly_txn_a txn_q -c "BEGIN" -c "SELECT prolly_put('$b', 'o2', '1')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>&1 &
	a_pid=$!
	sleeping prolly_txn_a
	txn_q -v VERBOSITY=sqlstate -c "BEGIN ISOLATION LEVEL $level" -c "SELECT prolly_put('$b', 'm2', '1')" >>"$log.a" 2>&1
	wait "$a_pid"
	PGAPPNAME=prolly_txn_a txn_q -c "BEGIN" -c "SELECT prolly_put('$b', 'o3', '1')" -c "SELECT pg_sleep(2)" -c "ROLLBACK" >/dev/null 2>&1 &
	a_pid=$!
	sleeping prolly_txn_a
	txn_q -c "BEGIN ISOLATION LEVEL $level" -c "SELECT prolly_put('$b', 'm3', '1') IS NOT NULL" -c "COMMIT" >>"$log.a" 2>&1
	wait "$a_pid"
	txn_q -c "SELECT string_agg(convert_from(key, 'UTF8'), ',') FROM prolly_scan('$b')
		WHERE key IN ('other', 'mine', 'o2', 'm2', 'o3', 'm3')" \
		-c "SELECT (SELECT count(*) FROM prolly_log('$b')) - (SELECT count(*) FROM prolly_log('main'))" >>"$log.a" 2>&1
	got=$(paste -sd' ' "$log.a")
	[ "$got" = "v1 ERROR:  40001 ERROR:  40001 t m3,o2,other 3" ] || bad+=" $level: $got;"
done
if [ -z "$bad" ]; then
	ok "REPEATABLE READ and SERIALIZABLE writers: 40001 when the branch moved after the snapshot or while they waited; a wait for a rollback writes"
else
	not_ok "writers under REPEATABLE READ and SERIALIZABLE:$bad"
fi

# c. SERIALIZABLE write skew across two branches.
txn_q -c "SELECT prolly_branch('skew_a', 'main'), prolly_branch('skew_b', 'main')" >/dev/null
PGAPPNAME=prolly_txn_a txn_q -v VERBOSITY=sqlstate -c "BEGIN ISOLATION LEVEL SERIALIZABLE" -c "SELECT prolly_get('skew_a', 'x') IS NULL" \
	-c "SELECT pg_sleep(1)" -c "SELECT prolly_put('skew_b', 'y', '1') IS NOT NULL" -c "COMMIT" >"$log.a" 2>&1 &
a_pid=$!
sleeping prolly_txn_a
txn_q -v VERBOSITY=sqlstate -c "BEGIN ISOLATION LEVEL SERIALIZABLE" -c "SELECT prolly_get('skew_b', 'y') IS NULL" \
	-c "SELECT prolly_put('skew_a', 'x', '1') IS NOT NULL" -c "SELECT pg_sleep(1.5)" -c "COMMIT" >"$log.b" 2>&1
wait "$a_pid"
got=$(txn_q -c "SELECT (prolly_get('skew_a', 'x') IS NOT NULL)::int + (prolly_get('skew_b', 'y') IS NOT NULL)::int")
if [ "$got" = 1 ] && cat "$log.a" "$log.b" | grep -q '40001'; then
	ok "SERIALIZABLE: of two transactions each reading one branch and writing the other, one fails with 40001"
else
	cat "$log.a" "$log.b" | sed 's/^/# /'
	not_ok "SERIALIZABLE write skew across two branches (writes landed: $got)"
fi

# d. Cursors WITH HOLD across commits while the branch moves.
txn_q -c "SELECT prolly_branch('cur', 'main')" -c "SELECT prolly_put('cur', 'k00001', 'old')" >/dev/null
txn_q -c "SELECT key, value FROM prolly_scan('cur')" >"$log.scan"
txn_q -c "SELECT * FROM prolly_diff('main', 'cur')" >"$log.diff"
txn_q >"$log.a" 2>&1 <<'EOF'
BEGIN;
DECLARE c1 CURSOR WITH HOLD FOR SELECT (prolly_scan('cur')).*;
DECLARE c2 CURSOR WITH HOLD FOR SELECT * FROM prolly_scan('cur');
DECLARE c3 CURSOR WITH HOLD FOR SELECT * FROM prolly_diff('main', 'cur');
DECLARE c4 CURSOR WITH HOLD FOR SELECT (prolly_scan('cur')).*;
FETCH 2 FROM c1;
FETCH 2 FROM c2;
\! $TXN_Q -c "SELECT prolly_commit('cur', ARRAY['k00001', 'k00002', 'k00150', 'a0']::bytea[], ARRAY['new', NULL, 'new', 'new']::bytea[])" >/dev/null
\! $TXN_Q -c "SELECT prolly_merge('main', 'cur')" >/dev/null
FETCH 100 FROM c1;
FETCH 100 FROM c2;
SELECT prolly_put('cur', 'k00003', 'own') IS NOT NULL;
COMMIT;
\! $TXN_Q -c "SELECT prolly_commit('cur', ARRAY['k00200', 'k00299']::bytea[], ARRAY['new2', NULL]::bytea[])" >/dev/null
FETCH ALL FROM c1;
FETCH ALL FROM c2;
FETCH ALL FROM c3;
FETCH ALL FROM c4;
EOF
# c1 and c2 interleave: 2 + 2 rows, 100 + 100, the put's t, then the rest of each, c3, c4.
rows=$(wc -l <"$log.scan")
{
	sed -n '1,2p;5,104p' "$log.a"
	sed -n "206,$((206 + rows - 103))p" "$log.a"
} >"$log.c1"
{
	sed -n '3,4p;105,204p' "$log.a"
	sed -n "$((206 + rows - 102)),$((205 + 2 * (rows - 102)))p" "$log.a"
} >"$log.c2"
sed -n "$((206 + 2 * (rows - 102))),\$p" "$log.a" >"$log.rest"
if [ "$rows" -gt 200 ] && cmp -s "$log.c1" "$log.scan" && cmp -s "$log.c2" "$log.scan" &&
	cmp -s "$log.rest" <(cat "$log.diff" "$log.scan") && [ "$(sed -n 205p "$log.a")" = t ]; then
	ok "cursors WITH HOLD over prolly_scan and prolly_diff, fetched across commits: the rows of their snapshot"
else
	diff "$log.a" <(cat "$log.scan" "$log.diff") | head -n 20 | sed 's/^/# /'
	not_ok "cursors WITH HOLD over prolly_scan and prolly_diff across commits"
fi
rm -f "$log.scan" "$log.diff" "$log.c1" "$log.c2" "$log.rest"

# e. PREPARE TRANSACTION, decided from another session.
if [ "$(txn_q -c "SHOW max_prepared_transactions")" = 0 ]; then
	ok "PREPARE TRANSACTION # SKIP max_prepared_transactions is 0"
else
	h0=$(txn_q -c "SELECT prolly_resolve('main')")
	txn_q -v VERBOSITY=sqlstate >"$log.a" 2>&1 <<'EOF'
SELECT count(*) AS n0 FROM prolly_scan('main') \gset
BEGIN;
SELECT prolly_put('main', 'prep', '1') AS c1 \gset
SELECT prolly_branch('prep', 'main') IS NOT NULL;
SELECT count(*) = :n0 + 1 FROM prolly_scan('main');
PREPARE TRANSACTION 'prolly_txn_1';
\! $TXN_Q -c "ROLLBACK PREPARED 'prolly_txn_1'"
SELECT prolly_get('main', 'prep') IS NULL, count(*) FROM prolly_branches() WHERE name = 'prep';
SELECT count(*) = :n0 FROM prolly_scan('main');
SELECT prolly_resolve(:'c1');
BEGIN;
SELECT prolly_put('main', 'prep', '2') AS c2 \gset
PREPARE TRANSACTION 'prolly_txn_2';
\! $TXN_Q -c "COMMIT PREPARED 'prolly_txn_2'"
SELECT prolly_resolve('main') = :'c2', convert_from(prolly_get('main', 'prep'), 'UTF8');
SELECT prolly_put('main', 'after', '3') IS NOT NULL;
SELECT parents[1] = :'c2' FROM prolly_log('main', 1);
EOF
	got=$(paste -sd' ' "$log.a")
	if [ "$got" = "t t t|0 t ERROR:  42704 t|2 t t" ] && cli "$txn" verify main >>"$log" 2>&1 &&
		[ "$(txn_q -c "SELECT prolly_resolve('main~2') = '$h0'")" = t ]; then
		ok "PREPARE TRANSACTION, then ROLLBACK PREPARED and COMMIT PREPARED from another session: the branch ends as decided"
	else
		sed 's/^/# /' "$log"
		not_ok "PREPARE TRANSACTION after writes: $got"
	fi
fi
rm -f "$log.a" "$log.b"
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $txn" >/dev/null 2>&1
