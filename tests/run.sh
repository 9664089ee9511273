#!/usr/bin/env bash
# tests/run.sh - runs every test program given, then the CLI golden tests (tests/cli/run.sh, if it
# exists, given the CLI's path). Counts TAP "ok"/"not ok" lines; a program that exits non-zero,
# crashes, times out or prints a sanitizer report without a failing test counts as one failure.
# A failing program's output is shown (all but its "ok" lines). The last line is always
# "N passed, N failed"; the exit status is non-zero if anything failed.
#
# Programs run TEST_JOBS at a time (each with its own TMPDIR); results are printed in the order
# given, each with its wall time.
#
# Environment: BUILD (build dir, default build), PROLLY_CLI (CLI path, default $BUILD/prolly),
# TEST_TIMEOUT (seconds per program, default 600; 0 = none), TEST_JOBS (programs at once, default
# one more than the CPUs: many programs wait on their servers, children and timeouts, and with one
# per CPU the CPUs were 87% busy in make test, 92% under ASan; with one more, 95%), SAN (non-empty: sanitizer build), TEST_CLI (0: leave the CLI golden tests
# out), TEST_FIRST (names of jobs to start first, longest first: see the order below),
# TEST_SHARED_PG (0: no shared server, below), TEST_OWN_PG (names of the programs that start
# a server of their own even so).
#
# One PostgreSQL server for the run: with PROLLY_PG_URL unset, a throwaway cluster
# (scripts/pg-cluster.sh) is started before the jobs and stopped at the end, and every test
# program gets a database of its own on it, named after the program (`pg-cluster.sh database`:
# PROLLY_PG_URL and PROLLY_PG_PW_URL name it), but for those TEST_OWN_PG names: they restart,
# crash or replicate their server, and start their own. The scripts (*.sh) and the CLI golden
# tests see the environment as it was (they start a server of their own). A cluster's start and
# stop cost about 2.4 s of CPU with the server's, a database 0.1 s; the suite started 22 clusters
# for its programs. If the shared start fails, each program starts its own, as it does alone.
set -u

