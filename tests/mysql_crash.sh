#!/usr/bin/env bash
# tests/crash.sh against MariaDB: `keel ingest` killed with SIGKILL at random
# moments, at the default commit interval and at --commit-interval 0, run
# again until a run finishes; every round's dump (and its dumps --known-at
# the moments of its kills) as crash.sh checks them, each round on a fresh
# database. Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ] || [ -z "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_mysql
fi
KEEL_CRASH_FRESH=$KEEL_TEST_MYSQL_FRESH KEEL_CRASH_EVENTS=4000 exec bash "$(dirname "$0")/crash.sh"
