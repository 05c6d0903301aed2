#!/usr/bin/env bash
# Every event applied exactly once whatever fails (docs/log.md, "Exactly
# once" and "Testing"):
# a private three-node JetStream cluster with a log of 6 partitions, each
# message on all three (R3); three keel consume into two MariaDB servers
# through a store map (partitions 0-2 into a private server this test
# restarts, 3-5 into the suite's); events published in chunks meanwhile.
# Then, at random moments, at least 20 faults of four kinds:
#   - a consumer killed with SIGKILL (and started again),
#   - a consumer stopped with SIGSTOP past its lease, then SIGCONT,
#   - a JetStream node killed with SIGKILL, then restarted,
#   - the private database server killed and restarted.
# Before them, one consumer is stopped while it holds uncommitted events
# and continued once the others took its partitions: its late commit is
# refused (the test shows the refusal). At the end a plain client reads
# the log: it holds exactly the events published, and the union of the two
# stores' dumps is exactly the dump of one keel ingest of the log's events
# in the log's order, which keeps each tenant's events in input order
# whatever the publishers sent again (docs/log.md, "Order").
# KEEL_LOG_FAULTS (default 20) sets how many random faults;
# KEEL_LOG_FAULT_KINDS (say "node") draws them from these kinds only.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/log_lib.sh"
needs_mysql
needs_nats
: "${KEEL_MYSQL_SCRIPT:?the MariaDB test server script}"
lease=2000

nats_start 3
dbdir=$dir/mariadb
db_cleanup() {
	local rc=$?
	set +e
	[ -n "${publisher:-}" ] && kill "$publisher" 2>/dev/null
	[ -d "$dbdir" ] && "$KEEL_MYSQL_SCRIPT" stop "$dbdir" >"$dir/mariadb.log" 2>&1
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		tail -n 50 "$dir/mariadb.log"
		echo "--- the publishers' messages:"
		cat "$dir/publish.log" 2>/dev/null
	fi
	(exit "$rc")
	log_cleanup
}
trap db_cleanup EXIT
publisher=
urla=$("$KEEL_MYSQL_SCRIPT" start "$dbdir")
urlb=$($KEEL_TEST_MYSQL_FRESH)
printf '0-2 %s\n3-5 %s\n' "$urla" "$urlb" >"$dir/map"

"$KEEL" stream create "$servers" --stream ev --partitions 6 --replicas 3 --lease "$lease" \
	>/dev/null
in=$dir/in.ndjson
"$KEEL" generate fleet --events 4000 --tenants 12 --seed 11 --late 0.05 --duplicates 0.03 \
	--output "$in"
split -l 250 -d -a 2 "$in" "$dir/chunk."
reference "$in" &
referenced=$!

start() { # start NAME [more options]: a consumer of the map
	local name=$1
	shift
	consumer_start "$name" "$servers" --stream ev --store-map "$dir/map" --cartridge fleet \
		--ack-wait 3000 "$@"
}
publish() { # publish CHUNK: retried until the log takes it (a node may be down)
	local t
	for t in 1 2 3; do
		timeout 150 "$KEEL" publish "$1" --to "$servers" --stream ev --quiet \
			2>>"$dir/publish.log" && return 0
		echo "publish $1: exit $?" >>"$dir/publish.log"
		sleep 2
	done
	return 1
}
for name in c1 c2 c3; do start "$name" --commit-interval 300; done

# --- the refused late commit: c1 commits what it took 3 s later, so
# stopped just after a chunk it holds events of its partitions uncommitted
consumer_stop c1
: >"$dir/c1.log" # its 'taken' lines are the new process's
start c1 --commit-interval 3000 --linger 3000
refused=false
chunks=("$dir"/chunk.*)
next=0
for attempt in 1 2 3; do
	wait_until 30 grep -q 'taken' "$dir/c1.log" || fail "c1 took nothing: $(cat "$dir/c1.log")"
	publish "${chunks[$next]}" || fail "publish: $(tail -n 5 "$dir/publish.log")"
	next=$((next + 1))
	sleep 1 # c1 has fetched some of the chunk, and not committed it
	kill -STOP "$(cat "$dir/c1.pid")"
	# the others take c1's partitions once its leases run out
	taken() { [ "$(grep -c 'taken' "$dir/c2.log" "$dir/c3.log" | awk -F: '{ n += $2 } END { print n }')" -gt "$1" ]; }
	before=$(grep -c 'taken' "$dir/c2.log" "$dir/c3.log" | awk -F: '{ n += $2 } END { print n }')
	wait_until 30 taken "$before" || fail "nobody took c1's partitions"
	kill -CONT "$(cat "$dir/c1.pid")"
	# c1's transaction is older than its commit interval when it wakes: it
	# commits at once, or held nothing
	if wait_until 8 grep -q 'fencing token [0-9]* is lower than the stored [0-9]*' "$dir/c1.log"; then
		refused=true
		break
	fi
done
$refused || fail "c1's late commit was not refused: $(cat "$dir/c1.log")"
grep -m 1 'fencing token' "$dir/c1.log"
echo "refused at ${SECONDS} s"
consumer_stop c1
start c1 --commit-interval 300

