#!/usr/bin/env bash
# cli_search_current.sh - keel search at the present on SQLite reads the
# current rows (fact_current, docs/store-sqlite.md "Current rows"); every
# way of writing or removing rows keeps them right. Each search is checked
# against what the history says: by hand for the cases below, and by
# tests/cli/search_check.py against the store's dump for a stream with
# late events (by keel ingest, and POSTed to keel serve), after keel
# forget, after keel replay with another cartridge, for keel load and for
# keel ingest --replay.
#
#   late:     a row older than the timeline's current one, in a later
#             ingest and in the same batch, does not replace it
#   tie:      of two rows at the same time the later arrival holds
#   future:   a row dated after now leaves the one before it holding now
#             (the predicate's horizon is later than now)
#   numbers:  year 2018 is found, "2018" is not
# (V-4's registration makes it available: the fleet cartridge's rule)
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"
check=$(dirname "$0")/cli/search_check.py

ev() { # tenant id type time data
	printf '{"specversion":"1.0","id":"%s","source":"/hand","type":"fleet.vehicle.%s","time":"%s","tenant":"%s","datacontenttype":"application/json","data":%s}\n' \
		"$2" "$3" "$4" "$1" "$5"
}
status() { # tenant id time vehicle status
	ev "$1" "$2" status_changed "$3" "{\"vehicle_id\":\"$4\",\"status\":\"$5\"}"
}
db="sqlite:$dir/hand.db"
{
	status acme a1 2026-01-05T10:00:00Z V-1 available
	status acme a5 2026-01-05T09:00:00Z V-3 in_progress
	ev acme a7 registered 2026-01-05T07:00:00Z \
		'{"vehicle_id":"V-4","make":"DAF","model":"XF","year":2018,"depot_id":"D-1"}'
	status later f1 2026-01-05T09:00:00Z V-9 available
} >"$dir/first.ndjson"
{
	status acme a2 2026-01-05T08:00:00Z V-1 maintenance   # late, in a later ingest
	status acme a3 2026-01-05T10:00:00Z V-2 maintenance
	status acme a4 2026-01-05T10:00:00Z V-2 available     # same time, later arrival
	status acme b1 2026-01-05T10:00:00Z V-5 available
	status acme b2 2026-01-05T08:00:00Z V-5 maintenance   # late, in the same batch
	status later f2 2099-01-01T00:00:00Z V-9 maintenance  # dated after now
} >"$dir/second.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --store "$db" "$dir/first.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --store "$db" "$dir/second.ndjson"

# subjects TENANT PREDICATE VALUE [ARGS...]: the subjects search lists, one line
subjects() {
	"$KEEL" search "$@" --json --store "$db" |
		python3 -c 'import json,sys; print(" ".join(s["subject"] for s in json.load(sys.stdin)["subjects"]))'
}
found() { # want tenant predicate value [args...]
	local want=$1 got
	shift
	got=$(subjects "$@") || fail "keel search $* failed"
	[ "$got" = "$want" ] || fail "search $*: \"$got\", expected \"$want\""
}
found "vehicle:V-1 vehicle:V-2 vehicle:V-4 vehicle:V-5" acme status available
found "" acme status maintenance
found "vehicle:V-3" acme status in_progress
found "vehicle:V-1 vehicle:V-5" acme status maintenance --at 2026-01-05T09:00:00Z
found "vehicle:V-4" acme status available --at 2026-01-05T09:00:00Z
found "vehicle:V-4" acme year 2018
found "" acme year '"2018"'
found "vehicle:V-4" acme make DAF
found "vehicle:V-9" later status available
found "" later status maintenance
found "vehicle:V-9" later status maintenance --at 2099-06-01T00:00:00Z
found "vehicle:V-9" later status available --known-at 2099-06-01T00:00:00Z
# the current rows themselves: one a timeline, the latest row's value
[ "$(sqlite3 "$dir/hand.db" "SELECT group_concat(subject || '=' || value, ' ') FROM (SELECT subject, value FROM fact_current WHERE tenant = 'acme' AND predicate = 'status' ORDER BY subject)")" = \
	'vehicle:V-1="available" vehicle:V-2="available" vehicle:V-3="in_progress" vehicle:V-4="available" vehicle:V-5="available"' ] ||
	fail "fact_current of acme's status: $(sqlite3 "$dir/hand.db" "SELECT * FROM fact_current WHERE tenant = 'acme'")"

