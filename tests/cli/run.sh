#!/usr/bin/env bash
# Golden tests of the prolly command-line tool.
#
#   tests/cli/run.sh PATH_TO_PROLLY [CASE...]
#
# Each tests/cli/cases/NAME.sh runs in a fresh temporary directory (see lib.sh); its stdout,
# with 64-hex ids replaced by <idN> and the directory by <dir> (normalize below), must equal
# cases/NAME.out. Prints TAP ("ok N - NAME" or "not ok N - NAME" followed by the diff as
# comments) and "# N passed, N failed" last; exits 1 if any case failed. With UPDATE=1 the .out files are (re)written instead: review them by hand.
# Cases run in parallel, JOBS at a time (default: the number of CPUs), each stopped after
# CASE_TIMEOUT seconds (default 600; 0: no limit), which fails it with a line saying so.
#
# PostgreSQL: a case with a line "#@ any-store" does not depend on the store, so it runs a second
# time (reported as "pg/NAME") with PROLLY_STORE set to a fresh, empty database on
# $PROLLY_PG_URL, and must give the same cases/NAME.out (after the case's store URL is shown as
# "lmdb:store", the URL of the LMDB run). A case with a line "#@ pg-only" is about PostgreSQL
# alone: it runs only as "pg/NAME". When PROLLY_PG_URL is unset, a throwaway cluster is
# started with scripts/pg-cluster.sh (or $PROLLY_PG_SCRIPT) and stopped at the end, also on
# failure or interruption. Without a server every pg/ case fails. With PROLLY_CLI_PG=0 they are
# skipped, each with a TAP "# SKIP" line (a failure when CI=true). The databases
# (prolly_cli_PID_N) are created before the cases start and dropped at the end.
# PROLLY_CLI_ANY_PG=0 runs the any-store cases on LMDB only (the sanitizer suite: make san-test),
# and leaves out the cases with a line "#@ no-san" (what they add is another program's work on a
# store, PostgreSQL's backup tools say, through CLI paths that other cases run).
# Cases with a line "#@ slow" start first. The last comment lines name the slowest runs.
set -u

if [ $# -lt 1 ]; then
	echo "usage: $0 PATH_TO_PROLLY [CASE...]" >&2
	exit 2
fi
bin=$1
shift
case $bin in
/*) ;;
*) bin=$PWD/$bin ;;
esac
if [ ! -x "$bin" ]; then
	echo "$0: $bin is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
# Run a private copy, so that a rebuild of the binary meanwhile cannot disturb the run. The
# cases' directories and transcripts are made in the same directory.
private=$(mktemp -d "${TMPDIR:-/tmp}/prolly-cli.XXXXXX")
pg_script=${PROLLY_PG_SCRIPT:-$here/../../scripts/pg-cluster.sh}
pg_own_dir= # set when this run started the cluster
pg_dbs=()   # databases created on a server this run does not own

cleanup() {
	if [ -n "$pg_own_dir" ]; then
		local t0=$(date +%s%N)
		if bash "$pg_script" stop "$pg_own_dir" >/dev/null 2>&1; then
			echo "# stopped the PostgreSQL cluster ($((($(date +%s%N) - t0) / 1000000)) ms)"
		else
			echo "# could not stop the PostgreSQL cluster in $pg_own_dir"
		fi
		pg_own_dir=
	elif [ ${#pg_dbs[@]} -gt 0 ]; then
		local db
		for db in "${pg_dbs[@]}"; do
			printf 'DROP DATABASE IF EXISTS "%s";\n' "$db"
		done | pg_sql >/dev/null 2>&1 || echo "# could not drop the databases ${pg_dbs[*]}"
		pg_dbs=()
	fi
	rm -rf "$private" 2>/dev/null || { chmod -R u+w "$private" && rm -rf "$private"; }
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
cp "$bin" "$private/prolly"
bin=$private/prolly

if [ $# -gt 0 ]; then
	cases=()
	for c in "$@"; do cases+=("$here/cases/${c%.sh}.sh"); done
else
	cases=("$here"/cases/*.sh)
fi

# The "#@ WORD" lines of every case, read by one grep: marks[FILE] is " WORD WORD ". (This
# script's own processes, a grep per case and mark, a date, basename and wc per run, were about
# a tenth of the suite's CPU time on the 2-CPU machine, where every process start is dear.)
declare -A marks
while IFS= read -r line; do
	mark=${line#*:\#@ }
	marks[${line%%:\#@ *}]+=" ${mark%% *} "
done < <(grep -H '^#@ ' "${cases[@]}" 2>/dev/null)
# has_mark FILE WORD: whether case FILE has the line "#@ WORD".
has_mark() { [[ ${marks[$1]:-} == *" $2 "* ]]; }
# Milliseconds since the epoch in $ms (EPOCHREALTIME: no process).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	ms=$((t / 1000))
}

# The runs: every case on LMDB (but the pg-only ones), then the any-store and pg-only ones on
# PostgreSQL.
run_file=() run_name=() run_pg=()
for c in "${cases[@]}"; do
	has_mark "$c" pg-only && continue
	name=${c##*/}
	run_file+=("$c")
	run_name+=("${name%.sh}")
	run_pg+=(0)
