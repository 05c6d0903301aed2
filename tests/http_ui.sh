#!/usr/bin/env bash
# The /ui/ page of keel serve in a real browser: Debian's headless
# Chromium, driven over the DevTools protocol by tests/ui/cdp.py, against
# a generated fleet recorded in two parts (late events in the second), so
# that "known at" between them differs from everything recorded.
# tests/ui/ui_check.py compares what the page shows with what the JSON API
# answers for the same moments, with a token for every tenant and with one
# of another tenant (docs/ui-testing.md).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
chromium=${KEEL_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip_test "no $chromium (scripts/deps --test installs chromium)"
command -v python3 >/dev/null || skip_test "no python3"

"$KEEL" generate fleet --events 3000 --tenants 2 --seed 17 --late 0.1 --output "$dir/in.ndjson"
head -n 1500 "$dir/in.ndjson" >"$dir/first.ndjson"
tail -n +1501 "$dir/in.ndjson" >"$dir/second.ndjson"
# A vehicle whose subject needs escaping in an address (/, space, %).
echo '{"specversion":"1.0","id":"odd-subject-1","source":"/fleet/tenant-00/registry","type":"fleet.vehicle.registered","time":"2026-01-05T06:00:00Z","tenant":"tenant-00","datacontenttype":"application/json","data":{"vehicle_id":"A/B 1%","depot_id":"D-01","make":"DAF","model":"LF","year":2018,"vin":"VF4N59LS5A4D7SBPX"}}' \
	>>"$dir/first.ndjson"
db="sqlite:$dir/keel.db"
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
known_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
# The second part recorded strictly after that moment, whatever the clock's
# resolution.
wait_until 5 test "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" ">" "$known_at"
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"

"$KEEL" token new --all >"$dir/all" 2>/dev/null
"$KEEL" token new --tenant tenant-01 >"$dir/other" 2>/dev/null
{ sed -n 2p "$dir/all"; sed -n 2p "$dir/other"; } >"$dir/tokens"
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$db" --tokens "$dir/tokens" --threads 2 \
	2>"$dir/log" &
pid=$!
wait_port "$dir/log"

KEEL_CHROMIUM=$chromium python3 "$(dirname "$0")/ui/ui_check.py" "http://127.0.0.1:$port" \
	"$(sed -n 1p "$dir/all")" "$(sed -n 1p "$dir/other")" "$known_at" ||
	fail "the page disagrees with the API (above); server log: $(tail -n 5 "$dir/log")"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "keel serve exited $rc: $(tail -n 5 "$dir/log")"
# The page names its icon, so the browser never asked for /favicon.ico
# (a 401 under a token file); and the log saw the page and its API calls.
grep -q '"path":"/ui/assets/keel.svg"' "$dir/log" || fail "the browser did not fetch the page's icon"
grep -q '"path":"/favicon.ico"' "$dir/log" && fail "the browser asked for /favicon.ico"
echo "ok"
