#!/usr/bin/env bash
# Fields a producer may leave out, over HTTP on SQLite: keel serve with a
# cartridge whose values and templates are optional or have defaults
# accepts events without them, and stores exactly the rows keel ingest
# stores for the same events (docs/cartridges.md, "Fields a producer may
# leave out"; tests/mysql_forgive.sh does the same on MariaDB).
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

shop=${KEEL_TEST_DATA:?}/cartridge/shop.json
grep -E '"id":"o[12]"' "$KEEL_TEST_DATA/cartridge/shop.in" >"$dir/shop.ndjson"
[ "$(wc -l <"$dir/shop.ndjson")" -eq 2 ] || fail "shop.in lacks o1 and o2"

"$KEEL" ingest "$dir/shop.ndjson" --quiet --store "sqlite:$dir/cli.db" --cartridge "$shop"
"$KEEL" dump --store "sqlite:$dir/cli.db" >"$dir/cli.dump"

"$KEEL" serve --listen 127.0.0.1:0 --store "sqlite:$dir/http.db" --cartridge "$shop" \
	2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port
code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
	--data-binary "@$dir/shop.ndjson" "$url/v1/events")
[ "$code" = 200 ] || fail "POST: $code $(cat "$dir/out")"
grep -q '"accepted":2' "$dir/out" || fail "POST answer: $(cat "$dir/out")"
grep -qF '"unhandled":0,"rejected":[],"conflicts":[]}' "$dir/out" || fail "POST answer: $(cat "$dir/out")"
# order 2 left out its note, channel, customer and store: no note, the
# default channel and store, no customer.
curl -s -o "$dir/show" "$url/v1/tenants/s/entities/order:2"
grep -qF '"facts":{"channel":{"value":"web",' "$dir/show" || fail "order:2: $(cat "$dir/show")"
grep -qF '"outgoing":[{"relation":"ships_from","object":"store:central",' "$dir/show" ||
	fail "order:2: $(cat "$dir/show")"
! grep -qF 'placed_by' "$dir/show" || fail "order:2 has a customer: $(cat "$dir/show")"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "serve exited $rc: $(cat "$dir/log")"

"$KEEL" dump --store "sqlite:$dir/http.db" >"$dir/http.dump"
cmp -s "$dir/cli.dump" "$dir/http.dump" ||
	fail "HTTP and keel ingest stored different dumps: $(diff "$dir/cli.dump" "$dir/http.dump")"
echo ok