done
# PROLLY_CLI_PG=0 leaves the PostgreSQL runs out: each is reported as a TAP skip ("ok N -
# pg/NAME # SKIP ..."), and counts as a failure when CI=true (CI runs everything).
skipped_pg=()
for c in "${cases[@]}"; do
	if has_mark "$c" any-store || has_mark "$c" pg-only; then
		name=${c##*/}
		if [ "${PROLLY_CLI_PG:-1}" = 0 ]; then
			skipped_pg+=("pg/${name%.sh}")
			continue
		fi
		run_file+=("$c")
		run_name+=("pg/${name%.sh}")
		run_pg+=(1)
	fi
done

# PROLLY_CLI_ANY_PG=0 leaves out the PostgreSQL runs of the any-store cases (the pg-only ones
# stay): the sanitizer suite does, as its LMDB runs and the plain suite's PostgreSQL runs cover
# the same code (docs/testing.md). Said in a comment line, not as skips.
if [ "${PROLLY_CLI_ANY_PG:-1}" = 0 ]; then
	keep_file=() keep_name=() keep_pg=() left=0
	nosan=()
	for i in "${!run_file[@]}"; do
		if [ "${run_pg[$i]}" = 1 ] && ! has_mark "${run_file[$i]}" pg-only; then
			left=$((left + 1))
			continue
		fi
		if has_mark "${run_file[$i]}" no-san; then
			nosan+=("${run_name[$i]}")
			continue
		fi
		keep_file+=("${run_file[$i]}")
		keep_name+=("${run_name[$i]}")
		keep_pg+=("${run_pg[$i]}")
	done
	run_file=("${keep_file[@]}") run_name=("${keep_name[@]}") run_pg=("${keep_pg[@]}")
	echo "# PROLLY_CLI_ANY_PG=0: the PostgreSQL runs of $left any-store cases left out${nosan:+, and ${nosan[*]} (#@ no-san)}"
fi

# Runs SQL from stdin on $PROLLY_PG_URL's database, one statement per line (so that CREATE
# DATABASE is not inside a transaction block).
pg_sql() {
	local psql=psql
	if [ -n "${PROLLY_PG_BIN:-}" ] && [ -x "$PROLLY_PG_BIN/psql" ]; then
		psql=$PROLLY_PG_BIN/psql
	fi
	"$psql" -X -q -v ON_ERROR_STOP=1 -d "$PROLLY_PG_URL"
}

# The URL of database $1 on the server of $PROLLY_PG_URL (a libpq URL or key=value string).
pg_db_url() {
	case $PROLLY_PG_URL in
	postgres://*\?* | postgresql://*\?*) printf '%s&dbname=%s' "$PROLLY_PG_URL" "$1" ;;
	postgres://* | postgresql://*) printf '%s?dbname=%s' "$PROLLY_PG_URL" "$1" ;;
	*) printf '%s dbname=%s' "$PROLLY_PG_URL" "$1" ;;
	esac
}

# A server for the pg/ runs, and one fresh database per run. pg_error says why there is none.
pg_error=
run_url=()
n_pg=0
for i in "${!run_pg[@]}"; do
	run_url+=("")
	[ "${run_pg[$i]}" = 1 ] && n_pg=$((n_pg + 1))
