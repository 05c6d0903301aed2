#!/usr/bin/env bash
# http_hardening.sh - what a hostile or careless client cannot do to
# keel serve (docs/http.md, "The answer" and "Limits"):
#  - a POST of half a million bad events (`{}` lines) is answered with the first
#    1000 rejections listed and the rest counted, not one entry a line (an
#    answer many times its request); likewise 1200 conflicting duplicates:
#    1000 listed, `conflicts_unlisted` 200;
#  - a request's events are counted against --max-buffered beside its body,
#    so a body of tiny events cannot take many times its size: past the
#    limit 503, nothing ingested, and the memory is given back; four posts
#    of half a million events at once raise the server's peak memory
#    (VmHWM) by no more than the limit;
#  - a repeated Content-Type is 400, and a repeated Authorization is 400 on
#    every route (those that ask for no token too), with or without --tokens.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

start() { # log, then keel serve's options
	local log=$1
	shift
	"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store memory: --threads 2 --quiet \
		"$@" 2>"$log" &
	pid=$!
	wait_port "$log"
	url=http://127.0.0.1:$port
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve exited $? on SIGTERM: $(cat "$dir/log")"
	pid=
}
post() { # file [curl options...] -> the status; the body in $dir/out
	local f=$1
	shift
	curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' "$@" \
		--data-binary "@$f" "$url/v1/events"
}

# Half a million events of `{}`: 1.5 MB of request.
python3 -c 'import sys; sys.stdout.write("{}\n" * 500000)' >"$dir/bad.ndjson"
start "$dir/log"
status=$(post "$dir/bad.ndjson")
[ "$status" = 200 ] || fail "half a million bad events: $status $(head -c 300 "$dir/out")"
size=$(stat -c %s "$dir/out")
[ "$size" -lt 200000 ] || fail "the answer to half a million bad events is $size bytes"
python3 - "$dir/out" <<'PY' || fail "answer: $(head -c 600 "$dir/out")"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["events"] == 500000 and a["accepted"] == 0 and a["duplicates"] == 0, a
r = a["rejected"]
assert len(r) == 1000, len(r)
assert [e["index"] for e in r] == list(range(1000)), "listed: the first 1000 by index"
assert all(e["id"] is None and "id" in e["error"] for e in r), r[0]
assert a["rejected_unlisted"] == 499000, a.get("rejected_unlisted")
assert a["conflicts"] == [] and "conflicts_unlisted" not in a, a
PY
# A request within the limit says nothing of unlisted ones.
head -n 3 "$dir/bad.ndjson" >"$dir/three.ndjson"
[ "$(post "$dir/three.ndjson")" = 200 ] || fail "three bad events: $(cat "$dir/out")"
grep -q '"rejected_unlisted"' "$dir/out" && fail "three rejected, yet unlisted: $(cat "$dir/out")"
grep -q '"index":2,' "$dir/out" || fail "three rejected: $(cat "$dir/out")"

# Repeated headers: 400 before anything is read.
ev='{"specversion":"1.0","id":"e-1","source":"/s","tenant":"acme","type":"fleet.depot.opened","time":"2026-01-05T08:00:00Z","data":{"depot_id":"D-1","city":"Oslo"}}'
for ct in 'application/x-ndjson' 'application/json'; do
	st=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/cloudevents+json' \
		-H "Content-Type: $ct" --data-binary "$ev" "$url/v1/events")
	[ "$st" = 400 ] || fail "two Content-Types ($ct): $st $(cat "$dir/out")"
	grep -q 'header \\"Content-Type\\": given 2 times' "$dir/out" || fail "message: $(cat "$dir/out")"
done
# In binary mode too (the Content-Type is the event's datacontenttype).
st=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'ce-specversion: 1.0' -H 'ce-id: b-1' \
	-H 'ce-source: /s' -H 'ce-type: fleet.depot.opened' -H 'ce-time: 2026-01-05T08:00:00Z' \
	-H 'ce-tenant: acme' -H 'Content-Type: application/json' -H 'content-type: text/plain' \
	--data-binary '{"depot_id":"D-2","city":"Bergen"}' "$url/v1/events")
[ "$st" = 400 ] || fail "binary mode, two Content-Types: $st $(cat "$dir/out")"
[ "$(curl -s -o "$dir/out" -w '%{http_code}' "$url/v1/tenants/acme/stats")" = 404 ] ||
	fail "a refused request wrote: $(cat "$dir/out")"
