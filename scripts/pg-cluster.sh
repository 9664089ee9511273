#!/usr/bin/env bash
# pg-cluster.sh - a throwaway PostgreSQL cluster for tests and benchmarks.
#
#   scripts/pg-cluster.sh start [DIR]   initdb into DIR/data (DIR: a new mktemp directory under
#                                       /tmp when omitted), start the server on a private Unix
#                                       socket (DIR/sock) and a free TCP port on 127.0.0.1, create
#                                       the database "prolly"; print `export ...` lines (also
#                                       written to DIR/env) and nothing else on stdout
#   scripts/pg-cluster.sh stop DIR      fast shutdown, then remove DIR (also after a failed start)
#   scripts/pg-cluster.sh env DIR       print DIR/env again
#   scripts/pg-cluster.sh bin           print the bin directory of the server `start` would run
#                                       (its psql, pg_dump, pgbench: the same version, and not
#                                       Debian's Perl wrappers in /usr/bin)
#   scripts/pg-cluster.sh standby DIR   make a streaming replica of DIR's running cluster
#                                       (pg_basebackup -R) in DIR/standby, start it as a hot
#                                       standby on DIR/standby/sock and a free TCP port, wait
#                                       until it accepts connections; print `export
#                                       PROLLY_PG_STANDBY_URL=... PROLLY_PG_STANDBY_PORT=...`
#                                       (also in DIR/standby/env); `stop DIR` stops it too
#   scripts/pg-cluster.sh database DIR NAME   create database NAME on DIR's running cluster, a
#                                       copy of "prolly"; print `export PROLLY_PG_URL=...
#                                       PROLLY_PG_PW_URL=...` naming it
#
# Exported: PROLLY_PG_URL (superuser "postgres" over the socket, trust auth), PROLLY_PG_PW_URL
# (role prolly_pw with a random password over TCP, scram-sha-256: for tests about passwords),
# PROLLY_PG_DIR, PROLLY_PG_PORT, PROLLY_PG_BIN (the server's bin directory, for pg_ctl).
#
# Usage from a shell:   eval "$(scripts/pg-cluster.sh start)"; ...; scripts/pg-cluster.sh stop "$PROLLY_PG_DIR"
#
# Run as root (as CI does), initdb and postgres run as the "postgres" user (they refuse root), so
# DIR must be a directory that user can reach; run as anyone else they run as that user. Settings:
# shared_preload_libraries=pg_stat_statements (the extension is created in "prolly"),
# track_io_timing=on, everything about durability left at its default. PG_SETTINGS (lines of
# postgresql.conf, e.g. PG_SETTINGS='shared_buffers = 1GB') is appended, for experiments. initdb
# runs once per server build; its output is copied for each cluster (init_data, PG_TEMPLATE=0 to
# initdb each time).
# The newest PostgreSQL found under /usr/lib/postgresql (or PG_BIN=...) is used.
set -euo pipefail

die() {
	echo "pg-cluster.sh: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 start [DIR] | stop DIR | env DIR | standby DIR | database DIR NAME | bin" >&2
	exit 2
}

find_bin() {
	if [ -n "${PG_BIN:-}" ]; then
		[ -x "$PG_BIN/initdb" ] || die "PG_BIN=$PG_BIN has no initdb"
		echo "$PG_BIN"
		return
	fi
	local best="" v
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] || continue
		v=$(basename "$(dirname "$d")")
		if [ -z "$best" ] || [ "$(printf '%s\n%s\n' "$best" "$v" | sort -V | tail -n 1)" = "$v" ]; then
			best=$v
		fi
	done
	[ -n "$best" ] || die "no PostgreSQL server found under /usr/lib/postgresql (apt-get install postgresql)"
	echo "/usr/lib/postgresql/$best/bin"
}

# Runs a command as the cluster's owner.
as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A new data directory is initdb's output with this setup applied (make_data): the database
# "prolly" with pg_stat_statements, and the role prolly_pw (its password is set per cluster).
# The database is copied from template1 as files (STRATEGY = FILE_COPY), not written to the WAL.
SETUP_SQL="CREATE DATABASE prolly STRATEGY = FILE_COPY;
CREATE ROLE prolly_pw LOGIN;
GRANT ALL ON DATABASE prolly TO prolly_pw;
\\c prolly
CREATE EXTENSION pg_stat_statements;
GRANT ALL ON SCHEMA public TO prolly_pw;"

