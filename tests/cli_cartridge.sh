#!/usr/bin/env bash
# cli_cartridge.sh - cartridges and the generator through the real binary:
# profile 1's pinned digest, a generated stream ingested whole by the fleet
# cartridge, cartridges/fleet.json equal to the built-in one, a .so cartridge
# (tests/cartridge_so/acme.c) loaded by keel itself, optional fields and
# defaults, and load errors (docs/cartridges.md, docs/generator.md).
. "$(dirname "$0")/cli/lib.sh"

src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
acme=$(dirname "$KEEL")/tests/cartridge_so/acme.so

# Profile 1 never changes (the same digest as tests/test_generate.c).
expect 0 "$KEEL" generate fleet --events 1000 --seed 7
got=$(sha256sum <"$dir/out" | cut -d' ' -f1)
[ "$got" = ff107ab93894a32b65af671ab10382bb304254a422d7109cbe54a0559494ab12 ] ||
	fail "generate --events 1000 --seed 7: sha256 $got"
[ "$(wc -l <"$dir/out")" -eq 1000 ] || fail "generate wrote $(wc -l <"$dir/out") lines"

# A stream with late and duplicate events: nothing rejected or unhandled,
# every duplicate line counted as a duplicate and never as a conflict.
expect 0 "$KEEL" generate fleet --events 5000 --tenants 3 --seed 9 --late 0.1 --duplicates 0.05
cp "$dir/out" "$dir/stream.ndjson"
distinct=$(sort -u "$dir/stream.ndjson" | wc -l)
dups=$((5000 - distinct))
[ "$dups" -gt 150 ] && [ "$dups" -lt 350 ] || fail "$dups duplicate lines in 5000 at 0.05"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/stream.ndjson" --store "sqlite:$dir/builtin.db"
contains err "read 5000 events"
contains err "accepted $distinct, duplicates $dups (conflicting 0), unhandled 0, rejected 0"

# The file under cartridges/ is the built-in cartridge: the same dump.
expect 0 "$KEEL" ingest "$dir/stream.ndjson" --store "sqlite:$dir/file.db" \
	--cartridge "$src/cartridges/fleet.json"
expect 0 "$KEEL" dump --store "sqlite:$dir/builtin.db"
mv "$dir/out" "$dir/builtin.dump"
expect 0 "$KEEL" dump --store "sqlite:$dir/file.db"
cmp -s "$dir/out" "$dir/builtin.dump" || fail "cartridges/fleet.json and the built-in differ"
[ "$(wc -l <"$dir/out")" -gt 5000 ] || fail "the dump is too short"

# A shared-object cartridge, loaded by keel: its handler computes a value,
# and its own rejection reaches the rejects output.
[ -f "$acme" ] || fail "no $acme (built by tests/cartridge_so)"
cat >"$dir/acme.ndjson" <<'END'
{"id":"1","tenant":"t","type":"acme.widget.checked","time":"2026-01-01T00:00:00Z","data":{"widget_id":"w","score":70}}
{"id":"2","tenant":"t","type":"acme.widget.checked","time":"2026-01-01T00:00:01Z","data":{"widget_id":"w"}}
{"id":"3","tenant":"t","type":"acme.unknown","time":"2026-01-01T00:00:02Z","data":{}}
END
expect 3 "$KEEL" ingest "$dir/acme.ndjson" --store "sqlite:$dir/acme.db" --cartridge "$acme"
contains err 'line 2: event "2": type "acme.widget.checked": score: missing or not a number'
contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 1, rejected 1"
expect 0 "$KEEL" show t widget:w --store "sqlite:$dir/acme.db"
contains out '"facts":{"passed":{"value":true,'

# A vehicle id holding U+0000 renders a subject no command could name
# again: that event is rejected at the template, with its line and the
# rule, and the rest goes in (docs/cartridges.md, "Limits").
cat >"$dir/nul.ndjson" <<'END'
{"id":"n1","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:00Z","data":{"vehicle_id":"V-1","status":"active","reason":null}}
{"id":"n2","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:01Z","data":{"vehicle_id":"a\u0000b","status":"active","reason":null}}
{"id":"n3","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:02Z","data":{"vehicle_id":"V-2","status":"idle","reason":null}}
END
expect 3 "$KEEL" ingest --cartridge fleet "$dir/nul.ndjson" --store "sqlite:$dir/nul.db"
contains err 'line 2: event "n2": type "fleet.vehicle.status_changed": operation 1 (entity): field "subject": contains U+0000 (NUL)'
contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 1"
expect 0 "$KEEL" dump --store "sqlite:$dir/nul.db"
lacks out 'vehicle:a'
contains out '"vehicle:V-2"'

