#!/usr/bin/env bash
# keel tenants, keel entities and keel search on SQLite through the command
# line, and through keel serve on SQLite and on the memory store: the story
# of tests/cli/find.sh; and on a terminal, a table with the next cursor.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/find.sh"

# The memory store lives in its server: its events go in by POST.
find_serve memory:
post() { # file
	[ "$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok_all" \
		-H 'Content-Type: application/x-ndjson' --data-binary "@$1" "$url/v1/events")" = 200 ] ||
		fail "post $1: $(cat "$dir/out")"
}
find_record post
find_cli_pages sqlite "$db"
find_http_pages memory
find_same cli-sqlite http-memory
find_stop

find_serve "$db"
find_http_pages sqlite
find_same cli-sqlite http-sqlite
find_scope

# On a terminal: a table, and the next page's cursor under it.
script -qc "\"$KEEL\" entities tenant-00 --kind depot --limit 2 --store $db" /dev/null \
	>"$dir/tty" </dev/null
grep -q '^  SUBJECT  *KIND  *FIRST SEEN  *LAST SEEN' "$dir/tty" || fail "tty: $(cat "$dir/tty")"
grep -q '^next: *[A-Za-z0-9_-]' "$dir/tty" || fail "tty next: $(cat "$dir/tty")"
find_stop