# That directory for one server build and the options below is made once, kept in
# /tmp/prolly-pg-template.UID.KEY (KEY: a hash of the server's path, version, the options and the
# setup) and copied for every cluster: initdb took 1.6 s of CPU on the 2-CPU test machine, a copy
# 0.3 s, and a run of the tests starts some fifty clusters; the setup in the template saves each
# start a CREATE DATABASE (about 0.4 s of CPU). Each cluster still gets its own settings and
# password after the copy. A template is used only if it is a directory (not a link) owned by the
# cluster's owner with a complete data directory; else make_data runs as before.
# PG_TEMPLATE=0: make_data every time.
INITDB_ARGS=(-U postgres -E UTF8 --locale=C.UTF-8 --no-sync --auth-local=trust --auth-host=scram-sha-256)

template_ok() {
	local tpl=$1 owner
	owner=$(if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi)
	[ -d "$tpl" ] && [ ! -L "$tpl" ] && [ -f "$tpl/data/PG_VERSION" ] &&
		[ "$(stat -c %U "$tpl")" = "$owner" ]
}

# make_data BIN DATA LOG: initdb into DATA, then the setup above, on a server started for it that
# listens only on a socket in a directory of its own beside DATA (its log beside it too), then
# stopped.
make_data() {
	local bin=$1 data=$2 log=$3 sock
	sock=$(dirname "$data")/setup-sock
	as_owner "$bin/initdb" -D "$data" "${INITDB_ARGS[@]}" >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		return 1
	}
	as_owner mkdir -p "$sock" && as_owner chmod 700 "$sock" || return 1
	if ! as_owner "$bin/pg_ctl" -D "$data" -l "$sock.log" -w -t 60 \
		-o "-c listen_addresses='' -c unix_socket_directories='$sock' -p 5432" start >/dev/null 2>&1; then
		tail -n 20 "$sock.log" >&2
		return 1
	fi
	local rc=0
	as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p 5432 -U postgres -d postgres \
		<<<"$SETUP_SQL" >>"$log" 2>&1 || rc=1
	as_owner "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || rc=1
	rm -rf "$sock"
	[ "$rc" = 0 ] || tail -n 20 "$log" "$sock.log" >&2
	return "$rc"
}

# init_data BIN DATA LOG: a new cluster's data directory DATA, from the template or by make_data.
init_data() {
	local bin=$1 data=$2 log=$3 key tpl tmp
	if [ "${PG_TEMPLATE:-1}" != 0 ]; then
		key=$(printf '%s\n' "$bin" "$("$bin/postgres" --version)" "${INITDB_ARGS[*]}" "$SETUP_SQL" |
			md5sum | cut -c1-16)
		tpl=/tmp/prolly-pg-template.$(id -u).$key
		if ! template_ok "$tpl"; then
			tmp=$(mktemp -d "$tpl.XXXXXX") || die "mktemp failed"
			if [ "$(id -u)" = 0 ]; then chown postgres: "$tmp"; fi
			if make_data "$bin" "$tmp/data" "$log"; then
				# Another start may have made it meanwhile: then its copy stays.
				mv -T "$tmp" "$tpl" 2>/dev/null || rm -rf "$tmp"
			else
				rm -rf "$tmp"
				return 1
			fi
		fi
		if template_ok "$tpl" && as_owner cp -a "$tpl/data" "$data" 2>>"$log"; then
			return 0
		fi
		rm -rf "$data"
	fi
	make_data "$bin" "$data" "$log"
}

# Prints a TCP port on which nothing listens (IPv4 or IPv6), from a random start.
free_port() {
	local used="" port i hex
	# Listening sockets' local ports, in hex in /proc (plain awk: mawk has no strtonum).
	for hex in $(awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u || true); do
		used+="$((16#$hex))"$'\n'
	done
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	for ((i = 0; i < 200; i++)); do
		if ! grep -qx "$port" <<<"$used"; then
			echo "$port"
			return
		fi
		port=$((port + 1))
		[ "$port" -lt 60000 ] || port=20000
	done
	die "no free TCP port found"
}

