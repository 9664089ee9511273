# A branch named by 64 hex digits, which libraries before that rule made (here written by SQL as
# they wrote it), is listed and read, and `branch -d` deletes it (it used to be refused as an
# invalid name, so nothing but SQL could remove it); a new one is still refused. PostgreSQL
# only, where a case can write the row itself.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
hex=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
p init
p put main a 1
sql "INSERT INTO refs SELECT convert_to('refs/heads/$hex', 'UTF8'), value FROM refs
	WHERE name = convert_to('refs/heads/main', 'UTF8')"
p branches
p get "$hex" a
pe branch -d "$hex"
p branches
pe branch -d "$hex"
pe branch "$hex" main
# the last branch is kept without --force, whatever its name
sql "INSERT INTO refs SELECT convert_to('refs/heads/$hex', 'UTF8'), value FROM refs
	WHERE name = convert_to('refs/heads/main', 'UTF8')"
p branch -d main --force
pe branch -d "$hex"
p branches
# its reflog is listed (the CLI refused the name while the library reads it), and a write says
# how to move the branch to a writable name: copy it, then delete it
pe put "$hex" b 2
p reflog "$hex"
p branch moved "$hex"
p branch -d "$hex"
p get moved a
pe reflog "$hex"
