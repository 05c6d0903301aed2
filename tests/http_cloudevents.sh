#!/usr/bin/env bash
# POST /v1/events in every content mode of the CloudEvents HTTP binding
# (docs/http.md, "POST /v1/events"), through keel serve and curl: binary
# mode (ce- headers, the body is the data), structured mode
# (application/cloudevents+json, application/json), batch mode and NDJSON,
# each with the binding's own examples restated; the envelope each event is
# logged as, read back with keel dump; the refusals (400, 403, 415) with the
# JSON error shape; a thousand ce- headers. On SQLite, or on the store in
# KEEL_CE_STORE (tests/mysql_http_cloudevents.sh: MariaDB).
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

store=${KEEL_CE_STORE:-sqlite:$dir/keel.db}
"$KEEL" token new --tenant acme > "$dir/acme" 2>/dev/null
tok=$(sed -n 1p "$dir/acme")
sed -n 2p "$dir/acme" > "$dir/tokens"
"$KEEL" serve --listen 127.0.0.1:0 --store "$store" --cartridge fleet --tokens "$dir/tokens" \
	--threads 2 --max-line 64K --quiet 2> "$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port

# post ARGS...: POSTs to /v1/events with the token and curl's ARGS; sets
# $status, the answer's body in $dir/out.
post() {
	status=$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok" \
		"$@" "$url/v1/events")
}
# expect STATUS TEXT: the last answer had STATUS and its body contains TEXT.
expect() {
	[ "$status" = "$1" ] || fail "status $status, want $1: $(cat "$dir/out")"
	grep -qF -- "$2" "$dir/out" || fail "answer lacks $2: $(cat "$dir/out")"
}
# envelope ID: the envelope logged for event ID, as keel dump prints it.
envelope() {
	"$KEEL" dump --store "$store" | grep -F "\"type\":\"event\",\"tenant\":\"acme\"," |
		grep -F "\"id\":\"$1\",\"event_type\"" |
		sed 's/.*"envelope"://; s/}$//'
}
same() { # what want got
	[ "$2" = "$3" ] || fail "$1:
 got  $3
 want $2"
}

# --- binary content mode ------------------------------------------------

# The binding's example (3.1.4): CloudEvents' attributes as ce- headers,
# Content-Type the data's, the body the data. Keel's tenant is the
# ce-tenant extension; the data is a fleet status change.
post -H 'ce-specversion: 1.0' -H 'ce-type: fleet.vehicle.status_changed' \
	-H 'ce-time: 2018-04-05T03:56:24Z' -H 'ce-id: 1234-1234-1234' \
	-H 'ce-source: /mycontext/subcontext' -H 'ce-tenant: acme' \
	-H 'Content-Type: application/json; charset=utf-8' \
	--data-binary $'{\n    "vehicle_id": "V-1", "status": "available", "reason": null\n}\n'
expect 200 '{"events":1,"accepted":1,"duplicates":0,"conflicting":0,"unhandled":0,"rejected":[],"conflicts":[]}'
# Logged as the structured event it stands for: the attributes in the
# order of their names, Content-Type as datacontenttype, the JSON body as
# data.
same "binary envelope" \
	'{"datacontenttype":"application/json; charset=utf-8","id":"1234-1234-1234","source":"/mycontext/subcontext","specversion":"1.0","tenant":"acme","time":"2018-04-05T03:56:24Z","type":"fleet.vehicle.status_changed","data":{"vehicle_id":"V-1","status":"available","reason":null}}' \
	"$(envelope 1234-1234-1234)"
# The cartridge read the data.
status=$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok" \
	"$url/v1/tenants/acme/entities/vehicle:V-1?at=2018-04-05T04:00:00Z")
expect 200 '"status"'
grep -qF '"available"' "$dir/out" || fail "entity: $(cat "$dir/out")"

# The same event in structured mode is the same envelope: a duplicate,
# not a conflicting one. Header names are case-insensitive and their
# order does not matter.
post -H 'Content-Type: application/cloudevents+json; charset=utf-8' --data-binary \
	'{"datacontenttype":"application/json; charset=utf-8","id":"1234-1234-1234","source":"/mycontext/subcontext","specversion":"1.0","tenant":"acme","time":"2018-04-05T03:56:24Z","type":"fleet.vehicle.status_changed","data":{"vehicle_id":"V-1","status":"available","reason":null}}'
