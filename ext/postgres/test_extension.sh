#!/usr/bin/env bash
# ext/postgres/test_extension.sh - the extension's whole test, as one TAP program (tests/run.sh runs it
# beside the C tests in `make test`; CI runs that).
#
#   1. builds the extension and installs it (`make -C ext/postgres install`: needs root, or write
#      access to PostgreSQL's directories), unless the installed files are the built ones already;
#   2. checks that prolly.so links neither libpq nor liblmdb (the engine is linked in, its stores
#      are not) and exports none of the engine's symbols, and that every function of
#      the scripts (prolly--*.sql) has its heading in docs/sql.md;
#   3. starts a throwaway cluster (scripts/pg-cluster.sh; fsync off), unless PGHOST is set, in which case
#      that server is used (PGPORT, PGUSER as for psql);
#   4. runs `make -C ext/postgres installcheck` (pg_regress, sql/*.sql against expected/*.out)
#      and prints one TAP line per regression test, with regression.diffs when one fails;
#   5. on the data the suite left, cancels a long diff with pg_cancel_backend from a second
#      session and checks that it stopped, quickly, with the cancel's error;
#   6. raises 400 errors inside the engine's calls in one backend (statement timeouts in diffs,
#      a node that fails its hash check) and checks that the backend's resident memory does not
#      grow with them (the guard frees what the engine held);
#   6b. the same for failed and rolled-back writes (merge conflicts, commits rolled back to a
#      savepoint, puts to a missing branch), by the backend's private memory;
#   6c. statement_timeout inside ONE long engine call (a scan and a diff filling their
#      tuplestore, the diff with the cache on and off; a commit of 600,000 edits; prolly_verify of
#      800,000 records, read from the table; a merge's conflicts over cached nodes) stops it in
#      well under its whole time, and
#      leaks nothing, leaves no node row and no ref moved, and the next call works;
#   7. concurrent writers on the data the suite left: a commit to a branch whose row another
#      transaction holds waits for it and builds on its commit; two sessions of 40 commits each
#      to one branch lose and fail none; a commit to another branch does not wait; a branch
#      deleted while a commit to it is open waits for it and returns its commit; the CLI that
#      read a head before a SQL commit landed loses the race (exit 4), and a REPEATABLE READ
#      writer that waited gets 40001; a gc started meanwhile waits for a SQL write and keeps it;
#      two sessions creating one branch: the second waits, then fails (42710) with nothing written;
#      a session holding the write lock: a SQL write gives up after 5 s, then writes once it ends;
#      a gc holding it while it beats is waited for again, one that does not beat is named;
#   8. a store and the extension in a database of their own, copied with pg_dump -Fc, with
#      pg_dump -n public -e prolly and with a plain dump, restored: the functions read as on the
#      source, and write.
#   8b. the extension across its database's life (test_life.sh): declarations an earlier script
#      of version 0.1 made, DROP and CREATE EXTENSION in one session, a restore in place under
#      an open session, one session moving the extension between the stores of two schemas.
#   8c. the functions inside PostgreSQL's transactions with several sessions (test_txn.sh): a gc
#      after a REPEATABLE READ or SERIALIZABLE snapshot, writers per isolation level, SERIALIZABLE
#      write skew, cursors WITH HOLD across commits, PREPARE TRANSACTION decided elsewhere.
#   8d. stores of 1 KiB and 4 KiB nodes side by side (test_nodesize.sh): the same edits through
#      SQL and the CLI make the same roots per store, different ones across sizes; one session
#      reads and writes both, cursors on both held across a change of prolly.cache_size.
#   9. on its own cluster only: a hot standby of it (scripts/pg-cluster.sh standby) gives the
#      primary's answers to every read function on the data the suite left, and refuses every
#      write function with 25006.
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
# Installed only when an installed file differs: install replaces a file by removing it first,
# and a backend of another test (the harness's, run beside this one) that loads the module just
# then would not find it.
installed_same() {
	local lib share f
	lib=$("$PG_CONFIG" --pkglibdir) && share=$("$PG_CONFIG" --sharedir)/extension || return 1
	cmp -s "$here/prolly.so" "$lib/prolly.so" || return 1
	for f in "$here"/prolly.control "$here"/prolly--*.sql; do
		cmp -s "$f" "$share/${f##*/}" || return 1
	done
}
if installed_same; then
	ok "install (make -C ext/postgres install: the installed files are these already)"
elif "${mk[@]}" install >"$log" 2>&1; then
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

