#!/usr/bin/env bash
# keel tenants, keel entities and keel search on PostgreSQL, through the
# command line and through keel serve: the story of tests/cli/find.sh.
# Needs the suite's PostgreSQL fixture; skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_postgres
. "$(dirname "$0")/cli/find.sh"

pg=$($KEEL_TEST_PG_FRESH)
ingest_postgres() { # file
	"$KEEL" ingest --cartridge fleet --quiet --store "$pg" "$1"
}
find_record ingest_postgres
find_cli_pages sqlite "$db"
find_cli_pages postgres "$pg"
find_same cli-sqlite cli-postgres

find_serve "$pg"
find_http_pages postgres
find_same cli-sqlite http-postgres
find_scope
find_stop
