#!/usr/bin/env bash
# known_at_stands.sh - a read known at a moment gives the answer every later
# read known at that moment gives (docs/semantics.md, "Known-at answers
# stand"), also when it comes while a transaction that records at or
# before the moment is still open: on SQLite, keel stats and keel show
# known at moments just past, read again and again during an ingest whose
# transactions hold many batches, then each moment read again after it
# (tests/cli/known_at_check.py).
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"

"$KEEL" generate fleet --events 60000 --seed 3 --output "$dir/all.ndjson"
head -n 500 "$dir/all.ndjson" >"$dir/first.ndjson"
tail -n +501 "$dir/all.ndjson" >"$dir/in.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --quiet --store "sqlite:$dir/s.db" "$dir/first.ndjson"
python3 "$(dirname "$0")/cli/known_at_check.py" "$KEEL" "sqlite:$dir/s.db" "$dir/in.ndjson" \
	--cartridge fleet --batch 20 --commit-interval 400 ||
	fail "answers known at a moment changed (above)"
finish
