# identity.sh - an event is (tenant, source, id) (docs/semantics.md,
# "Events, the log and idempotency"), through the command line and over
# HTTP, on the store at a URL: sourced by cli_identity.sh (SQLite) and
# mysql_identity.sh (MariaDB), after scratch.sh.

# ev SOURCE ID STATUS MINUTE: a status change of vehicle V-1 of tenant
# acme, from SOURCE ("" for none) with ID.
ev() {
	local src=
	[ -n "$1" ] && src=",\"source\":\"$1\""
	printf '{"specversion":"1.0","id":"%s"%s,"tenant":"acme","type":"fleet.vehicle.status_changed","time":"2026-01-05T08:%02d:00Z","data":{"vehicle_id":"V-1","status":"%s","reason":null}}\n' \
		"$2" "$src" "$4" "$3"
}

# identity_cli URL: two producers' id "1", conflicting duplicates in one
# input and across runs, on the store at URL.
identity_cli() {
	local store=$1
	# Two producers both send id "1": both go in, and provenance tells
	# them apart.
	{ ev /a 1 available 0; ev /b 1 in_service 5; } >"$dir/two.ndjson"
	"$KEEL" ingest "$dir/two.ndjson" --cartridge fleet --store "$store" 2>"$dir/err" ||
		fail "two producers: exit $?: $(cat "$dir/err")"
	grep -q '^accepted 2, duplicates 0 (conflicting 0)' "$dir/err" ||
		fail "two producers: $(cat "$dir/err")"
	"$KEEL" dump --tenant acme --store "$store" >"$dir/two.dump"
	grep -qF '{"type":"event","tenant":"acme","source":"/a","id":"1",' "$dir/two.dump" ||
		fail "the dump lacks /a's event 1"
	grep -qF '{"type":"event","tenant":"acme","source":"/b","id":"1",' "$dir/two.dump" ||
		fail "the dump lacks /b's event 1"
	grep -qF '"value":"available","valid_from":"2026-01-05T08:00:00Z","valid_to":"2026-01-05T08:05:00Z","asserted_by":{"source":"/a","id":"1"},"closed_by":{"source":"/b","id":"1"}}' "$dir/two.dump" ||
		fail "the first status row does not name /a's and /b's events: $(grep status "$dir/two.dump")"
	"$KEEL" why acme vehicle:V-1 status --at 2026-01-05T08:06:00Z --json --store "$store" >"$dir/why" ||
		fail "why failed"
	grep -qF '"asserted_by":{"source":"/b","id":"1"},"closed_by":null,"event":{"source":"/b","id":"1",' "$dir/why" ||
		fail "why does not name /b's event: $(cat "$dir/why")"
	"$KEEL" why acme vehicle:V-1 status --at 2026-01-05T08:01:00Z --json --store "$store" >"$dir/why" ||
		fail "why failed"
	grep -qF '"event":{"source":"/a","id":"1","event_type":"fleet.vehicle.status_changed"' "$dir/why" ||
		fail "why does not find /a's event: $(cat "$dir/why")"

	# The same source and id with another body, in one input: skipped,
	# reported on stderr and in --rejects with both lines; exit 3.
	{ ev /c 7 available 10; ev /c 8 available 11; ev /c 7 retired 12; } >"$dir/conflict.ndjson"
	local rc=0
	"$KEEL" ingest "$dir/conflict.ndjson" --cartridge fleet --store "$store" \
		--rejects "$dir/rejects" 2>"$dir/err" || rc=$?
	[ "$rc" = 3 ] || fail "a conflicting duplicate exited $rc, not 3: $(cat "$dir/err")"
	grep -q '^accepted 2, duplicates 1 (conflicting 1)' "$dir/err" || fail "report: $(cat "$dir/err")"
	grep -qF 'keel ingest: line 3: event "7" from "/c": conflicting duplicate: its envelope differs from that of line 1' "$dir/err" ||
		fail "stderr does not name both lines: $(cat "$dir/err")"
	grep -qF '{"position":3,"source":"/c","id":"7","error":"line 3: event \"7\" from \"/c\": conflicting duplicate: its envelope differs from that of line 1","input":' "$dir/rejects" ||
		fail "the rejects file: $(cat "$dir/rejects")"
	[ "$(wc -l <"$dir/rejects")" = 1 ] || fail "the rejects file has more: $(cat "$dir/rejects")"

	# One batch an event: the first copy, committed in an earlier batch
	# of the same run, is still named by its line.
	{ ev /e 5 available 14; ev /e 6 available 14; ev /e 5 retired 15; } >"$dir/batch1.ndjson"
	rc=0
	"$KEEL" ingest "$dir/batch1.ndjson" --batch 1 --cartridge fleet --store "$store" 2>"$dir/err" || rc=$?
	[ "$rc" = 3 ] || fail "--batch 1: exited $rc, not 3: $(cat "$dir/err")"
	grep -qF 'keel ingest: line 3: event "5" from "/e": conflicting duplicate: its envelope differs from that of line 1' "$dir/err" ||
		fail "--batch 1: stderr does not name both lines: $(cat "$dir/err")"

	# Across runs: the first copy is already in the store; a plain
	# duplicate and another source's same id are not conflicts.
	{ ev /c 7 maintenance 13; ev /c 8 available 11; ev /d 7 maintenance 13; } >"$dir/again.ndjson"
	rc=0
	"$KEEL" ingest "$dir/again.ndjson" --cartridge fleet --store "$store" 2>"$dir/err" || rc=$?
	[ "$rc" = 3 ] || fail "a conflict with the store exited $rc, not 3: $(cat "$dir/err")"
	grep -q '^accepted 1, duplicates 2 (conflicting 1)' "$dir/err" || fail "report: $(cat "$dir/err")"
	grep -qE 'keel ingest: line 1: event "7" from "/c": conflicting duplicate: its envelope differs from that of the event already in the store \(seq [0-9]+\)' "$dir/err" ||
		fail "stderr does not name the logged event: $(cat "$dir/err")"
	# the logged copy stays what it was
	"$KEEL" dump --tenant acme --store "$store" >"$dir/after.dump"
	grep -F '"source":"/c","id":"7"' "$dir/after.dump" | grep -qF '"status":"available"' ||
		fail "the logged envelope of /c's 7 changed"
	grep -qF '"retired"' "$dir/after.dump" && fail "a conflicting duplicate went in"
	grep -qF '{"type":"event","tenant":"acme","source":"/d","id":"7",' "$dir/after.dump" ||
		fail "/d's event 7 did not go in"
	return 0
}

