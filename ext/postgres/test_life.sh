# ext/postgres/test_life.sh - the extension across its database's life: a part of
# test_extension.sh, which sources it (its ok, not_ok, cli, $log, $top and server settings), in a
# database of its own:
#   a. a database whose extension an earlier script of version 0.1 declared (prolly_commit
#      without expected, then without merge) calls this library with the arguments declared
#      there; ALTER EXTENSION prolly UPDATE takes it to 0.3 (prolly_commit declared once, with
#      six arguments; the functions of 0.2 and 0.3 there), and has nothing more to do; a database
#      made at 0.1 with the four-argument prolly_commit updates to 0.2's 21 functions, and from
#      there to 0.3's 28, which run; DROP EXTENSION and CREATE EXTENSION in the same session give
#      0.3's declarations, which read and write;
#   b. one session kept open (its caches warm: reads, a commit, a branch) across a restore in
#      place (pg_restore --clean --if-exists) of a dump taken before its commit, once at the
#      same gc epoch and once at a lower one (a gc ran after the dump): what the restore removed
#      is not found (42704) by a read, a branch, a merge or an expected commit, and the next
#      commit builds on the restored head;
#   c. one session moves the extension between the stores of two schemas (DROP and CREATE
#      EXTENSION), also inside a transaction: each time it reads and writes its schema's store.

life=prolly_life
life_q() { psql -X -At -v ON_ERROR_STOP=1 -d "$life" "$@"; }
psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $life" -c "CREATE DATABASE $life" >"$log" 2>&1
cli "$life" init >>"$log" 2>&1 && cli "$life" put main k1 v1 >>"$log" 2>&1 &&
	life_q -q -c "CREATE EXTENSION prolly SCHEMA public VERSION '0.1'" >>"$log" 2>&1 || sed 's/^/# /' "$log"

# A psql session kept open: life_open NAME starts it (errors shown by their SQLSTATE alone),
# life_sql NAME SQL runs SQL in it and prints what it printed, life_close NAME ends it.
life_open() {
	rm -f "$log.$1.in" "$log.$1.out"
	mkfifo "$log.$1.in"
	psql -X -q -At -d "$life" -v VERBOSITY=sqlstate <"$log.$1.in" >"$log.$1.out" 2>&1 &
	eval "exec {life_fd_$1}>\"\$log.$1.in\""
}
life_sql() {
	local fd mark="-- done $RANDOM$RANDOM" from
	eval "fd=\$life_fd_$1"
	from=$(($(wc -l <"$log.$1.out") + 1))
	printf '%s;\n\\echo %s\n' "$2" "$mark" >&"$fd"
	for _ in $(seq 600); do
		grep -qxF -- "$mark" "$log.$1.out" && break
		sleep 0.05
	done
	tail -n "+$from" "$log.$1.out" | grep -vxF -- "$mark"
}
life_close() {
	local fd
	eval "fd=\$life_fd_$1"
	exec {fd}>&-
	rm -f "$log.$1.in" "$log.$1.out"
}

