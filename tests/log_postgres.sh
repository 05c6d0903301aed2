#!/usr/bin/env bash
# The log into PostgreSQL (docs/log.md, docs/store-postgres.md): the store
# keeps log positions as MariaDB does (keel_log_positions, the same
# fencing), so two keel consume share a log's partitions into one
# PostgreSQL database and its dump is that of one keel ingest of the same
# events; --status reads the positions back; a consumer that takes a
# partition over resumes after the stored position.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/log_lib.sh"
needs_postgres
needs_nats
nats_start 1

"$KEEL" stream create "$servers" --stream pg --partitions 3 --lease 2000 >/dev/null
in=$dir/in.ndjson
"$KEEL" generate fleet --events 3000 --tenants 5 --seed 12 --late 0.05 --duplicates 0.03 \
	--output "$in"
head -n 1500 "$in" >"$dir/first"
tail -n +1501 "$in" >"$dir/second"
"$KEEL" publish "$dir/first" --to "$servers" --stream pg --quiet
reference "$in"
url=$($KEEL_TEST_PG_FRESH)
consumer_start p1 "$servers" --stream pg --store "$url" --cartridge fleet
consumer_start p2 "$servers" --stream pg --store "$url" --cartridge fleet
stored() { # the sum of the stored positions
	"$KEEL" consume "$servers" --stream pg --store "$url" --status >"$dir/status" 2>&1 &&
		awk 'NR > 1 && $4 != "-" { n += $4 } END { exit n < 1000 }' "$dir/status"
}
wait_until 60 stored || fail "nothing stored: $(cat "$dir/status")"
# one goes; the other takes its partitions and resumes after their positions
consumer_stop p1
"$KEEL" publish "$dir/second" --to "$servers" --stream pg --quiet
wait_until 60 caught_up pg --store "$url" || fail "not caught up: $(cat "$dir/status")"
consumer_stop p2
grep -q 'taken (token [0-9]*), resuming after seq [1-9]' "$dir/p2.log" ||
	fail "p2 took nothing over: $(cat "$dir/p2.log")"
same_dump "$url" "two consumers into PostgreSQL"
echo ok
