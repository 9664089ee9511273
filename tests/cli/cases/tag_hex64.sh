# A tag named by 64 hex digits, which libraries before that rule could make (here written by SQL
# as they wrote it), is listed, and `tag -d` deletes it (it used to be refused as an invalid name
# while `tags` listed it, so nothing but SQL could remove it, and gc kept its commit); a new one
# is still refused. PostgreSQL only, where a case can write the row itself.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
hex=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
p init
p put main a 1
sql "INSERT INTO refs SELECT convert_to('refs/tags/$hex', 'UTF8'), value FROM refs
	WHERE name = convert_to('refs/heads/main', 'UTF8')"
p tags
p tag -d "$hex"
p tags
pe tag -d "$hex"
pe tag "$hex" main
pe tag -d "bad..name"
