# remember.sh - what tests/cli_remember.sh (SQLite) and
# tests/mysql_remember.sh (MariaDB) run on a store of their kind: each
# tenant's cartridge is recorded with its first events, used when none is
# given (ingest, ingest --replay, replay, serve), and any other refused
# unless a replay is told to change it (docs/cartridges.md, "The recorded
# cartridge"). Sourced after lib.sh.

# A shop: orders placed and shipped. Version 2 names the fact "state".
shop_cartridge() { # VERSION PREDICATE
	printf '{"cartridge":"shop","version":"%s","events":{"shop.order.placed":[{"op":"entity","subject":"order:{/data/order}","kind":"order"},{"op":"fact","subject":"order:{/data/order}","predicate":"%s","value":{"const":"placed"}}],"shop.order.shipped":[{"op":"fact","subject":"order:{/data/order}","predicate":"%s","value":{"const":"shipped"}}]}}\n' "$1" "$2" "$2"
}
shop_event() { # ID TYPE ORDER MINUTE [TENANT]
	printf '{"specversion":"1.0","id":"%s","source":"/shop","type":"shop.order.%s","time":"2026-03-01T10:%02d:00Z","tenant":"%s","data":{"order":"%s"}}\n' \
		"$1" "$2" "$4" "${5:-shop}" "$3"
}
shop_cartridge 1 status >"$dir/shop1.json"
shop_cartridge 2 state >"$dir/shop2.json"
# The same cartridge reformatted: the same content, the same hash.
sed 's/,/, /g' "$dir/shop1.json" >"$dir/shop1-spaced.json"
{ shop_event o1 placed 1 1; shop_event o2 placed 2 2; } >"$dir/first.ndjson"
{ shop_event o3 shipped 1 3; shop_event o4 placed 3 4; } >"$dir/second.ndjson"
shop_event o5 shipped 2 5 >"$dir/third.ndjson"
shop_event o6 shipped 3 6 >"$dir/fourth.ndjson"

