#!/usr/bin/env bash
# The log through the tool (docs/log.md), on a private one-node JetStream
# and the suite's MariaDB:
#  - keel stream create makes a log or checks it, and refuses one that
#    differs;
#  - keel publish rejects exactly the lines keel ingest rejects, with the
#    same messages, publishes the rest, and a second run stores nothing
#    (Nats-Msg-Id); a plain JetStream producer (tests/nats_pub.c, which
#    computes partitions from the documented hash itself) publishes other
#    tenants in structured and binary content mode;
#  - keel consume projects all of it into MariaDB: the dump is that of one
#    keel ingest of the same events; --status shows the positions;
#  - a redelivery that overtakes later messages (KEEL_TEST_CONSUME_DROP)
#    is waited for, not skipped: the dump is the same again;
#  - a store map over two databases: the union of their dumps is the same,
#    and keel serve --store-map reads each tenant from its database;
#  - keel serve --forward answers POSTs once the log has their events (with
#    ingest's rejections), and a consumer of that log makes the same dump;
#  - an unreachable log is a clear error (publish) or a retry (consume), a
#    store that keeps no positions (SQLite) a clear error, and a log that
#    ends before the positions its store holds (made anew after the server
#    lost its data) stops a consumer with a clear error, every position
#    left as it was; --status shows the negative lag.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/log_lib.sh"
needs_mysql
needs_nats
nats_start 1

# --- keel stream create
"$KEEL" stream create "$servers" --stream ev --partitions 3 >"$dir/create" ||
	fail "stream create: $(cat "$dir/create")"
grep -q '^stream ev-2 (subject ev.2): made, 1 replica$' "$dir/create" || fail "$(cat "$dir/create")"
grep -q '^bucket ev-leases: made, lease 5000 ms$' "$dir/create" || fail "$(cat "$dir/create")"
"$KEEL" stream create "$servers" --stream ev --partitions 3 >"$dir/create" ||
	fail "stream create again: $(cat "$dir/create")"
grep -q '^stream ev-0 (subject ev.0): exists, 0 messages$' "$dir/create" || fail "$(cat "$dir/create")"
set +e
"$KEEL" stream create "$servers" --stream ev --partitions 4 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a log of other partitions: exit $rc"
grep -q 'log "ev" exists with 3 partitions, not 4' "$dir/err" || fail "$(cat "$dir/err")"
set +e
"$KEEL" stream create "$servers" --stream "e.v" --partitions 2 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "log name \"e.v\": not 1 to 64 letters" "$dir/err" ||
	fail "a bad log name: exit $rc: $(cat "$dir/err")"

# --- keel publish: what ingest rejects is rejected alike
in=$dir/fleet.ndjson
"$KEEL" generate fleet --events 3000 --tenants 4 --seed 7 --late 0.05 --duplicates 0.03 --output "$in"
bad=$dir/bad.ndjson
{
	head -n 1000 "$in"
	echo '{"specversion":"1.0","id":"x1","source":"/s","type":"fleet.x","time":"not a time","tenant":"tenant-00","data":{}}'
	echo 'not json'
	echo '{"specversion":"1.0","source":"/s","type":"fleet.x","time":"2026-01-01T00:00:00Z","tenant":"tenant-00"}'
	tail -n +1001 "$in"
} >"$bad"
set +e
"$KEEL" publish "$bad" --to "$servers" --stream ev 2>"$dir/pub.err"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "publish with bad lines: exit $rc: $(cat "$dir/pub.err")"
set +e
"$KEEL" ingest "$bad" --cartridge fleet --store memory: 2>"$dir/ingest.err"
set -e
grep '^keel ingest: line' "$dir/ingest.err" | sed 's/^keel ingest: //' >"$dir/ingest.rejects"
grep '^keel publish: line' "$dir/pub.err" | sed 's/^keel publish: //' >"$dir/pub.rejects"
[ "$(wc -l <"$dir/pub.rejects")" -eq 3 ] || fail "publish rejected: $(cat "$dir/pub.err")"
cmp "$dir/ingest.rejects" "$dir/pub.rejects" ||
	fail "publish and ingest reject differently: $(cat "$dir/pub.rejects") / $(cat "$dir/ingest.rejects")"