# A stream with late events, in batches that split them from the rows
# they land before.
"$KEEL" generate fleet --events 3000 --tenants 2 --seed 7 --late 0.2 --duplicates 0.02 \
	--output "$dir/in.ndjson"
g=(--store "sqlite:$dir/g.db")
expect 0 "$KEEL" ingest --cartridge fleet --quiet --batch 37 "${g[@]}" "$dir/in.ndjson"
expect 0 "$KEEL" dump "${g[@]}" --output "$dir/g.dump"
KEEL=$KEEL python3 "$check" "sqlite:$dir/g.db" "$dir/g.dump" >/dev/null ||
	fail "search after an ingest with late events"

# keel serve: the writer's group commits keep them too (the same stream
# POSTed in pieces, read by the command line meanwhile).
"$KEEL" token new --all >"$dir/all" 2>/dev/null
sed -n 2p "$dir/all" >"$dir/tokens"
"$KEEL" serve --listen 127.0.0.1:0 --store "sqlite:$dir/h.db" --cartridge fleet \
	--tokens "$dir/tokens" --quiet 2>"$dir/serve.log" &
pid=$!
wait_port "$dir/serve.log"
split -l 700 "$dir/in.ndjson" "$dir/piece."
for piece in "$dir"/piece.*; do
	code=$(curl -s -o "$dir/posted" -w '%{http_code}' -H "Authorization: Bearer $(sed -n 1p "$dir/all")" \
		-H 'Content-Type: application/x-ndjson' --data-binary "@$piece" "http://127.0.0.1:$port/v1/events")
	[ "$code" = 200 ] || fail "POST $piece: $code $(head -c 300 "$dir/posted")"
done
expect 0 "$KEEL" dump --store "sqlite:$dir/h.db" --output "$dir/h.dump"
KEEL=$KEEL python3 "$check" "sqlite:$dir/h.db" "$dir/h.dump" >/dev/null ||
	fail "search after POSTs to keel serve"
kill -TERM "$pid"
wait "$pid" || fail "keel serve exited $?"
pid=

# keel forget rebuilds the tenant: the subject is gone from the current
# rows, every other holder still found.
v=$("$KEEL" search tenant-00 status available --limit 1 --json "${g[@]}" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["subjects"][0]["subject"])')
expect 0 "$KEEL" forget tenant-00 "$v" "${g[@]}"
expect 0 "$KEEL" dump "${g[@]}" --output "$dir/f.dump"
KEEL=$KEEL python3 "$check" "sqlite:$dir/g.db" "$dir/f.dump" >/dev/null ||
	fail "search after keel forget $v"
[ "$(sqlite3 "$dir/g.db" "SELECT count(*) FROM fact_current WHERE tenant = 'tenant-00' AND subject = '$v'")" = 0 ] ||
	fail "$v is still in fact_current"

# keel replay with a cartridge that gives every status change one value:
# the replaced predicates' current rows are written again.
python3 - "$(dirname "$0")/../cartridges/fleet.json" <<'PY' >"$dir/seen.json"

import json, sys
c = json.load(open(sys.argv[1]))
c["version"] = "2"
for op in c["events"]["fleet.vehicle.status_changed"]:
    if op.get("predicate") == "status":
        op["value"] = {"const": "seen"}
json.dump(c, sys.stdout)
PY
expect 0 "$KEEL" replay --tenant tenant-01 --cartridge "$dir/seen.json" --change-cartridge "${g[@]}"
expect 0 "$KEEL" dump "${g[@]}" --output "$dir/r.dump"
grep -q '"tenant":"tenant-01".*"predicate":"status","value":"seen"' "$dir/r.dump" ||
	fail "the replay wrote no \"seen\""
KEEL=$KEEL python3 "$check" "sqlite:$dir/g.db" "$dir/r.dump" status >/dev/null ||
	fail "search after keel replay"

# keel load and keel ingest --replay write the current rows in bulk.
expect 0 "$KEEL" load "$dir/g.dump" --store "sqlite:$dir/l.db"
KEEL=$KEEL python3 "$check" "sqlite:$dir/l.db" "$dir/g.dump" >/dev/null ||
	fail "search on a loaded store"
expect 0 "$KEEL" ingest --replay --cartridge fleet --quiet --store "sqlite:$dir/b.db" "$dir/in.ndjson"
KEEL=$KEEL python3 "$check" "sqlite:$dir/b.db" "$dir/g.dump" >/dev/null ||
	fail "search after keel ingest --replay"
finish
