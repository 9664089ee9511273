# The tours of the CLI, run as written: the README's section "Five-minute tour of the CLI" and
# docs/cli.md's "Five-minute tour", each on a fresh store in a directory of its own: every "$ "
# line of the console blocks of the section, in order, its output (stdout and stderr) compared
# with the lines the doc shows under it. The docs shorten ids to 12 hex digits and "…"; both
# sides number their ids by first appearance (<idN>), so an id the doc shows twice must come
# twice, and a short id it types (9b51c5a1) stands for the same prefix of this run's id. Dates
# are this run's. Prints one line per command that differs, then the count, per doc.
# The two tours begin with the same commands: those run once, the README's output of each
# compared with both docs, and docs/cli.md's tour goes on from a copy of the README's directory
# as it was after them (the same commands from the same state print the same, ids and dates
# aside, which both sides number and mask; each command run again was a process, most of this
# case's time).
#@ slow
unset PROLLY_STORE # the tour's store is the default, ./.prolly
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)

# Numbers the ids of one side: the doc's "<12 hex>…" or this run's 64 hex digits.
number_ids() {
	awk -v re="$1" '{
		sub(/^date\t.*/, "date\t<date>")
		out = ""; s = $0
		while (match(s, re)) {
			id = substr(s, RSTART, 12)
			if (!(id in n)) n[id] = ++k
			out = out substr(s, 1, RSTART - 1) "<id" n[id] ">"; s = substr(s, RSTART + RLENGTH)
		}
		print out s
	}'
}

# matches TEXT ERE: the matches of ERE in TEXT, left to right, in found[] (as grep -o finds them,
# without its process: two a command were most of the processes this case started but prolly).
matches() {
	local s=$1
	found=()
	while [[ $s =~ $2 ]]; do
		found+=("${BASH_REMATCH[0]}")
		s=${s#*"${BASH_REMATCH[0]}"}
	done
}

# read_tour DOC HEADING: the "$ " lines of the console blocks of DOC's section "## HEADING" in
# commands[], the lines the doc shows under each in expected[].
read_tour() {
	local line cur=-1 in_block=0
	commands=() expected=()
	while IFS= read -r line; do
		case $line in
		'```console') in_block=1 ;;
		'```') in_block=0 ;;
		'$ '*) [ $in_block = 1 ] && { cur=$((cur + 1)); commands[cur]=${line#\$ }; expected[cur]=; } ;;
		*) [ $in_block = 1 ] && [ $cur -ge 0 ] && expected[cur]+=$line$'\n' ;;
		esac
	done < <(awk -v h="## $2" '$0 == h {on = 1; next} /^## / {on = 0} on' "$top/$1")
}

# run_tour DOC SAME SAVE: runs commands[] (read_tour) in a new directory and compares their
# output with expected[]. The first SAME commands are not run: their output (ran_got, ran_rc) is
# the previous tour's, and its directory as it was after them (saved/) is copied in before the
# next command. After command SAVE - 1 the directory is saved there for the next tour.
run_tour() {
	local doc=$1 same=$2 save=$3 i j k cmd got short rc=0 all_want= all_got= want_ids got_ids
	local -A short_to_real # a doc's id (12 hex) -> this run's (64 hex)
	mkdir "${doc//\//_}" && cd "${doc//\//_}" || return
	for i in "${!commands[@]}"; do
		cmd=${commands[i]}
		if [ "$i" -lt "$same" ]; then
			got=${ran_got[i]} rc=${ran_rc[i]}
		else
			[ "$i" = "$same" ] && [ "$same" -gt 0 ] && cp -a ../saved/. .
			# a short id the doc types: this run's id with the same prefix (the tests in the
			# shell spare a grep where a line holds no id: most do, and processes are this
			# case's time)
			[[ $cmd =~ [0-9a-f]{8} ]] && for short in $(grep -oE '\b[0-9a-f]{8,12}\b' <<<"$cmd"); do
				for k in "${!short_to_real[@]}"; do
					[ "${k#"$short"}" != "$k" ] && cmd=${cmd//$short/${short_to_real[$k]:0:${#short}}}
				done
			done
			got=$( (exit $rc); eval "$cmd" 2>&1)
			rc=$?
			ran_got[i]=$got ran_rc[i]=$rc
		fi
		[ "$((i + 1))" = "$save" ] && mkdir ../saved && cp -a . ../saved/
		# learn the doc's ids from where this run printed its own
		matches "${expected[i]}" '[0-9a-f]{12}…'
		want_ids=("${found[@]}") got_ids=()
		[ ${#want_ids[@]} -gt 0 ] && matches "$got" '[0-9a-f]{64}' && got_ids=("${found[@]}")
		for j in "${!want_ids[@]}"; do
			[ -n "${got_ids[j]:-}" ] && short_to_real[${want_ids[j]:0:12}]=${got_ids[j]}
		done
		all_want+="\$ ${commands[i]}"$'\n'${expected[i]}
		all_got+="\$ ${commands[i]}"$'\n'${got:+$got$'\n'}
	done
	cd ..
	diff <(printf '%s' "$all_want" | number_ids '[0-9a-f]{12}…') \
		<(printf '%s' "$all_got" | number_ids '[0-9a-f]{64}') &&
		echo "$doc: ${#commands[@]} commands, each printing what the doc shows"
}

read_tour docs/cli.md "Five-minute tour"
cli_commands=("${commands[@]}") cli_expected=("${expected[@]}")
read_tour README.md "Five-minute tour of the CLI"
same=0
while [ "$same" -lt ${#commands[@]} ] && [ "$same" -lt ${#cli_commands[@]} ] &&
	[ "${commands[same]}" = "${cli_commands[same]}" ]; do
	same=$((same + 1))
done
ran_got=() ran_rc=()
run_tour README.md 0 "$same"
commands=("${cli_commands[@]}") expected=("${cli_expected[@]}")
run_tour docs/cli.md "$same" 0
