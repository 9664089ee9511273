#!/usr/bin/env bash
# tests/stress.sh - nothing acknowledged is lost while writers of every kind race on one branch.
#
# For each store (LMDB, then PostgreSQL on a throwaway cluster from scripts/pg-cluster.sh), for
# PROLLY_STRESS_SECONDS seconds (default 6), processes write to branch main at once, each key
# written by one writer only and its value derived from the key:
#   put1, put2  the CLI's put of one key per commit;
#   apply       the CLI's apply of 20 put lines per commit;
#   putdel      the CLI's put of a key, then its del;
#   merge       a side branch made from main, two keys put on it, merged into main (the CLI's
#               merge on LMDB, run again on a moved main up to 8 times, then exit 4; prolly_merge in SQL on
#               PostgreSQL, serialised by the branch's row), the side branch deleted during
#               the merge in every other round and after it in the others;
#   sqlput      prolly_put in SQL, one statement per key (PostgreSQL);
#   sqltxn      two writes in one explicit transaction: prolly_put and prolly_commit (PostgreSQL);
#   sqlpick     a side branch made in SQL, one key put on it, that commit cherry-picked onto main
#               (prolly_cherry_pick), main tagged and the tag deleted, the side branch deleted
#               (PostgreSQL);
#   sqlrange    three keys put by prolly_commit, then the first two deleted by prolly_delete_range
#               (PostgreSQL);
#   gc, gckeep  the CLI's gc with --reflog-days 0, and with --keep 2 every 2 s;
#   reflog      a reader: the CLI's reflog of main, and a get of main@{1} (what main named before
#               its last move, from the reflog that the gc above keeps expiring);
#   killer      pg_cancel_backend or pg_terminate_backend of a random client backend of the
#               store's database every 0.1-0.9 s (PostgreSQL);
#   sync        history copied while it is written: the LMDB store's main pushed to a
#               PostgreSQL mirror (a clone made before the run), and the PostgreSQL store
#               fetched into an LMDB copy (a clone too), in a loop.
# Then: every write a writer saw acknowledged (exit 0) is in main with its value, every
# acknowledged del's key is absent, verify passes on main, every writer landed something, no
# process exited with a status outside the documented ones or printed a sanitizer report, and
# after one last push or fetch the copy has main's root and verifies.
# The SQL writers need the extension installed in the server (make -C ext/postgres install);
# without it they are left out with a note, and under CI=true that is a failure.
#
# Environment: BUILD (default build), PROLLY_CLI (the CLI, default $BUILD/prolly),
# PROLLY_STRESS_SECONDS, PROLLY_STRESS_KEEP (non-empty: keep the scratch directory with the
# writers' logs, NAME.log and NAME.err per writer and store). TAP on stdout. Run from the top of
# the tree.
set -u

