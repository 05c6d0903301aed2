#!/usr/bin/env bash
# Bad input (docs/semantics.md): malformed JSON, every envelope rule,
# cartridge pointer misses, limits, a 10 MiB line and invalid UTF-8, each
# between good events. Each bad line gets its exact message in the rejects
# output, naming the line, the id where there is one, the field and the rule;
# every good event goes in (on SQLite and on the memory store alike).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"

E='"tenant":"tenant-00","type":"fleet.vehicle.status_changed","time":"2026-03-01T10:00:00Z"'
nest() { printf "$1%.0s" $(seq "$2"); }
bad=(
	'{"id":"m1","tenant":'
	'{"id":"g1",'"$E"',"data":{"vehicle_id":"V-1","status":"idle","reason":"r"}} x'
	'{"id":"d1","id":"d2",'"$E"',"data":{}}'
	'{"id":"n1",'"$E"',"data":{"x":'"$(nest '[' 70)1$(nest ']' 70)"'}}'
	"$(printf '{"id":"u1",%s,"data":{"vehicle_id":"V-\xc3\x28","status":"idle","reason":"r"}}' "$E")"
	'{"tenant":"tenant-00","type":"x","time":"2026-03-01T10:00:00Z","data":{}}'
	'{"id":"'"$(nest a 257)"'","tenant":"t","type":"x","time":"2026-03-01T10:00:00Z","data":{}}'
	'{"id":"t1","tenant":"ten ant","type":"x","time":"2026-03-01T10:00:00Z","data":{}}'
	'{"id":"t2","tenant":"'"$(nest a 65)"'","type":"x","time":"2026-03-01T10:00:00Z","data":{}}'
	'{"id":"y1","tenant":"t","time":"2026-03-01T10:00:00Z","data":{}}'
	'{"id":"k1","tenant":"t","type":"x","time":"yesterday","data":{}}'
	'{"id":"k2","tenant":"t","type":"x","time":"2026-01-01T23:59:60Z","data":{}}'
	'{"id":"k3","tenant":"t","type":"x","time":"2026-02-30T00:00:00Z","data":{}}'
	'{"id":"k4","tenant":"t","type":"x","time":"2026-02-03T00:00:00","data":{}}'
	'{"id":"a1","tenant":"t","type":"x","time":"2026-03-01T10:00:00Z","data":5}'
	'{"specversion":"0.3","id":"s1","tenant":"t","type":"x","time":"2026-03-01T10:00:00Z","data":{}}'
	'[1]'
	'{"id":"p1",'"$E"',"data":{"vehicle_id":"V-1","reason":"r"}}'
	'{"id":"p2",'"$E"',"data":{"vehicle_id":{"a":1},"status":"idle","reason":"r"}}'
	'{"id":"p3",'"$E"',"data":{"vehicle_id":"'"$(nest v 300)"'","status":"idle","reason":"r"}}'
	"BIG"
)
want=(
	'"id":null,"error":"line %d: invalid JSON at byte 20: unexpected end of input"'
	'"id":null,"error":"line %d: invalid JSON at byte 158: trailing characters after the value"'
	'"id":null,"error":"line %d: invalid JSON at byte 11: duplicate key \"id\""'
	'"id":null,"error":"line %d: invalid JSON at byte 174: nesting deeper than 64"'
	'"id":null,"error":"line %d: invalid JSON at byte 124: invalid UTF-8"'
	'"id":null,"error":"line %d: field \"id\": missing"'
	'"id":null,"error":"line %d: field \"id\": must be 1-256 bytes (got 257)"'
	'"id":"t1","error":"line %d: event \"t1\": field \"tenant\": must be 1-64 bytes of [A-Za-z0-9._-]"'
	'"id":"t2","error":"line %d: event \"t2\": field \"tenant\": must be 1-64 bytes (got 65)"'
	'"id":"y1","error":"line %d: event \"y1\": field \"type\": missing"'
	'"id":"k1","error":"line %d: event \"k1\": field \"time\": not an RFC 3339 timestamp"'
	'"id":"k2","error":"line %d: event \"k2\": field \"time\": leap seconds are not supported"'
	'"id":"k3","error":"line %d: event \"k3\": field \"time\": day 30 out of range for 2026-02 (01-28)"'
	'"id":"k4","error":"line %d: event \"k4\": field \"time\": missing zone offset"'
	'"id":"a1","error":"line %d: event \"a1\": field \"data\": must be a JSON object"'
	'"id":"s1","error":"line %d: event \"s1\": field \"specversion\": must be \"1.0\""'
	'"id":null,"error":"line %d: envelope is not a JSON object"'
	'"id":"p1","error":"line %d: event \"p1\": type \"fleet.vehicle.status_changed\": operation 2 (fact): pointer \"/data/status\": missing"'
	'"id":"p2","error":"line %d: event \"p2\": type \"fleet.vehicle.status_changed\": operation 1 (entity): pointer \"/data/vehicle_id\": an object, not a string, number or boolean"'
	'"id":"p3","error":"line %d: event \"p3\": type \"fleet.vehicle.status_changed\": operation 1 (entity): field \"subject\": longer than 255 bytes"'
	'"id":null,"error":"line %d: line longer than the maximum of 1048576 bytes"'
)

