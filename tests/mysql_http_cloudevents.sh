#!/usr/bin/env bash
# tests/http_cloudevents.sh against MariaDB: every content mode of POST
# /v1/events, the envelopes logged and read back. Needs the suite's MariaDB
# fixture (KEEL_TEST_MYSQL_FRESH).
set -euo pipefail
if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ] || [ -z "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	. "$(dirname "$0")/cli/scratch.sh"
	needs_mysql
fi
KEEL_CE_STORE=$($KEEL_TEST_MYSQL_FRESH) exec bash "$(dirname "$0")/http_cloudevents.sh"
