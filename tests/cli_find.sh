#!/usr/bin/env bash
# keel tenants, keel entities and keel search on SQLite through the command
# line, and through keel serve on SQLite and on the memory store: every
# page the same (tests/cli/find_check.py checks the answers themselves);
# a token scoped to a tenant lists only its tenants and gets 403 on
# another's entities and search (docs/http.md).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
check=$(dirname "$0")/cli/find_check.py

"$KEEL" generate fleet --events 4000 --tenants 2 --seed 11 --output "$dir/in.ndjson"
head -n 2000 "$dir/in.ndjson" >"$dir/first.ndjson"
tail -n +2001 "$dir/in.ndjson" >"$dir/second.ndjson"
db="sqlite:$dir/keel.db"

"$KEEL" token new --tenant tenant-00 >"$dir/a" 2>/dev/null
"$KEEL" token new --all >"$dir/all" 2>/dev/null
tok_a=$(sed -n 1p "$dir/a")
tok_all=$(sed -n 1p "$dir/all")
{ sed -n 2p "$dir/a"; sed -n 2p "$dir/all"; } >"$dir/tokens"

# The memory store lives in its server: its events go in by POST.
"$KEEL" serve --listen 127.0.0.1:0 --store memory: --cartridge fleet \
	--tokens "$dir/tokens" --threads 2 --quiet 2>"$dir/mem.log" &
pid=$!
wait_port "$dir/mem.log"
mem=http://127.0.0.1:$port
post() { # file
	[ "$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok_all" \
		-H 'Content-Type: application/x-ndjson' --data-binary "@$1" "$mem/v1/events")" = 200 ] ||
		fail "post $1: $(cat "$dir/out")"
}

# Both stores record the first half before known_at, the second after.
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
post "$dir/first.ndjson"
known_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"
post "$dir/second.ndjson"
"$KEEL" dump --store "$db" >"$dir/dump"

KEEL=$KEEL python3 "$check" cli "$db" "$known_at" "$dir/dump" >"$dir/cli.txt" || fail "cli on sqlite"
TOKEN=$tok_all python3 "$check" http "$mem" "$known_at" "$dir/dump" >"$dir/memory.txt" ||
	fail "http on memory"
cmp "$dir/cli.txt" "$dir/memory.txt" || fail "memory store's pages differ from sqlite's"
kill -TERM "$pid"
wait "$pid" || fail "memory server exited $?"
pid=

"$KEEL" serve --listen 127.0.0.1:0 --store "$db" --cartridge fleet \
	--tokens "$dir/tokens" --threads 2 --quiet 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port
TOKEN=$tok_all python3 "$check" http "$url" "$known_at" "$dir/dump" >"$dir/http.txt" ||
	fail "http on sqlite"
cmp "$dir/cli.txt" "$dir/http.txt" || fail "http pages differ from the command line's"

get() { # token path -> status, body in $dir/out
	curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $1" "$url$2"
}
[ "$(get "$tok_a" /v1/tenants)" = 200 ] || fail "tenants with A's token"
[ "$(cat "$dir/out")" = '{"tenants":["tenant-00"]}' ] || fail "A sees: $(cat "$dir/out")"
[ "$(get "$tok_all" /v1/tenants)" = 200 ] || fail "tenants with the all token"
[ "$(cat "$dir/out")" = '{"tenants":["tenant-00","tenant-01"]}' ] ||
	fail "all sees: $(cat "$dir/out")"
for path in /v1/tenants/tenant-01/entities "/v1/tenants/tenant-01/search?predicate=status&value=available"; do
	[ "$(get "$tok_a" "$path")" = 403 ] || fail "$path with A's token: $(cat "$dir/out")"
	grep -q "not in the token's scope" "$dir/out" || fail "403 body: $(cat "$dir/out")"
	[ "$(get "$tok_all" "$path")" = 200 ] || fail "$path with the all token"
done
[ "$(get "$tok_a" "/v1/tenants/tenant-00/entities?limit=2")" = 200 ] || fail "A's own tenant"
[ "$(get "$tok_a" "/v1/tenants/tenant-00/search?predicate=status")" = 400 ] ||
	fail "search without a value"
grep -q 'parameter \\"value\\": required' "$dir/out" || fail "400 body: $(cat "$dir/out")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/tenants")" = 401 ] || fail "no token"

# On a terminal: a table, and the next page's cursor under it.
script -qc "\"$KEEL\" entities tenant-00 --kind depot --limit 2 --store $db" /dev/null \
	>"$dir/tty" </dev/null
grep -q '^  SUBJECT  *KIND  *FIRST SEEN  *LAST SEEN' "$dir/tty" || fail "tty: $(cat "$dir/tty")"
grep -q '^next: *[A-Za-z0-9_-]' "$dir/tty" || fail "tty next: $(cat "$dir/tty")"
kill -TERM "$pid"
wait "$pid" || fail "server exited $?"
pid=