# ---- a. declarations of an earlier 0.1 script ----
# prolly_commit as the first script declared it (four arguments), then as the second (five):
# the library read the fifth and sixth argument regardless, past the end of the call's
# arguments, and the backend died of a segmentation fault, taking every session of the server
# with it.
declare_commit() { # $1: the arguments after vals
	echo "ALTER EXTENSION prolly DROP FUNCTION prolly_commit;
DROP FUNCTION prolly_commit;
CREATE FUNCTION prolly_commit(branch text, keys bytea[], vals bytea[], $1) RETURNS text
AS '\$libdir/prolly', 'pgx_commit' LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;
ALTER EXTENSION prolly ADD FUNCTION prolly_commit;"
}
life_open a
pid=$(life_sql a "SELECT pg_backend_pid()")
head0=$(life_sql a "SELECT prolly_resolve('main')")
got=$(life_sql a "$(declare_commit "message text DEFAULT NULL")
SELECT prolly_commit('main', ARRAY['k2']::bytea[], ARRAY['v2']::bytea[]) IS NOT NULL;
SELECT prolly_commit('main', ARRAY['k3']::bytea[], ARRAY['v3']::bytea[], 'four') IS NOT NULL;
SELECT message FROM prolly_log('main', 2);
$(declare_commit "message text DEFAULT NULL, expected text DEFAULT NULL")
SELECT prolly_commit('main', ARRAY['k4']::bytea[], ARRAY['v4']::bytea[], 'five', prolly_resolve('main')) IS NOT NULL;
SELECT prolly_commit('main', ARRAY['k5']::bytea[], ARRAY['v5']::bytea[], 'five', '$head0') IS NOT NULL;
ALTER EXTENSION prolly UPDATE;
SELECT extversion, (SELECT string_agg(pronargs::text, ',') FROM pg_proc WHERE proname = 'prolly_commit')
  FROM pg_extension WHERE extname = 'prolly';
SELECT prolly_commit('main', ARRAY['k6']::bytea[], ARRAY['v6']::bytea[], 'six', prolly_resolve('main'), false) IS NOT NULL;
SELECT count(*) FROM prolly_tags();
ALTER EXTENSION prolly UPDATE;
ALTER EXTENSION prolly UPDATE TO '0.4';
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA public VERSION '0.1';
$(declare_commit "message text DEFAULT NULL")
ALTER EXTENSION prolly UPDATE TO '0.2';
SELECT (SELECT string_agg(pronargs::text, ',') FROM pg_proc WHERE proname = 'prolly_commit'),
       (SELECT count(*) FROM pg_depend WHERE deptype = 'e' AND classid = 'pg_proc'::regclass
          AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'prolly'));
ALTER EXTENSION prolly UPDATE;
SELECT extversion, (SELECT count(*) FROM pg_depend WHERE deptype = 'e' AND classid = 'pg_proc'::regclass
          AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'prolly'))
  FROM pg_extension WHERE extname = 'prolly';
SELECT prolly_merge_base('main', 'main~1') = prolly_resolve('main~1'), count(*) > 0 FROM prolly_reflog('main');
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA public;
SELECT extversion, (SELECT string_agg(pronargs::text, ',') FROM pg_proc WHERE proname = 'prolly_commit')
  FROM pg_extension WHERE extname = 'prolly';
SELECT prolly_commit('main', ARRAY['k5']::bytea[], ARRAY['v5']::bytea[], 'six', '$head0', true) IS NOT NULL;
SELECT prolly_count('main'), convert_from(prolly_get('main', 'k5'), 'UTF8'), pg_backend_pid() = $pid")
want="t
t
four
sql commit (1 edit)
t
ERROR:  40001
0.3|6
t
0
NOTICE:  00000
ERROR:  22023
6|21
0.3|28
t|t
0.3|6
t
6|v5|t"
if [ "$got" = "$want" ]; then
	ok "an earlier 0.1 script's prolly_commit (four, then five arguments) calls this library; ALTER EXTENSION prolly UPDATE takes either to 0.3, and a 0.2 database too; DROP and CREATE EXTENSION in the session declare 0.3"
else
	diff <(echo "$want") <(echo "$got") | sed 's/^/# /'
	not_ok "an earlier 0.1 script's prolly_commit (four, then five arguments) calls this library"
fi
life_close a

