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
. "$(dirname "$0")/cli/ui_fixture.sh"

ui_fleet 3000 17
# A vehicle whose subject needs escaping in an address (/, space, %).
echo '{"specversion":"1.0","id":"odd-subject-1","source":"/fleet/tenant-00/registry","type":"fleet.vehicle.registered","time":"2026-01-05T06:00:00Z","tenant":"tenant-00","datacontenttype":"application/json","data":{"vehicle_id":"A/B 1%","depot_id":"D-01","make":"DAF","model":"LF","year":2018,"vin":"VF4N59LS5A4D7SBPX"}}' \
	>>"$dir/first.ndjson"
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
ui_mark_known_at
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"
ui_serve

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
