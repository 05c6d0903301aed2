#!/usr/bin/env bash
# tests/crash.sh against MariaDB: keel ingest killed with kill -9 at random
# moments, at least 20 times, each round on a new database; after the runs
# that follow each kill the dump equals an uninterrupted run's. Needs the
# suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ] || [ -z "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_mysql
fi
KEEL_CRASH_FRESH=$KEEL_TEST_MYSQL_FRESH exec bash "$(dirname "$0")/crash.sh"
