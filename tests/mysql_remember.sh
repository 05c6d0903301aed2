#!/usr/bin/env bash
# mysql_remember.sh - cartridges that are remembered, on MariaDB: the story
# of tests/cli/remember.sh on a new database and on one an older Keel
# wrote (tests/data/migrate/v1-mariadb.sql), and workers, which only this
# store has, using the recorded cartridge (docs/cartridges.md, "The
# recorded cartridge"). Needs the suite's MariaDB fixture; skipped without.
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
needs_mysql
: "${KEEL_MYSQL_SCRIPT:?the script of the fixture}"
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/cli/remember.sh"

remember_suite "$($KEEL_TEST_MYSQL_FRESH)"

# Workers use each tenant's recorded cartridge too, and refuse another.
url=$($KEEL_TEST_MYSQL_FRESH)
expect 0 "$KEEL" ingest "$dir/first.ndjson" --store "$url" --cartridge "$dir/shop1.json"
expect 0 "$KEEL" ingest "$dir/second.ndjson" --store "$url" --workers 2
contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
expect 2 "$KEEL" ingest "$dir/third.ndjson" --store "$url" --workers 2 --cartridge fleet
contains err 'tenant "shop" is recorded with cartridge shop 1'

# A database the old Keel wrote.
url=$($KEEL_TEST_MYSQL_FRESH)
db=${url##*/}
db=${db%%\?*}
{
	echo "USE \`$db\`;"
	cat "${KEEL_TEST_DATA:?}/migrate/v1-mariadb.sql"
} | "$KEEL_MYSQL_SCRIPT" sql "$KEEL_TEST_MYSQL_DIR"
remember_migrated "$url"
finish
