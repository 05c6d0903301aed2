#!/usr/bin/env bash
# A group that fails leaves nothing behind, over HTTP on MariaDB: the
# writer's connection is killed (KILL CONNECTION) and the next POST holds
# an event of a known tenant, then the first event of a new tenant, whose
# recorded cartridge is read on the dead connection: the POST is answered
# 500, and the event before the failure is not written with the next group:
# sent again, the first event is a duplicate, and the server lives on
# (tests/http_failed_group.sh does the same on SQLite). Needs the suite's
# MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql

ev() { # TENANT ID MINUTE: one fleet event
	printf '{"specversion":"1.0","id":"%s","tenant":"%s","type":"fleet.vehicle.status_changed",' "$2" "$1"
	printf '"source":"test","time":"2024-05-01T10:%02d:00Z",' "$3"
	printf '"data":{"vehicle_id":"V-%s","status":"parked","reason":null}}\n' "$3"
}
post() { # stdin as NDJSON; "status body" in $dir/answer
	curl -s -o "$dir/body" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
		--data-binary @- "$url/v1/events" >"$dir/status" || true
	echo "$(cat "$dir/status") $(cat "$dir/body")" >"$dir/answer"
}
answered() { # STATUS TEXT: the last answer
	[ "$(cut -d' ' -f1 "$dir/answer")" = "$1" ] && grep -qF -- "$2" "$dir/answer" ||
		fail "expected $1 with $2, got: $(cat "$dir/answer"); log: $(cat "$dir/log")"
}
sql() { # SQL: its rows, without the header
	"$KEEL_MYSQL_SCRIPT" sql "$KEEL_TEST_MYSQL_DIR" "$1" | tail -n +2
}

store=$($KEEL_TEST_MYSQL_FRESH)
db_name=${store##*/}
db_name=${db_name%%\?*}
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$store" --threads 2 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port

{ ev a a-1 1; ev a a-2 2; ev a a-3 3; } | post
answered 200 '"accepted":3,'
# The server opens its writer's connection first, then its readers'.
conns="SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '$db_name' ORDER BY ID"
writer=$(sql "$conns LIMIT 1")
[ -n "$writer" ] || fail "no connection of the server's"
sql "KILL CONNECTION $writer"
gone() { ! sql "$conns" | grep -qx "$writer"; }
wait_until 10 gone || fail "connection $writer was not killed"
# a-4 goes into the group; b's record is read on the dead connection.
{ ev a a-4 4; ev b b-1 5; } | post
answered 500 'nothing was ingested'
grep -q 'lost the connection' "$dir/log" || fail "log: $(cat "$dir/log")"
ev a a-1 1 | post
answered 200 '"accepted":0,"duplicates":1,'
kill -0 "$pid" 2>/dev/null || fail "the server died: $(cat "$dir/log")"
# a-4 was never written: sent again, it and b-1 go in, once.
{ ev a a-4 4; ev b b-1 5; } | post
answered 200 '"accepted":2,"duplicates":0,'
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "serve exited $rc: $(cat "$dir/log")"
events=$("$KEEL" dump --store "$store" | grep -c '"type":"event"')
[ "$events" = 5 ] || fail "the store holds $events events, want 5"
echo ok
