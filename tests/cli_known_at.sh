#!/usr/bin/env bash
# cli_known_at.sh - transaction time through the real binary on an SQLite
# store (docs/semantics.md, "Transaction time"; docs/cli.md): the story
# ingested in two runs, the second bringing a late event; every read
# with --known-at the first run's moment answers as before the late
# event, dump and export as a store given only the first run, and
# history --changes lists both recordings in order, with the row the
# late event shortened.
. "$(dirname "$0")/cli/lib.sh"

story=$data/story.ndjson
db=sqlite:$dir/a.db
T=2026-01-05T
# Run 1: everything but e5 (in service at 08:00:00.25); run 2: e5, late.
grep -v '"id":"e5"' "$story" >"$dir/run1.ndjson"
grep -F '"id":"e5"' "$story" >"$dir/run2.ndjson"
# In batches of 2 within one commit: recorded_at is the transaction's, so
# e2 (first batch) and e7 (third) share R1 below.
expect 0 "$KEEL" ingest --cartridge fleet --batch 2 --commit-interval 60000 "$dir/run1.ndjson" --store "$db" --quiet

# The moment run 1 was recorded, from history --changes.
expect 0 "$KEEL" history acme vehicle:V-1 status --changes --store "$db"
R1=$(grep -o '"recorded_at":"[^"]*"' "$dir/out" | head -n 1 | cut -d'"' -f4)
[ -n "$R1" ] || fail "history --changes gave no recorded_at: $(cat "$dir/out")"
is_out '{"tenant":"acme","subject":"vehicle:V-1","predicate":"status","facts":[{"predicate":"status","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e2"},"value":"available","valid_from":"'$T'06:10:00Z","valid_to":null,"closed_by":null,"shortened":null},{"predicate":"status","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e7"},"value":null,"valid_from":"'$T'10:00:00Z","valid_to":null,"closed_by":null,"shortened":{"asserted_by":{"source":"","id":"e2"},"valid_from":"'$T'06:10:00Z","valid_to_before":null,"valid_to_after":"'$T'10:00:00Z"}}],"relations":[]}'

expect 0 "$KEEL" ingest --cartridge fleet "$dir/run2.ndjson" --store "$db" --quiet

# Now: e5 holds at 09:00, and e2's row was shortened to end at e5.
expect 0 "$KEEL" show acme vehicle:V-1 --at ${T}09:00:00Z --store "$db"
contains out '"status":{"value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e5"}}'
lacks out '"known_at"'
# As known at R1: what Keel said before the late event arrived.
expect 0 "$KEEL" show acme vehicle:V-1 --at ${T}09:00:00Z --known-at "$R1" --store "$db"
contains out '"at":"'$T'09:00:00Z","known_at":"'$R1'","kind":"vehicle"'
contains out '"status":{"value":"available","valid_from":"'$T'06:10:00Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e2"}}'
lacks out 'in_service'
expect 0 "$KEEL" why acme vehicle:V-1 status --at ${T}09:00:00Z --known-at "$R1" --store "$db"
contains out '"value":"available","valid_from":"'$T'06:10:00Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e2"},"closed_by":{"source":"","id":"e7"},"event":{"source":"","id":"e2",'
expect 0 "$KEEL" why acme vehicle:V-1 status --at ${T}09:00:00Z --store "$db"
contains out '"asserted_by":{"source":"","id":"e5"},"closed_by":{"source":"","id":"e7"},"event":{"source":"","id":"e5",'
expect 0 "$KEEL" history acme vehicle:V-1 status --known-at "$R1" --store "$db"
is_out '{"tenant":"acme","subject":"vehicle:V-1","predicate":"status","known_at":"'$R1'","facts":[{"predicate":"status","value":"available","valid_from":"'$T'06:10:00Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e2"},"closed_by":{"source":"","id":"e7"}},{"predicate":"status","value":null,"valid_from":"'$T'10:00:00Z","valid_to":null,"asserted_by":{"source":"","id":"e7"},"closed_by":null}],"relations":[]}'