# remember_suite URL: the whole story on a new, empty store at URL.
remember_suite() {
	local url=$1

	# A new store and no --cartridge: a usage error naming the way out,
	# and nothing written.
	expect 2 "$KEEL" ingest "$dir/first.ndjson" --store "$url"
	contains err 'tenant "shop" has no recorded cartridge: name one with --cartridge (the built-in fleet runs only when named: --cartridge fleet)'
	contains err "accepted 0, duplicates 0 (conflicting 0), unhandled 0, rejected 1"
	expect 0 "$KEEL" dump --store "$url"
	empty out
	# So for a bulk load.
	expect 2 "$KEEL" ingest "$dir/first.ndjson" --replay --store "$url"
	contains err 'tenant "shop" has no recorded cartridge'

	# --cartridge twice is a usage error for every command that takes it.
	expect 2 "$KEEL" ingest "$dir/first.ndjson" --store "$url" --cartridge fleet --cartridge "$dir/shop1.json"
	contains err "--cartridge given twice"
	expect 2 "$KEEL" replay --tenant shop --store "$url" --cartridge fleet --cartridge fleet
	contains err "--cartridge given twice"
	expect 2 "$KEEL" serve --store "$url" --cartridge fleet --cartridge fleet
	contains err "--cartridge given twice"

	# The first ingest records the shop cartridge ...
	expect 0 "$KEEL" ingest "$dir/first.ndjson" --store "$url" --cartridge "$dir/shop1.json"
	contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	# ... which later ingests use without being told: handled, not
	# "unhandled 2" as under the built-in fleet.
	expect 0 "$KEEL" ingest "$dir/second.ndjson" --store "$url"
	contains err "accepted 2, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" show shop order:1 --json --store "$url"
	contains out '"status":{"value":"shipped"'
	# The same cartridge, reformatted, is the same cartridge.
	expect 0 "$KEEL" ingest "$dir/second.ndjson" --store "$url" --cartridge "$dir/shop1-spaced.json"
	contains err "duplicates 2"

	# Another cartridge is refused at the tenant's first event, naming
	# the tenant and both cartridges; nothing of it is written.
	expect 2 "$KEEL" ingest "$dir/third.ndjson" --store "$url" --cartridge fleet
	contains err 'tenant "shop" is recorded with cartridge shop 1 (sha256:'
	contains err ', not fleet 1 (sha256:'
	contains err "keel replay --tenant shop --cartridge ... --change-cartridge"
	expect 0 "$KEEL" show shop order:2 --json --store "$url"
	contains out '"value":"placed"'
	lacks out "shipped"
	# So is another version of it, in every mode.
	expect 2 "$KEEL" ingest "$dir/third.ndjson" --store "$url" --cartridge "$dir/shop2.json"
	contains err 'recorded with cartridge shop 1 (sha256:'
	contains err ', not shop 2 (sha256:'

	# Replay: the recorded cartridge without a flag; another one only
	# with --change-cartridge (a dry run may compare it), which records it.
	expect 0 "$KEEL" replay --tenant shop --store "$url"
	expect 2 "$KEEL" replay --tenant shop --store "$url" --cartridge "$dir/shop2.json"
	contains err 'tenant "shop" is recorded with cartridge shop 1'
	contains err "add --change-cartridge"
	expect 2 "$KEEL" replay --tenant shop --store "$url" --change-cartridge
	contains err "--change-cartridge needs --cartridge"
	expect 0 "$KEEL" replay --tenant shop --store "$url" --cartridge "$dir/shop2.json" --dry-run
	expect 0 "$KEEL" ingest "$dir/third.ndjson" --store "$url" --cartridge "$dir/shop1.json"
	expect 0 "$KEEL" replay --tenant shop --store "$url" --cartridge "$dir/shop2.json" --change-cartridge
	expect 0 "$KEEL" show shop order:2 --json --store "$url"
	contains out '"state":{"value":"shipped"'
	lacks out '"status"'
	# Now version 2 is the tenant's: used without --cartridge, version 1
	# refused.
	expect 2 "$KEEL" ingest "$dir/fourth.ndjson" --store "$url" --cartridge "$dir/shop1.json"
	contains err 'recorded with cartridge shop 2 (sha256:'
	expect 0 "$KEEL" ingest "$dir/fourth.ndjson" --store "$url"
	contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" show shop order:3 --json --store "$url"
	contains out '"state":{"value":"shipped"'

	# A second tenant in the same input: the new one records the given
	# cartridge; without one, it stops the run at its first event.
	{ shop_event b1 placed 1 1 bazaar; } >"$dir/bazaar.ndjson"
	expect 2 "$KEEL" ingest "$dir/bazaar.ndjson" --store "$url"
	contains err 'line 1: event "b1": tenant "bazaar" has no recorded cartridge'
	expect 0 "$KEEL" ingest "$dir/bazaar.ndjson" --store "$url" --cartridge "$dir/shop1.json"
	contains err "unhandled 0"

	# keel serve without --cartridge: each tenant's recorded one; an event
	# of a tenant with none is rejected in the answer (422 alone).
	"$KEEL" serve --listen 127.0.0.1:0 --store "$url" 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	local http=http://127.0.0.1:$port code
	shop_event o7 placed 7 7 >"$dir/post.json"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/cloudevents+json' \
		--data-binary "@$dir/post.json" "$http/v1/events")
	[ "$code" = 200 ] || fail "POST of a recorded tenant: $code $(cat "$dir/out")"
	contains out '"accepted":1'
	contains out '"unhandled":0'
	shop_event n1 placed 1 1 newcomer >"$dir/post.json"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/cloudevents+json' \
		--data-binary "@$dir/post.json" "$http/v1/events")
	[ "$code" = 422 ] || fail "POST of a tenant without a cartridge: $code $(cat "$dir/out")"
	contains out 'tenant \"newcomer\" has no recorded cartridge'
	contains out '"accepted":0'
	# In a batch it is rejected alone; the recorded tenant's event goes in.
	{ shop_event n2 placed 2 2 newcomer; shop_event o8 placed 8 8; } >"$dir/post.ndjson"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
		--data-binary "@$dir/post.ndjson" "$http/v1/events")
	[ "$code" = 200 ] || fail "POST of a batch: $code $(cat "$dir/out")"
	contains out '"accepted":1'
	contains out '{"index":0,"id":"n2","error":"index 0: event \"n2\": tenant \"newcomer\" has no recorded cartridge'
	# A cartridge recorded meanwhile by another process: the server sees it.
	shop_event n3 placed 3 3 newcomer >"$dir/newcomer.ndjson"
	expect 0 "$KEEL" ingest "$dir/newcomer.ndjson" --store "$url" --cartridge "$dir/shop1.json"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/x-ndjson' \
		--data-binary "@$dir/post.ndjson" "$http/v1/events")
	[ "$code" = 200 ] || fail "POST after the record: $code $(cat "$dir/out")"
	contains out '"accepted":1,"duplicates":1'
	contains out '"unhandled":0,"rejected":[]'
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve exited $?"
	pid=
	expect 0 "$KEEL" show shop order:8 --json --store "$url"
	contains out '"state":{"value":"placed"'

	# keel serve given a cartridge: it records it for new tenants and
	# refuses it for tenants recorded with another.
	"$KEEL" serve --listen 127.0.0.1:0 --store "$url" --cartridge fleet 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	http=http://127.0.0.1:$port
	shop_event o9 placed 9 9 >"$dir/post.json"
	code=$(curl -s -o "$dir/out" -w '%{http_code}' -H 'Content-Type: application/cloudevents+json' \
		--data-binary "@$dir/post.json" "$http/v1/events")
	[ "$code" = 422 ] || fail "POST of a tenant recorded with another: $code $(cat "$dir/out")"
	contains out 'tenant \"shop\" is recorded with cartridge shop 2'
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve exited $?"
	pid=
}

# remember_migrated URL: a store an older Keel wrote (tests/data/migrate)
# has no record: without --cartridge it is a usage error; the first
# ingest or replay that names one records it.
remember_migrated() {
	local url=$1 v1=${KEEL_TEST_DATA:-$src/tests/data}/migrate/v1.ndjson
	grep '"tenant":"tenant-00"' "$v1" | sed 's/"id":"ev-/"id":"again-/' | head -5 >"$dir/more.ndjson"
	expect 2 "$KEEL" ingest "$dir/more.ndjson" --store "$url"
	contains err 'tenant "tenant-00" has no recorded cartridge'
	expect 2 "$KEEL" replay --tenant tenant-01 --store "$url"
	contains err 'tenant "tenant-01" has no recorded cartridge'
	expect 0 "$KEEL" ingest "$dir/more.ndjson" --store "$url" --cartridge fleet
	contains err "accepted 5, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" replay --tenant tenant-01 --store "$url" --cartridge fleet
	# Recorded now: no flag needed, another refused.
	sed 's/"id":"again-/"id":"third-/' "$dir/more.ndjson" >"$dir/more3.ndjson"
	expect 0 "$KEEL" ingest "$dir/more3.ndjson" --store "$url"
	contains err "accepted 5, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
	expect 0 "$KEEL" replay --tenant tenant-01 --store "$url"
	expect 2 "$KEEL" replay --tenant tenant-01 --store "$url" --cartridge "$dir/shop1.json"
	contains err 'tenant "tenant-01" is recorded with cartridge fleet 1'
}
