# The reflog prints its messages by the rule of every text on standard output (docs/cli.md,
# "How prolly prints text"): escaped reversibly, so a message holding a backslash, a newline,
# an ESC byte, invalid UTF-8 or the text of an escape prints each differently. The CLI writes
# no such message itself (another client's library may): here SQL writes the entries, with
# their ids, as the library does. PostgreSQL only, where a case can write them.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
hex() { printf %s "$1" | od -An -v -tx1 | tr -d ' \n'; }
le() { # VALUE BYTES: little-endian hex
	local v=$1 n=$2 out=
	for ((i = 0; i < n; i++)); do
		out+=$(printf %02x $((v & 255)))
		v=$((v >> 8))
	done
	printf %s "$out"
}
# An entry at time T with message M for REF (refs/heads/main): created at main's head, operation
# "commit".
entry() {
	local t=$1 msg=$2 ref=${3:-refs/heads/main} head
	head=$(prolly branches | cut -f2)
	local h=$(hex PRLG)01$(le 2 1)$(le "$t" 8)$(printf '0%.0s' {1..64})$head
	h+=$(le 6 1)$(hex commit)$(le ${#ref} 2)$(hex "$ref")
	h+=$(le "$(printf %s "$msg" | wc -c)" 2)$(hex "$msg")
	sql "INSERT INTO nodes VALUES (sha256(decode('$h', 'hex')), decode('$h', 'hex'));
	INSERT INTO refs VALUES (convert_to('logs/$ref@' || lpad(to_hex($t::bigint), 16, '0') ||
		substr(encode(sha256(decode('$h', 'hex')), 'hex'), 1, 8), 'UTF8'),
		sha256(decode('$h', 'hex')))"
}
p init
entry 1700000100000000 'back\slash'
entry 1700000200000000 $'new\nline and\ttab'
entry 1700000300000000 $'esc \e[2J'
entry 1700000400000000 $'not UTF-8: \xff \xc3(; UTF-8: caf\xc3\xa9'
entry 1700000500000000 'the text of escapes: \x1b[2J \n \\'
prolly reflog main | cut -f1,2,3,6
# so do the ref names of entries another client wrote (text from the store as well)
entry 1700000600000000 lit 'refs/heads/lit\x1b'
entry 1700000700000000 esc $'refs/heads/esc\x1b'
prolly reflog | cut -f2,3,6
