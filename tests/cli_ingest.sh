#!/usr/bin/env bash
# cli_ingest.sh - keel ingest through the real binary: the report, exit
# status 0 / 3 / 1, the rejects file, plain, .gz and .zst input, standard
# input from a pipe and from a file, several inputs, --max-line, --quiet
# and --verbose (docs/cli.md).
. "$(dirname "$0")/cli/lib.sh"

story=$data/story.ndjson
mem=(--store memory:)

# A clean run: exit 0, the report on stderr, nothing on stdout.
expect 0 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}"
empty out
contains err "read 7 events in "
contains err "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
contains err "rows inserted 19"
lacks err "batches"
cp "$dir/err" "$dir/plain.report"

# The same input twice in one run: the second copy is all duplicates.
expect 0 "$KEEL" ingest --cartridge fleet "$story" "$story" "${mem[@]}"
contains err "read 14 events"
contains err "accepted 7, duplicates 7 (conflicting 0)"
# A changed envelope under a logged identity is a conflicting duplicate: named
# on stderr, exit 3 (the first copy came from another input file, so it is
# named as the logged event); an unknown type is accepted and counted as
# unhandled.
sed -e '5s/"reason":"trip"/"reason":"other"/' "$story" >"$dir/changed.ndjson"
echo '{"specversion":"1.0","id":"u1","tenant":"acme","type":"fleet.unknown","time":"2026-01-05T11:00:00Z","data":{}}' >>"$dir/changed.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet "$story" "$dir/changed.ndjson" "${mem[@]}"
contains err "accepted 8, duplicates 7 (conflicting 1), unhandled 1, rejected 0"
contains err "keel ingest: $dir/changed.ndjson: line 5: event \"e5\": conflicting duplicate: its envelope differs from that of the event already in the store (seq 5)"

# --verbose adds batches, commits and statements; --quiet prints nothing
# at all. --commit-interval 0 commits every batch; at the default interval
# the three batches of a short file are committed once, at its end.
expect 0 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}" --verbose --batch 3
contains err "batches 3, commits 1, statements 0"
expect 0 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}" --verbose --batch 3 --commit-interval 0
contains err "batches 3, commits 3, statements 0"
expect 2 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}" --commit-interval soon
contains err '--commit-interval "soon": not a number of milliseconds'
expect 0 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}" --quiet
empty err
empty out

# Compressed input: .gz made here, .zst from the test data (and made here
# too when the zstd tool exists); the same report as plain input.
gzip -c "$story" >"$dir/story.ndjson.gz"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/story.ndjson.gz" "${mem[@]}"
contains err "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
contains err "rows inserted 19"
expect 0 "$KEEL" ingest --cartridge fleet "$data/story.ndjson.zst" "${mem[@]}"
contains err "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 0"
contains err "rows inserted 19"
command -v zstd >/dev/null || fail "zstd is needed (scripts/deps --test)"
zstd -q -c "$story" >"$dir/fresh.zst"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/fresh.zst" "${mem[@]}"
contains err "accepted 7"
# A .gz name on data that is not gzip is an error, not a silent success.
cp "$story" "$dir/fake.gz"
expect 1 "$KEEL" ingest --cartridge fleet "$dir/fake.gz" "${mem[@]}"
contains err "not gzip data"

# Standard input: a pipe (live input), a redirected file, and gzip on a pipe.
run bash -c "cat '$story' | '$KEEL' ingest - --cartridge fleet --store memory:"
[ "$status" -eq 0 ] || fail "ingest from a pipe exited $status"
contains err "accepted 7, duplicates 0"
run bash -c "'$KEEL' ingest --cartridge fleet --store memory: < '$story'"
[ "$status" -eq 0 ] || fail "ingest from redirected stdin exited $status"
contains err "accepted 7, duplicates 0"
run bash -c "gzip -c '$story' | '$KEEL' ingest --cartridge fleet --store memory: --linger 50"
[ "$status" -eq 0 ] || fail "ingest of gzip from a pipe exited $status"
contains err "accepted 7, duplicates 0"

