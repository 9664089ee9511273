#!/usr/bin/env bash
# tests/install.sh - what `make install` puts on a system serves a program of someone else's:
# installs into a scratch DESTDIR (PREFIX /usr/local, without the PostgreSQL extension, which
# ext/postgres/test_extension.sh installs and tests), checks the files, builds
# tests/install/consumer.c with nothing but the installed prolly.pc (pkg-config, the sysroot
# set to the DESTDIR) as strict C99, linked to the shared library and to the static one, and as
# C++, runs each, then uninstalls and checks that nothing is left. TAP on stdout.
#
# Environment: BUILD (the build directory, default build). Run from the top of the tree.
set -u

BUILD=${BUILD:-build}
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

root=$(mktemp -d "${TMPDIR:-/tmp}/prolly-install.XXXXXX") || exit 2
trap 'rm -rf "$root"' EXIT
dest=$root/dest out=$root/out
prefix=/usr/local
export PKG_CONFIG_PATH=$dest$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest

check "make install into a DESTDIR" make -s install DESTDIR="$dest" PREFIX="$prefix" BUILD="$BUILD" EXT=

missing=""
for f in include/prolly.h include/prolly/store.h include/prolly/pg_sql.h lib/libprolly.a lib/libprolly.so \
	lib/pkgconfig/prolly.pc bin/prolly share/man/man1/prolly.1; do
	[ -e "$dest$prefix/$f" ] || missing+=" $f"
done
soname=$(objdump -p "$dest$prefix/lib/libprolly.so" 2>/dev/null | awk '/SONAME/ {print $2}')
[ -n "$soname" ] && [ -e "$dest$prefix/lib/$soname" ] || missing+=" lib/${soname:-(no SONAME)}"
echo "${missing:- none}" >"$out"
if [ -z "$missing" ]; then ok "installed: headers, libraries ($soname), prolly.pc, prolly, prolly(1)"; else not_ok "installed files missing:$missing"; fi

# The static library takes its dependencies from prolly.pc too: the packages of Requires.private
# (linked as shared libraries: Debian's libpq.pc names server libraries for --static that no
# -dev package ships) and Libs.private.
cflags=$(pkg-config --cflags prolly 2>"$out") && libs=$(pkg-config --libs prolly 2>>"$out") &&
	deps=$(pkg-config --libs $(pkg-config --print-requires-private prolly) 2>>"$out") &&
	private=$(sed -n 's/^Libs.private: *//p' "$PKG_CONFIG_PATH/prolly.pc")
if [ $? -eq 0 ]; then ok "pkg-config reads the installed prolly.pc ($(pkg-config --modversion prolly))"; else not_ok "pkg-config prolly"; fi

run_consumer() { # run_consumer BINARY: runs it, checks its line
	LD_LIBRARY_PATH=$dest$prefix/lib "$1" >"$out" 2>&1 && grep -q '^prolly .*: greeting=hello$' "$out"
}

check "C99 -pedantic, shared library: builds" \
	sh -c "cc -std=c99 -Wall -Wextra -Werror -pedantic $cflags -o '$root/c-shared' tests/install/consumer.c $libs" &&
	check "the shared build reads back what it committed" run_consumer "$root/c-shared"
check "C99, static library: builds" \
	sh -c "cc -std=c99 -Wall -Wextra -Werror -pedantic $cflags -o '$root/c-static' tests/install/consumer.c '$dest$prefix/lib/libprolly.a' $deps $private" &&
	check "the static build runs without libprolly.so" \
	sh -c "! objdump -p '$root/c-static' | grep -q 'NEEDED.*libprolly' && '$root/c-static' | grep -q greeting=hello"
check "C++11 -pedantic: the headers compile, the program links" \
	sh -c "c++ -std=c++11 -Wall -Wextra -Werror -pedantic -x c++ $cflags -o '$root/cxx' tests/install/consumer.c $libs" &&
	check "the C++ build runs" run_consumer "$root/cxx"

check "make uninstall" make -s uninstall DESTDIR="$dest" PREFIX="$prefix" BUILD="$BUILD" EXT=
left=$(find "$dest" -type f -o -type l)
echo "$left" >"$out"
if [ -z "$left" ]; then ok "uninstall leaves no file"; else not_ok "uninstall left files"; fi

echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