# start_server DATA LOG SOCKDIR WHAT: starts the server of DATA on a free port (another one when
# the port was taken meanwhile, three tries), waits until it accepts connections on SOCKDIR, and
# sets started_port; dies naming WHAT with the log's tail otherwise.
start_server() {
	local data=$1 slog=$2 sock=$3 what=$4 tries i
	for tries in 1 2 3; do
		started_port=$(free_port)
		if as_owner "$bin/pg_ctl" -D "$data" -l "$slog" -w -t 60 -o "-p $started_port" start \
			>/dev/null 2>&1; then
			break
		fi
		if [ "$tries" = 3 ] || ! grep -q "could not bind\|Address already in use" "$slog"; then
			tail -n 20 "$slog" >&2 || true
			die "$what did not start (log above, from $slog)"
		fi
	done
	for ((i = 0; i < 100; i++)); do
		as_owner "$bin/pg_isready" -q -h "$sock" -p "$started_port" -d postgres -U postgres && break
		sleep 0.1
	done
	as_owner "$bin/pg_isready" -q -h "$sock" -p "$started_port" -d postgres -U postgres ||
		die "$what does not accept connections (see $slog)"
}

cmd_stop() {
	local dir=$1 bin
	[ -n "$dir" ] || usage
	[ -e "$dir" ] || return 0
	if [ -f "$dir/standby/data/postmaster.pid" ]; then
		bin=$(cat "$dir/bin" 2>/dev/null || find_bin)
		as_owner "$bin/pg_ctl" -D "$dir/standby/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
	fi
	if [ -f "$dir/data/postmaster.pid" ]; then
		bin=$(cat "$dir/bin" 2>/dev/null || find_bin)
		as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || {
			# Last resort: the postmaster's pid from its own pid file.
			local pid
			pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
				kill -QUIT "$pid" 2>/dev/null || true
				sleep 1
			fi
		}
	fi
	rm -rf "$dir"
}

# env_of DIR NAME: the value of NAME in the env file of the cluster in DIR ("" if not there).
env_of() {
	(. "$1/env" && eval "printf '%s' \"\${$2:-}\"")
}

# urls DIR PORT PASSWORD DATABASE: the `export` lines of the two URLs of database DATABASE on
# the cluster in DIR (the only place that spells them).
urls() {
	echo "export PROLLY_PG_URL='postgresql://postgres@/$4?host=$1/sock&port=$2'"
	echo "export PROLLY_PG_PW_URL='postgresql://prolly_pw:$3@127.0.0.1:$2/$4'"
}

cmd_start() {
	local dir=${1:-} bin port pw t0 t1 log
	t0=$(date +%s%N)
	bin=$(find_bin)
	if [ -z "$dir" ]; then
		dir=$(mktemp -d /tmp/prolly-pg.XXXXXX) || die "mktemp failed"
	else
		[ ! -e "$dir/data" ] || die "$dir/data exists: stop that cluster first ($0 stop $dir)"
		mkdir -p "$dir" || die "cannot create $dir"
	fi
	dir=$(cd "$dir" && pwd)
	# From here on any failure (an error or a die) stops what was started and removes DIR.
	started=0
	trap 'if [ "$started" != 1 ]; then cmd_stop "$dir" >/dev/null 2>&1 || true; fi' EXIT
	echo "$bin" >"$dir/bin"
	mkdir -p "$dir/sock"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$dir" "$dir/sock" "$dir/bin"
		as_owner test -w "$dir" ||
			die "user postgres cannot write $dir (a parent directory is not traversable); pick a DIR under /tmp"
	fi
	chmod 700 "$dir/sock"
	log="$dir/server.log"
	pw=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

	init_data "$bin" "$dir/data" "$dir/initdb.log"
	cat >>"$dir/data/postgresql.conf" <<EOF
# pg-cluster.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir/sock'
shared_preload_libraries = 'pg_stat_statements'
track_io_timing = on
max_connections = 200
logging_collector = off
${PG_SETTINGS:-}
EOF
	start_server "$dir/data" "$log" "$dir/sock" "the server"
	port=$started_port
	as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d postgres \
		>"$dir/setup.log" 2>&1 <<EOF || { cat "$dir/setup.log" >&2; false; }
ALTER ROLE prolly_pw PASSWORD '$pw';
EOF
	{
		urls "$dir" "$port" "$pw" prolly
		echo "export PROLLY_PG_DIR='$dir'"
		echo "export PROLLY_PG_PORT='$port'"
		echo "export PROLLY_PG_BIN='$bin'"
	} >"$dir/env"
	chmod 600 "$dir/env"
	started=1
	t1=$(date +%s%N)
	cat "$dir/env"
	echo "pg-cluster.sh: started PostgreSQL $("$bin/postgres" --version | awk '{print $3}') in $dir (port $port) in $(((t1 - t0) / 1000000)) ms" >&2
}

