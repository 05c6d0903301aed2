#!/usr/bin/env bash
# cli_interrupt.sh - SIGINT and SIGTERM stop keel ingest the same way for
# every input (docs/cli.md): a file, several files, standard input that is
# a file, and --replay, also while a read waits on a silent pipe (a FILE
# that is a FIFO, a pipe under --replay). The report starts with "interrupted: ", the exit
# status is that of a finished run (3 here: one line is rejected), what the
# report counts as accepted is exactly what the store holds, and running
# the same command again completes the store to the dump of an
# uninterrupted run, nothing lost or duplicated. (--follow and pipes:
# cli_live.sh; --workers: mysql_replay.sh.)
. "$(dirname "$0")/cli/lib.sh"

# A long input whose second line is rejected: its message on stderr shows
# that the ingest has started reading, without any fixed wait.
expect 0 "$KEEL" generate fleet --events 20000 --seed 3 --output "$dir/gen.ndjson"
{
	head -n 1 "$dir/gen.ndjson"
	echo '{"specversion":"1.0","id":"bad","tenant":"acme","type":"fleet.trip.started","time":"not a time","data":{}}'
	tail -n +2 "$dir/gen.ndjson"
} >"$dir/in.ndjson"
head -n 10000 "$dir/in.ndjson" >"$dir/in-a.ndjson"
tail -n +10001 "$dir/in.ndjson" >"$dir/in-b.ndjson"

expect 3 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/ref.db" --quiet
expect 0 "$KEEL" dump --store "sqlite:$dir/ref.db" --output "$dir/ref.dump"

# events DB: the events the store holds (all tenants).
events() {
	"$KEEL" stats --store "$1" 2>/dev/null |
		sed -n 's/.*"total":{"entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":\([0-9]*\)}.*/\1/p' |
		grep . || echo 0
}

# report_count FILE WORD: the number after WORD in the report in FILE.
report_count() {
	sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$1" | head -n 1
}

# interrupt NAME SIGNAL CMD...: starts CMD with stderr in $dir/NAME.err,
# waits (polling, 60 s at most) for the rejection of line 2, sends SIGNAL
# and checks the report and the exit status. The batch is 1 event, so
# that the run is still under way when the signal comes.
interrupt() {
	local name=$1 sig=$2 i
	shift 2
	"$@" 2>"$dir/$name.err" &
	local pid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -q 'line 2: event "bad"' "$dir/$name.err" && break
		sleep 0.05
	done
	kill "-$sig" "$pid"
	wait "$pid"
	local st=$?
	[ "$st" -eq 3 ] || fail "$name: exit $st after SIG$sig, expected 3: $(cat "$dir/$name.err")"
	grep -q '^interrupted: read [0-9]* events' "$dir/$name.err" ||
		fail "$name: no interrupted: report: $(cat "$dir/$name.err")"
	lacks "$name.err" "read 20001 events"
}

# check_store NAME DB ACCEPTED_EXPECTED: the store holds what was reported.
check_store() {
	local accepted read
	accepted=$(report_count "$dir/$1.err" accepted)
	read=$(report_count "$dir/$1.err" read)
	[ -n "$accepted" ] || { fail "$1: no accepted count"; return; }
	[ "$(events "$2")" -eq "$accepted" ] ||
		fail "$1: the report says accepted $accepted, the store holds $(events "$2") events"
	[ "$read" -lt 20001 ] || fail "$1: read everything ($read) before the signal"
}

# rerun NAME DB CMD...: the same command again completes the store.
rerun() {
	local name=$1 db=$2
	shift 2
	expect 3 "$@" --quiet
	expect 0 "$KEEL" dump --store "$db" --output "$dir/$name.dump"
	cmp -s "$dir/$name.dump" "$dir/ref.dump" ||
		fail "$name: after the run again the dump differs from an uninterrupted run"
}

# One file, SIGINT.
db=sqlite:$dir/file.db
interrupt file INT "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$db" --batch 1
check_store file "$db"
[ "$(events "$db")" -gt 0 ] || fail "file: nothing committed before the signal"
rerun file "$db" "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$db"

