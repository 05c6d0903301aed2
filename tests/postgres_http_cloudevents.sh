#!/usr/bin/env bash
# tests/http_cloudevents.sh against PostgreSQL: every content mode of POST
# /v1/events, the envelopes logged and read back. Needs the suite's
# PostgreSQL fixture (KEEL_TEST_PG_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_PG_FRESH:-}" ] || [ -z "${KEEL_TEST_PG_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_postgres
fi
KEEL_CE_STORE=$($KEEL_TEST_PG_FRESH) exec bash "$(dirname "$0")/http_cloudevents.sh"
