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
# every command of --help has its section in the man page, prolly(1)
man=$(dirname "${BASH_SOURCE[0]}")/../../../docs/prolly.1
missing=
for c in $(prolly --help | awk '/^Commands:/ {f = 1; next} /^Options:/ {f = 0} f && NF {print $1}'); do
	grep -E '^\.SS ' "$man" | sed 's/\\-/-/g' | grep -qw -- "$c" || missing+=" $c"
done
echo "commands without a section in prolly(1):${missing:- none}"
