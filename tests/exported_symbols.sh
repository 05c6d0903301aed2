#!/usr/bin/env bash
# exported_symbols.sh - libkeel.so exports exactly the functions keel.h
# declares: every one of them, and nothing else (the library is built with
# hidden visibility and keel.h marks its functions KEEL_API). Prints the
# names that are extra or missing.
set -euo pipefail
: "${KEEL_BUILD_DIR:?the build directory}" "${KEEL_SOURCE_DIR:?the source directory}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-symbols-XXXXXX")
trap 'rm -rf "$dir"' EXIT

# The header's functions: preprocessed (no comments), every keel_NAME( that
# is not a function-pointer typedef's (*keel_NAME)(.
${CC:-cc} -E -P -x c "$KEEL_SOURCE_DIR/include/keel.h" >"$dir/keel.i"
grep -oE '(\(\*)?keel_[a-z0-9_]+ *\(' "$dir/keel.i" | grep -v '^(\*' |
	sed 's/ *($//' | sort -u >"$dir/header"
# The library's: every defined dynamic symbol, whatever its type.
nm -D --defined-only "$KEEL_BUILD_DIR/libkeel.so" | awk '{print $NF}' | sort -u >"$dir/library"

[ "$(wc -l <"$dir/header")" -ge 60 ] || {
	echo "FAIL: found only $(wc -l <"$dir/header") functions in keel.h"
	exit 1
}
extra=$(comm -13 "$dir/header" "$dir/library")
missing=$(comm -23 "$dir/header" "$dir/library")
if [ -n "$extra" ] || [ -n "$missing" ]; then
	[ -z "$extra" ] || printf 'FAIL: libkeel.so exports what keel.h does not declare:\n%s\n' "$extra"
	[ -z "$missing" ] || printf 'FAIL: keel.h declares what libkeel.so does not export:\n%s\n' "$missing"
	exit 1
fi
echo "ok: libkeel.so exports the $(wc -l <"$dir/header") functions of keel.h and nothing else"
