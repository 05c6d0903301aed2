#!/usr/bin/env bash
# bench_tenants.sh - many tenants cost what their events cost (issue 29,
# part 6), measured on this machine in one run:
#
#   the same --events fleet events (default 200 000; keel generate fleet
#   --seed 1) spread over 1, 2 000 and 20 000 tenants (--tenants), each
#   ingested by keel ingest at the defaults into a new SQLite store and a
#   new database of a private MariaDB server: wall time, CPU time (user +
#   system, GNU time) and the store's size (the SQLite file and its WAL;
#   MariaDB's data and index lengths after ANALYZE TABLE), each as a ratio
#   to the one-tenant figure of the same store.
#
#   And where the limit is: the most tenants' events again, with every
#   event moved to one tenant and its ids (the event's, and the vehicle,
#   driver, depot and trip ids in its data) prefixed with its old
#   tenant's number, so that the store holds the same events, entities
#   and rows under one tenant, from the one-tenant stream's few sources
#   (the "events, one tenant" row). The fleet generator gives each tenant a fleet of
#   its own, so 200 000 events over 20 000 tenants are not the one-tenant
#   stream's events: more registrations, more entities, more rows. What
#   tenants themselves cost is the ratio to that row.
#
# --old-keel PATH adds the given keel (the landed build) on SQLite at the
# most tenants, beside this one. The load average is printed beside the
# figures: the machine is shared, so the ratios are what to read.
#
# Usage: bench_tenants.sh [--tiny] [--events N] [--tenants "1 2000 20000"]
#                         [--old-keel PATH] [--mysql-dir DIR | --no-mysql]
#                         [--dir DIR]
# KEEL: this build's keel (default: keel on PATH). --mysql-dir: a server
# started by scripts/mariadb-test-server (default: one of its own, stopped
# at the end). --tiny: 3 000 events over 1, 20 and 200 tenants (what CI
# runs to see the benchmark run to its end, bench/CMakeLists.txt).
set -euo pipefail

keel=${KEEL:-keel}
events=200000
tenants="1 2000 20000"
old=""
mysql=own
mdir=""
dir=""
while [ $# -gt 0 ]; do
	case "$1" in
	--tiny) events=3000 tenants="1 20 200" ;;
	--events) events=$2; shift ;;
	--tenants) tenants=$2; shift ;;
	--old-keel) old=$2; shift ;;
	--mysql-dir) mysql=given mdir=$2; shift ;;
	--no-mysql) mysql=none ;;
	--dir) dir=$2; shift ;;
	*) echo "bench_tenants.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
maria=$(cd "$(dirname "$0")/.." && pwd)/scripts/mariadb-test-server
if [ -n "$dir" ]; then
	mkdir -p "$dir"
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-tenants-XXXXXX")
fi
cleanup() {
	[ "$mysql" = own ] && [ -n "$mdir" ] && "$maria" stop "$mdir" >/dev/null 2>&1
	[ -z "${keep:-}" ] && rm -rf "$dir"
}
trap cleanup EXIT
[ -x /usr/bin/time ] || { echo "bench_tenants.sh: needs GNU time (scripts/deps --bench)" >&2; exit 1; }
if [ "$mysql" = own ]; then
	mdir=$dir/mariadb
	"$maria" start "$mdir" >/dev/null
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), load average $(load) at the start"
echo "input: keel generate fleet --events $events --seed 1 --tenants T; keel ingest --cartridge fleet at the defaults, into a new store each"

most=${tenants##* }
for t in $tenants; do
	"$keel" generate fleet --events "$events" --tenants "$t" --seed 1 --output "$dir/in-$t.ndjson"
done
# The most tenants' events under one tenant: ids prefixed with the old
# tenant's number, so entities and events stay distinct.
awk '{
	if (match($0, /"tenant":"tenant-[0-9]+"/)) {
		t = substr($0, RSTART + 17, RLENGTH - 18)
		gsub(/_id":"/, "_id\":\"" t ".")
		sub(/"id":"/, "\"id\":\"" t ".")
		sub(/"tenant":"tenant-[0-9]+"/, "\"tenant\":\"tenant-00000\"")
		gsub(/"source":"\/fleet\/tenant-[0-9]+\//, "\"source\":\"/fleet/tenant-00000/")
	}
	print
}' "$dir/in-$most.ndjson" >"$dir/in-one.ndjson"

