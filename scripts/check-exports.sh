#!/usr/bin/env bash
# scripts/check-exports.sh [LIBRARY] - checks that the shared library exports exactly the contract.
#
# The contract is every function declared in the public headers (include/*.h, include/*/*.h).
# Each such declaration must carry the export marker PROLLY_API (include/prolly.h); the library
# is built with -fvisibility=hidden, so nothing else is exported. This compares the marked
# declarations with `nm -D --defined-only LIBRARY` (default build/libprolly.so) and fails,
# listing every difference:
#   - a public function declared without PROLLY_API;
#   - a symbol the library exports that no public header declares (an internal function, a test
#     hook, a global variable that leaked);
#   - a marked declaration the library does not export (no definition, or one that does not see
#     the header's declaration);
#   - a test hook (a function declared between "#ifdef PROLLY_TEST_HOOKS" and "#endif" in a
#     header under src/) that LIBRARY or the libprolly.a beside it defines at all: hooks exist
#     only in the tests' archive, libprolly_test.a (Makefile, HOOK_SRC).
# Run by `make check-exports` and by .ci/run. Needs nm (binutils) and perl.
set -euo pipefail

cd "$(dirname "$0")/.."
lib=${1:-build/libprolly.so}
if [ ! -f "$lib" ]; then
	echo "check-exports: $lib not found (run make first)" >&2
	exit 2
fi

headers=$(find include -name '*.h' | sort)
if [ -z "$headers" ]; then
	echo "check-exports: no header under include/" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prolly-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Every file-scope declaration of a prolly_ function: comments and preprocessor lines removed,
# the text cut into statements at ';', '{' and '}'; a statement that is not a typedef and names
# prolly_something followed by '(' declares a function. Struct members that are function
# pointers ("int (*get_nodes)(...)") name their member before ')', so they never match.
# Prints "marked NAME" or "unmarked NAME".
# shellcheck disable=SC2086
perl -0777 -ne '
	s{/\*.*?\*/}{ }gs;
	s{//[^\n]*}{}g;
	s{\\\n}{ }g;
	s{^[ \t]*#[^\n]*}{}gm;
	for my $st (split /[;{}]/) {
		next if $st =~ /^\s*typedef\b/;
		next unless $st =~ /\b(prolly_[A-Za-z0-9_]+)\s*\(/;
		my $name = $1;
		print(($st =~ /^\s*PROLLY_API\b/ ? "marked" : "unmarked"), " $name\n");
	}
' $headers >"$tmp/decls"

awk '$1 == "marked" {print $2}' "$tmp/decls" | sort -u >"$tmp/declared"
awk '$1 == "unmarked" {print $2}' "$tmp/decls" | sort -u >"$tmp/unmarked"
nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"

fail=0
if [ -s "$tmp/unmarked" ]; then
	echo "check-exports: declared in include/ without PROLLY_API:"
	sed 's/^/  /' "$tmp/unmarked"
	fail=1
fi
comm -13 "$tmp/declared" "$tmp/exported" >"$tmp/extra"
if [ -s "$tmp/extra" ]; then
	echo "check-exports: exported by $lib but not declared with PROLLY_API in include/:"
	sed 's/^/  /' "$tmp/extra"
	fail=1
fi
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
	echo "check-exports: declared with PROLLY_API but not exported by $lib:"
	sed 's/^/  /' "$tmp/missing"
	fail=1
fi
# shellcheck disable=SC2046
perl -0777 -ne '
	while (/#ifdef PROLLY_TEST_HOOKS(.*?)#endif/gs) {
		my $block = $1;
		print "$1\n" while $block =~ /\b(prolly_[A-Za-z0-9_]+)\s*\(/g;
	}
' $(find src -name '*.h' | sort) | sort -u >"$tmp/hooks"
for bin in "$lib" "$(dirname "$lib")/libprolly.a"; do
	[ -f "$bin" ] || continue
	nm --defined-only "$bin" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u >"$tmp/defined"
	comm -12 "$tmp/hooks" "$tmp/defined" >"$tmp/leaked"
	if [ -s "$tmp/leaked" ]; then
		echo "check-exports: $bin defines test hooks (they belong in libprolly_test.a only):"
		sed 's/^/  /' "$tmp/leaked"
		fail=1
	fi
done

if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "check-exports: $lib exports exactly the $(wc -l <"$tmp/declared") functions of include/"
