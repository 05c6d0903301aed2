#!/usr/bin/env bash
# A MariaDB database written by the Keel before rows became append-only
# (schema version 4, tests/data/migrate/v1-mariadb.sql) opens with this
# Keel and is migrated in place: its dump is what the old Keel dumped
# (tests/data/migrate/v1.dump) in today's form, byte for byte
# tests/data/migrate/v1.new.dump (events named by source and id, the
# source taken from each logged envelope), keel migrate reports the
# versions, a migration stopped halfway finishes at the next open, and a
# later ingest goes on from it as from a store that ingested everything.
# The views (keel_facts, keel_relations, keel_entities) show row for row
# what keel dump prints, on the migrated store and on one written new
# (each reference in two columns, X_source and X).
# Last, a database with forty tenants whose rows each held their
# cartridge's whole text (schema 10, tests/data/migrate/v10-tenants-mariadb.sql)
# keeps each distinct cartridge once, and reads, ingests and replays as
# before (tests/cli/tenants_migrated.sh).
# Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/tenants_migrated.sh"
needs_mysql
: "${KEEL_MYSQL_SCRIPT:?the script of the fixture}"
data=${KEEL_TEST_DATA:?}/migrate
srv=$KEEL_TEST_MYSQL_DIR

root_sql() { "$KEEL_MYSQL_SCRIPT" sql "$srv" "$@"; }
db_of() { local d=${1##*/}; echo "${d%%\?*}"; }
# load_v1 URL: the old Keel's database, loaded into the fresh one at URL
load_v1() {
	{
		echo "USE \`$(db_of "$1")\`;"
		cat "$data/v1-mariadb.sql"
	} | "$KEEL_MYSQL_SCRIPT" sql "$srv"
}
version_of() {
	root_sql "SELECT value FROM \`$(db_of "$1")\`.keel_meta WHERE name = 'schema_version'" | tail -n 1
}

# views_equal_dump URL: every row of the three views, and nothing else, is
# a fact, relation or entity line of keel dump, in every column but seq and
# recorded_at (strings compared as bytes, values as parsed JSON, times as
# microseconds and as text of fixed width: tests/cli/views_check.py)
. "$(dirname "$0")/cli/views.sh"
views_equal_dump() {
	local db
	db=$(db_of "$1")
	"$KEEL" dump --store "$1" --output "$dir/views.dump"
	root_sql "$(views_select mysql "\`$db\`.")" >"$dir/views.rows"
	python3 "$(dirname "$0")/cli/views_check.py" "$dir/views.dump" "$dir/views.rows" ||
		fail "the views differ from keel dump on $db"
}

# 1. keel migrate migrates and says from which version to which (the
# latest, whatever its number: each new step adds one); the dump is the
# old Keel's in today's form, byte for byte.
url=$($KEEL_TEST_MYSQL_FRESH)
load_v1 "$url"
[ "$(version_of "$url")" = 4 ] || fail "the test data is not at schema version 4"
"$KEEL" migrate --store "$url" >"$dir/migrate.out" 2>&1 || fail "keel migrate: $(cat "$dir/migrate.out")"
latest=$(version_of "$url")
[ "$latest" -ge 6 ] || fail "keel migrate left version $latest"
grep -q "from schema 4 to $latest" "$dir/migrate.out" ||
	fail "keel migrate does not name versions 4 and $latest: $(cat "$dir/migrate.out")"
"$KEEL" dump --store "$url" --output "$dir/migrated.dump"
cmp "$data/v1.new.dump" "$dir/migrated.dump" || fail "the migrated store's dump differs from the old Keel's"
# every row kept, with its seq and provenance: as many rows as before
rows=$(root_sql "SELECT (SELECT COUNT(*) FROM \`$(db_of "$url")\`.keel_fact_rows) + (SELECT COUNT(*) FROM \`$(db_of "$url")\`.keel_relation_rows)" | tail -n 1)
[ "$rows" = "$(grep -c '"type":"\(fact\|relation\)"' "$data/v1.dump")" ] || fail "$rows rows after the migration"
"$KEEL" migrate --store "$url" >"$dir/migrate2.out" 2>&1 || fail "keel migrate again: $(cat "$dir/migrate2.out")"
views_equal_dump "$url"

# 2. Opening to read migrates too (the MySQL store's policy: at open), and
# a migration stopped halfway (DDL is not transactional: here after the
# events and the facts) finishes at the next open.
url=$($KEEL_TEST_MYSQL_FRESH)
load_v1 "$url"
db=$(db_of "$url")
root_sql "ALTER TABLE \`$db\`.keel_events ADD COLUMN recorded_at BIGINT NOT NULL DEFAULT 0; ALTER TABLE \`$db\`.keel_facts DROP COLUMN valid_to, DROP COLUMN closed_by, ADD COLUMN recorded_at BIGINT NOT NULL DEFAULT 0, RENAME TO \`$db\`.keel_fact_rows"
"$KEEL" dump --store "$url" --output "$dir/half.dump"
cmp "$data/v1.new.dump" "$dir/half.dump" || fail "a half-migrated store's dump differs"
[ "$(version_of "$url")" = "$latest" ] || fail "the half-migrated store is at version $(version_of "$url")"

# 3. A later ingest: the same input again changes nothing; new events go
# on from the migrated rows as on a store that ingested everything; known
# at a moment before them, the store is the old one.
"$KEEL" ingest "$data/v1.ndjson" --cartridge fleet --store "$url" 2>"$dir/again.err" || true
grep -q '^accepted 0,' "$dir/again.err" || fail "the old input again: $(cat "$dir/again.err")"
"$KEEL" generate fleet --events 600 --tenants 2 --seed 4 --late 0.15 --duplicates 0.03 |
	sed 's/"id":"ev-/"id":"later-/' >"$dir/later.ndjson"
before=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
"$KEEL" ingest "$dir/later.ndjson" --cartridge fleet --quiet --store "$url"
cat "$data/v1.ndjson" "$dir/later.ndjson" >"$dir/all.ndjson"
"$KEEL" ingest "$dir/all.ndjson" --cartridge fleet --quiet --store "sqlite:$dir/all.db" || true
"$KEEL" dump --store "sqlite:$dir/all.db" --output "$dir/all.dump"
"$KEEL" dump --store "$url" --output "$dir/later.dump"
cmp "$dir/all.dump" "$dir/later.dump" || fail "ingesting after the migration differs from one store of everything"
"$KEEL" dump --store "$url" --known-at "$before" --output "$dir/known.dump"
cmp "$data/v1.new.dump" "$dir/known.dump" || fail "known at $before, the store is not the migrated one"
views_equal_dump "$url"

# 4. The views of a store written new, late events and duplicates included.
url=$($KEEL_TEST_MYSQL_FRESH)
"$KEEL" ingest "$dir/all.ndjson" --cartridge fleet --quiet --batch 97 --store "$url" || true
views_equal_dump "$url"

# 5. A store created new and a migrated one have the same tables.
fresh=$($KEEL_TEST_MYSQL_FRESH)
"$KEEL" stats --store "$fresh" >/dev/null 2>&1 || true
migrated=$($KEEL_TEST_MYSQL_FRESH)
load_v1 "$migrated"
"$KEEL" migrate --store "$migrated" >/dev/null
shape() {
	root_sql "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$(db_of "$1")' ORDER BY TABLE_NAME, ORDINAL_POSITION; SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '$(db_of "$1")' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"
}
shape "$fresh" >"$dir/fresh.shape"
shape "$migrated" >"$dir/migrated.shape"
diff "$dir/fresh.shape" "$dir/migrated.shape" >&2 || fail "a new store's tables differ from a migrated one's"

# 6. Many tenants, each row holding its cartridge's text: after the
# migration two cartridges, each once, and forty tenants naming them by
# hash (docs/store-mysql.md, "Recorded cartridges"); a migration stopped
# after the texts were copied out finishes at the next open.
for half in no yes; do
	url=$($KEEL_TEST_MYSQL_FRESH)
	db=$(db_of "$url")
	{
		echo "USE \`$db\`;"
		cat "$data/v10-tenants-mariadb.sql"
	} | "$KEEL_MYSQL_SCRIPT" sql "$srv"
	[ "$(version_of "$url")" = 10 ] || fail "v10-tenants-mariadb.sql is not at schema version 10"
	[ "$(root_sql "SELECT CONCAT(COUNT(*), ' ', COUNT(DISTINCT hash), ' ', COUNT(text)) FROM \`$db\`.keel_tenant_cartridges" | tail -n 1)" = "40 2 40" ] ||
		fail "v10-tenants-mariadb.sql is not the store of the README"
	if [ $half = yes ]; then
		# what the step's first two statements do, then the stop
		root_sql "USE \`$db\`; CREATE TABLE keel_cartridges (hash VARBINARY(80) NOT NULL, name VARBINARY(255) NOT NULL, version VARBINARY(255) NOT NULL, text MEDIUMBLOB NULL, PRIMARY KEY (hash)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin; INSERT INTO keel_cartridges SELECT hash, name, version, text FROM keel_tenant_cartridges WHERE tenant = 'tenant-00'"
		"$KEEL" dump --store "$url" --output "$dir/half.dump"
		cmp -s "$dir/half.dump" "$data/tenants.dump" || fail "a half-migrated many-tenant store's dump differs"
	else
		"$KEEL" migrate --store "$url" >"$dir/migrate.out" 2>&1 || fail "keel migrate: $(cat "$dir/migrate.out")"
		grep -q "from schema 10 to $latest" "$dir/migrate.out" ||
			fail "keel migrate does not name versions 10 and $latest: $(cat "$dir/migrate.out")"
	fi
	[ "$(version_of "$url")" = "$latest" ] || fail "the many-tenant store is at version $(version_of "$url")"
	[ "$(root_sql "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR ' ') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 'keel_tenant_cartridges'" | tail -n 1)" = "tenant hash recorded_at" ] ||
		fail "keel_tenant_cartridges still holds more than the hash"
	[ "$(root_sql "SELECT GROUP_CONCAT(CONCAT(name, ' ', version, ' ', LENGTH(text) > 4000) ORDER BY version SEPARATOR ', ') FROM \`$db\`.keel_cartridges" | tail -n 1)" = "fleet 1 1, fleet 2 1" ] ||
		fail "keel_cartridges does not hold the two cartridges once each"
	[ "$(root_sql "SELECT COUNT(*) FROM \`$db\`.keel_tenant_cartridges t JOIN \`$db\`.keel_cartridges c ON c.hash = t.hash" | tail -n 1)" = 40 ] ||
		fail "a tenant names a cartridge that is not there"
done
tenants_migrated "$url"
[ "$(root_sql "SELECT COUNT(*) FROM \`$db\`.keel_cartridges" | tail -n 1)" = 2 ] ||
	fail "ingesting and replaying the migrated store stored a cartridge again"

echo ok