# ---- b. a restore in place under an open session ----
# The session's caches (decoded nodes, the commits' trees, the tables and plans, the engine's
# heads and epoch) hold what the restore removes; each read and write must find it gone, also
# where the dump's gc epoch is the one the session last read (the C client's store trusted the
# heads it had read at that epoch: docs/postgres.md, "Restoring into a database that programs
# have open").
pg_dump -Fc -f "$log.life" "$life" 2>"$log"
d0=$(life_q -c "SELECT prolly_resolve('main')")
life_open b
bad=
for round in same lower; do
	c1=$(life_sql b "SELECT count(*) FROM prolly_log('main');
SELECT prolly_put('main', 'gone', '$round')" | tail -n 1)
	life_sql b "SELECT prolly_branch('b1', 'main'); SELECT prolly_get('$c1', 'gone'); SELECT * FROM prolly_branches()" >/dev/null
	if [ $round = lower ]; then # a gc the session sees, then a restore to the epoch before it
		cli "$life" gc >/dev/null 2>>"$log"
		life_sql b "SELECT prolly_get('main', 'gone'); SELECT prolly_put('b1', 'k', 'v')" >/dev/null
	fi
	pg_restore --clean --if-exists -d "$life" "$log.life" 2>>"$log" || bad+=" $round:pg_restore"
	got=$(life_sql b "SELECT prolly_get('main', 'gone') IS NULL;
SELECT prolly_get('$c1', 'gone');
SELECT prolly_resolve('${c1:0:12}');
SELECT prolly_branch('x', '$c1');
SELECT prolly_branch('x', 'b1');
SELECT prolly_merge('main', '$c1');
SELECT prolly_commit('main', ARRAY['k']::bytea[], ARRAY['v']::bytea[], NULL, '$c1', true);
SELECT prolly_put('main', 'after', '$round') IS NOT NULL;
SELECT prolly_resolve('main~1') = '$d0', string_agg(name, ',') FROM prolly_branches()" | paste -sd' ')
	want="t$(printf ' ERROR:  42704%.0s' 1 2 3 4 5 6) t t|main"
	[ "$got" = "$want" ] || bad+=" $round:($got)"
	cli "$life" verify main >/dev/null 2>>"$log" || bad+=" $round:verify"
done
life_close b
rm -f "$log.life"
if [ -z "$bad" ]; then
	ok "a session open across a restore in place (same gc epoch, then a lower one): what it removed is not found (42704), and a commit builds on the restored head"
else
	sed 's/^/# /' "$log"
	not_ok "a session open across a restore in place:$bad"
fi

# ---- c. one session, two stores ----
# A copy of the store in schema s2 (the dump of public with its schema renamed, its gc epoch
# moved on: a gc's), the extension moved between the two stores by DROP and CREATE EXTENSION in
# one session, and in one transaction: the functions read and write the store of their schema
# each time (what the backend keeps is per schema, or named by hashes).
pg_dump -n public -f "$log.s2" "$life" 2>"$log" &&
	sed -e 's/"public"/"s2"/g' -e 's/public\./s2./g' -e 's/SCHEMA public/SCHEMA s2/g' "$log.s2" |
	life_q -q -f - >>"$log" 2>&1 &&
	life_q -q -c "UPDATE s2.meta SET value = value + 5 WHERE key = 'epoch'" >>"$log" 2>&1
life_open c
got=$(life_sql c "SELECT prolly_put('main', 'where', 'public') IS NOT NULL;
SELECT prolly_resolve('main') AS pub \\gset
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA s2;
SET search_path = s2;
SELECT prolly_get('main', 'where') IS NULL, prolly_put('main', 'where', 's2') IS NOT NULL;
SELECT prolly_branch('only_s2', 'main') IS NOT NULL;
SELECT prolly_get(:'pub', 'where');
BEGIN;
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA public;
SET search_path = public;
SELECT convert_from(prolly_get('main', 'where'), 'UTF8'), prolly_put('main', 'again', 'public') IS NOT NULL;
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA s2;
SET search_path = s2;
SELECT convert_from(prolly_get('main', 'where'), 'UTF8'), prolly_get('main', 'again') IS NULL;
COMMIT;
SET prolly.cache_size = 0;
SELECT string_agg(name || '=' || convert_from(prolly_get(name, 'where'), 'UTF8'), ',') FROM prolly_branches();
DROP EXTENSION prolly;
CREATE EXTENSION prolly SCHEMA public;
SET search_path = public;
SELECT string_agg(name || '=' || convert_from(prolly_get(name, 'where'), 'UTF8'), ',') FROM prolly_branches();" | paste -sd' ')
want="t t|t t ERROR:  42704 public|t s2|t main=s2,only_s2=s2 main=public"
life_close c
rm -f "$log.s2"
if [ "$got" = "$want" ] && cli "$life" verify main >>"$log" 2>&1; then
	ok "one session moves the extension between the stores of two schemas (DROP and CREATE EXTENSION): it reads and writes the store of its schema each time"
else
	sed 's/^/# /' "$log"
	not_ok "one session moves the extension between two stores: $got"
fi

psql -X -q -d "$db" -c "DROP DATABASE IF EXISTS $life" >/dev/null 2>&1
