#!/usr/bin/env bash
# exported_symbols.sh - libkeel.so exports exactly the functions keel.h
# declares: every one of them, and nothing else (the library is built with
# hidden visibility and keel.h marks its functions KEEL_API). The keel tool,
# which exports the API to the .so cartridges it loads, exports the same
# keel_* names. Prints the names that are extra or missing.
set -euo pipefail
: "${KEEL_BUILD_DIR:?the build directory}" "${KEEL_SOURCE_DIR:?the source directory}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-symbols-XXXXXX")
trap 'rm -rf "$dir"' EXIT

# The header's functions: preprocessed (no comments), every keel_NAME( that
# is not a function-pointer typedef's (*keel_NAME)(.
${CC:-cc} -E -P -x c "$KEEL_SOURCE_DIR/include/keel.h" >"$dir/keel.i"
grep -oE '(\(\*)?keel_[a-z0-9_]+ *\(' "$dir/keel.i" | grep -v '^(\*' |
	sed 's/ *($//' | sort -u >"$dir/header"
# The library's: every defined dynamic symbol, whatever its type. The
# tool's: those named keel_* (the linker adds _start, _edata and the like).
nm -D --defined-only "$KEEL_BUILD_DIR/libkeel.so" | awk '{print $NF}' | sort -u >"$dir/library"
nm -D --defined-only "${KEEL:?the keel tool}" | awk '{print $NF}' | grep '^keel_' |
	sort -u >"$dir/tool"

[ "$(wc -l <"$dir/header")" -ge 60 ] || {
	echo "FAIL: found only $(wc -l <"$dir/header") functions in keel.h"
	exit 1
}
failed=0
for what in library tool; do
	name=libkeel.so
	[ "$what" = tool ] && name="the keel tool"
	extra=$(comm -13 "$dir/header" "$dir/$what")
	missing=$(comm -23 "$dir/header" "$dir/$what")
	if [ -n "$extra" ]; then
		printf 'FAIL: %s exports what keel.h does not declare:\n%s\n' "$name" "$extra"
		failed=1
	fi
	if [ -n "$missing" ]; then
		printf 'FAIL: keel.h declares what %s does not export:\n%s\n' "$name" "$missing"
		failed=1
	fi
done
[ "$failed" = 0 ] || exit 1
echo "ok: libkeel.so and keel export the $(wc -l <"$dir/header") functions of keel.h and no other keel_*"