expect 200 '"accepted":0,"duplicates":1,"conflicting":0'
post -H 'CE-Tenant: acme' -H 'Ce-Source: /mycontext/subcontext' -H 'CE-ID: 1234-1234-1234' \
	-H 'ce-TIME: 2018-04-05T03:56:24Z' -H 'Ce-Type: fleet.vehicle.status_changed' \
	-H 'CE-SPECVERSION: 1.0' -H 'content-type: application/json; charset=utf-8' \
	--data-binary '{"vehicle_id":"V-1","status":"available","reason":null}'
expect 200 '"accepted":0,"duplicates":1,"conflicting":0'

# The JSON event format's example (3.2) re-encoded in binary mode: binary
# data (a Thrift payload) is logged as data_base64; extension values are
# strings (a header carries no JSON type). The cartridge has no handler
# for the type: unhandled, and logged.
printf '\x00\x01\x02\xfe\xff' > "$dir/thrift.bin"
post -H 'ce-specversion: 1.0' -H 'ce-type: com.example.someevent' -H 'ce-source: /mycontext' \
	-H 'ce-id: A234-1234-1234' -H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: acme' \
	-H 'ce-comexampleextension1: value' -H 'ce-comexampleothervalue: 5' \
	-H 'content-type: application/vnd.apache.thrift.binary' --data-binary "@$dir/thrift.bin"
expect 200 '"accepted":1,"duplicates":0,"conflicting":0,"unhandled":1'
same "binary data" \
	'{"comexampleextension1":"value","comexampleothervalue":"5","datacontenttype":"application/vnd.apache.thrift.binary","id":"A234-1234-1234","source":"/mycontext","specversion":"1.0","tenant":"acme","time":"2018-04-05T17:31:00Z","type":"com.example.someevent","data_base64":"AAEC/v8="}' \
	"$(envelope A234-1234-1234)"
# Text that is not JSON is bytes too; without a Content-Type there is no
# datacontenttype.
post -H 'ce-specversion: 1.0' -H 'ce-type: com.example.note' -H 'ce-source: /notes' \
	-H 'ce-id: note-1' -H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: acme' \
	-H 'Content-Type:' --data-binary 'hi'
expect 200 '"unhandled":1'
same "no content type" \
	'{"id":"note-1","source":"/notes","specversion":"1.0","tenant":"acme","time":"2018-04-05T17:31:00Z","type":"com.example.note","data_base64":"aGk="}' \
	"$(envelope note-1)"
# Binary data gives a cartridge no /data fields: a handled type whose
# operations read them is rejected, as any event missing them.
post -H 'ce-specversion: 1.0' -H 'ce-type: fleet.vehicle.status_changed' -H 'ce-source: /s' \
	-H 'ce-id: octets' -H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: acme' \
	-H 'Content-Type: application/octet-stream' --data-binary "@$dir/thrift.bin"
expect 422 'pointer \"/data/vehicle_id\": missing'

# Header values (3.1.3.2): percent-decoded once, either case of hex
# digits, a quoted string unquoted first (older senders).
post -H 'ce-specversion: 1.0' -H 'ce-type: com.example.someevent' -H 'ce-source: "/a \"quoted\" source"' \
	-H 'ce-id: pct-1' -H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: acme' \
	-H 'ce-subject: Euro%20%E2%82%AC%20%f0%9f%98%80' -H 'ce-comment: 100%25' \
	-H 'Content-Type: application/json' --data-binary '{}'
expect 200 '"unhandled":1'
same "decoded values" \
	'{"comment":"100%","datacontenttype":"application/json","id":"pct-1","source":"/a \"quoted\" source","specversion":"1.0","subject":"Euro € 😀","tenant":"acme","time":"2018-04-05T17:31:00Z","type":"com.example.someevent","data":{}}' \
	"$(envelope pct-1)"

