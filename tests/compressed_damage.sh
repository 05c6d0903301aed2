#!/usr/bin/env bash
# compressed_damage.sh - keel ingest of compressed input damaged on its way
# (docs/time-and-envelopes.md, "Input"; docs/cli.md, "Failures"): the
# error names the file and the offset in it where the decoder stopped,
# exit 1, and what was decoded before the damage is committed, each event
# once and unchanged.
#
# zstd: two frames, the second with bytes flipped in its middle. The
# decoder is given one block at a time, so the message names the first
# byte of the damaged block (found here by walking the frames' block
# headers), and every event before that block is in: the first frame's
# 1000, and those of the second frame's blocks before the damaged one.
. "$(dirname "$0")/cli/lib.sh"

command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
command -v zstd >/dev/null || skip_test "no zstd tool (scripts/deps --test installs it)"

expect 0 "$KEEL" generate fleet --events 4000 --output "$dir/all.ndjson"
head -n 1000 "$dir/all.ndjson" >"$dir/a.ndjson"
tail -n +1001 "$dir/all.ndjson" >"$dir/b.ndjson"
zstd -q -c "$dir/a.ndjson" >"$dir/in.zst"
zstd -q -c "$dir/b.ndjson" >>"$dir/in.zst"

# Flip 16 bytes at 3/4 of the file (inside the second frame), and print
# the first content byte of the block holding them.
block=$(python3 - "$dir/in.zst" <<'EOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
at = len(data) * 3 // 4
for i in range(at, at + 16):
    data[i] ^= 0xFF
open(path, "wb").write(data)
pos = 0
while pos < len(data):
    assert data[pos:pos + 4] == b"\x28\xb5\x2f\xfd", "not a zstd frame"
    fhd = data[pos + 4]
    single, fcs, did, checksum = (fhd >> 5) & 1, fhd >> 6, fhd & 3, (fhd >> 2) & 1
    p = pos + 5 + (0 if single else 1) + [0, 1, 2, 4][did] + [single, 2, 4, 8][fcs]
    while True:
        h = int.from_bytes(data[p:p + 3], "little")
        size = 1 if (h >> 1) & 3 == 1 else h >> 3
        if p + 3 <= at < p + 3 + size:
            assert pos > 0 and p > pos + 6, "the damage is not after a block of frame 2"
            print(p + 3)
            sys.exit(0)
        p += 3 + size
        if h & 1:
            break
    pos = p + 4 * checksum
sys.exit("the flipped bytes are in no block")
EOF
) || fail "cannot find the damaged block"

expect 1 "$KEEL" ingest --cartridge fleet "$dir/in.zst" --store "sqlite:$dir/z.db"
contains err "keel ingest: \"$dir/in.zst\": corrupt zstd data at byte $block ("
accepted=$(sed -n 's/^accepted \([0-9]*\),.*/\1/p' "$dir/err")
[ -n "$accepted" ] && [ "$accepted" -gt 1000 ] ||
	fail "accepted ${accepted:-nothing}: the first frame's 1000 events and a block of the second's were decoded before the damage"
# What went in is the input's first events, unchanged.
head -n "${accepted:-0}" "$dir/all.ndjson" >"$dir/prefix.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --quiet "$dir/prefix.ndjson" --store "sqlite:$dir/p.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/z.db" --output "$dir/z.dump"
expect 0 "$KEEL" dump --store "sqlite:$dir/p.db" --output "$dir/p.dump"
cmp -s "$dir/z.dump" "$dir/p.dump" || fail "the damaged input's events are not its first $accepted"

# Fixed, the same command adds the rest, and nothing twice.
zstd -q -c "$dir/all.ndjson" >"$dir/in.zst"
expect 0 "$KEEL" ingest --cartridge fleet --quiet "$dir/in.zst" --store "sqlite:$dir/z.db"
expect 0 "$KEEL" ingest --cartridge fleet --quiet "$dir/all.ndjson" --store "sqlite:$dir/all.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/z.db" --output "$dir/z.dump"
expect 0 "$KEEL" dump --store "sqlite:$dir/all.db" --output "$dir/all.dump"
cmp -s "$dir/z.dump" "$dir/all.dump" || fail "ingesting the repaired file did not complete the store"
finish
