#!/usr/bin/env bash
# The log's table (docs/scaling.md), side by side in one run on this
# machine, every server private and on loopback:
#   1. keel publish against raw publishing of the same bytes (bench_log),
#      into an R1 log; then two keel publish at once (half the file each)
#      into one log against one keel publish of the whole file (each
#      publish names its partition's message before it, so publishers of
#      the same partitions refuse each other's: docs/log.md, "Order");
#   2. keel serve --forward, batched POSTs (bench_http's load generator,
#      1000 events a POST), into an R1 log on one server and an R3 log on a
#      three-node cluster;
#   3. one keel consume into MariaDB against keel ingest of the same file
#      into the same server;
#   4. two consumers against one (the same log, fresh databases), beside
#      their limit: keel ingest --workers 2 (two connections, no log)
#      against one connection;
#   5. two consumers writing through a store map to two MariaDB servers
#      against two consumers into one;
#   6. where it stops: the same number of events, all of one tenant, two
#      consumers against one (a tenant is in one partition, so the second
#      consumer has nothing of it to do).
# Usage: bench/bench_log.sh BUILD_DIR [EVENTS]   (default 200000)
set -euo pipefail
build=${1:?usage: bench_log.sh BUILD_DIR [EVENTS]}
events=${2:-200000}
keel=$build/keel
src=$(cd "$(dirname "$0")/.." && pwd)
nats=$src/scripts/nats-test-cluster
maria=$src/scripts/mariadb-test-server
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-log.XXXXXX")
pids=()
cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -d "$dir/r1" ] && "$nats" stop "$dir/r1" >/dev/null
	[ -d "$dir/r3" ] && "$nats" stop "$dir/r3" >/dev/null
	[ -d "$dir/db" ] && "$maria" stop "$dir/db" >/dev/null
	[ -d "$dir/db2" ] && "$maria" stop "$dir/db2" >/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

r1=$("$nats" start "$dir/r1" 1)
r3=$("$nats" start "$dir/r3" 3)
"$maria" start "$dir/db" >/dev/null
"$maria" start "$dir/db2" >/dev/null
"$keel" generate fleet --events "$events" --tenants 16 --seed 1 --output "$dir/in.ndjson"
"$keel" generate fleet --events "$events" --tenants 1 --seed 2 --output "$dir/one.ndjson"
parts=4
for log in raw kp one two c1 c2 cm t1 t2; do
	# a short lease: the second consumer gets its share within a second
	"$keel" stream create "$r1" --stream "$log" --partitions "$parts" --lease 2000 >/dev/null
done
"$keel" stream create "$r1" --stream fw --partitions "$parts" >/dev/null
"$keel" stream create "$r3" --stream fw3 --partitions "$parts" --replicas 3 >/dev/null

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $events fleet events, 16 tenants, $parts partitions"
echo
echo "| what | events | events/s | ratio |"
echo "|---|---|---|---|"
"$build/bench/bench_log" "$r1" raw kp "$dir/in.ndjson" "$parts"
t0=$(now)
"$keel" publish "$dir/in.ndjson" --to "$r1" --stream one --quiet
t1=$(now)
onepub=$(rate "$events" "$t0" "$t1")
echo "| keel publish, the whole file (the command) | $events | $onepub | 1.00 |"
split -n l/2 -d "$dir/in.ndjson" "$dir/half."
t0=$(now)
"$keel" publish "$dir/half.00" --to "$r1" --stream two --quiet &
half=$!
"$keel" publish "$dir/half.01" --to "$r1" --stream two --quiet
wait "$half"
t1=$(now)
twopub=$(rate "$events" "$t0" "$t1")
echo "| two keel publish at once into the same partitions, half each | $events | $twopub | $(awk -v a="$twopub" -v b="$onepub" 'BEGIN { printf "%.2f", a / b }') (of one) |"

# serve --forward: bench_http's batches against a server run as a process
forward() { # forward SERVERS LOG LABEL
	"$keel" serve --listen 127.0.0.1:0 --store "sqlite:$dir/reads-$2.db" --forward "$1" \
		--stream "$2" --quiet 2>"$dir/serve-$2.log" &
	local p=$! port=
	pids+=("$p")
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$dir/serve-$2.log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	"$build/bench/bench_http" --port "$port" --only "batch 1000 memory" --events "$events" \
		>"$dir/http-$2.out"
	local r
	r=$(awk -F'|' '/^\| batch 1000 / { gsub(/ /, "", $7); print $7 }' "$dir/http-$2.out")
	echo "| keel serve --forward, POSTs of 1000, $3 | $events | $r | |"
	kill "$p"
	wait "$p" 2>/dev/null || true
}
forward "$r1" fw "R1"
forward "$r3" fw3 "R3 (three nodes on this machine)"

