#!/usr/bin/env bash
# Fields a producer may leave out, on MariaDB: events without the fields a
# cartridge marks optional or gives a default, through keel ingest and
# through keel serve, give the dump SQLite gives (docs/cartridges.md,
# "Fields a producer may leave out"). Needs the suite's MariaDB fixture
# (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql

shop=${KEEL_TEST_DATA:?}/cartridge/shop.json
grep -E '"id":"o[12]"' "$KEEL_TEST_DATA/cartridge/shop.in" >"$dir/shop.ndjson"
[ "$(wc -l <"$dir/shop.ndjson")" -eq 2 ] || fail "shop.in lacks o1 and o2"
# A fleet status change without its reason: "no reason".
echo '{"id":"r1","tenant":"t","type":"fleet.vehicle.status_changed","time":"2026-01-01T00:00:00Z","data":{"vehicle_id":"V-1","status":"idle"}}' >"$dir/fleet.ndjson"

for c in shop fleet; do
	cart=$shop
	[ "$c" = fleet ] && cart=fleet
	"$KEEL" ingest "$dir/$c.ndjson" --quiet --store "sqlite:$dir/$c.db" --cartridge "$cart"
	"$KEEL" dump --store "sqlite:$dir/$c.db" >"$dir/$c.ref"

	url=$($KEEL_TEST_MYSQL_FRESH)
	"$KEEL" ingest "$dir/$c.ndjson" --store "$url" --cartridge "$cart" 2>"$dir/report"
	grep -q '^accepted [12], duplicates 0 (conflicting 0), unhandled 0, rejected 0' "$dir/report" ||
		fail "$c: $(cat "$dir/report")"
	"$KEEL" dump --store "$url" >"$dir/$c.cli"
	cmp -s "$dir/$c.ref" "$dir/$c.cli" ||
		fail "$c: keel ingest on MariaDB differs from SQLite: $(diff "$dir/$c.ref" "$dir/$c.cli")"

	url=$($KEEL_TEST_MYSQL_FRESH)
	"$KEEL" serve --listen 127.0.0.1:0 --store "$url" --cartridge "$cart" 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
		--data-binary "@$dir/$c.ndjson" "http://127.0.0.1:$port/v1/events")
	[ "$code" = 200 ] || fail "$c: POST: $code $(cat "$dir/out")"
	grep -qF '"unhandled":0,"rejected":[],"conflicts":[]}' "$dir/out" || fail "$c: POST answer: $(cat "$dir/out")"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	pid=
	[ "$rc" = 0 ] || fail "$c: serve exited $rc: $(cat "$dir/log")"
	"$KEEL" dump --store "$url" >"$dir/$c.http"
	cmp -s "$dir/$c.ref" "$dir/$c.http" ||
		fail "$c: keel serve on MariaDB differs from SQLite: $(diff "$dir/$c.ref" "$dir/$c.http")"
done
grep -qF '"predicate":"status_reason","value":null,' "$dir/fleet.ref" ||
	fail "fleet: no null status_reason: $(cat "$dir/fleet.ref")"
grep -qF '"predicate":"channel","value":"web",' "$dir/shop.ref" ||
	fail "shop: no default channel: $(cat "$dir/shop.ref")"
echo ok
