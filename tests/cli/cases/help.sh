# --help, COMMAND --help, help COMMAND, --version, and usage errors before any store is touched.
#@ slow
p --version
p --help
p put --help
p help merge
p scan -h
pe
pe nosuchcommand
pe --bogus init
pe --store
pe help nosuchcommand
# nothing was created by any of these
ls
# every command of --help has its section in the man page, prolly(1), and in docs/cli.md
docs=$(dirname "${BASH_SOURCE[0]}")/../../../docs
no_man= no_doc=
for c in $(prolly --help | awk '/^Commands:/ {f = 1; next} /^Options:/ {f = 0} f && NF {print $1}'); do
	grep -E '^\.SS ' "$docs/prolly.1" | sed 's/\\-/-/g' | grep -qw -- "$c" || no_man+=" $c"
	grep -E '^#+ ' "$docs/cli.md" | grep -qw -- "$c" || no_doc+=" $c"
done
# every option a command's help lists is named in its usage line
no_usage=$(for c in $(prolly --help | awk '/^Commands:/ {f = 1; next} /^Options:/ {f = 0} f && NF {print $1}'); do
	prolly "$c" --help | awk -v c="$c" 'NR == 1 {u = $0; next}
		/^  --?[a-z]/ { n = split($0, w, /[ ,]+/); ok = 0
			for (i = 1; i <= n; i++) if (w[i] ~ /^-/ && index(u, w[i])) ok = 1
			if (!ok) printf " %s:%s", c, w[2] }'
done)
echo "options missing from their command's usage line:${no_usage:- none}"
echo "commands without a section in prolly(1):${no_man:- none}"
echo "commands without a heading in docs/cli.md:${no_doc:- none}"
# and every option a command's help lists (short and long) is named in that command's section of
# docs/cli.md and of prolly(1): a section is one whose heading names the command
in_md() {
	awk -v c="$1" '/^#+ / {h = $0; gsub(/`/, " ", h); on = 0; n = split(h, w, /[ ,]+/)
		for (i = 1; i <= n; i++) if (w[i] == c) on = 1} on' "$docs/cli.md"
}
in_man() {
	sed 's/\\-/-/g' "$docs/prolly.1" | awk -v c="$1" '/^\.S[HS] / {h = $0; gsub(/"/, " ", h); on = 0
		n = split(h, w, /[ ,]+/); for (i = 1; i <= n; i++) if (w[i] == c) on = 1} on'
}
no_md= no_man=
for c in $(prolly --help | awk '/^Commands:/ {f = 1; next} /^Options:/ {f = 0} f && NF {print $1}'); do
	md=$(in_md "$c") man=$(in_man "$c") # once per command: processes are this case's time
	for o in $(prolly "$c" --help | awk '/^  -/ {split($0, part, /   +/); n = split(part[1], w, /[ ,]+/)
		for (i = 1; i <= n; i++) if (w[i] ~ /^--?[a-z][a-z-]*$/) print w[i]}'); do
		re="(^|[^a-z-])$o([^a-z-]|$)"
		[[ $md =~ $re ]] || no_md+=" $c:$o"
		[[ $man =~ $re ]] || no_man+=" $c:$o"
	done
done
echo "options missing from their command's section of docs/cli.md:${no_md:- none}"
echo "options missing from their command's section of prolly(1):${no_man:- none}"
