#!/usr/bin/env bash
# tests/harness/smoke.sh - the benchmark harness end to end, as CI runs it (.ci/run).
#
# Runs the smoke workload through scripts/run_postgres_scale_benchmark.sh (which starts and stops
# its own throwaway PostgreSQL cluster), then checks the result directory: every file present,
# every row validated; a second invocation measures nothing and skips every completed cell; a
# different --revision is refused and leaves the manifest and rows unchanged; a bad workload file
# is rejected with its line named; an output path the harness cannot use (read-only, missing
# for --compare-only), a --baseline that is not a directory and a memory-store size beyond the
# machine's memory exit 2; each regression gate trips on a doctored comparison, and an
# environment mismatch is refused unless allowed. Last line: "N passed, N failed".
#
# The suites checked are those the harness runs for smoke.toml (`--dry-run`: every suite with
# cells); for each one, NAME-raw.csv and NAME-summary.csv must exist with rows, every raw row
# validated, report.md must hold a "## ..." heading naming the suite, an unknown key of its
# section must be refused, and after an identical baseline every relative_qps (if the suite
# reports one) must be 1. A new suite is checked by giving it a section in smoke.toml.
#
#   bash tests/harness/smoke.sh [BUILD]     (BUILD: the build directory, default build)
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export BUILD=${1:-${BUILD:-build}}
script="$root/scripts/run_postgres_scale_benchmark.sh"
harness="$root/$BUILD/bench/harness"
smoke="$root/bench/workloads/smoke.toml"
work=$(mktemp -d /tmp/prolly-harness-smoke.XXXXXX)
out="$work/out"
passed=0 failed=0
trap 'rm -rf "$work"' EXIT

ok() { passed=$((passed + 1)); echo "ok   - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

# Column NAME's values (data rows) of a CSV without quoted commas (summary files).
col() {
	awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
		c { print $c }' "$1"
}
# Rewrites column NAME of every data row of FILE with awk expression EXPR of v (the old value).
doctor() {
	local file=$1 name=$2 expr=$3
	awk -F, -v OFS=, -v name="$name" "NR == 1 { for (i = 1; i <= NF; i++) if (\$i == name) c = i; print; next }
		c && \$c != \"\" { v = \$c + 0; \$c = $expr } { print }" "$file" >"$file.tmp" && mv "$file.tmp" "$file"
}
# Rows of a raw CSV (quoted fields may hold commas: count lines that start a row with a cell id).
rows_of() { tail -n +2 "$1" | grep -c '^[A-Za-z0-9_"]' || true; }
# Data lines of a summary CSV (one line per row).
lines_of() { tail -n +2 "$1" | grep -c . || true; }
rel_all_one() { # every relative_qps in FILE is 1, and there is at least one
	gawk -v FPAT='([^,]*)|("([^"]|"")*")' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "relative_qps") c = i; next }
		c && $c != "" { n++; if ($c + 0 != 1) bad = 1 } END { exit bad || !n }' "$1"
}
all_validated() { # every value of column "validated" in FILE is 1, and there is at least one row (gawk: FPAT)
	local f=$1 vals
	vals=$(gawk -v FPAT='([^,]*)|("([^"]|"")*")' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "validated") c = i; next }
		c { print $c }' "$f")
	[ -n "$vals" ] && ! grep -qv '^1$' <<<"$vals"
}

echo "# building"
if ! make -C "$root" -s BUILD="$BUILD" "$BUILD/bench/harness" >"$work/build.log" 2>&1; then
	cat "$work/build.log"
	bad "build the harness"
	echo "$passed passed, $failed failed"
	exit 1
fi
ok "build the harness"

