#!/usr/bin/env bash
# known_at_stands.sh - a read known at a moment gives the answer every later
# read known at that moment gives (docs/semantics.md, "Known-at answers
# stand"), also when it comes while a transaction that records at or
# before the moment is still open: keel stats and keel show known at
# moments just past, read again and again during an ingest whose
# transactions hold many batches, then each moment read again after it
# (tests/cli/known_at_check.py). On SQLite one writer; on MariaDB and
# PostgreSQL (the suite's fixtures) two writers at once, two tenants'
# ingests, whose transactions overlap.
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
check=$(dirname "$0")/cli/known_at_check.py

"$KEEL" generate fleet --events 20000 --seed 3 --output "$dir/all.ndjson"
head -n 500 "$dir/all.ndjson" >"$dir/first.ndjson"
tail -n +501 "$dir/all.ndjson" >"$dir/in.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --quiet --store "sqlite:$dir/s.db" "$dir/first.ndjson"
python3 "$check" "$KEEL" "sqlite:$dir/s.db" "$dir/in.ndjson" \
	--cartridge fleet --batch 20 --commit-interval 400 --linger 400 ||
	fail "SQLite: answers known at a moment changed (above)"

# Two writers: each tenant's events in a file of their own (the reads
# show tenant-00's vehicle, so both tenants must have one).
"$KEEL" generate fleet --events 10000 --tenants 2 --seed 5 --output "$dir/two.ndjson"
head -n 500 "$dir/two.ndjson" >"$dir/two-first.ndjson"
tail -n +501 "$dir/two.ndjson" >"$dir/two-rest.ndjson"
grep '"tenant":"tenant-00"' "$dir/two-rest.ndjson" >"$dir/t0.ndjson"
grep -v '"tenant":"tenant-00"' "$dir/two-rest.ndjson" >"$dir/t1.ndjson"
[ -s "$dir/t0.ndjson" ] && [ -s "$dir/t1.ndjson" ] || fail "the input has not two tenants"
two_writers() { # NAME URL
	expect 0 "$KEEL" ingest --cartridge fleet --quiet --store "$2" "$dir/two-first.ndjson"
	python3 "$check" "$KEEL" "$2" "$dir/t0.ndjson,$dir/t1.ndjson" \
		--cartridge fleet --batch 20 --commit-interval 300 --linger 300 ||
		fail "$1: answers known at a moment changed (above)"
}
missing=
if [ -n "${KEEL_TEST_MYSQL_FRESH:-}" ] && [ -n "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	two_writers MariaDB "$($KEEL_TEST_MYSQL_FRESH)"
else
	missing="$missing MariaDB (the mysql_server fixture)"
fi
if [ -n "${KEEL_TEST_PG_FRESH:-}" ] && [ -n "${KEEL_TEST_PG_DIR:-}" ]; then
	two_writers PostgreSQL "$($KEEL_TEST_PG_FRESH)"
else
	missing="$missing PostgreSQL (the postgres_server fixture)"
fi
[ -z "$missing" ] || [ "${CI:-}" != true ] || fail "no server for:$missing"
[ -z "$missing" ] || echo "not checked here:$missing"
finish
