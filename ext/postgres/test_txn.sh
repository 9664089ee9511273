# ext/postgres/test_txn.sh - the SQL functions inside PostgreSQL's transaction machinery, with
# several sessions: a part of test_extension.sh, which sources it (its ok, not_ok, cli, $log),
# in a database of its own (docs/sql.md, "Concurrency"):
#   a. a gc that runs after a REPEATABLE READ or SERIALIZABLE transaction took its snapshot: that
#      transaction's next write fails with 40001 and writes nothing (before, prolly_branch of a
#      commit the gc had removed, still in the snapshot, made a branch naming deleted nodes);

txn=prolly_txn
txn_q() { psql -X -At -q -d "$txn" "$@"; }
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $txn" -c "CREATE DATABASE $txn" >"$log" 2>&1
{
	cli "$txn" init && seq 1 300 | awk '{ printf "put\tk%05d\tv%d\n", $1, $1 }' | cli "$txn" apply main - -m load &&
		txn_q -c "CREATE EXTENSION prolly SCHEMA public"
} >>"$log" 2>&1 || sed 's/^/# /' "$log"

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

rm -f "$log.a" "$log.b"
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $txn" >/dev/null 2>&1