# Fields a producer may leave out (docs/cartridges.md): an optional value
# or template skips its operation when its pointer finds nothing, a default
# stands in for it. Nothing is rejected, and an event that takes a default
# gives the rows of one that carries that value.
shop=${KEEL_TEST_DATA:?}/cartridge/shop.json
grep -E '"id":"o[12]"' "${KEEL_TEST_DATA}/cartridge/shop.in" >"$dir/shop.ndjson"
expect 0 "$KEEL" ingest "$dir/shop.ndjson" --store "sqlite:$dir/shop.db" --cartridge "$shop"
contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
expect 0 "$KEEL" show s order:1 --store "sqlite:$dir/shop.db"
contains out '"note":{"value":"gift",'
contains out '"channel":{"value":"phone",'
contains out '{"relation":"placed_by","object":"customer:c7",'
contains out '{"relation":"ships_from","object":"store:lyon",'
expect 0 "$KEEL" show s order:2 --store "sqlite:$dir/shop.db"
is_out '{"tenant":"s","subject":"order:2","at":'"$(sed 's/.*"at":\("[^"]*"\).*/\1/' "$dir/out")"',"kind":"order","first_seen":"2026-01-01T00:00:01Z","last_seen":"2026-01-01T00:00:01Z","facts":{"channel":{"value":"web","valid_from":"2026-01-01T00:00:01Z","valid_to":null,"asserted_by":{"source":"/shop","id":"o2"}}},"outgoing":[{"relation":"ships_from","object":"store:central","valid_from":"2026-01-01T00:00:01Z","valid_to":null,"asserted_by":{"source":"/shop","id":"o2"}}],"incoming":[]}'
# The same order carrying the defaults' values: the same rows (the logged
# envelopes differ, and so do the dumps' event lines).
sed -n 2p "$dir/shop.ndjson" | sed 's/"customer_id":null/"channel":"web","store":"central"/' >"$dir/carried.ndjson"
grep -qF '"channel":"web","store":"central"' "$dir/carried.ndjson" || fail "carried.ndjson: $(cat "$dir/carried.ndjson")"
sed -n 2p "$dir/shop.ndjson" >"$dir/defaulted.ndjson"
for f in carried defaulted; do
	expect 0 "$KEEL" ingest "$dir/$f.ndjson" --store "sqlite:$dir/$f.db" --cartridge "$shop"
	expect 0 "$KEEL" dump --store "sqlite:$dir/$f.db"
	grep -v '^{"type":"event"' "$dir/out" >"$dir/$f.rows"
done
[ "$(wc -l <"$dir/defaulted.rows")" -eq 4 ] || fail "defaulted rows: $(cat "$dir/defaulted.rows")"
cmp -s "$dir/carried.rows" "$dir/defaulted.rows" ||
	fail "a default and the value carried give different rows: $(diff "$dir/carried.rows" "$dir/defaulted.rows")"

# The fleet cartridge forgives a status change without a reason: "no
# reason", the rows of the generator's "reason":null.
echo '{"id":"r1","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:00Z","data":{"vehicle_id":"V-1","status":"idle"}}' >"$dir/noreason.ndjson"
echo '{"id":"r1","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:00Z","data":{"vehicle_id":"V-1","status":"idle","reason":null}}' >"$dir/nullreason.ndjson"
for f in noreason nullreason; do
	expect 0 "$KEEL" ingest "$dir/$f.ndjson" --store "sqlite:$dir/$f.db" --cartridge fleet
	contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" dump --store "sqlite:$dir/$f.db"
	grep -v '^{"type":"event"' "$dir/out" >"$dir/$f.rows"
done
contains out '"predicate":"status_reason","value":null,'
cmp -s "$dir/noreason.rows" "$dir/nullreason.rows" ||
	fail "no reason and a null reason give different rows: $(diff "$dir/noreason.rows" "$dir/nullreason.rows")"

# A bad form fails at load, naming the type, the operation and the field.
sed '/customer_id/s/"optional": true}}/"optional": true, "default": "x"}}/' "$shop" >"$dir/both.json"
expect 1 "$KEEL" ingest "$dir/shop.ndjson" --store memory: --cartridge "$dir/both.json"
is_err "keel ingest: $dir/both.json: cartridge \"shop\": type \"shop.order.placed\": operation 4 (link): field \"object\": \"optional\" and \"default\" together (a field with a default is never absent)"

# Load errors are fatal (exit 1) and name the cartridge, type, operation
# and field.
echo '{"cartridge":"x","version":"1","events":{"a":[{"op":"link","subject":"s","relation":"r"}]}}' >"$dir/bad.json"
expect 1 "$KEEL" ingest "$dir/acme.ndjson" --store memory: --cartridge "$dir/bad.json"
contains err "$dir/bad.json: cartridge \"x\": type \"a\": operation 1 (link): field \"object\": missing"
expect 1 "$KEEL" ingest "$dir/acme.ndjson" --store memory: --cartridge flet
contains err 'cartridge "flet": no built-in cartridge of that name and no such file'

finish
