#!/usr/bin/env bash
# An event is (tenant, source, id), on PostgreSQL: the checks of
# cli_identity.sh (tests/cli/identity.sh) against the suite's server.
# Needs the suite's PostgreSQL fixture (KEEL_TEST_PG_FRESH); skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_postgres
command -v curl >/dev/null || skip_test "no curl (scripts/deps --test installs it)"
. "$(dirname "$0")/cli/identity.sh"

identity_cli "$($KEEL_TEST_PG_FRESH)"
identity_http "$($KEEL_TEST_PG_FRESH)"
echo ok
