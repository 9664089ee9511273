# tests/tap.sh - TAP helpers of the shell tests (tests/install.sh, tests/pgbouncer.sh), sourced.
#   ok NAME                  prints "ok N - NAME"
#   not_ok NAME              prints "not ok N - NAME", then the file $out as comments, and
#                            counts the failure in $failed
#   check NAME COMMAND...    runs COMMAND with its output in $out: ok when it succeeds, not_ok
#                            (and status 1) when it fails
# The caller sets out (a scratch file) before the first check.
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -s "$out" ] && sed 's/^/# /' "$out"
}
check() {
	local name=$1
	shift
	if "$@" >"$out" 2>&1; then ok "$name"; else not_ok "$name"; return 1; fi
}
