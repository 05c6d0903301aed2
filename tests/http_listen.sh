#!/usr/bin/env bash
# keel serve's listening address (docs/cli.md, "keel serve"): a second
# server on a port that is in use does not start (status 1, the message
# says why), and a server stopped after answering can be started again on
# the same port at once, its closed connections still in TIME_WAIT.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store memory: 2> "$dir/log1" &
pid=$!
wait_port "$dir/log1"
first=$port
# Connection: close - the server closes first, so its side of the
# connection stays in TIME_WAIT on the listening port.
[ "$(curl -s -H 'Connection: close' "http://127.0.0.1:$first/healthz")" = '{"status":"ok"}' ] ||
	fail "first server does not answer"

# The port is taken: the second server must fail to start, not share it.
# (timeout: a server that did start would run until killed.)
set +e
timeout 10 "$KEEL" serve --cartridge fleet --listen "127.0.0.1:$first" --store memory: 2> "$dir/log2"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "second server on port $first: status $rc, expected 1: $(cat "$dir/log2")"
grep -q "cannot start the server" "$dir/log2" || fail "message: $(cat "$dir/log2")"
grep -q "in use" "$dir/log2" || fail "message does not say the address is in use: $(cat "$dir/log2")"
[ "$(curl -s "http://127.0.0.1:$first/healthz")" = '{"status":"ok"}' ] ||
	fail "first server stopped answering"

kill -TERM "$pid"
wait "$pid" || fail "first server: status $? after SIGTERM"
pid=

# Stopped: the same port is free again at once.
"$KEEL" serve --cartridge fleet --listen "127.0.0.1:$first" --store memory: 2> "$dir/log3" &
pid=$!
wait_port "$dir/log3"
[ "$port" = "$first" ] || fail "restarted on port $port, asked for $first"
[ "$(curl -s "http://127.0.0.1:$first/healthz")" = '{"status":"ok"}' ] ||
	fail "restarted server does not answer"
kill -TERM "$pid"
wait "$pid" || fail "restarted server: status $? after SIGTERM"
pid=
echo "ok"