grep -q '^read 3003 events' "$dir/pub.err" || fail "$(cat "$dir/pub.err")"
published=$(sed -n 's/^published \([0-9]*\), duplicates \([0-9]*\) .*rejected 3$/\1 \2/p' "$dir/pub.err")
[ -n "$published" ] || fail "no report: $(cat "$dir/pub.err")"
read -r published duplicates <<<"$published"
[ $((published + duplicates)) -eq 3000 ] && [ "$published" -gt 2800 ] ||
	fail "published $published, duplicates $duplicates"
# again: every event is in the log already (its Nats-Msg-Id)
"$KEEL" publish "$in" --to "$servers" --stream ev 2>"$dir/pub2.err" || fail "$(cat "$dir/pub2.err")"
grep -q '^published 0, duplicates 3000 (already in the log), rejected 0$' "$dir/pub2.err" ||
	fail "second publish: $(cat "$dir/pub2.err")"

# --- a producer that is not Keel, both content modes, other tenants
"$KEEL" generate fleet --events 1500 --tenants 3 --seed 8 --output "$dir/other.ndjson"
python3 "$(dirname "$0")/cli/log_wire.py" --tenant-prefix plain ev 3 mixed "$dir/other.ndjson" \
	"$dir/other.wire" "$dir/other.expected"
[ "$("$KEEL_NATS_PUB" "$servers" "$dir/other.wire")" = 1500 ] || fail "nats_pub"

# --- one consumer: the store's dump is one ingest's
reference "$in" "$dir/other.expected"
url=$($KEEL_TEST_MYSQL_FRESH)
consumer_start c1 "$servers" --stream ev --store "$url" --cartridge fleet --commit-interval 200
wait_until 60 caught_up ev --store "$url" || fail "not caught up: $(cat "$dir/status")"
consumer_stop c1
same_dump "$url" "one consumer"
grep -q '^keel consume: c1: partition 2: taken (token [0-9]*), resuming after seq 0$' "$dir/c1.log" ||
	fail "c1: $(cat "$dir/c1.log")"
# --status: each partition, its stored position, last sequence, no lag
"$KEEL" consume "$servers" --stream ev --store "$url" --status >"$dir/status"
[ "$(awk 'NR > 1 && $6 == 0 && $4 == $5' "$dir/status" | wc -l)" -eq 3 ] ||
	fail "status: $(cat "$dir/status")"
"$KEEL" consume "$servers" --stream ev --store "$url" --status --prometheus >"$dir/prom"
grep -q '^keel_log_lag{log="ev",partition="0"} 0$' "$dir/prom" || fail "$(cat "$dir/prom")"
last0=$(awk '$1 == 0 { print $5 }' "$dir/status")
grep -q "^keel_log_stored_seq{log=\"ev\",partition=\"0\"} $last0\$" "$dir/prom" ||
	fail "$(cat "$dir/prom")"

# --- a redelivery that overtakes: every 7th message's first delivery is
# dropped; later ones wait for it, the position never passes it
url2=$($KEEL_TEST_MYSQL_FRESH)
KEEL_TEST_CONSUME_DROP=7 consumer_start c2 "$servers" --stream ev --store "$url2" \
	--cartridge fleet --ack-wait 1000
wait_until 90 caught_up ev --store "$url2" || fail "not caught up: $(cat "$dir/status")"
consumer_stop c2
grep -q 'partition [0-9]: seq [0-9]*7 came after [0-9]* later messages, which waited for it' \
	"$dir/c2.log" || grep -q 'came after [0-9]* later messages' "$dir/c2.log" ||
	fail "no redelivery overtook: $(cat "$dir/c2.log")"
