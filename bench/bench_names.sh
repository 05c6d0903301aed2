#!/usr/bin/env bash
# bench_names.sh - the SQLite store with names as integers (schema 12,
# docs/store-sqlite.md, "Names as integers") beside a Keel before it, in
# one run on the same input: keel ingest of the fleet stream at the
# defaults into a new store (N events, default 1 000 000, and 101 000),
# the file's size once the ingest has ended, and the same N events sent
# again (every one a duplicate).
#
#   bench/bench_names.sh OLD_KEEL NEW_KEEL [N] [RUNS] [SMALL]
#
# OLD_KEEL is the keel to compare with (e.g. the build of main before
# this change), NEW_KEEL this one's. SMALL (default 101000) is the size
# of the second input. RUNS (default 2) runs of each,
# alternated; the medians are compared. Prints each run's wall seconds,
# the medians, their ratio (new / old) and the sizes, and the load average
# before and after (the machine may be shared).
set -euo pipefail
old=$1
new=$2
events=${3:-1000000}
runs=${4:-2}
small=${5:-101000}
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-names.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$new" generate fleet --events "$events" --seed 1 --output "$work/in.ndjson"
"$new" generate fleet --events "$small" --seed 1 --output "$work/small.ndjson"
echo "input: $events fleet events (seed 1), $(stat -c %s "$work/in.ndjson") bytes; $runs alternated runs each"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# seconds KEEL STORE INPUT: wall seconds of one ingest at the defaults
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$1" ingest --cartridge fleet --quiet --store "sqlite:$2" "$3"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
size() { # the store's bytes, its -wal included
	local n=0 f
	for f in "$1" "$1-wal"; do [ -f "$f" ] && n=$((n + $(stat -c %s "$f"))); done
	echo "$n"
}
for what in old new; do : >"$work/$what.ingest" >"$work/$what.resend" >"$work/$what.small"; done
printf '%-4s %-4s %12s %12s %12s %14s\n' run keel "ingest s" "re-send s" "$small s" "file bytes"
for run in $(seq "$runs"); do
	for what in old new; do
		keel=$old
		[ "$what" = new ] && keel=$new
		db=$work/$what.db
		rm -f "$db" "$db-wal" "$db-shm" "$work/s.db" "$work/s.db-wal" "$work/s.db-shm"
		i=$(seconds "$keel" "$db" "$work/in.ndjson")
		bytes=$(size "$db")
		r=$(seconds "$keel" "$db" "$work/in.ndjson")
		sm=$(seconds "$keel" "$work/s.db" "$work/small.ndjson")
		echo "$i" >>"$work/$what.ingest"
		echo "$r" >>"$work/$what.resend"
		echo "$sm" >>"$work/$what.small"
		echo "$bytes" >"$work/$what.bytes"
		printf '%-4s %-4s %12s %12s %12s %14s\n' "$run" "$what" "$i" "$r" "$sm" "$bytes"
	done
done
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for m in ingest resend small; do
	o=$(median <"$work/old.$m")
	n=$(median <"$work/new.$m")
	awk -v m="$m" -v o="$o" -v n="$n" 'BEGIN {
		printf "median %-7s old %6.2f s  new %6.2f s  new/old %.2fx\n", m, o, n, n / o }'
done
ob=$(cat "$work/old.bytes")
nb=$(cat "$work/new.bytes")
awk -v o="$ob" -v n="$nb" 'BEGIN {
	printf "file     old %d bytes  new %d bytes  new/old %.2fx\n", o, n, n / o }'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
