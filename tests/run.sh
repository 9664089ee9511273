#!/usr/bin/env bash
# tests/run.sh - runs every test program given, then the CLI golden tests (tests/cli/run.sh, if it
# exists, given the CLI's path). Counts TAP "ok"/"not ok" lines; a program that exits non-zero,
# crashes, times out or prints a sanitizer report without a failing test counts as one failure.
# A failing program's output is shown (all but its "ok" lines). The last line is always
# "N passed, N failed"; the exit status is non-zero if anything failed.
#
# Environment: BUILD (build dir, default build), PROLLY_CLI (CLI path, default $BUILD/prolly),
# TEST_TIMEOUT (seconds per program, default 600; 0 = none), SAN (non-empty: sanitizer build).
set -u

BUILD=${BUILD:-build}
CLI=${PROLLY_CLI:-$BUILD/prolly}
case "$CLI" in /*) ;; *) CLI="$PWD/$CLI" ;; esac
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
SAN=${SAN:-}

passed=0 failed=0
failed_names=()

# Every test gets its own scratch area through TMPDIR; removed at the end.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/prolly-tests.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
out="$scratch/out"

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

# run_capture NAME CMD... : runs CMD with the timeout, output (stdout+stderr) into $out; sets rc.
run_capture() {
	local name=$1
	shift
	local dir="$scratch/tmp-$name"
	mkdir -p "$dir"
	# The braces' 2>/dev/null only hides bash's own "Segmentation fault" notice; account() reports it.
	if [ "$have_timeout" = 1 ]; then
		{ TMPDIR="$dir" timeout -k 10 "$TEST_TIMEOUT" "$@" >"$out" 2>&1 </dev/null; } 2>/dev/null
	else
		{ TMPDIR="$dir" "$@" >"$out" 2>&1 </dev/null; } 2>/dev/null
	fi
	rc=$?
	rm -rf "$dir"
}

# account NAME : counts $out and $rc, prints the per-program line (and the output on failure).
account() {
	local name=$1 p f why=""
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^not ok ' "$out")
	if [ "$rc" = 124 ] && [ "$have_timeout" = 1 ]; then
		why="timed out after ${TEST_TIMEOUT}s"
	elif [ "$rc" -ge 128 ]; then
		why="crashed: signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
	elif [ "$rc" -ne 0 ]; then
		why="exit status $rc"
	fi
	if grep -qE 'ERROR: (Address|Leak|UndefinedBehavior|Thread|Memory)Sanitizer|: runtime error: ' "$out"; then
		why="${why:+$why; }sanitizer report"
	fi
	if [ -n "$why" ] && [ "$f" -eq 0 ]; then f=1; fi
	if [ "$f" -ne 0 ]; then
		echo "---- $name output ----"
		grep -v '^ok ' "$out"
		echo "---- end of $name output ----"
		failed_names+=("$name")
	fi
	echo "$name: $p passed, $f failed${why:+ ($why)}"
	passed=$((passed + p))
	failed=$((failed + f))
}

for t in "$@"; do
	name=$(basename "$t")
	if [ ! -x "$t" ]; then
		echo "$name: 0 passed, 1 failed (not built: $t)"
		failed=$((failed + 1))
		failed_names+=("$name")
		continue
	fi
	run_capture "$name" "$t"
	if [ -n "$SAN" ] && grep -q 'LeakSanitizer does not work under ptrace' "$out"; then
		echo "# note: $name: LeakSanitizer cannot run here (ptrace); rerunning without leak detection"
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		run_capture "$name" "$t"
	fi
	account "$name"
done

if [ -f tests/cli/run.sh ]; then
	if [ -x "$CLI" ]; then
		run_capture cli bash tests/cli/run.sh "$CLI"
		if [ -n "$SAN" ] && grep -q 'LeakSanitizer does not work under ptrace' "$out"; then
			echo "# note: cli: LeakSanitizer cannot run here (ptrace); rerunning without leak detection"
			export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
			run_capture cli bash tests/cli/run.sh "$CLI"
		fi
		account cli
	else
		echo "cli: 0 passed, 1 failed (CLI not built: $CLI)"
		failed=$((failed + 1))
		failed_names+=(cli)
	fi
fi

if [ "${#failed_names[@]}" -gt 0 ]; then
	echo "# failing: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
