#!/usr/bin/env bash
# make-v11.sh - how v11.sqlite and v11.dump were made.
#
#   tests/data/migrate/make-v11.sh KEEL
#
# RUN IT ONLY WITH THE KEEL OF THE COMMIT THAT MADE THE FILES: ed2b8fc
# (SQLite schema version 11, the last with names as text in the fact and
# relation rows). The script refuses a keel whose stores have another
# schema version. From v1.ndjson's first 60 lines and its 21 written by
# hand (tenants acme.eu_1 and weird among them): an ingest, a search at
# the present (current rows and spans folded), a forget (a tombstone),
# then a small VACUUMed file, and the dump of it by the same Keel.
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: make-v11.sh KEEL" >&2
	exit 2
fi
keel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-migdata.XXXXXX")
trap 'rm -rf "$work"' EXIT
db=$work/v11.sqlite
{ head -n 60 "$here/v1.ndjson"; tail -n 21 "$here/v1.ndjson"; } >"$work/in.ndjson"
"$keel" ingest "$work/in.ndjson" --batch 20 --cartridge fleet --store "sqlite:$db" --quiet ||
	[ $? = 3 ]
[ "$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 11 ] || {
	echo "make-v11.sh: $keel does not write schema version 11" >&2
	exit 1
}
"$keel" search tenant-00 status available --store "sqlite:$db" >/dev/null
"$keel" forget tenant-01 driver:DR-0002 --cartridge fleet --store "sqlite:$db" >/dev/null
sqlite3 "$db" "PRAGMA journal_mode = DELETE; PRAGMA page_size = 1024; VACUUM; PRAGMA journal_mode = WAL" >/dev/null
"$keel" dump --store "sqlite:$db" --output "$work/v11.dump"
cp "$db" "$here/v11.sqlite"
cp "$work/v11.dump" "$here/v11.dump"
