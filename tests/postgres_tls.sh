#!/usr/bin/env bash
# TLS to a PostgreSQL store: a private server of this test's own, listening
# on loopback TCP with a self-signed certificate for 127.0.0.1. With
# sslmode=verify-full and that certificate as sslrootcert, keel ingests and
# reads over TLS; with
# another certificate as sslrootcert the connection is refused with one
# line naming the check that failed; sslmode=require on the same server
# without a root certificate connects (encryption without verification).
# Runs beside the suite's PostgreSQL fixture (skipped without it, which
# says postgresql is not installed).
set -euo pipefail
command -v openssl >/dev/null || { echo "openssl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
needs_postgres
: "${KEEL_PG_SCRIPT:?the script of the fixture}"

srv=$dir/srv
mkdir -p "$dir/tls"
cert() { # name: a self-signed certificate for 127.0.0.1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
		-addext "subjectAltName=IP:127.0.0.1" -keyout "$dir/tls/$1.key" \
		-out "$dir/tls/$1.pem" 2>/dev/null || fail "openssl could not make a certificate"
}
cert server
cert other
chmod 600 "$dir/tls/server.key"
[ "$(id -u)" = 0 ] && chown postgres "$dir/tls/server.key" "$dir/tls/server.pem"
chmod 755 "$dir" "$dir/tls"
KEEL_PG_OPTS="-c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=$dir/tls/server.pem -c ssl_key_file=$dir/tls/server.key" \
	"$KEEL_PG_SCRIPT" start "$srv" >/dev/null || fail "the TLS server did not start"
stop_server() { "$KEEL_PG_SCRIPT" stop "$srv" >/dev/null 2>&1 || true; }
trap 'rc=$?; stop_server; (exit $rc); scratch_cleanup' EXIT
port=$(cat "$srv/port")
password=$(cat "$srv/password")
tcp="postgres://keel:$password@127.0.0.1:$port/keel"

"$KEEL" generate fleet --events 300 --tenants 1 --seed 8 --output "$dir/in.ndjson"
"$KEEL" ingest "$dir/in.ndjson" --quiet --cartridge fleet \
	--store "$tcp?sslmode=verify-full&sslrootcert=$dir/tls/server.pem" || fail "ingest over verified TLS"
"$KEEL" stats --store "$tcp?sslmode=verify-full&sslrootcert=$dir/tls/server.pem" >"$dir/stats" ||
	fail "stats over verified TLS"
grep -q '"events":300' "$dir/stats" || fail "stats: $(cat "$dir/stats")"

# another certificate as the root: refused, one line, naming the check
rc=0
"$KEEL" stats --store "$tcp?sslmode=verify-full&sslrootcert=$dir/tls/other.pem" >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" -eq 1 ] || fail "a wrong CA: status $rc"
[ "$(wc -l <"$dir/err")" -eq 1 ] || fail "not one line: $(cat "$dir/err")"
grep -q "TLS with the server at 127.0.0.1:$port failed (sslmode=verify-full): .*certificate verify failed" "$dir/err" ||
	fail "message: $(cat "$dir/err")"
grep -qF "$password" "$dir/err" && fail "the message shows the password: $(cat "$dir/err")"

# require: encrypted, the certificate not checked
"$KEEL" stats --store "$tcp?sslmode=require" >/dev/null || fail "sslmode=require"
# disable: this server's pg_hba.conf takes TCP without TLS too
"$KEEL" stats --store "$tcp?sslmode=disable" >/dev/null || fail "sslmode=disable"
echo ok