# A hot standby of the cluster in $1, streaming from it over its socket (initdb's pg_hba.conf
# lets local connections replicate).
cmd_standby() {
	local dir=$1 bin port sport sdir i
	[ -f "$dir/env" ] || die "no cluster in $dir (no $dir/env)"
	[ ! -e "$dir/standby" ] || die "$dir/standby exists: one standby per cluster"
	bin=$(cat "$dir/bin")
	port=$(env_of "$dir" PROLLY_PG_PORT)
	[ -n "$bin" ] && [ -n "$port" ] || die "$dir/env names no port"
	sdir=$dir/standby
	mkdir -p "$sdir/sock"
	[ "$(id -u)" != 0 ] || chown postgres: "$sdir" "$sdir/sock"
	chmod 700 "$sdir/sock"
	as_owner "$bin/pg_basebackup" -h "$dir/sock" -p "$port" -U postgres -D "$sdir/data" -R \
		-X stream --checkpoint=fast --no-sync >"$sdir/basebackup.log" 2>&1 || {
		tail -n 20 "$sdir/basebackup.log" >&2
		die "pg_basebackup failed"
	}
	printf '%s\n' "# pg-cluster.sh standby" "unix_socket_directories = '$sdir/sock'" \
		"hot_standby = on" >>"$sdir/data/postgresql.conf"
	start_server "$sdir/data" "$sdir/server.log" "$sdir/sock" "the standby"
	sport=$started_port
	{
		echo "export PROLLY_PG_STANDBY_URL='postgresql://postgres@/prolly?host=$sdir/sock&port=$sport'"
		echo "export PROLLY_PG_STANDBY_PORT='$sport'"
	} >"$sdir/env"
	cat "$sdir/env"
}

# A database NAME on the running cluster in $1: a copy of "prolly" (pg_stat_statements, the grants
# inside it), with CREATE on it for prolly_pw as on "prolly". Prints the two URLs' export lines
# for it. For a program that shares a server with others but needs a database of its own (the
# prolly extension goes in one schema per database). Nobody may be connected to "prolly" then
# (CREATE DATABASE copies it).
cmd_database() {
	local dir=$1 name=$2 bin port pw
	[ -f "$dir/env" ] || die "no cluster in $dir (no $dir/env)"
	[[ "$name" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] ||
		die "database name '$name': lower-case letters, digits and _, at most 63"
	bin=$(cat "$dir/bin")
	port=$(env_of "$dir" PROLLY_PG_PORT)
	pw=$(env_of "$dir" PROLLY_PG_PW_URL)
	pw=${pw#*://prolly_pw:} && pw=${pw%%@*} # the password, as urls spells it
	[ -n "$bin" ] && [ -n "$port" ] && [ -n "$pw" ] || die "$dir/env names no port or password"
	as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d postgres \
		-c "CREATE DATABASE $name TEMPLATE prolly" -c "GRANT ALL ON DATABASE $name TO prolly_pw" \
		>"$dir/database-$name.log" 2>&1 || {
		cat "$dir/database-$name.log" >&2
		die "could not create database $name"
	}
	urls "$dir" "$port" "$pw" "$name"
}

case "${1:-}" in
start)
	[ $# -le 2 ] || usage
	cmd_start "${2:-}"
	;;
stop)
	[ $# -eq 2 ] || usage
	cmd_stop "$2"
	;;
standby)
	[ $# -eq 2 ] || usage
	cmd_standby "$2"
	;;
database)
	[ $# -eq 3 ] || usage
	cmd_database "$2" "$3"
	;;
bin)
	[ $# -eq 1 ] || usage
	find_bin
	;;
env)
	[ $# -eq 2 ] || usage
	[ -f "$2/env" ] || die "no cluster in $2 (no $2/env)"
	cat "$2/env"
	;;
*)
	usage
	;;
esac
