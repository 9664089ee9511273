#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] - builds the libFuzzer targets fuzz/fuzz_*.c (node, commit and reflog
# decoders; the proof checker; the URL redactor, against libpq's parser; the revision spec and
# name parsers; the check of a remote's URL; the CLI's escapes and apply input, with their
# src/cli/ files compiled in; the harness's TOML reader, HDR text form, CSV reader and count
# grammar, with bench/lib/ files compiled in) with clang
# (-fsanitize=fuzzer,address,undefined, the library rebuilt with coverage into build-fuzz/),
# generates a seed corpus of valid encodings (fuzz/gen_corpus.c), and runs each target for
# SECONDS (default 30). Crashes are saved as build-fuzz/fuzz-own/crash-TARGET-*; re-run one with
#   build-fuzz/fuzz-own/fuzz_TARGET build-fuzz/fuzz-own/crash-TARGET-<hash>
# Needs clang with libFuzzer (Debian: apt-get install -y clang). Exit status non-zero if any
# target found a problem.
set -euo pipefail

secs=${1:-30}
cd "$(dirname "$0")/.."
if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz/run.sh: clang not found (Debian: apt-get install -y clang)" >&2
	exit 2
fi

PKGS="libcrypto libxxhash lmdb libpq"
libs="$(pkg-config --libs $PKGS) -lpthread -lm"
out=build-fuzz/fuzz-own
mkdir -p "$out"

# The library with sanitizers and coverage (the Makefile's FUZZ=1 mode), and a plain one for the
# corpus generator.
make -s -j"${JOBS:-$(nproc 2>/dev/null || echo 1)}" CC=clang SAN=1 FUZZ=1 WERROR= BUILD=build-fuzz build-fuzz/libprolly.a
make -s -j"${JOBS:-$(nproc 2>/dev/null || echo 1)}" build/libprolly.a

# Include paths state the layers, as in the Makefile: the targets of the library's own decoders
# (internal_targets, and the corpus generator) see src/; the others (the harness's decoders) see
# only the public header, fuzz/ and bench/lib/, so an include of src/ fails to compile there.
# The targets of the CLI's decoders (cli_targets) see the public header, fuzz/ and src/cli/, and
# have the CLI's files they test (cli_sources) compiled in: the library exports nothing for them.
# scripts/check-includes.sh reads these lists.
internal_targets="node commit reflog"
cli_targets="escape apply"
cli_sources="src/cli/escape.c src/cli/input.c src/cli/report.c"

cc -std=c11 -D_GNU_SOURCE -O1 -g1 -Iinclude -Isrc -Ibench/lib $(pkg-config --cflags $PKGS) \
	fuzz/gen_corpus.c bench/lib/hdr.c bench/lib/rng.c bench/lib/csv.c bench/lib/buf.c bench/lib/err.c \
	build/libprolly.a $libs -o "$out/gen_corpus"
rm -rf "$out/seeds"
mkdir -p "$out/seeds/node" "$out/seeds/commit" "$out/seeds/hdr" "$out/seeds/toml" "$out/seeds/proof" "$out/seeds/redact" "$out/seeds/spec" \
	"$out/seeds/escape" "$out/seeds/csv" "$out/seeds/remote_url" "$out/seeds/apply" \
	"$out/seeds/count"
"$out/gen_corpus" "$out/seeds"
# The workload files are the TOML reader's seeds.
cp bench/workloads/*.toml "$out/seeds/toml/"

# The harness's modules that the targets test or use (bench/lib/), compiled once into an archive
# with the targets' flags (coverage without libFuzzer's main); each target links what it needs.
# Compiled into every target, they were most of the targets' build: 4 of 5 s of CPU each.
bench_sources="bench/lib/toml*.c bench/lib/buf.c bench/lib/hdr.c bench/lib/csv.c bench/lib/err.c bench/lib/count.c"
fuzz_cflags="-std=c11 -D_GNU_SOURCE -O1 -g1 -fno-omit-frame-pointer -fno-sanitize-recover=all"
mkdir -p "$out/benchlib"
rm -f "$out/benchlib/"*.o "$out/libbench.a"
# shellcheck disable=SC2086
printf '%s\n' $bench_sources | xargs -P "${JOBS:-$(nproc 2>/dev/null || echo 1)}" -I{} sh -c \
	'clang $1 -fsanitize=fuzzer-no-link,address,undefined -Iinclude -Ibench/lib -c "$2" -o "$3/benchlib/$(basename "$2" .c).o"' \
	sh "$fuzz_cflags" {} "$out"
ar rcs "$out/libbench.a" "$out/benchlib/"*.o

# Targets are built, then run, JOBS at a time (default: the number of CPUs): each fuzzer is one
# process, so two targets on two cores get the same time each as one after the other would.
jobs=${JOBS:-$(nproc 2>/dev/null || echo 1)}
names=()
for src in fuzz/fuzz_*.c; do names+=("$(basename "$src" .c)"); done

# build NAME: compiles and links fuzz/NAME.c into $out/NAME; its diagnostics in $out/NAME.build.
build() {
	local name=$1 target=${1#fuzz_} inc="-Iinclude -Ifuzz -Ibench/lib" more=
	case " $internal_targets " in *" $target "*) inc="$inc -Isrc" ;; esac
	case " $cli_targets " in *" $target "*) inc="-Iinclude -Ifuzz -Isrc/cli" more=$cli_sources ;; esac
	# shellcheck disable=SC2086
	clang $fuzz_cflags -fsanitize=fuzzer,address,undefined $inc $(pkg-config --cflags $PKGS) \
		"fuzz/$name.c" $more "$out/libbench.a" build-fuzz/libprolly.a $libs -o "$out/$name" \
		>"$out/$name.build" 2>&1
}

# fuzz NAME: runs one target for $secs seconds; writes its verdict line to $out/NAME.result and
# returns non-zero if it found a problem (or did not build).
fuzz() {
	local name=$1 target=${1#fuzz_} seeds
	if ! build "$name"; then
		echo "not ok - $name (does not build: $out/$name.build)" >"$out/$name.result"
		return 1
	fi
	# The working corpus grows as the fuzzer finds new coverage; the seeds stay untouched.
	mkdir -p "$out/corpus/$target"
	seeds="$out/seeds/$target"
	[ -d "$seeds" ] || seeds=
	if ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1} \
	   UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	   "$out/$name" -max_total_time="$secs" -print_final_stats=1 \
	   -artifact_prefix="$out/crash-$target-" "$out/corpus/$target" $seeds \
	   >"$out/$name.log" 2>&1; then
		echo "ok - $name ($(grep -E '^stat::number_of_executed_units' "$out/$name.log" | awk '{print $2}') runs)" >"$out/$name.result"
	else
		echo "not ok - $name (log: $out/$name.log)" >"$out/$name.result"
		return 1
	fi
}

echo "fuzz: ${#names[@]} targets, ${secs}s each, $jobs at a time"
for name in "${names[@]}"; do
	rm -f "$out/$name.result" "$out/$name.log"
	fuzz "$name" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait

# The verdicts in the targets' order, with the end of each failure's log or build output.
fail=0
for name in "${names[@]}"; do
	if [ ! -f "$out/$name.result" ]; then
		echo "not ok - $name (no verdict)"
		fail=1
		continue
	fi
	if grep -q '^not ok' "$out/$name.result"; then
		if [ -s "$out/$name.log" ]; then tail -n 40 "$out/$name.log"; else tail -n 40 "$out/$name.build"; fi
		fail=1
	fi
	cat "$out/$name.result"
done
exit $fail
