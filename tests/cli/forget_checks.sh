# forget_checks.sh - what tests/cli_forget.sh (SQLite) and
# tests/mysql_forget.sh (MariaDB) check alike about keel forget
# (docs/semantics.md, "Forgetting"), through the real binary and the real
# HTTP server. Sourced after lib.sh; the caller defines
#   store_bytes FILE   writes everything the store holds, as its files or
#                      a dump of its database, into FILE
# and calls forget_cli URL, then forget_http URL.

# The input: tenant-00, in which the vehicle of the first trip ($veh, its
# id $vid) is forgotten by the command line and two others ($h1, $h2) over
# HTTP, and a second tenant whose vehicles are renamed (W-...) so that no
# string of it is one of theirs.
forget_input() {
	"$KEEL" generate fleet --events 3000 --tenants 1 --seed 5 --late 0.1 \
		--duplicates 0.05 >"$dir/in.ndjson"
	"$KEEL" generate fleet --events 1000 --tenants 1 --seed 6 |
		sed -e 's/tenant-00/tenant-xx/g' -e 's/"V-/"W-/g' >>"$dir/in.ndjson"
	# The first trip: the trip is another subject, and stays.
	local first
	first=$(grep '"fleet.trip.started"' "$dir/in.ndjson" | head -n 1)
	vid=$(sed -n 's/.*"vehicle_id":"\([^"]*\)".*/\1/p' <<<"$first")
	trip=$(sed -n 's/.*"trip_id":"\([^"]*\)".*/\1/p' <<<"$first")
	dest=$(sed -n 's/.*"destination":"\([^"]*\)".*/\1/p' <<<"$first")
	[ -n "$vid" ] && [ -n "$trip" ] && [ -n "$dest" ] || fail "no trip in the input"
	veh=vehicle:$vid
	vin=$(grep '"fleet.vehicle.registered"' "$dir/in.ndjson" | grep "\"vehicle_id\":\"$vid\"" |
		sed -n 's/.*"vin":"\([^"]*\)".*/\1/p' | head -n 1)
	[ -n "$vin" ] || fail "no registration of $vid in the input"
	local others
	others=$(sed -n 's/.*"tenant":"tenant-00".*"vehicle_id":"\(V-[0-9]*\)".*/\1/p' \
		"$dir/in.ndjson" | grep -vx "$vid" | sort -u | head -n 2)
	h1=$(sed -n 1p <<<"$others")
	h2=$(sed -n 2p <<<"$others")
	[ -n "$h1" ] && [ -n "$h2" ] || fail "fewer than three vehicles in the input"
}

# count_in FILE TEXT: how many times TEXT occurs in FILE (bytes, binary too).
count_in() {
	grep -aoF -- "$2" "$1" | wc -l
}

# The rows of the vehicles other than $vid, as the dump has them.
other_vehicles() {
	grep -v '"type":"event"' "$1" | grep '"subject":"vehicle:' | grep -v "$vid" || true
}

