#!/usr/bin/env bash
# Crash test (docs/semantics.md): kill -9 the ingest at random moments, at least
# 20 times, running the same command again after each kill; the final dump
# must equal an uninterrupted run's, byte for byte. Each round's store is a
# new SQLite file, or what the command KEEL_CRASH_FRESH prints
# (tests/mysql_crash.sh: a new MariaDB database).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
in=$dir/in.ndjson
"$KEEL" generate fleet --events 40000 --tenants 3 --seed 11 --late 0.05 --duplicates 0.05 --output "$in"

# Batch 50 keeps commits frequent, so kills land between and inside batches.
cmd=("$KEEL" ingest "$in" --batch 50 --quiet)
"${cmd[@]}" --store "sqlite:$dir/ref.db"
"$KEEL" dump --store "sqlite:$dir/ref.db" > "$dir/ref.dump"

# How long one full run takes here, to aim the kills inside it.
timing="sqlite:$dir/timing.db"
[ -z "${KEEL_CRASH_FRESH:-}" ] || timing=$($KEEL_CRASH_FRESH)
start=$(date +%s%N)
"${cmd[@]}" --store "$timing"
full_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$full_ms" -gt 0 ] || full_ms=1

RANDOM=20261129
# Rounds on fresh stores: in each round the ingest is killed at a random
# moment of a full run's length, run again, killed again, ... until a run
# finishes on its own; then its dump must equal the reference. Fresh
# stores keep the kills landing in real ingest work (a store that already
# holds everything only sees quick re-sends).
kills=0
rounds=0
while [ "$kills" -lt 20 ] && [ "$rounds" -lt 40 ]; do
	rounds=$((rounds + 1))
	if [ -n "${KEEL_CRASH_FRESH:-}" ]; then
		store=$($KEEL_CRASH_FRESH)
	else
		store="sqlite:$dir/crash$rounds.db"
	fi
	while :; do
		"${cmd[@]}" --store "$store" &
		pid=$!
		delay_ms=$(( RANDOM % full_ms ))
		# The kill at a random moment is the point of this test.
		sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
		if kill -9 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			kills=$((kills + 1))
		else
			wait "$pid" || { echo "ingest failed before it was killed"; exit 1; }
			break
		fi
	done
	"$KEEL" dump --store "$store" > "$dir/crash.dump"
	if ! cmp -s "$dir/ref.dump" "$dir/crash.dump"; then
		echo "round $rounds: dump after crashes differs from the uninterrupted run:"
		diff "$dir/ref.dump" "$dir/crash.dump" | head -20
		exit 1
	fi
	rm -f "$dir/crash$rounds.db" "$dir/crash$rounds.db-wal" "$dir/crash$rounds.db-shm"
done
echo "killed $kills times in $rounds rounds"
[ "$kills" -ge 20 ] || { echo "could not kill the ingest 20 times"; exit 1; }
lines=$(wc -l < "$dir/ref.dump")
[ "$lines" -gt 40000 ] || { echo "reference dump too small ($lines lines)"; exit 1; }
echo "ok: $lines dump lines identical after each of $rounds rounds ($kills kills)"
