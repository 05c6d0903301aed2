#!/usr/bin/env bash
# bench_forget.sh - keel forget without a rebuild (docs/semantics.md,
# "Forgetting"), measured on this machine in one run:
#
#   on a SQLite fleet store of --small events (default 100 000), the
#   landed build's keel forget (--old-keel: it rebuilt the tenant from its
#   log) beside this build's, each on its own copy of the same store, wall
#   time and peak RSS of each process (GNU time), their ratio, and whether
#   the two stores dump alike afterwards;
#   on a SQLite fleet store of --events events (default 1 000 000), this
#   build's keel forget of a vehicle: target <= 2 s and <= 64 MiB peak RSS;
#   with --http-bench PATH (bench_http), keel serve on a copy of that store
#   answering single POSTs paced at --rate a second (bench_http --port)
#   while a DELETE forgets another vehicle, against the same load with no
#   forget: p50 and p99 of the answers (target: p99 <= 1 s during it).
#
# Every forget erases the same vehicle (--subject, default vehicle:V-0003)
# from tenant-00, the stores being made first by keel generate and keel
# ingest at the defaults (not timed). The load average is printed beside
# the figures: the machine is shared, so the ratio is what to read.
#
# Usage: bench_forget.sh [--tiny] [--events N] [--small N] [--old-keel PATH]
#                        [--subject S] [--dir DIR] [--http-bench PATH]
#                        [--rate R]
# KEEL: this build's keel (default: keel on PATH). Without --old-keel the
# landed build's column is left out. --tiny: 3000 and 2000 events (what CI
# runs to see the benchmark run to its end, bench/CMakeLists.txt).
set -euo pipefail

keel=${KEEL:-keel}
events=1000000
small=100000
old=""
subject=vehicle:V-0003
dir=""
http_bench=""
rate=200
seconds=8
while [ $# -gt 0 ]; do
	case "$1" in
	--tiny) events=3000 small=2000 seconds=1 ;;
	--http-bench) http_bench=$2; shift ;;
	--rate) rate=$2; shift ;;
	--events) events=$2; shift ;;
	--small) small=$2; shift ;;
	--old-keel) old=$2; shift ;;
	--subject) subject=$2; shift ;;
	--dir) dir=$2; shift ;;
	*) echo "bench_forget.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ -n "$dir" ]; then
	mkdir -p "$dir"
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-forget-XXXXXX")
	trap 'rm -rf "$dir"' EXIT
fi
[ -x /usr/bin/time ] || { echo "bench_forget.sh: needs GNU time (scripts/deps --bench)" >&2; exit 1; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), load average $(load) at the start"

# A store of n fleet events (one tenant), made once.
make_store() {
	local n=$1 db=$dir/fleet-$1.db
	if [ ! -f "$db" ]; then
		"$keel" generate fleet --events "$n" --seed 1 --output "$dir/in-$n.ndjson"
		"$keel" ingest --cartridge fleet --quiet --store "sqlite:$db" "$dir/in-$n.ndjson"
		rm -f "$dir/in-$n.ndjson"
	fi
	echo "$db"
}

# forget BIN DB LABEL: keel forget on a copy of DB; sets wall, mib, copy.
forget() {
	local bin=$1 db=$2 label=$3
	copy=$dir/$label.db
	cp "$db" "$copy"
	/usr/bin/time -f "%e %M" -o "$dir/time" "$bin" forget tenant-00 "$subject" \
		--store "sqlite:$copy" > "$dir/$label.out"
	read -r wall kib < "$dir/time"
	mib=$(awk -v k="$kib" 'BEGIN {printf "%.1f", k / 1024}')
}

db=$(make_store "$small")
forget "$keel" "$db" new-small
new_wall=$wall new_mib=$mib
echo "$small events: keel forget $subject without a rebuild (this build): $new_wall s, peak RSS $new_mib MiB ($(cat "$dir/new-small.out"))"
if [ -n "$old" ]; then
	forget "$old" "$db" old-small
	echo "$small events: keel forget $subject with the rebuild (the landed build, $old): $wall s, peak RSS $mib MiB"
	"$keel" dump --store "sqlite:$dir/new-small.db" > "$dir/new.dump"
	"$keel" dump --store "sqlite:$dir/old-small.db" > "$dir/old.dump"
	same=no
	cmp -s "$dir/new.dump" "$dir/old.dump" && same=yes
	echo "$small events: without / with the rebuild: time $(awk -v a="$new_wall" -v b="$wall" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')x, peak RSS $(awk -v a="$new_mib" -v b="$mib" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')x; the two stores dump alike: $same"
	[ "$same" = yes ] || { diff "$dir/old.dump" "$dir/new.dump" | head -5 >&2; exit 1; }
fi
rm -f "$dir"/new-small.db* "$dir"/old-small.db*

db=$(make_store "$events")
forget "$keel" "$db" new-big
echo "$events events: keel forget $subject without a rebuild (this build): $wall s (target <= 2 s), peak RSS $mib MiB (target <= 64 MiB) ($(cat "$dir/new-big.out"))"
rm -f "$dir"/new-big.db*

# keel serve answering POSTs while it forgets: its writer does the forget,
# so a POST that comes meanwhile waits for it.
if [ -n "$http_bench" ]; then
	cp "$db" "$dir/serve.db"
	"$keel" serve --cartridge fleet --listen 127.0.0.1:0 --store "sqlite:$dir/serve.db" \
		--quiet 2>"$dir/serve.log" &
	serve=$!
	port=
	for _ in $(seq 200); do
		port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$dir/serve.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { echo "keel serve did not start: $(cat "$dir/serve.log")" >&2; exit 1; }
	paced() { # the paced row of bench_http against the server: "p50 p99"
		"$http_bench" --port "$port" --only "single, paced ${rate}/s sqlite" --rate "$rate" \
			--seconds "$seconds" >"$dir/http.out"
		awk -F'|' '/single, paced/ { gsub(/ /, "", $9); gsub(/ /, "", $10); print $9, $10 }' \
			"$dir/http.out"
	}
	read -r p50 p99 < <(paced)
	echo "keel serve, single POSTs paced ${rate}/s for ${seconds} s, no forget: p50 $p50 ms, p99 $p99 ms"
	# the forget comes a quarter into the load
	paced >"$dir/during" &
	loader=$!
	sleep "$(awk -v s="$seconds" 'BEGIN { print s / 4 }')"
	t0=$(date +%s.%N)
	code=$(curl -s -o "$dir/forget.json" -w '%{http_code}' -X DELETE \
		"http://127.0.0.1:$port/v1/tenants/tenant-00/entities/vehicle:V-0004")
	t1=$(date +%s.%N)
	wait "$loader"
	read -r p50 p99 < "$dir/during"
	kill "$serve" 2>/dev/null; wait "$serve" 2>/dev/null || true
	[ "$code" = 200 ] || { echo "DELETE answered $code: $(cat "$dir/forget.json")" >&2; exit 1; }
	echo "keel serve, the same load while DELETE forgets vehicle:V-0004 ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s): p50 $p50 ms, p99 $p99 ms (target p99 <= 1000 ms)"
	rm -f "$dir"/serve.db*
fi
echo "load average $(load) at the end"
