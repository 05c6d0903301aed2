# log_lib.sh - what the log's shell tests (tests/log_*.sh) share, on top
# of scratch.sh: a private JetStream (scripts/nats-test-cluster) stopped at
# the end with every consumer the test started, and waits on a log's
# positions through keel consume --status.
#
#   needs_nats               skip unless the suite built the log's tools
#   nats_start N             start N nodes under $dir/nats; sets $servers
#   consumer_start NAME ...  keel consume ... in the background, stderr to
#                            $dir/NAME.log, its process id in $dir/NAME.pid
#   consumer_stop NAME       SIGTERM, and wait for it to end
#   caught_up STREAM STORE   every partition's stored position is its last
#   reference FILE...        the dump of one keel ingest of FILEs, in order
#                            (SQLite), in $dir/reference.dump
#   nats_report              each node's own view of every stream (its
#                            copy's first and last sequence, the leader it
#                            knows), from its monitoring endpoint

needs_nats() {
	if [ -z "${KEEL_NATS_SCRIPT:-}" ] || [ -z "${KEEL_NATS_PUB:-}" ]; then
		skip_test "the log's tools are not built (KEEL_WITH_NATS off)"
	fi
	if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/bin/nats-server ] &&
		[ "$(id -u)" != 0 ]; then
		skip_test "no nats-server (apt-get install nats-server)"
	fi
}

consumers=()
nats_dir=
log_cleanup() {
	local rc=$? name
	set +e
	for name in "${consumers[@]}"; do
		kill -KILL "$(cat "$dir/$name.pid" 2>/dev/null)" 2>/dev/null
		kill -CONT "$(cat "$dir/$name.pid" 2>/dev/null)" 2>/dev/null
	done
	if [ -n "$nats_dir" ] && [ -d "$nats_dir" ]; then
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
			for name in "${consumers[@]}"; do
				echo "--- $name's log:"
				cat "$dir/$name.log" 2>/dev/null
			done
			"$KEEL_NATS_SCRIPT" stop "$nats_dir" | tail -n 200
		else
			"$KEEL_NATS_SCRIPT" stop "$nats_dir" >/dev/null
		fi
	fi
	(exit "$rc")
	scratch_cleanup
}
trap log_cleanup EXIT

nats_start() {
	nats_dir=$dir/nats
	servers=$("$KEEL_NATS_SCRIPT" start "$nats_dir" "$1") || fail "JetStream did not start"
}

nats_report() {
	local i n
	n=$(cat "$nats_dir/nodes" 2>/dev/null || echo 0)
	for i in $(seq 1 "$n"); do
		echo "--- node n$i's streams:"
		curl -s --max-time 2 "http://127.0.0.1:$(cat "$nats_dir/n$i.http")/jsz?streams=true" |
			python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    print("  (no answer)"); sys.exit(0)
for a in d.get("account_details") or []:
    for st in sorted(a.get("stream_detail") or [], key=lambda x: x["name"]):
        s, c = st["state"], st.get("cluster") or {}
        print("  %-10s first %-6s last %-6s msgs %-6s leader %s" % (st["name"],
              s.get("first_seq"), s.get("last_seq"), s.get("messages"), c.get("leader")))
' || true
	done
}

consumer_start() {
	local name=$1 known
	shift
	for known in "${consumers[@]}"; do [ "$known" = "$name" ] && break; done
	[ "${known:-}" = "$name" ] || consumers+=("$name")
	"$KEEL" consume "$@" --name "$name" >>"$dir/$name.log" 2>&1 &
	echo $! >"$dir/$name.pid"
}

consumer_stop() {
	local p
	p=$(cat "$dir/$1.pid")
	kill -TERM "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}

# caught_up STREAM STORE_OPTION...: true when keel consume --status shows
# every partition with its last sequence stored (and at least one message)
caught_up() {
	local stream=$1
	shift
	# not sooner than every half second: each look is a process (under
	# ASan a costly one) that the consumers would wait for
	if "$KEEL" consume "$servers" --stream "$stream" "$@" --status >"$dir/status" 2>&1 &&
		awk 'NR > 1 { if ($4 != $5) bad = 1; total += $5 } END { exit bad || total == 0 }' \
			"$dir/status"; then
		return 0
	fi
	sleep 0.5
	return 1
}

reference() {
	rm -f "$dir/reference.db"
	local f
	for f in "$@"; do
		"$KEEL" ingest "$f" --cartridge fleet --quiet --store "sqlite:$dir/reference.db" || true
	done
	"$KEEL" dump --store "sqlite:$dir/reference.db" >"$dir/reference.dump"
	[ -s "$dir/reference.dump" ] || fail "empty reference dump"
}

# same_dump STORE WHAT: the store's dump is the reference's
same_dump() {
	"$KEEL" dump --store "$1" >"$dir/got.dump"
	if ! cmp -s "$dir/reference.dump" "$dir/got.dump"; then
		diff "$dir/reference.dump" "$dir/got.dump" | head -n 40 | cut -c1-400
		fail "$2: the dump differs from one keel ingest's ($(wc -l <"$dir/got.dump") lines, reference $(wc -l <"$dir/reference.dump"); the first differences above)"
	fi
}
