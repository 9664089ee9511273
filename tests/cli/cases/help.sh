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
echo "commands without a section in prolly(1):${no_man:- none}"
echo "commands without a heading in docs/cli.md:${no_doc:- none}"
