#!/usr/bin/env bash
# make-v8.sh - how v8-folded.sqlite was made.
#
#   tests/data/migrate/make-v8.sh KEEL
#
# RUN IT ONLY WITH THE KEEL OF THE COMMIT THAT MADE THE FILE: 09f2404
# (SQLite schema version 8: the current rows, before the spans). It stands
# for a store that a search of that Keel has folded (README.md); the script
# refuses a keel whose stores have another schema version.
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: make-v8.sh KEEL" >&2
	exit 2
fi
keel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-migdata.XXXXXX")
trap 'rm -rf "$work"' EXIT
db=$work/v8-folded.sqlite
# v1.ndjson holds one conflicting duplicate: exit 3
"$keel" ingest "$here/v1.ndjson" --batch 50 --cartridge fleet --store "sqlite:$db" --quiet ||
	[ $? = 3 ]
[ "$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 8 ] || {
	echo "make-v8.sh: $keel does not write schema version 8" >&2
	exit 1
}
# a search at the present folds every row into the current rows
"$keel" search tenant-00 status available --store "sqlite:$db" >/dev/null
[ "$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'fact_current_seq'")" = \
	"$(sqlite3 "$db" "SELECT max(seq) FROM fact_rows")" ]
sqlite3 "$db" "VACUUM"
cp "$db" "$here/v8-folded.sqlite"
