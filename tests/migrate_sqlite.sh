#!/usr/bin/env bash
# migrate_sqlite.sh - a SQLite file written by the Keel before rows became
# append-only (tests/data/migrate/v1.sqlite, schema 1: closures stored in
# place) opens with this Keel and is migrated in place
# (docs/store-sqlite.md, "Schema and versions"): keel migrate says from
# which schema to which; the dump is the old Keel's (v1.dump) in today's
# form, byte for byte v1.new.dump, which is also what loading v1.dump
# gives; as known before anything new was recorded it still is;
# ingesting a late event afterwards gives the dump of a fresh store given
# v1.ndjson and that event. Then the views (facts, relations, entities)
# of the migrated store and of a freshly ingested one, read with the
# sqlite3 tool, equal dump's rows, row for row (the views of the latest
# step: times as microseconds and as text of fixed width). Last, a store whose
# current rows a Keel of schema 8 had folded (v8-folded.sqlite) is folded
# again, spans and all, by its first search after the migration. And a
# store with forty tenants whose rows each held their cartridge's whole
# text (v9-tenants.sqlite) keeps each distinct cartridge once, and reads,
# ingests and replays as before (tests/cli/tenants_migrated.sh). Last, a
# store of schema 11 (v11.sqlite: names as text in the rows, folded, with
# a tombstone) takes its names as integers and dumps byte for byte as the
# Keel that made it did (v11.dump), views and searches alike.
. "$(dirname "$0")/cli/lib.sh"
. "$(dirname "$0")/cli/tenants_migrated.sh"

command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
old=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/data/migrate

# 1. keel migrate, on a copy (a migration changes the file).
cp "$old/v1.sqlite" "$dir/m.db" && chmod u+w "$dir/m.db"
m=(--store "sqlite:$dir/m.db")
expect 0 "$KEEL" migrate "${m[@]}"
# the latest schema, whatever its number (each new step adds one)
n=$(sqlite3 "$dir/m.db" "SELECT value FROM meta WHERE key = 'schema_version'")
[ "$n" -ge 3 ] 2>/dev/null || fail "the file's schema_version is $n, not the latest"
is_out "migrated sqlite:$dir/m.db from schema 1 to $n"
expect 0 "$KEEL" migrate "${m[@]}"
is_out "sqlite:$dir/m.db: already at schema $n"

# 2. Every row and its provenance: the old Keel's dump in today's form
# (events named by source and id), byte for byte; also from a copy that a
# read migrates on its own, and from loading the old Keel's dump.
expect 0 "$KEEL" dump "${m[@]}" --output "$dir/m.dump"
cmp -s "$dir/m.dump" "$old/v1.new.dump" || fail "the migrated store does not dump as v1.new.dump"
cp "$old/v1.sqlite" "$dir/r.db" && chmod u+w "$dir/r.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/r.db" --output "$dir/r.dump"
cmp -s "$dir/r.dump" "$old/v1.new.dump" || fail "a store migrated by dump does not dump as v1.new.dump"
expect 0 "$KEEL" load "$old/v1.dump" --store "sqlite:$dir/l.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/l.db" --output "$dir/l.dump"
cmp -s "$dir/l.dump" "$old/v1.new.dump" || fail "loading v1.dump does not dump as v1.new.dump"
grep -qF '"asserted_by":{"source":"/hand/migration-data","id":"hand-01"},"closed_by":{"source":"/hand/migration-data","id":"hand-02"}' "$dir/l.dump" ||
	fail "the empty row of hand-01 lost its sources"
# an old dump's ids are mapped through its event records, read ahead: a
# pipe cannot be read twice
expect 1 "$KEEL" load - --store "sqlite:$dir/p.db" < <(cat "$old/v1.dump")
contains err "can only be loaded from a file, not a pipe"

# The migration built the finding indexes: keel entities lists each
# tenant's entities of the dump, and keel search finds every subject whose
# string fact the dump holds open now (docs/store-sqlite.md, "The finding
# step").
[ "$(sqlite3 "$dir/m.db" "SELECT count(*) FROM sqlite_schema WHERE name IN ('entity_mentions_kind', 'fact_rows_value')")" = 2 ] ||
	fail "the migrated store has no finding indexes"
# The current rows start empty, nothing folded (docs/store-sqlite.md,
# "Current rows"); the first search at the present folds every row.
[ "$(sqlite3 "$dir/m.db" "SELECT (SELECT count(*) FROM fact_current) || ' ' || (SELECT value FROM meta WHERE key = 'fact_current_seq')")" = "0 0" ] ||
	fail "the migration wrote current rows"