# The changes: both recordings, in order; the late one shortened e2's row.
expect 0 "$KEEL" history acme vehicle:V-1 status --changes --store "$db"
R2=$(grep -o '"recorded_at":"[^"]*"' "$dir/out" | sed -n 3p | cut -d'"' -f4)
[ -n "$R2" ] && [ "$R2" != "$R1" ] || fail "the late event's recorded_at \"$R2\" is not after run 1's \"$R1\""
is_out '{"tenant":"acme","subject":"vehicle:V-1","predicate":"status","facts":[{"predicate":"status","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e2"},"value":"available","valid_from":"'$T'06:10:00Z","valid_to":null,"closed_by":null,"shortened":null},{"predicate":"status","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e7"},"value":null,"valid_from":"'$T'10:00:00Z","valid_to":null,"closed_by":null,"shortened":{"asserted_by":{"source":"","id":"e2"},"valid_from":"'$T'06:10:00Z","valid_to_before":null,"valid_to_after":"'$T'10:00:00Z"}},{"predicate":"status","recorded_at":"'$R2'","asserted_by":{"source":"","id":"e5"},"value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","closed_by":{"source":"","id":"e7"},"shortened":{"asserted_by":{"source":"","id":"e2"},"valid_from":"'$T'06:10:00Z","valid_to_before":"'$T'10:00:00Z","valid_to_after":"'$T'08:00:00.250000Z"}}],"relations":[]}'
# ... and as known at R1, only the first two.
expect 0 "$KEEL" history acme vehicle:V-1 status --changes --known-at "$R1" --store "$db"
contains out '"known_at":"'$R1'","facts":[{"predicate":"status","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e2"},'
lacks out '"e5"'
# Without a predicate: every timeline of the subject, relations too.
expect 0 "$KEEL" history acme vehicle:V-1 --changes --store "$db"
contains out '"predicate":null,"facts":[{"predicate":"location","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e7"},"value":null,'
contains out '"relations":[{"relation":"based_at","object":"depot:D-1","recorded_at":"'$R1'","asserted_by":{"source":"","id":"e2"},"linked":true,'

# dump and export as known at R1: a store given only run 1.
expect 0 "$KEEL" ingest --cartridge fleet "$dir/run1.ndjson" --store "sqlite:$dir/b.db" --quiet
expect 0 "$KEEL" dump --store "sqlite:$dir/b.db"
cp "$dir/out" "$dir/run1.dump"
expect 0 "$KEEL" dump --known-at "$R1" --store "$db"
cmp -s "$dir/out" "$dir/run1.dump" || fail "dump --known-at R1 is not the dump of run 1 alone"
expect 0 "$KEEL" dump --known-at now --store "$db"
cp "$dir/out" "$dir/now.dump"
expect 0 "$KEEL" dump --store "$db"
cmp -s "$dir/out" "$dir/now.dump" || fail "dump --known-at now differs from dump"
cmp -s "$dir/out" "$dir/run1.dump" && fail "the dump after run 2 equals run 1's"
expect 0 "$KEEL" dump --tenant acme --known-at "$R1" --store "$db"
cmp -s "$dir/out" "$dir/run1.dump" || fail "dump --tenant acme --known-at R1 is not run 1's"
expect 0 "$KEEL" export --format ndjson --store "sqlite:$dir/b.db"
cp "$dir/out" "$dir/run1.export"
expect 0 "$KEEL" export --format ndjson --known-at "$R1" --store "$db"
cmp -s "$dir/out" "$dir/run1.export" || fail "export --known-at R1 is not the export of run 1 alone"
expect 0 "$KEEL" stats --store "sqlite:$dir/b.db"
run1_counts=$(sed 's/^{//' "$dir/out")
expect 0 "$KEEL" stats --known-at "$R1" --store "$db"
is_out '{"known_at":"'$R1'",'"$run1_counts"
expect 0 "$KEEL" stats --store "$db"
contains out '"events":7'

# Run 3: e8 sets a status at exactly e7's time. The later arrival wins:
# e7's row becomes the empty [10:00, 10:00), and --changes says so.
echo '{"specversion":"1.0","id":"e8","tenant":"acme","type":"fleet.vehicle.status_changed","time":"'$T'10:00:00Z","data":{"vehicle_id":"V-1","status":"sold","reason":"auction"}}' >"$dir/run3.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/run3.ndjson" --store "$db" --quiet
expect 0 "$KEEL" history acme vehicle:V-1 status --changes --store "$db"
contains out '"asserted_by":{"source":"","id":"e8"},"value":"sold","valid_from":"'$T'10:00:00Z","valid_to":null,"closed_by":null,"shortened":{"asserted_by":{"source":"","id":"e7"},"valid_from":"'$T'10:00:00Z","valid_to_before":null,"valid_to_after":"'$T'10:00:00Z"}}],"relations":[]}'
expect 0 "$KEEL" history acme vehicle:V-1 status --store "$db"
contains out '{"predicate":"status","value":null,"valid_from":"'$T'10:00:00Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e7"},"closed_by":{"source":"","id":"e8"}},{"predicate":"status","value":"sold","valid_from":"'$T'10:00:00Z","valid_to":null,"asserted_by":{"source":"","id":"e8"},"closed_by":null}'
# As known at R1 and R2, e8 is not there.
expect 0 "$KEEL" show acme vehicle:V-1 --known-at "$R2" --store "$db"
lacks out '"sold"'

