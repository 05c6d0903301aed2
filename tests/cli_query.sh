#!/usr/bin/env bash
# cli_query.sh - the reading side through the real binary on an SQLite
# store: show, history, why and stats documents (exact), not found, dump
# (stdout, --output, --tenant), load round trips and load errors, generate,
# and KEEL_STORE as the default store (docs/cli.md, docs/dump.md).
. "$(dirname "$0")/cli/lib.sh"

story=$data/story.ndjson
db=sqlite:$dir/a.db
expect 0 "$KEEL" ingest --cartridge fleet "$story" --store "$db" --quiet

T=2026-01-05T
expect 0 "$KEEL" show acme vehicle:V-1 --at ${T}08:30:00Z --store "$db"
is_out '{"tenant":"acme","subject":"vehicle:V-1","at":"'$T'08:30:00Z","kind":"vehicle","first_seen":"'$T'06:10:00Z","last_seen":"'$T'10:00:00Z","facts":{"make":{"value":"DAF","valid_from":"'$T'06:10:00Z","valid_to":null,"asserted_by":{"source":"","id":"e2"}},"model":{"value":"LF","valid_from":"'$T'06:10:00Z","valid_to":null,"asserted_by":{"source":"","id":"e2"}},"status":{"value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e5"}},"status_reason":{"value":"trip","valid_from":"'$T'08:00:00.250000Z","valid_to":null,"asserted_by":{"source":"","id":"e5"}},"year":{"value":2019,"valid_from":"'$T'06:10:00Z","valid_to":null,"asserted_by":{"source":"","id":"e2"}}},"outgoing":[{"relation":"based_at","object":"depot:D-1","valid_from":"'$T'06:10:00Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e2"}}],"incoming":[{"subject":"driver:DR-1","relation":"drives","valid_from":"'$T'07:00:00Z","valid_to":"'$T'09:00:00Z","asserted_by":{"source":"","id":"e4"}}]}'
empty err
# Another zone, same instant; options before operands.
expect 0 "$KEEL" show --store "$db" --at ${T}09:30:00+01:00 acme vehicle:V-1
contains out '"at":"'$T'08:30:00Z"'
# Now (the default): retired, so no status, no links.
expect 0 "$KEEL" show acme vehicle:V-1 --store "$db"
contains out '"retired_reason":{"value":"old",'
lacks out '"status"'
contains out '"outgoing":[],"incoming":[]}'
expect 0 "$KEEL" show acme depot:D-1 --at ${T}06:30:00Z --store "$db"
contains out '"location":{"value":{"lat":41.1,"lon":-8.6},'
contains out '"incoming":[{"subject":"driver:DR-1","relation":"works_at",'
# Before its first event it did not exist: said so, not empty facts.
expect 1 "$KEEL" show acme vehicle:V-1 --at 2020-01-01T00:00:00Z --store "$db"
is_err 'keel show: entity "vehicle:V-1" did not exist in tenant "acme" at 2020-01-01T00:00:00Z (first seen '$T'06:10:00Z)'
empty out
# --at now is the default.
expect 0 "$KEEL" show acme vehicle:V-1 --at now --store "$db"
contains out '"retired_reason":{"value":"old",'
expect 1 "$KEEL" show acme vehicle:V-9 --store "$db"
contains err 'keel show: entity "vehicle:V-9" not found in tenant "acme"'
empty out

expect 0 "$KEEL" history acme vehicle:V-1 status --store "$db"
is_out '{"tenant":"acme","subject":"vehicle:V-1","predicate":"status","facts":[{"predicate":"status","value":"available","valid_from":"'$T'06:10:00Z","valid_to":"'$T'08:00:00.250000Z","asserted_by":{"source":"","id":"e2"},"closed_by":{"source":"","id":"e5"}},{"predicate":"status","value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e5"},"closed_by":{"source":"","id":"e7"}},{"predicate":"status","value":null,"valid_from":"'$T'10:00:00Z","valid_to":null,"asserted_by":{"source":"","id":"e7"},"closed_by":null}],"relations":[]}'
expect 0 "$KEEL" history acme driver:DR-1 --store "$db"
contains out '"predicate":null,"facts":[{"predicate":"license_class",'
contains out '{"relation":"drives","object":"vehicle:V-1","linked":false,"valid_from":"'$T'09:00:00Z","valid_to":null,"asserted_by":{"source":"","id":"e6"},"closed_by":null}'
expect 1 "$KEEL" history acme nobody --store "$db"
contains err 'keel history: entity "nobody" not found in tenant "acme"'

