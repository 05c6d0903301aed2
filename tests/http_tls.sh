#!/usr/bin/env bash
# keel serve over HTTPS (docs/http.md, "TLS"): with a self-signed
# certificate made here, a client that trusts it gets in with a token and
# posts and reads; one that does not trust it, or speaks plain HTTP to the
# port, gets nothing. Bad certificate or key files stop the start with a
# message naming the file (status 1), half the TLS options is a usage error
# (status 2). A client silent at the handshake is cut at the header
# timeout. Off loopback, tokens in plain HTTP are refused at start
# (status 2) unless --insecure-http, while HTTPS needs no such flag.
# Only TLS 1.2 and 1.3 are spoken: openssl s_client with -tls1 or -tls1_1
# (allowed by the client at security level 0) gets no session. A
# certificate that has expired, or is not valid yet, stops the start
# (status 1) with its dates.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v openssl >/dev/null || { echo "openssl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

# A self-signed certificate for the names the client uses, and another
# one the server does not have.
selfsigned() { # KEY CERT CN
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$3" \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$1" -out "$2" 2>/dev/null || fail "openssl could not make a certificate"
}
selfsigned "$dir/key.pem" "$dir/cert.pem" keel-test
selfsigned "$dir/other-key.pem" "$dir/other-cert.pem" someone-else

"$KEEL" token new --tenant tenant-00 >"$dir/tok" 2>/dev/null
token=$(sed -n 1p "$dir/tok")
sed -n 2p "$dir/tok" >"$dir/tokens"
"$KEEL" generate fleet --events 200 --tenants 1 --seed 3 --output "$dir/in.ndjson"

# expect_start_error STATUS TEXT ARGS...: keel serve does not start,
# exits with STATUS and says TEXT. (timeout: a server that did start
# would run until killed.)
expect_start_error() {
	local want=$1 text=$2 rc=0
	shift 2
	timeout 20 "$KEEL" serve --store memory: --cartridge fleet "$@" 2>"$dir/err" || rc=$?
	[ "$rc" -eq "$want" ] || fail "serve $*: status $rc, expected $want: $(cat "$dir/err")"
	grep -qF -- "$text" "$dir/err" || fail "serve $*: message: $(cat "$dir/err")"
}

# --- HTTPS on loopback: in with a token, reads and writes
"$KEEL" serve --listen 127.0.0.1:0 --store "sqlite:$dir/keel.db" --cartridge fleet \
	--tokens "$dir/tokens" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
grep -q "HTTPS" "$dir/log" || fail "start message does not say HTTPS: $(cat "$dir/log")"
https=https://127.0.0.1:$port
tls() { curl -sS --cacert "$dir/cert.pem" "$@"; }

[ "$(tls "$https/healthz")" = '{"status":"ok"}' ] || fail "healthz over TLS"
[ "$(tls -o /dev/null -w '%{http_code}' "$https/v1/tenants/tenant-00/stats")" = 401 ] ||
	fail "a read without a token over TLS was not 401"
status=$(tls -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $token" \
	-H 'Content-Type: application/x-ndjson' --data-binary "@$dir/in.ndjson" "$https/v1/events")
[ "$status" = 200 ] || fail "post over TLS: $status $(cat "$dir/out")"
grep -q '"accepted":200' "$dir/out" || fail "post over TLS: $(cat "$dir/out")"
tls -H "Authorization: Bearer $token" "$https/v1/tenants/tenant-00/stats" >"$dir/stats"
grep -q '"events":200' "$dir/stats" || fail "stats over TLS: $(cat "$dir/stats")"
# The same request by name, as a client checks the certificate's name.
[ "$(tls --resolve "localhost:$port:127.0.0.1" "https://localhost:$port/healthz")" = '{"status":"ok"}' ] ||
	fail "healthz by the certificate's DNS name"

# A client that does not trust the certificate stops at the handshake
# (curl: 60, peer certificate cannot be authenticated).
rc=0
curl -sS --cacert "$dir/other-cert.pem" -o /dev/null "$https/healthz" 2>"$dir/curl_err" || rc=$?
[ "$rc" -eq 60 ] || fail "a client trusting another certificate: curl status $rc: $(cat "$dir/curl_err")"
# Plain HTTP to the TLS port gets no HTTP answer at all: no status line
# (curl's %{http_code} 000), not even an error in clear.
rc=0
code=$(curl -s -o "$dir/plain" -w '%{http_code}' -H "Authorization: Bearer $token" \
	"http://127.0.0.1:$port/v1/tenants/tenant-00/stats") || rc=$?
[ "$code" = 000 ] && [ "$rc" -ne 0 ] || fail "plain HTTP to the TLS port: status $code, curl $rc"
[ ! -s "$dir/plain" ] || fail "plain HTTP to the TLS port got a body: $(cat "$dir/plain")"
# and the server still serves TLS after it
[ "$(tls "$https/healthz")" = '{"status":"ok"}' ] || fail "healthz after a plain request"
# TLS 1.2 and 1.3 are spoken, 1.0 and 1.1 are not. The client is allowed
# every version (SECLEVEL=0: OpenSSL 3 would refuse 1.0 and 1.1 itself),
# so a refusal is the server's.
for v in tls1 tls1_1 tls1_2 tls1_3; do
	rc=0
	echo | timeout 20 openssl s_client -connect "127.0.0.1:$port" -"$v" \
		-cipher 'DEFAULT@SECLEVEL=0' >"$dir/s_client.$v" 2>&1 || rc=$?
	case $v in
	tls1 | tls1_1)
		[ "$rc" -ne 0 ] || fail "TLS $v was negotiated: $(grep -E 'Protocol|Cipher is' "$dir/s_client.$v")"
		# (s_client prints "New, (NONE), Cipher is (NONE)" for no session)
		grep -qE '^New, TLSv' "$dir/s_client.$v" &&
			fail "TLS $v session: $(cat "$dir/s_client.$v")"
		;;
	*)
		want=TLSv1.2
		[ "$v" = tls1_3 ] && want=TLSv1.3
		[ "$rc" -eq 0 ] || fail "TLS $v refused (status $rc): $(tail -n 5 "$dir/s_client.$v")"
		grep -qE "^New, $want, Cipher is [A-Z]" "$dir/s_client.$v" ||
			fail "TLS $v: no $want session: $(cat "$dir/s_client.$v")"
		;;
	esac
