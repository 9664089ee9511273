# The tours of the CLI, run as written: the README's section "Five-minute tour of the CLI" and
# docs/cli.md's "Five-minute tour", each on a fresh store in a directory of its own: every "$ "
# line of the console blocks of the section, in order, its output (stdout and stderr) compared
# with the lines the doc shows under it. The docs shorten ids to 12 hex digits and "…"; both
# sides number their ids by first appearance (<idN>), so an id the doc shows twice must come
# twice, and a short id it types (9b51c5a1) stands for the same prefix of this run's id. Dates
# are this run's. Prints one line per command that differs, then the count, per doc.
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

# run_tour DOC HEADING: the console blocks of DOC's section "## HEADING", in a new directory.
run_tour() {
	local doc=$1 heading=$2 line i j k cmd got short rc=0
	local commands=() expected=() cur=-1 in_block=0 all_want= all_got= want_ids got_ids
	local -A short_to_real # a doc's id (12 hex) -> this run's (64 hex)
	while IFS= read -r line; do
		case $line in
		'```console') in_block=1 ;;
		'```') in_block=0 ;;
		'$ '*) [ $in_block = 1 ] && { cur=$((cur + 1)); commands[cur]=${line#\$ }; expected[cur]=; } ;;
		*) [ $in_block = 1 ] && [ $cur -ge 0 ] && expected[cur]+=$line$'\n' ;;
		esac
	done < <(awk -v h="## $heading" '$0 == h {on = 1; next} /^## / {on = 0} on' "$top/$doc")

	mkdir "${doc//\//_}" && cd "${doc//\//_}" || return
	for i in "${!commands[@]}"; do
		cmd=${commands[i]}
		# a short id the doc types: this run's id with the same prefix (the tests in the shell
		# spare a grep where a line holds no id: most do, and processes are this case's time)
		[[ $cmd =~ [0-9a-f]{8} ]] && for short in $(grep -oE '\b[0-9a-f]{8,12}\b' <<<"$cmd"); do
			for k in "${!short_to_real[@]}"; do
				[ "${k#"$short"}" != "$k" ] && cmd=${cmd//$short/${short_to_real[$k]:0:${#short}}}
			done
		done
		got=$( (exit $rc); eval "$cmd" 2>&1)
		rc=$?
		# learn the doc's ids from where this run printed its own
		want_ids=() got_ids=()
		[[ ${expected[i]} == *…* ]] && mapfile -t want_ids < <(grep -oE '[0-9a-f]{12}…' <<<"${expected[i]}")
		[ ${#want_ids[@]} -gt 0 ] && mapfile -t got_ids < <(grep -oE '[0-9a-f]{64}' <<<"$got")
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

run_tour README.md "Five-minute tour of the CLI"
run_tour docs/cli.md "Five-minute tour"
