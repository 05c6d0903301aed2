#!/usr/bin/env bash
# Crash test for keel serve (docs/semantics.md, docs/http.md), on SQLite or on the
# store KEEL_CRASH_STORE names: a producer posts a stream in NDJSON chunks,
# one after another, while the server is killed with SIGKILL at random
# moments, at least 10 times. After each kill
# the store must hold every chunk the producer saw acknowledged, and of the
# chunk in flight all of it or none (a POST is one transaction); nothing
# else. The producer then re-sends the chunk in flight to a restarted
# server. At the end the dump equals `keel ingest` of the whole stream, byte
# for byte: nothing acknowledged lost, nothing duplicated.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

chunk=20
"$KEEL" generate fleet --events "${KEEL_CRASH_EVENTS:-6000}" --tenants 2 --seed 29 --late 0.05 --duplicates 0.02 \
	--output "$dir/in.ndjson"
split -l "$chunk" -d -a 4 "$dir/in.ndjson" "$dir/chunk."
chunks=("$dir"/chunk.*)
# The store under test: SQLite here; tests/mysql_http_crash.sh passes a
# fresh MariaDB database, tests/postgres_http_crash.sh a fresh PostgreSQL
# store and a shorter stream (KEEL_CRASH_EVENTS).
db=${KEEL_CRASH_STORE:-"sqlite:$dir/keel.db"}
"$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/ref.db" --quiet
"$KEEL" dump --store "sqlite:$dir/ref.db" > "$dir/ref.dump"

# Events logged once the first n chunks are in: distinct (tenant, id)
# among their lines (the stream has duplicates; the store logs an id once).
python3 - "$dir/in.ndjson" "$chunk" > "$dir/expected" <<'PY'
import json, sys
seen, counts = set(), [0]
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
n = int(sys.argv[2])
for k, line in enumerate(lines, 1):
    ev = json.loads(line)
    seen.add((ev["tenant"], ev["id"]))
    if k % n == 0 or k == len(lines):
        counts.append(len(seen))
print("\n".join(map(str, counts)))
PY
mapfile -t expected < "$dir/expected"
logged() {
	"$KEEL" dump --store "$db" | grep -c '"type":"event"' || true
}

# server_gone: the server in $pid has exited (or is a zombie).
server_gone() {
	# From /proc, not ps(1): procps is not on a minimal machine. Field 3 of
	# /proc/PID/stat is the state (the command name before it is "keel").
	local state=""
	read -r _ _ state _ 2>/dev/null <"/proc/$pid/stat" || state=""
	[ -z "$state" ] || [ "$state" = Z ]
}

start_server() {
	: > "$dir/log"
	"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$db" --threads 2 2> "$dir/log" &
	pid=$!
	wait_port "$dir/log"
	# the killer: one SIGKILL at a random moment of this server's life (the
	# random moment is the point of this test, not a wait). After 20 kills
	# the servers live on: on a loaded machine a server may answer few
	# chunks in its quarter second, and the test must still end.
	if [ "$kills" -lt 20 ]; then
		( sleep "0.$(printf '%03d' $((RANDOM % 250)))"; kill -KILL "$pid" 2>/dev/null ) &
	fi
}

RANDOM=20261130
kills=0
committed_unanswered=0 # kills that struck after a commit, before its answer
i=0
start_server
while [ "$i" -lt "${#chunks[@]}" ]; do
	status=$(curl -s -o "$dir/out" -w '%{http_code}' -H "Content-Type: application/x-ndjson" \
		--data-binary "@${chunks[$i]}" "http://127.0.0.1:$port/v1/events" || true)
	if [ "$status" = 200 ]; then
		i=$((i + 1))
		continue
	fi
	# No answer: the server was killed with chunk i in flight (or between
	# chunks). It may have committed chunk i or not; nothing else.
	# (the killer may have struck a moment ago: give it 2 s to be gone)
	wait_until 2 server_gone ||
		fail "no answer ($status) from a live server: $(cat "$dir/out")"
	wait "$pid" 2>/dev/null || true
	pid=
	kills=$((kills + 1))
	have=$(logged)
	before=${expected[$i]}
	after=${expected[$((i + 1))]}
	[ "$have" = "$before" ] || [ "$have" = "$after" ] ||
		fail "after kill $kills with chunk $i in flight the store logs $have events, want $before or $after"
	[ "$have" != "$before" ] && committed_unanswered=$((committed_unanswered + 1))
	start_server
done
[ -n "$pid" ] && kill -TERM "$pid" && wait "$pid" || true
pid=
[ "$kills" -ge 10 ] || fail "only $kills kills landed; the test needs 10"
"$KEEL" dump --store "$db" > "$dir/got.dump"
cmp -s "$dir/ref.dump" "$dir/got.dump" || fail "dump differs from an uninterrupted ingest after $kills kills"
echo "ok ($kills kills, $committed_unanswered of them after a commit and before its answer;" \
	"${#chunks[@]} chunks)"
