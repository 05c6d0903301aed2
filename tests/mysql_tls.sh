#!/usr/bin/env bash
# TLS with a MariaDB store through the tool: keel serve over HTTPS on a
# MariaDB store takes posts and answers reads; the store URL's ssl-mode
# reaches the connector (disabled works with the fixture's server, which
# has no TLS; required is refused with a message saying so, status 1); a
# bad ssl-mode is an error naming the parameter. Needs the suite's MariaDB
# fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v openssl >/dev/null || { echo "openssl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql

url=$($KEEL_TEST_MYSQL_FRESH)
"$KEEL" generate fleet --events 300 --tenants 1 --seed 8 --output "$dir/in.ndjson"

# ssl-mode through the command line
"$KEEL" ingest "$dir/in.ndjson" --quiet --cartridge fleet --store "$url?ssl-mode=disabled" ||
	fail "ingest with ssl-mode=disabled"
rc=0
"$KEEL" stats --store "$url?ssl-mode=required" >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" -eq 1 ] || fail "ssl-mode=required against a server without TLS: status $rc"
grep -q "ssl-mode=required, but the server at .* did not encrypt the connection" "$dir/err" ||
	fail "message: $(cat "$dir/err")"
grep -qF "$(cat "$KEEL_TEST_MYSQL_DIR/password")" "$dir/err" &&
	fail "the message shows the password: $(cat "$dir/err")"
rc=0
"$KEEL" stats --store "$url?ssl-mode=always" >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" -eq 1 ] || fail "ssl-mode=always: status $rc"
grep -q 'ssl-mode "always": expected disabled, preferred, required, verify-ca or verify-identity' "$dir/err" ||
	fail "message: $(cat "$dir/err")"

# keel serve over HTTPS on the MariaDB store
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=keel-test \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null ||
	fail "openssl could not make a certificate"
"$KEEL" token new --all >"$dir/tok" 2>/dev/null
token=$(sed -n 1p "$dir/tok")
sed -n 2p "$dir/tok" >"$dir/tokens"
"$KEEL" serve --listen 127.0.0.1:0 --store "$url?ssl-mode=preferred" --cartridge fleet \
	--tokens "$dir/tokens" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --quiet 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
https=https://127.0.0.1:$port
generated() { "$KEEL" generate fleet --events 100 --tenants 1 --seed 9 | sed 's/"tenant":"tenant-00"/"tenant":"other"/'; }
generated >"$dir/more.ndjson"
status=$(curl -sS --cacert "$dir/cert.pem" -o "$dir/out" -w '%{http_code}' \
	-H "Authorization: Bearer $token" -H 'Content-Type: application/x-ndjson' \
	--data-binary "@$dir/more.ndjson" "$https/v1/events")
[ "$status" = 200 ] || fail "post over TLS: $status $(cat "$dir/out")"
grep -q '"accepted":100' "$dir/out" || fail "post over TLS: $(cat "$dir/out")"
curl -sS --cacert "$dir/cert.pem" -H "Authorization: Bearer $token" \
	"$https/v1/tenants/tenant-00/stats" >"$dir/stats"
grep -q '"events":300' "$dir/stats" || fail "stats over TLS: $(cat "$dir/stats")"
kill -TERM "$pid"
wait "$pid" || fail "server: status $? after SIGTERM"
pid=
"$KEEL" stats --tenant other --store "$url" >"$dir/stats2"
grep -q '"events":100' "$dir/stats2" || fail "the posted events are not in the store: $(cat "$dir/stats2")"
echo "ok"