# Rejected events: exit 3, every one in the rejects file as one JSON line.
{
	head -n 2 "$story"
	printf '{"id":"x"\t\n'
	echo '{"specversion":"1.0","id":"bad-1","tenant":"acme","type":"fleet.driver.assigned","time":"noon","data":{}}'
	printf '{"id":"\xff"}\n'
	tail -n 5 "$story"
} >"$dir/bad.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/bad.ndjson" "${mem[@]}" --rejects "$dir/rejects.ndjson"
contains err "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 3"
lacks err "keel ingest: line"
[ "$(wc -l <"$dir/rejects.ndjson")" -eq 3 ] || fail "rejects file has $(wc -l <"$dir/rejects.ndjson") lines"
contains rejects.ndjson '{"position":3,"id":null,"error":"line 3: invalid JSON at byte '
# The input quoted with the JSON string writer's escapes (\t, not \u0009).
contains rejects.ndjson '"input":"{\"id\":\"x\"\t","file":"'"$dir"'/bad.ndjson"}'
contains rejects.ndjson '{"position":4,"id":"bad-1","error":"line 4: event \"bad-1\": field \"time\": not an RFC 3339 timestamp'
contains rejects.ndjson '"input":"{\"specversion\":\"1.0\",\"id\":\"bad-1\",'
# Invalid UTF-8 in the input is carried as U+FFFD: the file stays JSON.
contains rejects.ndjson "{\"position\":5,\"id\":null,"
contains rejects.ndjson "\"input\":\"{\\\"id\\\":\\\"$(printf '\xef\xbf\xbd')\\\"}\""
# --rejects - writes them to stdout.
expect 3 "$KEEL" ingest --cartridge fleet "$dir/bad.ndjson" "${mem[@]}" --rejects - --quiet
[ "$(wc -l <"$dir/out")" -eq 3 ] || fail "--rejects - wrote $(wc -l <"$dir/out") lines"
empty err

# Without --rejects: messages on stderr, the first 20 and then a count.
expect 3 "$KEEL" ingest --cartridge fleet "$dir/bad.ndjson" "${mem[@]}"
contains err 'keel ingest: line 4: event "bad-1": field "time": not an RFC 3339 timestamp'
contains err "keel ingest: line 3: invalid JSON"
for i in $(seq 1 25); do echo "{\"id\":\"n$i\"}"; done >"$dir/many.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/many.ndjson" "${mem[@]}"
[ "$(grep -c '^keel ingest: line' "$dir/err")" -eq 20 ] || fail "not 20 messages: $(cat "$dir/err")"
contains err "keel ingest: ... and 5 more rejected events"
contains err "rejected 25"
# With several inputs, messages name the file.
expect 3 "$KEEL" ingest --cartridge fleet "$story" "$dir/bad.ndjson" "${mem[@]}"
contains err "keel ingest: $dir/bad.ndjson: line 4: event \"bad-1\""

# --max-line: a longer line is rejected with its position, the rest goes in.
{
	head -n 1 "$story"
	printf '{"specversion":"1.0","id":"e0","tenant":"acme","type":"fleet.other","time":"2026-01-05T05:00:00Z","data":{"pad":"%0300d"}}\n' 0
	tail -n 6 "$story"
} >"$dir/long.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/long.ndjson" "${mem[@]}" --max-line 256 --rejects "$dir/long.rej"
contains err "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 1"
contains long.rej '{"position":2,"id":null,"error":"line 2: line longer than the maximum of 256 bytes"'
expect 0 "$KEEL" ingest --cartridge fleet "$dir/long.ndjson" "${mem[@]}" --max-line 1K
contains err "accepted 8, duplicates 0 (conflicting 0), unhandled 1, rejected 0"

# The progress line: only when stderr is a terminal.
expect 0 "$KEEL" generate fleet --events 3000 --seed 3 --output "$dir/gen.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/gen.ndjson" "${mem[@]}"
lacks err "$(printf '\r')"
lacks err " events/s, "
# (script, from util-linux, gives it a terminal)
command -v script >/dev/null || fail "script is needed (util-linux)"
run script -qec "'$KEEL' ingest --cartridge fleet '$dir/gen.ndjson' --store memory:" /dev/null
[ "$status" -eq 0 ] || fail "ingest under script exited $status"
contains out "$(printf '\r\033[K')64 events read, "
contains out " committed, "
contains out "%, ETA "
contains out "read 3000 events in "

