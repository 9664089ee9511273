#!/usr/bin/env bash
# tests/pgbouncer.sh - the PostgreSQL store behind a connection pooler (docs/postgres.md,
# "Connection poolers"): starts a throwaway cluster (scripts/pg-cluster.sh) and two pgbouncers in
# front of it, one in pool_mode = session and one in pool_mode = transaction, then drives the CLI
# through them. Session mode must work as a direct connection does (writes, merges, gc, concurrent
# writers of one branch losing nothing, history copied to and from LMDB); transaction mode must
# be refused with the error that names it, writing nothing, and a store must never run what a
# store of another schema prepared (tests/pgbouncer/two_schemas.c, built here against
# $BUILD/libprolly.a, with the sanitizers the library was built with when SAN is set: ThreadSanitizer
# for SAN=thread, ASan and UBSan otherwise). TAP on stdout.
#
# Without a pgbouncer binary (PATH, /usr/sbin, or $PGBOUNCER) it skips, and fails under CI=true
# (.ci/run installs the package). Environment: BUILD (default build), PROLLY_CLI (the CLI, default
# $BUILD/prolly). Run from the top of the tree.
set -u

BUILD=${BUILD:-build}
CLI=${PROLLY_CLI:-$BUILD/prolly}
case "$CLI" in /*) ;; *) CLI="$PWD/$CLI" ;; esac
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

bouncer=${PGBOUNCER:-$(command -v pgbouncer || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; })}
if [ -z "$bouncer" ]; then
	if [ "${CI:-}" = true ]; then
		echo "not ok 1 - pgbouncer: no pgbouncer binary (apt-get install pgbouncer)"
		exit 1
	fi
	echo "ok 1 - pgbouncer # SKIP no pgbouncer binary (apt-get install pgbouncer)"
	exit 0
fi

unset ${!PROLLY_PG_@} PGHOST PGPORT PGUSER PGDATABASE PGSERVICE
root=$(mktemp -d /tmp/prolly-bouncer.XXXXXX) || exit 2
out=$root/out
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	for m in session transaction; do
		[ -f "$root/$m/pid" ] && kill "$(cat "$root/$m/pid")" 2>/dev/null
	done
	scripts/pg-cluster.sh stop "$root/pg" >/dev/null 2>&1
	rm -rf "$root"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres: "$root"
if ! scripts/pg-cluster.sh start "$root/pg" >"$root/pg.env" 2>"$out"; then
	not_ok "a throwaway cluster starts"
	exit 1
fi
. "$root/pg.env"
psql="$PROLLY_PG_BIN/psql -X -q -tA -v ON_ERROR_STOP=1"

# free_port: a TCP port nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	return 1
}
# start_bouncer MODE: a pgbouncer in pool_mode MODE; sets url_MODE (database MODE, which it
# creates on the cluster).
start_bouncer() {
	local m=$1 port dir=$root/$1
	port=$(free_port) || return 1
	as_owner mkdir -p "$dir"
	$psql "$PROLLY_PG_URL" -c "CREATE DATABASE $m" || return 1
	as_owner sh -c "cat >'$dir/pgbouncer.ini'" <<EOF
[databases]
* = host=$PROLLY_PG_DIR/sock port=$PROLLY_PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users
pool_mode = $m
default_pool_size = 2
max_client_conn = 100
logfile = $dir/log
pidfile = $dir/pid
EOF
	as_owner sh -c "echo '\"postgres\" \"\"' >'$dir/users'"
	as_owner "$bouncer" -d "$dir/pgbouncer.ini" || return 1
	for _ in $(seq 50); do
		$psql "postgresql://postgres@/$m?host=$dir&port=$port" -c "SELECT 1" >/dev/null 2>&1 && break
		sleep 0.1
	done
	printf -v "url_$m" '%s' "postgresql://postgres@/$m?host=$dir&port=$port"
}
check "pgbouncer starts in session mode" start_bouncer session
check "pgbouncer starts in transaction mode" start_bouncer transaction
url_session=${url_session:-none} url_transaction=${url_transaction:-none}

cli() { "$CLI" --store "$url_session" "$@"; }
# Session mode: each client has a server session of its own, so everything works.
session_basics() {
	set -e
	cli init
	cli put main fruit/apple red
	[ "$(cli get main fruit/apple)" = red ]
	cli branch dev main
	cli put dev fruit/apple green
	cli put main fruit/kiwi brown
	cli merge main dev
	[ "$(cli get main fruit/apple)" = green ] && [ "$(cli get main fruit/kiwi)" = brown ]
	[ "$(cli log main | grep -c '^commit')" = 5 ]
	cli branch -d dev
	cli gc --keep 1 | grep -q '^nodes_removed'
	cli verify main
}
check "session mode: init, put, get, branch, merge, log, gc, verify" session_basics

# Concurrent writers of one branch, more processes than the pooler has server sessions: every
# compare-and-swap that loses is retried by the engine, so no write is lost.
concurrent_writers() {
	local pids=() w
	for w in 1 2 3 4; do
		(for i in $(seq 8); do cli put main "w$w/$i" "v$i" >/dev/null || exit 1; done) &
		pids+=($!)
	done
	for w in "${pids[@]}"; do wait "$w" || return 1; done
	[ "$(cli scan main --prefix w | wc -l)" = 32 ]
}
check "session mode: 4 processes x 8 puts on one branch, all 32 kept" concurrent_writers

# History between the pooled store and LMDB, both ways.
lmdb_sync() {
	set -e
	"$CLI" clone "$url_session" "lmdb:$root/copy"
	"$CLI" --store "lmdb:$root/copy" put main from/lmdb yes
	"$CLI" --store "lmdb:$root/copy" push origin main
	[ "$(cli get main from/lmdb)" = yes ]
}
check "session mode: clone to LMDB, push back" lmdb_sync

# Transaction mode: a server session serves whichever client the pooler sends next, so the
# store's session state (prepared statements, settings, the gc's lock) would be another client's.
# The first client sets up a server session; every later one that lands on it is refused.
tcli() { "$CLI" --store "$url_transaction" "$@"; }
transaction_refused() {
	tcli init || return 1
	local refs before rc
	refs="SELECT count(*), string_agg(encode(value, 'hex'), ',' ORDER BY name) FROM public.refs"
	before=$($psql "${PROLLY_PG_URL%%/prolly\?*}/transaction?${PROLLY_PG_URL#*\?}" -c "$refs")
	for c in "put main k v" "get main k" "gc"; do
		tcli $c >/dev/null 2>"$root/err"
		rc=$?
		cat "$root/err"
		[ "$rc" = 5 ] || return 1
		grep -q 'connection pooler in transaction or statement mode.*pool_mode = session.*nothing was done' "$root/err" || return 1
	done
	[ "$($psql "${PROLLY_PG_URL%%/prolly\?*}/transaction?${PROLLY_PG_URL#*\?}" -c "$refs")" = "$before" ]
}
check "transaction mode: put, get and gc refused (exit 5, naming the pool mode), nothing written" transaction_refused

# Two stores of two schemas in one process, steered so that the pooler hands store A the server
# session store B prepared its statements on (tests/pgbouncer/two_schemas.c says how): A used to
# read and write B's schema there, silently.
two_schemas() {
	local san="" direct="${PROLLY_PG_URL%%/prolly\?*}/twoschemas?${PROLLY_PG_URL#*\?}"
	case "${SAN:-}" in # as the Makefile's SANFLAGS: the library was built so
	"") ;;
	thread) san="-fsanitize=thread -fno-omit-frame-pointer" ;;
	*) san="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
	esac
	$psql "$PROLLY_PG_URL" -c "CREATE DATABASE twoschemas" || return 1
	cc -std=c11 -Wall -Wextra -Werror $san -Iinclude $(pkg-config --cflags libpq) \
		-o "$root/two_schemas" tests/pgbouncer/two_schemas.c "$BUILD/libprolly.a" \
		$(pkg-config --libs libcrypto libxxhash lmdb libpq) -lpthread -lm || return 1
	"$root/two_schemas" "$direct" "postgresql://postgres@/twoschemas?${url_transaction#*\?}"
}
check "transaction mode: a store never runs the statements another store prepared" two_schemas

# Several processes at once on a pooler whose server sessions are partly fresh: whichever
# commands the pooler lets run must be right, the others refused as above with nothing written.
transaction_concurrent() {
	local w rc ok=0 direct="${PROLLY_PG_URL%%/prolly\?*}/transaction?${PROLLY_PG_URL#*\?}"
	for w in 1 2 3 4 5 6; do
		(tcli put main "c/$w" v >/dev/null 2>"$root/err.$w"; echo $? >"$root/rc.$w") &
	done
	wait
	for w in 1 2 3 4 5 6; do
		rc=$(cat "$root/rc.$w")
		got=$("$CLI" --store "$direct" get main "c/$w" 2>/dev/null)
		if [ "$rc" = 0 ] && [ "$got" = v ]; then
			ok=$((ok + 1))
		elif [ "$rc" != 5 ] || [ -n "$got" ] ||
			! grep -q 'connection pooler in transaction or statement mode.*nothing was done' "$root/err.$w"; then
			echo "writer $w: exit $rc, stored '$got':"
			cat "$root/err.$w"
			return 1
		fi
	done
	echo "$ok of 6 ran"
}
check "transaction mode: 6 concurrent puts each stored, or refused naming the pool mode" transaction_concurrent

echo "# $n tests, $failed failed"
[ "$failed" = 0 ]
