#!/usr/bin/env bash
# install.sh - `cmake --install` into a temporary prefix gives what a user
# of Keel needs, with nothing but the install on the search paths:
#  - keel.h, libkeel.so, keel.pc: `pkg-config --cflags --libs keel` answers
#    with only Keel's own .pc visible (PKG_CONFIG_LIBDIR), and a program
#    built with those flags runs against the installed library;
#  - the CMake package: find_package(keel) and keel::keel build the same
#    program in a project of its own;
#  - the CMake package: find_package(Keel) and find_package(keel) alike
#    (keel-config.cmake, which either spelling finds);
#  - libkeel.so's SONAME: libkeel.so.MAJOR.MINOR while the major version is
#    0 (compatible within a minor version), libkeel.so.MAJOR after;
#  - keel.pc: a Libs.private only beside an installed static library;
#  - the keel tool, which runs, its man page, which man renders, and the
#    documentation under share/doc/keel, whose links hold; `keel --help`
#    names the installed man page and documentation;
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
for f in include/keel.h bin/keel share/keel/cartridges/fleet.json share/man/man1/keel.1 \
	share/doc/keel/README.md share/doc/keel/CHANGELOG.md share/doc/keel/docs/cli.md \
	share/doc/keel/docs/http.md; do
	[ -e "$prefix/$f" ] || fail "$f not installed"
done
pc=$(find "$prefix" -name keel.pc)
[ -n "$pc" ] || fail "keel.pc not installed"
config=$(find "$prefix" -name keel-config.cmake)
[ -n "$config" ] || fail "keel-config.cmake not installed"

# The SONAME, from the version keel.h states: 0.x is compatible within its
# minor version only (docs/building.md, "Versions").
version=$(sed -n 's/^#define KEEL_VERSION "\(.*\)"$/\1/p' "$prefix/include/keel.h")
case "$version" in
0.*) soname=libkeel.so.$(cut -d. -f1,2 <<<"$version") ;;
*) soname=libkeel.so.$(cut -d. -f1 <<<"$version") ;;
esac
so=$(find "$prefix" -name 'libkeel.so.*.*.*' -type f)
[ -n "$so" ] || fail "no libkeel.so.X.Y.Z installed"
got=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$got" = "$soname" ] || fail "SONAME of $(basename "$so") is '$got', want '$soname'"
[ -L "$(dirname "$so")/$soname" ] || fail "no $soname link beside $(basename "$so")"

# Libs.private completes a static link: with no libkeel.a installed there
# is none to complete, and keel.pc must not name one.
if [ -n "$(find "$prefix" -name 'libkeel*.a')" ]; then
	grep -q '^Libs.private:' "$pc" || fail "libkeel.a installed but keel.pc has no Libs.private"
else
	! grep -q '^Libs.private' "$pc" || fail "keel.pc has a Libs.private but no static library is installed: $(grep '^Libs.private' "$pc")"
fi

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

# find_package in a project of its own, with either spelling of the name.
for name in Keel keel; do
	proj=$dir/proj-$name
	mkdir "$proj"
	cp "$dir/use.c" "$proj/use.c"
	cat >"$proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(use_keel LANGUAGES C)
find_package($name ${version%.*} REQUIRED)
add_executable(use use.c)
target_link_libraries(use PRIVATE keel::keel)
CMAKE
	cmake -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$prefix" \
		-DCMAKE_BUILD_RPATH="$libdir" -DCMAKE_C_FLAGS="$san" >"$dir/cmake.log" 2>&1 ||
		fail "find_package($name) project does not configure: $(cat "$dir/cmake.log")"
	cmake --build "$proj/build" >"$dir/build.log" 2>&1 ||
		fail "find_package($name) project does not build: $(cat "$dir/build.log")"
	out=$("$proj/build/use")
	[ "$out" = "$want" ] || fail "find_package($name) build: got '$out', want '$want'"
	# It runs against the installed library, found by its SONAME (the
	# path compared as a file: the run path may name the directory as
	# pkg-config does, through lib/pkgconfig/../..).
	loaded=$(ldd "$proj/build/use" | awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }')
	[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$(dirname "$so")/$soname")" ] ||
		fail "find_package($name) build does not load $soname from the install: $(ldd "$proj/build/use")"
done

# man keel, from the installed man page only.
page=$(MANWIDTH=80 man -M "$prefix/share/man" keel 2>&1) || fail "man keel: $page"
grep -q "keel - turn streams of domain events" <<<"$page" || fail "man keel renders: $page"
grep -q "EXIT STATUS" <<<"$page" || fail "man keel lacks EXIT STATUS"

# The documentation: every relative link of an installed page names an
# installed file (the pages keep the repository's layout).
docdir=$prefix/share/doc/keel
pages=0
while IFS= read -r -d '' md; do
	pages=$((pages + 1))
	while IFS= read -r target; do
		case "$target" in http:* | https:* | mailto:* | '#'*) continue ;; esac
		[ -e "$(dirname "$md")/${target%%#*}" ] ||
			fail "${md#"$docdir"/} links to $target, which is not installed"
	done < <(grep -o '\]([^)]*)' "$md" | sed 's/^](\(.*\))$/\1/')
done < <(find "$docdir" -name '*.md' -print0)
[ "$pages" -ge 10 ] || fail "only $pages pages installed under share/doc/keel"
# keel --help and a command's --help name the installed man page and the
# installed documentation, not a path in a repository.
for args in --help "show --help"; do
	# shellcheck disable=SC2086
	help=$("$prefix/bin/keel" $args)
	grep -qF "man keel ($prefix/share/man/man1/keel.1)" <<<"$help" ||
		fail "keel $args does not name the installed man page: $help"
	grep -qF "$docdir/" <<<"$help" || fail "keel $args does not name $docdir: $help"
done

echo "ok: installed and usable through pkg-config, find_package(Keel|keel), man and the docs"
