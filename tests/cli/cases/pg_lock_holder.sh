# A session of a role with no grant at all holds the store's write lock (an advisory lock, which
# needs no privilege): put and gc used to wait forever, saying nothing. They now give up after
# lock_timeout (the store's default of 5 s, or the connection string's) naming the session
# (exit 5, nothing written), and once it is gone they work again.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
# The store URL with one more connection keyword.
with() {
	case $PROLLY_STORE in
	*://*\?*) printf '%s&%s' "$PROLLY_STORE" "$1" ;;
	*://*) printf '%s?%s' "$PROLLY_STORE" "$1" ;;
	*) printf '%s %s' "$PROLLY_STORE" "$1" ;;
	esac
}
# Runs prolly, shows its exit status and error line without what changes from run to run (the
# server's address, the holder's pid and role), and whether it gave up within max seconds.
timed() {
	local max=$1 t0=$SECONDS rc
	shift
	echo "\$ prolly $*"
	prolly "$@" 2>.err >/dev/null
	rc=$?
	echo "[exit $rc]"
	sed -E "s/on database [^ ]+ on [^ ]+ as [^ ,]+/on DB/; s/pid [0-9]+/pid N/; s/role $role,/role R,/" .err
	[ $((SECONDS - t0)) -le "$max" ] && echo "gave up within $max s"
}
p init
p put main k v
role=$(sql "SELECT current_database()")_h
sql "CREATE ROLE $role LOGIN"
PGAPPNAME=holder psql -X -q -tA -d "$(with "user=$role")" \
	-c "SELECT pg_advisory_lock(1886547822, hashtext('\"public\".meta'))" -c "SELECT pg_sleep(60)" \
	>/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do
	[ "$(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 1886547822
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")" = 1 ] && break
	sleep 0.1
done
timed 9 put main k v2
PROLLY_STORE=$(with "options=-c%20lock_timeout%3D1s") timed 4 gc
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$role'" >/dev/null
wait "$holder"
p put main k v3
p gc
p get main k
sql "DROP ROLE $role"
