#!/usr/bin/env bash
# tests/pgbouncer.sh - the PostgreSQL store behind a connection pooler (docs/postgres.md,
# "Connection poolers"): starts a throwaway cluster (scripts/pg-cluster.sh) and four pgbouncers
# in front of it, in pool_mode = session, transaction and statement, and one more in session mode
# with a pool of one server connection, then drives the CLI through them. Session mode must work
# as a direct connection does (writes, merges, gc, concurrent writers of one branch losing
# nothing, history copied to and from LMDB); a pool exhausted must fail naming pgbouncer's
# query_wait_timeout, writing nothing; transaction and statement mode must be refused with the
# error that names them, writing nothing, and a store must never run what a
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
	for m in "$root"/*/pid; do
		[ -f "$m" ] && kill "$(cat "$m")" 2>/dev/null
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
	for _ in {1..50}; do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	return 1
}
# start_bouncer NAME MODE [SETTING...]: a pgbouncer in pool_mode MODE with the ini lines SETTING
# after the others; sets url_NAME (database NAME, which it creates on the cluster).
start_bouncer() {
	local name=$1 m=$2 port dir=$root/$1
	shift 2
	port=$(free_port) || return 1
	$psql "$PROLLY_PG_URL" -c "CREATE DATABASE $name" || return 1
	# its directory, the two files and the daemon, by one process of the cluster's owner
	as_owner sh -c 'mkdir -p "$1" && cat >"$1/pgbouncer.ini" && echo "\"postgres\" \"\"" >"$1/users" &&
		exec "$2" -d "$1/pgbouncer.ini"' sh "$dir" "$bouncer" <<EOF || return 1
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
$(printf '%s\n' "$@")
EOF
	for _ in {1..50}; do
		$psql "postgresql://postgres@/$name?host=$dir&port=$port" -c "SELECT 1" >/dev/null 2>&1 && break
		sleep 0.1
	done
	printf -v "url_$name" '%s' "postgresql://postgres@/$name?host=$dir&port=$port"
}
check "pgbouncer starts in session mode" start_bouncer session session
check "pgbouncer starts in transaction mode" start_bouncer transaction transaction \
	"admin_users = postgres"
check "pgbouncer starts in statement mode" start_bouncer statement statement
# one server connection, and a client that waits longer than a second for it is dropped
check "pgbouncer starts in session mode with a pool of one" start_bouncer exhausted session \
	"default_pool_size = 1" "query_wait_timeout = 1"
url_session=${url_session:-none} url_transaction=${url_transaction:-none}
url_statement=${url_statement:-none} url_exhausted=${url_exhausted:-none}
# direct DB: the URL of database DB on the cluster, not through a pooler.
direct() { echo "${PROLLY_PG_URL%%/prolly\?*}/$1?${PROLLY_PG_URL#*\?}"; }
refs="SELECT count(*), string_agg(encode(value, 'hex'), ',' ORDER BY name) FROM public.refs"
# fails_each URL PATTERN COMMAND...: each COMMAND (words in one argument) through URL exits 5 with
# PATTERN (grep) in its message.
fails_each() {
	local url=$1 pat=$2 c rc
	shift 2
	for c in "$@"; do
		"$CLI" --store "$url" $c >/dev/null 2>"$root/err"
		rc=$?
		cat "$root/err"
		[ "$rc" = 5 ] && grep -q "$pat" "$root/err" || return 1
	done
}

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

# Session mode with every server connection taken (a pool of one, held here by psql): the store's
# new connection waits in pgbouncer's queue until query_wait_timeout drops it, with a FATAL error
# just before the end of the stream. The command must fail with a store error naming pgbouncer's
# message and what it means, and write nothing.
exhausted() {
	local before hold
	"$CLI" --store "$url_exhausted" init || return 1
	before=$($psql "$(direct exhausted)" -c "$refs")
	$psql "$url_exhausted" -c "SELECT pg_sleep(4)" &
	hold=$!
	# until the holder runs its sleep on the pool's one server connection (10 s at most): a
	# fixed pause would race with psql's start on a slow machine
	for _ in {1..200}; do
		[ "$($psql "$(direct exhausted)" -c "SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query = 'SELECT pg_sleep(4)'")" = 1 ] && break
		sleep 0.05
	done
	fails_each "$url_exhausted" 'query_wait_timeout (SQLSTATE 08P01) (pgbouncer: no server connection of its pool became free' \
		"put main k v" "get main k" || return 1
	wait "$hold"
	[ "$($psql "$(direct exhausted)" -c "$refs")" = "$before" ] || return 1
	"$CLI" --store "$url_exhausted" put main k v
}
check "session mode, pool exhausted: put and get fail naming query_wait_timeout, nothing written" exhausted

# Transaction and statement mode: a server session serves whichever client the pooler sends
# next, so the store's session state (prepared statements, settings, the gc's lock) would be
# another client's. The first client sets up a server session; every later one that lands on it
# is refused.
# refused MODE: through the pooler in pool_mode MODE (database MODE), init, then put, get and gc
# each refused with exit 5 naming the pool mode, the refs unchanged.
refused() {
	local m=$1 url before
	url=$(eval echo "\$url_$m")
	"$CLI" --store "$url" init || return 1
	before=$($psql "$(direct "$m")" -c "$refs")
	fails_each "$url" 'connection pooler in transaction or statement mode.*pool_mode = session.*nothing was done' \
		"put main k v" "get main k" "gc" || return 1
	[ "$($psql "$(direct "$m")" -c "$refs")" = "$before" ]
}
check "transaction mode: put, get and gc refused (exit 5, naming the pool mode), nothing written" refused transaction
check "statement mode: put, get and gc refused (exit 5, naming the pool mode), nothing written" refused statement

tcli() { "$CLI" --store "$url_transaction" "$@"; }
# Two stores of two schemas in one process, steered so that the pooler hands store A the server
# session store B prepared its statements on (tests/pgbouncer/two_schemas.c says how): A used to
# read and write B's schema there, silently.
two_schemas() {
	local san=""
	case "${SAN:-}" in # as the Makefile's SANFLAGS: the library was built so
	"") ;;
	thread) san="-fsanitize=thread -fno-omit-frame-pointer" ;;
	*) san="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
	esac
	$psql "$PROLLY_PG_URL" -c "CREATE DATABASE twoschemas" || return 1
	cc -std=c11 -Wall -Wextra -Werror $san -Iinclude $(pkg-config --cflags libpq) \
		-o "$root/two_schemas" tests/pgbouncer/two_schemas.c "$BUILD/libprolly.a" \
		$(pkg-config --libs libcrypto libxxhash lmdb libpq) -lpthread -lm || return 1
	"$root/two_schemas" "$(direct twoschemas)" "postgresql://postgres@/twoschemas?${url_transaction#*\?}"
}
check "transaction mode: a store never runs the statements another store prepared" two_schemas

# Several processes at once on a pooler whose server sessions are partly fresh: whichever
# commands the pooler lets run must be right, the others refused as above with nothing written.
transaction_concurrent() {
	local w rc ok=0 key value
	local -A stored # what the writers left, read by one scan (a get per writer was a process each)
	for w in 1 2 3 4 5 6; do
		(tcli put main "c/$w" v >/dev/null 2>"$root/err.$w"; echo $? >"$root/rc.$w") &
	done
	wait
	while IFS=$'\t' read -r key value; do
		stored[$key]=$value
	done < <("$CLI" --store "$(direct transaction)" scan main --prefix c/)
	for w in 1 2 3 4 5 6; do
		read -r rc <"$root/rc.$w"
		got=${stored[c/$w]:-}
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

# The transaction-mode pooler switched to session mode (its pool_mode changed, its configuration
# reloaded): the server sessions set up in transaction mode stay in its pool as they are, since
# pgbouncer runs its reset query when a session-mode client gives one back, so a client after the
# switch may meet the store's settings there (search_path, the mark, the prepared statements;
# docs/postgres.md, "Connection poolers"). Each command then works or is refused saying so and
# naming RECONNECT (before: naming transaction mode alone); after RECONNECT on pgbouncer's admin
# console, every command works.
switched_to_session() {
	local c rc admin
	admin="postgresql://postgres@/pgbouncer?${url_transaction#*\?}"
	sed -i 's/^pool_mode = transaction/pool_mode = session/' "$root/transaction/pgbouncer.ini"
	kill -HUP "$(cat "$root/transaction/pid")" || return 1
	for _ in {1..200}; do # until the reload has taken the new mode (10 s at most)
		$psql "$admin" -c "SHOW CONFIG" 2>/dev/null | grep -q '^pool_mode|session|' && break
		sleep 0.05
	done
	for c in "put main switched/1 yes" "get main switched/1" "gc --keep 1" "put main switched/2 yes" "gc --keep 1"; do
		tcli $c >/dev/null 2>"$root/err"
		rc=$?
		cat "$root/err"
		[ "$rc" = 0 ] || [ "$rc" = 1 ] && continue # 1: get of a key a refused put did not store
		[ "$rc" = 5 ] && grep -q 'set up by another one (or by a client of a pooler since switched to session mode.*RECONNECT' "$root/err" || return 1
	done
	$psql "$admin" -c "RECONNECT" || return 1
	for c in 1 2 3; do
		tcli put main "switched/$c" yes || return 1
		[ "$(tcli get main "switched/$c")" = yes ] || return 1
		tcli gc --keep 1 | grep -q '^nodes_removed' || return 1
	done
}
check "transaction mode switched to session mode: refused naming RECONNECT, then after it everything works" switched_to_session

echo "# $n tests, $failed failed"
[ "$failed" = 0 ]
