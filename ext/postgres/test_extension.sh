#!/usr/bin/env bash
# ext/postgres/test_extension.sh - the extension's whole test, as one TAP program (tests/run.sh runs it
# beside the C tests in `make test`; CI runs that).
#
#   1. builds the extension and installs it (`make -C ext/postgres install`: needs root, or write
#      access to PostgreSQL's directories);
#   2. checks that prolly.so links neither libpq nor liblmdb (the engine is linked in, its stores
#      are not) and exports none of the engine's symbols;
#   3. starts a throwaway cluster (scripts/pg-cluster.sh), unless PGHOST is set, in which case
#      that server is used (PGPORT, PGUSER as for psql);
#   4. runs `make -C ext/postgres installcheck` (pg_regress, sql/*.sql against expected/*.out)
#      and prints one TAP line per regression test, with regression.diffs when one fails;
#   5. on the data the suite left, cancels a long diff with pg_cancel_backend from a second
#      session and checks that it stopped, quickly, with the cancel's error;
#   6. raises 400 errors inside the engine's calls in one backend (statement timeouts in diffs,
#      a node that fails its hash check) and checks that the backend's resident memory does not
#      grow with them (the guard frees what the engine held).
# The last line is "N passed, N failed"; the exit status is non-zero if anything failed.
# Environment: BUILD (the top-level build directory, default build), PG_CONFIG.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-build}
PG_CONFIG=${PG_CONFIG:-pg_config}
mk=(make --no-print-directory -C "$here" BUILD="$BUILD" PG_CONFIG="$PG_CONFIG")

