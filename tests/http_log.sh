#!/usr/bin/env bash
# keel serve's request log (docs/http.md, "Request log"): one JSON line on
# stderr per request, with its method, path, status, answer bytes,
# microseconds and tenant, never the token; --quiet writes none.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

"$KEEL" token new --tenant tenant-00 > "$dir/a" 2>/dev/null
tok_a=$(sed -n 1p "$dir/a")
sed -n 2p "$dir/a" > "$dir/tokens"
"$KEEL" generate fleet --events 40 --tenants 1 --seed 3 --output "$dir/in.ndjson"

# serve LOG [OPTION...]: starts keel serve in the background, sets $url.
serve() {
	local log=$1
	shift
	"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "sqlite:$dir/keel.db" --tokens "$dir/tokens" \
		--threads 2 "$@" 2> "$log" &
	pid=$!
	wait_port "$log"
	url=http://127.0.0.1:$port
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || fail "serve exited $?"
	pid=
}
# requests: the same six every run; the POST's answer size in $dir/post_bytes.
requests() {
	curl -s -o /dev/null "$url/healthz"
	curl -s -o "$dir/post" -w '%{size_download}' -H "Authorization: Bearer $tok_a" \
		-H 'Content-Type: application/x-ndjson' --data-binary "@$dir/in.ndjson" \
		"$url/v1/events" > "$dir/post_bytes"
	curl -s -o /dev/null -H "Authorization: Bearer $tok_a" "$url/v1/tenants/tenant-00/stats"
	curl -s -o /dev/null -H "Authorization: Bearer $tok_a" "$url/v1/tenants/tenant-01/stats"
	curl -s -o /dev/null -H "Authorization: Bearer $tok_a" "$url/nowhere"
	curl -s -o /dev/null -H "X-Padding: $(head -c 20000 /dev/zero | tr '\0' a)" "$url/healthz"
}

serve "$dir/log"
requests
stop
grep -q '"accepted":40' "$dir/post" || fail "post: $(cat "$dir/post")"
! grep -qF "$tok_a" "$dir/log" || fail "the token is in the log"

python3 - "$dir/log" "$(cat "$dir/post_bytes")" <<'PY' || fail "request log: $(cat "$dir/log")"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
got = [json.loads(l) for l in lines]
keys = {"time", "method", "path", "status", "bytes", "usec", "tenant"}
for g in got:
    assert set(g) == keys, g
    assert isinstance(g["usec"], int) and g["usec"] >= 0, g
    assert isinstance(g["bytes"], int), g
    assert g["time"].endswith("Z"), g
want = [
    ("GET", "/healthz", 200, None),
    ("POST", "/v1/events", 200, "tenant-00"),
    ("GET", "/v1/tenants/tenant-00/stats", 200, "tenant-00"),
    ("GET", "/v1/tenants/tenant-01/stats", 403, "tenant-01"),
    ("GET", "/nowhere", 404, None),
    ("GET", "/healthz", 431, None),
]
assert [(g["method"], g["path"], g["status"], g["tenant"]) for g in got] == want, got
assert got[1]["bytes"] == int(sys.argv[2]), (got[1], sys.argv[2])
assert got[0]["bytes"] == len('{"status":"ok"}\n'), got[0]
PY

# --quiet: the same requests, no request lines; the server's messages stay.
serve "$dir/quiet" --quiet
requests
stop
! grep -q '^{' "$dir/quiet" || fail "--quiet logged: $(cat "$dir/quiet")"
grep -q "listening on" "$dir/quiet" || fail "no start message: $(cat "$dir/quiet")"
echo "ok"
