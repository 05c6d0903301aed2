#!/usr/bin/env bash
# keel tenants, keel entities and keel search on MariaDB, through the
# command line and through keel serve: the same pages as on SQLite
# (tests/cli/find_check.py checks the answers themselves); a token scoped
# to a tenant gets 403 on another's. Needs the suite's MariaDB fixture.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql
check=$(dirname "$0")/cli/find_check.py

"$KEEL" generate fleet --events 4000 --tenants 2 --seed 11 --output "$dir/in.ndjson"
head -n 2000 "$dir/in.ndjson" >"$dir/first.ndjson"
tail -n +2001 "$dir/in.ndjson" >"$dir/second.ndjson"
db="sqlite:$dir/keel.db"
my=$($KEEL_TEST_MYSQL_FRESH)

# Both stores record the first half before known_at, the second after.
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
"$KEEL" ingest --cartridge fleet --quiet --store "$my" "$dir/first.ndjson"
known_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"
"$KEEL" ingest --cartridge fleet --quiet --store "$my" "$dir/second.ndjson"
"$KEEL" dump --store "$db" >"$dir/dump"

KEEL=$KEEL python3 "$check" cli "$db" "$known_at" "$dir/dump" >"$dir/sqlite.txt" ||
	fail "cli on sqlite"
KEEL=$KEEL python3 "$check" cli "$my" "$known_at" "$dir/dump" >"$dir/mysql.txt" ||
	fail "cli on mysql"
cmp "$dir/sqlite.txt" "$dir/mysql.txt" || fail "mysql's pages differ from sqlite's"

"$KEEL" token new --tenant tenant-00 >"$dir/a" 2>/dev/null
"$KEEL" token new --all >"$dir/all" 2>/dev/null
tok_a=$(sed -n 1p "$dir/a")
tok_all=$(sed -n 1p "$dir/all")
{ sed -n 2p "$dir/a"; sed -n 2p "$dir/all"; } >"$dir/tokens"
"$KEEL" serve --listen 127.0.0.1:0 --store "$my" --cartridge fleet \
	--tokens "$dir/tokens" --threads 2 --quiet 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port
TOKEN=$tok_all python3 "$check" http "$url" "$known_at" "$dir/dump" >"$dir/http.txt" ||
	fail "http on mysql"
cmp "$dir/sqlite.txt" "$dir/http.txt" || fail "http pages on mysql differ from sqlite's"

get() { # token path -> status, body in $dir/out
	curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $1" "$url$2"
}
[ "$(get "$tok_a" /v1/tenants)" = 200 ] || fail "tenants with A's token"
[ "$(cat "$dir/out")" = '{"tenants":["tenant-00"]}' ] || fail "A sees: $(cat "$dir/out")"
for path in /v1/tenants/tenant-01/entities "/v1/tenants/tenant-01/search?predicate=status&value=available"; do
	[ "$(get "$tok_a" "$path")" = 403 ] || fail "$path with A's token: $(cat "$dir/out")"
done
kill -TERM "$pid"
wait "$pid" || fail "server exited $?"
pid=