# history --from, --to, --limit: the rows valid at some moment between
# from and to, the latest --limit of each timeline, and the document says
# what was asked and what the limit left out.
row_available='{"predicate":"status","value":"available","valid_from":"'$T'06:10:00Z","valid_to":"'$T'08:00:00.250000Z","asserted_by":{"source":"","id":"e2"},"closed_by":{"source":"","id":"e5"}}'
row_in_service='{"predicate":"status","value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e5"},"closed_by":{"source":"","id":"e7"}}'
row_unset='{"predicate":"status","value":null,"valid_from":"'$T'10:00:00Z","valid_to":null,"asserted_by":{"source":"","id":"e7"},"closed_by":null}'
head='{"tenant":"acme","subject":"vehicle:V-1","predicate":"status"'
expect 0 "$KEEL" history acme vehicle:V-1 status --from ${T}09:00:00Z --store "$db"
is_out "$head"',"from":"'$T'09:00:00Z","facts":['"$row_in_service,$row_unset"'],"relations":[]}'
expect 0 "$KEEL" history acme vehicle:V-1 status --to ${T}08:00:00.250000Z --store "$db"
is_out "$head"',"to":"'$T'08:00:00.250000Z","facts":['"$row_available"'],"relations":[]}'
expect 0 "$KEEL" history acme vehicle:V-1 status --from ${T}08:30:00Z --to ${T}09:30:00Z --store "$db"
is_out "$head"',"from":"'$T'08:30:00Z","to":"'$T'09:30:00Z","facts":['"$row_in_service"'],"relations":[]}'
# a row ends where the next begins: --from at its end leaves it out
expect 0 "$KEEL" history acme vehicle:V-1 status --from ${T}10:00:00Z --store "$db"
contains out '"facts":['"$row_unset"']'
expect 0 "$KEEL" history acme vehicle:V-1 status --limit 2 --store "$db"
is_out "$head"',"limit":2,"facts":['"$row_in_service,$row_unset"'],"relations":[],"omitted":{"facts":1,"relations":0}}'
# each timeline keeps its own latest: V-1's based_at has two rows, each
# other predicate one or three
expect 0 "$KEEL" history acme vehicle:V-1 --limit 1 --store "$db"
[ "$(grep -o '"predicate":"status"' "$dir/out" | wc -l)" = 1 ] || fail "--limit 1: $(cat "$dir/out")"
contains out "$row_unset"
contains out '"relations":[{"relation":"based_at","object":"depot:D-1","linked":false,'
contains out '"omitted":{"facts":2,"relations":1}}'
# --changes: the latest recorded changes of each timeline
expect 0 "$KEEL" history acme vehicle:V-1 status --changes --limit 1 --store "$db"
[ "$(grep -o '"recorded_at"' "$dir/out" | wc -l)" = 1 ] || fail "--changes --limit 1: $(cat "$dir/out")"
contains out '"omitted":{"facts":2,"relations":0}}'
expect 2 "$KEEL" history acme vehicle:V-1 --from ${T}10:00:00Z --to ${T}09:00:00Z --store "$db"
contains err 'keel history: from '$T'10:00:00Z is not before to '$T'09:00:00Z: no row can be in between'
expect 2 "$KEEL" history acme vehicle:V-1 --limit 0 --store "$db"
contains err 'keel history: --limit "0": not a number from 1'

