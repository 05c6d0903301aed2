#!/usr/bin/env bash
# The /ui/ page used as a new user would, in headless Chromium
# (tests/ui/cdp.py): hostile subjects and values, the error paths (a
# refused token, another tenant's token, an entity that does not exist or
# was forgotten, a malformed time, the server gone), keyboard use, and the
# timeline's geometry at zoom 1. tests/ui/audit_check.py holds the checks
# (docs/ui-testing.md); each compares with what the JSON API answers.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/ui_fixture.sh"

ui_fleet 6000 5
# A vehicle, its driver and values that are markup, quotes and the
# characters an address must escape.
python3 - "$dir/first.ndjson" <<'PY'
import json, sys
odd = "<script>alert(1)</script>\"'%/?# é日本"
def event(i, type_, time, data):
    return json.dumps({"specversion": "1.0", "id": "audit-%d" % i, "source": "/fleet/tenant-00/audit",
                       "type": type_, "time": time, "tenant": "tenant-00",
                       "datacontenttype": "application/json", "data": data})
with open(sys.argv[1], "a") as f:
    f.write(event(1, "fleet.vehicle.registered", "2026-01-05T07:00:00Z",
                  {"vehicle_id": odd, "depot_id": "D-01", "make": "<img src=x onerror=alert(2)>",
                   "model": "L" * 3000, "year": 2018, "vin": "VF4N59LS5A4D7SBPX"}) + "\n")
    f.write(event(2, "fleet.vehicle.status_changed", "2026-01-05T08:00:00Z",
                  {"vehicle_id": odd, "status": "<script>alert(3)</script>", "reason": "x"}) + "\n")
    f.write(event(3, "fleet.driver.assigned", "2026-01-05T09:00:00Z",
                  {"driver_id": odd, "vehicle_id": odd, "shift": "day"}) + "\n")
PY
# Tenant "pairs": one event links team:T1 to two members (two rows of one
# lane, one event and one valid_from, told apart by their object); the
# second part unlinks one of them.
cat >"$dir/pairs.json" <<'JSON'
{"cartridge": "pairs", "version": "1", "description": "one event links a team to two members",
 "events": {
  "team.formed": [
   {"op": "entity", "subject": "team:{/data/team}", "kind": "team"},
   {"op": "link", "subject": "team:{/data/team}", "relation": "member", "object": "person:{/data/a}"},
   {"op": "link", "subject": "team:{/data/team}", "relation": "member", "object": "person:{/data/b}"}],
  "team.left": [
   {"op": "unlink", "subject": "team:{/data/team}", "relation": "member", "object": "person:{/data/who}"}]}}
JSON
pair_event() {
	printf '{"specversion":"1.0","id":"%s","source":"/pairs","type":"%s","time":"%s","tenant":"pairs","datacontenttype":"application/json","data":%s}\n' "$@"
}
pair_event p1 team.formed 2026-01-05T06:00:00Z '{"team":"T1","a":"A","b":"B"}' >"$dir/pairs-first.ndjson"
pair_event p2 team.left 2026-01-05T07:00:00Z '{"team":"T1","who":"A"}' >"$dir/pairs-second.ndjson"

"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/first.ndjson"
"$KEEL" ingest --cartridge "$dir/pairs.json" --quiet --store "$db" "$dir/pairs-first.ndjson"
ui_mark_known_at
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/second.ndjson"
"$KEEL" ingest --cartridge "$dir/pairs.json" --quiet --store "$db" "$dir/pairs-second.ndjson"
ui_serve --quiet

# The checks stop the server themselves, last ("the server gone"), and
# start one of their own on the same port after it.
KEEL_CHROMIUM=$chromium python3 "$(dirname "$0")/ui/audit_check.py" "http://127.0.0.1:$port" \
	"$(sed -n 1p "$dir/all")" "$(sed -n 1p "$dir/other")" "$known_at" "$pid" "$db" "$dir/tokens" ||
	fail "the page misbehaved (above); server log: $(tail -n 5 "$dir/log")"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "keel serve exited $rc: $(tail -n 5 "$dir/log")"
echo "ok"