# Refusals name the header and keep the JSON error shape.
ce=(-H 'ce-specversion: 1.0' -H 'ce-type: com.example.someevent' -H 'ce-source: /s'
	-H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: acme')
post "${ce[@]}" -H 'Content-Type: application/json' --data-binary '{}'
expect 400 '{"error":"header \"ce-id\": missing'
post -H 'ce-specversion: 1.0' -H 'ce-type: t' -H 'ce-source: /s' -H 'ce-id: x' \
	-H 'ce-time: 2018-04-05T17:31:00Z' -H 'Content-Type: application/json' --data-binary '{}'
expect 400 '{"error":"header \"ce-tenant\": missing'
post "${ce[@]}" -H 'ce-id: over' -H 'ce-subject: %C0%A0' --data-binary 'x'
expect 400 '{"error":"header \"ce-subject\": not UTF-8 once percent-decoded"}'
post "${ce[@]}" -H 'ce-id: bad%2' --data-binary 'x'
expect 400 '{"error":"header \"ce-id\": '"'"'%'"'"' not followed by two hexadecimal digits"}'
post "${ce[@]}" -H 'ce-id: twice' -H 'CE-ID: twice' --data-binary 'x'
expect 400 '{"error":"header \"ce-id\": given more than once"}'
post "${ce[@]}" -H 'ce-id: dct' -H 'ce-datacontenttype: text/plain' --data-binary 'x'
expect 400 '{"error":"header \"ce-datacontenttype\": not allowed in binary content mode'
post "${ce[@]}" -H 'ce-id: dash' -H 'ce-my-ext: 1' --data-binary 'x'
expect 400 '{"error":"header \"ce-my-ext\": not a CloudEvents attribute'
post "${ce[@]}" -H 'ce-id: notjson' -H 'Content-Type: application/json' --data-binary '{"a":'
expect 400 '{"error":"body: invalid JSON at byte 5'
post "${ce[@]}" -H 'ce-id: latin' -H 'Content-Type: application/json; charset=ISO-8859-1' \
	--data-binary '{}'
expect 415 '{"error":"content type \"application/json\": charset \"ISO-8859-1\" not supported'
# No body is no data, and Keel's events carry data: the event is rejected.
post "${ce[@]}" -H 'ce-id: nodata' -H 'Content-Type: application/json' --data-binary ''
expect 422 'field \"data\": missing'
# Data longer than an event may be (--max-line) is that event's reject.
head -c 70000 /dev/zero > "$dir/zeros"
post "${ce[@]}" -H 'ce-id: long' -H 'Content-Type: application/octet-stream' \
	--data-binary "@$dir/zeros"
expect 422 '"error":"index 0: line longer than the maximum of 65536 bytes"'
# A token may only post its own tenants, refused before the body is read.
post -H 'ce-specversion: 1.0' -H 'ce-type: t' -H 'ce-source: /s' -H 'ce-id: g-1' \
	-H 'ce-time: 2018-04-05T17:31:00Z' -H 'ce-tenant: globex' --data-binary 'x'
expect 403 '{"error":"index 0: tenant \"globex\": not in the token'"'"'s scope'

# Many attributes: each header is one attribute, read in O(n log n).
hdrs=()
for i in $(seq 1 500); do hdrs+=(-H "ce-x$i: $i"); done
post "${ce[@]}" -H 'ce-id: many' "${hdrs[@]}" -H 'Content-Type: application/json' --data-binary '{}'
expect 200 '"accepted":1'
attrs=$(envelope many | grep -o '"x[0-9]*":"[0-9]*"' | sort -u | wc -l)
[ "$attrs" = 500 ] || fail "$attrs of the 500 extension attributes logged"
# A thousand are more than libmicrohttpd holds for one request's headers
# (docs/http.md, "Limits"): refused with 431, and the server goes on.
hdrs=()
for i in $(seq 1 1000); do hdrs+=(-H "ce-x$i: $i"); done
post "${ce[@]}" -H 'ce-id: thousand' "${hdrs[@]}" --data-binary 'x'
[ "$status" = 431 ] || fail "1000 ce- headers: $status $(cat "$dir/out")"
[ "$(curl -s "$url/healthz")" = '{"status":"ok"}' ] || fail "healthz after 1000 headers"

# --- structured content mode --------------------------------------------

# The binding's example (3.2.4), as the JSON event format writes it.
post -H 'Content-Type: application/cloudevents+json; charset=utf-8' --data-binary '{
    "specversion" : "1.0",
    "type" : "fleet.vehicle.status_changed",
    "source" : "/mycontext", "id" : "s-1", "tenant" : "acme",
    "time" : "2018-04-05T18:00:00Z",
    "data" : { "vehicle_id" : "V-2", "status" : "available", "reason" : null }
}'
expect 200 '"accepted":1,"duplicates":0,"conflicting":0,"unhandled":0'
# application/json holding one event is structured mode too...
post -H 'Content-Type: application/json' --data-binary \
	'{"specversion":"1.0","type":"fleet.vehicle.status_changed","source":"/mycontext","id":"s-2","tenant":"acme","time":"2018-04-05T18:01:00Z","data":{"vehicle_id":"V-2","status":"in_service","reason":null}}'
