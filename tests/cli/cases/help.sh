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
# every command of --help has its section in the man page, prolly(1), and in docs/cli.md. The
# checks below read each text once and test it in the shell or in one awk: a process per command
# and check made this case the slowest of the suite (500 processes, 8 s of CPU).
docs=$(dirname "${BASH_SOURCE[0]}")/../../../docs
cmds=$(prolly --help | awk '/^Commands:/ {f = 1; next} /^Options:/ {f = 0} f && NF {print $1}')
declare -A help
for c in $cmds; do help[$c]=$(prolly "$c" --help); done
man=$(sed 's/\\-/-/g' "$docs/prolly.1")
man_ss=$(grep -E '^\.SS ' <<<"$man")
md_h=$(grep -E '^#+ ' "$docs/cli.md")
no_man= no_doc=
for c in $cmds; do
	re="(^|[^[:alnum:]_])$c([^[:alnum:]_]|\$)" # grep -w: the name as a word of a heading
	[[ $man_ss =~ $re ]] || no_man+=" $c"
	[[ $md_h =~ $re ]] || no_doc+=" $c"
done
# Every command's help, each after a line "@@ COMMAND".
helps() {
	for c in $cmds; do printf '@@ %s\n%s\n' "$c" "${help[$c]}"; done
}
# every option a command's help lists is named in its usage line
no_usage=$(helps | awk '/^@@ / {c = $2; first = 1; next} first {u = $0; first = 0; next}
	/^  --?[a-z]/ { n = split($0, w, /[ ,]+/); ok = 0
		for (i = 1; i <= n; i++) if (w[i] ~ /^-/ && index(u, w[i])) ok = 1
		if (!ok) printf " %s:%s", c, w[2] }')
echo "options missing from their command's usage line:${no_usage:- none}"
echo "commands without a section in prolly(1):${no_man:- none}"
echo "commands without a heading in docs/cli.md:${no_doc:- none}"
# and every option a command's help lists (short and long) is named in that command's section of
# docs/cli.md and of prolly(1): a section is one whose heading names the command. One awk reads
# the helps (the options), then docs/cli.md and the man page (each command's sections), then
# prints the misses of docs/cli.md, a line "@@", and those of prolly(1).
{
	helps
	echo "@@@ md"
	cat "$docs/cli.md"
	echo "@@@ man"
	printf '%s\n' "$man"
} | awk '
	# the help part: the commands in order, and the options of each in order
	part == "" && /^@@@ / { part = $2; next }
	part == "" && /^@@ / { c = $2; cmd[++nc] = c; next }
	part == "" && /^  -/ { split($0, p, /   +/); n = split(p[1], w, /[ ,]+/)
		for (i = 1; i <= n; i++) if (w[i] ~ /^--?[a-z][a-z-]*$/) opt[c, ++no[c]] = w[i]
		next }
	part == "" { next }
	/^@@@ / { part = $2; split("", on); next }
	# a heading: the words it names (backticks and quotes are not part of them)
	(part == "md" && /^#+ /) || (part == "man" && /^\.S[HS] /) {
		h = $0; gsub(part == "md" ? "`" : "\"", " ", h); split("", on)
		n = split(h, w, /[ ,]+/); for (i = 1; i <= n; i++) on[w[i]] = 1 }
	{ for (c in on) sec[part, c] = sec[part, c] $0 "\n" }
	END {
		for (k = 1; k <= 2; k++) {
			part = k == 1 ? "md" : "man"; miss = ""
			for (j = 1; j <= nc; j++) {
				c = cmd[j]
				for (i = 1; i <= no[c]; i++)
					if (sec[part, c] !~ "(^|[^a-z-])" opt[c, i] "([^a-z-]|$)") miss = miss " " c ":" opt[c, i]
			}
			print miss
		}
	}' >options.miss
{ IFS= read -r no_md; IFS= read -r no_man; } <options.miss
echo "options missing from their command's section of docs/cli.md:${no_md:- none}"
echo "options missing from their command's section of prolly(1):${no_man:- none}"