BUILD=${BUILD:-build}
CLI=${PROLLY_CLI:-$BUILD/prolly}
case "$CLI" in /*) ;; *) CLI="$PWD/$CLI" ;; esac
SECONDS_EACH=${PROLLY_STRESS_SECONDS:-6}
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

unset ${!PROLLY_PG_@} PGHOST PGPORT PGUSER PGDATABASE PGSERVICE
root=$(mktemp -d /tmp/prolly-stress.XXXXXX) || exit 2
out=$root/out
cleanup() {
	scripts/pg-cluster.sh stop "$root/pg" >/dev/null 2>&1
	if [ -n "${PROLLY_STRESS_KEEP:-}" ]; then echo "# kept: $root"; else rm -rf "$root"; fi
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres: "$root"

val() { printf 'v-%s' "$1"; }

# ---- the writers: each loops until $end, one line "STATUS KEY" per key it wrote to $W/NAME.log
# (for putdel "PUT_STATUS DEL_STATUS KEY"), and its stderr to $W/NAME.err ----
w_put() { # NAME
	local n=0 k
	while [ "$(date +%s)" -lt "$end" ]; do
		k="$1-$n" n=$((n + 1))
		"$CLI" --store "$S" put main "$k" "$(val "$k")" >/dev/null 2>>"$W/$1.err"
		echo "$? $k" >>"$W/$1.log"
	done
}
w_apply() {
	local n=0 j rc f
	while [ "$(date +%s)" -lt "$end" ]; do
		f=$W/apply.in
		for j in $(seq 20); do printf 'put\tapply-%s-%s\t%s\n' "$n" "$j" "$(val "apply-$n-$j")"; done >"$f"
		"$CLI" --store "$S" apply main "$f" >/dev/null 2>>"$W/apply.err"
		rc=$?
		for j in $(seq 20); do echo "$rc apply-$n-$j"; done >>"$W/apply.log"
		n=$((n + 1))
	done
}
w_putdel() {
	local n=0 k rc
	while [ "$(date +%s)" -lt "$end" ]; do
		k="putdel-$n" n=$((n + 1))
		"$CLI" --store "$S" put main "$k" "$(val "$k")" >/dev/null 2>>"$W/putdel.err"
		rc=$?
		"$CLI" --store "$S" del main "$k" >/dev/null 2>>"$W/putdel.err"
		echo "$rc $? $k" >>"$W/putdel.log"
	done
}
w_merge() {
	local n=0 b j rc p1 p2 race landed=0
	# Its rounds are several commands each: on a slow build (TSan) on a busy machine, the few that
	# fit in the run could each meet the killer, so until one merge has landed it goes on past the
	# run's end, alone then, for up to 30 s (CI's TSan step once saw "merge: nothing landed").
	while [ "$(date +%s)" -lt "$end" ] ||
		{ [ "$landed" = 0 ] && [ "$(date +%s)" -lt $((end + 30)) ]; }; do
		# In odd rounds (side1, side3, ...) the side branch is deleted while the merge reads it
		# (a gc may then take its nodes); on a slow build (TSan) the delete may win every such
		# race, so even rounds, side0 first, delete it only after the merge, and some merge lands.
		b="side$n" race=$((n % 2)) n=$((n + 1))
		"$CLI" --store "$S" branch "$b" main >/dev/null 2>>"$W/merge.err" || continue
		"$CLI" --store "$S" put "$b" "$b-1" "$(val "$b-1")" >/dev/null 2>>"$W/merge.err"
		p1=$?
		"$CLI" --store "$S" put "$b" "$b-2" "$(val "$b-2")" >/dev/null 2>>"$W/merge.err"
		p2=$?
		if [ "$race" = 1 ]; then
			{ sleep "0.0$((RANDOM % 10))"; "$CLI" --store "$S" branch -d "$b" >/dev/null 2>>"$W/merge.err"; } &
		fi
		if [ "$sql" = 1 ]; then
			sql_q -c "SELECT prolly_merge('main', '$b')" >/dev/null 2>>"$W/merge.err"
		else
			"$CLI" --store "$S" merge main "$b" >/dev/null 2>>"$W/merge.err"
		fi
		rc=$?
		if [ "$race" = 1 ]; then
			wait $!
		else
			"$CLI" --store "$S" branch -d "$b" >/dev/null 2>>"$W/merge.err"
		fi
		# a key whose put failed is not acknowledged, whatever the merge did
		[ "$rc" = 0 ] && { [ "$p1" = 0 ] || [ "$p2" = 0 ]; } && landed=1
		echo "$((rc ? rc : p1)) $b-1" >>"$W/merge.log"
		echo "$((rc ? rc : p2)) $b-2" >>"$W/merge.log"
	done
}
w_sqlput() {
	local n=0 k
	while [ "$(date +%s)" -lt "$end" ]; do
		k="sqlput-$n" n=$((n + 1))
		sql_q -c "SELECT prolly_put('main', '$k', '$(val "$k")')" >/dev/null 2>>"$W/sqlput.err"
		echo "$? $k" >>"$W/sqlput.log"
	done
}
w_sqltxn() {
	local n=0 rc
	while [ "$(date +%s)" -lt "$end" ]; do
		sql_q -c "BEGIN" -c "SELECT prolly_put('main', 'sqltxn-$n-1', '$(val "sqltxn-$n-1")')" \
			-c "SELECT prolly_commit('main', ARRAY['sqltxn-$n-2']::bytea[], ARRAY['$(val "sqltxn-$n-2")']::bytea[])" \
			-c "COMMIT" >/dev/null 2>>"$W/sqltxn.err"
		rc=$?
		printf '%s sqltxn-%s-1\n%s sqltxn-%s-2\n' "$rc" "$n" "$rc" "$n" >>"$W/sqltxn.log"
		n=$((n + 1))
	done
}
w_sqlrange() {
	local n=0 p rc rc2
	while [ "$(date +%s)" -lt "$end" ]; do
		p="sqlrange-$n" n=$((n + 1))
		sql_q -c "SELECT prolly_commit('main', ARRAY['$p-a', '$p-b', '$p-c']::bytea[],
			ARRAY['$(val "$p-a")', '$(val "$p-b")', '$(val "$p-c")']::bytea[])" >/dev/null 2>>"$W/sqlrange.err"
		rc=$?
		# [p-a, p-c): p-a and p-b, no key of another writer (nor sqlrange-1N-*: '-' < '0')
		sql_q -c "SELECT prolly_delete_range('main', '$p-a', '$p-c')" >/dev/null 2>>"$W/sqlrange.err"
		rc2=$?
		printf '%s %s %s-a\n%s %s %s-b\n' "$rc" "$rc2" "$p" "$rc" "$rc2" "$p" >>"$W/rangedel.log"
		echo "$rc $p-c" >>"$W/sqlrange.log"
	done
}
w_sqlpick() {
	local n=0 b rc
	while [ "$(date +%s)" -lt "$end" ]; do
		b="pick$n" n=$((n + 1))
		sql_q -c "SELECT prolly_branch('$b', 'main')" >/dev/null 2>>"$W/sqlpick.err" || continue
		sql_q -c "SELECT prolly_put('$b', 'sqlpick-$n', '$(val "sqlpick-$n")')" >/dev/null 2>>"$W/sqlpick.err"
		rc=$?
		# the put's commit applied onto main (a three-way merge on whatever main is then), the
		# result tagged and the tag deleted, the side branch deleted
		if [ "$rc" = 0 ]; then
			sql_q -c "SELECT prolly_cherry_pick('main', '$b')" >/dev/null 2>>"$W/sqlpick.err"
			rc=$?
		fi
		sql_q -c "SELECT prolly_tag('t$b', 'main')" -c "SELECT prolly_delete_tag('t$b')" \
			>/dev/null 2>>"$W/sqlpick.err"
		sql_q -c "SELECT prolly_delete_branch('$b')" >/dev/null 2>>"$W/sqlpick.err"
		echo "$rc sqlpick-$n" >>"$W/sqlpick.log"
	done
}
w_gc() { # NAME [gc options]
	# The killer may cut every run of a gc that starts only every 2 s (seen: all three of a
	# run's). So a failed gc is retried after 0.3 s, and one that has not yet landed may go on
	# for up to 20 s after the end, when the killer has stopped: "landed" must then hold.
	local name=$1 rc landed=""
	shift
	while [ "$(date +%s)" -lt "$end" ] || { [ -z "$landed" ] && [ "$(date +%s)" -lt $((end + 20)) ]; }; do
		"$CLI" --store "$S" gc --reflog-days 0 "$@" >/dev/null 2>>"$W/$name.err"
		rc=$?
		echo "$rc" >>"$W/$name.log"
		[ "$rc" = 0 ] && landed=1
		sleep "$([ $# = 0 ] || [ "$rc" != 0 ] && echo 0.3 || echo 2)"
	done
}
w_sync() { # push REMOTE | fetch REMOTE (from the copy): history copied while it is written
	while [ "$(date +%s)" -lt "$end" ]; do
		if [ "$1" = push ]; then
			"$CLI" --store "$S" push "$2" main >/dev/null 2>>"$W/sync.err"
		else
			"$CLI" --store "$copy" fetch "$2" >/dev/null 2>>"$W/sync.err"
		fi
		echo "$?" >>"$W/sync.log"
	done
}
w_reflog() { # one line "REFLOG_STATUS GET_STATUS -" per round
	local rc
	while [ "$(date +%s)" -lt "$end" ]; do
		"$CLI" --store "$S" reflog main >/dev/null 2>>"$W/reflog.err"
		rc=$?
		"$CLI" --store "$S" get 'main@{1}' put1-0 >/dev/null 2>>"$W/reflog.err"
		echo "$rc $? -" >>"$W/reflog.log"
	done
}
w_killer() {
	local how
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep "0.$((RANDOM % 9 + 1))"
		how=$([ $((RANDOM % 2)) = 0 ] && echo cancel || echo terminate)
		sql_q -c "SELECT pg_${how}_backend(pid) FROM pg_stat_activity WHERE datname = 'stress'
			AND pid <> pg_backend_pid() AND backend_type = 'client backend'
			ORDER BY random() LIMIT 1" >/dev/null 2>>"$W/killer.err"
		echo "$?" >>"$W/killer.log"
	done
}

# ---- the checks ----
# allowed STATUS...: the exit statuses a writer may see in this run (others are failures).
check_run() { # STORE-NAME, then the allowed statuses
	local name=$1 bad="" lost=0 acked=0 f w st k v rc rc2
	shift
	local allowed=" $* "
	declare -A have=()
	if ! "$CLI" --store "$S" scan main >"$W/final" 2>"$out"; then
		not_ok "$name: main can be read after the run"
		return
	fi
	while IFS=$'\t' read -r k v; do have[$k]=$v; done <"$W/final"
	: >"$out"
	for f in "$W"/*.log; do
		w=$(basename "$f" .log)
		case $w in gc | gckeep | killer | sync | reflog) continue ;; putdel | rangedel) ;; *)
			while read -r rc k; do
				[ "$rc" = 0 ] || continue
				acked=$((acked + 1))
				[ "${have[$k]-}" = "$(val "$k")" ] || { lost=$((lost + 1)); echo "$w: $k acknowledged, missing or wrong" >>"$out"; }
			done <"$f"
			;;
		esac
	done
	# the deleters' logs: a put's status, then its del's (or range delete's), then the key
	while read -r rc rc2 k; do
		if [ "$rc2" = 0 ] && [ -n "${have[$k]+x}" ]; then
			lost=$((lost + 1))
			echo "$k deleted (acknowledged), present" >>"$out"
		elif [ "$rc" = 0 ] && [ "$rc2" != 0 ] && [ "${have[$k]-}" != "$(val "$k")" ]; then
			lost=$((lost + 1))
			echo "$k put (acknowledged), its del failed ($rc2), missing" >>"$out"
		fi
	done < <(cat "$W/putdel.log" "$W"/rangedel.log 2>/dev/null)
	if [ "$lost" -gt 20 ]; then
		head -n 20 "$out" >"$out.head"
		echo "... and $((lost - 20)) more" >>"$out.head"
		mv "$out.head" "$out"
	fi
	if [ "$lost" = 0 ]; then ok "$name: all $acked acknowledged writes are in main, every acknowledged del is absent"; else not_ok "$name: $lost acknowledged writes lost"; fi

	check "$name: verify main" "$CLI" --store "$S" verify main

	: >"$out"
	for f in "$W"/*.log; do
		w=$(basename "$f" .log)
		for st in $(awk '{ print $1; if (NF == 3) print $2 }' "$f" | sort -u); do
			# the reader's main@{1} may also find the entries that tell it expired (2)
			case "$allowed$([ "$w" = reflog ] && echo '2 ')" in *" $st "*) ;; *) echo "$w: exit status $st" >>"$out"; bad=1 ;; esac
		done
		[ "$w" = killer ] || awk '$1 == 0 { found = 1 } END { exit !found }' "$f" || { echo "$w: nothing landed" >>"$out"; bad=1; }
	done
	if grep -l -e 'Sanitizer' -e 'runtime error' "$W"/*.err >>"$out" 2>/dev/null; then bad=1; fi
	if [ -z "$bad" ]; then
		ok "$name: every writer landed writes; exit statuses only $*; no sanitizer report"
	else
		not_ok "$name: writers' statuses and reports"
		for f in "$W"/*.err; do [ -s "$f" ] && sed "s|^|$(basename "$f"): |" "$f" | sort | uniq -c | sort -rn | head -n 3 | sed 's/^/# /'; done
	fi
}

# run_store NAME: the writers for $SECONDS_EACH seconds on $S, then the checks.
run_store() {
	local name=$1 pids=()
	W=$root/$name
	mkdir -p "$W"
	end=$(($(date +%s) + SECONDS_EACH))
	w_put put1 & pids+=($!)
	w_put put2 & pids+=($!)
	w_apply & pids+=($!)
	w_putdel & pids+=($!)
	w_merge & pids+=($!)
	w_gc gc & pids+=($!)
	w_gc gckeep --keep 2 & pids+=($!)
	w_reflog & pids+=($!)
	if [ "$sql" = 1 ]; then
		w_sqlput & pids+=($!)
		w_sqltxn & pids+=($!)
		w_sqlpick & pids+=($!)
		w_sqlrange & pids+=($!)
	fi
	if [ "$name" = postgres ]; then
		w_killer & pids+=($!)
		w_sync fetch origin & pids+=($!)
	else
		w_sync push mirror & pids+=($!)
	fi
	wait "${pids[@]}"
}

# check_sync NAME URL BRANCH (of the copy) COMMAND...: once the writers stopped, the copy's
# COMMAND (a push or a fetch) completes and the copy then has main's root and verifies.
check_sync() {
	local name=$1 url=$2 branch=$3 a b
	shift 3
	if ! "$@" >"$out" 2>&1; then
		# what the source holds, to see which ref names what is missing
		{ "$CLI" --store "$S" branches; "$CLI" --store "$S" verify --all; } >>"$out" 2>&1
		not_ok "$name: the last sync after the run"
		return
	fi
	a=$("$CLI" --store "$S" root main 2>>"$out")
	b=$("$CLI" --store "$url" root "$branch" 2>>"$out")
	if [ -n "$a" ] && [ "$a" = "$b" ] && "$CLI" --store "$url" verify "$branch" >>"$out" 2>&1; then
		ok "$name: the copy synced during the run has main's root after a last sync, and verifies"
	else
		not_ok "$name: the copy synced during the run (main $a, the copy's $branch $b)"
	fi
}

# ---- the server of the PostgreSQL runs, and of the LMDB run's mirror ----
if ! scripts/pg-cluster.sh start "$root/pg" >"$root/pg.env" 2>"$out"; then
	not_ok "a throwaway cluster starts"
	echo "# $n tests, $failed failed"
	exit 1
fi
. "$root/pg.env"
pg_url() { echo "postgresql://postgres@/$1?host=$PROLLY_PG_DIR/sock&port=$PROLLY_PG_PORT"; }
"$PROLLY_PG_BIN/psql" -X -q -d "$PROLLY_PG_URL" -c "CREATE DATABASE stress" -c "CREATE DATABASE mirror" >"$out" 2>&1

# ---- LMDB: processes sharing one environment, main pushed to a PostgreSQL mirror meanwhile ----
S=lmdb:$root/lmdb
sql=0
if "$CLI" --store "$S" init >"$out" 2>&1 && "$CLI" clone "$S" "$(pg_url mirror)" >>"$out" 2>&1 &&
	"$CLI" --store "$S" remote add mirror "$(pg_url mirror)" >>"$out" 2>&1 &&
	"$CLI" --store "$S" push mirror main >>"$out" 2>&1; then
	# (that first push gives this store the mirror's head as mirror/main, which gc keeps with
	# the history from it to main: without it a gc --keep before the first push would leave
	# nothing here to show the mirror's head an ancestor of main, and every push would fail)
	run_store lmdb
	# a merge may lose its race 8 times over (4), a push too (a gc on the source three times); a merge
	# whose side branch was deleted before it read it finds no branch (1)
	check_run lmdb 0 1 4
	check_sync lmdb "$(pg_url mirror)" main "$CLI" --store "$S" push mirror main
else
	not_ok "lmdb: init, and a clone to the mirror"
fi

# ---- PostgreSQL: the CLI and SQL, with backends cancelled and terminated ----
sql_q() { "$PROLLY_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$(pg_url stress)" "$@"; }
S=$(pg_url stress)
copy=lmdb:$root/copy
sql=0
if "$CLI" --store "$S" init >"$out" 2>&1 && "$CLI" clone "$S" "$copy" >>"$out" 2>&1; then
	if sql_q -c "CREATE EXTENSION prolly SCHEMA public" >>"$out" 2>&1; then
		sql=1
	elif [ "${CI:-}" = true ]; then
		not_ok "postgres: CREATE EXTENSION prolly (make -C ext/postgres install)"
	else
		echo "# note: the extension is not installed in this server: the SQL writers are left out"
	fi
	run_store postgres
	# a cancelled or terminated backend: the CLI's store error (5), psql's error (1) or lost
	# connection (2); a lost race (4)
	check_run postgres 0 1 2 4 5
	check_sync postgres "$copy" origin/main "$CLI" --store "$copy" fetch origin
else
	not_ok "postgres: init, and a clone of it to LMDB"
fi
echo "# $n tests, $failed failed"
[ "$failed" = 0 ]