# More than 1000 conflicting duplicates: 1200 events logged, then the same
# 1200 identities with other data, and one new event. The first 1000
# conflicts are listed (by index), the other 200 counted.
python3 - "$dir" <<'PY'
import json, sys
def ev(i, city):
    return json.dumps({"specversion": "1.0", "id": "c-%d" % i, "source": "/conf", "tenant": "conf",
                       "type": "fleet.depot.opened", "time": "2026-01-05T08:00:00Z",
                       "data": {"depot_id": "D-%d" % i, "name": "Depot %d" % i, "city": city,
                                "location": {"lat": 51.3, "lon": 12.4}}})
with open(sys.argv[1] + "/first.ndjson", "w") as f:
    f.writelines(ev(i, "Oslo") + "\n" for i in range(1200))
with open(sys.argv[1] + "/again.ndjson", "w") as f:
    f.writelines(ev(i, "Bergen") + "\n" for i in range(1201))
PY
[ "$(post "$dir/first.ndjson")" = 200 ] || fail "1200 events: $(head -c 300 "$dir/out")"
grep -q '"accepted":1200,' "$dir/out" || fail "1200 events: $(head -c 300 "$dir/out")"
[ "$(post "$dir/again.ndjson")" = 200 ] || fail "1200 conflicts: $(head -c 300 "$dir/out")"
python3 - "$dir/out" <<'PY' || fail "1200 conflicts: $(head -c 600 "$dir/out")"
import json, sys
text = open(sys.argv[1]).read()
a = json.loads(text)
assert (a["events"], a["accepted"], a["duplicates"], a["conflicting"]) == (1201, 1, 1200, 1200), a
assert a["rejected"] == [] and "rejected_unlisted" not in a, a
c = a["conflicts"]
assert len(c) == 1000, len(c)
assert [e["index"] for e in c] == list(range(1000)), "listed: the first 1000 by index"
assert [e["id"] for e in c] == ["c-%d" % i for i in range(1000)], c[:2]
assert all(e["source"] == "/conf" and "already in the store" in e["error"] for e in c), c[0]
assert a["conflicts_unlisted"] == 200, a.get("conflicts_unlisted")
# the key follows the list it counts
assert text.index('"conflicts_unlisted"') > text.index('"conflicts":['), text[-200:]
PY
# Nothing of a conflicting duplicate was written: the depots keep Oslo.
curl -s "$url/v1/tenants/conf/entities/depot%3AD-1100" >"$dir/depot"
grep -q '"city":{"value":"Oslo"' "$dir/depot" || fail "a conflict was written: $(cat "$dir/depot")"

two_auth() { # label, then curl's options: two Authorization headers are 400
	local what=$1 st
	shift
	st=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Authorization: Bearer a' \
		-H 'authorization: Bearer b' "$@")
	[ "$st" = 400 ] || fail "$what, two Authorization headers: $st $(head -c 300 "$dir/out")"
	grep -q 'header \\"Authorization\\": given 2 times' "$dir/out" ||
		fail "$what: message: $(head -c 300 "$dir/out")"
}
# Without --tokens nothing reads the header, yet two of them are refused
# all the same, on every route.
for p in /healthz /v1/openapi.json /ui/ /v1/tenants /v1/tenants/acme/stats /metrics /nowhere; do
	two_auth "no token file, GET $p" "$url$p"
done
two_auth "no token file, POST /v1/events" -H 'Content-Type: application/cloudevents+json' \
	--data-binary "$ev" "$url/v1/events"
[ "$(curl -s -o "$dir/out" -w '%{http_code}' "$url/v1/tenants/acme/stats")" = 404 ] ||
	fail "a POST with two Authorization headers wrote: $(cat "$dir/out")"
stop

# The events' memory counts against --max-buffered: 4 MiB of bodies and
# events at once, so the half million `{}` (1.5 MB of body, 12 MB of events) is
# refused with 503 and nothing of it kept; 50 000 of them (150 KB and
# 1.2 MB) go in as before.
"$KEEL" token new --all >"$dir/all" 2>/dev/null
sed -n 2p "$dir/all" >"$dir/tokens"
tok=$(sed -n 1p "$dir/all")
start "$dir/log" --max-body 4194304 --max-buffered 4194304 --tokens "$dir/tokens"
auth=(-H "Authorization: Bearer $tok")
status=$(post "$dir/bad.ndjson" "${auth[@]}")
[ "$status" = 503 ] || fail "half a million events in 4 MiB: $status $(head -c 300 "$dir/out")"
grep -q 'do not fit beside the request bodies in memory (--max-buffered)' "$dir/out" ||
	fail "503 message: $(cat "$dir/out")"
