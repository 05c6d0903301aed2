#!/usr/bin/env bash
# An event is (tenant, source, id), on SQLite: two producers' id "1" both
# go in and provenance names each by source and id (dump, why); a
# conflicting duplicate is skipped, named with both positions on stderr,
# in --rejects and in the HTTP answer, and keel ingest exits 3
# (docs/semantics.md, docs/cli.md, docs/http.md). tests/cli/identity.sh
# holds the checks; mysql_identity.sh runs them on MariaDB.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
command -v curl >/dev/null || skip_test "no curl (scripts/deps --test installs it)"
. "$(dirname "$0")/cli/identity.sh"

identity_cli "sqlite:$dir/cli.db"
identity_http "sqlite:$dir/http.db"
echo ok
