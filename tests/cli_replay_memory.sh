#!/usr/bin/env bash
# cli_replay_memory.sh - keel replay's memory does not grow with the
# tenant (docs/replay.md, "Memory"): the replay of a tenant and of one ten
# times larger, on SQLite, each measured by GNU time's peak resident size.
# The store's own page cache grows with what is read until it is full,
# whatever reads it, so a dump of the same store is measured beside each
# replay: the replay's growth beyond the dump's must stay under a fixed
# bound (the sorts' and the batch's buffers), where building the tenant
# in memory grows by about 400 bytes a row (over 90 MiB between these
# sizes). A replay with a changed cartridge (groups compared, rewritten)
# runs on each too, its report checked and its peak printed.
. "$(dirname "$0")/cli/lib.sh"

[ -x /usr/bin/time ] || skip_test "GNU time (/usr/bin/time) is not installed"
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
# ASan keeps freed blocks in a quarantine that counts as resident: what is
# measured here is what the process holds, not what it once freed.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=1"

sed -e 's/"predicate": "status"/"predicate": "state"/' \
	"$src/cartridges/fleet.json" >"$dir/v2.json"
grep -q '"state"' "$dir/v2.json" || fail "could not derive the changed cartridge"

# peak N: loads an N-event tenant, then the peak resident KiB of a dump
# of it, of its replay and of its replay with a changed cartridge, in
# $dump_kib, $replay_kib and $changed_kib.
peak() {
	local n=$1 db="sqlite:$dir/t$1.db"
	"$KEEL" generate fleet --events "$n" --tenants 1 --seed 7 >"$dir/in$n.ndjson"
	expect 0 "$KEEL" ingest --cartridge fleet --replay "$dir/in$n.ndjson" --store "$db"
	expect 0 /usr/bin/time -o "$dir/dump.kib" -f %M "$KEEL" dump --store "$db" \
		--output "$dir/dump$n.ndjson"
	expect 0 /usr/bin/time -o "$dir/replay.kib" -f %M "$KEEL" replay --tenant tenant-00 \
		--store "$db"
	contains out "(no changes)"
	expect 0 /usr/bin/time -o "$dir/changed.kib" -f %M "$KEEL" replay --tenant tenant-00 \
		--store "$db" --cartridge "$dir/v2.json" --change-cartridge
	contains out "2 of "
	grep -Eq '^facts +state +0 +[1-9][0-9]* +[1-9][0-9]* +0 *$' "$dir/out" ||
		fail "the replay of $n events does not report the state facts added: $(cat "$dir/out")"
	dump_kib=$(tail -n 1 "$dir/dump.kib")
	replay_kib=$(tail -n 1 "$dir/replay.kib")
	changed_kib=$(tail -n 1 "$dir/changed.kib")
	echo "$n events: dump $dump_kib KiB, replay $replay_kib KiB, changed replay $changed_kib KiB"
}

peak 20000
small_dump=$dump_kib small_replay=$replay_kib small_changed=$changed_kib
peak 200000
big_dump=$dump_kib big_replay=$replay_kib big_changed=$changed_kib

# 24 MiB: the sorts' buffers (10 MiB), the batch, a write's part and the
# allocator's slack; a tenant built in memory grows by over 90 MiB here.
dump_growth=$((big_dump - small_dump))
for what in replay changed; do
	small=small_$what big=big_$what
	growth=$(((${!big} - ${!small}) - dump_growth))
	echo "$what: grew by $((${!big} - ${!small})) KiB, the dump by $dump_growth KiB: $growth KiB beyond the dump"
	[ "$growth" -lt 24576 ] ||
		fail "keel replay ($what) grew by $growth KiB more than a dump from 20 000 to 200 000 events"
done

# The temporary files cannot be made: the replay fails, saying where, and
# the tenant is as it was.
db="sqlite:$dir/t20000.db"
expect 0 "$KEEL" dump --store "$db" --output "$dir/before.ndjson"
TMPDIR="$dir/no-such-dir" expect 1 "$KEEL" replay --tenant tenant-00 --store "$db" \
	--cartridge fleet --change-cartridge
is_err "keel replay: replay: cannot create a temporary file in $dir/no-such-dir: No such file or directory"
expect 0 "$KEEL" dump --store "$db" --output "$dir/after.ndjson"
cmp -s "$dir/before.ndjson" "$dir/after.ndjson" || fail "a replay that failed changed the store"

finish