# --- chunks keep coming while faults happen
publisher=
(
	for ((i = next; i < ${#chunks[@]}; i++)); do
		publish "${chunks[$i]}" || exit 1
		sleep 0.3
	done
) &
publisher=$!

faults=${KEEL_LOG_FAULTS:-20}
kinds=(kill stop node database)
# KEEL_LOG_FAULT_KINDS (a diagnosis, e.g. "node"): only these kinds
read -r -a only <<<"${KEEL_LOG_FAULT_KINDS:-}"
count=(0 0 0 0)
# A fault that lasts (a consumer stopped past its lease, a node or the
# database down) runs on in the background while the next ones come: at
# most one node and one database fault at a time, so that the cluster keeps
# a quorum more often than not.
jobs_=()
node_job=
db_job=
for ((f = 0; f < faults; f++)); do
	sleep "0.$((RANDOM % 8 + 2))"
	k=$((RANDOM % 4))
	# each kind at least once in the first four
	[ "$f" -lt 4 ] && k=$f
	if [ "${#only[@]}" -gt 0 ]; then
		case ${only[$((RANDOM % ${#only[@]}))]} in
		kill) k=0 ;; stop) k=1 ;; node) k=2 ;; database) k=3 ;;
		esac
	fi
	count[k]=$((count[k] + 1))
	victim=c$((RANDOM % 3 + 1))
	case ${kinds[k]} in
	kill)
		kill -KILL "$(cat "$dir/$victim.pid")" 2>/dev/null || true
		wait "$(cat "$dir/$victim.pid")" 2>/dev/null || true
		sleep "0.$((RANDOM % 9))"
		start "$victim" --commit-interval 300
		;;
	stop)
		p=$(cat "$dir/$victim.pid")
		( # the consumer may be killed meanwhile: then nothing to continue
			kill -STOP "$p" 2>/dev/null || exit 0
			sleep $((lease / 1000 + 1)).5
			kill -CONT "$p" 2>/dev/null || true
		) &
		jobs_+=($!)
		;;
	node)
		if [ -n "$node_job" ]; then wait "$node_job" || fail "a node did not restart"; fi
		node=$((RANDOM % 3 + 1))
		( # the node back and answering; it may still be catching up
			# when the next node fault comes (3 s at most)
			"$KEEL_NATS_SCRIPT" kill "$nats_dir" "$node"
			sleep "0.$((RANDOM % 9 + 1))"
			NATS_TEST_RESTART_WAIT=3 "$KEEL_NATS_SCRIPT" restart "$nats_dir" "$node" 2>/dev/null
		) &
		node_job=$!
		jobs_+=($!)
		;;
	database)
		if [ -n "$db_job" ]; then wait "$db_job" || fail "the database did not restart"; fi
		"$KEEL_MYSQL_SCRIPT" restart "$dbdir" >/dev/null &
		db_job=$!
		jobs_+=($!)
		;;
	esac
	echo "fault $((f + 1)) at ${SECONDS} s: ${kinds[k]}"
done
for j in "${jobs_[@]}"; do wait "$j" || fail "a fault's job failed"; done
# every consumer running again (a stopped one was continued)
for name in c1 c2 c3; do kill -0 "$(cat "$dir/$name.pid")" || fail "$name ended: $(grep -v "; retrying$" "$dir/$name.log" | grep -A12 -m1 "ERROR: AddressSanitizer\|runtime error\|ERROR: LeakSanitizer" || tail -n 5 "$dir/$name.log")"; done
wait "$publisher" || fail "publishing failed: $(tail -n 20 "$dir/publish.log")"
echo "faults: kill ${count[0]}, stop ${count[1]}, node ${count[2]}, database ${count[3]}"

wait_until 180 caught_up ev --store-map "$dir/map" || {
	nats_report
	fail "not caught up: $(cat "$dir/status")"
}
echo "caught up at ${SECONDS} s"
for name in c1 c2 c3; do consumer_stop "$name"; done
"$KEEL" dump --store "$urla" >"$dir/a.dump"
"$KEEL" dump --store "$urlb" >"$dir/b.dump"
"$KEEL" load "$dir/a.dump" --store "sqlite:$dir/union.db"
"$KEEL" load "$dir/b.dump" --store "sqlite:$dir/union.db"

# The log as it is, each partition in sequence order, read by a plain
# client: it holds exactly the events published, each tenant's in input
# order, whatever the publishers had to send again during the faults
# (docs/log.md, "Order"), so one ingest of the log is one ingest of the
# input; and the stores hold exactly one ingest of the log.
wait "$referenced" || fail "the reference ingest failed"
mv "$dir/reference.dump" "$dir/input.dump"
for p in 0 1 2 3 4 5; do
	"$KEEL_NATS_PUB" "$servers" --read "ev-$p" >>"$dir/log.ndjson" || fail "reading ev-$p"
done
reference "$dir/log.ndjson"
if ! cmp -s "$dir/input.dump" "$dir/reference.dump"; then
	diff "$dir/input.dump" "$dir/reference.dump" | head -n 20 | cut -c1-300
	if cmp -s <(sort "$dir/input.dump") <(sort "$dir/reference.dump"); then
		fail "the log holds the events published, but not each tenant's in input order (the first differences above)"
	fi
	fail "the log does not hold exactly the events published (the first differences above)"
fi
same_dump "sqlite:$dir/union.db" "after $((faults + 1)) faults"
echo "ok"