expect 0 "$KEEL" why acme vehicle:V-1 status --at ${T}09:00:00Z --store "$db"
is_out '{"tenant":"acme","subject":"vehicle:V-1","predicate":"status","at":"'$T'09:00:00Z","value":"in_service","valid_from":"'$T'08:00:00.250000Z","valid_to":"'$T'10:00:00Z","asserted_by":{"source":"","id":"e5"},"closed_by":{"source":"","id":"e7"},"event":{"source":"","id":"e5","event_type":"fleet.vehicle.status_changed","time":"'$T'08:00:00.250000Z","envelope":'"$(sed -n 5p "$story")"'}}'
expect 1 "$KEEL" why acme vehicle:V-1 status --at ${T}06:00:00Z --store "$db"
contains err 'keel why: entity "vehicle:V-1" in tenant "acme" has no "status" at '$T'06:00:00Z'

stats='{"tenants":[{"tenant":"acme","entities":3,"facts":14,"relations":5,"events":7}],"total":{"entities":3,"facts":14,"relations":5,"events":7}}'
expect 0 "$KEEL" stats --store "$db"
is_out "$stats"
expect 0 "$KEEL" stats --tenant acme --store "$db"
is_out "$stats"
# A tenant with nothing stored: stats and dump agree, not found.
expect 1 "$KEEL" stats --tenant nobody --store "$db"
is_err 'keel stats: tenant "nobody" not found'
empty out
expect 1 "$KEEL" dump --tenant nobody --store "$db"
is_err 'keel dump: tenant "nobody" not found'
empty out
expect 1 "$KEEL" dump --tenant nobody --output "$dir/nobody.dump" --store "$db"
is_err 'keel dump: tenant "nobody" not found'
expect 1 "$KEEL" export --format ndjson --tenant nobody --store "$db"
is_err 'keel export: tenant "nobody" not found'
empty out
expect 1 "$KEEL" export --format csv --tenant nobody --output "$dir/nobody-csv" --store "$db"
is_err 'keel export: tenant "nobody" not found'
[ ! -e "$dir/nobody-csv/entities.csv" ] || fail "export of an unknown tenant wrote entities.csv"
# A tenant that exists but had nothing yet at --at is an empty export.
expect 0 "$KEEL" export --format ndjson --tenant acme --at 2020-01-01T00:00:00Z --store "$db"
empty out
# KEEL_STORE is the default store.
run env KEEL_STORE="$db" "$KEEL" stats
[ "$status" -eq 0 ] || fail "stats with KEEL_STORE: exit $status"
is_out "$stats"

# A second tenant from a generated stream, then dump in all its forms.
expect 0 "$KEEL" generate fleet --events 400 --seed 7 --late 0.1 --duplicates 0.05 --output "$dir/gen.ndjson"
[ "$(wc -l <"$dir/gen.ndjson")" -eq 400 ] || fail "generate wrote $(wc -l <"$dir/gen.ndjson") lines"
expect 0 "$KEEL" generate fleet --events 400 --seed 7 --late 0.1 --duplicates 0.05
cmp -s "$dir/out" "$dir/gen.ndjson" || fail "generate is not deterministic (stdout vs --output)"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/gen.ndjson" --store "$db" --quiet

expect 0 "$KEEL" dump --store "$db"
cp "$dir/out" "$dir/a.dump"
empty err
head -n 1 "$dir/a.dump" >"$dir/first"
[ "$(cat "$dir/first")" = '{"type":"entity","tenant":"acme","subject":"depot:D-1","kind":"depot","first_seen":"'$T'06:00:00Z","last_seen":"'$T'10:00:00Z"}' ] ||
	fail "first dump line: $(cat "$dir/first")"
grep -qF '{"type":"event","tenant":"acme","source":"","id":"e1","event_type":"fleet.depot.opened","time":"'$T'06:00:00Z","envelope":{"specversion":"1.0","id":"e1","tenant":"acme","type":"fleet.depot.opened","time":"'$T'06:00:00Z","data":{"depot_id":"D-1","name":"North","city":"Porto","location":{"lat":41.1,"lon":-8.6}}}}' "$dir/a.dump" ||
	fail "the dump lacks e1's event record with its compacted envelope"