# every function the extension creates has its heading in docs/sql.md, "### NAME(ARGS)"
undocumented=
for f in $(cat "$here"/prolly--*.sql | grep -oE 'FUNCTION @extschema@\.[a-z_]+' | sed 's/.*\.//' | sort -u); do
	grep -qE "^### $f\(" "$top/docs/sql.md" || undocumented+=" $f"
done
if [ -n "$undocumented" ]; then
	not_ok "functions without a heading in docs/sql.md:$undocumented"
else
	ok "every function of the extension's scripts (prolly--*.sql) has its heading in docs/sql.md"
fi

# ---- 3. a server ----
if [ -z "${PGHOST:-}" ]; then
	# prepared transactions for test_txn.sh (PostgreSQL's default allows none); no fsync, as the
	# data is thrown away (every commit of the suite, CREATE and DROP DATABASE and the standby's
	# base backup flushed to disk: most of the wall time of pg_regress and of 6c on a busy machine)
	if ! env_lines=$(PG_SETTINGS="fsync = off
${PG_SETTINGS:-}
max_prepared_transactions = 4" "$top/scripts/pg-cluster.sh" start 2>"$log"); then
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
# ---- 6b. failed writes leak nothing ----
# Four rounds of 50: a merge that fails with conflicts (PY001, after the engine merged), a
# 2,000-edit commit rolled back to a savepoint, a put to a missing branch. RssAnon (the backend's
# private memory) after each round: its VmRSS also counts the shared buffers it touches, which
# grow here with the heap pages the rolled-back node rows took.
psql -X -q -d "$db" -c "SELECT prolly_branch('leak1', 'main'), prolly_branch('leak2', 'main')" \
	-c "SELECT prolly_put('leak1', 'x', 'one'), prolly_put('leak2', 'x', 'two')" >/dev/null 2>"$log"
{
	echo "SET prolly.cache_size = 0;"
	echo "SELECT pg_backend_pid() AS pid \\gset"
	echo "\\setenv PROLLY_PID :pid"
	echo "CREATE TEMP TABLE e AS SELECT array_agg(('e' || g)::bytea) AS k, array_agg(('v' || g)::bytea) AS v FROM generate_series(1, 2000) g;"
	echo "BEGIN;"
	echo "SAVEPOINT s;"
	for _round in 1 2 3 4; do
		for _ in $(seq 1 50); do
			echo "SELECT prolly_merge('leak1', 'leak2'); ROLLBACK TO SAVEPOINT s;"
			echo "SELECT prolly_commit('leak1', k, v) IS NOT NULL FROM e; ROLLBACK TO SAVEPOINT s;"
			echo "SELECT prolly_put('nosuchbranch', 'k', 'v'); ROLLBACK TO SAVEPOINT s;"
		done
		echo "\\! awk '/^RssAnon/ { print \"rss\", \$2 }' /proc/\$PROLLY_PID/status"
	done
	echo "ROLLBACK;"
} >"$log.sql"
psql -X -d "$db" -f "$log.sql" >"$log" 2>&1
conflicts=$(grep -c 'left 1 conflict' "$log")
missing=$(grep -c "no branch 'nosuchbranch'" "$log")
commits=$(grep -c '^ t$' "$log")
rss=$(awk '$1 == "rss" { print $2 }' "$log" | paste -sd' ')
first=${rss%% *}
last=${rss##* }
rm -f "$log.sql"
if [ "$conflicts" = 200 ] && [ "$missing" = 200 ] && [ "$commits" = 200 ] && [ -n "$first" ] && [ "$((last - first))" -lt 4096 ]; then
	ok "failed and rolled-back writes leak nothing ($conflicts merge conflicts, $commits commits of 2,000 edits rolled back, $missing missing branches; RssAnon by round, kB: $rss)"
else
	tail -n 20 "$log" | sed 's/^/# /'
	not_ok "failed and rolled-back writes leak nothing ($conflicts conflicts, $commits commits, $missing missing; RssAnon by round, kB: $rss)"
fi

# ---- 6c. interrupts inside one engine call ----
# Each statement below is ONE call of the function (a scan or diff in FROM fills its tuplestore
# in one call; a commit is one call), so the executor never checks for interrupts while it runs: only
# the checks inside the engine's callbacks can stop it. Each is timed whole twice (FULL: the
# faster), then six times with statement_timeout a tenth of FULL (at least 10 ms), and the median
# of those must give up less than 0.3 FULL after its timeout: a check missing from the scan's loop, from the rows' callback (the
# diff, cache on and off; with the cache off the node reader checks too), from the commit's sort
# of its keys or between its batches (600,000 edits: its work used to be one piece, and the timeout fired only at its one
# write, about half way), from the node reader under prolly_verify (every node read from the
# table), or the engine's own asking (prolly_options.interrupt) in a merge whose nodes are all
# cached (prolly_merge_conflicts of 200,001 changes: no row, no store read until its end) lets it
# run on. Then: RssAnon (the backend's private memory) after the
# sixth round is as after the second, no node row and no ref moved, and the same commit,
# uncancelled, works.
# One attempt (branch cancel$1 from big), its figures left in timeouts, slow, times, rss;
# 0 when it passed. A second attempt runs when the first fails: the times are of a 2-CPU machine
# shared with other suites, where a cancelled warm diff of about 40 ms once took 15-33 ms from run
# to run (its median over the limit); a missing check slows every attempt alike.
interrupts() {
	local br="cancel$1" f c t first last
	{
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv PROLLY_PID :pid"
		echo "CREATE TEMP TABLE ce AS SELECT array_agg(('ce' || lpad(g::text, 7, '0'))::bytea ORDER BY md5(g::text)) AS k, array_agg(('v' || g)::bytea ORDER BY md5(g::text)) AS v FROM generate_series(1, 600000) g;"
		echo "SELECT prolly_branch('$br', 'big') IS NOT NULL AS branched;"
		# what prolly_verify walks: 800,000 records (big and ce's), read from the table each time
		echo "SELECT prolly_branch('${br}v', 'big') IS NOT NULL AS branched;"
		echo "SELECT prolly_commit('${br}v', k, v) IS NOT NULL FROM ce;"
		echo "SELECT count(*) FROM prolly_diff('main', 'big');" # the cache warm
		# full NAME: one run timed; cut NAME: the same with statement_timeout FULL / 10 (a rolled-back
		# commit, a diff with the cache on and off)
		run() { # $1 NAME, $2 a statement_timeout or empty; prints the statements of one timed run
			local q="SELECT count(*) FROM prolly_diff('main', 'big');" pre="" end="" warm=""
			case $1 in
			scan) q="SELECT count(*) FROM prolly_scan('big');" warm=$q ;;
			diff) warm=$q ;;
			diff_cold) pre="SET prolly.cache_size = 0;" ;;
			commit) q="SELECT prolly_commit('$br', k, v) IS NOT NULL FROM ce;" pre="BEGIN;" end="ROLLBACK;" ;;
			verify) q="SELECT count(*) FROM prolly_verify('${br}v');" ;;
			merge) q="SELECT count(*) FROM prolly_merge_conflicts('dev', 'big');" warm=$q ;;
			esac
			# the cache warm (a rolled-back commit empties it): no node read, only the rows' checks
			echo "$warm"
			echo "$pre ${2:+SET statement_timeout = $2;} SELECT clock_timestamp() AS t0 \\gset"
			echo "$q"
			echo "$end"
			echo "RESET statement_timeout; RESET prolly.cache_size;"
			echo "SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::int AS ms \\gset"
		}
		echo "CREATE TEMP TABLE full_ms (what text, ms int);"
		for _ in 1 2; do
			for what in scan diff diff_cold commit verify merge; do
				run $what ""
				echo "\\echo full $what :ms"
				echo "INSERT INTO full_ms VALUES ('$what', :ms);"
			done
		done
		for what in scan diff diff_cold commit verify merge; do
			echo "SELECT greatest(10, min(ms) / 10) AS cut_$what FROM full_ms WHERE what = '$what' \\gset"
		done
		for round in 0 1 2 3 4 5; do
			for what in scan diff diff_cold commit verify merge; do
				run $what ":cut_$what"
				echo "\\echo cut $what :ms"
			done
			[ "$round" = 0 ] && echo "SELECT count(*) AS nodes0, prolly_resolve('$br') AS head0 FROM nodes \\gset"
			echo "\\! awk '/^RssAnon/ { print \"rss\", \$2 }' /proc/\$PROLLY_PID/status"
		done
		echo "SELECT count(*) = :nodes0 AND prolly_resolve('$br') = :'head0' AS untouched FROM nodes \\gset"
		echo "\\echo untouched :untouched"
		echo "SELECT prolly_commit('$br', k, v) IS NOT NULL FROM ce;"
		echo "SELECT prolly_count('$br') = prolly_count('big') + 600000 AS works \\gset"
		echo "\\echo works :works"
	} >"$log.sql"
	psql -X -q -d "$db" -f "$log.sql" >"$log" 2>&1
	timeouts=$(grep -c 'statement timeout' "$log")
	# per kind: the fastest whole run against the median of the six cut ones (the third fastest)
	slow=""
	for what in scan diff diff_cold commit verify merge; do
		f=$(awk -v w=$what '$1 == "full" && $2 == w { print $3 }' "$log" | sort -n | head -n 1)
		c=$(awk -v w=$what '$1 == "cut" && $2 == w { print $3 }' "$log" | sort -n | sed -n 3p)
		# the time it ran on after its timeout (FULL / 10, at least 10 ms) under 0.3 FULL: on a
		# fast machine a whole scan takes 25 ms, where the 10 ms floor alone is 0.4 FULL
		t=$(((${f:-0} / 10) > 10 ? ${f:-0} / 10 : 10))
		if [ -z "$f" ] || [ -z "$c" ] || [ $(((c - t) * 10)) -ge $((f * 3)) ]; then slow+=" $what ${c:-?}/${f:-?}"; fi
	done
	times=$(awk '$1 == "full" || $1 == "cut" { t[$2] = t[$2] " " $3 } END { for (w in t) printf "%s: %s; ", w, t[w] }' "$log")
	rss=$(awk '$1 == "rss" { print $2 }' "$log" | paste -sd' ')
	first=$(echo "$rss" | cut -d' ' -f2) # after the second round: the first may still grow the heap
	last=${rss##* }
	rm -f "$log.sql"
	[ "$timeouts" = 36 ] && [ -z "$slow" ] && grep -q '^untouched t$' "$log" && grep -q '^works t$' "$log" &&
		[ -n "$first" ] && [ "$((last - first))" -lt 4096 ]
}
again=""
if ! interrupts 1; then
	again=" (second attempt; the first: $timeouts timeouts; slow: ${slow:-none}; ms: ${times}RssAnon kB: $rss)"
	interrupts 2
