# --help, COMMAND --help, help COMMAND, --version, and usage errors before any store is touched.
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