done

# A second TLS server on this port fails for the port, not for TLS.
expect_start_error 1 "cannot start the server (Address already in use)" \
	--listen "127.0.0.1:$port" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem"
grep -q "cannot start TLS" "$dir/err" && fail "a port in use reported as TLS: $(cat "$dir/err")"

kill -TERM "$pid"
wait "$pid" || fail "server: status $? after SIGTERM"
pid=

# A client that connects and never starts the handshake is cut after
# --header-timeout, as a plain HTTP client that never sends its headers
# (docs/http.md, "Limits and hostile clients"); timeout 20 is only the
# bound on a server that would never cut it.
"$KEEL" serve --listen 127.0.0.1:0 --store memory: --cartridge fleet --tokens "$dir/tokens" \
	--tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --header-timeout 1 --quiet 2>"$dir/log4" &
pid=$!
wait_port "$dir/log4"
rc=0
timeout 20 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; cat <&3 >/dev/null' _ "$port" || rc=$?
[ "$rc" -eq 0 ] || fail "a silent client on the TLS port was not cut (status $rc)"
kill -TERM "$pid"
wait "$pid" || fail "server: status $? after SIGTERM"
pid=

# --- certificate and key files: the file at fault is named
cert=(--tls-cert "$dir/cert.pem")
key=(--tls-key "$dir/key.pem")
expect_start_error 2 "--tls-cert without --tls-key" --listen 127.0.0.1:0 "${cert[@]}"
expect_start_error 2 "--tls-key without --tls-cert" --listen 127.0.0.1:0 "${key[@]}"
expect_start_error 1 "--tls-cert \"$dir/missing.pem\": no such file or directory" \
	--listen 127.0.0.1:0 --tls-cert "$dir/missing.pem" "${key[@]}"
expect_start_error 1 "--tls-key \"$dir/missing.pem\": no such file or directory" \
	--listen 127.0.0.1:0 "${cert[@]}" --tls-key "$dir/missing.pem"
# the two files swapped
expect_start_error 1 "--tls-cert \"$dir/key.pem\": no PEM certificate in it" \
	--listen 127.0.0.1:0 --tls-cert "$dir/key.pem" --tls-key "$dir/cert.pem"
# a certificate whose body is damaged: GnuTLS's reason, both files named
# (GnuTLS itself leaks on this path: suppressed for this start only)
sed '3s/^./#/' "$dir/cert.pem" >"$dir/damaged.pem"
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/data/gnutls-damaged-pem.lsan" \
	expect_start_error 1 "--tls-cert \"$dir/damaged.pem\", --tls-key \"$dir/key.pem\": cannot start TLS" \
	--listen 127.0.0.1:0 --tls-cert "$dir/damaged.pem" "${key[@]}"
# another certificate's key
expect_start_error 1 "do not match" --listen 127.0.0.1:0 "${cert[@]}" --tls-key "$dir/other-key.pem"

