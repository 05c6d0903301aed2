#!/usr/bin/env bash
# postgres_replay.sh - replay, ingest --replay and --workers on PostgreSQL
# (docs/replay.md): a replay right after ingest keeps the dump byte-identical
# and writes by binary COPY; strings with tabs, newlines, backslashes,
# "\N", control characters and non-ASCII survive it (binary COPY escapes
# nothing); a changed cartridge gives the dump of ingesting from scratch
# with it; a replay that fails midway (a trigger refuses one row) leaves the
# tenant as it was; ingest --replay and --workers 2 give the dump of a plain
# ingest. Needs the suite's PostgreSQL fixture (KEEL_TEST_PG_FRESH).
. "$(dirname "$0")/cli/lib.sh"
needs_postgres
: "${KEEL_PG_SCRIPT:?the script of the fixture}"
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}

"$KEEL" generate fleet --events 4000 --tenants 3 --seed 21 --late 0.1 --duplicates 0.05 \
	>"$dir/in.ndjson"
cat >>"$dir/in.ndjson" <<'JSON'
{"specversion":"1.0","id":"w-1","tenant":"weird","type":"fleet.vehicle.registered","time":"2026-01-05T06:00:00Z","data":{"vehicle_id":"V\t1\n\\N\u0001é\r","depot_id":"D\\0","make":"Mä\tk\u0000e","model":"x\\ny","year":2020}}
{"specversion":"1.0","id":"w-2\\N","tenant":"weird","type":"fleet.vehicle.status_changed","time":"2026-01-05T07:00:00Z","data":{"vehicle_id":"V\t1\n\\N\u0001é\r","status":"in\tuse\\N","reason":"日本\n"}}
{"specversion":"1.0","id":"w-3","tenant":"weird","type":"fleet.vehicle.status_changed","time":"2026-01-05T06:30:00Z","data":{"vehicle_id":"\\N","status":"\\N","reason":"\\\\"}}
JSON
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/ref.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/ref.db" --output "$dir/ref.ndjson"
grep -q '"subject":"vehicle:V\\t1\\n\\\\N\\u0001é\\r"' "$dir/ref.ndjson" ||
	fail "the escaping tenant did not go in"
tenants=$(sed -n 's/^{"type":"event","tenant":"\([^"]*\)".*/\1/p' "$dir/ref.ndjson" | sort -u)

# 1. Replay after ingest: same bytes, nothing to write.
url=$($KEEL_TEST_PG_FRESH)
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$url"
for t in $tenants; do
	expect 0 "$KEEL" replay --tenant "$t" --store "$url"
	contains out "(no changes)"
done
expect 0 "$KEEL" dump --store "$url" --output "$dir/replayed.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/replayed.ndjson" ||
	fail "replay on postgres changed the dump: $(diff "$dir/ref.ndjson" "$dir/replayed.ndjson" | head -4)"

# 2. A changed cartridge equals ingesting from scratch with it.
sed -e 's/"predicate": "status"/"predicate": "state"/' "$src/cartridges/fleet.json" >"$dir/v2.json"
for t in $tenants; do
	expect 0 "$KEEL" replay --tenant "$t" --store "$url" --cartridge "$dir/v2.json" --change-cartridge
	contains out "postgres: binary COPY in one transaction"
done
expect 0 "$KEEL" dump --store "$url" --output "$dir/v2-replayed.ndjson"
expect 0 "$KEEL" ingest "$dir/in.ndjson" --store "sqlite:$dir/v2.db" --cartridge "$dir/v2.json"
expect 0 "$KEEL" dump --store "sqlite:$dir/v2.db" --output "$dir/v2-fresh.ndjson"
cmp -s "$dir/v2-replayed.ndjson" "$dir/v2-fresh.ndjson" || fail "postgres replay with v2 differs from ingest with v2"
grep -q '"predicate":"state"' "$dir/v2-fresh.ndjson" || fail "v2 made no state facts"

# 3. A replay that fails midway leaves the tenant as it was: a trigger
# refuses one fact row of tenant-01, after the deletes and the entities.
schema=${url##*search_path%3D}
KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" "
CREATE FUNCTION $schema.keel_test_refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
IF NEW.tenant = 'tenant-01' AND NEW.predicate IN ('state', 'status') AND NEW.subject = 'vehicle:V-0003'
THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END \$\$;
CREATE TRIGGER keel_test_refuse BEFORE INSERT ON $schema.keel_fact_rows FOR EACH ROW
EXECUTE FUNCTION $schema.keel_test_refuse();" >/dev/null || fail "cannot create the test trigger"
expect 0 "$KEEL" dump --store "$url" --tenant tenant-01 --output "$dir/t1-before.ndjson"
expect 1 "$KEEL" replay --tenant tenant-01 --store "$url" --cartridge fleet --change-cartridge
contains err "refused by the test"
expect 0 "$KEEL" replay --tenant tenant-01 --store "$url"
contains out "(no changes)"
expect 0 "$KEEL" dump --store "$url" --tenant tenant-01 --output "$dir/t1-after.ndjson"
cmp -s "$dir/t1-before.ndjson" "$dir/t1-after.ndjson" || fail "a failed replay changed the tenant"
KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" "DROP TRIGGER keel_test_refuse ON $schema.keel_fact_rows" >/dev/null

# 4. ingest --replay into a fresh store, and refusing an existing tenant.
url2=$($KEEL_TEST_PG_FRESH)
expect 0 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "$url2"
contains err "written by postgres: binary COPY in one transaction"
expect 0 "$KEEL" dump --store "$url2" --output "$dir/bulk.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/bulk.ndjson" || fail "ingest --replay on postgres differs"
expect 1 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "$url2"
contains err "--replay loads only new tenants"

# 5. Workers give the same dump.
url3=$($KEEL_TEST_PG_FRESH)
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$url3" --workers 2 --batch 300
contains err "written by 2 workers, one connection each, each tenant on one worker"
expect 0 "$KEEL" dump --store "$url3" --output "$dir/w2.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/w2.ndjson" || fail "--workers 2 differs on postgres"
finish