KEEL=$KEEL python3 - "$dir/m.db" "$old/v1.dump" <<'PY' || fail "finding on the migrated store"
import json, os, subprocess, sys
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
store, dump = "sqlite:" + sys.argv[1], [json.loads(l) for l in lines]
# a value as stored: the dump's own text of it (escapes as the event wrote them)
raw = [l[l.find('"value":') + 8:l.find(',"valid_from":')] for l in lines]
def keel(*args):
    r = subprocess.run([os.environ["KEEL"], *args, "--store", store, "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)
tenants = sorted({r["tenant"] for r in dump}, key=str.encode)
assert keel("tenants") == {"tenants": tenants, "next": None}, keel("tenants")
searched = 0
for t in tenants:
    want = [r["subject"] for r in dump if r["type"] == "entity" and r["tenant"] == t]
    got = [e["subject"] for e in keel("entities", t, "--limit", "1000")["entities"]]
    assert got == want, (t, got, want)
    for r, value in zip(dump, raw):
        if r["type"] == "fact" and r["tenant"] == t and r["valid_to"] is None \
                and isinstance(r["value"], str):
            found = keel("search", t, r["predicate"], value)["subjects"]
            assert r["subject"] in [f["subject"] for f in found], (r, found)
            searched += 1
assert searched > 0
PY

# Those searches folded every row: keel search at the present lists
# exactly the subjects whose row holding now has the value, integers and
# booleans from the current rows too.
[ "$(sqlite3 "$dir/m.db" "SELECT value FROM meta WHERE key = 'fact_current_seq'")" = \
	"$(sqlite3 "$dir/m.db" "SELECT max(seq) FROM fact_rows")" ] ||
	fail "the searches on the migrated store folded not every row"
KEEL=$KEEL python3 "$(dirname "$0")/cli/search_check.py" "sqlite:$dir/m.db" "$dir/m.dump" \
	>/dev/null || fail "search at the present on the migrated store"

# 3. A late odometer reading of tenant-00's V-0003, inside a closed row.
late='{"specversion":"1.0","id":"late-1","source":"/fleet/tenant-00/telematics","type":"fleet.vehicle.odometer_reported","time":"2026-01-05T06:00:50Z","tenant":"tenant-00","datacontenttype":"application/json","data":{"vehicle_id":"V-0003","odometer_km":86696.5,"unit":"km"}}'
echo "$late" >"$dir/late.ndjson"
expect 0 "$KEEL" ingest "$dir/late.ndjson" "${m[@]}" --cartridge fleet
contains err "accepted 1"
# v1.ndjson holds one conflicting duplicate (README.md): exit 3
expect 3 "$KEEL" ingest "$old/v1.ndjson" "$dir/late.ndjson" --store "sqlite:$dir/fresh.db" --batch 50 \
	--cartridge fleet
contains err 'line 410: event "ev-000000009" from "/fleet/tenant-01/telematics": conflicting duplicate: its envelope differs from that of line 17' 
expect 0 "$KEEL" dump "${m[@]}" --output "$dir/m2.dump"
expect 0 "$KEEL" dump --store "sqlite:$dir/fresh.db" --output "$dir/fresh.dump"
cmp -s "$dir/m2.dump" "$dir/fresh.dump" ||
	fail "migrated store + late event differs from a fresh ingest: $(diff "$dir/m2.dump" "$dir/fresh.dump" | head -c 800)"
grep -qF '"asserted_by":{"source":"/fleet/tenant-00/telematics","id":"late-1"}' "$dir/m2.dump" ||
	fail "the late event left no row"
cmp -s "$dir/m2.dump" "$old/v1.new.dump" && fail "the late event changed nothing"
# What was there before Keel kept the time is known at 0: as known then,
# the store is the old one.
expect 0 "$KEEL" dump "${m[@]}" --known-at 1970-01-01T00:00:00Z --output "$dir/k.dump"
cmp -s "$dir/k.dump" "$old/v1.new.dump" || fail "dump --known-at before the late event is not v1.new.dump"

# 4. The views equal dump's rows, on the migrated store and on a fresh one.
"$KEEL" generate fleet --events 3000 --tenants 2 --seed 5 --late 0.2 --duplicates 0.02 \
	>"$dir/gen.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/gen.ndjson" --store "sqlite:$dir/g.db" --batch 37
expect 0 "$KEEL" dump --store "sqlite:$dir/g.db" --output "$dir/g.dump"
# Every column but seq and recorded_at: strings as bytes, values as
# parsed JSON and strings as text, each time as microseconds and as text
# of fixed width (tests/cli/views_check.py).
. "$(dirname "$0")/cli/views.sh"
for db in m g; do
	dumpfile=$dir/$db.dump
	[ "$db" = m ] && dumpfile=$dir/m2.dump
	sqlite3 "$dir/$db.db" "$(views_select sqlite)" >"$dir/$db-views.rows" ||
		fail "sqlite3 could not read the views of $db.db"
	python3 "$(dirname "$0")/cli/views_check.py" "$dumpfile" "$dir/$db-views.rows" >/dev/null ||
		fail "the views of $db.db differ from its dump"
done
# A store whose current rows a Keel before the spans folded
# (v8-folded.sqlite, README.md): the migration empties them and sets the
# watermark back, so that the first search folds the current rows and the
# spans from the same rows; searches now and at earlier times (which read
# the spans) then agree with the dump.
cp "$old/v8-folded.sqlite" "$dir/v8.db"
[ "$(sqlite3 "$dir/v8.db" "SELECT (SELECT value FROM meta WHERE key = 'fact_current_seq') || ' ' || (SELECT count(*) FROM fact_current)")" = "737 151" ] ||
	fail "v8-folded.sqlite is not the folded store of the README"
expect 0 "$KEEL" migrate --store "sqlite:$dir/v8.db"
[ "$(sqlite3 "$dir/v8.db" "SELECT (SELECT value FROM meta WHERE key = 'fact_current_seq') || ' ' || (SELECT count(*) FROM fact_current) || ' ' || (SELECT count(*) FROM fact_spans)")" = "0 0 0" ] ||
	fail "the migration to the spans left folded rows"
expect 0 "$KEEL" dump --store "sqlite:$dir/v8.db" --output "$dir/v8.dump"
# its views, made by an older step, are today's
sqlite3 "$dir/v8.db" "$(views_select sqlite)" >"$dir/v8-views.rows" ||
	fail "sqlite3 could not read the views of v8.db"
python3 "$(dirname "$0")/cli/views_check.py" "$dir/v8.dump" "$dir/v8-views.rows" >/dev/null ||
	fail "the views of the store migrated from schema 8 differ from its dump"
KEEL=$KEEL python3 "$(dirname "$0")/cli/search_check.py" "sqlite:$dir/v8.db" "$dir/v8.dump" \
	status make year current_trip \
	>/dev/null || fail "search on the store migrated to the spans"
[ "$(sqlite3 "$dir/v8.db" "SELECT count(*) FROM fact_rows WHERE substr(value, 1, 1) = '\"' OR value IN ('true', 'false') OR value NOT GLOB '*[^0-9-]*'")" = \
	"$(sqlite3 "$dir/v8.db" "SELECT count(*) FROM fact_spans")" ] ||
	fail "the first search after the migration left rows without spans"

# 5. Many tenants, each row holding its cartridge's text: after the
# migration two cartridges, each once, and forty tenants naming them by
# hash (docs/store-sqlite.md, "Recorded cartridges").
data=$old
cp "$old/v9-tenants.sqlite" "$dir/t.db" && chmod u+w "$dir/t.db"
[ "$(sqlite3 "$dir/t.db" "SELECT count(*) || ' ' || count(DISTINCT hash) || ' ' || count(text) FROM tenant_cartridges")" = "40 2 40" ] ||
	fail "v9-tenants.sqlite is not the store of the README"
expect 0 "$KEEL" migrate --store "sqlite:$dir/t.db"
is_out "migrated sqlite:$dir/t.db from schema 9 to $n"
[ "$(sqlite3 "$dir/t.db" "SELECT group_concat(name, ' ') FROM pragma_table_info('tenant_cartridges')")" = "tenant hash recorded_at" ] ||
	fail "tenant_cartridges still holds more than the hash"
[ "$(sqlite3 "$dir/t.db" "SELECT count(*) || ' ' || count(DISTINCT hash) FROM tenant_cartridges")" = "40 2" ] ||
	fail "the tenants lost their cartridges"
[ "$(sqlite3 "$dir/t.db" "SELECT group_concat(name || ' ' || version || ' ' || (length(text) > 4000), ', ') FROM (SELECT * FROM cartridges ORDER BY version)")" = "fleet 1 1, fleet 2 1" ] ||
	fail "cartridges does not hold the two cartridges once each: $(sqlite3 "$dir/t.db" "SELECT hash, name, version FROM cartridges")"
[ "$(sqlite3 "$dir/t.db" "SELECT count(*) FROM tenant_cartridges t JOIN cartridges c USING (hash)")" = 40 ] ||
	fail "a tenant names a cartridge that is not there"
tenants_migrated "sqlite:$dir/t.db"
[ "$(sqlite3 "$dir/t.db" "SELECT count(*) FROM cartridges")" = 2 ] ||
	fail "ingesting and replaying the migrated store stored a cartridge again"
# and a new store of the same forty tenants keeps the two once too
[ "$(sqlite3 "$dir/tm-fresh.db" "SELECT (SELECT count(*) FROM cartridges) || ' ' || (SELECT count(*) FROM tenant_cartridges)")" = "2 40" ] ||
	fail "a new store of forty tenants and two cartridges does not keep each cartridge once"

# 6. Names as integers (docs/store-sqlite.md, "Names"): a store of schema
# 11 (make-v11.sh) migrated keeps every row, its fold and its tombstone.
cp "$old/v11.sqlite" "$dir/v11.db" && chmod u+w "$dir/v11.db"
[ "$(sqlite3 "$dir/v11.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 11 ] ||
	fail "v11.sqlite is not a store of schema 11"
expect 0 "$KEEL" migrate --store "sqlite:$dir/v11.db"
is_out "migrated sqlite:$dir/v11.db from schema 11 to $n"
[ "$(sqlite3 "$dir/v11.db" "SELECT typeof(tenant) || ' ' || typeof(predicate) || ' ' || typeof(asserted_by_source) FROM fact_rows UNION SELECT typeof(tenant) || ' ' || typeof(relation) || ' ' || typeof(asserted_by_source) FROM relation_rows")" = "integer integer integer" ] ||
	fail "the rows of the migrated store do not name by id"
[ "$(sqlite3 "$dir/v11.db" "SELECT count(*) FROM names WHERE name IN ('acme.eu_1', 'weird', 'status', 'based_at', '/hand/migration-data')")" = 5 ] ||
	fail "the names table lacks the store's names"
expect 0 "$KEEL" dump --store "sqlite:$dir/v11.db" --output "$dir/v11.dump"
cmp -s "$dir/v11.dump" "$old/v11.dump" ||
	fail "the store migrated from schema 11 does not dump as v11.dump: $(diff "$dir/v11.dump" "$old/v11.dump" | head -c 800)"
sqlite3 "$dir/v11.db" "$(views_select sqlite)" >"$dir/v11-views.rows" ||
	fail "sqlite3 could not read the views of v11.db"
python3 "$(dirname "$0")/cli/views_check.py" "$dir/v11.dump" "$dir/v11-views.rows" >/dev/null ||
	fail "the views of the store migrated from schema 11 differ from its dump"
# its fold is kept (the rows keep their seqs), and searches agree with the dump
[ "$(sqlite3 "$dir/v11.db" "SELECT (SELECT value FROM meta WHERE key = 'fact_current_seq') > 0 AND (SELECT count(*) FROM fact_spans) > 0")" = 1 ] ||
	fail "the migration dropped the fold"
KEEL=$KEEL python3 "$(dirname "$0")/cli/search_check.py" "sqlite:$dir/v11.db" "$dir/v11.dump" \
	>/dev/null || fail "search on the store migrated from schema 11"
[ "$(sqlite3 "$dir/v11.db" "SELECT count(*) FROM tombstones")" = 1 ] || fail "the tombstone is gone"
# a new event of a new tenant, predicate and source after the migration,
# then a replay of a tenant: the dump is a fresh store's of the same input
late2='{"specversion":"1.0","id":"new-1","source":"/new/source","type":"fleet.vehicle.status_changed","time":"2026-01-05T07:00:00Z","tenant":"tenant-new","datacontenttype":"application/json","data":{"vehicle_id":"V-0009","status":"idle"}}'
echo "$late2" >"$dir/new.ndjson"
expect 0 "$KEEL" ingest "$dir/new.ndjson" --store "sqlite:$dir/v11.db" --cartridge fleet
expect 0 "$KEEL" replay --tenant tenant-00 --store "sqlite:$dir/v11.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/v11.db" --output "$dir/v11b.dump"
grep -qF '"tenant":"tenant-new","subject":"vehicle:V-0009","predicate":"status","value":"idle"' "$dir/v11b.dump" ||
	fail "the new tenant's row is not in the dump"
grep -v '"tenant":"tenant-new"' "$dir/v11b.dump" | cmp -s - "$old/v11.dump" ||
	fail "ingesting a new tenant and replaying tenant-00 changed the others: $(grep -v '"tenant":"tenant-new"' "$dir/v11b.dump" | diff - "$old/v11.dump" | head -c 800)"
finish
