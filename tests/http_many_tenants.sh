#!/usr/bin/env bash
# http_many_tenants.sh - a store of many tenants stays readable
# (docs/http.md, "Metrics" and "Pages"; docs/cli.md, "keel tenants"):
#  - GET /metrics shows series of their own for the tenants the operator
#    asks for (--metrics-tenants: the first 100 seen by default, N, all, or
#    a list) and sums the rest in keel_other_tenants_events_total, so the
#    counts stay whole; a scoped token still sees its own tenants' series;
#  - GET /v1/tenants and keel tenants answer a page at a time (100 by
#    default, --limit / limit=), with the cursor of the next page, as
#    keel entities does; the pages together are every tenant once.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"

"$KEEL" generate fleet --events 1500 --tenants 250 --seed 7 --output "$dir/in.ndjson"
sed -n 's/.*"tenant":"\([^"]*\)".*/\1/p' "$dir/in.ndjson" | sort -u >"$dir/all-tenants"
[ "$(wc -l <"$dir/all-tenants")" -eq 250 ] || fail "the stream has $(wc -l <"$dir/all-tenants") tenants"
"$KEEL" token new --all >"$dir/all" 2>/dev/null
"$KEEL" token new --tenant tenant-249 >"$dir/one" 2>/dev/null
{ sed -n 2p "$dir/all"; sed -n 2p "$dir/one"; } >"$dir/tokens"
all=(-H "Authorization: Bearer $(sed -n 1p "$dir/all")")
one=(-H "Authorization: Bearer $(sed -n 1p "$dir/one")")

start() { # keel serve's extra options; the stream posted whole
	"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store memory: --threads 2 --quiet \
		--tokens "$dir/tokens" "$@" 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
	url=http://127.0.0.1:$port
	[ "$(curl -s -o "$dir/out" -w '%{http_code}' "${all[@]}" -H 'Content-Type: application/x-ndjson' \
		--data-binary "@$dir/in.ndjson" "$url/v1/events")" = 200 ] || fail "post: $(cat "$dir/out")"
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || fail "keel serve: status $? on SIGTERM"
	pid=
}
# metrics WANT_TENANTS [token...]: the scrape's per-tenant series name
# exactly WANT_TENANTS tenants (a count, or a comma-separated list), and
# with the others' sum they add up to the server-wide count.
metrics() {
	curl -s "${all[@]}" "$url/metrics" >"$dir/metrics"
	python3 - "$dir/metrics" "$1" <<'PY' || fail "metrics ($1): $(grep -v '^keel_tenant_events_total' "$dir/metrics" | head -c 1500)"
import re, sys
text = open(sys.argv[1]).read()
want = sys.argv[2]
series = re.findall(r'^keel_tenant_events_total\{tenant="([^"]*)",outcome="(\w+)"\} (\d+)$', text, re.M)
tenants = sorted({t for t, _, _ in series})
if want.isdigit():
    assert len(tenants) == int(want), ("series of", len(tenants), "tenants")
else:
    assert tenants == sorted(want.split(",")), tenants
for outcome in ("accepted", "duplicate", "conflicting", "unhandled"):
    own = sum(int(v) for _, o, v in series if o == outcome)
    other = int(re.search(r'^keel_other_tenants_events_total\{outcome="%s"\} (\d+)$' % outcome, text, re.M).group(1))
    total = int(re.search(r'^keel_events_total\{outcome="%s"\} (\d+)$' % outcome, text, re.M).group(1))
    assert own + other == total, (outcome, own, other, total)
assert re.search(r'^keel_tenants_seen 250$', text, re.M), "keel_tenants_seen"
assert int(re.search(r'^keel_events_total\{outcome="accepted"\} (\d+)$', text, re.M).group(1)) > 0
PY
}

# --- the default: the first 100 tenants seen
start
metrics 100
# A token scoped to a tenant sees its own series whatever the operator's
# choice, and nothing else.
curl -s "${one[@]}" "$url/metrics" >"$dir/scoped"
grep -qE '^keel_tenant_events_total\{tenant="tenant-249",outcome="accepted"\} [1-9]' "$dir/scoped" ||
	fail "scoped metrics: $(cat "$dir/scoped")"
grep -qE 'keel_other_tenants|keel_tenants_seen|tenant="tenant-0' "$dir/scoped" &&
	fail "a scoped token sees others' figures: $(cat "$dir/scoped")"