fi
if [ $? = 0 ]; then
	ok "statement_timeout stops one long engine call promptly, leaking and leaving nothing (ms, full then cut: ${times}RssAnon kB: $rss)$again"
else
	tail -n 30 "$log" | sed 's/^/# /'
	not_ok "statement_timeout stops one long engine call promptly ($timeouts timeouts; slow: ${slow:-none}; ms: ${times}RssAnon kB: $rss)$again"
fi

# ---- 7. concurrent writers ----
q() { psql -X -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Waits (10 s at most) until the session of application_name $1 runs its pg_sleep: the
# statements it ran before have taken their locks and snapshots (a fixed sleep instead is a
# race on a slow machine). pg_stat_activity shows every database's sessions.
sleeping() {
	for _ in $(seq 200); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
			AND state = 'active' AND query LIKE 'SELECT pg_sleep%'")" = 1 ] && return
		sleep 0.05
	done
}
q -c "SELECT prolly_branch('conc', 'main'), prolly_branch('conc2', 'main')" >/dev/null 2>"$log"
base=$(q -c "SELECT prolly_resolve('conc')")

# a. One branch: B's commit waits for A's transaction, then builds on A's commit.
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_put('conc', 'a', '1')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>"$log.a" &
a_pid=$!
sleeping prolly_a
t0=$(now_ms)
PGAPPNAME=prolly_b q -c "SELECT prolly_put('conc', 'b', '2')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
wait "$a_pid"
a_rc=$?
got=$(q -c "SELECT convert_from(prolly_get('conc', 'a'), 'UTF8') || convert_from(prolly_get('conc', 'b'), 'UTF8'),
	prolly_resolve('conc~2') = '$base', (SELECT count(*) FROM prolly_diff('conc~1', 'conc')) || '/' || (SELECT count(*) FROM prolly_diff('conc~2', 'conc~1'))" | paste -sd' ')
if [ "$a_rc" = 0 ] && [ "$b_rc" = 0 ] && [ "$got" = "12|t|1/1" ] && [ "$((t1 - t0))" -ge 800 ]; then
	ok "concurrent commits to one branch: the second waited $((t1 - t0)) ms for the first's transaction, then committed on top of it"
else
	cat "$log.a" "$log.b" | sed 's/^/# /'
	not_ok "concurrent commits to one branch (a=$a_rc b=$b_rc got=$got waited $((t1 - t0)) ms)"
fi

# b. Two sessions, 40 commits each to one branch, at once: none lost, none failed.
before=$(q -c "SELECT count(*) FROM prolly_log('conc')")
for s in p q; do
	{
		for i in $(seq 1 40); do echo "SELECT prolly_put('conc', '$s$i', '$i');"; done
	} | PGAPPNAME=prolly_load q -f - >/dev/null 2>"$log.$s" &
	eval "pid_$s=$!"
done
wait "$pid_p"
p_rc=$?
wait "$pid_q"
q_rc=$?
got=$(q -c "SELECT (SELECT count(*) FROM prolly_log('conc')) - $before, (SELECT count(*) FROM prolly_scan('conc', prefix => 'p')) + (SELECT count(*) FROM prolly_scan('conc', prefix => 'q'))" | paste -sd' ')
if [ "$p_rc" = 0 ] && [ "$q_rc" = 0 ] && [ "$got" = "80|80" ]; then
	ok "two sessions, 40 commits each to one branch at once: 80 commits, 80 keys, no error"
else
	cat "$log.p" "$log.q" | head -n 10 | sed 's/^/# /'
	not_ok "two sessions, 40 commits each to one branch at once (p=$p_rc q=$q_rc commits|keys=$got)"
fi

# c. Two branches: B's commit to another branch does not wait for A's open transaction.
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_put('conc', 'c', '1')" -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null 2>"$log.a" &
a_pid=$!
sleeping prolly_a
t0=$(now_ms)
q -c "SET statement_timeout = '1s'" -c "SELECT prolly_put('conc2', 'c', '2')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
# A's put is not the test: end its transaction rather than wait out its sleep
q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'prolly_a'" >/dev/null
wait "$a_pid"
# (statement_timeout is the test; the wall-clock bound leaves room for psql's start on a busy machine)
if [ "$b_rc" = 0 ] && [ "$((t1 - t0))" -lt 2500 ]; then
	ok "a commit to another branch does not wait for an open transaction's commit ($((t1 - t0)) ms)"
else
	sed 's/^/# /' "$log.b"
	not_ok "a commit to another branch does not wait (rc=$b_rc, $((t1 - t0)) ms)"
fi

# c2. A branch deleted (0.2) while a commit to it is open: the delete waits for that transaction
#     and returns the commit it made; a put after it finds no branch (42704).
q -c "SELECT prolly_branch('doomed', 'conc')" >/dev/null 2>>"$log"
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_put('doomed', 'x', '1')" -c "SELECT pg_sleep(1)" -c "COMMIT" >"$log.a" 2>&1 &
a_pid=$!
sleeping prolly_a
t0=$(now_ms)
q -c "SELECT prolly_delete_branch('doomed')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
wait "$a_pid"
a_rc=$?
put_a=$(sed -n 2p "$log.a")
q -c "\\set VERBOSITY verbose" -c "SELECT prolly_put('doomed', 'y', '1')" >"$log.c" 2>&1
if [ "$a_rc" = 0 ] && [ "$b_rc" = 0 ] && [ -n "$put_a" ] && [ "$(cat "$log.b")" = "$put_a" ] &&
	[ "$((t1 - t0))" -ge 400 ] && grep -q 42704 "$log.c"; then
	ok "a branch deleted while a commit to it is open waits $((t1 - t0)) ms for it, returns that commit; a later put finds no branch"
else
	cat "$log.a" "$log.b" "$log.c" | sed 's/^/# /'
	not_ok "a branch deleted while a commit to it is open (a=$a_rc b=$b_rc, $((t1 - t0)) ms)"
fi

# d. The C client read the head before a SQL commit landed: it loses the race (exit 4, ECONFLICT),
#    and under REPEATABLE READ a SQL writer that waited gets 40001.
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_put('conc', 'd', 'sql')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>"$log.a" &
a_pid=$!
sleeping prolly_a
PROLLY_CLI="$top/$BUILD/prolly" PROLLY_TEST_DB=$db "$here/regress-cli.sh" put conc d cli >"$log.c" 2>&1 &
c_pid=$!
PGAPPNAME=prolly_rr q -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM refs" \
	-c "SELECT prolly_put('conc', 'e', 'rr')" >"$log.b" 2>&1
wait "$c_pid"
c_rc=$?
wait "$a_pid"
got=$(q -c "SELECT convert_from(prolly_get('conc', 'd'), 'UTF8'), prolly_get('conc', 'e') IS NULL" | paste -sd' ')
if [ "$c_rc" = 4 ] && grep -q 'moved to' "$log.c" && grep -q 'could not serialize' "$log.b" && [ "$got" = "sql|t" ]; then
	ok "the CLI that read the head before a SQL commit landed exits 4; a REPEATABLE READ writer gets 40001"
else
	cat "$log.c" "$log.b" | sed 's/^/# /'
	not_ok "the CLI loses the race to a SQL commit (cli exit $c_rc, got=$got)"
fi
# e. gc and a SQL writer: a gc started while a SQL write's transaction is open waits for it (the
#    writers' lock), then keeps what it wrote.
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_put('conc', 'g', 'during gc')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>"$log.a" &
a_pid=$!
sleeping prolly_a
t0=$(now_ms)
PROLLY_CLI="$top/$BUILD/prolly" PROLLY_TEST_DB=$db "$here/regress-cli.sh" gc >"$log.c" 2>&1
c_rc=$?
t1=$(now_ms)
wait "$a_pid"
a_rc=$?
PROLLY_CLI="$top/$BUILD/prolly" PROLLY_TEST_DB=$db "$here/regress-cli.sh" verify conc >>"$log.c" 2>&1
v_rc=$?
got=$(q -c "SELECT convert_from(prolly_get('conc', 'g'), 'UTF8')")
if [ "$a_rc" = 0 ] && [ "$c_rc" = 0 ] && [ "$v_rc" = 0 ] && [ "$got" = "during gc" ] && [ "$((t1 - t0))" -ge 800 ]; then
	ok "a gc waits for an open SQL write ($((t1 - t0)) ms) and keeps what it wrote (verify passes)"
else
	cat "$log.a" "$log.c" | sed 's/^/# /'
	not_ok "gc and a SQL writer (a=$a_rc gc=$c_rc verify=$v_rc got=$got, $((t1 - t0)) ms)"
fi
# f. Two sessions create one branch at once: the second waits for the first's transaction, then
#    fails with 42710 (its compare-and-swap expecting no branch lost), leaving one branch and the
#    first's reflog entry only.
PGAPPNAME=prolly_a q -c "BEGIN" -c "SELECT prolly_branch('race', 'main')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>"$log.a" &
a_pid=$!
sleeping prolly_a
t0=$(now_ms)
q -c "SELECT prolly_branch('race', 'conc')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
wait "$a_pid"
a_rc=$?
got=$(q -c "SELECT prolly_resolve('race') = prolly_resolve('main'),
	(SELECT count(*) FROM refs WHERE name >= 'logs/refs/heads/race@' AND name < 'logs/refs/heads/race@~')" | paste -sd' ')
if [ "$a_rc" = 0 ] && [ "$b_rc" != 0 ] && grep -q 'already exists' "$log.b" && [ "$got" = "t|1" ] && [ "$((t1 - t0))" -ge 800 ]; then
	ok "two sessions create one branch: the second waits ($((t1 - t0)) ms) and fails 'already exists'; one reflog entry"
else
	cat "$log.a" "$log.b" | sed 's/^/# /'
	not_ok "two sessions create one branch (a=$a_rc b=$b_rc got=$got, $((t1 - t0)) ms)"
fi
# g. Another session holds the write lock exclusive (an advisory lock: any role may take it):
#    a SQL write used to wait for it forever; it gives up after 5 s (lock_timeout, the session
#    having none) saying what it waited for and who holds it (pid), and writes once the holder
#    is gone.
PGAPPNAME=prolly_holder q -c "SELECT pg_advisory_lock(1886547822, hashtext('\"public\".meta'))" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
h_pid=$!
for _ in $(seq 100); do
	[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 1886547822")" = 1 ] && break
	sleep 0.1
done
h_backend=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'prolly_holder'")
t0=$(now_ms)
q -c "SELECT prolly_put('conc', 'held', '1')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'prolly_holder'" >/dev/null
wait "$h_pid"
q -c "SELECT prolly_put('conc', 'held', '2')" >"$log.c" 2>&1
c_rc=$?
got=$(q -c "SELECT convert_from(prolly_get('conc', 'held'), 'UTF8')")
if [ "$b_rc" != 0 ] && grep -q 'lock timeout' "$log.b" && grep -q "write lock of schema public," "$log.b" &&
	grep -q "held by pid $h_backend " "$log.b" && [ "$((t1 - t0))" -ge 4500 ] && [ "$((t1 - t0))" -lt 9000 ] && [ "$c_rc" = 0 ] && [ "$got" = 2 ]; then
	ok "a session holding the write lock: a SQL write gives up after $((t1 - t0)) ms naming the lock and its holder's pid, and writes once it is gone"
else
	cat "$log.b" "$log.c" | sed 's/^/# /'
	not_ok "a session holding the write lock (put=$b_rc after $((t1 - t0)) ms, then $c_rc, got=$got)"
fi
# h. A gc that holds the write lock while it works (a mark under the lock) beats: its session
#    holds the gc lock and sets application_name to "prolly gc beat <ms>" (docs/postgres.md,
#    "Nobody can stall writers"). A SQL write with lock_timeout=300ms waits for it again and
#    succeeds once it lets go (1.5 s, beating every 100 ms); the same holder without beats is
#    stuck: the write fails with 55P03 naming its pid.
gc_holder() { # $1: application_name, $2: beat (1) or not (0), $3: how many 100 ms
	PGAPPNAME=$1 q -c "SELECT pg_advisory_lock(1886547821, hashtext('\"public\".meta'))" -c "BEGIN" \
		-c "SELECT pg_advisory_xact_lock(1886547822, hashtext('\"public\".meta'))" \
		-c "DO \$\$ BEGIN FOR i IN 1..$3 LOOP IF $2 = 1 THEN PERFORM set_config('application_name',
			'prolly gc beat ' || (extract(epoch FROM clock_timestamp()) * 1000)::int8, true); END IF;
			PERFORM pg_sleep(0.1); END LOOP; END \$\$" -c "COMMIT" >/dev/null 2>&1
}
held_by_gc() {
	for _ in $(seq 100); do
		[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 1886547822")" = 1 ] && break
		sleep 0.05
	done
}
gc_holder prolly_gc_beating 1 15 &
h_pid=$!
held_by_gc
t0=$(now_ms)
q -c "SET lock_timeout = '300ms'" -c "SELECT prolly_put('conc', 'beat', '1')" >"$log.b" 2>&1
b_rc=$?
t1=$(now_ms)
wait "$h_pid"
gc_holder prolly_gc_stuck 0 40 &
h_pid=$!
held_by_gc
h_backend=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'prolly_gc_stuck'")
t2=$(now_ms)
q -c "\\set VERBOSITY verbose" -c "SET lock_timeout = '300ms'" -c "SELECT prolly_put('conc', 'beat', '2')" >"$log.c" 2>&1
c_rc=$?
t3=$(now_ms)
# the stuck holder has made its point: end it rather than wait out its 4 s
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'prolly_gc_stuck'" >/dev/null
wait "$h_pid"
got=$(q -c "SELECT convert_from(prolly_get('conc', 'beat'), 'UTF8')")
if [ "$b_rc" = 0 ] && [ "$((t1 - t0))" -ge 1000 ] && [ "$c_rc" != 0 ] && grep -q 55P03 "$log.c" &&
	grep -q "held by pid $h_backend " "$log.c" && [ "$((t3 - t2))" -lt 2500 ] && [ "$got" = 1 ]; then
	ok "a gc holding the write lock: a SQL write waits while it beats ($((t1 - t0)) ms) and fails after $((t3 - t2)) ms naming it when it does not"
else
	cat "$log.b" "$log.c" | sed 's/^/# /'
	not_ok "a gc holding the write lock (beating: put=$b_rc after $((t1 - t0)) ms; stuck: put=$c_rc after $((t3 - t2)) ms, pid $h_backend; got=$got)"
fi
rm -f "$log.a" "$log.b" "$log.c" "$log.p" "$log.q"

# ---- 8. pg_dump and restore (docs/postgres.md, "Backups: pg_dump and restore") ----
# A database of its own: a store the CLI wrote, with two branches and a merge, and the
# extension beside it; copied with pg_dump -Fc and pg_restore, with a dump of schema public
# alone (-n public -e prolly, restored with --clean --if-exists), and with a plain dump run by
# psql (CREATE EXTENSION comes before the tables: its script needs none of them). On each copy
# the extension's functions must read what they read on the source, and write.
cli() { "$top/$BUILD/prolly" --store "dbname=$1" "${@:2}"; }
src=prolly_dump_src
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS ${src}" -c "DROP DATABASE IF EXISTS ${src}_fc" \
	-c "DROP DATABASE IF EXISTS ${src}_n" -c "DROP DATABASE IF EXISTS ${src}_p" -c "CREATE DATABASE ${src}" \
	-c "CREATE DATABASE ${src}_fc" -c "CREATE DATABASE ${src}_n" -c "CREATE DATABASE ${src}_p" >"$log" 2>&1
{
	cli "$src" init && cli "$src" put main k1 v1 && cli "$src" branch dev main &&
		cli "$src" put dev k2 v2 && cli "$src" put main k3 v3 && cli "$src" merge main dev &&
		psql -X -q -v ON_ERROR_STOP=1 -d "$src" -c "CREATE EXTENSION prolly SCHEMA public" &&
		pg_dump -Fc -f "$log.fc" "$src" && pg_dump -Fc -n public -e prolly -f "$log.n" "$src" &&
		pg_dump -f "$log.p" "$src" && pg_restore --exit-on-error -d "${src}_fc" "$log.fc" &&
		pg_restore --exit-on-error --clean --if-exists -d "${src}_n" "$log.n" &&
		psql -X -q -v ON_ERROR_STOP=1 -d "${src}_p" -f "$log.p"
} >>"$log" 2>&1
rc=$?
sql_reads() {
	psql -X -At -v ON_ERROR_STOP=1 -d "$1" -c "SELECT name, commit_id, tree_id FROM prolly_branches() ORDER BY 1" \
		-c "SELECT b.name, s.key, s.value FROM prolly_branches() b, prolly_scan(b.name) s ORDER BY 1, 2" \
		-c "SELECT commit_id, message FROM prolly_log('main')" -c "SELECT * FROM prolly_diff('dev', 'main')" 2>&1
}
want=$(sql_reads "$src")
bad=
for c in fc n p; do
	[ "$(sql_reads "${src}_$c")" = "$want" ] || bad+=" $c:reads"
	got=$(psql -X -At -v ON_ERROR_STOP=1 -d "${src}_$c" -c "SELECT prolly_put('main', 'k4', 'v4') IS NOT NULL" \
		-c "SELECT prolly_merge('dev', 'main') IS NOT NULL" -c "SELECT convert_from(prolly_get('dev', 'k4'), 'UTF8')" 2>&1 | paste -sd' ')
	[ "$got" = "t t v4" ] || bad+=" $c:writes($got)"
	cli "${src}_$c" verify dev >/dev/null 2>&1 || bad+=" $c:verify"
done
if [ "$rc" = 0 ] && [ -z "$bad" ] && [ -n "$want" ]; then
	ok "pg_dump -Fc, -n public -e prolly and plain, restored: the extension's functions read as on the source and write"
else
	tail -n 20 "$log" | sed 's/^/# /'
	not_ok "pg_dump and restore with the extension (rc=$rc:$bad)"
fi
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS ${src}" -c "DROP DATABASE IF EXISTS ${src}_fc" \
	-c "DROP DATABASE IF EXISTS ${src}_n" -c "DROP DATABASE IF EXISTS ${src}_p" >/dev/null 2>&1
rm -f "$log.fc" "$log.n" "$log.p"
# ---- 8b. across the database's life ----
source "$here/test_life.sh"
source "$here/test_txn.sh"
source "$here/test_nodesize.sh"
# ---- 9. a hot standby ----
if [ -n "$cluster" ]; then
	reads="SELECT prolly_get('main', 'k1'); SELECT * FROM prolly_get_many('conc', ARRAY['a', 'held', 'zz']::bytea[]);
SELECT * FROM prolly_scan('conc'); SELECT prolly_count('conc'); SELECT * FROM prolly_diff('main', 'conc');
SELECT * FROM prolly_log('conc', 5); SELECT * FROM prolly_branches(); SELECT prolly_resolve('conc~1');
SELECT * FROM prolly_tags(); SELECT value, message FROM prolly_history('conc', 'a');"
	q -c "$reads" >"$log.p" 2>&1
	lsn=$(q -c "SELECT pg_current_wal_lsn()")
	if env_lines=$("$top/scripts/pg-cluster.sh" standby "$cluster" 2>"$log"); then
		eval "$env_lines"
		sq() { PGHOST="$cluster/standby/sock" PGPORT="$PROLLY_PG_STANDBY_PORT" q "$@"; }
		for _ in $(seq 300); do
			[ "$(sq -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn" 2>/dev/null)" = t ] && break
			sleep 0.1
		done
		sq -c "$reads" >"$log.q" 2>&1
		if [ -s "$log.p" ] && ! grep -q ERROR "$log.p" && cmp -s "$log.p" "$log.q" && [ "$(sq -c "SELECT pg_is_in_recovery()")" = t ]; then
			ok "a hot standby: every read function gives the primary's answers"
		else
			diff "$log.p" "$log.q" | head -n 20 | sed 's/^/# /'
			not_ok "a hot standby: the read functions differ from the primary's"
		fi
		bad=
		for w in "prolly_put('conc', 'x', '1')" "prolly_delete('conc', 'a')" "prolly_branch('sb', 'main')" \
			"prolly_merge('conc', 'main')" "prolly_commit('conc', ARRAY['x']::bytea[], ARRAY['1']::bytea[])" \
			"prolly_tag('st', 'main')" "prolly_delete_tag('st')" "prolly_delete_branch('conc')" \
			"prolly_reset('conc', 'main')" "prolly_revert('conc', 'conc')" "prolly_cherry_pick('conc', 'main')"; do
			sq -c "\\set VERBOSITY verbose" -c "SELECT $w" >"$log.a" 2>&1 && bad+=" $w"
			grep -q '25006' "$log.a" || { bad+=" $w"; sed 's/^/# /' "$log.a"; }
		done
		if [ -z "$bad" ]; then
			ok "a hot standby: every write function fails with 25006"
		else
			not_ok "a hot standby: writes not refused with 25006:$bad"
		fi
	else
		sed 's/^/# /' "$log"
		not_ok "make a hot standby (scripts/pg-cluster.sh standby)"
	fi
	rm -f "$log.a" "$log.p" "$log.q"
fi
finish