same_dump "$url2" "redeliveries overtaking"

# --- a store map: two databases, partition 0-1 and 2; their union
mapa=$($KEEL_TEST_MYSQL_FRESH)
mapb=$($KEEL_TEST_MYSQL_FRESH)
printf '# partitions  store\n0-1 %s\n\n2   %s\n' "$mapa" "$mapb" >"$dir/map"
consumer_start c3 "$servers" --stream ev --store-map "$dir/map" --cartridge fleet
wait_until 60 caught_up ev --store-map "$dir/map" || fail "map: $(cat "$dir/status")"
consumer_stop c3
"$KEEL" dump --store "$mapa" >"$dir/a.dump"
"$KEEL" dump --store "$mapb" >"$dir/b.dump"
[ -s "$dir/a.dump" ] && [ -s "$dir/b.dump" ] || fail "a store of the map is empty"
"$KEEL" load "$dir/a.dump" --store "sqlite:$dir/union.db"
"$KEEL" load "$dir/b.dump" --store "sqlite:$dir/union.db"
same_dump "sqlite:$dir/union.db" "the store map's union"
# keel serve reads through the same map: each tenant from its store, the
# tenants of both listed, as the union answers
"$KEEL" serve --listen 127.0.0.1:0 --store-map "$dir/map" --forward "$servers" --stream ev \
	--quiet 2>"$dir/serve-map.log" &
pid=$!
wait_port "$dir/serve-map.log"
curl -s "http://127.0.0.1:$port/v1/tenants" >"$dir/tenants.http"
"$KEEL" tenants --store "sqlite:$dir/union.db" --json >"$dir/tenants.union"
cmp "$dir/tenants.union" "$dir/tenants.http" ||
	fail "tenants through the map: $(cat "$dir/tenants.http") / $(cat "$dir/tenants.union")"
for t in tenant-00 tenant-01 tenant-02 tenant-03 plain-00 plain-01 plain-02; do
	curl -s "http://127.0.0.1:$port/v1/tenants/$t/stats" >"$dir/stats.http"
	"$KEEL" stats --tenant "$t" --store "sqlite:$dir/union.db" --json >"$dir/stats.union"
	cmp -s "$dir/stats.union" "$dir/stats.http" ||
		fail "$t's stats through the map: $(cat "$dir/stats.http") / $(cat "$dir/stats.union")"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE \
	"http://127.0.0.1:$port/v1/tenants/tenant-00/entities/V-0001")" = 501 ] ||
	fail "forget through a map"
kill -TERM "$pid"
wait "$pid" || true
pid=
printf '0 %s\n' "$mapa" >"$dir/short.map"
set +e
"$KEEL" consume "$servers" --stream ev --store-map "$dir/short.map" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q 'store map: partition 1 of 3 is in 0 ranges' "$dir/err" ||
	fail "a map that leaves partitions out: exit $rc: $(cat "$dir/err")"

# --- keel serve --forward: a POST is answered once the log has its
# events, with ingest's rejections; a consumer makes of them what one
# ingest makes
"$KEEL" stream create "$servers" --stream fw --partitions 2 >/dev/null
"$KEEL" serve --listen 127.0.0.1:0 --store "sqlite:$dir/reads.db" --forward "$servers" \
	--stream fw --quiet 2>"$dir/serve.log" &
