# Ctrl-C during a push (LMDB to PostgreSQL) and a clone (PostgreSQL to LMDB), sent to the whole
# process group as a terminal does, while the copy waits for a lock on the PostgreSQL store's
# nodes: the tool ends at once by SIGINT (status 130) with one line saying that no ref names a
# partly copied commit; the destination's refs did not move, and running the command again
# finishes it. (Before, it died without a word.) Then a fetch (PostgreSQL to LMDB) stopped by
# SIGTERM sent to the tool alone, as a plain `kill PID` does: the same, with status 143; and one
# stopped by SIGINT sent to the tool's child alone (an lmdb: store's work runs in a child).
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
# Holds the nodes table locked until released, as a long transaction would.
lock_nodes() {
	PGAPPNAME=nodes_holder psql -X -q -tA -d "$PROLLY_STORE" -c "BEGIN" \
		-c "LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
	holder=$!
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'nodes' AND l.mode = 'AccessExclusiveLock' AND l.granted
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())")" = 1 ] && break
		sleep 0.1
	done
}
release_nodes() {
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'nodes_holder' AND datname = current_database()" >/dev/null
	wait "$holder"
}
# Runs prolly in its own process group, waits until its session waits for the lock, sends
# SIGINT to the group (or, with "-TERM" first, SIGTERM to the tool alone) and shows the exit
# status and stderr, and whether it ended within 3 s.
interrupted() {
	local how=ctrl-c
	case $1 in -TERM | -INT-CHILD) how=$1 && shift ;; esac
	case $how in
	-TERM) echo "\$ prolly $* (kill -TERM while it waits)" ;;
	-INT-CHILD) echo "\$ prolly $* (kill -INT of its child while it waits)" ;;
	*) echo "\$ prolly $* (Ctrl-C while it waits)" ;;
	esac
	set -m
	prolly "$@" >/dev/null 2>.err &
	local pid=$! rc
	set +m
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND application_name <> 'nodes_holder' AND datname = current_database()")" -ge 1 ] && break
		sleep 0.1
	done
	local t0=$SECONDS
	case $how in
	-TERM) pkill -TERM -P "$pid" ;; # the tool, the child of the shell running lib.sh's prolly()
	-INT-CHILD) pkill -INT -P "$(pgrep -P "$pid")" ;;
	*) kill -INT -- -"$pid" ;;
	esac
	wait "$pid"
	rc=$?
	echo "[exit $rc]"
	grep -vx 'Terminated' .err # the notice of the shell that ran the tool, not the tool's
	[ $((SECONDS - t0)) -le 3 ] && echo "ended within 3 s"
}
p init
for i in $(seq 1 200); do printf 'put\tkey%04d\tvalue %d\n' "$i" "$i"; done >a.txt
p apply main a.txt
prolly clone "$PROLLY_STORE" lmdb:loc | tail -1
for i in $(seq 1 200); do printf 'put\tkey%04d\tother %d\n' "$i" "$i"; done >b.txt
p --store lmdb:loc apply main b.txt
# push: LMDB to PostgreSQL
lock_nodes
interrupted --store lmdb:loc push origin main
release_nodes
p branches
p --store lmdb:loc push origin main | cut -f1
p verify main --history
p get main key0001
# clone: PostgreSQL to LMDB
lock_nodes
interrupted clone "$PROLLY_STORE" lmdb:copy
release_nodes
# The destination was made before the copy met the lock: it exists, with no branch yet.
pe --store lmdb:copy branches
prolly clone "$PROLLY_STORE" lmdb:copy | tail -1
p --store lmdb:copy verify main --history
# fetch: PostgreSQL to LMDB, SIGTERM to the tool alone (its child on lmdb: dies with it)
p put main key0001 newer >/dev/null
lock_nodes
interrupted -TERM --store lmdb:loc fetch origin
release_nodes
p --store lmdb:loc fetch origin
p --store lmdb:loc verify origin/main --history
# the same, SIGINT to the tool's child alone
p put main key0002 newer >/dev/null
lock_nodes
interrupted -INT-CHILD --store lmdb:loc fetch origin
release_nodes
p --store lmdb:loc fetch origin