# Several files, SIGTERM.
db=sqlite:$dir/files.db
interrupt files TERM "$KEEL" ingest --cartridge fleet "$dir/in-a.ndjson" "$dir/in-b.ndjson" --store "$db" --batch 1
check_store files "$db"
rerun files "$db" "$KEEL" ingest --cartridge fleet "$dir/in-a.ndjson" "$dir/in-b.ndjson" --store "$db"

# Standard input redirected from a file (read straight through), SIGINT.
db=sqlite:$dir/stdin.db
interrupt stdin INT bash -c 'exec "$0" ingest - --cartridge fleet --store "$1" --batch 1 <"$2"' \
	"$KEEL" "$db" "$dir/in.ndjson"
check_store stdin "$db"
rerun stdin "$db" bash -c 'exec "$0" ingest - --cartridge fleet --store "$1" <"$2"' "$KEEL" "$db" "$dir/in.ndjson"

# --replay writes only at its end: interrupted, it writes nothing and
# counts nothing accepted, so that the same command loads the tenants whole.
# Its input comes through a FIFO held open until the signal is sent, so the
# signal cannot come after the end of the input.
db=sqlite:$dir/bulk.db
mkfifo "$dir/fifo"
"$KEEL" ingest --cartridge fleet --replay - --store "$db" <"$dir/fifo" 2>"$dir/bulk.err" &
pid=$!
exec 3>"$dir/fifo"
head -n 5000 "$dir/in.ndjson" >&3
for ((i = 0; i < 1200; i++)); do
	grep -q 'line 2: event "bad"' "$dir/bulk.err" && break
	sleep 0.05
done
kill -INT "$pid"
tail -n +5001 "$dir/in.ndjson" >&3
exec 3>&-
wait "$pid"
st=$?
[ "$st" -eq 3 ] || fail "bulk: exit $st after SIGINT, expected 3: $(cat "$dir/bulk.err")"
grep -q '^interrupted: read [0-9]* events' "$dir/bulk.err" ||
	fail "bulk: no interrupted: report: $(cat "$dir/bulk.err")"
check_store bulk "$db"
contains bulk.err "accepted 0, duplicates 0"
lacks bulk.err "written by"
[ "$(events "$db")" -eq 0 ] || fail "bulk: an interrupted --replay wrote $(events "$db") events"
rerun bulk "$db" "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "$db"


# A read that waits: input read straight through (not live) from a FIFO
# that stays open and silent after the signal. The signal stops the run
# while keel waits for more input, not when more input comes: a FILE that is
# a named pipe, and standard input that is a pipe under --replay.
gone() { ! kill -0 "$1" 2>/dev/null; }
waiting() {
	local name=$1 i
	shift
	rm -f "$dir/fifo"
	mkfifo "$dir/fifo"
	"$@" 2>"$dir/$name.err" &
	local pid=$!
	exec 4>"$dir/fifo"
	head -n 5000 "$dir/in.ndjson" >&4
	for ((i = 0; i < 1200; i++)); do
		grep -q 'line 2: event "bad"' "$dir/$name.err" && break
		sleep 0.05
	done
	kill -INT "$pid"
	wait_until 20 gone "$pid" ||
		fail "$name: SIGINT did not stop keel while it waited for input"
	exec 4>&-
	wait "$pid"
	local st=$?
	[ "$st" -eq 3 ] || fail "$name: exit $st after SIGINT, expected 3: $(cat "$dir/$name.err")"
	grep -q '^interrupted: read [0-9]* events' "$dir/$name.err" ||
		fail "$name: no interrupted: report: $(cat "$dir/$name.err")"
}
db=sqlite:$dir/fifofile.db
waiting fifofile "$KEEL" ingest --cartridge fleet "$dir/fifo" --store "$db"
check_store fifofile "$db"
[ "$(events "$db")" -gt 0 ] || fail "fifofile: nothing committed before the signal"
db=sqlite:$dir/bulkwait.db
waiting bulkwait bash -c 'exec "$0" ingest --cartridge fleet --replay - --store "$1" <"$2"' "$KEEL" "$db" "$dir/fifo"
contains bulkwait.err "accepted 0, duplicates 0"
[ "$(events "$db")" -eq 0 ] || fail "bulkwait: an interrupted --replay wrote $(events "$db") events"

finish
