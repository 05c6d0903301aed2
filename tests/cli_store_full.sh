#!/usr/bin/env bash
# cli_store_full.sh - a SQLite store that cannot grow (docs/cli.md,
# "Failures"): the file-size limit of the process (ulimit -f, with SIGXFSZ
# ignored so that a write past it fails instead of killing keel) stands in
# for a full disk. The error is printed once, exit status 1, and the report
# counts only what was committed: for --replay, which writes everything in
# one transaction at the end, nothing.
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
accepted=$(sed -n 's/^accepted \([0-9]*\),.*/\1/p' "$dir/err")
held=$("$KEEL" stats --store "sqlite:$dir/full.db" |
	sed -n 's/.*"total":{"entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":\([0-9]*\)}.*/\1/p')
[ -n "$accepted" ] && [ "$accepted" = "$held" ] ||
	fail "the report says accepted $accepted, the store holds $held events"

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
