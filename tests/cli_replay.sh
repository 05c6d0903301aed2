#!/usr/bin/env bash
# cli_replay.sh - keel replay and keel ingest --replay through the real
# binary on SQLite (docs/replay.md): a replay right after ingest keeps the
# dump byte-identical; a replay with a changed cartridge gives the dump of
# ingesting from scratch with that cartridge, and its report names the
# predicates that changed; --dry-run writes nothing; logged events the new
# cartridge rejects stay logged (exit 3); ingest --replay equals ingest and
# refuses tenants that already have events.
. "$(dirname "$0")/cli/lib.sh"

src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$KEEL" generate fleet --events 6000 --tenants 3 --seed 11 --late 0.1 --duplicates 0.05 \
	>"$dir/in.ndjson"
db=(--store "sqlite:$dir/a.db")

expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" "${db[@]}" --batch 97
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/before.ndjson"

# 1. Replay right after ingest: no changes, the same bytes, nothing written.
for t in tenant-00 tenant-01 tenant-02; do
	expect 0 "$KEEL" replay --tenant "$t" "${db[@]}"
	contains out "replayed tenant \"$t\": "
	contains out "(no changes)"
	contains out "0 of "
	lacks out "INSERT"
done
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/after.ndjson"
cmp -s "$dir/before.ndjson" "$dir/after.ndjson" || fail "replay after ingest changed the dump"

# 2. A changed cartridge: "status" becomes "state", speed_kmh keeps a
# constant instead of the reported speed.
sed -e 's/"predicate": "status"/"predicate": "state"/' \
	-e 's|"value": {"from": "/data/speed_kmh"}|"value": {"const": 50}|' \
	"$src/cartridges/fleet.json" >"$dir/v2.json"
grep -q '"state"' "$dir/v2.json" && grep -q '"const": 50' "$dir/v2.json" ||
	fail "could not derive the changed cartridge"
grep -q '"predicate": "status"' "$dir/v2.json" && fail "status still in the changed cartridge"

# --dry-run reports the change and writes nothing.
expect 0 "$KEEL" replay --tenant tenant-01 "${db[@]}" --cartridge "$dir/v2.json" --dry-run
contains out "dry run of a replay of tenant \"tenant-01\""
contains out "dry run: nothing written"
grep -Eq '^facts +status +[0-9]+ +0 +0 +[1-9][0-9]* *$' "$dir/out" ||
	fail "dry run does not report every status row removed: $(cat "$dir/out")"
grep -Eq '^facts +state +0 +[1-9][0-9]* +[1-9][0-9]* +0 *$' "$dir/out" ||
	fail "dry run does not report state rows added: $(cat "$dir/out")"
grep -Eq '^facts +speed_kmh +([0-9]+) +\1 +[1-9][0-9]* +[1-9][0-9]* *$' "$dir/out" ||
	fail "dry run does not report speed_kmh values changed: $(cat "$dir/out")"
lacks out "facts      make"
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/dry.ndjson"
cmp -s "$dir/before.ndjson" "$dir/dry.ndjson" || fail "a dry run changed the store"

for t in tenant-00 tenant-01 tenant-02; do
	expect 0 "$KEEL" replay --tenant "$t" "${db[@]}" --cartridge "$dir/v2.json" --change-cartridge
done
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/replayed.ndjson"
expect 0 "$KEEL" ingest "$dir/in.ndjson" --store "sqlite:$dir/fresh.db" --cartridge "$dir/v2.json"
expect 0 "$KEEL" dump --store "sqlite:$dir/fresh.db" --output "$dir/fresh.ndjson"
cmp -s "$dir/replayed.ndjson" "$dir/fresh.ndjson" ||
	fail "replay with the changed cartridge differs from ingesting with it: $(diff "$dir/replayed.ndjson" "$dir/fresh.ndjson" | head -5)"
cmp -s "$dir/replayed.ndjson" "$dir/before.ndjson" && fail "the changed cartridge changed nothing"
grep -q '"predicate":"state"' "$dir/replayed.ndjson" || fail "no state facts after the replay"

# And back: replaying with the original cartridge restores the first dump,
# rewriting only what the change touched. Without --cartridge a replay
# runs the recorded one, now v2: going back is a change too.
for t in tenant-00 tenant-01 tenant-02; do
	expect 0 "$KEEL" replay --tenant "$t" "${db[@]}"
	contains out "(no changes)"
	expect 0 "$KEEL" replay --tenant "$t" "${db[@]}" --cartridge fleet --change-cartridge
	contains out "sqlite: prepared multi-row INSERTs in one transaction; "
	lacks out "; 0 of "
