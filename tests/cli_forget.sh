#!/usr/bin/env bash
# cli_forget.sh - keel forget and DELETE /v1/tenants/T/entities/S on SQLite
# (docs/semantics.md, "Forgetting"): the subject's rows, the relations
# naming it and its data in the logged envelopes are gone, reads say it was
# forgotten, a replay gives the same graph, other subjects and tenants are
# unchanged, a redelivery brings nothing back, and neither the database
# file nor its WAL holds the subject's strings once the command returns;
# over HTTP only an all-tenants token or one with the forget right may.
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
. "$(dirname "$0")/cli/forget_checks.sh"

# Every file of the database (the WAL and shared memory too, when there).
store_bytes() {
	cat "$dir/a.db" "$dir/a.db-wal" "$dir/a.db-shm" >"$1" 2>/dev/null
	[ -s "$1" ] || fail "no database file"
}

forget_input
forget_cli "sqlite:$dir/a.db"
forget_http "sqlite:$dir/a.db"
finish