# --- GET /v1/tenants, a page at a time
page() { # query -> the page in $dir/out; its status on stdout
	curl -s -o "$dir/out" -w '%{http_code}' "${all[@]}" "$url/v1/tenants$1"
}
: >"$dir/paged"
cursor=
pages=0
while :; do
	[ "$(page "${cursor:+?cursor=$cursor}")" = 200 ] || fail "GET /v1/tenants: $(cat "$dir/out")"
	pages=$((pages + 1))
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\n".join(d["tenants"])); print(d["next"] or "", file=sys.stderr)' \
		"$dir/out" >>"$dir/paged" 2>"$dir/next"
	cursor=$(cat "$dir/next")
	[ -n "$cursor" ] || break
	[ "$pages" -lt 10 ] || fail "GET /v1/tenants does not end"
done
[ "$pages" -eq 3 ] || fail "250 tenants in $pages pages of the default 100"
cmp -s "$dir/paged" "$dir/all-tenants" || fail "the pages are not every tenant once, in order: $(diff "$dir/paged" "$dir/all-tenants" | head)"
[ "$(page '?limit=1000')" = 200 ] || fail "limit=1000: $(head -c 300 "$dir/out")"
grep -q '"next":null}$' "$dir/out" || fail "limit=1000 is not one page: $(tail -c 100 "$dir/out")"
[ "$(page '?limit=7')" = 200 ] && grep -q '"tenants":\["tenant-000",.*"tenant-006"\],"next":"' "$dir/out" ||
	fail "limit=7: $(cat "$dir/out")"
[ "$(page '?limit=1001')" = 400 ] || fail "limit=1001: $(cat "$dir/out")"
[ "$(page '?cursor=%21%21')" = 400 ] || fail "a cursor keel did not give: $(cat "$dir/out")"
grep -q 'not a cursor keel gave' "$dir/out" || fail "cursor message: $(cat "$dir/out")"
# a scoped token's pages hold its own tenants only
[ "$(curl -s -o "$dir/out" -w '%{http_code}' "${one[@]}" "$url/v1/tenants")" = 200 ] &&
	[ "$(cat "$dir/out")" = '{"tenants":["tenant-249"],"next":null}' ] || fail "scoped: $(cat "$dir/out")"
stop

# --- the operator's other choices
start --metrics-tenants 0
metrics 0
stop
start --metrics-tenants 3
metrics 3
stop
start --metrics-tenants tenant-007,tenant-200,nobody
metrics tenant-007,nobody,tenant-200
grep -q '^keel_tenant_events_total{tenant="nobody",outcome="accepted"} 0$' "$dir/metrics" ||
	fail "a listed tenant without events shows zeros"
stop
start --metrics-tenants all
metrics 250
stop
rc=0
timeout 20 "$KEEL" serve --store memory: --metrics-tenants 'a b' 2>"$dir/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--metrics-tenants: "a b": not a tenant name' "$dir/err" ||
	fail "a bad --metrics-tenants: status $rc: $(cat "$dir/err")"

# --- keel tenants, a page at a time
db="sqlite:$dir/keel.db"
"$KEEL" ingest --cartridge fleet --quiet --store "$db" "$dir/in.ndjson"
"$KEEL" tenants --store "$db" >"$dir/p1"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["tenants"]) == 100 and d["next"], d' "$dir/p1" ||
	fail "keel tenants: $(head -c 300 "$dir/p1")"
cursor=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["next"])' "$dir/p1")
"$KEEL" tenants --store "$db" --after "$cursor" --limit 200 >"$dir/p2"
python3 - "$dir/p1" "$dir/p2" "$dir/all-tenants" <<'PY' || fail "keel tenants --after: $(head -c 300 "$dir/p2")"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["next"] is None and len(b["tenants"]) == 150, b
assert a["tenants"] + b["tenants"] == open(sys.argv[3]).read().split(), "not every tenant once"
PY
rc=0
"$KEEL" tenants --store "$db" --limit 1001 2>"$dir/err" || rc=$?
[ "$rc" -eq 2 ] || fail "keel tenants --limit 1001: status $rc"
rc=0
"$KEEL" tenants --store "$db" --after '!!' 2>"$dir/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q 'not a cursor keel gave' "$dir/err" || fail "a bad cursor: $rc $(cat "$dir/err")"
echo "ok: per-tenant series as asked, tenants a page at a time"
