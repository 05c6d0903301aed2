#!/usr/bin/env bash
# cli_readme.sh - what README.md's "One event, start to finish" shows
# works: its example event is taken from the README and ingested, the
# terminal form printed is the README's (but for the moment asked about),
# the field its jq line reads is there, and the early --at exits 1. Its
# excerpt of the fleet cartridge is the real one, and an event written from
# it without the reason is accepted.
. "$(dirname "$0")/cli/lib.sh"

readme=${KEEL_SOURCE_DIR:?}/README.md
command -v script >/dev/null || fail "script(1) not found (bsdutils)"

# The one complete envelope in the README.
grep '^{"specversion"' "$readme" >"$dir/event.ndjson"
[ "$(wc -l <"$dir/event.ndjson")" -eq 1 ] ||
	fail "README.md should show exactly one example event, has $(wc -l <"$dir/event.ndjson")"
# The README's terminal output (its one text block).
sed -n '/^```text$/,/^```$/p' "$readme" | sed '1d;$d' >"$dir/readme.txt"
[ -s "$dir/readme.txt" ] || fail "README.md has no text block"

db=sqlite:$dir/first.db
expect 0 "$KEEL" ingest --cartridge fleet "$dir/event.ndjson" --store "$db"
contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"

# On a terminal: the README's text, the "at:" line (now) aside.
# (200 columns: the README shows the table whole, as a terminal that wide
# does; script's terminal has no size of its own and keel takes $COLUMNS.)
COLUMNS=200 script -qec "$(printf '%q ' "$KEEL" show acme vehicle:V-1 --store "$db")" /dev/null \
	</dev/null | tr -d '\r' >"$dir/tty"
grep -q '^at:           20' "$dir/tty" || fail "no at: line on the terminal: $(cat "$dir/tty")"
grep -v '^at:' "$dir/tty" >"$dir/got.txt"
grep -v '^at:' "$dir/readme.txt" >"$dir/want.txt"
diff "$dir/want.txt" "$dir/got.txt" >"$dir/diff" ||
	fail "keel show on a terminal differs from README.md:
$(cat "$dir/diff")"

# Piped: JSON with the field the README's jq line reads.
grep -qF '| jq .facts.status.value    # "in_service"' "$readme" ||
	fail "README.md lacks the jq line this test checks"
expect 0 "$KEEL" show acme vehicle:V-1 --store "$db"
contains out '"facts":{"status":{"value":"in_service",'

# The README's excerpt of the fleet cartridge is the real one, whitespace
# aside: its name and version, and each event type's operations as listed
# in cartridges/fleet.json.
awk '/^```json$/ { n++; inb = 1; next } /^```$/ { inb = 0 } inb && n == 2' "$readme" >"$dir/excerpt.json"
grep -q '"cartridge": "fleet"' "$dir/excerpt.json" ||
	fail "README.md's second JSON block is not the fleet cartridge: $(head -3 "$dir/excerpt.json")"
tr -d ' \n' <"${KEEL_SOURCE_DIR}/cartridges/fleet.json" >"$dir/fleet.flat"
tr -d ' \n' <"$dir/excerpt.json" >"$dir/excerpt.flat"
grep -qF '{"cartridge":"fleet","version":"1","events":{' "$dir/excerpt.flat" ||
	fail "README.md's excerpt: not fleet version 1: $(head -c 80 "$dir/excerpt.flat")"
grep -qF '"cartridge":"fleet","version":"1",' "$dir/fleet.flat" ||
	fail "cartridges/fleet.json is not fleet version 1 as README.md says"
grep -o '"fleet\.[a-z_.]*":\[[^]]*\]' "$dir/excerpt.flat" >"$dir/excerpt.types"
[ "$(wc -l <"$dir/excerpt.types")" -ge 2 ] ||
	fail "README.md's excerpt lists $(wc -l <"$dir/excerpt.types") event types"
while read -r type; do
	grep -qF -- "$type" "$dir/fleet.flat" ||
		fail "README.md's excerpt differs from cartridges/fleet.json: $type"
done <"$dir/excerpt.types"

# It is a cartridge: the README's event gives the same rows through it as
# through the built-in one.
for c in "$dir/excerpt.json" fleet; do
	rm -f "$dir/rows.db"
	expect 0 "$KEEL" ingest "$dir/event.ndjson" --store "sqlite:$dir/rows.db" --cartridge "$c"
	contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" dump --store "sqlite:$dir/rows.db"
	cp "$dir/out" "$dir/rows.$(basename "$c")"
done
cmp -s "$dir/rows.excerpt.json" "$dir/rows.fleet" ||
	fail "README.md's excerpt and the built-in cartridge give different dumps"

# An event written from the excerpt without the field it may leave out
# (the reason) is accepted, and says "no reason".
sed 's/,"reason":"trip"//' "$dir/event.ndjson" >"$dir/noreason.ndjson"
lacks_reason=$(grep -c '"reason"' "$dir/noreason.ndjson")
[ "$lacks_reason" -eq 0 ] || fail "the README's event without its reason still has one"
expect 0 "$KEEL" ingest "$dir/noreason.ndjson" --store "sqlite:$dir/noreason.db" --cartridge fleet
contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
expect 0 "$KEEL" dump --store "sqlite:$dir/noreason.db"
contains out '"subject":"vehicle:V-1","predicate":"status","value":"in_service",'
contains out '"subject":"vehicle:V-1","predicate":"status_reason","value":null,'

# Before its first event the vehicle did not exist.
grep -qF 'keel show acme vehicle:V-1 --at 2026-01-05T07:00:00Z --store sqlite:first.db   # exit 1' "$readme" ||
	fail "README.md lacks the --at line this test checks"
expect 1 "$KEEL" show acme vehicle:V-1 --at 2026-01-05T07:00:00Z --store "$db"
contains err 'did not exist in tenant "acme" at 2026-01-05T07:00:00Z (first seen 2026-01-05T08:00:00Z)'

# Known at a moment before it was recorded, it was not there at all.
grep -qF 'keel show acme vehicle:V-1 --known-at 2026-01-01T00:00:00Z --store sqlite:first.db   # exit 1' "$readme" ||
	fail "README.md lacks the --known-at line this test checks"
expect 1 "$KEEL" show acme vehicle:V-1 --known-at 2026-01-01T00:00:00Z --store "$db"
contains err 'tenant "acme" not found as known at 2026-01-01T00:00:00Z'

finish
