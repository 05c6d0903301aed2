#!/usr/bin/env bash
# make.sh - how the version 1 stores in this directory were made.
#
#   tests/data/migrate/make.sh KEEL SOCKET [USER]
#
# KEEL is a keel binary, SOCKET the unix socket of a running MariaDB server
# on which USER (default: the current user's name, which
# scripts/mariadb-test-server lets in through the socket) may create and
# drop databases. Example, with a private server:
#
#   dir=$(mktemp -d) && scripts/mariadb-test-server start "$dir/srv"
#   tests/data/migrate/make.sh build/keel "$dir/srv/sock"
#   scripts/mariadb-test-server stop "$dir/srv"
#
# RUN IT ONLY WITH THE KEEL OF THE COMMIT THAT MADE THE DATA: d09310a
# (SQLite schema version 1, MariaDB schema version 4). These files are what
# an OLDER keel wrote, for the migration to be tested against; made by a
# newer keel they would test nothing (README.md). The script refuses a keel
# whose stores have other schema versions.
#
# From v1.ndjson (the input, committed, never made here) it writes:
#   v1.sqlite        keel ingest --batch 50 into sqlite:, then VACUUM
#   v1.dump          keel dump of v1.sqlite (the expected canonical dump)
#   v1-mariadb.sql   mariadb-dump of the same ingest into MariaDB
# and checks that the MariaDB store, and a database loaded back from
# v1-mariadb.sql, dump byte for byte as v1.dump. The databases it creates
# (keel_migrate_v1, keel_migrate_v1_reload) are dropped at the end.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: make.sh KEEL SOCKET [USER]" >&2
	exit 2
fi
keel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
socket=$2
user=${3:-$(id -un)}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-migdata.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
	echo "make.sh: $*" >&2
	exit 1
}
sql() {
	mariadb --no-defaults --protocol=socket --socket="$socket" -u"$user" \
		--default-character-set=utf8mb4 "$@"
}
db=keel_migrate_v1
reload=keel_migrate_v1_reload
url() { echo "mysql://$user@localhost/$1?socket=$socket"; }

# The first 400 lines are the generator's (docs/generator.md: its output
# never changes), the rest were written by hand (README.md).
"$keel" generate fleet --events 400 --tenants 2 --seed 4 --late 0.15 --duplicates 0.03 >"$work/gen.ndjson"
head -n 400 "$here/v1.ndjson" | cmp -s - "$work/gen.ndjson" ||
	fail "v1.ndjson's first 400 lines are not the generator's output"

# SQLite. keel closes the file cleanly (no -wal left); VACUUM makes it small
# and keeps it in WAL mode, as keel left it.
"$keel" ingest "$here/v1.ndjson" --store "sqlite:$work/v1.sqlite" --batch 50
sqlite3 "$work/v1.sqlite" 'VACUUM'
[ ! -e "$work/v1.sqlite-wal" ] || fail "a -wal file was left next to v1.sqlite"
[ "$(sqlite3 "$work/v1.sqlite" "SELECT value FROM meta WHERE key = 'schema_version'")" = 1 ] ||
	fail "this keel does not write SQLite schema version 1: not the keel that made the data"
"$keel" dump --store "sqlite:$work/v1.sqlite" --output "$work/v1.dump"

# MariaDB: the same ingest, dumped without its CREATE DATABASE (the test
# loads it into a database of its own).
sql -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $reload;
	CREATE DATABASE $db CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
	CREATE DATABASE $reload CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
"$keel" ingest "$here/v1.ndjson" --store "$(url $db)" --batch 50
[ "$(sql -N -e "SELECT value FROM $db.keel_meta WHERE name = 'schema_version'")" = 4 ] ||
	fail "this keel does not write MariaDB schema version 4: not the keel that made the data"
"$keel" dump --store "$(url $db)" --output "$work/mariadb.dump"
cmp "$work/v1.dump" "$work/mariadb.dump" || fail "the MariaDB store does not dump as the SQLite one"
mariadb-dump --no-defaults --protocol=socket --socket="$socket" -u"$user" \
	--default-character-set=utf8mb4 --skip-dump-date --skip-comments \
	--order-by-primary --skip-extended-insert "$db" >"$work/mariadb-dump.sql"
# Newer mariadb-dump (10.11.8 on) starts with a "sandbox mode" line that
# clients older than that, and MySQL's, refuse; it only guards against
# shell commands in an untrusted dump, and this one is ours.
# (It is dropped with the blank line after it.)
awk 'NR == 1 && /enable the sandbox mode/ { skip = 1; next }
	skip && /^$/ { skip = 0; next } { skip = 0; print }' "$work/mariadb-dump.sql" >"$work/v1-mariadb.sql"

# The dump file loads back into the same store.
sql "$reload" <"$work/v1-mariadb.sql"
"$keel" dump --store "$(url $reload)" --output "$work/reload.dump"
cmp "$work/v1.dump" "$work/reload.dump" || fail "v1-mariadb.sql does not load back into the same store"
sql -e "DROP DATABASE $db; DROP DATABASE $reload"

cp "$work/v1.sqlite" "$work/v1.dump" "$work/v1-mariadb.sql" "$here/"
echo "make.sh: wrote v1.sqlite, v1.dump and v1-mariadb.sql in $here" >&2