# identity_http URL: the same over HTTP, against a keel serve of URL.
identity_http() {
	local store=$1
	"$KEEL" serve --listen 127.0.0.1:0 --store "$store" --cartridge fleet 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	local url=http://127.0.0.1:$port
	post() { # file -> status, body in $dir/out
		curl -s -o "$dir/out" -w '%{http_code}' -H "Content-Type: application/x-ndjson" \
			--data-binary "@$1" "$url/v1/events"
	}
	{ ev /h1 1 available 20; ev /h2 1 in_service 21; } >"$dir/h.ndjson"
	[ "$(post "$dir/h.ndjson")" = 200 ] || fail "post: $(cat "$dir/out")"
	grep -qF '"accepted":2,"duplicates":0,"conflicting":0' "$dir/out" ||
		fail "two producers over HTTP: $(cat "$dir/out")"
	# a conflict within the request, one with the store, a plain duplicate
	{ ev /h3 9 available 22; ev /h3 9 retired 23; ev /h1 1 maintenance 24; ev /h2 1 in_service 21; } >"$dir/hc.ndjson"
	[ "$(post "$dir/hc.ndjson")" = 200 ] || fail "post: $(cat "$dir/out")"
	grep -qF '"accepted":1,"duplicates":3,"conflicting":2' "$dir/out" || fail "answer: $(cat "$dir/out")"
	grep -qF '"conflicts":[{"index":1,"source":"/h3","id":"9","error":"conflicting duplicate: its envelope differs from that of index 0"},{"index":2,"source":"/h1","id":"1","error":"conflicting duplicate: its envelope differs from that of the event already in the store (seq ' "$dir/out" ||
		fail "the answer does not list the conflicts: $(cat "$dir/out")"
	curl -s "$url/v1/tenants/acme/entities/vehicle:V-1/why?predicate=status&at=2026-01-05T08:20:30Z" >"$dir/why"
	grep -qF '"asserted_by":{"source":"/h1","id":"1"},"closed_by":{"source":"/h2","id":"1"},"event":{"source":"/h1","id":"1",' "$dir/why" ||
		fail "why over HTTP: $(cat "$dir/why")"
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve exited $?"
	pid=
}
