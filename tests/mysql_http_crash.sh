#!/usr/bin/env bash
# tests/http_crash.sh against MariaDB: keel serve killed at random moments
# while a producer posts; every acknowledged chunk is kept, the one in flight
# whole or not at all, and the final dump equals SQLite's ingest of the
# stream. Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ] || [ -z "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_mysql
fi
KEEL_CRASH_STORE=$($KEEL_TEST_MYSQL_FRESH) exec bash "$(dirname "$0")/http_crash.sh"