expect 200 '{"events":1,"accepted":1'
# ...and a rejected one is 422, as under application/cloudevents+json.
post -H 'Content-Type: application/json' --data-binary '{"id":"s-3","tenant":"acme"}'
expect 422 '"index":0,"id":"s-3"'
# An array under application/json is a batch.
post -H 'Content-Type: application/json' --data-binary \
	'[{"specversion":"1.0","type":"com.example.someevent","source":"/c","id":"j-1","tenant":"acme","time":"2018-04-05T18:02:00Z","data":{}},
	  {"specversion":"1.0","type":"com.example.someevent","source":"/c","id":"j-2","tenant":"acme","time":"2018-04-05T18:03:00Z","data":{}}]'
expect 200 '{"events":2,"accepted":2'
# Anything else is not events; not JSON at all is 400 too.
post -H 'Content-Type: application/json' --data-binary '"an event?"'
expect 400 '{"error":"body: application/json must hold one event'
post -H 'Content-Type: application/cloudevents+json' --data-binary '{"id":'
expect 400 '{"error":"body: invalid JSON'
post -H 'Content-Type: application/cloudevents+json; charset="latin1"' --data-binary '{}'
expect 415 'charset \"latin1\" not supported'
# Another event format of CloudEvents' is not read.
post -H 'Content-Type: application/cloudevents+avro' --data-binary 'x'
expect 415 '{"error":"content type \"application/cloudevents+avro\": an event format Keel does not read'
# Neither a known type nor ce- headers.
post -H 'Content-Type: text/plain' --data-binary '{}'
expect 415 '{"error":"content type \"text/plain\": expected'

# --- batch mode and NDJSON ----------------------------------------------

# The binding's example (3.3.3): two events of different types.
post -H 'Content-Type: application/cloudevents-batch+json; charset=utf-8' --data-binary '[
    { "specversion" : "1.0", "type" : "fleet.vehicle.status_changed", "source" : "/b",
      "id" : "b-1", "tenant" : "acme", "time" : "2018-04-05T19:00:00Z",
      "data" : { "vehicle_id" : "V-3", "status" : "available", "reason" : null } },
    { "specversion" : "1.0", "type" : "com.example.someotherevent", "source" : "/b",
      "id" : "b-2", "tenant" : "acme", "time" : "2018-04-05T19:01:00Z", "data" : {} }
]'
expect 200 '{"events":2,"accepted":2,"duplicates":0,"conflicting":0,"unhandled":1'
# The batch may be empty.
post -H 'Content-Type: application/cloudevents-batch+json' --data-binary '[]'
expect 200 '{"events":0'
post -H 'Content-Type: application/x-ndjson' --data-binary \
	$'{"specversion":"1.0","type":"com.example.someevent","source":"/n","id":"n-1","tenant":"acme","time":"2018-04-05T20:00:00Z","data":{}}\n{"specversion":"1.0","type":"com.example.someevent","source":"/n","id":"n-2","tenant":"acme","time":"2018-04-05T20:01:00Z","data":{}}\n'
expect 200 '{"events":2,"accepted":2'

# Everything accepted above, and nothing refused, is in the log.
ids=$("$KEEL" dump --store "$store" | grep '"type":"event"' |
	sed -E 's/.*"tenant":"acme","source":"([^"\\]|\\.)*","id":"([^"]*)".*/\2/' | LC_ALL=C sort | tr '\n' ' ')
same "logged events" \
	"1234-1234-1234 A234-1234-1234 b-1 b-2 j-1 j-2 many n-1 n-2 note-1 pct-1 s-1 s-2 " "$ids"
# A clean stop (under ASan: nothing leaked by any request above).
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "serve exited $rc: $(cat "$dir/log")"
echo "ok"
