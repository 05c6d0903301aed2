#!/usr/bin/env bash
# `cmake --install` puts the library, the header, a pkg-config file and the
# keel binary under a prefix; a program built with pkg-config's flags links
# and runs against the installed library.
set -euo pipefail
: "${KEEL_BUILD_DIR:?the build directory}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-install-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cmake --install "$KEEL_BUILD_DIR" --prefix "$dir/prefix" > /dev/null
for f in include/keel.h bin/keel share/keel/cartridges/fleet.json; do
	[ -e "$dir/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
pc=$(find "$dir/prefix" -name keel.pc)
[ -n "$pc" ] || { echo "FAIL: keel.pc not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
cat > "$dir/use.c" <<'C'
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
	printf("%.*s %s\n", (int)n, buf, keel_err_name(KEEL_ESTORE));
	keel_store_close(s);
	return 0;
}
C
libdir=$(pkg-config --variable=libdir keel)
# shellcheck disable=SC2046
cc -fsanitize=address,undefined "$dir/use.c" $(pkg-config --cflags --libs keel) -Wl,-rpath,"$libdir" -o "$dir/use"
out=$(ASAN_OPTIONS=detect_leaks=0 "$dir/use")
[ "$out" = "1970-01-01T00:00:01.500000Z KEEL_ESTORE" ] || { echo "FAIL: got '$out'"; exit 1; }
"$dir/prefix/bin/keel" version | grep -q "^keel " || { echo "FAIL: installed keel does not run"; exit 1; }
echo "ok: installed and usable through pkg-config"
