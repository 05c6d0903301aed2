#!/usr/bin/env bash
# make-tenants.sh - how the many-tenant stores in this directory were made
# (README.md): stores that record each tenant's cartridge with its whole
# text, once per tenant, as Keel did before each distinct cartridge was
# stored once.
#
#   tests/data/migrate/make-tenants.sh KEEL MARIADB_DIR PG_DIR
#
# KEEL is a keel binary of commit 7eef1eb (SQLite schema 9, MariaDB schema
# 10, PostgreSQL schema 2); MARIADB_DIR and PG_DIR are servers started by
# scripts/mariadb-test-server and scripts/postgres-test-server. RUN IT
# ONLY WITH THAT KEEL: made by a newer one the files would test nothing.
#
# The input is keel generate fleet --events 400 --tenants 40 --seed 7
# (frozen, docs/generator.md; the tests generate it again): tenants
# tenant-00 to tenant-19 ingested with the built-in fleet cartridge, the
# other twenty with tenants-fleet-2.json (fleet with version "2": another
# hash), so the stores hold two distinct cartridges forty times. It writes
#   v9-tenants.sqlite       keel ingest into sqlite:, then VACUUM
#   v10-tenants-mariadb.sql mariadb-dump of the same ingests
#   v2-tenants-postgres.sql pg_dump of the same ingests, its schema named
#                           KEEL_SCHEMA (a test puts its own in its place)
#   tenants.dump            keel dump of the SQLite store
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: make-tenants.sh KEEL MARIADB_DIR PG_DIR" >&2; exit 2; }
keel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mdir=$2
pdir=$3
here=$(cd "$(dirname "$0")" && pwd)
scripts=$here/../../../scripts
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-tenants.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$keel" generate fleet --events 400 --tenants 40 --seed 7 --output "$work/in.ndjson"
grep -E '"tenant":"tenant-[01][0-9]"' "$work/in.ndjson" >"$work/a.ndjson"
grep -vE '"tenant":"tenant-[01][0-9]"' "$work/in.ndjson" >"$work/b.ndjson"
ingest() { # URL
	"$keel" ingest --cartridge fleet --quiet --store "$1" "$work/a.ndjson"
	"$keel" ingest --cartridge "$here/tenants-fleet-2.json" --quiet --store "$1" "$work/b.ndjson"
}

rm -f "$here/v9-tenants.sqlite"
ingest "sqlite:$work/s.db"
[ "$(sqlite3 "$work/s.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 9 ] ||
	{ echo "make-tenants.sh: this keel's SQLite store is not schema 9" >&2; exit 1; }
sqlite3 "$work/s.db" "VACUUM"
cp "$work/s.db" "$here/v9-tenants.sqlite"
"$keel" dump --store "sqlite:$here/v9-tenants.sqlite" --output "$here/tenants.dump"

url=$("$scripts/mariadb-test-server" fresh "$mdir")
ingest "$url"
db=${url##*/}
db=${db%%\?*}
[ "$("$scripts/mariadb-test-server" sql "$mdir" "SELECT value FROM \`$db\`.keel_meta WHERE name = 'schema_version'" | tail -n 1)" = 10 ] ||
	{ echo "make-tenants.sh: this keel's MariaDB store is not schema 10" >&2; exit 1; }
mariadb-dump --socket "$mdir/sock" -u root --skip-dump-date --skip-comments \
	--order-by-primary --skip-extended-insert "$db" >"$here/v10-tenants-mariadb.sql"
"$keel" dump --store "$url" | cmp - "$here/tenants.dump"

url=$("$scripts/postgres-test-server" fresh "$pdir")
ingest "$url"
schema=${url##*search_path%3D}
[ "$(KEEL_PG_DB=keel "$scripts/postgres-test-server" sql "$pdir" "SELECT value FROM $schema.keel_meta WHERE name = 'schema_version'")" = 2 ] ||
	{ echo "make-tenants.sh: this keel's PostgreSQL store is not schema 2" >&2; exit 1; }
"$keel" dump --store "$url" | cmp - "$here/tenants.dump"
pg_dump -h "$(readlink -f "$pdir/cluster")" -p "$(cat "$pdir/port")" -U postgres --no-owner --no-privileges --schema "$schema" keel |
	sed "s/\\b$schema\\b/KEEL_SCHEMA/g" | grep -vE "^(-- Dumped|\\\\(un)?restrict )" >"$here/v2-tenants-postgres.sql"
echo "made v9-tenants.sqlite, v10-tenants-mariadb.sql, v2-tenants-postgres.sql, tenants.dump"
