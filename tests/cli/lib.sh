# lib.sh - helpers sourced by every CLI golden case (see tests/cli/run.sh).
#
# A case runs in a fresh empty directory with PROLLY_STORE=lmdb:store. What it writes on stdout
# is its transcript, compared with cases/NAME.out after every 64-hex id is replaced by <idN>
# (numbered by first appearance, so equal ids stay visibly equal) and the directory by <dir>
# (run.sh's normalize).
#
#   prolly ARGS...  runs the binary with a deterministic commit clock: the Nth call of the case
#                   gets PROLLY_COMMIT_TIME = 2023-11-14T22:13:20Z + N seconds (unless the
#                   case sets PROLLY_COMMIT_TIME for the call itself).
#   p ARGS...       runs prolly and records it: "$ prolly ARGS", its stdout, "[exit N]" when N
#                   is not 0, and a note if stderr breaks the rule "nothing on success, exactly
#                   one line on failure". Returns prolly's exit status.
#   pe ARGS...      like p, and also records the stderr line as "stderr: ...".

export PROLLY_STORE=lmdb:store LC_ALL=C
unset PROLLY_COMMIT_TIME
CLOCK_FILE=$PWD/.clock
echo 0 >"$CLOCK_FILE"

prolly() {
	local t
	read -r t <"$CLOCK_FILE"
	echo $((t + 1)) >"$CLOCK_FILE"
	PROLLY_COMMIT_TIME=${PROLLY_COMMIT_TIME:-$((1700000000000000 + t * 1000000))} "$PROLLY_BIN" "$@"
}

# (Few processes per call: spawning them is most of the run time of the suite.)
record() {
	local show_err=$1 rc out=$PWD/.out.$BASHPID err=$PWD/.err.$BASHPID lines=() text
	shift
	printf '$ prolly'
	[ $# -gt 0 ] && printf ' %q' "$@"
	printf '\n'
	prolly "$@" >"$out" 2>"$err"
	rc=$?
	# The output through the shell (a cat and a tail per command were most of this function's
	# cost, some 20 ms of CPU a call): read stops early only at a NUL byte, which a shell string
	# cannot hold, and then the file is copied as it is.
	if IFS= read -r -d '' text <"$out"; then
		cat "$out"
		[ -n "$(tail -c 1 "$out")" ] && printf '\n[no newline at end]\n'
	elif [ -n "$text" ]; then
		printf '%s' "$text"
		[[ $text == *$'\n' ]] || printf '\n[no newline at end]\n'
	fi
	[ "$rc" -ne 0 ] && echo "[exit $rc]"
	mapfile -t lines <"$err"
	if [ "$rc" -eq 0 ] && [ ${#lines[@]} -ne 0 ]; then
		echo "[stderr on success:]"
		printf '%s\n' "${lines[@]}"
	elif [ "$rc" -ne 0 ] && [ ${#lines[@]} -ne 1 ]; then
		echo "[stderr has ${#lines[@]} lines, not 1:]"
		printf '%s\n' "${lines[@]}"
	elif [ "$show_err" = 1 ] && [ ${#lines[@]} -ne 0 ]; then
		printf 'stderr: %s\n' "${lines[0]}"
	fi
	return "$rc"
}

p() { record 0 "$@"; }
pe() { record 1 "$@"; }
