#!/usr/bin/env bash
# keel tenants, keel entities and keel search on MariaDB, through the
# command line and through keel serve: the story of tests/cli/find.sh.
# Needs the suite's MariaDB fixture; skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql
. "$(dirname "$0")/cli/find.sh"

my=$($KEEL_TEST_MYSQL_FRESH)
ingest_mysql() { # file
	"$KEEL" ingest --cartridge fleet --quiet --store "$my" "$1"
}
find_record ingest_mysql
find_cli_pages sqlite "$db"
find_cli_pages mysql "$my"
find_same cli-sqlite cli-mysql

find_serve "$my"
find_http_pages mysql
find_same cli-sqlite http-mysql
find_scope
find_stop
