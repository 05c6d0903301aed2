#!/usr/bin/env bash
# tests/crash.sh against PostgreSQL: `keel ingest` killed with SIGKILL at
# random moments (9 of them, on 2000 events: the suite's time), at the
# default commit interval and at --commit-interval 0,
# run again until a run finishes; every round's dump (and its dumps
# --known-at the moments of its kills) as crash.sh checks them, each round
# on a fresh store. Needs the suite's PostgreSQL fixture (KEEL_TEST_PG_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_PG_FRESH:-}" ] || [ -z "${KEEL_TEST_PG_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_postgres
fi
KEEL_CRASH_FRESH=$KEEL_TEST_PG_FRESH KEEL_CRASH_EVENTS=2000 KEEL_CRASH_KILLS=9 exec bash "$(dirname "$0")/crash.sh"
