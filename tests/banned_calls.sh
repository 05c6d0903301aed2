#!/usr/bin/env bash
# A small checksrc: calls that invite overflows or silent errors are banned
# from the library and the tool (use strtol/strtoull, snprintf, memcpy with
# lengths, keel_buf instead).
set -euo pipefail
: "${KEEL_SOURCE_DIR:?source directory}"
cd "$KEEL_SOURCE_DIR"
pattern='\b(atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|gets|strtok|tmpnam)[[:space:]]*\('
if hits=$(grep -nE "$pattern" src/*.c src/*/*.c cli/*.c include/*.h src/*.h 2>/dev/null); then
	echo "banned calls:"
	echo "$hits"
	exit 1
fi
echo "ok: no banned calls"