# Fatal errors: exit 1 with the cause named, before anything is read.
expect 1 "$KEEL" ingest --cartridge fleet "$story" --store "sqlite:$dir/no/such/dir/keel.db"
contains err "keel ingest: "
contains err "$dir/no/such/dir/keel.db"
expect 1 "$KEEL" ingest --cartridge fleet "$story" --store "bogus:whatever"
contains err 'keel ingest: store "bogus:whatever": unknown scheme'
expect 1 "$KEEL" ingest --cartridge fleet "$dir/missing.ndjson" "${mem[@]}"
contains err "keel ingest: cannot open \"$dir/missing.ndjson\": No such file or directory"
expect 1 "$KEEL" ingest --cartridge fleet "$story" "$dir" "${mem[@]}"
contains err "is a directory"
lacks err "read 7 events"
expect 1 "$KEEL" ingest "$story" "${mem[@]}" --cartridge "$dir/missing-cartridge.json"
contains err "keel ingest: "
expect 1 "$KEEL" ingest --cartridge fleet "$story" "${mem[@]}" --rejects "$dir/no/such/dir/rejects"
contains err "cannot create \"$dir/no/such/dir/rejects\""
# KEEL_STORE is the default store.
run env KEEL_STORE=bogus:env "$KEEL" ingest --cartridge fleet "$story"
[ "$status" -eq 1 ] || fail "KEEL_STORE=bogus:env: exit $status"
contains err 'store "bogus:env": unknown scheme'

# SQLite takes one writer: ingest runs on one thread whatever the input,
# and --workers is refused there (and on memory), before anything is read.
expect 0 "$KEEL" ingest --cartridge fleet "$story" --store "sqlite:$dir/one.db"
lacks err "written by"
contains err "rows inserted 19"
for store in "sqlite:$dir/two.db" memory:; do
	expect 1 "$KEEL" ingest --cartridge fleet "$story" --store "$store" --workers 2
	contains err "keel ingest: store \"$store\" takes one writer at a time"
	lacks err "read "
done

# Several files: each file's rejections name that file, the report sums
# every file, and the dump equals that of the files ingested one by one.
bad_line='{"specversion":"1.0","id":"late-bad","tenant":"acme","type":"fleet.trip.started","time":"not a time","data":{}}'
expect 0 "$KEEL" generate fleet --events 3000 --output "$dir/first.ndjson"
echo "$bad_line" >>"$dir/first.ndjson"
cp "$story" "$dir/second.ndjson"
echo "$bad_line" >>"$dir/second.ndjson"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/first.ndjson" "$dir/second.ndjson" --store "sqlite:$dir/multi.db" \
	--rejects "$dir/multi.rejects"
contains err "read 3009 events"
contains err "rejected 2"
[ "$(wc -l <"$dir/multi.rejects")" -eq 2 ] || fail "$(wc -l <"$dir/multi.rejects") rejects"
grep -F '{"position":3001,"id":"late-bad","error":"line 3001: event \"late-bad\": field \"time\"' "$dir/multi.rejects" |
	grep -q '"file":"'"$dir"'/first.ndjson"}$' || fail "line 3001 of first.ndjson not reported with its file"
grep -F '{"position":8,"id":"late-bad","error":"line 8: event \"late-bad\": field \"time\"' "$dir/multi.rejects" |
	grep -q '"file":"'"$dir"'/second.ndjson"}$' || fail "line 8 of second.ndjson not reported with its file"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/first.ndjson" --store "sqlite:$dir/byone.db" --quiet
expect 3 "$KEEL" ingest --cartridge fleet "$dir/second.ndjson" --store "sqlite:$dir/byone.db" --quiet
expect 0 "$KEEL" dump --store "sqlite:$dir/byone.db" --output "$dir/byone.dump"
expect 0 "$KEEL" dump --store "sqlite:$dir/multi.db"
cmp -s "$dir/out" "$dir/byone.dump" || fail "two files in one run dump differently"

finish
