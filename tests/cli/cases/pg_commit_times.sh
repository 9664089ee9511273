# Commits dated far from now, as another implementation or a hand-made object may date them
# (any int64 of microseconds; the CLI itself dates none before 1970): `log` prints each with a
# year of at least 4 digits (year 1 is 0001, not 1), a '-' before year 0, more digits after
# 9999. PostgreSQL only, where a case can write the objects itself.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
p init
# a parentless commit on main's tree, message '', dated by the int64 t (little-endian hex)
odd() {
	sql "WITH c AS (SELECT 'PRLC'::bytea || '\\x01'::bytea || substring(node FROM 6 FOR 32)
	         || '\\x00000000'::bytea || '\\x$2'::bytea || '\\x00000000'::bytea AS node
	       FROM nodes WHERE id = (SELECT value FROM refs WHERE name = convert_to('refs/heads/main', 'UTF8'))),
	     n AS (INSERT INTO nodes SELECT sha256(node), node FROM c)
	INSERT INTO refs SELECT convert_to('refs/heads/$1', 'UTF8'), sha256(node) FROM c"
	prolly log "$1" | grep '^date'
}
odd min 0000000000000080
odd before-0 ffffe8563e2323ff
odd year-0 ff3fd400014023ff
odd year-1 0040d400014023ff
odd year-999 ff1ffcd7294093ff
odd year-1969 ffffffffffffffff
odd year-10000 006073cc0c448403
odd max ffffffffffffff7f
p branches