done
if [ "$n_pg" -gt 0 ]; then
	if [ -z "${PROLLY_PG_URL:-}" ]; then
		t0=$(date +%s%N)
		if env_lines=$(bash "$pg_script" start 2>"$private/pg-start.err") &&
			eval "$env_lines" && [ -n "${PROLLY_PG_URL:-}" ]; then
			pg_own_dir=$PROLLY_PG_DIR
			echo "# started a throwaway PostgreSQL cluster in $pg_own_dir ($((($(date +%s%N) - t0) / 1000000)) ms)"
			# Its data is thrown away at the end: no fsync (CREATE DATABASE, every commit and the
			# shutdown checkpoint would otherwise flush to disk, seconds on a busy machine).
			printf '%s\n' 'ALTER SYSTEM SET fsync = off;' 'SELECT pg_reload_conf();' |
				pg_sql >/dev/null 2>&1 || echo "# note: could not turn fsync off on the throwaway cluster"
		else
			pg_error="could not start a PostgreSQL cluster with $pg_script (set PROLLY_PG_URL to use an existing server): $(tail -n 3 "$private/pg-start.err" | tr '\n' ' ')"
		fi
	fi
	if [ -z "$pg_error" ]; then
		sql=
		dbs=()
		for i in "${!run_pg[@]}"; do
			[ "${run_pg[$i]}" = 1 ] || continue
			db=prolly_cli_$$_$i
			dbs+=("$db")
			sql+="CREATE DATABASE \"$db\";"$'\n'
			run_url[$i]=$(pg_db_url "$db")
		done
		[ -n "$pg_own_dir" ] || pg_dbs=("${dbs[@]}")
		if ! printf '%s' "$sql" | pg_sql >"$private/pg-create.err" 2>&1; then
			pg_error="could not create the databases on \$PROLLY_PG_URL: $(tail -n 3 "$private/pg-create.err" | tr '\n' ' ')"
		fi
	fi
fi

# normalize RAW OUT URL DIR...: for each four arguments, writes the transcript RAW to OUT with
# the store URL (if not empty) replaced by lmdb:store, then the case's directory DIR by <dir> (a
# remote is recorded with an absolute path), the case's own LMDB store lmdb:<dir>/store becoming
# lmdb:store too, as the PostgreSQL run's store does; then every 64-hex id by <idN>, N counting
# distinct ids in order of first appearance. (One process for all the runs: a perl per case was
# a quarter of the runner's own CPU time.)
normalize() {
	perl -e 'while (@ARGV) {
		my ($raw, $out, $url, $dir) = splice(@ARGV, 0, 4);
		my %seen; my $n = 0;
		open(my $in, "<", $raw) or die "$raw: $!";
		open(my $o, ">", $out) or die "$out: $!";
		while (<$in>) {
			s/\Q$url\E/lmdb:store/g if length $url;
			s/\Q$dir\E(?![\w.-])/<dir>/g;
			s/lmdb:<dir>\/store(?![\w.\/-])/lmdb:store/g;
			s/\b([0-9a-f]{64})\b/ $seen{$1} \/\/= "<id" . ++$n . ">" /ge;
			print $o $_;
		}
		close($o) or die "$out: $!";
	}' "$@"
}

# Runs case $1 in the empty directory $4 with store URL $3 (empty: lib.sh's lmdb:store); writes
# its transcript to $2, which normalize reads once every run is over.
case_timeout=${CASE_TIMEOUT:-600}
limit=()
if [ "$case_timeout" != 0 ] && command -v timeout >/dev/null 2>&1; then
	limit=(timeout -k 10 "$case_timeout")
