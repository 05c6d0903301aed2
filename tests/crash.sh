#!/usr/bin/env bash
# Crash test (docs/semantics.md, "Batches, commits and failures"): kill -9
# `keel ingest` at random moments, 30 times in all, running the same command
# again after each kill until a run finishes; the final dump must equal an
# uninterrupted run's, byte for byte.
#
# Two ways of committing (20 kills, then 10):
#   the default --commit-interval (1 s): a transaction holds many batches,
#     each behind its savepoint, so most kills land inside an open
#     transaction that several released savepoints have already written to;
#   --commit-interval 0: one commit a batch, so kills land between commits
#     and inside them.
# After each kill the store's dump is kept with the moment it was taken; once
# the round is done, `dump --known-at` that moment must give it again (what
# a killed run left is exactly what the store later says it knew then), and
# `dump --known-at` now must equal the reference.
#
# The store under test: fresh SQLite files here; tests/mysql_crash.sh sets
# KEEL_CRASH_FRESH, a command printing the URL of a fresh MariaDB database,
# and KEEL_CRASH_EVENTS, a shorter input (a MariaDB run takes longer);
# tests/postgres_crash.sh also KEEL_CRASH_KILLS, fewer kills (30 by default,
# two thirds of them at the default commit interval).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
in=$dir/in.ndjson
events=${KEEL_CRASH_EVENTS:-10000}
"$KEEL" generate fleet --events "$events" --tenants 3 --seed 11 \
	--late 0.05 --duplicates 0.05 --output "$in"

stores=0
fresh_store() {
	stores=$((stores + 1))
	if [ -n "${KEEL_CRASH_FRESH:-}" ]; then
		$KEEL_CRASH_FRESH
	else
		echo "sqlite:$dir/store$stores.db"
	fi
}
drop_store() { # a SQLite file no longer needed (MariaDB's go with the fixture)
	case $1 in
	sqlite:*) rm -f "${1#sqlite:}" "${1#sqlite:}-wal" "${1#sqlite:}-shm" ;;
	esac
}
now() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }

# The reference: one uninterrupted ingest (SQLite: dumps agree across stores).
"$KEEL" ingest --cartridge fleet "$in" --quiet --store "sqlite:$dir/ref.db"
"$KEEL" dump --store "sqlite:$dir/ref.db" > "$dir/ref.dump"
lines=$(wc -l < "$dir/ref.dump")
[ "$lines" -gt "$events" ] || fail "reference dump too small ($lines lines)"

RANDOM=20261201
# crash_rounds NAME KILLS ARGS...: rounds on fresh stores of `keel ingest
# $in ARGS...`: in each round the ingest is killed at a random moment of a full
# run's length (a little more, so that a run can also finish), run again,
# killed again, ... until a run finishes on its own. Fresh stores keep the
# kills landing in real ingest work (a store that already holds everything
# only sees quick re-sends). Stops after KILLS kills.
crash_rounds() {
	local name=$1 want=$2
	shift 2
	local cmd=("$KEEL" ingest --cartridge fleet "$in" --quiet "$@")
	# How long one full run takes here, to aim the kills inside it.
	local store start full_ms
	store=$(fresh_store)
	start=$(date +%s%N)
	"${cmd[@]}" --store "$store"
	full_ms=$((($(date +%s%N) - start) / 1000000 + 1))
	"$KEEL" dump --store "$store" | cmp -s - "$dir/ref.dump" ||
		fail "$name: an uninterrupted run gives another dump than the reference"
	drop_store "$store"

	local kills=0 rounds=0 runs delay_ms first_kill k
	while [ "$kills" -lt "$want" ] && [ "$rounds" -lt 100 ]; do
		rounds=$((rounds + 1))
		store=$(fresh_store)
		first_kill=$((kills + 1))
		runs=0
		while :; do
			runs=$((runs + 1))
			[ "$runs" -le 100 ] || fail "$name: round $rounds: no run finished in 100"
			"${cmd[@]}" --store "$store" &
			pid=$!
			delay_ms=$((RANDOM * 32768 + RANDOM))
			delay_ms=$((delay_ms % (full_ms + full_ms / 4)))
			# The kill at a random moment is the point of this test.
			sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
			if kill -9 "$pid" 2>/dev/null; then
				wait "$pid" 2>/dev/null || true
				pid=
				kills=$((kills + 1))
				# what the killed run left, and when (nothing,
				# if it was killed before it made the store)
				"$KEEL" dump --store "$store" > "$dir/kill$kills.dump" 2>/dev/null ||
					: > "$dir/kill$kills.dump"
				now > "$dir/kill$kills.at"
			else
				wait "$pid" || fail "$name: ingest failed before it was killed"
				pid=
				break
			fi
		done
		"$KEEL" dump --store "$store" > "$dir/crash.dump"
		if ! cmp -s "$dir/ref.dump" "$dir/crash.dump"; then
			diff "$dir/ref.dump" "$dir/crash.dump" | head -20
			fail "$name: round $rounds: dump after crashes differs from the uninterrupted run"
		fi
		"$KEEL" dump --store "$store" --known-at "$(now)" > "$dir/crash.dump"
		cmp -s "$dir/ref.dump" "$dir/crash.dump" ||
			fail "$name: round $rounds: dump --known-at now differs from the plain dump"
		for ((k = first_kill; k <= kills; k++)); do
			"$KEEL" dump --store "$store" --known-at "$(cat "$dir/kill$k.at")" > "$dir/crash.dump"
			if ! cmp -s "$dir/kill$k.dump" "$dir/crash.dump"; then
				diff "$dir/kill$k.dump" "$dir/crash.dump" | head -20
				fail "$name: kill $k: dump --known-at its moment differs from the dump taken then"
			fi
			rm -f "$dir/kill$k.dump" "$dir/kill$k.at"
		done
		drop_store "$store"
	done
	[ "$kills" -ge "$want" ] || fail "$name: could not kill the ingest $want times"
	echo "$name: $lines dump lines identical after each of $rounds rounds ($kills kills; a full run $full_ms ms)"
}

# Batch 50 keeps batches short, so kills land between and inside them.
kills=${KEEL_CRASH_KILLS:-30}
crash_rounds "default commit interval" $((kills * 2 / 3)) --batch 50
crash_rounds "--commit-interval 0" $((kills - kills * 2 / 3)) --batch 50 --commit-interval 0