# Run 4: a status at 06:05, before the vehicle was first seen (06:10). Now it
# existed at 06:07; as known at R2 it did not yet.
echo '{"specversion":"1.0","id":"e9","tenant":"acme","type":"fleet.vehicle.status_changed","time":"'$T'06:05:00Z","data":{"vehicle_id":"V-1","status":"delivered","reason":"new"}}' >"$dir/run4.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/run4.ndjson" --store "$db" --quiet
expect 0 "$KEEL" show acme vehicle:V-1 --at ${T}06:07:00Z --store "$db"
contains out '"first_seen":"'$T'06:05:00Z"'
contains out '"status":{"value":"delivered",'
expect 1 "$KEEL" show acme vehicle:V-1 --at ${T}06:07:00Z --known-at "$R2" --store "$db"
is_err 'keel show: entity "vehicle:V-1" did not exist in tenant "acme" at '$T'06:07:00Z (first seen '$T'06:10:00Z)'

# Before anything was recorded: nothing known.
old=2020-01-01T00:00:00Z
expect 1 "$KEEL" show acme vehicle:V-1 --known-at $old --store "$db"
is_err 'keel show: tenant "acme" not found as known at '$old
expect 1 "$KEEL" history acme vehicle:V-1 --changes --known-at $old --store "$db"
contains err 'as known at '$old
expect 1 "$KEEL" dump --tenant acme --known-at $old --store "$db"
is_err 'keel dump: tenant "acme" not found as known at '$old
expect 0 "$KEEL" dump --known-at $old --store "$db"
empty out
expect 0 "$KEEL" stats --known-at $old --store "$db"
is_out '{"known_at":"'$old'","tenants":[],"total":{"entities":0,"facts":0,"relations":0,"events":0}}'

# A tenant first recorded after R1 did not exist as known at R1: an
# export of every tenant writes no GraphML file for it (stats leaves it
# out too), and the files are those of the store given only run 1.
echo '{"specversion":"1.0","id":"g1","tenant":"globex","type":"fleet.depot.opened","time":"'$T'06:00:00Z","data":{"depot_id":"D-9","name":"South","city":"Faro","location":{"lat":37.0,"lon":-7.9}}}' >"$dir/run5.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/run5.ndjson" --store "$db" --quiet
expect 0 "$KEEL" export --format graphml --output "$dir/graphml.now" --store "$db"
[ -s "$dir/graphml.now/globex.graphml" ] || fail "export of the present lacks globex.graphml"
expect 0 "$KEEL" export --format graphml --output "$dir/graphml.run1" --store "sqlite:$dir/b.db"
expect 0 "$KEEL" export --format graphml --known-at "$R1" --output "$dir/graphml.r1" --store "$db"
[ -e "$dir/graphml.r1/globex.graphml" ] && fail "export --known-at R1 wrote globex.graphml, a tenant recorded later"
diff -r "$dir/graphml.run1" "$dir/graphml.r1" >/dev/null ||
	fail "export --format graphml --known-at R1 is not the export of run 1 alone: $(diff -r "$dir/graphml.run1" "$dir/graphml.r1" | head -c 600)"
expect 0 "$KEEL" stats --known-at "$R1" --store "$db"
lacks out '"globex"'
# The tenants list: as known at R1 that of the store given only run 1,
# with the moment said; before anything, none; now, both.
expect 0 "$KEEL" tenants --known-at "$R1" --store "$db"
is_out '{"known_at":"'$R1'","tenants":["acme"],"next":null}'
expect 0 "$KEEL" tenants --store "sqlite:$dir/b.db"
is_out '{"tenants":["acme"],"next":null}'
expect 0 "$KEEL" tenants --known-at $old --store "$db"
is_out '{"known_at":"'$old'","tenants":[],"next":null}'
expect 0 "$KEEL" tenants --store "$db"
is_out '{"tenants":["acme","globex"],"next":null}'

# Bad values are usage errors; --changes is history's alone.
for cmd in "show acme vehicle:V-1" "history acme vehicle:V-1" "why acme vehicle:V-1 status" \
	"dump" "stats" "tenants" "export --format ndjson"; do
	# shellcheck disable=SC2086
	expect 2 "$KEEL" $cmd --known-at yesterday --store "$db"
	contains err '--known-at "yesterday": '
done
expect 2 "$KEEL" show acme vehicle:V-1 --changes --store "$db"
contains err "unrecognized option '--changes'"

finish
