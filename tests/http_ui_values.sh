#!/usr/bin/env bash
# http_ui_values.sh - the /ui/ page shows values (docs/ui.md, "Values"):
# in headless Chromium, a categorical fact's values have distinct colours,
# the same for the same value and named in the legend; a numeric fact is a
# step line whose points are its rows' values over valid time, with its
# scale; the first view of a dense entity is zoomed to rows a person can
# read (around "as of" when given), one with a dense first hour and a
# sparse day (the demo fleet's V-0001) on its dense stretch, and a sparse
# one is shown whole; the finder never breaks a subject or a time across
# lines.
# tests/ui/values_check.py reads all of it from the page's DOM and holds
# it against the JSON API (docs/ui-testing.md).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/ui_fixture.sh"

"$KEEL" generate fleet --events 600 --seed 5 --output "$dir/fleet.ndjson"
# V-DENSE: an hour of telemetry, every 10 s (odometer rising, speed
# changing), its status now and then, some values again, and retired at
# the end (its status and location unset: gaps). Then a vehicle whose
# subject is longer than the finder's column.
python3 - "$dir/fleet.ndjson" <<'PY'
import json, sys
out = open(sys.argv[1], "a")
n = 0
def ev(kind, t, data):
    global n
    n += 1
    out.write(json.dumps({"specversion": "1.0", "id": "dense-%d" % n, "source": "/test",
                          "type": "fleet.vehicle." + kind, "time": t, "tenant": "tenant-00",
                          "data": dict(data, vehicle_id="V-DENSE")}) + "\n")
def at(s):
    return "2026-01-05T%02d:%02d:%02dZ" % (6 + s // 3600, s // 60 % 60, s % 60)
ev("registered", at(0), {"depot_id": "D-01", "make": "DAF", "model": "LF", "year": 2020})
statuses = ["available", "in_service", "available", "maintenance", "in_service", "available"]
for i in range(360):
    s = 10 * (i + 1)
    ev("odometer_reported", at(s), {"odometer_km": 1000 + i * 0.5 + (i % 7) * 0.1})
    ev("location_reported", at(s + 3), {"location": {"lat": 51 + i / 1000, "lon": 12.0},
                                        "speed_kmh": float((i * 37) % 90)})
    if i % 60 == 30:
        ev("status_changed", at(s + 5), {"status": statuses[i // 60], "reason": "r%d" % (i // 60)})
ev("retired", at(3700), {"reason": "sold", "depot_id": "D-01"})
out.write(json.dumps({"specversion": "1.0", "id": "long-1", "source": "/test",
                      "type": "fleet.vehicle.registered", "time": at(5), "tenant": "tenant-00",
                      "data": {"vehicle_id": "V-" + "LONG-SUBJECT-" * 5 + "END", "depot_id": "D-01",
                               "make": "DAF", "model": "LF", "year": 2021}}) + "\n")
PY
# The mixed case, as the demo's fleet has it (scripts/demo): V-0001 of
# 100 000 events, seed 1, a dense first hour then a sparse day, alone in a
# tenant of its own (its ids would conflict with tenant-00's).
"$KEEL" generate fleet --events 100000 --seed 1 --late 0.02 --duplicates 0.01 --output "$dir/demo.ndjson"
grep '"vehicle_id":"V-0001"' "$dir/demo.ndjson" | sed 's/tenant-00/tenant-mx/g' >>"$dir/fleet.ndjson"
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/fleet.ndjson"
# No token file: the page needs no sign-in (loopback only).
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$db" --threads 2 --quiet 2>"$dir/log" &
pid=$!
wait_port "$dir/log"

KEEL_CHROMIUM=$chromium python3 "$(dirname "$0")/ui/values_check.py" "http://127.0.0.1:$port" ||
	fail "the page's values disagree with the API (above)"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "keel serve exited $rc: $(tail -n 5 "$dir/log")"
echo ok
