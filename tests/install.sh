#!/usr/bin/env bash
# install.sh - `cmake --install` into a temporary prefix gives what a user
# of Keel needs, with nothing but the install on the search paths:
#  - keel.h, libkeel.so, keel.pc: `pkg-config --cflags --libs keel` answers
#    with only Keel's own .pc visible (PKG_CONFIG_LIBDIR), and a program
#    built with those flags runs against the installed library;
#  - the CMake package: find_package(keel) and keel::keel build the same
#    program in a project of its own;
#  - the keel tool, which runs, and its man page, which man renders;
#  - the fleet cartridge.
set -euo pipefail
: "${KEEL_BUILD_DIR:?the build directory}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-install-XXXXXX")
trap 'rm -rf "$dir"' EXIT
prefix=$dir/prefix
cmake --install "$KEEL_BUILD_DIR" --prefix "$prefix" >/dev/null
fail() {
	echo "FAIL: $*"
	exit 1
}
for f in include/keel.h bin/keel share/keel/cartridges/fleet.json share/man/man1/keel.1; do
	[ -e "$prefix/$f" ] || fail "$f not installed"
done
pc=$(find "$prefix" -name keel.pc)
[ -n "$pc" ] || fail "keel.pc not installed"
config=$(find "$prefix" -name keelConfig.cmake)
[ -n "$config" ] || fail "keelConfig.cmake not installed"

# A program using the API; it prints the run-time version last.
cat >"$dir/use.c" <<'C'
#include <keel.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open("memory:", &s, &err) != 0)
		return 1;
	char buf[KEEL_TIME_BUFSZ];
	size_t n = keel_time_format(1500000, buf);
	printf("%.*s %s %s\n", (int)n, buf, keel_err_name(KEEL_ESTORE), keel_version());
	keel_store_close(s);
	return 0;
}
C
want="1970-01-01T00:00:01.500000Z KEEL_ESTORE $("$prefix/bin/keel" version | sed 's/^keel //')"
case "$want" in *" KEEL_ESTORE "[0-9]*) ;; *) fail "installed keel version printed '$want'" ;; esac

# pkg-config, seeing only the install: no Requires.private to resolve.
flags=$(PKG_CONFIG_LIBDIR=$(dirname "$pc") PKG_CONFIG_PATH= pkg-config --cflags --libs keel) ||
	fail "pkg-config --cflags --libs keel fails with only keel.pc on its path"
libdir=$(PKG_CONFIG_LIBDIR=$(dirname "$pc") pkg-config --variable=libdir keel)
# Built with the sanitizers, in case the library was (an ASan build's
# libkeel.so needs the ASan runtime loaded first); harmless if not.
san=-fsanitize=address,undefined
export ASAN_OPTIONS=detect_leaks=0
# shellcheck disable=SC2086
cc $san "$dir/use.c" $flags -Wl,-rpath,"$libdir" -o "$dir/use"
out=$("$dir/use")
[ "$out" = "$want" ] || fail "pkg-config build: got '$out', want '$want'"

# find_package(keel) in a project of its own.
mkdir "$dir/proj"
cp "$dir/use.c" "$dir/proj/use.c"
cat >"$dir/proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(use_keel LANGUAGES C)
find_package(keel 0.1 REQUIRED)
add_executable(use use.c)
target_link_libraries(use PRIVATE keel::keel)
CMAKE
cmake -S "$dir/proj" -B "$dir/proj/build" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_BUILD_RPATH="$libdir" -DCMAKE_C_FLAGS="$san" >"$dir/cmake.log" 2>&1 ||
	fail "find_package(keel) project does not configure: $(cat "$dir/cmake.log")"
cmake --build "$dir/proj/build" >"$dir/build.log" 2>&1 ||
	fail "find_package(keel) project does not build: $(cat "$dir/build.log")"
out=$("$dir/proj/build/use")
[ "$out" = "$want" ] || fail "find_package build: got '$out', want '$want'"

# man keel, from the installed man page only.
page=$(MANWIDTH=80 man -M "$prefix/share/man" keel 2>&1) || fail "man keel: $page"
grep -q "keel - turn streams of domain events" <<<"$page" || fail "man keel renders: $page"
grep -q "EXIT STATUS" <<<"$page" || fail "man keel lacks EXIT STATUS"

echo "ok: installed and usable through pkg-config, find_package(keel) and man"
