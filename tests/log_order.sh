#!/usr/bin/env bash
# Each tenant's events are in the log in input order, whatever the
# publisher has to send again (docs/log.md, "Order"): a private three-node
# JetStream cluster with a replicated log (R3) of 2 partitions; keel
# publish sends events of 8 tenants, in chunks (a publisher starting
# afresh each time), while the partitions' stream leaders are made to
# step down every 0.1 s (each step-down is an election: publishes in
# flight are lost and time out, or fail at once for want of a leader,
# and are sent again, while later ones reach the new leader). Then a
# plain client reads the log, and each tenant's events in it must be
# exactly the input's, in the input's order: none missing, none twice,
# none moved. KEEL_LOG_ORDER_EVENTS (default 4000) sets how many events.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/log_lib.sh"
needs_nats
command -v python3 >/dev/null || skip_test "no python3"
events=${KEEL_LOG_ORDER_EVENTS:-4000}

nats_start 3
"$KEEL" stream create "$servers" --stream ev --partitions 2 --replicas 3 >/dev/null
in=$dir/in.ndjson
"$KEEL" generate fleet --events "$events" --tenants 8 --seed 5 --late 0.05 \
	--output "$in"

split -l 400 -d -a 3 "$in" "$dir/chunk."
(
	for chunk in "$dir"/chunk.*; do
		"$KEEL" publish "$chunk" --to "$servers" --stream ev --verbose ||
			{ echo "keel publish $chunk: exit $?"; exit 1; }
	done
) 2>>"$dir/publish.log" >&2 &
publisher=$!
# Elections all along the publishing: each stream's leader steps down (the
# cluster elects another among the two others), then again 0.1 s later.
rounds=0
while kill -0 "$publisher" 2>/dev/null; do
	"$KEEL_NATS_PUB" "$servers" --stepdown ev-0 ev-1 2>>"$dir/stepdown.log" ||
		fail "step down: $(tail -n 3 "$dir/stepdown.log")"
	rounds=$((rounds + 1))
	sleep "${KEEL_LOG_ORDER_PAUSE:-0.1}"
done
wait "$publisher" || fail "keel publish failed: $(grep -v 'sending again' "$dir/publish.log" | tail -n 20)"
elected=$(grep -c '"success":true' "$dir/stepdown.log" || true)
echo "$rounds rounds of step-downs, $elected leaders stepped down; $(grep -c 'sending again' "$dir/publish.log" || true) rounds of publishes sent again; $SECONDS s"
# a test without elections during the publishing proves nothing
[ "$elected" -ge 2 ] || fail "only $elected step-downs during the publishing: $(cat "$dir/stepdown.log")"

"$KEEL_NATS_PUB" "$servers" --read ev-0 >"$dir/log.ndjson" || fail "reading ev-0"
"$KEEL_NATS_PUB" "$servers" --read ev-1 >>"$dir/log.ndjson" || fail "reading ev-1"
# Each tenant's ids, in the order of the input, and of the log
python3 - "$in" "$dir/log.ndjson" <<'EOF' || fail "the log's order is not the input's (above)"
import json, sys
def tenants(path):
    # each tenant's events by identity; a copy of one already seen is
    # a duplicate, which the log (its Nats-Msg-Id) does not store again
    out, seen = {}, set()
    for line in open(path, encoding="utf-8"):
        if line.strip():
            ev = json.loads(line)
            key = (ev["tenant"], ev["source"], ev["id"])
            if key not in seen:
                seen.add(key)
                out.setdefault(ev["tenant"], []).append(ev["source"] + " " + ev["id"])
    return out
want, got = tenants(sys.argv[1]), tenants(sys.argv[2])
bad = 0
for t in sorted(set(want) | set(got)):
    w, g = want.get(t, []), got.get(t, [])
    if w != g:
        bad += 1
        i = next((k for k in range(min(len(w), len(g))) if w[k] != g[k]), min(len(w), len(g)))
        print("tenant %s: %d events in the input, %d in the log; first difference at its "
              "event %d: input %s, log %s" % (t, len(w), len(g), i + 1,
              w[i:i + 3], g[i:i + 3]))
print("%d tenants, %d events in the log" % (len(got), sum(len(g) for g in got.values())))
sys.exit(1 if bad else 0)
EOF
echo "ok"