pid=$!
wait_port "$dir/serve.log"
split -l 700 -d "$bad" "$dir/post."
accepted=0
duplicates=0
for f in "$dir"/post.*; do
	curl -s -H 'Content-Type: application/x-ndjson' --data-binary "@$f" \
		"http://127.0.0.1:$port/v1/events" >"$dir/answer"
	a=$(sed -n 's/.*"accepted":\([0-9]*\),"duplicates":\([0-9]*\),.*/\1 \2/p' "$dir/answer")
	[ -n "$a" ] || fail "forward: $(cat "$dir/answer")"
	accepted=$((accepted + ${a% *}))
	duplicates=$((duplicates + ${a#* }))
	cat "$dir/answer" >>"$dir/answers"
done
[ $((accepted + duplicates)) -eq 3000 ] || fail "forwarded $accepted, duplicates $duplicates"
# the three bad lines of the second POST (indexes 300-302), as ingest words them
for r in 'index 300: event \"x1\": field \"time\": not an RFC 3339 timestamp' \
	'index 301: invalid JSON at byte 0: invalid literal' 'index 302: field \"id\": missing'; do
	grep -qF "$r" "$dir/answers" || fail "forward's rejections: no $r in $(cat "$dir/answers")"
done
kill -TERM "$pid"
wait "$pid" || true
pid=
reference "$in"
urlf=$($KEEL_TEST_MYSQL_FRESH)
consumer_start c5 "$servers" --stream fw --store "$urlf" --cartridge fleet
wait_until 60 caught_up fw --store "$urlf" || fail "fw: $(cat "$dir/status")"
consumer_stop c5
same_dump "$urlf" "events POSTed to keel serve --forward"

# --- what cannot work says so
set +e
"$KEEL" consume "$servers" --stream ev --store "sqlite:$dir/x.db" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q 'keeps no log positions' "$dir/err" ||
	fail "sqlite: exit $rc: $(cat "$dir/err")"
set +e
"$KEEL" consume "$servers" --stream nosuch --store "$url" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q 'log "nosuch" not found' "$dir/err" ||
	fail "no such log: exit $rc: $(cat "$dir/err")"
set +e
"$KEEL" publish "$in" --to nats://127.0.0.1:1 --stream ev 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q 'cannot reach the log at nats://127.0.0.1:1' "$dir/err" ||
	fail "publish to nowhere: exit $rc: $(cat "$dir/err")"
# A log behind its store: the JetStream server loses its data and the log
# is made anew (its streams start again at seq 1) while the store keeps
# the positions c1 stored. A consumer must stop and say so: resuming after
# its stored position would drop the new log's messages as redeliveries.
"$KEEL_NATS_SCRIPT" kill "$nats_dir" 1
rm -rf "$nats_dir/n1"
"$KEEL_NATS_SCRIPT" restart "$nats_dir" 1
"$KEEL" stream create "$servers" --stream ev --partitions 3 >/dev/null
head -n 30 "$in" | "$KEEL" publish - --to "$servers" --stream ev --quiet
"$KEEL" consume "$servers" --stream ev --store "$url" --status >"$dir/status"
awk 'NR > 1 && $6 < 0 && $6 == $5 - $4 { n++ } END { exit n != 3 }' "$dir/status" ||
	fail "a log behind its store: --status shows no negative lag: $(cat "$dir/status")"
set +e
timeout 60 "$KEEL" consume "$servers" --stream ev --store "$url" --name c6 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] &&
	grep -q 'partition [0-2] of log "ev": the log ends at seq [0-9]*, before seq [0-9]*, which its store .* holds as applied: the log lost messages after they were applied, or was made anew; stopping' "$dir/err" ||
	fail "a log behind its store: exit $rc: $(cat "$dir/err")"
"$KEEL" consume "$servers" --stream ev --store "$url" --status >"$dir/status2"
[ "$(awk '{ print $1, $4 }' "$dir/status")" = "$(awk '{ print $1, $4 }' "$dir/status2")" ] ||
	fail "the consumer moved a position: $(cat "$dir/status2")"

# consume keeps trying, and says so once
consumer_start c4 nats://127.0.0.1:1 --stream ev --store "$url"
wait_until 20 grep -q 'cannot reach the log at nats://127.0.0.1:1: .*; retrying every second' \
	"$dir/c4.log" || fail "c4: $(cat "$dir/c4.log")"
kill -0 "$(cat "$dir/c4.pid")" || fail "the consumer gave up"
consumer_stop c4
echo "ok"