fi
run_case() {
	local c=$1 result=$2 url=$3 tmp=$4 rc t0 ms
	now_ms
	t0=$ms
	# (run_case runs in a process of its own, which may change directory)
	cd "$tmp" || return
	PROLLY_BIN=$bin "${limit[@]}" bash -c \
		'. "$1"; [ -z "$3" ] || PROLLY_STORE=$3; . "$2"' case "$here/lib.sh" "$c" "$url" >"$result" 2>&1
	rc=$?
	if [ "$rc" = 124 ] && [ ${#limit[@]} -gt 0 ]; then
		echo "[the case timed out after ${case_timeout}s]" >>"$result"
	fi
	cd "$private" || return
	# (a case may leave a directory it may not write: chmod then, and only then)
	rm -rf "$tmp" 2>/dev/null || { chmod -R u+w "$tmp" && rm -rf "$tmp"; }
	now_ms
	echo $((ms - t0)) >"$result.ms"
}

# The runs are independent: run up to $JOBS (default: the number of CPUs) at once, those of
# the cases marked "#@ slow" first, so that none of them is left running alone at the end.
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
order=()
for i in "${!run_file[@]}"; do
	has_mark "${run_file[$i]}" slow && order+=("$i")
done
for i in "${!run_file[@]}"; do
	has_mark "${run_file[$i]}" slow || order+=("$i")
done
# The runs' directories, made by one mkdir.
dirs=()
for i in "${order[@]}"; do
	[ "${run_pg[$i]}" = 1 ] && [ -n "$pg_error" ] && continue
	dirs+=("$private/run.$i")
done
[ ${#dirs[@]} -eq 0 ] || mkdir "${dirs[@]}" || exit 2
running=0
for i in "${order[@]}"; do
	[ "${run_pg[$i]}" = 1 ] && [ -n "$pg_error" ] && continue
	run_case "${run_file[$i]}" "$private/$i.raw" "${run_url[$i]}" "$private/run.$i" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
args=()
for i in "${!run_file[@]}"; do
	[ -f "$private/$i.raw" ] && args+=("$private/$i.raw" "$private/$i.out" "${run_url[$i]}" "$private/run.$i")
done
[ ${#args[@]} -eq 0 ] || normalize "${args[@]}"

# same_text A B: whether files A and B hold the same text, read by the shell (a diff per run was
# a process each); not sure (1) when either holds a NUL byte, which a shell string cannot.
same_text() {
	local a b
	[ -f "$1" ] && [ -f "$2" ] || return 1
	IFS= read -r -d '' a <"$1" && return 1
	IFS= read -r -d '' b <"$2" && return 1
	[ "$a" = "$b" ]
}

echo "1..$((${#run_file[@]} + ${#skipped_pg[@]}))"
n=0 passed=0 failed=0
for name in "${skipped_pg[@]}"; do
	n=$((n + 1))
	if [ "${CI:-}" = true ]; then
		echo "not ok $n - $name # SKIP PROLLY_CLI_PG=0 (a skip is a failure under CI=true)"
		failed=$((failed + 1))
	else
		echo "ok $n - $name # SKIP PROLLY_CLI_PG=0"
		passed=$((passed + 1))
	fi
done
for i in "${!run_file[@]}"; do
	name=${run_name[$i]}
	actual=$private/$i.out
	n=$((n + 1))
	expected_file=${run_file[$i]##*/}
	expected_file=$here/cases/${expected_file%.sh}.out
	if [ "${run_pg[$i]}" = 1 ] && [ -n "$pg_error" ]; then
		echo "not ok $n - $name"
		echo "# $pg_error"
		failed=$((failed + 1))
		continue
	fi
	if [ "${UPDATE:-0}" = 1 ] && { [ "${run_pg[$i]}" = 0 ] ||
		has_mark "${run_file[$i]}" pg-only; }; then
		cp "$actual" "$expected_file"
	fi
	if [ -f "$expected_file" ] && { same_text "$expected_file" "$actual" ||
		diff_out=$(diff -u --label expected --label actual "$expected_file" "$actual"); }; then
		echo "ok $n - $name"
		passed=$((passed + 1))
	else
		echo "not ok $n - $name"
		if [ ! -f "$expected_file" ]; then
			echo "# missing $expected_file"
		else
			printf '%s\n' "$diff_out" | sed 's/^/# /'
		fi
		failed=$((failed + 1))
	fi
done
# The slowest runs, wall time (where the suite's time goes: several run at once, so a loaded
# machine stretches them all).
for i in "${!run_file[@]}"; do
	[ -f "$private/$i.raw.ms" ] && read -r ms <"$private/$i.raw.ms" && echo "$ms ${run_name[$i]}"
done | sort -rn | head -n 8 | awk '{ s = s sprintf("%s%s %.1fs", NR > 1 ? ", " : "", $2, $1 / 1000) }
	END { if (NR) print "# slowest: " s }'
echo "# $passed passed, $failed failed"
[ "$failed" -eq 0 ]