# Ten good events after every bad line.
per=10
"$KEEL" generate fleet --events $(( ${#bad[@]} * per )) --seed 5 --output "$dir/good.ndjson"
mapfile -t good < "$dir/good.ndjson"
in=$dir/in.ndjson
: > "$in"
for i in "${!bad[@]}"; do
	if [ "${bad[$i]}" = BIG ]; then
		printf '{"id":"big","tenant":"t","type":"x","time":"2026-03-01T10:00:00Z","data":{"pad":"' >> "$in"
		head -c 10485760 /dev/zero | tr '\0' p >> "$in"
		printf '"}}\n' >> "$in"
	else
		printf '%s\n' "${bad[$i]}" >> "$in"
	fi
	printf '%s\n' "${good[@]:$((i * per)):$per}" >> "$in"
done

for store in "sqlite:$dir/keel.db" memory:; do
	status=0
	"$KEEL" ingest --cartridge fleet "$in" --store "$store" --rejects "$dir/rejects" --batch 7 2> "$dir/err" || status=$?
	[ "$status" -eq 3 ] || fail "exit status $status, expected 3 ($(cat "$dir/err"))"
	n=$(wc -l < "$dir/rejects")
	[ "$n" -eq "${#bad[@]}" ] || fail "$n rejects, expected ${#bad[@]}"
	for i in "${!want[@]}"; do
		line=$(( i * (per + 1) + 1 ))
		expected="{\"position\":$line,${want[$i]//%d/$line}"
		grep -qF -- "$expected" "$dir/rejects" || {
			echo "rejects file:"; cut -c1-300 "$dir/rejects"
			fail "no reject line starting $expected"
		}
	done
	grep -q "accepted $(( ${#bad[@]} * per )), duplicates 0 (conflicting 0), unhandled 0, rejected ${#bad[@]}" "$dir/err" ||
		fail "report: $(cat "$dir/err")"
done

# Every good event is in the log, each exactly once, and nothing else is.
"$KEEL" dump --store "sqlite:$dir/keel.db" > "$dir/dump"
events=$(grep -c '^{"type":"event"' "$dir/dump")
[ "$events" -eq $(( ${#bad[@]} * per )) ] || fail "$events events logged"
for id in m1 g1 d1 n1 u1 t1 t2 y1 k1 k2 k3 k4 a1 s1 p1 p2 p3 big; do
	if grep -q "\"id\":\"$id\"" "$dir/dump"; then fail "rejected event $id was logged"; fi
done
echo "ok: ${#bad[@]} bad lines rejected with their messages, every good event ingested"
