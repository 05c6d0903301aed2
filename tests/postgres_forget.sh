#!/usr/bin/env bash
# postgres_forget.sh - keel forget and DELETE /v1/tenants/T/entities/S on
# PostgreSQL (docs/semantics.md, "Forgetting"; docs/store-postgres.md): the
# same checks as cli_forget.sh on SQLite (tests/cli/forget_checks.sh), with
# the store's bytes taken as a pg_dump of its schema, every table, strings
# as they are. Needs the suite's PostgreSQL fixture; skipped without.
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
. "$(dirname "$0")/cli/forget_checks.sh"
needs_postgres
srv=$KEEL_TEST_PG_DIR
pg_dump_bin=${KEEL_PG_BIN:-/usr/lib/postgresql/15/bin}/pg_dump
[ -x "$pg_dump_bin" ] || skip_test "no pg_dump"

url=$($KEEL_TEST_PG_FRESH)
schema=${url##*search_path%3D}

# The whole schema as SQL text: every row of every table (COPY text
# format, strings as they are), so a string still stored anywhere is found.
store_bytes() {
	"$pg_dump_bin" -h "$(readlink "$srv/cluster")" -p "$(cat "$srv/port")" -U postgres \
		-n "$schema" keel >"$1" || fail "pg_dump failed"
	grep -q "^COPY $schema.keel_events " "$1" || fail "the dump has no events"
}

forget_input
forget_cli "$url"
forget_http "$url"
# The tombstones name the subjects by their SHA-256 only.
store_bytes "$dir/final.sql"
n=$(sed -n "/^COPY $schema.keel_tombstones /,/^\\\\\\.\$/p" "$dir/final.sql" | grep -vc '^COPY\|^\\\.$')
[ "$n" -eq 3 ] || fail "expected 3 tombstones: $n"
finish
