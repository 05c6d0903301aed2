#!/usr/bin/env bash
# linked_crypto.sh - Keel's SHA-256 and constant-time comparison are those
# of the crypto library already in the process (nettle, which GnuTLS and so
# libmicrohttpd bring), not code of its own (src/sha256.c):
#  - libkeel.so and the keel tool call nettle's SHA-256 and memeql_sec;
#  - libkeel.so names libnettle among the libraries it needs;
#  - no source under src/ carries SHA-256's round constants, the mark of a
#    hand-written compression function.
# tests/test_sha256.c checks the digests against the FIPS 180-4 vectors.
set -euo pipefail
: "${KEEL_BUILD_DIR:?the build directory}" "${KEEL_SOURCE_DIR:?the source directory}"
fail() {
	echo "FAIL: $*"
	exit 1
}
lib=$KEEL_BUILD_DIR/libkeel.so
lib_calls=$(nm -D --undefined-only "$lib")
tool_calls=$(nm --undefined-only "${KEEL:?the keel tool}")
for sym in nettle_sha256_init nettle_sha256_update nettle_sha256_digest nettle_memeql_sec; do
	grep -qw "$sym" <<<"$lib_calls" || fail "libkeel.so does not call $sym"
	grep -qw "$sym" <<<"$tool_calls" || fail "the keel tool does not call $sym"
done
readelf -d "$lib" | grep -q 'NEEDED.*libnettle' ||
	fail "libkeel.so does not name libnettle: $(readelf -d "$lib" | grep NEEDED)"
# K[0] and K[63] of FIPS 180-4, and H0's first word, in any case.
hits=$(grep -rniE '0x428a2f98|0xc67178f2|0x6a09e667' "$KEEL_SOURCE_DIR/src" || true)
[ -z "$hits" ] || fail "a SHA-256 of Keel's own is back: $hits"
echo "ok: SHA-256 and the constant-time comparison are nettle's"
