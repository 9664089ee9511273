#!/usr/bin/env bash
# scripts/check-includes.sh - checks that every #include "..." stays inside its layer.
#
# The Makefile (and fuzz/run.sh) give each layer only the -I paths it may use, so most crossings
# fail to compile. This catches the rest: a relative path ("../../src/internal.h") that -I cannot
# stop, and internal functions (prolly__*) declared by hand outside the library. Each quoted
# include is resolved as the compiler would (the including file's folder, then the layer's -I
# folders); the file it names must lie in one of the layer's allowed folders. An include that
# the layer cannot resolve but that names a project header elsewhere (src/, bench/lib/, tests/,
# fuzz/) is reported too. Layers:
#
#   include/             public headers: include/ only
#   src/*.[ch]           the engine: src/ and include/; never src/cli/, bench/, tests/, fuzz/
#   src/store/*.[ch]     stores: src/store/ (store_int.h, their own headers) and include/ (prolly.h,
#                        prolly/store.h) only; never the engine's headers (src/internal.h,
#                        src/format.h): what a store needs of the engine is in prolly/store.h
#   src/cli/*.[ch]       the CLI: src/cli/ and include/ (the public API, nothing else)
#   bench/lib/           the benchmarks' shared modules: bench/lib/ and include/
#   bench/scale/         the scale engine: bench/scale/, bench/lib/ and include/
#   bench/harness/       the harness's runner: bench/harness/, bench/lib/ and include/ (it names
#                        suites only through the h_suite table, never their files)
#   bench/tables/        versioned tables and their contenders: bench/tables/, bench/lib/ and
#                        include/
#   bench/suites/        suites: bench/suites/, bench/harness/, bench/tables/, bench/lib/,
#                        include/ and the scale engine's API bench/scale/scale.h (never its
#                        internal engine.h)
#   bench/*.c            stand-alone bench programs: bench/lib/ and include/
#   bench/workloads/, bench/results/  hold no C
#   ext/**               the PostgreSQL extension: ext/ and include/ (and PostgreSQL's headers)
#   fuzz/                targets of the harness's decoders: fuzz/, bench/lib/ and include/; the
#                        library's own decoders (internal_targets in fuzz/run.sh), fuzz_check.h
#                        and gen_corpus.c may also see src/; the CLI's decoders (cli_targets)
#                        fuzz/, src/cli/ and include/
#   tests/               anything (tests may test internals)
#
# Private headers of one module: bench/lib/toml_int.h (the TOML reader's internals, toml__*) is
# included, and its toml__* names are used, only by the TOML reader's own files bench/lib/toml*.c.
#
# Prints every violation and exits 1 if there is one. Run by `make check-includes` and .ci/run.
set -euo pipefail

cd "$(dirname "$0")/.."

fail=0
bad() {
	echo "check-includes: $*"
	fail=1
}

# under PATH DIR...: 0 if PATH lies in one of the folders DIR.
under() {
	local path=$1 d
	shift
	for d in "$@"; do
		case "$path" in "$d"/*) return 0 ;; esac
	done
	return 1
}

# check FILE "SEARCH..." "ALLOWED..." "FORBIDDEN...": every quoted include of FILE, resolved
# from FILE's folder then each SEARCH folder, must lie in an ALLOWED folder and in no FORBIDDEN
# one (a sub-folder of an allowed one).
check() {
	local file=$1 search=$2 allowed=$3 forbidden=$4 inc dir cand hit s
	dir=$(dirname "$file")
	while IFS= read -r inc; do
		hit=
		for s in "$dir" $search; do
			cand=$(realpath -m --relative-to=. "$s/$inc")
			if [ -f "$cand" ]; then
				hit=$cand
				break
			fi
		done
		if [ -z "$hit" ]; then
			# Not visible to this layer: say so if it is a project header elsewhere.
			for s in src src/store bench/lib bench/harness bench/scale bench/tables tests fuzz; do
				if [ -f "$s/$inc" ]; then
					bad "$file includes \"$inc\" ($s/$inc), outside its layer's include path"
					break
				fi
			done
			continue
		fi
		# shellcheck disable=SC2086
		if ! under "$hit" $allowed || { [ -n "$forbidden" ] && under "$hit" $forbidden; }; then
			bad "$file includes \"$inc\", which is $hit: outside its layer (allowed: $allowed)"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
}

files() {
	find "$@" -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort
}

for f in $(files include); do
	check "$f" "include" "include" ""
done
for f in $(files src -maxdepth 1); do
	check "$f" "include src" "src include" "src/cli"
done
for f in $(files src/store); do
	check "$f" "include src" "src/store include" ""
done
for f in $(files src/cli); do
	check "$f" "include" "src/cli include" ""
done
for f in $(files bench/lib); do
	check "$f" "include bench/lib" "bench/lib include" ""
done
for f in $(files bench/scale); do
	check "$f" "include bench/lib" "bench/scale bench/lib include" ""
done
for f in $(files bench/harness); do
	check "$f" "include bench/lib bench/harness" "bench/harness bench/lib include" ""
done
for f in $(files bench/tables); do
	check "$f" "include bench/lib" "bench/tables bench/lib include" ""
done
for f in $(files bench/suites); do
	check "$f" "include bench/lib bench/harness bench/tables" "bench/suites bench/harness bench/tables bench/lib include bench/scale" ""
	if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*engine\.h"' "$f"; then
		bad "$f includes the scale engine's internal engine.h (use bench/scale/scale.h)"
	fi
done
for f in $(files bench -maxdepth 1); do
	check "$f" "include bench/lib" "bench/lib include" ""
done
for f in $(find bench/workloads bench/results -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null); do
	bad "$f: C source in a data folder (bench/workloads, bench/results)"
done
for f in $(files ext); do
	check "$f" "include" "ext include" ""
done

internal_targets=$(sed -n 's/^internal_targets="\(.*\)".*/\1/p' fuzz/run.sh 2>/dev/null || true)
cli_targets=$(sed -n 's/^cli_targets="\(.*\)".*/\1/p' fuzz/run.sh 2>/dev/null || true)
for f in $(files fuzz); do
	base=$(basename "$f")
	target=${base#fuzz_}
	target=${target%.c}
	case "$base" in
	fuzz_check.h | gen_corpus.c) continue ;;
	esac
	case " $internal_targets " in *" $target "*) continue ;; esac
	case " $cli_targets " in
	*" $target "*) check "$f" "include fuzz src/cli" "fuzz src/cli include" "" ;;
	*) check "$f" "include fuzz bench/lib" "fuzz bench/lib include" "" ;;
	esac
done

# Internal functions are the library's: nothing outside it (but its tests and the fuzz targets
# of its decoders) names one. Comments count too; say "the library's node decoder" instead.
while IFS= read -r hit; do
	bad "$hit: names an internal function outside the library"
done < <(grep -rnE '\bprolly__[A-Za-z0-9_]+' src/cli bench include ext --include='*.[ch]' || true)

# The TOML reader's internals stay in its own files (toml_int.h says which).
while IFS= read -r hit; do
	case "${hit%%:*}" in bench/lib/toml*.[ch]) continue ;; esac
	bad "$hit: uses the TOML reader's internals (toml_int.h, toml__*) outside bench/lib/toml*.c"
done < <(grep -rnE '#[[:space:]]*include[[:space:]]*"([^"]*/)?toml_int\.h"|\btoml__[A-Za-z0-9_]+' \
	src include bench tests fuzz ext --include='*.[ch]' || true)

if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "check-includes: every include stays inside its layer"