# ---- 1. the smoke profile, end to end ----------------------------------------------------------
# The scale suite's pg-sql rows need the prolly extension in the server's directories: installed
# here when we may (root; `make test` has done it already in CI), else it must be installed.
if [ "$(id -u)" = 0 ]; then
	make --no-print-directory -s -C "$root/ext/postgres" BUILD="${BUILD:-build}" install >"$work/ext.log" 2>&1 ||
		echo "# make -C ext/postgres install failed: $(tail -n 3 "$work/ext.log")"
fi
# The suites the smoke profile runs, in run order: "# cells: service 4, scale 18, ..." of
# --dry-run, those with at least one cell.
suites=$("$harness" --config "$smoke" --dry-run 2>/dev/null | sed -n 's/^# cells: //p' |
	tr ',' '\n' | awk '$2 > 0 { print $1 }')
echo "# suites: $(echo $suites)"
check "the smoke profile runs suites" test -n "$suites"

echo "# run 1: smoke profile (every suite, throwaway cluster)"
start=$(date +%s)
"$script" --config "$smoke" --suite all --output "$out" >"$work/run1.out" 2>"$work/run1.err"
rc=$?
tail -n 5 "$work/run1.err"
echo "# run 1 took $(($(date +%s) - start)) s"
check "run 1 exits 0 (got $rc)" test "$rc" -eq 0
for f in workload.toml resolved-workload.toml run-manifest.txt machine.txt postgres.txt \
	dependencies.txt binary.sha256 report.md service-throughput.svg service-p99.svg; do
	check "result file $f" test -s "$out/$f"
done
check "workload.toml is the file as given" cmp -s "$smoke" "$out/workload.toml"
check "the manifest lists the suites run" \
	test "$(sed -n 's/^suites: //p' "$out/run-manifest.txt")" = "$(echo $suites | tr ' ' ',')"
for s in $suites; do
	check "$s: $s-raw.csv has rows" test "$(rows_of "$out/$s-raw.csv" 2>/dev/null)" -ge 1
	check "$s: $s-summary.csv has rows" test "$(lines_of "$out/$s-summary.csv" 2>/dev/null)" -ge 1
	check "$s: every raw row validated" all_validated "$out/$s-raw.csv"
	check "$s: a report section" grep -qiE "^## .*\b$s\b" "$out/report.md"
done
check "per-cell service charts" compgen -G "$out/service-cell-*.svg"
srows=$(rows_of "$out/service-raw.csv")
check "24 service rows: 2 x 2 cells (access client and sql) x (5 classes + all) (got $srows)" \
	test "$srows" -eq 24
# access = "sql": one statement of the extension per operation, on each of its 12 rows.
sql_spo=$(gawk -v FPAT='([^,]*)|("([^"]|"")*")' 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "access") a = i;
	if ($i == "statements_per_op") s = i }; next } a && $a == "sql" { print $s }' "$out/service-raw.csv")
check "12 sql service rows, each 1 statement per operation (make -C ext/postgres install)" \
	bash -c '[ "$(grep -c . <<<"$1")" -eq 12 ] && ! grep -qv "^1$" <<<"$1"' _ "$sql_spo"
check "sql cells in the summary" grep -q '^c4-p2-sql,' "$out/service-summary.csv"
check "scale rows present" test "$(rows_of "$out/scale-raw.csv")" -ge 20
# The extension beside the C client: get_warm, query, scan, and batch, put, diff per pattern.
sqlrows=$(grep -c ',pg-sql,' "$out/scale-raw.csv" || true)
check "12 pg-sql rows of the prolly extension (got $sqlrows; make -C ext/postgres install)" \
	test "$sqlrows" -eq 12
check "manifest has an end time" grep -Eq '^finished: [0-9]{4}-' "$out/run-manifest.txt"
check "no password or URL in the results" bash -c "! grep -rqiE 'password=|postgres(ql)?://' '$out'"
spo=$(col "$out/service-summary.csv" statements_per_op | head -n 1)
echo "# statements per service operation (first cell): $spo"
check "statements per service operation recorded ($spo)" grep -qE '^[0-9.]+(e[-+]?[0-9]+)?$' <<<"$spo"