forget_cli() {
	local url=$1
	local db=(--store "$url")
	expect 0 "$KEEL" ingest "$dir/in.ndjson" "${db[@]}" --cartridge fleet --batch 101
	expect 0 "$KEEL" dump "${db[@]}" --output "$dir/before.ndjson"
	expect 0 "$KEEL" dump --tenant tenant-xx "${db[@]}" --output "$dir/xx-before.ndjson"
	expect 0 "$KEEL" show tenant-00 "trip:$trip" "${db[@]}" --json
	contains out "\"destination\":{\"value\":\"$dest\""
	# A search at the present: on SQLite it folds the rows into the
	# current rows, which then hold the subject too.
	expect 0 "$KEEL" search tenant-00 status available "${db[@]}"
	# The checks below can fail: the strings are there before.
	store_bytes "$dir/bytes-before"
	[ "$(count_in "$dir/bytes-before" "$vid")" -gt 0 ] || fail "$vid not in the store before"
	[ "$(count_in "$dir/bytes-before" "$vin")" -gt 0 ] || fail "the VIN not in the store before"

	# Another cartridge than the tenant's recorded one is refused, naming
	# both, before it reads the log (it would find the subject nowhere).
	expect 2 "$KEEL" forget tenant-00 "$veh" "${db[@]}" \
		--cartridge "$(cd "$data/.." && pwd)/cartridge/shop.json"
	contains err "tenant \"tenant-00\" is recorded with cartridge fleet"
	contains err ", not shop"
	# No --cartridge: the tenant's recorded one (fleet, from the ingest).
	expect 0 "$KEEL" forget tenant-00 "$veh" "${db[@]}"
	contains out "forgot \"$veh\" in tenant \"tenant-00\": "
	contains out " by user:"
	grep -Eq 'forgot .*: [1-9][0-9]* events redacted, [1-9][0-9]* rows removed' "$dir/out" ||
		fail "forget's report: $(cat "$dir/out")"

	# show, history and why say it was forgotten, when and by whom.
	for q in "show tenant-00 $veh" "history tenant-00 $veh" \
		"why tenant-00 $veh status"; do
		# shellcheck disable=SC2086
		expect 1 "$KEEL" $q "${db[@]}"
		contains err "entity \"$veh\" in tenant \"tenant-00\" was forgotten at 20"
		contains err " by user:"
	done

	# The graph is a replay's: replaying now changes nothing.
	expect 0 "$KEEL" dump "${db[@]}" --output "$dir/after.ndjson"
	expect 0 "$KEEL" replay --tenant tenant-00 "${db[@]}" --cartridge fleet
	contains out "(no changes)"
	expect 0 "$KEEL" dump "${db[@]}" --output "$dir/replayed.ndjson"
	cmp -s "$dir/after.ndjson" "$dir/replayed.ndjson" ||
		fail "a replay after forget changed the graph: $(diff "$dir/after.ndjson" "$dir/replayed.ndjson" | head -4)"
	# Nothing names it, not even the logged envelopes; what else the events
	# said is gone too (the VIN), what other subjects need is kept.
	[ "$(count_in "$dir/after.ndjson" "$vid")" -eq 0 ] || fail "the dump still names $vid"
	[ "$(count_in "$dir/after.ndjson" "$vin")" -eq 0 ] || fail "the dump still holds the VIN"
	[ "$(count_in "$dir/after.ndjson" '"keelredacted":true')" -gt 0 ] ||
		fail "no redacted envelope in the dump"
	expect 0 "$KEEL" show tenant-00 "trip:$trip" "${db[@]}" --json
	contains out "\"destination\":{\"value\":\"$dest\""
	lacks out "$vid"
	# The other vehicles and the other tenant are as they were.
	[ "$(other_vehicles "$dir/before.ndjson")" = "$(other_vehicles "$dir/after.ndjson")" ] ||
		fail "other vehicles' rows changed"
	[ -n "$(other_vehicles "$dir/after.ndjson")" ] || fail "no other vehicles to compare"
	expect 0 "$KEEL" dump --tenant tenant-xx "${db[@]}" --output "$dir/xx-after.ndjson"
	cmp -s "$dir/xx-before.ndjson" "$dir/xx-after.ndjson" || fail "the other tenant changed"

	# The store's bytes hold neither the subject nor its data.
	store_bytes "$dir/bytes-after"
	[ "$(count_in "$dir/bytes-after" "$vid")" -eq 0 ] ||
		fail "the store still holds $vid ($(count_in "$dir/bytes-after" "$vid") times)"
	[ "$(count_in "$dir/bytes-after" "$vin")" -eq 0 ] || fail "the store still holds the VIN"

	# A redelivery is a plain duplicate: it brings nothing back.
	expect 0 "$KEEL" ingest "$dir/in.ndjson" "${db[@]}" --cartridge fleet
	contains err "accepted 0, "
	contains err "(conflicting 0)"
	expect 0 "$KEEL" dump "${db[@]}" --output "$dir/again.ndjson"
	cmp -s "$dir/after.ndjson" "$dir/again.ndjson" || fail "re-ingesting changed the store"

	# Again: it is gone already; an unknown subject is not found.
	expect 1 "$KEEL" forget tenant-00 "$veh" "${db[@]}" --cartridge fleet
	contains err "was forgotten at"
	expect 1 "$KEEL" forget tenant-00 vehicle:nobody "${db[@]}" --cartridge fleet
	contains err "nothing in tenant \"tenant-00\" names subject \"vehicle:nobody\""
	expect 2 "$KEEL" forget tenant-00 "${db[@]}"
}