n=0 passed=0 failed=0
ok() {
	n=$((n + 1))
	passed=$((passed + 1))
	echo "ok $n - $*"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
}
finish() {
	echo "1..$n"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

log=$(mktemp "${TMPDIR:-/tmp}/prolly-ext.XXXXXX")
cluster=
cleanup() {
	rm -f "$log"
	if [ -n "$cluster" ]; then "$top/scripts/pg-cluster.sh" stop "$cluster" >/dev/null 2>&1; fi
}
trap cleanup EXIT

# ---- 1. build and install ----
if "${mk[@]}" >"$log" 2>&1; then
	ok "build (make -C ext/postgres)"
else
	tail -n 30 "$log" | sed 's/^/# /'
	not_ok "build (make -C ext/postgres)"
	finish
fi
if "${mk[@]}" install >"$log" 2>&1; then
	ok "install (make -C ext/postgres install)"
else
	tail -n 10 "$log" | sed 's/^/# /'
	not_ok "install (make -C ext/postgres install; it needs root)"
	finish
fi

# ---- 2. what the module links ----
so="$here/prolly.so"
deps=$(ldd "$so" 2>/dev/null | awk '{print $1}' | paste -sd' ')
if ldd "$so" | grep -Eq 'libpq|liblmdb'; then
	not_ok "prolly.so links libpq or liblmdb: $deps"
elif nm -D --undefined-only "$so" | grep -Eq ' (PQ|mdb_)'; then
	not_ok "prolly.so needs libpq or liblmdb symbols"
else
	ok "prolly.so links neither libpq nor liblmdb ($deps)"
fi
if nm -D --defined-only "$so" | grep -Eq ' prolly_'; then
	not_ok "prolly.so exports engine symbols: $(nm -D --defined-only "$so" | grep -E ' prolly_' | head -3 | paste -sd' ')"
else
	ok "prolly.so exports no engine symbol"
fi

# ---- 3. a server ----
if [ -z "${PGHOST:-}" ]; then
	if ! env_lines=$("$top/scripts/pg-cluster.sh" start 2>"$log"); then
		sed 's/^/# /' "$log"
		not_ok "start a throwaway cluster (scripts/pg-cluster.sh)"
		finish
	fi
	eval "$env_lines"
	cluster=$PROLLY_PG_DIR
	export PGHOST="$PROLLY_PG_DIR/sock" PGPORT="$PROLLY_PG_PORT" PGUSER=postgres
fi

# ---- 4. pg_regress ----
"${mk[@]}" installcheck >"$log" 2>&1
rc=$?
seen=0
while read -r name result; do
	seen=1
	if [ "$result" = ok ]; then ok "regress $name"; else not_ok "regress $name"; fi
done < <(sed -n 's/^test \([a-z_0-9]*\) *\.\.\. \([a-zA-Z]*\).*/\1 \2/p' "$log")
if [ "$rc" -ne 0 ]; then
	[ "$seen" = 1 ] || sed 's/^/# /' "$log" | tail -n 30
	if [ -f "$here/regression.diffs" ]; then head -n 200 "$here/regression.diffs" | sed 's/^/# /'; fi
	not_ok "make -C ext/postgres installcheck (exit $rc)"
fi

# ---- 5. pg_cancel_backend ----
db=contrib_regression
PGAPPNAME=prolly_cancel_test psql -X -d "$db" -c "SET prolly.cache_size = 0" \
	-c "SELECT count(*) FROM generate_series(1, 10000) g, LATERAL prolly_diff('main', 'big') d" \
	>"$log" 2>&1 &
victim=$!
active=0
for _ in $(seq 1 100); do
	active=$(psql -X -At -d "$db" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'prolly_cancel_test' AND state = 'active' AND query LIKE '%prolly_diff%'" 2>/dev/null)
	[ "$active" = 1 ] && break
	sleep 0.1
done
sleep 1 # well inside the diffs
t0=$(date +%s%N)
psql -X -At -d "$db" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'prolly_cancel_test'" >/dev/null 2>&1
wait "$victim"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
if [ "$active" = 1 ] && grep -q 'canceling statement due to user request' "$log" && [ "$ms" -lt 5000 ]; then
	ok "pg_cancel_backend stops a long diff (psql returned ${ms} ms after the cancel)"
else
	sed 's/^/# /' "$log"
	not_ok "pg_cancel_backend stops a long diff (active=$active, ${ms} ms)"
fi

# ---- 6. errors inside the engine leak nothing ----
# Four rounds of 50 pairs: a diff stopped by statement_timeout, a get of a damaged node (damage
# made in a transaction that rolls back). VmRSS after the first round and after the fourth.
{
	echo "SET prolly.cache_size = 0;"
	echo "SELECT pg_backend_pid() AS pid \\gset"
	echo "\\setenv PROLLY_PID :pid"
	echo "BEGIN;"
	echo "ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256;"
	echo "UPDATE nodes SET node = node || '\\x00'::bytea WHERE id = decode((SELECT tree_id FROM prolly_branches() WHERE name = 'dev'), 'hex');"
	echo "SAVEPOINT s;"
	for _round in 1 2 3 4; do
		for _ in $(seq 1 50); do
			echo "SET statement_timeout = '15ms'; SELECT count(*) FROM prolly_diff('main', 'big'); ROLLBACK TO SAVEPOINT s;"
			echo "RESET statement_timeout; SELECT prolly_get('dev', 'k00001'); ROLLBACK TO SAVEPOINT s;"
		done
		echo "\\! awk '/^VmRSS/ { print \"rss\", \$2 }' /proc/\$PROLLY_PID/status"
	done
	echo "ROLLBACK;"
} >"$log.sql"
psql -X -d "$db" -f "$log.sql" >"$log" 2>&1
timeouts=$(grep -c 'statement timeout' "$log")
corrupt=$(grep -c 'is corrupt' "$log")
rss=$(awk '$1 == "rss" { print $2 }' "$log" | paste -sd' ')
first=${rss%% *}
last=${rss##* }
rm -f "$log.sql"
if [ "$corrupt" = 200 ] && [ "$timeouts" -ge 100 ] && [ -n "$first" ] && [ "$((last - first))" -lt 4096 ]; then
	ok "errors inside engine calls leak nothing ($timeouts timeouts, $corrupt hash failures; VmRSS by round, kB: $rss)"
else
	tail -n 20 "$log" | sed 's/^/# /'
	not_ok "errors inside engine calls leak nothing ($timeouts timeouts, $corrupt hash failures; VmRSS by round, kB: $rss)"
fi
finish
