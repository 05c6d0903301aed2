# find.sh - what tests/cli_find.sh (SQLite and the memory store) and
# tests/mysql_find.sh (MariaDB) run on a store of their kind: keel
# tenants, keel entities and keel search, through the command line and
# through keel serve, give the pages the command line gives on SQLite
# (tests/cli/find_check.py checks the answers themselves); a token scoped
# to a tenant lists only its tenants and gets 403 on another's entities
# and search (docs/http.md). Sourced after scratch.sh.

check=$(dirname "${BASH_SOURCE[0]}")/find_check.py

"$KEEL" generate fleet --events 4000 --tenants 2 --seed 11 --output "$dir/in.ndjson"
head -n 2000 "$dir/in.ndjson" >"$dir/first.ndjson"
tail -n +2001 "$dir/in.ndjson" >"$dir/second.ndjson"
db="sqlite:$dir/keel.db" # the store every other's pages are compared with

"$KEEL" token new --tenant tenant-00 >"$dir/a" 2>/dev/null
"$KEEL" token new --all >"$dir/all" 2>/dev/null
tok_a=$(sed -n 1p "$dir/a")
tok_all=$(sed -n 1p "$dir/all")
{ sed -n 2p "$dir/a"; sed -n 2p "$dir/all"; } >"$dir/tokens"

# find_record RECORD: both halves into SQLite and, through RECORD FILE,
# into the store under test: the first half before $known_at, the second
# after. $dir/dump is SQLite's dump.
find_record() {
	"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
	"$1" "$dir/first.ndjson"
	known_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"
	"$1" "$dir/second.ndjson"
	"$KEEL" dump --store "$db" >"$dir/dump"
}

# find_cli_pages NAME STORE: every page through the command line, in
# $dir/cli-NAME.txt.
find_cli_pages() {
	KEEL=$KEEL python3 "$check" cli "$2" "$known_at" "$dir/dump" >"$dir/cli-$1.txt" ||
		fail "cli on $1"
}

# find_serve STORE: keel serve on STORE with the two tokens, at $url.
find_serve() {
	"$KEEL" serve --listen 127.0.0.1:0 --store "$1" --cartridge fleet \
		--tokens "$dir/tokens" --threads 2 --quiet 2>"$dir/serve.log" &
	pid=$!
	wait_port "$dir/serve.log"
	url=http://127.0.0.1:$port
}

# find_http_pages NAME: every page through the server at $url, in
# $dir/http-NAME.txt.
find_http_pages() {
	TOKEN=$tok_all python3 "$check" http "$url" "$known_at" "$dir/dump" \
		>"$dir/http-$1.txt" || fail "http on $1"
}

# find_same A B: the pages in $dir/A.txt and $dir/B.txt are the same.
find_same() {
	cmp "$dir/$1.txt" "$dir/$2.txt" || fail "the pages of $2 differ from those of $1"
}

# find_scope: the server at $url answers each token within its scope only.
find_scope() {
	[ "$(find_get "$tok_a" /v1/tenants)" = 200 ] || fail "tenants with A's token"
	[ "$(cat "$dir/out")" = '{"tenants":["tenant-00"],"next":null}' ] || fail "A sees: $(cat "$dir/out")"
	[ "$(find_get "$tok_all" /v1/tenants)" = 200 ] || fail "tenants with the all token"
	[ "$(cat "$dir/out")" = '{"tenants":["tenant-00","tenant-01"],"next":null}' ] ||
		fail "all sees: $(cat "$dir/out")"
	local path
	for path in /v1/tenants/tenant-01/entities "/v1/tenants/tenant-01/search?predicate=status&value=available"; do
		[ "$(find_get "$tok_a" "$path")" = 403 ] || fail "$path with A's token: $(cat "$dir/out")"
		grep -q "not in the token's scope" "$dir/out" || fail "403 body: $(cat "$dir/out")"
		[ "$(find_get "$tok_all" "$path")" = 200 ] || fail "$path with the all token"
	done
	[ "$(find_get "$tok_a" "/v1/tenants/tenant-00/entities?limit=2")" = 200 ] ||
		fail "A's own tenant"
	[ "$(find_get "$tok_a" "/v1/tenants/tenant-00/search?predicate=status")" = 400 ] ||
		fail "search without a value"
	grep -q 'parameter \\"value\\": required' "$dir/out" || fail "400 body: $(cat "$dir/out")"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/tenants")" = 401 ] || fail "no token"
}
find_get() { # TOKEN PATH: the status, the body in $dir/out
	curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $1" "$url$2"
}

# find_stop: the server stops cleanly.
find_stop() {
	kill -TERM "$pid"
	wait "$pid" || fail "server exited $?"
	pid=
}