# HTTP: DELETE with each kind of token.
forget_http() {
	local url=$1
	"$KEEL" token new --all >"$dir/t-all" 2>/dev/null
	"$KEEL" token new --tenant tenant-00 >"$dir/t-plain" 2>/dev/null
	"$KEEL" token new --tenant tenant-00 --forget >"$dir/t-forget" 2>/dev/null
	"$KEEL" token new --tenant tenant-xx --forget >"$dir/t-xx" 2>/dev/null
	grep -q ' tenant-00 forget$' "$dir/t-forget" || fail "token line: $(cat "$dir/t-forget")"
	for t in all plain forget xx; do sed -n 2p "$dir/t-$t"; done >"$dir/tokens"
	# A tenant recorded with another cartridge than the server runs.
	local shop
	shop=$(cd "$data/.." && pwd)/cartridge
	grep '"id":"o1"' "$shop/shop.in" >"$dir/shop.ndjson"
	expect 0 "$KEEL" ingest "$dir/shop.ndjson" --store "$url" --cartridge "$shop/shop.json"
	"$KEEL" serve --listen 127.0.0.1:0 --store "$url" --tokens "$dir/tokens" \
		--cartridge fleet 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	local base=http://127.0.0.1:$port/v1/tenants
	del() { # token-file subject -> status, body in $dir/body
		curl -s -o "$dir/body" -w '%{http_code}' -X DELETE \
			-H "Authorization: Bearer $(sed -n 1p "$dir/t-$1")" "$base/tenant-00/entities/$2"
	}
	get() {
		curl -s -o "$dir/body" -w '%{http_code}' \
			-H "Authorization: Bearer $(sed -n 1p "$dir/t-$1")" "$base/tenant-00/entities/$2"
	}
	[ "$(get all vehicle:$h1)" = 200 ] || fail "$h1 is not there to forget"
	[ "$(del plain vehicle:$h1)" = 403 ] || fail "a plain tenant token forgot: $(cat "$dir/body")"
	grep -qF 'forget\" right' "$dir/body" || fail "403 body: $(cat "$dir/body")"
	[ "$(del xx vehicle:$h1)" = 403 ] || fail "another tenant's forget token forgot"
	[ "$(get all vehicle:$h1)" = 200 ] || fail "a refused DELETE forgot"
	[ "$(del forget vehicle:$h1)" = 200 ] || fail "forget-right DELETE: $(cat "$dir/body")"
	grep -q '"forgotten":true' "$dir/body" || fail "DELETE body: $(cat "$dir/body")"
	grep -q "\"forgotten_by\":\"token:sha256:$(sed -n 2p "$dir/t-forget" | cut -c8-23)\"" \
		"$dir/body" || fail "forgotten_by: $(cat "$dir/body")"
	[ "$(get plain vehicle:$h1)" = 410 ] || fail "GET after forget: $(cat "$dir/body")"
	grep -q 'was forgotten at 20[^"]* by token:sha256:' "$dir/body" || fail "410 body: $(cat "$dir/body")"
	[ "$(curl -s -o "$dir/body" -w '%{http_code}' -H "Authorization: Bearer $(sed -n 1p "$dir/t-all")" \
		"$base/tenant-00/entities/vehicle:$h1/why?predicate=status")" = 410 ] || fail "why after forget"
	[ "$(del all vehicle:$h1)" = 410 ] || fail "forgetting twice: $(cat "$dir/body")"
	[ "$(del all vehicle:nobody)" = 404 ] || fail "unknown subject: $(cat "$dir/body")"
	[ "$(curl -s -o "$dir/body" -w '%{http_code}' -X DELETE \
		-H "Authorization: Bearer $(sed -n 1p "$dir/t-all")" "$base/s/entities/order:1")" = 409 ] ||
		fail "DELETE with the server's cartridge not the tenant's: $(cat "$dir/body")"
	grep -qF 'tenant \"s\" is recorded with cartridge shop' "$dir/body" ||
		fail "409 body: $(cat "$dir/body")"
	[ "$(del all vehicle:$h2)" = 200 ] || fail "all-tenants DELETE: $(cat "$dir/body")"
	# Answered: the bytes are gone while the server still runs.
	store_bytes "$dir/bytes-http"
	[ "$(count_in "$dir/bytes-http" "$h1")" -eq 0 ] || fail "the store still holds $h1"
	[ "$(count_in "$dir/bytes-http" "$h2")" -eq 0 ] || fail "the store still holds $h2"
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve exited $?"
	pid=
}
