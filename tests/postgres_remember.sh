#!/usr/bin/env bash
# postgres_remember.sh - cartridges that are remembered, on PostgreSQL: the
# story of tests/cli/remember.sh on a new store, and workers using the
# recorded cartridge (docs/cartridges.md, "The recorded cartridge").
# Needs the suite's PostgreSQL fixture; skipped without.
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
needs_postgres
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/cli/remember.sh"

remember_suite "$($KEEL_TEST_PG_FRESH)"

# Workers use each tenant's recorded cartridge too, and refuse another.
url=$($KEEL_TEST_PG_FRESH)
expect 0 "$KEEL" ingest "$dir/first.ndjson" --store "$url" --cartridge "$dir/shop1.json"
expect 0 "$KEEL" ingest "$dir/second.ndjson" --store "$url" --workers 2
contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
expect 2 "$KEEL" ingest "$dir/third.ndjson" --store "$url" --workers 2 --cartridge fleet
contains err 'tenant "shop" is recorded with cartridge shop 1'
finish