# ingest BIN STORE INPUT: sets wall, cpu.
ingest() {
	/usr/bin/time -f "%e %U %S" -o "$dir/time" "$1" ingest --cartridge fleet --quiet --store "$2" "$3"
	read -r wall user sys <"$dir/time"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
}
# size_sqlite FILE / size_mysql URL: sets size (bytes).
size_sqlite() {
	size=$(stat -c %s "$1")
	[ -f "$1-wal" ] && size=$((size + $(stat -c %s "$1-wal")))
	return 0
}
size_mysql() {
	local db=${1##*/}
	db=${db%%\?*}
	local tables
	tables=$("$maria" sql "$mdir" "SELECT GROUP_CONCAT(CONCAT('\`', TABLE_NAME, '\`')) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_TYPE = 'BASE TABLE'" | tail -n 1)
	"$maria" sql "$mdir" "USE \`$db\`; ANALYZE TABLE $tables" >/dev/null
	size=$("$maria" sql "$mdir" "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db'" | tail -n 1)
}
rows_sqlite() {
	sqlite3 "$1" "SELECT ((SELECT count(*) FROM fact_rows) + (SELECT count(*) FROM relation_rows)) || ' rows, ' || (SELECT count(*) FROM entity_mentions) || ' mentions'" 2>/dev/null || echo "?"
}

# row LABEL: prints the last ingest's figures and the ratios to base_*.
row() {
	awk -v l="$1" -v w="$wall" -v c="$cpu" -v s="$size" -v bw="$base_wall" -v bc="$base_cpu" -v bs="$base_size" -v x="$2" \
		'BEGIN {printf "%-34s %8.2f s %6.2fx %8.2f s %6.2fx %9.1f MB %6.2fx  %s\n", l, w, w / bw, c, c / bc, s / 1e6, s / bs, x}'
}
header() {
	printf '%-34s %10s %7s %10s %7s %12s %7s\n' "$1" "wall" "ratio" "CPU" "ratio" "size" "ratio"
}

stores="sqlite"
[ "$mysql" != none ] && stores="sqlite mysql"
for store in $stores; do
	echo
	header "$store: tenants"
	for t in $tenants one; do
		in=$dir/in-$t.ndjson
		if [ "$store" = sqlite ]; then
			url=sqlite:$dir/s-$t.db
			ingest "$keel" "$url" "$in"
			size_sqlite "$dir/s-$t.db"
			extra=$(rows_sqlite "$dir/s-$t.db")
		else
			url=$("$maria" fresh "$mdir")
			ingest "$keel" "$url" "$in"
			size_mysql "$url"
			extra=""
		fi
		if [ "$t" = 1 ]; then
			base_wall=$wall base_cpu=$cpu base_size=$size
		fi
		if [ "$t" = one ]; then
			row "$most tenants' events, one tenant" "$extra (the limit)"
			echo "  $most tenants / the same events over one tenant: time $(awk -v a="$most_wall" -v b="$wall" 'BEGIN {printf "%.2f", a / b}')x, CPU $(awk -v a="$most_cpu" -v b="$cpu" 'BEGIN {printf "%.2f", a / b}')x, size $(awk -v a="$most_size" -v b="$size" 'BEGIN {printf "%.2f", a / b}')x"
		else
			target=""
			[ "$t" = "$most" ] && [ "$t" != 1 ] && target="(target <= 1.3x time, <= 1.1x size)"
			row "$t" "$extra $target"
			[ "$t" = "$most" ] && most_wall=$wall most_cpu=$cpu most_size=$size
		fi
		[ "$store" = sqlite ] && rm -f "$dir/s-$t.db"*
	done
	if [ "$store" = sqlite ] && [ -n "$old" ]; then
		ingest "$old" "sqlite:$dir/old.db" "$dir/in-$most.ndjson"
		size_sqlite "$dir/old.db"
		row "$most, the landed build ($old)" "$(rows_sqlite "$dir/old.db")"
		rm -f "$dir/old.db"*
	fi
done
echo
echo "load average $(load) at the end"