# one consumer against keel ingest into the same server
"$keel" publish "$dir/in.ndjson" --to "$r1" --stream c1 --quiet
"$keel" publish "$dir/in.ndjson" --to "$r1" --stream c2 --quiet
"$keel" publish "$dir/in.ndjson" --to "$r1" --stream cm --quiet
"$keel" publish "$dir/one.ndjson" --to "$r1" --stream t1 --quiet
"$keel" publish "$dir/one.ndjson" --to "$r1" --stream t2 --quiet
fresh() { "$maria" fresh "$dir/db"; }
url=$(fresh)
t0=$(now)
"$keel" ingest "$dir/in.ndjson" --cartridge fleet --quiet --store "$url"
t1=$(now)
ingest=$(rate "$events" "$t0" "$t1")
echo "| keel ingest into MariaDB (one connection) | $events | $ingest | 1.00 |"
# the limit for two consumers: the same server taking two writers at once
# without any log, keel ingest's tenants split over two connections
url=$(fresh)
t0=$(now)
"$keel" ingest "$dir/in.ndjson" --cartridge fleet --quiet --workers 2 --store "$url"
t1=$(now)
ingest2=$(rate "$events" "$t0" "$t1")
echo "| keel ingest --workers 2 into MariaDB (two connections: the limit for two consumers) | $events | $ingest2 | $(awk -v a="$ingest2" -v b="$ingest" 'BEGIN { printf "%.2f", a / b }') (of one) |"

caught_up() { # caught_up LOG STORE_OPTION...
	local log=$1
	shift
	"$keel" consume "$r1" --stream "$log" "$@" --status 2>/dev/null |
		awk 'NR > 1 { if ($4 != $5) bad = 1 } END { exit bad }'
}
consume() { # consume LOG N [map]: N consumers into a fresh database (or a
	# store map of fresh databases on the two servers); prints events/s
	local url i t0 t1 where
	url=$(fresh)
	# the schema made first, so that the consumers do not race to make it
	"$keel" stats --store "$url" >/dev/null 2>&1 || true
	where=(--store "$url")
	if [ "${3:-}" = map ]; then
		local url2
		url2=$("$maria" fresh "$dir/db2")
		"$keel" stats --store "$url2" >/dev/null 2>&1 || true
		printf '0-1 %s\n2-3 %s\n' "$url" "$url2" >"$dir/map"
		where=(--store-map "$dir/map")
	fi
	local cp=()
	t0=$(now)
	for i in $(seq 1 "$2"); do
		"$keel" consume "$r1" --stream "$1" "${where[@]}" --cartridge fleet --name "b$i" \
			2>>"$dir/consume.log" &
		cp+=($!)
		pids+=($!)
	done
	until caught_up "$1" "${where[@]}"; do sleep 0.2; done
	t1=$(now)
	for i in "${cp[@]}"; do
		if ! kill "$i" 2>/dev/null; then
			echo "bench_log: a consumer ended by itself; its log:" >&2
			tail -n 20 "$dir/consume.log" >&2
		fi
		wait "$i" 2>/dev/null || true
	done
	rate "$events" "$t0" "$t1"
}
one=$(consume c1 1)
echo "| keel consume into MariaDB, one consumer | $events | $one | $(awk -v a="$one" -v b="$ingest" 'BEGIN { printf "%.2f", a / b }') |"
two=$(consume c2 2)
echo "| keel consume into MariaDB, two consumers | $events | $two | $(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a / b }') (of one) |"
mapped=$(consume cm 2 map)
echo "| keel consume, two consumers, a store map over two MariaDB servers | $events | $mapped | $(awk -v a="$mapped" -v b="$two" 'BEGIN { printf "%.2f", a / b }') (of two into one) |"
t1=$(consume t1 1)
echo "| one tenant's events, one consumer | $events | $t1 | 1.00 |"
t2=$(consume t2 2)
echo "| one tenant's events, two consumers | $events | $t2 | $(awk -v a="$t2" -v b="$t1" 'BEGIN { printf "%.2f", a / b }') (of one) |"
echo
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
