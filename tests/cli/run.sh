#!/usr/bin/env bash
# Golden tests of the prolly command-line tool.
#
#   tests/cli/run.sh PATH_TO_PROLLY [CASE...]
#
# Each tests/cli/cases/NAME.sh runs in a fresh temporary directory (see lib.sh); its stdout,
# with 64-hex ids replaced by <idN>, must equal cases/NAME.out. Prints TAP ("ok N - NAME" or
# "not ok N - NAME" followed by the diff as comments) and "# N passed, N failed" last; exits 1 if
# any case failed. With UPDATE=1 the .out files are (re)written instead: review them by hand.
# Cases run in parallel, JOBS at a time (default: the number of CPUs).
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
# Run a private copy, so that a rebuild of the binary meanwhile cannot disturb the run.
private=$(mktemp -d "${TMPDIR:-/tmp}/prolly-cli-bin.XXXXXX")
trap 'rm -rf "$private"' EXIT
cp "$bin" "$private/prolly"
bin=$private/prolly

if [ $# -gt 0 ]; then
	cases=()
	for c in "$@"; do cases+=("$here/cases/${c%.sh}.sh"); done
else
	cases=("$here"/cases/*.sh)
fi

# Replaces every 64-hex id by <idN>, N counting distinct ids in order of first appearance.
normalize() {
	perl -pe 'BEGIN { our %seen; our $n = 0 }
		s/\b([0-9a-f]{64})\b/ $seen{$1} \/\/= "<id" . ++$n . ">" /ge'
}

# Runs one case; writes its normalized transcript to $2.
run_case() {
	local c=$1 result=$2 tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/prolly-cli.XXXXXX")
	(cd "$tmp" && PROLLY_BIN=$bin bash -c '. "$1"; . "$2"' case "$here/lib.sh" "$c" 2>&1) |
		normalize >"$result"
	chmod -R u+w "$tmp" 2>/dev/null
	rm -rf "$tmp"
}

# The cases are independent: run up to $JOBS (default: the number of CPUs) at once.
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
i=0
for c in "${cases[@]}"; do
	run_case "$c" "$private/$i.out" &
	i=$((i + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
done
wait

echo "1..${#cases[@]}"
n=0 passed=0 failed=0
for c in "${cases[@]}"; do
	name=$(basename "$c" .sh)
	actual=$private/$n.out
	n=$((n + 1))
	expected_file=$here/cases/$name.out
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$actual" "$expected_file"
	fi
	if [ -f "$expected_file" ] && diff_out=$(diff -u --label expected --label actual \
	                                         "$expected_file" "$actual"); then
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
echo "# $passed passed, $failed failed"
[ "$failed" -eq 0 ]
