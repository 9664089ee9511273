#!/usr/bin/env bash
# service_cpu.sh - the CPU one service operation costs (docs/benchmarks/service-scale.md,
# "Where the CPU goes").
#
#   scripts/service_cpu.sh [--class all|point_read|multi_read|commit|diff|merge] [--clients N]
#       [--pool N] [--records N] [--warmup-ms N] [--duration-ms N] [--sample-s S]
#       [any other harness flag, e.g. --hot-root-share 0]
#
# Runs one cell of the service suite of bench/workloads/default.toml
# (defaults: every class in the profile's mix, 8 clients, pool 8, 100k records, warmup 3 s,
# duration 8 s) into a scratch directory, with --class C making C 100% of the mix. Over S seconds
# (default 5) inside the timed part it samples the machine's busy time (/proc/stat: user, nice,
# system, irq, softirq) and the harness process's own (utime + stime of /proc/PID/stat), then
# prints one line: successful ops/s, p99, statements per operation, cores busy, CPU per
# successful operation and the harness's part of it (the rest is PostgreSQL and the kernel
# working for it). Meaningful on an otherwise idle machine only.
#
# The server is $PROLLY_PG_URL, or a throwaway cluster (scripts/pg-cluster.sh) started and
# stopped here. The harness is built first (make bench-bin).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
class=all clients=8 pool=8 records=100000 warmup=3000 duration=8000 sample=5
extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	--class) class=$2; shift 2 ;;
	--clients) clients=$2; shift 2 ;;
	--pool) pool=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--warmup-ms) warmup=$2; shift 2 ;;
	--duration-ms) duration=$2; shift 2 ;;
	--sample-s) sample=$2; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) extra+=("$1"); shift ;;
	esac
done
case "$class" in
all | point_read | multi_read | commit | diff | merge) ;;
*) echo "service_cpu.sh: unknown class '$class'" >&2; exit 2 ;;
esac
if [ $((duration / 1000)) -lt $((sample + 2)) ]; then
	echo "service_cpu.sh: --duration-ms must leave 2 s beyond --sample-s" >&2
	exit 2
fi

make -C "$root" -s bench-bin >&2
harness="$root/$BUILD/bench/harness"
scratch=$(mktemp -d /tmp/prolly-cpu.XXXXXX)
cluster=""
hpid=""
cleanup() {
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null || true
	[ -n "$cluster" ] && "$root/scripts/pg-cluster.sh" stop "$cluster" >/dev/null 2>&1 || true
	rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
if [ -z "${PROLLY_PG_URL:-}" ]; then
	cluster=$(mktemp -d /tmp/prolly-pg.XXXXXX)
	chmod 755 "$cluster"
	eval "$("$root/scripts/pg-cluster.sh" start "$cluster")"
fi

mix=()
if [ "$class" != all ]; then
	for k in point_read multi_read commit diff merge; do
		v=0
		[ "$k" = "$class" ] && v=100
		mix+=(--set "service.operation_mix.$k=$v")
	done
fi

busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
own() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$harness" --config "$root/bench/workloads/default.toml" --suite service \
	--output "$scratch/out" --records "$records" --clients "$clients" --pool-sizes "$pool" \
	--warmup-ms "$warmup" --duration-ms "$duration" ${mix[@]+"${mix[@]}"} \
	${extra[@]+"${extra[@]}"} >"$scratch/log" 2>&1 &
hpid=$!
# The cell starts when the harness prints its progress line; sample 1 s after the warmup.
until grep -q "clients=" "$scratch/log" 2>/dev/null; do
	kill -0 "$hpid" 2>/dev/null || { cat "$scratch/log" >&2; exit 5; }
	sleep 0.2
done
sleep $((warmup / 1000 + 1))
b0=$(busy) h0=$(own "$hpid")
sleep "$sample"
b1=$(busy) h1=$(own "$hpid")
rc=0
wait "$hpid" || rc=$?
hpid=""
[ "$rc" = 0 ] || { cat "$scratch/log" >&2; exit "$rc"; }

# The raw CSV has no quoted fields (docs/harness.md); columns are found by name.
awk -F, -v cls="$class" -v c="$clients" -v p="$pool" -v s="$sample" -v b0="$b0" -v b1="$b1" \
	-v h0="$h0" -v h1="$h1" -v hz="$(getconf CLK_TCK)" '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$col["op_class"] == "all" {
	ops = $col["succeeded_per_s"]
	cores = (b1 - b0) / hz / s
	own = (h1 - h0) / hz / s
	printf "%s c%s-p%s: %.1f ok/s, p99 %.2f ms, %.2f statements/op, %.2f cores busy, ", cls, c, p,
		ops, $col["p99_ms"], $col["statements_per_op"], cores
	printf "%.0f us CPU/op of which harness %.0f us, %s conflicts\n", cores / ops * 1e6,
		own / ops * 1e6, $col["conflicts"]
}' "$scratch/out/service-raw.csv"