# ---- 2. resume: a second invocation measures nothing ---------------------------------------------
# The same suites named one by one, last first: the same run (the harness orders them).
echo "# run 2: resume"
sha_before=$(cat "$out"/*-raw.csv | sha256sum)
list=$(echo $suites | tr ' ' '\n' | tac | paste -sd,)
"$script" --config "$smoke" --suite "$list" --output "$out" >"$work/run2.out" 2>"$work/run2.err"
rc=$?
tail -n 2 "$work/run2.err"
check "run 2 exits 0 (got $rc)" test "$rc" -eq 0
check "run 2 measured 0 cells" grep -q 'measured 0 cells' "$work/run2.err"
check "run 2 skipped every cell" grep -Eq 'skipped [1-9][0-9]* completed cells' "$work/run2.err"
check "raw rows unchanged by run 2" test "$sha_before" = "$(cat "$out"/*-raw.csv | sha256sum)"

# ---- 3. another revision is refused, nothing touched ---------------------------------------------
echo "# run 3: mismatched revision"
man_before=$(sha256sum <"$out/run-manifest.txt")
"$script" --config "$smoke" --suite all --output "$out" --revision not-this-one \
	>"$work/run3.out" 2>"$work/run3.err"
rc=$?
tail -n 1 "$work/run3.err"
check "mismatched revision exits 3 (got $rc)" test "$rc" -eq 3
check "refusal names the revision" grep -q 'revision' "$work/run3.err"
check "manifest unchanged" test "$man_before" = "$(sha256sum <"$out/run-manifest.txt")"
check "raw rows unchanged" test "$sha_before" = "$(cat "$out"/*-raw.csv | sha256sum)"

# ---- 4. a bad workload file is rejected with its line ---------------------------------------------
echo "# bad workload files"
sed 's/^duration_ms *=.*/duration_msec = 2000/' "$smoke" >"$work/bad1.toml"
line=$(grep -n '^duration_msec' "$work/bad1.toml" | cut -d: -f1)
"$harness" --config "$work/bad1.toml" --output "$work/bad1" --store mem >/dev/null 2>"$work/bad1.err"
rc=$?
cat "$work/bad1.err"
check "unknown key: exit 2 (got $rc)" test "$rc" -eq 2
check "unknown key: file and line $line named" grep -q "bad1.toml:$line:" "$work/bad1.err"
check "unknown key: key named" grep -q 'duration_msec' "$work/bad1.err"
check "nothing created for a bad workload" test ! -e "$work/bad1"
sed 's/^clients *=.*/clients = [1, "four"]/' "$smoke" >"$work/bad2.toml"
line=$(grep -n '^clients' "$work/bad2.toml" | cut -d: -f1)
"$harness" --config "$work/bad2.toml" --output "$work/bad2" --store mem >/dev/null 2>"$work/bad2.err"
rc=$?
cat "$work/bad2.err"
check "wrong type: exit 2 with line $line" bash -c "[ $rc -eq 2 ] && grep -q 'bad2.toml:$line:' '$work/bad2.err'"
sed 's/^access *=.*/access = "odbc"/' "$smoke" >"$work/bad3.toml"
"$harness" --config "$work/bad3.toml" --output "$work/bad3" --store mem >/dev/null 2>"$work/bad3.err"
rc=$?
cat "$work/bad3.err"
check "unknown access: exit 2 naming service.access" \
	bash -c "[ $rc -eq 2 ] && grep -q 'service.access' '$work/bad3.err'"
for s in $suites; do
	"$harness" --config "$smoke" --dry-run --set "$s.no_such_key=1" >/dev/null 2>"$work/bad4.err"
	rc=$?
	check "$s: an unknown key of [$s] is refused (exit $rc)" \
		bash -c "[ $rc -eq 2 ] && grep -q '$s.no_such_key' '$work/bad4.err'"
done
"$harness" --config "$smoke" --dry-run --suite "$(echo $suites | tr ' ' ','),no-such-suite" \
	>/dev/null 2>"$work/bad5.err"
rc=$?
check "--suite naming an unknown suite: exit 2 naming it (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q no-such-suite '$work/bad5.err'"
# A URL where an argument or a flag's value goes (--url forgotten or misspelled) is printed
# with its password hidden: getopt's own message and "unexpected argument" showed it whole.
pw_url='postgresql://u:Sekr1t@h/db'
for args in "$pw_url" "--urll=$pw_url" "--store=$pw_url" "--records=$pw_url" "--suite=$pw_url" \
	"--set=service.access=\"$pw_url\""; do
	"$harness" --config "$smoke" --dry-run $args >/dev/null 2>"$work/bad6.err"
	rc=$?
	check "a password in '${args%%:*}...': exit 2, hidden (got $rc)" \
		bash -c "[ $rc -eq 2 ] && grep -q 'u:\*\*\*@h' '$work/bad6.err' && ! grep -q Sekr '$work/bad6.err'"
done
# A refused --set names what the key takes: its KEY=VALUE read as a connection string hid
# every double-quoted piece of the message ("***", "***" for "client", "sql").
"$harness" --config "$smoke" --dry-run --set 'service.access="x"' >/dev/null 2>"$work/bad7.err"
rc=$?
check "--set service.access=\"x\": exit 2 naming \"client\" and \"sql\" (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'expected \"client\", \"sql\"' '$work/bad7.err'"
# A flag's malformed value is named once: "harness: --records: --records: ..." before.
"$harness" --config "$smoke" --dry-run --records 1.5 >/dev/null 2>"$work/bad8.err"
rc=$?
check "--records 1.5: exit 2, the flag named once (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q \"^harness: --records: '1.5' is not a count\" '$work/bad8.err'"

# ---- 4b. output paths and the memory store's sizes -----------------------------------------------
echo "# output paths"
# An output directory the harness may not write in is bad usage (exit 2), as a path under a file
# is: it exited 5, as if a suite had failed, and --compare-only did for any unusable --output.
# Root writes whatever the mode says: as root the directory is a read-only tmpfs, mounted in a
# mount namespace of the command's own (gone with it).
ro="$work/ro"
mkdir -p "$ro"
as_ro() { # as_ro COMMAND...: runs it with $ro read-only
	local rc
	if [ "$(id -u)" -eq 0 ]; then
		unshare -m sh -c 'mount -t tmpfs -o ro,size=1m tmpfs "$0" && exec "$@"' "$ro" "$@"
		return
	fi
	chmod 555 "$ro" && "$@"
	rc=$?
	chmod 755 "$ro"
	return $rc
}
as_ro "$harness" --config "$smoke" --suite scale --store mem --output "$ro" >/dev/null 2>"$work/ro1.err"
rc=$?
check "a read-only --output: exit 2 (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'cannot write in the output directory' '$work/ro1.err'"
check "nothing written in a read-only --output" test -z "$(ls -A "$ro")"
as_ro "$harness" --config "$smoke" --compare-only --output "$ro" --baseline "$out" >/dev/null \
	2>"$work/ro2.err"
rc=$?
check "--compare-only into a read-only --output: exit 2 (got $rc)" test "$rc" -eq 2
"$harness" --config "$smoke" --compare-only --output "$work/none" --baseline "$out" >/dev/null \
	2>"$work/ro3.err"
rc=$?
check "--compare-only into a missing --output: exit 2 (got $rc)" test "$rc" -eq 2
"$harness" --config "$smoke" --suite scale --store mem --output "$smoke/sub" >/dev/null 2>&1
rc=$?
check "an --output under a file: exit 2 (got $rc)" test "$rc" -eq 2
# A --baseline that is not a directory read as a run of another environment (exit 4).
"$harness" --config "$smoke" --suite scale --store mem --output "$work/nobase" \
	--baseline "$work/none" >/dev/null 2>"$work/nobase.err"
rc=$?
check "a missing --baseline: exit 2 naming it, nothing created (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'baseline $work/none' '$work/nobase.err' && [ ! -e '$work/nobase' ]"
"$harness" --config "$smoke" --compare-only --output "$out" --baseline "$smoke" >/dev/null 2>&1
rc=$?
check "--compare-only with a file as --baseline: exit 2 (got $rc)" test "$rc" -eq 2
# The memory store holds the scale suite's trees in the harness's process: a size whose tree
# cannot fit in the machine's memory was accepted and built until memory ran out.
"$harness" --config "$smoke" --dry-run --suite scale --store mem --sizes 10G >/dev/null \
	2>"$work/mem.err"
rc=$?
cat "$work/mem.err"
check "--store mem --sizes 10G: exit 2 naming --sizes and the memory limit (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -Eq '^harness: --sizes:.*(MemTotal|cgroup memory limit)' '$work/mem.err'"
"$harness" --config "$smoke" --dry-run --suite scale --store lmdb --sizes 10G >/dev/null 2>&1
rc=$?
check "--store lmdb --sizes 10G is not held to the memory (got $rc)" test "$rc" -eq 0

# ---- 5. regression gates ------------------------------------------------------------------------
echo "# regression gates"
base="$work/base"
gate() { # gate NAME EXPECTED_RC DIR BASELINE [extra flags]
	local what=$1 want=$2 dir=$3 bl=$4 rc
	shift 4
	"$harness" --config "$smoke" --compare-only --output "$dir" --baseline "$bl" "$@" \
		>"$work/gate.out" 2>"$work/gate.err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then cat "$work/gate.err"; fi
	check "$what: exit $want (got $rc)" test "$rc" -eq "$want"
}
fresh_copy() { rm -rf "$1" && cp -a "$out" "$1"; }
fresh_copy "$base"
gate "identical baseline passes" 0 "$out" "$base"
for s in $suites; do # relative QPS, for the suites that report it, is 1 against itself
	if head -n 1 "$out/$s-summary.csv" | grep -q relative_qps; then
		check "$s: relative QPS 1 against an identical baseline" rel_all_one "$out/$s-summary.csv"
	fi
done
fresh_copy "$base"
doctor "$base/service-summary.csv" succeeded_per_s 'v * 10'
gate "throughput loss (service) trips" 1 "$out" "$base"
fresh_copy "$base"
doctor "$base/scale-summary.csv" ops_per_s 'v * 10'
gate "throughput loss (scale) trips" 1 "$out" "$base"
fresh_copy "$base"
doctor "$base/service-summary.csv" p99_ms 'v / 10'
gate "p99 increase trips (min samples 1)" 1 "$out" "$base" --set regression.minimum_percentile_samples=1
fresh_copy "$base"
new="$work/new"
fresh_copy "$new"
doctor "$new/service-summary.csv" conflict_rate '0.99'
gate "conflict rate trips" 1 "$new" "$base"
fresh_copy "$new"
doctor "$new/service-summary.csv" error_rate '0.5'
gate "error rate trips" 1 "$new" "$base"
fresh_copy "$new"
doctor "$new/service-summary.csv" statements_per_op '99'
gate "statements per operation trips" 1 "$new" "$base"
fresh_copy "$new"
doctor "$new/service-summary.csv" validated '0'
gate "an unvalidated row trips" 1 "$new" "$base"
fresh_copy "$base"
sed -i 's/^cpu_model:.*/cpu_model: Imaginary CPU 9000/' "$base/machine.txt"
gate "machine mismatch is refused" 4 "$out" "$base"
gate "machine mismatch allowed: exploratory" 0 "$out" "$base" --allow-environment-mismatch
check "exploratory comparison says so" grep -qi 'exploratory' "$out/regression.md"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
