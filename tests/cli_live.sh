#!/usr/bin/env bash
# cli_live.sh - live input (docs/cli.md): events from a pipe are committed
# when the input goes quiet, not at its end; --linger groups them; --follow
# reads a file as it grows, a line only once it is complete; SIGTERM
# commits the open batch, prints the report and exits 0.
. "$(dirname "$0")/cli/lib.sh"

story=$data/story.ndjson
head -n 3 "$story" >"$dir/part1"
tail -n 4 "$story" >"$dir/part2"

# events DB: the number of events logged for acme (0 if none yet).
events() {
	"$KEEL" stats --store "$1" --tenant acme 2>/dev/null |
		sed -n 's/.*"tenant":"acme","entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":\([0-9]*\)}.*/\1/p' |
		grep . || echo 0
}

# has_events DB N: DB holds N events.
has_events() {
	[ "$(events "$1")" -eq "$2" ]
}

# wait_events DB N SECONDS: polls until DB holds N events; false on timeout.
wait_events() {
	wait_until "$3" has_events "$1" "$2"
}

# A pipe that pauses: the first part is committed while the pipe is open.
for linger in 0 200; do
	db=sqlite:$dir/pipe$linger.db
	# The pipe stays open (the writer waits for $dir/go, 30 s at most)
	# until the first part is seen committed: no race with a slow machine.
	rm -f "$dir/go"
	{
		cat "$dir/part1"
		wait_until 30 test -e "$dir/go"
		cat "$dir/part2"
	} | "$KEEL" ingest --cartridge fleet - --store "$db" --linger "$linger" 2>"$dir/pipe.err" &
	pid=$!
	wait_events "$db" 3 25 || fail "--linger $linger: the first 3 events were not committed while the pipe paused (have $(events "$db"))"
	touch "$dir/go"
	wait "$pid"
	st=$?
	[ "$st" -eq 0 ] || fail "--linger $linger: ingest from the pipe exited $st: $(cat "$dir/pipe.err")"
	grep -qF "accepted 7, duplicates 0" "$dir/pipe.err" || fail "--linger $linger: report: $(cat "$dir/pipe.err")"
	[ "$(events "$db")" -eq 7 ] || fail "--linger $linger: $(events "$db") events at the end"
done

# --follow: the file grows; a half-written line waits for its newline.
db=sqlite:$dir/follow.db
: >"$dir/grow.ndjson"
"$KEEL" ingest --cartridge fleet --follow "$dir/grow.ndjson" --store "$db" 2>"$dir/follow.err" &
pid=$!
cat "$dir/part1" >>"$dir/grow.ndjson"
wait_events "$db" 3 20 || fail "--follow: 3 events not committed (have $(events "$db"))"
head -n 3 "$dir/part2" >>"$dir/grow.ndjson"
line7=$(tail -n 1 "$dir/part2")
printf '%s' "${line7:0:40}" >>"$dir/grow.ndjson"
wait_events "$db" 6 20 || fail "--follow: 6 events not committed (have $(events "$db"))"
# That something does not happen can only be seen by waiting: half a
# second in which the half-written line must stay unread.
sleep 0.5
[ "$(events "$db")" -eq 6 ] || fail "--follow: a half-written line was ingested"
printf '%s\n' "${line7:40}" >>"$dir/grow.ndjson"
wait_events "$db" 7 20 || fail "--follow: the completed line was not committed (have $(events "$db"))"
kill -TERM "$pid"
wait "$pid"
st=$?
[ "$st" -eq 0 ] || fail "--follow: exit $st after SIGTERM: $(cat "$dir/follow.err")"
grep -qF "interrupted: read 7 events" "$dir/follow.err" || fail "--follow: report: $(cat "$dir/follow.err")"
grep -qF "accepted 7, duplicates 0 (conflicting 0), unhandled 0, rejected 0" "$dir/follow.err" ||
	fail "--follow: report: $(cat "$dir/follow.err")"

# SIGTERM with events waiting in a lingering batch: they are committed.
db=sqlite:$dir/term.db
fifo=$dir/fifo
mkfifo "$fifo"
"$KEEL" ingest --cartridge fleet - --store "$db" --linger 600000 <"$fifo" 2>"$dir/term.err" &
pid=$!
exec 3>"$fifo"
cat "$dir/part1" >&3
# That something does not happen can only be seen by waiting: a second in
# which the lingering batch must stay uncommitted.
sleep 1
[ "$(events "$db")" -eq 0 ] || fail "--linger 600000 committed before its time"
kill -TERM "$pid"
wait "$pid"
st=$?
exec 3>&-
[ "$st" -eq 0 ] || fail "exit $st after SIGTERM with a lingering batch: $(cat "$dir/term.err")"
[ "$(events "$db")" -eq 3 ] || fail "the lingering batch was not committed on SIGTERM ($(events "$db") events)"
grep -qF "interrupted: read 3 events" "$dir/term.err" || fail "report after SIGTERM: $(cat "$dir/term.err")"

finish
