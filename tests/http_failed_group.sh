#!/usr/bin/env bash
# A group that fails leaves nothing behind, over HTTP on SQLite: a POST
# whose new tenant's recorded cartridge cannot be read (the store's
# tenant_cartridges table renamed away with the sqlite3 shell) is answered
# 500, and the events of it that came before the failure are not written
# with the next group: sent again, the first event is a duplicate, and the
# server lives on (docs/http.md, "Writes"; tests/mysql_http_failed_group.sh
# drops MariaDB's connection instead).
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

# ev TENANT ID MINUTE: one fleet event.
ev() {
	printf '{"specversion":"1.0","id":"%s","tenant":"%s","type":"fleet.vehicle.status_changed",' "$2" "$1"
	printf '"source":"test","time":"2024-05-01T10:%02d:00Z",' "$3"
	printf '"data":{"vehicle_id":"V-%s","status":"parked","reason":null}}\n' "$3"
}
# post: stdin as NDJSON; "status body" in $dir/answer.
post() {
	curl -s -o "$dir/body" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
		--data-binary @- "$url/v1/events" >"$dir/status" || true
	echo "$(cat "$dir/status") $(cat "$dir/body")" >"$dir/answer"
}
answered() { # STATUS TEXT: the last answer
	[ "$(cut -d' ' -f1 "$dir/answer")" = "$1" ] && grep -qF -- "$2" "$dir/answer" ||
		fail "expected $1 with $2, got: $(cat "$dir/answer"); log: $(cat "$dir/log")"
}

db=$dir/keel.db
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "sqlite:$db" 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port

{ ev a a-1 1; ev a a-2 2; ev a a-3 3; } | post
answered 200 '"accepted":3,'
sqlite3 "$db" "ALTER TABLE tenant_cartridges RENAME TO tenant_cartridges_away"
# a-4 goes into the group; b's record cannot be read: the group fails.
{ ev a a-4 4; ev b b-1 5; } | post
answered 500 'nothing was ingested'
sqlite3 "$db" "ALTER TABLE tenant_cartridges_away RENAME TO tenant_cartridges"
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
events=$("$KEEL" dump --store "sqlite:$db" | grep -c '"type":"event"')
[ "$events" = 5 ] || fail "the store holds $events events, want 5"
echo ok
