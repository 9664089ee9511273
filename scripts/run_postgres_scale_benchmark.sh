#!/usr/bin/env bash
# run_postgres_scale_benchmark.sh - builds and runs the benchmark harness (docs/harness.md).
#
#   scripts/run_postgres_scale_benchmark.sh --config FILE --suite service|scale|both --output DIR
#       [--baseline DIR] [--allow-environment-mismatch] [--url URL] [--store postgres|lmdb|mem]
#       [--revision REV] [any other harness flag, see: build/bench/harness --help]
#
# Builds build/bench/harness (make), then runs it with the same flags. With the postgres store
# (the default) and neither --url nor $PROLLY_PG_URL, it starts a throwaway PostgreSQL cluster
# with scripts/pg-cluster.sh (pg_stat_statements and track_io_timing on, durability settings at
# PostgreSQL's defaults) and stops it at the end, also on failure or interrupt. The URL reaches
# the harness through the environment, never on a command line. The exit status is the
# harness's (0 done, 1 a regression gate tripped, 2 usage, 3 output directory of another run,
# 4 environment mismatch, 5 failure).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
args=()
url="" store=postgres want_help=0
while [ $# -gt 0 ]; do
	case "$1" in
	--url) url=$2; shift 2 ;;
	--url=*) url=${1#--url=}; shift ;;
	--store) store=$2; args+=("$1" "$2"); shift 2 ;;
	--store=*) store=${1#--store=}; args+=("$1"); shift ;;
	-h | --help) want_help=1; args+=("$1"); shift ;;
	*) args+=("$1"); shift ;;
	esac
done

# A fresh Debian machine: install what the build and the throwaway server need (as root), or
# say what is missing.
need_pkgs() {
	pkg-config --exists libcrypto libxxhash lmdb libpq 2>/dev/null || return 0
	command -v cc >/dev/null && command -v make >/dev/null || return 0
	if [ "$store" = postgres ] && [ -z "$url" ] && [ -z "${PROLLY_PG_URL:-}" ] &&
		! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then return 0; fi
	return 1
}
if need_pkgs; then
	pkgs="build-essential pkg-config libssl-dev libxxhash-dev liblmdb-dev libpq-dev postgresql git"
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "run_postgres_scale_benchmark.sh: installing build dependencies: $pkgs" >&2
		# Installing postgresql must not start a server: the harness starts its own.
		policy=0
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
			policy=1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >&2
		st=$?
		if [ "$policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
		[ "$st" -eq 0 ] || { echo "run_postgres_scale_benchmark.sh: apt-get failed" >&2; exit 5; }
	else
		echo "run_postgres_scale_benchmark.sh: missing build dependencies; on Debian run as root:" >&2
		echo "  apt-get install $pkgs" >&2
		exit 5
	fi
fi

make -C "$root" -s BUILD="$BUILD" "$BUILD/bench/harness" >&2
harness="$root/$BUILD/bench/harness"
if [ "$want_help" = 1 ]; then
	exec "$harness" "${args[@]}"
fi

cluster_dir=""
cleanup() {
	if [ -n "$cluster_dir" ]; then
		"$root/scripts/pg-cluster.sh" stop "$cluster_dir" >&2 || true
		cluster_dir=""
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$url" ]; then
	export PROLLY_PG_URL=$url
elif [ "$store" = postgres ] && [ -z "${PROLLY_PG_URL:-}" ]; then
	echo "run_postgres_scale_benchmark.sh: starting a throwaway PostgreSQL cluster" >&2
	envfile=$(mktemp)
	if ! "$root/scripts/pg-cluster.sh" start >"$envfile"; then
		rm -f "$envfile"
		echo "run_postgres_scale_benchmark.sh: could not start PostgreSQL" >&2
		exit 5
	fi
	# shellcheck disable=SC1090
	. "$envfile"
	rm -f "$envfile"
	cluster_dir=$PROLLY_PG_DIR
	export PROLLY_PG_URL
fi

# The harness records the revision and dirty state of this source tree (git in it).
export PROLLY_SOURCE_DIR=$root
set +e
"$harness" "${args[@]}"
status=$?
set -e
exit "$status"
