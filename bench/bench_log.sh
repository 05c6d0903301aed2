#!/usr/bin/env bash
# The log's table (docs/scaling.md), side by side in one run on this
# machine, every server private and on loopback:
#   1. keel publish against raw publishing of the same bytes (bench_log),
#      into an R1 log;
#   2. keel serve --forward, batched POSTs (bench_http's load generator,
#      1000 events a POST), into an R1 log on one server and an R3 log on a
#      three-node cluster;
#   3. one keel consume into MariaDB against keel ingest of the same file
#      into the same server;
#   4. two consumers against one (the same log, fresh databases).
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
	rm -rf "$dir"
}
trap cleanup EXIT
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

r1=$("$nats" start "$dir/r1" 1)
r3=$("$nats" start "$dir/r3" 3)
"$maria" start "$dir/db" >/dev/null
"$keel" generate fleet --events "$events" --tenants 16 --seed 1 --output "$dir/in.ndjson"
parts=4
for log in raw kp c1 c2; do
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
fresh() { "$maria" fresh "$dir/db"; }
url=$(fresh)
t0=$(now)
"$keel" ingest "$dir/in.ndjson" --cartridge fleet --quiet --store "$url"
t1=$(now)
ingest=$(rate "$events" "$t0" "$t1")
echo "| keel ingest into MariaDB (one connection) | $events | $ingest | 1.00 |"

caught_up() { # caught_up LOG URL
	"$keel" consume "$r1" --stream "$1" --store "$2" --status 2>/dev/null |
		awk 'NR > 1 { if ($4 != $5) bad = 1 } END { exit bad }'
}
consume() { # consume LOG N: N consumers into a fresh database; prints events/s
	local url i t0 t1
	url=$(fresh)
	# the schema made first, so that the consumers do not race to make it
	"$keel" stats --store "$url" >/dev/null 2>&1 || true
	local cp=()
	t0=$(now)
	for i in $(seq 1 "$2"); do
		"$keel" consume "$r1" --stream "$1" --store "$url" --cartridge fleet --name "b$i" \
			2>>"$dir/consume.log" &
		cp+=($!)
		pids+=($!)
	done
	until caught_up "$1" "$url"; do sleep 0.2; done
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
echo
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