BUILD=${BUILD:-build}
CLI=${PROLLY_CLI:-$BUILD/prolly}
case "$CLI" in /*) ;; *) CLI="$PWD/$CLI" ;; esac
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
TEST_JOBS=${TEST_JOBS:-$(($(nproc 2>/dev/null || echo 1) + 1))}
SAN=${SAN:-}
TEST_CLI=${TEST_CLI:-1}

passed=0 failed=0
failed_names=()

# The server's own bin directory first in PATH, so that the programs and scripts find the psql,
# pg_dump and pgbench of the server they test, and not Debian's /usr/bin wrappers of them: each of
# those is a Perl script that costs about 40 ms of CPU a call (make test makes some 280 such calls).
if [ -x scripts/pg-cluster.sh ] && pg_bin=$(scripts/pg-cluster.sh bin 2>/dev/null); then
	export PATH="$pg_bin:$PATH"
fi

TEST_SHARED_PG=${TEST_SHARED_PG:-1}
TEST_OWN_PG=${TEST_OWN_PG:-}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/prolly-tests.XXXXXX") || exit 2
pg_dir="" pg_start_failed=""
cleanup() {
	if [ -n "$pg_dir" ]; then scripts/pg-cluster.sh stop "$pg_dir" >/dev/null 2>&1; fi
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# LeakSanitizer refuses to run under ptrace (strace, gdb, some sandboxes). Detect that up front
# and turn leak detection off with a note rather than failing every program.
if [ -n "$SAN" ]; then
	tracer=$(awk '/^TracerPid:/ {print $2}' /proc/$$/status 2>/dev/null || echo 0)
	if [ "${tracer:-0}" != 0 ]; then
		echo "# note: running under a tracer (pid $tracer): LeakSanitizer disabled"
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	fi
fi

have_timeout=0
if [ "$TEST_TIMEOUT" != 0 ] && command -v timeout >/dev/null 2>&1; then have_timeout=1; fi

# The time limit of job ID: TEST_TIMEOUT, but for the CLI golden tests, a suite of many cases
# (minutes under the sanitizers on a busy machine), where tests/cli/run.sh applies TEST_TIMEOUT to
# each case and this limit (4 times it) only catches a runner that hangs.
limit_of() {
	if [ "$1" = cli ]; then echo $((TEST_TIMEOUT * 4)); else echo "$TEST_TIMEOUT"; fi
}

# run_one ID CMD... : runs CMD in its own TMPDIR with the timeout; writes $scratch/ID.out (stdout
# and stderr), ID.rc (exit status) and ID.sec (wall seconds).
run_one() {
	local id=$1 rc t0 t1
	shift
	local dir="$scratch/tmp-$id"
	mkdir -p "$dir"
	t0=$(date +%s%N)
	# The braces' 2>/dev/null only hides bash's own "Segmentation fault" notice; account() reports it.
	if [ "$have_timeout" = 1 ]; then
		{ TMPDIR="$dir" timeout -k 10 "$(limit_of "$id")" "$@" >"$scratch/$id.out" 2>&1 </dev/null; } 2>/dev/null
	else
		{ TMPDIR="$dir" "$@" >"$scratch/$id.out" 2>&1 </dev/null; } 2>/dev/null
	fi
	rc=$?
	t1=$(date +%s%N)
	echo "$rc" >"$scratch/$id.rc"
	echo $(((t1 - t0) / 1000000)) | awk '{printf "%.1f\n", $1 / 1000}' >"$scratch/$id.sec"
	rm -rf "$dir"
}

# account ID NAME : counts ID's results, prints the per-program line (and the output on failure).
account() {
	local id=$1 name=$2 p f why="" out="$scratch/$1.out" rc sec
	rc=$(cat "$scratch/$id.rc")
	sec=$(cat "$scratch/$id.sec")
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^not ok ' "$out")
	if [ "$rc" = 124 ] && [ "$have_timeout" = 1 ]; then
		why="timed out after $(limit_of "$id")s"
	elif [ "$rc" -ge 128 ]; then
		why="crashed: signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
	elif [ "$rc" -ne 0 ]; then
		why="exit status $rc"
	fi
	if grep -qE 'ERROR: (Address|Leak|UndefinedBehavior|Thread|Memory)Sanitizer|WARNING: ThreadSanitizer|: runtime error: ' "$out"; then
		why="${why:+$why; }sanitizer report"
	fi
	if [ "${CI:-}" = true ] && [ -f "$scratch/$id.nodb" ]; then
		why="${why:+$why; }no database on the shared server: $(tail -n 1 "$scratch/$id.nodb")"
	fi
	if [ -n "$why" ] && [ "$f" -eq 0 ]; then f=1; fi
	if [ "$f" -ne 0 ]; then
		echo "---- $name output ----"
		grep -v '^ok ' "$out"
		echo "---- end of $name output ----"
		failed_names+=("$name")
	fi
	echo "$name: $p passed, $f failed (${sec}s${why:+; $why})"
	# The CLI golden suite names its slowest cases: where a slow run's time went.
	if [ "$id" = cli ]; then grep '^# slowest: ' "$out" | sed 's/^# /  cli /'; fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# The shared server (see the top): its directory in pg_dir; nothing here exports its URLs.
if [ "$TEST_SHARED_PG" != 0 ] && [ -z "${PROLLY_PG_URL:-}" ] && [ -x scripts/pg-cluster.sh ]; then
	if env_lines=$(scripts/pg-cluster.sh start 2>"$scratch/pg-start.err"); then
		pg_dir=$(eval "$env_lines" && echo "${PROLLY_PG_DIR:-}")
	fi
	if [ -z "$pg_dir" ]; then
		echo "# note: no shared PostgreSQL server ($(tail -n 1 "$scratch/pg-start.err")):" \
			"each program starts its own"
		# Under CI=true that is a failure (below), as a skip is: it would hide a broken script.
		pg_start_failed=$(tail -n 1 "$scratch/pg-start.err")
	fi
fi

# share_pg I: when job I gets the shared server (a program, not a script nor the CLI golden
# tests, that TEST_OWN_PG does not name), exports the URLs of a new database on it named after
# the program. Called in the job's subshell. If the database cannot be made, the program starts
# a server of its own.
share_pg() {
	local name=${names[$1]} err="$scratch/${ids[$1]}.db.err" db env_lines
	[ -n "$pg_dir" ] && [ "${ids[$1]}" != cli ] || return 0
	case "$name" in *.sh) return 0 ;; esac
	case " $TEST_OWN_PG " in *" $name "*) return 0 ;; esac
	db=$(printf '%s' "$name" | tr -c 'a-z0-9_' _ | cut -c1-63)
	if env_lines=$(scripts/pg-cluster.sh database "$pg_dir" "$db" 2>"$err"); then
		eval "$env_lines"
	else
		echo "# note: $name starts a server of its own: $(tail -n 1 "$err")" >&2
		cp "$err" "$scratch/${ids[$1]}.nodb" # account() reads it
	fi
}

# The jobs: id, display name, command (the CLI golden tests last).
ids=() names=() cmds=()
n=0
for t in "$@"; do
	n=$((n + 1))
	ids+=("p$n")
	names+=("$(basename "$t")")
	cmds+=("$t")
done
if [ -f tests/cli/run.sh ] && [ "$TEST_CLI" != 0 ]; then
	ids+=(cli)
	names+=(cli)
	cmds+=("$CLI")
fi

start_job() {
	local i=$1
	local id=${ids[$i]} cmd=${cmds[$i]}
	if [ "$id" = cli ]; then
		[ -x "$cmd" ] || return 0
		CASE_TIMEOUT=$TEST_TIMEOUT run_one "$id" bash tests/cli/run.sh "$cmd"
	else
		[ -x "$cmd" ] || return 0
		share_pg "$i" # a job runs in a subshell of its own: the exports stay there
		run_one "$id" "$cmd"
	fi
}

# Run them, at most TEST_JOBS at once, the long ones first so that the slots end together rather
# than one waiting alone on the last long job: the CLI golden tests (the longest job), then the
# jobs TEST_FIRST names (basenames, in its order), then the rest in the order given.
order=()
for i in "${!ids[@]}"; do
	[ "${ids[$i]}" = cli ] && order+=("$i")
done
for first in ${TEST_FIRST:-}; do
	for i in "${!ids[@]}"; do
		[ "${ids[$i]}" != cli ] && [ "${names[$i]}" = "$first" ] && order+=("$i")
	done
done
for i in "${!ids[@]}"; do
	case " cli ${TEST_FIRST:-} " in *" ${names[$i]} "*) continue ;; esac
	order+=("$i")
done
running=0
for i in "${order[@]}"; do
	if [ "$running" -ge "$TEST_JOBS" ]; then
		wait -n 2>/dev/null || true
		running=$((running - 1))
	fi
	start_job "$i" &
	running=$((running + 1))
done
wait

for i in "${!ids[@]}"; do
	id=${ids[$i]} name=${names[$i]} cmd=${cmds[$i]}
	if [ ! -x "$cmd" ]; then
		if [ "$id" = cli ]; then
			echo "cli: 0 passed, 1 failed (CLI not built: $cmd)"
		else
			echo "$name: 0 passed, 1 failed (not built: $cmd)"
		fi
		failed=$((failed + 1))
		failed_names+=("$name")
		continue
	fi
	if [ -n "$SAN" ] && grep -q 'LeakSanitizer does not work under ptrace' "$scratch/$id.out"; then
		echo "# note: $name: LeakSanitizer cannot run here (ptrace); rerunning without leak detection"
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		(pg_dir="" && start_job "$i") # its database exists: a server of its own this time
	fi
	account "$id" "$name"
done

if [ "${CI:-}" = true ] && [ -n "$pg_start_failed" ]; then
	echo "shared-pg: 0 passed, 1 failed (the shared server did not start: $pg_start_failed)"
	failed=$((failed + 1))
	failed_names+=(shared-pg)
fi
if [ "${#failed_names[@]}" -gt 0 ]; then
	echo "# failing: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
