#!/usr/bin/env bash
# cli_search_past.sh - keel search at a time before the predicate's
# horizon on SQLite reads the spans (fact_spans, docs/store-sqlite.md
# "Spans"), an R*Tree of 32-bit floats that SQLite compares with the
# search's time as a double. Cases at the edges of those number types,
# each checked against what keel show --at says of the same time:
#
#   beyond 2^53 µs:  after 2255 and before 1685 a double steps by 2 µs, so
#                    the microsecond before a row begins and the row's
#                    valid_from can be one double: the row before it still
#                    holds there
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"

status() { # tenant id time vehicle status
	printf '{"specversion":"1.0","id":"%s","source":"/edge","type":"fleet.vehicle.status_changed","time":"%s","tenant":"%s","datacontenttype":"application/json","data":{"vehicle_id":"%s","status":"%s"}}\n' \
		"$2" "$3" "$1" "$4" "$5"
}
db="sqlite:$dir/edge.db"

# subjects TENANT PREDICATE VALUE [ARGS...]: the subjects search lists, one line
subjects() {
	"$KEEL" search "$@" --json --store "$db" |
		python3 -c 'import json,sys; print(" ".join(s["subject"] for s in json.load(sys.stdin)["subjects"]))'
}
# shown TENANT SUBJECT TIME: the status show --at gives (the JSON text)
shown() {
	"$KEEL" show "$1" "$2" --at "$3" --json --store "$db" |
		python3 -c 'import json,sys; f=json.load(sys.stdin)["facts"].get("status"); print(json.dumps(f and f["value"]))'
}
# found WANT TENANT VALUE TIME: search --at TIME lists WANT, and show
# --at TIME agrees for each subject listed
found() {
	local want=$1 tenant=$2 value=$3 at=$4 got s
	got=$(subjects "$tenant" status "$value" --at "$at") || fail "keel search $tenant status $value --at $at failed"
	[ "$got" = "$want" ] || fail "search $tenant status $value --at $at: \"$got\", expected \"$want\""
	for s in $want; do
		[ "$(shown "$tenant" "$s" "$at")" = "\"$value\"" ] ||
			fail "show $tenant $s --at $at: $(shown "$tenant" "$s" "$at"), not \"$value\" (the case is not made)"
	done
}

# 2^53 + 2^50 µs (2291-02-08T05:46:01.583616Z) and its negative
# (1648-11-22T18:13:58.416384Z) are 32-bit floats exactly, and the
# microsecond after (before) each rounds to it as a double (ties to even).
{
	status far f1 2290-01-01T00:00:00Z V-1 available
	status far f2 2291-02-08T05:46:01.583616Z V-1 maintenance
	status far f3 1600-01-01T00:00:00Z V-2 available
	status far f4 1648-11-22T18:13:58.416384Z V-2 maintenance
	status far f5 2300-01-01T00:00:00Z V-3 in_progress   # the horizon, after both
} >"$dir/far.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --store "$db" "$dir/far.ndjson"
found "vehicle:V-1" far available 2291-02-08T05:46:01.583615Z
found "" far available 2291-02-08T05:46:01.583616Z
found "vehicle:V-1 vehicle:V-2" far maintenance 2291-02-08T05:46:01.583616Z
found "vehicle:V-2" far available 1648-11-22T18:13:58.416383Z
found "" far available 1648-11-22T18:13:58.416384Z
found "vehicle:V-2" far maintenance 1648-11-22T18:13:58.416384Z

finish