# certificates out of their validity, made by a throw-away openssl CA
# configuration (req -x509 cannot date a certificate in the past or the
# future): refused at start, with the dates, whatever the key
mkdir -p "$dir/ca/new"
: >"$dir/ca/index.txt"
echo 01 >"$dir/ca/serial"
cat >"$dir/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
dir = $dir/ca
database = \$dir/index.txt
new_certs_dir = \$dir/new
serial = \$dir/serial
default_md = sha256
unique_subject = no
policy = any
[any]
commonName = supplied
CNF
openssl req -new -newkey rsa:2048 -nodes -subj "/CN=dated" -keyout "$dir/dated-key.pem" \
	-out "$dir/dated.csr" 2>/dev/null || fail "openssl req"
dated() { # OUT START END
	openssl ca -batch -config "$dir/ca.cnf" -selfsign -keyfile "$dir/dated-key.pem" \
		-in "$dir/dated.csr" -startdate "$2" -enddate "$3" -out "$1" 2>"$dir/ca.err" ||
		fail "openssl ca: $(cat "$dir/ca.err")"
}
dated "$dir/expired.pem" 20200101000000Z 20210101000000Z
dated "$dir/future.pem" 20991231000000Z 21001231000000Z
dated "$dir/current.pem" 20200101000000Z 20991231000000Z
expect_start_error 1 "--tls-cert \"$dir/expired.pem\": certificate 1 of 1 (CN=dated) has expired: valid from 2020-01-01T00:00:00Z to 2021-01-01T00:00:00Z" \
	--listen 127.0.0.1:0 --tls-cert "$dir/expired.pem" --tls-key "$dir/dated-key.pem"
grep -q "renew it" "$dir/err" || fail "expired: $(cat "$dir/err")"
expect_start_error 1 "--tls-cert \"$dir/future.pem\": certificate 1 of 1 (CN=dated) is not valid yet: valid from 2099-12-31T00:00:00Z" \
	--listen 127.0.0.1:0 --tls-cert "$dir/future.pem" --tls-key "$dir/dated-key.pem"
# an expired certificate behind a valid one in a chain file: named as the second
cat "$dir/current.pem" "$dir/expired.pem" >"$dir/chain.pem"
expect_start_error 1 "certificate 2 of 2 (CN=dated) has expired" \
	--listen 127.0.0.1:0 --tls-cert "$dir/chain.pem" --tls-key "$dir/dated-key.pem"
# the same key with a certificate valid now starts
"$KEEL" serve --listen 127.0.0.1:0 --store memory: --cartridge fleet --tls-cert "$dir/current.pem" \
	--tls-key "$dir/dated-key.pem" --quiet 2>"$dir/log5" &
pid=$!
wait_port "$dir/log5"
[ "$(curl -sk "https://127.0.0.1:$port/healthz")" = '{"status":"ok"}' ] || fail "a current certificate"
kill -TERM "$pid"
wait "$pid" || fail "server: status $? after SIGTERM"
pid=

# --- off loopback: tokens in plain HTTP are refused at start
expect_start_error 2 "tokens would cross the network in clear" \
	--listen 0.0.0.0:0 --tokens "$dir/tokens"
# and on this machine's own non-loopback address, when it has one
addr=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1 || true)
if [ -n "$addr" ]; then
	expect_start_error 2 "tokens would cross the network in clear" \
		--listen "$addr:0" --tokens "$dir/tokens"
fi
# without tokens, loopback only, flag or no flag
expect_start_error 2 "loopback addresses only" --listen 0.0.0.0:0 --insecure-http

# --insecure-http: the operator says a proxy in front terminates TLS
"$KEEL" serve --listen 0.0.0.0:0 --store memory: --cartridge fleet --tokens "$dir/tokens" \
	--insecure-http --quiet 2>"$dir/log2" &
pid=$!
wait_port "$dir/log2"
grep -q "plain HTTP" "$dir/log2" || fail "start message: $(cat "$dir/log2")"
status=$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $token" \
	-H 'Content-Type: application/x-ndjson' --data-binary "@$dir/in.ndjson" \
	"http://127.0.0.1:$port/v1/events")
[ "$status" = 200 ] || fail "post with --insecure-http: $status $(cat "$dir/out")"
kill -TERM "$pid"
wait "$pid" || fail "insecure server: status $? after SIGTERM"
pid=

# HTTPS off loopback needs no flag
"$KEEL" serve --listen 0.0.0.0:0 --store memory: --cartridge fleet --tokens "$dir/tokens" \
	"${cert[@]}" "${key[@]}" --quiet 2>"$dir/log3" &
pid=$!
wait_port "$dir/log3"
[ "$(tls "https://127.0.0.1:$port/healthz")" = '{"status":"ok"}' ] ||
	fail "HTTPS on 0.0.0.0 does not answer"
kill -TERM "$pid"
wait "$pid" || fail "HTTPS server on 0.0.0.0: status $? after SIGTERM"
pid=
echo "ok"
