#!/usr/bin/env bash
# cli_store_full.sh - a SQLite store that cannot grow (docs/cli.md,
# "Failures"): the file-size limit of the process (ulimit -f, with SIGXFSZ
# ignored so that a write past it fails instead of killing keel) stands in
# for a full disk. The error is printed once, exit status 1, and the report
# counts only what was committed: for --replay, which writes everything in
# one transaction at the end, nothing. The message names every line lost
# and says that the same input again ingests them; with grouped commits,
# when the store rolls back the whole transaction itself (as SQLite does on
# a full disk), that is every batch since the last commit, not only the
# failed one; and the same command, run again once the cause is gone,
# finishes the job.
. "$(dirname "$0")/cli/lib.sh"

expect 0 "$KEEL" generate fleet --events 20000 --seed 5 --output "$dir/in.ndjson"

# limited KB CMD...: CMD with files limited to KB KiB.
limited() {
	local kb=$1
	shift
	run bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$kb" "$@"
}

# The default way in, on SQLite.
limited 1024 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/full.db"
[ "$status" -eq 1 ] || fail "ingest into a full store: exit $status, expected 1: $(cat "$dir/err")"
# Batches are grouped into commits: the error names the batch or the
# commit whose lines it lost.
errors=$(grep -cE '^keel ingest: (batch|commit) of lines ' "$dir/err")
[ "$errors" -eq 1 ] || fail "the store error is printed $errors times, expected once: $(cat "$dir/err")"
# What was lost, by its lines, and that the same input puts it in.
grep -qE '^keel ingest: (batch|commit) of lines [0-9]+-[0-9]+: .*; (the store rolled back the whole transaction: )?nothing of lines [0-9]+-[0-9]+ was written: the same input again ingests them' "$dir/err" ||
	fail "the message does not say what was lost: $(cat "$dir/err")"
accepted=$(sed -n 's/^accepted \([0-9]*\),.*/\1/p' "$dir/err")
held=$("$KEEL" stats --store "sqlite:$dir/full.db" |
	sed -n 's/.*"total":{"entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":\([0-9]*\)}.*/\1/p')
[ -n "$accepted" ] && [ "$accepted" = "$held" ] ||
	fail "the report says accepted $accepted, the store holds $held events"

# Once there is room, the same command finishes the job: what went in is
# skipped as duplicates, the rest goes in, and the store holds it all.
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/full.db"
contains err "duplicates $held (conflicting 0)"
expect 0 "$KEEL" stats --store "sqlite:$dir/full.db"
contains out '"events":20000}'

# Grouped commits, and a store that rolls the whole transaction back
# itself, as SQLite does on a full disk: a trigger raising ROLLBACK on the
# event of line 2250 stands in for the disk (ulimit -f fails at the commit,
# not inside a batch). Lines 1-1000 are in the store already; with one
# commit for the run, the batches 1-500 ... 2001-2500 are one transaction,
# and all of them are lost, which the message says, not only 2001-2500.
head -n 1000 "$dir/in.ndjson" >"$dir/first.ndjson"
head -n 3000 "$dir/in.ndjson" >"$dir/three.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/first.ndjson" --store "sqlite:$dir/tx.db"
id=$(sed -n '2250s/.*"id":"\([^"]*\)".*/\1/p' "$dir/three.ndjson")
sqlite3 "$dir/tx.db" "CREATE TRIGGER full BEFORE INSERT ON events WHEN new.id = '$id'
	BEGIN SELECT raise(ROLLBACK, 'database or disk is full'); END" || fail "trigger"
expect 1 "$KEEL" ingest --cartridge fleet "$dir/three.ndjson" --store "sqlite:$dir/tx.db" \
	--batch 500 --commit-interval 600000
contains err "keel ingest: batch of lines 2001-2500: sqlite \"$dir/tx.db\": database or disk is full; the store rolled back the whole transaction: nothing of lines 1-2500 was written: the same input again ingests them"
[ "$(grep -c '^keel ingest: ' "$dir/err")" -eq 1 ] || fail "printed more than once: $(cat "$dir/err")"
contains err "accepted 0, duplicates 0 (conflicting 0)"
expect 0 "$KEEL" stats --store "sqlite:$dir/tx.db"
contains out '"events":1000}'
# the cause gone, the same command finishes the job
sqlite3 "$dir/tx.db" "DROP TRIGGER full" || fail "drop trigger"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/three.ndjson" --store "sqlite:$dir/tx.db" \
	--batch 500 --commit-interval 600000
contains err "accepted 2000, duplicates 1000 (conflicting 0)"
expect 0 "$KEEL" dump --store "sqlite:$dir/tx.db"
mv "$dir/out" "$dir/tx.dump"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/three.ndjson" --store "sqlite:$dir/clean.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/clean.db"
cmp -s "$dir/out" "$dir/tx.dump" || fail "the finished store's dump differs from a clean ingest's"

# --replay: the one bulk write fails; nothing was written, nothing accepted.
limited 1024 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "sqlite:$dir/bulk.db"
[ "$status" -eq 1 ] || fail "ingest --replay into a full store: exit $status, expected 1: $(cat "$dir/err")"
errors=$(grep -c '^keel ingest: ' "$dir/err")
[ "$errors" -eq 1 ] || fail "the bulk error is printed $errors times, expected once: $(cat "$dir/err")"
contains err "read 20000 events"
contains err "accepted 0, duplicates 0 (conflicting 0)"
contains err "rows inserted 0"
lacks err "written by"
expect 0 "$KEEL" stats --store "sqlite:$dir/bulk.db"
contains out '"total":{"entities":0,"facts":0,"relations":0,"events":0}'

finish