done
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/back.ndjson"
cmp -s "$dir/before.ndjson" "$dir/back.ndjson" || fail "replaying back did not restore the dump"

# 3. Logged events the cartridge now rejects: counted, kept in the log,
# listed in --rejects, exit 3.
sed -e 's|"value": {"from": "/data/make"}|"value": {"from": "/data/no_such_field"}|' \
	"$src/cartridges/fleet.json" >"$dir/strict.json"
expect 3 "$KEEL" replay --tenant tenant-00 "${db[@]}" --cartridge "$dir/strict.json" \
	--change-cartridge --rejects "$dir/rejects.ndjson"
grep -Eq 'rejected [1-9]' "$dir/out" || fail "no rejected count in the report"
contains rejects.ndjson '"error":"event '
contains rejects.ndjson '/data/no_such_field'
n_events=$(grep -c '"type":"event","tenant":"tenant-00"' "$dir/before.ndjson")
expect 0 "$KEEL" dump "${db[@]}" --tenant tenant-00 --output "$dir/strict.ndjson"
[ "$(grep -c '"type":"event"' "$dir/strict.ndjson")" = "$n_events" ] ||
	fail "rejected events left the log"

# 4. Unknown tenant, missing --tenant.
expect 1 "$KEEL" replay --tenant nobody "${db[@]}"
is_err 'keel replay: tenant "nobody" not found'
expect 2 "$KEEL" replay "${db[@]}"
contains err "--tenant is required"

# 5. ingest --replay: the same dump as ingest, for new tenants only.
expect 0 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "sqlite:$dir/bulk.db"
contains err "accepted "
contains err "written by sqlite: prepared multi-row INSERTs"
expect 0 "$KEEL" dump --store "sqlite:$dir/bulk.db" --output "$dir/bulk.ndjson"
cmp -s "$dir/bulk.ndjson" "$dir/before.ndjson" || fail "ingest --replay differs from ingest: $(diff "$dir/bulk.ndjson" "$dir/before.ndjson" | head -5)"
head -n 1 "$dir/in.ndjson" | sed 's/"tenant":"tenant-0[0-9]"/"tenant":"tenant-99"/; s/"id":"[^"]*"/"id":"x-1"/' >"$dir/other.ndjson"
cat "$dir/in.ndjson" >>"$dir/other.ndjson"
expect 1 "$KEEL" ingest --cartridge fleet --replay "$dir/other.ndjson" --store "sqlite:$dir/bulk.db"
contains err 'already has'
lacks err 'written by'
contains err '--replay loads only new tenants'
expect 0 "$KEEL" dump --store "sqlite:$dir/bulk.db" --output "$dir/bulk2.ndjson"
cmp -s "$dir/bulk.ndjson" "$dir/bulk2.ndjson" || fail "a refused ingest --replay wrote something"
# Bad lines are rejected with ingest's messages; the rest goes in.
printf '%s\n' '{"id":"b1"}' 'not json' >"$dir/bad.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet --replay "$dir/bad.ndjson" "$dir/in.ndjson" --store "sqlite:$dir/bulk3.db"
contains err "line 1: event \"b1\": "
contains err "line 2: invalid JSON"
expect 0 "$KEEL" dump --store "sqlite:$dir/bulk3.db" --output "$dir/bulk3.ndjson"
cmp -s "$dir/bulk3.ndjson" "$dir/before.ndjson" || fail "ingest --replay with bad lines differs"

# 6. --workers needs a store that takes concurrent writers: SQLite refuses
# it before reading anything (MySQL: mysql_replay.sh).
expect 1 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/w3.db" --workers 3
contains err 'takes one writer at a time'
lacks err "read "
{ echo '{"id":"r1"}'; head -n 3000 "$dir/in.ndjson"; echo 'nope'; tail -n +3001 "$dir/in.ndjson"; echo '{"tenant":"t"}'; } >"$dir/mixed.ndjson"
expect 2 "$KEEL" ingest --cartridge fleet "$dir/mixed.ndjson" --workers 2 --follow
contains err "no --follow or --linger"
expect 2 "$KEEL" ingest --cartridge fleet "$dir/mixed.ndjson" --workers 2 --replay
contains err "--replay and --workers exclude each other"

finish