expect 0 "$KEEL" dump --store "$db" --output "$dir/b.dump"
empty out
cmp -s "$dir/a.dump" "$dir/b.dump" || fail "dump --output differs from dump to stdout"
expect 0 "$KEEL" dump --store "$db" --tenant acme
grep -F '"tenant":"acme"' "$dir/a.dump" >"$dir/acme.expected"
cmp -s "$dir/out" "$dir/acme.expected" || fail "dump --tenant acme is not the acme lines of the full dump"
[ "$(wc -l <"$dir/a.dump")" -gt "$(wc -l <"$dir/out")" ] || fail "the full dump holds only acme"
expect 1 "$KEEL" dump --store "$db" --output "$dir/no/such/dir/x"
contains err "keel dump: cannot create"

# load, then dump: the same bytes; again from stdin into another store.
expect 0 "$KEEL" load "$dir/a.dump" --store "sqlite:$dir/b.db"
empty err
expect 0 "$KEEL" dump --store "sqlite:$dir/b.db"
cmp -s "$dir/out" "$dir/a.dump" || fail "load then dump changed the bytes"
run bash -c "'$KEEL' load - --store 'sqlite:$dir/c.db' < '$dir/a.dump'"
[ "$status" -eq 0 ] || fail "load from stdin exited $status: $(cat "$dir/err")"
expect 0 "$KEEL" dump --store "sqlite:$dir/c.db"
cmp -s "$dir/out" "$dir/a.dump" || fail "load from stdin then dump changed the bytes"
# The loaded store answers like the original.
expect 0 "$KEEL" why acme vehicle:V-1 status --at ${T}09:00:00Z --store "sqlite:$dir/b.db"
contains out '"asserted_by":{"source":"","id":"e5"},"closed_by":{"source":"","id":"e7"},"event":{"source":"","id":"e5",'
# ... and goes on like it: re-sending the story is all duplicates.
expect 0 "$KEEL" ingest --cartridge fleet "$story" --store "sqlite:$dir/b.db"
contains err "accepted 0, duplicates 7 (conflicting 0)"

# Load errors: the line and the rule; the tenant must be new.
expect 1 "$KEEL" load "$dir/a.dump" --store "sqlite:$dir/b.db"
contains err "keel load: $dir/a.dump: line 1: tenant \"acme\" already has data in the store"
{
	head -n 3 "$dir/acme.expected"
	echo '{"type":"entity","tenant":"acme","subject":"zz","kind":null,"first_seen":"'$T'06:00:00Z"}'
} >"$dir/bad.dump"
expect 1 "$KEEL" load "$dir/bad.dump" --store "sqlite:$dir/d.db"
contains err "keel load: $dir/bad.dump: line 4: field \"last_seen\": missing"
expect 0 "$KEEL" stats --store "sqlite:$dir/d.db"
is_out '{"tenants":[],"total":{"entities":0,"facts":0,"relations":0,"events":0}}'
expect 1 "$KEEL" load "$dir/missing.dump" --store "sqlite:$dir/d.db"
contains err "keel load: cannot open \"$dir/missing.dump\""

# Reading a SQLite file that is not there is an error and creates nothing
# (a mistyped path would otherwise leave an empty database behind).
for cmd in "stats" "dump" "show acme vehicle:V-1" "history acme vehicle:V-1" \
	"why acme vehicle:V-1 status" "export --format ndjson --output $dir/exp" \
	"replay --tenant acme"; do
	# shellcheck disable=SC2086
	expect 1 "$KEEL" $cmd --store "sqlite:$dir/typo.db"
	contains err "store \"sqlite:$dir/typo.db\": no such file (nothing to read; ingest or load creates it)"
	[ ! -e "$dir/typo.db" ] || fail "keel $cmd created $dir/typo.db"
done
run env KEEL_STORE="sqlite:$dir/typo.db" "$KEEL" stats
[ "$status" -eq 1 ] || fail "stats on a missing KEEL_STORE: exit $status"
[ ! -e "$dir/typo.db" ] || fail "stats with KEEL_STORE created $dir/typo.db"

finish
