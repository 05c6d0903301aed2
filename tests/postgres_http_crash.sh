#!/usr/bin/env bash
# tests/http_crash.sh against PostgreSQL: keel serve killed at random moments
# while a producer posts; every acknowledged chunk is kept, the one in flight
# whole or not at all, and the final dump equals SQLite's ingest of the
# stream (a third of its length: the kills are what is tested). Needs the suite's PostgreSQL fixture (KEEL_TEST_PG_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_PG_FRESH:-}" ] || [ -z "${KEEL_TEST_PG_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_postgres
fi
KEEL_CRASH_STORE=$($KEEL_TEST_PG_FRESH) KEEL_CRASH_EVENTS=2000 exec bash "$(dirname "$0")/http_crash.sh"
