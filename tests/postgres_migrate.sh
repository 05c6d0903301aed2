#!/usr/bin/env bash
# postgres_migrate.sh - a PostgreSQL store made by the Keel that kept each
# tenant's cartridge text in the tenant's own row (schema 2,
# tests/data/migrate/v2-tenants-postgres.sql: forty tenants, two
# cartridges) is migrated in place when opened: keel migrate says from
# which schema to which, each distinct cartridge is then stored once
# (keel_cartridges) and the tenants name theirs by hash, and the store
# reads, ingests and replays as before (tests/cli/tenants_migrated.sh).
# Needs the suite's PostgreSQL fixture; skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/tenants_migrated.sh"
needs_postgres
: "${KEEL_PG_SCRIPT:?the script of the fixture}"
data=${KEEL_TEST_DATA:?}/migrate

url=$($KEEL_TEST_PG_FRESH)
schema=${url##*search_path%3D}
sql() { KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" "SET search_path = $schema; $*"; }
# the old Keel's store, in the fresh schema, owned by the store's user
{
	echo "SET ROLE keel;"
	sed -e "s/KEEL_SCHEMA/$schema/g" -e '/^CREATE SCHEMA /d' "$data/v2-tenants-postgres.sql"
} | KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" >/dev/null
[ "$(sql "SELECT value FROM keel_meta WHERE name = 'schema_version'")" = 2 ] ||
	fail "v2-tenants-postgres.sql is not at schema version 2"
[ "$(sql "SELECT count(*) || ' ' || count(DISTINCT hash) || ' ' || count(text) FROM keel_tenant_cartridges")" = "40 2 40" ] ||
	fail "v2-tenants-postgres.sql is not the store of the README"

"$KEEL" migrate --store "$url" >"$dir/migrate.out" 2>&1 || fail "keel migrate: $(cat "$dir/migrate.out")"
latest=$(sql "SELECT value FROM keel_meta WHERE name = 'schema_version'")
[ "$latest" -ge 3 ] || fail "keel migrate left version $latest"
grep -q "from schema 2 to $latest" "$dir/migrate.out" ||
	fail "keel migrate does not name versions 2 and $latest: $(cat "$dir/migrate.out")"
[ "$(sql "SELECT string_agg(column_name, ' ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema = '$schema' AND table_name = 'keel_tenant_cartridges'")" = "tenant hash recorded_at" ] ||
	fail "keel_tenant_cartridges still holds more than the hash"
[ "$(sql "SELECT string_agg(name || ' ' || version || ' ' || (length(text) > 4000), ', ' ORDER BY version) FROM keel_cartridges")" = "fleet 1 true, fleet 2 true" ] ||
	fail "keel_cartridges does not hold the two cartridges once each"
[ "$(sql "SELECT count(*) FROM keel_tenant_cartridges t JOIN keel_cartridges c USING (hash)")" = 40 ] ||
	fail "a tenant names a cartridge that is not there"
tenants_migrated "$url"
[ "$(sql "SELECT count(*) FROM keel_cartridges")" = 2 ] ||
	fail "ingesting and replaying the migrated store stored a cartridge again"

# A store created new and a migrated one have the same cartridge tables
# (in the same order; PostgreSQL keeps a dropped column's position).
fresh=$($KEEL_TEST_PG_FRESH)
"$KEEL" stats --store "$fresh" >/dev/null 2>&1 || true
shape() {
	KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" "SELECT table_name, column_name, data_type, is_nullable, collation_name FROM information_schema.columns WHERE table_schema = '$1' AND table_name LIKE 'keel_%cartridges' ORDER BY table_name, ordinal_position"
}
shape "${fresh##*search_path%3D}" >"$dir/fresh.shape"
shape "$schema" >"$dir/migrated.shape"
diff "$dir/fresh.shape" "$dir/migrated.shape" >&2 || fail "a new store's cartridge tables differ from a migrated one's"
[ -s "$dir/fresh.shape" ] || fail "no cartridge tables in a new store"
echo ok
