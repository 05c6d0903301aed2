#!/usr/bin/env bash
# load_damaged.sh - keel load of a dump that was damaged on its way
# (docs/dump.md, "keel load"): each is refused with exit 1 and a message
# naming the line and the rule. A dump has no end marker: a file cut short
# at a line boundary loads what is left (docs/dump.md says so, and how to
# check a dump's integrity).
. "$(dirname "$0")/cli/lib.sh"

expect 0 "$KEEL" generate fleet --events 3000 --tenants 2 --output "$dir/in.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --quiet "$dir/in.ndjson" --store "sqlite:$dir/src.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/src.db" --output "$dir/full.dump"

# line N TYPE TENANT: the number of the first (or, with last, the last)
# line of that type and tenant.
first_line() { grep -n "^{\"type\":\"$1\",\"tenant\":\"$2\"" "$dir/full.dump" | head -n 1 | cut -d: -f1; }
last_line() { grep -n "^{\"type\":\"$1\",\"tenant\":\"$2\"" "$dir/full.dump" | tail -n 1 | cut -d: -f1; }

# refused FILE MESSAGE: loading FILE into a fresh store exits 1 with
# "keel load: FILE: MESSAGE".
refused() {
	rm -f "$dir/l.db" "$dir/l.db-wal" "$dir/l.db-shm"
	expect 1 "$KEEL" load "$dir/$1" --store "sqlite:$dir/l.db"
	is_err "keel load: $dir/$1: $2"
}

# 1. Cut between the two tenants: tenant-00 whole, loads.
head -n "$(last_line event tenant-00)" "$dir/full.dump" >"$dir/one.dump"
expect 0 "$KEEL" load "$dir/one.dump" --store "sqlite:$dir/one.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/one.db" --output "$dir/one.again"
cmp -s "$dir/one.dump" "$dir/one.again" || fail "tenant-00 alone does not dump as it was loaded"

# 2. The whole dump loads and dumps the same bytes.
expect 0 "$KEEL" load "$dir/full.dump" --store "sqlite:$dir/full.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/full.db" --output "$dir/full.again"
cmp -s "$dir/full.dump" "$dir/full.again" || fail "the full dump does not load and dump the same"

# A line load cannot hold in memory (here a 150 MB line of blanks after
# tenant-00, under a 100 MB address space limit) is an error naming the
# line, not the end of the file: tenant-01 must not be silently left out.
# (Not under ASan, which needs more address space than that.)
if (ulimit -v 100000 && "$KEEL" version) >/dev/null 2>&1; then
	{
		head -n "$(last_line event tenant-00)" "$dir/full.dump"
		head -c 150000000 /dev/zero | tr '\0' ' '
		echo
		tail -n "+$(($(last_line event tenant-00) + 1))" "$dir/full.dump"
	} >"$dir/huge.dump"
	run bash -c "ulimit -v 100000 && exec '$KEEL' load '$dir/huge.dump' --store 'sqlite:$dir/huge.db'"
	[ "$status" -eq 1 ] || fail "a line too long to hold ended the load with status $status"
	contains err "keel load: $dir/huge.dump: line $(($(last_line event tenant-00) + 1)): cannot read: "
	rm -f "$dir/huge.dump"
fi

# An editor's byte order mark and CRLF line ends are no damage: the dump
# loads and dumps as it was (as ingest reads them, docs/time-and-envelopes.md).
{ printf '\xef\xbb\xbf'; sed 's/$/\r/' "$dir/one.dump"; } >"$dir/edited.dump"
expect 0 "$KEEL" load "$dir/edited.dump" --store "sqlite:$dir/edited.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/edited.db" --output "$dir/edited.again"
cmp -s "$dir/one.dump" "$dir/edited.again" || fail "a dump with a BOM and CRLF does not load as it was"

# 3. Other damage, each with its line and rule: cut inside a line, a
# damaged byte, two lines swapped, a duplicated event record, and an
# event stream given to load by mistake.
head -c "$(($(head -n 100 "$dir/full.dump" | wc -c) + 30))" "$dir/full.dump" >"$dir/mid.dump"
expect 1 "$KEEL" load "$dir/mid.dump" --store "sqlite:$dir/m.db"
contains err "keel load: $dir/mid.dump: line 101: not valid JSON at byte "
contains err ": unterminated string"
sed '50s/^{"type"/{#type"/' "$dir/full.dump" >"$dir/byte.dump"
refused byte.dump "line 50: not valid JSON at byte 2: expected a string key"
f=$(first_line fact tenant-00)
{ sed -n "$((f + 1))p" "$dir/full.dump"; sed -n "${f}p" "$dir/full.dump"; } >"$dir/pair"
{ head -n "$((f - 1))" "$dir/full.dump"; cat "$dir/pair"; tail -n "+$((f + 2))" "$dir/full.dump"; } >"$dir/swap.dump"
refused swap.dump "line $((f + 1)): fact record out of order"
ev=$(($(first_line event tenant-00) + 5))
sed "${ev}p" "$dir/full.dump" >"$dir/dup.dump"
id=$(sed -n "${ev}s/.*\"id\":\"\\([^\"]*\\)\",\"event_type\".*/\\1/p" "$dir/full.dump")
src=$(sed -n "${ev}s/.*\"source\":\"\\([^\"]*\\)\",\"id\":\"$id\".*/\\1/p" "$dir/full.dump")
refused dup.dump "line $((ev + 1)): event \"$id\" from \"$src\": duplicate (line $ev)"
refused in.ndjson "line 1: field \"type\": must be entity, fact, relation or event"
# A dump kept compressed is named as such (load reads plain text).
gzip -c "$dir/full.dump" >"$dir/full.dump.gz"
refused full.dump.gz "line 1: gzip data: load reads a plain dump (zcat FILE | keel load -)"
if command -v zstd >/dev/null; then
	zstd -q -c "$dir/full.dump" >"$dir/full.dump.zst"
	refused full.dump.zst "line 1: zstd data: load reads a plain dump (zstdcat FILE | keel load -)"
fi
finish