buffered() {
	curl -s "${auth[@]}" "$url/metrics" | sed -n 's/^keel_buffered_body_bytes \([0-9]*\)$/\1/p'
}
back_to_zero() { [ "$(buffered)" = 0 ]; }
wait_until 10 back_to_zero || fail "after the 503, $(buffered) bytes still counted"
head -n 50000 "$dir/bad.ndjson" >"$dir/some.ndjson"
[ "$(post "$dir/some.ndjson" "${auth[@]}")" = 200 ] || fail "50 000 events in 4 MiB: $(head -c 300 "$dir/out")"
grep -q '"events":50000,' "$dir/out" || fail "answer: $(head -c 300 "$dir/out")"
wait_until 10 back_to_zero || fail "after the 200, $(buffered) bytes still counted"
# What is counted is what is held: 140 000 events are 420 KB of body and
# 3.4 MB of events (24 bytes each, one array of their number), 3.8 MB in
# all, so they fit in 4 MiB (an array grown by doubling would be 6.3 MB).
head -n 140000 "$dir/bad.ndjson" >"$dir/fits.ndjson"
[ "$(post "$dir/fits.ndjson" "${auth[@]}")" = 200 ] ||
	fail "140 000 events (3.8 MB held) in 4 MiB: $(head -c 300 "$dir/out")"
grep -q '"events":140000,' "$dir/out" || fail "answer: $(head -c 300 "$dir/out")"
wait_until 10 back_to_zero || fail "after the 200, $(buffered) bytes still counted"
stop

# The memory the server really holds is bounded by --max-buffered: four
# POSTs at once of half a million `{}` lines each (1.5 MB of body, 12 MB of
# events each: two fit in 32 MiB, the others wait or get 503) raise the
# server's peak resident memory (VmHWM, /proc/PID/status) by at most the
# limit, and an eighth more for AddressSanitizer's shadow memory when it is
# built so (with its quarantine off: freed memory it keeps would count as
# held), and 8 MiB for the answers and libmicrohttpd's buffers.
limit=$((32 << 20))
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0 \
	start "$dir/log" --max-buffered $limit --tokens "$dir/tokens"
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$pid/status"; }
before=$(hwm)
[ -n "$before" ] || fail "no VmHWM in /proc/$pid/status: $(cat "/proc/$pid/status")"
posts=()
for i in 1 2 3 4; do
	curl -s -o "$dir/four.$i" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/x-ndjson' \
		--data-binary "@$dir/bad.ndjson" "$url/v1/events" >"$dir/four.$i.status" &
	posts+=($!)
done
for p in "${posts[@]}"; do wait "$p" || true; done
after=$(hwm)
ok=0
for i in 1 2 3 4; do
	case $(cat "$dir/four.$i.status") in
	200)
		grep -q '"events":500000,' "$dir/four.$i" || fail "post $i: $(head -c 300 "$dir/four.$i")"
		ok=$((ok + 1))
		;;
	503) grep -q 'server busy' "$dir/four.$i" || fail "post $i: 503 $(cat "$dir/four.$i")" ;;
	*) fail "post $i of four at once: $(cat "$dir/four.$i.status") $(head -c 300 "$dir/four.$i")" ;;
	esac
done
[ "$ok" -ge 1 ] || fail "none of four posts at once was taken"
grown=$(((after - before) * 1024))
allowed=$((limit + limit / 8 + (8 << 20)))
echo "four at once: VmHWM $before kB, then $after kB; $ok taken, peak resident memory up $((grown >> 20)) MiB (--max-buffered 32 MiB, allowed $((allowed >> 20)) MiB)"
[ "$grown" -le "$allowed" ] ||
	fail "four posts at once raised the server's peak memory by $((grown >> 20)) MiB: more than --max-buffered (32 MiB) allows ($((allowed >> 20)) MiB)"
wait_until 10 back_to_zero || fail "after four at once, $(buffered) bytes still counted"

# Two Authorization headers: which token would count? 400.
st=$(curl -s -o "$dir/out" -w '%{http_code}' "${auth[@]}" -H "Authorization: Bearer keel_$(printf '0%.0s' {1..64})" \
	"$url/v1/tenants")
[ "$st" = 400 ] || fail "two Authorization headers: $st $(cat "$dir/out")"
grep -q 'header \\"Authorization\\": given 2 times' "$dir/out" || fail "message: $(cat "$dir/out")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$url/v1/tenants")" = 200 ] ||
	fail "one Authorization header is not 200"
# The routes that ask for no token refuse two of them too (even two good ones).
for p in /healthz /v1/openapi.json /ui/ /ui/keel.js; do
	two_auth "--tokens, GET $p" "$url$p"
	st=$(curl -s -o "$dir/out" -w '%{http_code}' "${auth[@]}" "${auth[@]}" "$url$p")
	[ "$st" = 400 ] || fail "--tokens, GET $p with the good token twice: $st"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$url$p")" = 200 ] ||
		fail "--tokens, GET $p with one Authorization is not 200"
done
stop
echo "ok: answers bounded, events' memory counted, repeated headers refused"
