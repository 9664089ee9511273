# Backups with PostgreSQL's own tools (docs/postgres.md, "Backups: pg_dump and restore"): a store
# with history, branches, a tag, a merge, a gc and its reflog is copied five ways into new
# databases -- pg_dump -Fc and pg_restore, a plain SQL dump run by psql, CREATE DATABASE ...
# TEMPLATE, a dump of the schema alone (-n public, restored with --clean --if-exists), and a
# data-only dump into tables `prolly init` made, emptied first -- then restored in place over
# the live database. Each copy must restore without an error, read exactly as the source
# (branches, tags, log, reflog, and every tree of the history verified node by node), keep the
# gc epoch, and take writes, a merge and a gc afterwards, the epoch going on from the source's.
#@ pg-only
#@ slow
# Not in the sanitizer suite (37 s there): its prolly commands are those of other cases, on
# stores that PostgreSQL's tools copied.
#@ no-san
pgbin() { "${PROLLY_PG_BIN:+$PROLLY_PG_BIN/}$@"; }
sql() { pgbin psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
# The URL of database $1 on the same server (a later dbname= wins in libpq).
db_url() {
	case $PROLLY_STORE in
	*://*\?*) printf '%s&dbname=%s' "$PROLLY_STORE" "$1" ;;
	*://*) printf '%s?dbname=%s' "$PROLLY_STORE" "$1" ;;
	*) printf '%s dbname=%s' "$PROLLY_STORE" "$1" ;;
	esac
}
src=$(sql "SELECT current_database()")
copies=(fc plain tmpl schema data inplace)
# Creates the copy database ${src}_$1 and prints its URL.
newdb() {
	sql "CREATE DATABASE \"${src}_$1\"" && db_url "${src}_$1"
}
# Drops the copies, in one session (each -c is a transaction of its own, as DROP DATABASE needs).
drop_copies() {
	local d drops=()
	for d in "${copies[@]}"; do drops+=(-c "DROP DATABASE IF EXISTS \"${src}_$d\" WITH (FORCE)"); done
	pgbin psql -X -q -d "$PROLLY_STORE" "${drops[@]}"
}
trap drop_copies EXIT
# What a store reads as, every command's output and status (reflog lines carry wall-clock times,
# so they are compared, not shown). `verify main --history` reads every node of every tree in
# main's history and checks it hashes to its id, and main's history holds dev, v1 and every
# commit `log dev` shows: with the refs and `log main` equal, every scan, diff, get, history and
# stats of either branch reads the same bytes and prints the same (each command here is a
# connection, about 70 ms of the server's CPU).
snapshot() {
	local c
	for c in branches tags 'log main' 'reflog main' 'reflog dev' 'verify main --history'; do
		echo "== $c"
		PROLLY_STORE=$1 prolly $c 2>&1
		echo "rc=$?"
	done
	PROLLY_STORE=$1 sql "SELECT key, value FROM meta WHERE key <> 'epoch'"
}
# Writes, a merge and a gc on the copy at $1; prints what differs from the source's answers.
writes() {
	local u=$1
	PROLLY_STORE=$u prolly put main new/k1 v1 >/dev/null &&
		PROLLY_STORE=$u prolly put dev new/k2 v2 >/dev/null &&
		PROLLY_STORE=$u prolly merge main dev --resolve theirs >/dev/null &&
		PROLLY_STORE=$u prolly gc --reflog-days 0 | grep nodes_removed | sed 's/\t[1-9][0-9]*$/\tsome/' &&
		PROLLY_STORE=$u prolly verify main | cut -f1 &&
		PROLLY_STORE=$u prolly get main new/k2 &&
		PROLLY_STORE=$u sql "SELECT 'epoch ' || value FROM meta WHERE key = 'epoch'"
}
# Restores with $1 into a new database $2, then compares and writes.
check() {
	local name=$1 url=$2
	snapshot "$url" >"$name.snap"
	if cmp -s source.snap "$name.snap"; then
		echo "$name: reads as the source"
	else
		echo "$name: differs from the source:"
		diff source.snap "$name.snap" | head -20
	fi
	PROLLY_STORE=$url sql "SELECT 'epoch ' || value FROM meta WHERE key = 'epoch'"
	writes "$url"
}

p init
for i in $(seq 0 1999); do printf 'put\tk/%05d\tvalue %d\n' "$i" "$((i * 7))"; done >a.tsv
for i in $(seq 0 999); do printf 'put\td/%05d\tdev %d\n' "$i" "$i"; done >b.tsv
prolly apply main a.tsv >/dev/null
p branch dev main
prolly apply dev b.tsv >/dev/null
p tag v1 main
p put dev k/00001 changed
p del main k/00002
p merge main dev
p branch tmp main
p put tmp only-tmp x
p branch -d tmp
prolly gc --reflog-days 0 | cut -f1
sql "SELECT key, value FROM meta ORDER BY key"
p branches
p verify main
snapshot "$PROLLY_STORE" >source.snap
grep -c '^rc=0$' source.snap

echo "-- pg_dump -Fc, pg_restore"
pgbin pg_dump -Fc -f all.dump "$PROLLY_STORE"
u=$(newdb fc)
pgbin pg_restore --exit-on-error -d "$u" all.dump && check custom "$u"

echo "-- pg_dump (plain SQL), psql"
pgbin pg_dump -f all.sql "$PROLLY_STORE"
u=$(newdb plain)
pgbin psql -X -q -v ON_ERROR_STOP=1 -d "$u" -f all.sql >/dev/null && check plain "$u"

echo "-- CREATE DATABASE ... TEMPLATE"
sql "CREATE DATABASE \"${src}_tmpl\" TEMPLATE \"$src\""
check template "$(db_url "${src}_tmpl")"

echo "-- pg_dump -n public, pg_restore --clean --if-exists"
pgbin pg_dump -Fc -n public -f schema.dump "$PROLLY_STORE"
u=$(newdb schema)
pgbin pg_restore --exit-on-error -d "$u" schema.dump 2>&1 | grep -o 'schema "public" already exists'
pgbin pg_restore --exit-on-error --clean --if-exists -d "$u" schema.dump && check schema "$u"

echo "-- pg_dump -a into the tables prolly init made"
pgbin pg_dump -a -f data.sql "$PROLLY_STORE"
u=$(newdb data)
PROLLY_STORE=$u prolly init >/dev/null
PROLLY_STORE=$u pgbin psql -X -q -v ON_ERROR_STOP=1 -d "$u" -f data.sql 2>&1 >/dev/null | grep -o 'duplicate key value violates unique constraint "meta_pkey"'
PROLLY_STORE=$u sql "TRUNCATE nodes, refs, meta"
pgbin psql -X -q -v ON_ERROR_STOP=1 -d "$u" -f data.sql >/dev/null && check data "$u"

echo "-- pg_restore --clean over the live database, the epoch moved past the old one"
u=$(newdb inplace)
pgbin pg_restore --exit-on-error -d "$u" all.dump
PROLLY_STORE=$u prolly put main after-dump x >/dev/null
PROLLY_STORE=$u prolly gc --reflog-days 0 | grep nodes_removed | sed 's/\t[1-9][0-9]*$/\tsome/'
e=$(PROLLY_STORE=$u sql "SELECT value FROM meta WHERE key = 'epoch'")
pgbin pg_restore --exit-on-error --clean --if-exists -d "$u" all.dump
PROLLY_STORE=$u sql "UPDATE meta SET value = greatest(value, $e) + 1 WHERE key = 'epoch' RETURNING 'epoch ' || value"
PROLLY_STORE=$u p get main after-dump
check inplace "$u"
