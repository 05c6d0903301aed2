#!/usr/bin/env bash
# keel serve and keel token through the command line: tokens made by
# `keel token`, events posted with curl, tenant scopes enforced, a SIGTERM
# while a batch is being sent finishes it and exits 0, and the store then
# holds exactly what the server acknowledged (docs/http.md).
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v ss >/dev/null || { echo "ss is needed (iproute2)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

# Tokens: the first line is the token, the second its file line.
"$KEEL" token new --tenant tenant-00 > "$dir/a" 2>/dev/null
"$KEEL" token new --all > "$dir/all" 2>/dev/null
tok_a=$(sed -n 1p "$dir/a")
tok_all=$(sed -n 1p "$dir/all")
[[ $tok_a =~ ^keel_[0-9a-f]{64}$ ]] || fail "token format: $tok_a"
[[ $(sed -n 2p "$dir/a") =~ ^sha256:[0-9a-f]{64}\ tenant-00$ ]] || fail "line: $(sed -n 2p "$dir/a")"
[ "$(printf '%s\n' "$tok_all" | "$KEEL" token hash --all)" = "$(sed -n 2p "$dir/all")" ] ||
	fail "token hash disagrees with token new"
{ echo "# test"; sed -n 2p "$dir/a"; sed -n 2p "$dir/all"; } > "$dir/tokens"
if "$KEEL" token new 2>/dev/null; then fail "token new without a scope"; fi

# Without tokens, only loopback.
if "$KEEL" serve --cartridge fleet --listen 0.0.0.0:0 --store memory: 2> "$dir/err"; then
	fail "served on 0.0.0.0 without tokens"
fi
grep -q "loopback" "$dir/err" || fail "message: $(cat "$dir/err")"

"$KEEL" generate fleet --events 3000 --tenants 2 --seed 5 --output "$dir/in.ndjson"
db="sqlite:$dir/keel.db"
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$db" --tokens "$dir/tokens" --threads 2 \
	2> "$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port

post() { # token content-type file -> "status body"
	curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $1" \
		-H "Content-Type: $2" --data-binary "@$3" "$url/v1/events"
}
[ "$(curl -s "$url/healthz")" = '{"status":"ok"}' ] || fail "healthz"

# A's token may not post tenant-01's events (the stream has both).
[ "$(post "$tok_a" application/x-ndjson "$dir/in.ndjson")" = 403 ] || fail "403 expected"
grep -q '"events":3000' <(curl -s -H "Authorization: Bearer $tok_all" "$url/v1/tenants/tenant-00/stats") &&
	fail "the refused batch was written"
# tenant-00's own events go in with A's token.
grep -m 500 '"tenant":"tenant-00"' "$dir/in.ndjson" > "$dir/a.ndjson"
[ "$(post "$tok_a" application/x-ndjson "$dir/a.ndjson")" = 200 ] || fail "post a: $(cat "$dir/out")"
grep -q '"accepted":500' "$dir/out" || fail "accepted: $(cat "$dir/out")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok_a" \
	"$url/v1/tenants/tenant-01/stats")" = 403 ] || fail "read of tenant-01 with A's token"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/tenants/tenant-00/stats")" = 401 ] ||
	fail "read without a token"

# SIGTERM while a whole-stream batch is on its way (sent slowly).
curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok_all" \
	-H "Content-Type: application/x-ndjson" --limit-rate 400k \
	--data-binary "@$dir/in.ndjson" "$url/v1/events" > "$dir/status" &
cpid=$!
# Until the server holds that connection (the metrics request is the
# other one) and it has 64 KiB of the body (ss shows the bytes the server
# acknowledged on curl's socket): the batch is under way when SIGTERM
# comes, however slow the machine.
held() {
	local open
	open=$(curl -s -H "Authorization: Bearer $tok_all" "$url/metrics" |
		sed -n 's/^keel_open_connections \([0-9]*\)$/\1/p')
	[ "${open:-0}" -ge 2 ]
}
got_64k() {
	local acked
	acked=$(ss -tinH "dport = :$port" | sed -n 's/.* bytes_acked:\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
	[ "${acked:-0}" -ge 65536 ]
}
wait_until 10 held || fail "the server never held the slow batch's connection"
wait_until 10 got_64k || fail "the server did not get 64 KiB of the batch"
kill -TERM "$pid"
wait "$cpid" || true
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "serve exited $rc: $(cat "$dir/log")"
[ "$(cat "$dir/status")" = 200 ] || fail "batch under way: $(cat "$dir/status") $(cat "$dir/out")"
grep -q '"events":3000' "$dir/out" || fail "answer: $(cat "$dir/out")"
grep -q "stopped" "$dir/log" || fail "log: $(cat "$dir/log")"
# Everything acknowledged is in the store, once.
events=$("$KEEL" dump --store "$db" | grep -c '"type":"event"')
want=$(wc -l < "$dir/in.ndjson")
[ "$events" = "$want" ] || fail "store holds $events events, want $want"
echo "ok"
