#!/usr/bin/env bash
# cli_search_current.sh - keel search at the present on SQLite reads the
# current rows (fact_current, docs/store-sqlite.md "Current rows"), which
# the search folds from the rows written since the last fold; every way of
# writing or removing rows leaves them right. Each search is checked
# against what the history says: by hand for the cases below, and by
# tests/cli/search_check.py against the store's dump for a stream with
# late events (by keel ingest in parts, a fold after each; POSTed to keel
# serve and searched over HTTP), on a read-only copy and by two searches
# at once, after keel forget (also of the subject that holds the last
# seqs, whose reuse the fold must see), after keel replay with another
# cartridge, for keel load and for keel ingest --replay; search_check.py
# also searches at three earlier times, which read the spans folded with
# the current rows (fact_spans, "Spans"). fact_current and fact_spans
# themselves are compared with what a window over the history gives
# (current_ok).
#
#   late:     a row older than the timeline's current one, in a later
#             ingest and in the same batch, does not replace it
#   tie:      of two rows at the same time the later arrival holds
#   future:   a row dated after now leaves the one before it holding now
#             (the predicate's horizon is later than now)
#   numbers:  year 2018 is found, "2018" is not
#   object:   a timeline whose latest value is an object holds neither it
#             nor its earlier string in a search at the present's answer
# (V-4's registration makes it available: the fleet cartridge's rule)
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"
check=$(dirname "$0")/cli/search_check.py

ev() { # tenant id type time data
	printf '{"specversion":"1.0","id":"%s","source":"/hand","type":"fleet.vehicle.%s","time":"%s","tenant":"%s","datacontenttype":"application/json","data":%s}\n' \
		"$2" "$3" "$4" "$1" "$5"
}
status() { # tenant id time vehicle status
	ev "$1" "$2" status_changed "$3" "{\"vehicle_id\":\"$4\",\"status\":\"$5\"}"
}
db="sqlite:$dir/hand.db"
{
	status acme a1 2026-01-05T10:00:00Z V-1 available
	status acme a5 2026-01-05T09:00:00Z V-3 in_progress
	ev acme a7 registered 2026-01-05T07:00:00Z \
		'{"vehicle_id":"V-4","make":"DAF","model":"XF","year":2018,"depot_id":"D-1"}'
	status later f1 2026-01-05T09:00:00Z V-9 available
} >"$dir/first.ndjson"
{
	status acme a2 2026-01-05T08:00:00Z V-1 maintenance   # late, in a later ingest
	status acme a3 2026-01-05T10:00:00Z V-2 maintenance
	status acme a4 2026-01-05T10:00:00Z V-2 available     # same time, later arrival
	status acme b1 2026-01-05T10:00:00Z V-5 available
	status acme b2 2026-01-05T08:00:00Z V-5 maintenance   # late, in the same batch
	status later f2 2099-01-01T00:00:00Z V-9 maintenance  # dated after now
	ev acme b3 status_changed 2026-01-05T11:00:00Z '{"vehicle_id":"V-5","status":{"code":7}}'
} >"$dir/second.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --store "$db" "$dir/first.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --store "$db" "$dir/second.ndjson"

# subjects TENANT PREDICATE VALUE [ARGS...]: the subjects search lists, one line
subjects() {
	"$KEEL" search "$@" --json --store "$db" |
		python3 -c 'import json,sys; print(" ".join(s["subject"] for s in json.load(sys.stdin)["subjects"]))'
}
found() { # want tenant predicate value [args...]
	local want=$1 got
	shift
	got=$(subjects "$@") || fail "keel search $* failed"
	[ "$got" = "$want" ] || fail "search $*: \"$got\", expected \"$want\""
}
found "vehicle:V-1 vehicle:V-2 vehicle:V-4" acme status available
found "vehicle:V-5" acme status '{"code":7}'
found "" acme status maintenance
found "vehicle:V-3" acme status in_progress
found "vehicle:V-1 vehicle:V-5" acme status maintenance --at 2026-01-05T09:00:00Z
found "vehicle:V-4" acme status available --at 2026-01-05T09:00:00Z
found "vehicle:V-4" acme year 2018
found "" acme year '"2018"'
found "vehicle:V-4" acme make DAF
found "vehicle:V-9" later status available
found "" later status maintenance
found "vehicle:V-9" later status maintenance --at 2099-06-01T00:00:00Z
found "vehicle:V-9" later status available --known-at 2099-06-01T00:00:00Z
# the current rows themselves: one a timeline, the latest row's value
# among those a search can use (V-5's object is not one: its "available"
# stays, a candidate the ordinary read turns down)
[ "$(sqlite3 "$dir/hand.db" "SELECT group_concat(subject || '=' || value, ' ') FROM (SELECT subject, value FROM fact_current WHERE tenant = 'acme' AND predicate = 'status' ORDER BY subject)")" = \
	'vehicle:V-1="available" vehicle:V-2="available" vehicle:V-3="in_progress" vehicle:V-4="available" vehicle:V-5="available"' ] ||
	fail "fact_current of acme's status: $(sqlite3 "$dir/hand.db" "SELECT * FROM fact_current WHERE tenant = 'acme'")"

# The fold's state: the watermark, the last fact row.
mark() { sqlite3 "$1" "SELECT value FROM meta WHERE key = 'fact_current_seq'"; }
last_seq() { sqlite3 "$1" "SELECT coalesce(max(seq), 0) FROM fact_rows"; }
# current_ok DB WHAT: fact_current is each timeline's latest row in
# (valid_from, recorded_at, seq) order among those with a value a search
# can use (a string, an integer, true, false) or none, and fact_spans each
# such row's span (src/store/sqlite/spans.c).
# The fact rows with their names as text (the rows hold ids:
# docs/store-sqlite.md, "Names as integers").
fact_text="(SELECT r.seq AS seq, (SELECT name FROM names WHERE id = r.tenant) AS tenant,
	r.subject AS subject, (SELECT name FROM names WHERE id = r.predicate) AS predicate,
	r.value AS value, r.valid_from AS valid_from, r.recorded_at AS recorded_at
	FROM fact_rows AS r)"
current_ok() {
	local latest="SELECT tenant, subject, predicate, value, valid_from, recorded_at, seq
		FROM (SELECT *, row_number() OVER (PARTITION BY tenant, subject, predicate
		ORDER BY valid_from DESC, recorded_at DESC, seq DESC) AS n FROM $fact_text
		WHERE value IS NULL OR substr(value, 1, 1) = '\"' OR value IN ('true', 'false')
		OR value NOT GLOB '*[^0-9-]*') WHERE n = 1"
	local current="SELECT tenant, subject, predicate, value, valid_from, recorded_at, seq
		FROM fact_current"
	local n
	n=$(sqlite3 "$1" "SELECT (SELECT count(*) FROM ($latest EXCEPT $current)) +
		(SELECT count(*) FROM ($current EXCEPT $latest))") || fail "current_ok $1"
	[ "$n" = 0 ] || fail "$2: fact_current of $1 differs from the history in $n rows"
	# Each predicate's horizon is its latest row's valid_from after folds;
	# after keel forget deleted the latest (third argument "forgot"), it
	# may stay above it (docs/store-sqlite.md "Forgetting": a search below
	# it reads the history, never a wrong answer), also through a later
	# replay of other predicates. Never below: a search at the present
	# would miss rows.
	local differs="h.valid_from IS NOT v"
	[ "${3:-}" = forgot ] && differs="v IS NOT NULL AND (h.valid_from IS NULL OR h.valid_from < v)"
	n=$(sqlite3 "$1" "SELECT count(*) FROM (SELECT tenant, predicate, max(valid_from) AS v
		FROM $fact_text GROUP BY 1, 2) FULL JOIN fact_horizon AS h USING (tenant, predicate)
		WHERE $differs")
	[ "$n" = 0 ] || fail "$2: $n horizons of $1 differ from the history"
	# fact_spans: one entry a row with such a value, from its valid_from to
	# the next row's among those and the unsets (open for the last), the
	# R*Tree's 32-bit floats within 2^-22 of the value outside those bounds; one
	# key for each (tenant, predicate, value).
	n=$(sqlite3 "$1" "WITH e AS (SELECT * FROM (SELECT seq, value, valid_from AS f,
		coalesce(lead(valid_from) OVER (PARTITION BY tenant, subject, predicate ORDER BY
		valid_from, recorded_at, seq), 9223372036854775807) AS t FROM fact_rows
		WHERE value IS NULL OR substr(value, 1, 1) = '\"' OR value IN ('true', 'false')
		OR value NOT GLOB '*[^0-9-]*') WHERE value IS NOT NULL)
		SELECT count(*) FROM e FULL JOIN fact_spans AS s ON s.seq = e.seq
		WHERE e.seq IS NULL OR s.seq IS NULL OR s.key_hi != s.key_lo
		OR s.valid_from > e.f OR s.valid_from < e.f - abs(e.f) / 4194304.0 - 1
		OR s.valid_to < e.t OR s.valid_to > e.t + abs(e.t) / 4194304.0 + 1") ||
		fail "spans of $1"
	[ "$n" = 0 ] || fail "$2: $n spans of $1 differ from the history"
	n=$(sqlite3 "$1" "SELECT count(*) FROM (SELECT DISTINCT r.tenant, r.predicate,
		r.value FROM fact_spans AS s JOIN fact_rows AS r USING (seq)
		GROUP BY r.tenant, r.predicate, r.value HAVING count(DISTINCT s.key_lo) > 1)")
	[ "$n" = 0 ] || fail "$2: $n values of $1 under more than one span key"
}
check() { # DB-FILE WHAT [PREDICATE...]: search_check against a fresh dump
	local f=$1 what=$2
	shift 2
	expect 0 "$KEEL" dump --store "sqlite:$f" --output "$dir/check.dump"
	KEEL=$KEEL python3 "$check" "sqlite:$f" "$dir/check.dump" "$@" >/dev/null ||
		fail "search $what"
}
current_ok "$dir/hand.db" "the hand-made store"

# A stream with late events, in batches that split them from the rows
# they land before, ingested in three parts.
"$KEEL" generate fleet --events 3000 --tenants 2 --seed 7 --late 0.2 --duplicates 0.02 \
	--output "$dir/in.ndjson"
head -n 1200 "$dir/in.ndjson" >"$dir/in.1"
sed -n 1201,2200p "$dir/in.ndjson" >"$dir/in.2"
tail -n +2201 "$dir/in.ndjson" >"$dir/in.3"
g=(--store "sqlite:$dir/g.db")
expect 0 "$KEEL" ingest --cartridge fleet --quiet --batch 37 "${g[@]}" "$dir/in.1"
# An ingest folds nothing: the migration's empty tables, watermark 0.
[ "$(mark "$dir/g.db")" = 0 ] || fail "an ingest moved the watermark: $(mark "$dir/g.db")"
[ "$(sqlite3 "$dir/g.db" "SELECT count(*) FROM fact_current")" = 0 ] ||
	fail "an ingest wrote current rows"
check "$dir/g.db" "after an ingest with late events (the first fold)"
[ "$(mark "$dir/g.db")" = "$(last_seq "$dir/g.db")" ] || fail "the first fold left rows"
current_ok "$dir/g.db" "the first fold"
mark1=$(mark "$dir/g.db")
# From here on one value a predicate at the present (every search is a
# keel process: under the sanitizers the searches were 80 % of this
# test's time); each timeline's fold is still checked at the earlier
# moments and by current_ok.
export KEEL_SEARCH_PER_PREDICATE=1

# More rows: the next fold takes only those (seq > the watermark).
expect 0 "$KEEL" ingest --cartridge fleet --quiet --batch 37 "${g[@]}" "$dir/in.2"
[ "$(mark "$dir/g.db")" = "$mark1" ] || fail "the second ingest moved the watermark"
[ "$(last_seq "$dir/g.db")" -gt "$mark1" ] || fail "the second ingest wrote no facts"

# A copy its reader cannot write cannot fold: its searches walk, and are
# as right. (root writes any file: the searches then run as nobody, in a
# directory where SQLite may add its -shm and -wal files.)
mkdir -m 777 "$dir/ro"
cp "$dir/g.db" "$dir/ro/ro.db"
chmod a-w "$dir/ro/ro.db"
read_only_keel
expect 0 "$KEEL" dump --store "sqlite:$dir/ro/ro.db" --output "$dir/ro.dump"
KEEL=$ro_keel python3 "$check" "sqlite:$dir/ro/ro.db" "$dir/ro.dump" >/dev/null ||
	fail "search on a read-only store"
[ "$(mark "$dir/ro/ro.db")" = "$mark1" ] || fail "a read-only store was folded"

# Two searches at once on another copy: both right, the rows folded once.
cp "$dir/g.db" "$dir/c.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/c.db" --output "$dir/c.dump"
KEEL=$KEEL python3 "$check" "sqlite:$dir/c.db" "$dir/c.dump" >/dev/null &
one=$!
KEEL=$KEEL python3 "$check" "sqlite:$dir/c.db" "$dir/c.dump" >/dev/null ||
	fail "search beside another"
wait "$one" || fail "search beside another (the first)"
current_ok "$dir/c.db" "two folds at once"

check "$dir/g.db" "after more rows (a fold of the new ones)"
[ "$(mark "$dir/g.db")" = "$(last_seq "$dir/g.db")" ] || fail "the second fold left rows"
current_ok "$dir/g.db" "the second fold"

# keel serve: the writer's group commits, searched over HTTP by its read
# handles (which fold) after half the stream, then after all of it.
"$KEEL" token new --all >"$dir/all" 2>/dev/null
sed -n 2p "$dir/all" >"$dir/tokens"
"$KEEL" serve --listen 127.0.0.1:0 --store "sqlite:$dir/h.db" --cartridge fleet \
	--tokens "$dir/tokens" --quiet 2>"$dir/serve.log" &
pid=$!
wait_port "$dir/serve.log"
split -l 700 "$dir/in.ndjson" "$dir/piece."
# Searches over HTTP all along the POSTs: the read handles fold while the
# writer writes, and neither makes the other fail. (Until the first POST
# is in, the tenant is not known: 404, as for every read of it.)
(
	while [ ! -e "$dir/stop" ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(sed -n 1p "$dir/all")" \
			"http://127.0.0.1:$port/v1/tenants/tenant-00/search?predicate=status&value=available")
		[ "$code" = 404 ] && [ ! -s "$dir/searched" ] && continue
		[ "$code" = 200 ] && echo >>"$dir/searched" || echo "$code" >>"$dir/search-failures"
	done
) &
searcher=$!
n=0
for piece in "$dir"/piece.*; do
	code=$(curl -s -o "$dir/posted" -w '%{http_code}' -H "Authorization: Bearer $(sed -n 1p "$dir/all")" \
		-H 'Content-Type: application/x-ndjson' --data-binary "@$piece" "http://127.0.0.1:$port/v1/events")
	[ "$code" = 200 ] || fail "POST $piece: $code $(head -c 300 "$dir/posted")"
	n=$((n + 1))
	[ "$n" = 2 ] || [ "$piece" = "$(ls "$dir"/piece.* | tail -n 1)" ] || continue
	expect 0 "$KEEL" dump --store "sqlite:$dir/h.db" --output "$dir/h.dump"
	KEEL_HTTP=http://127.0.0.1:$port KEEL_TOKEN=$(sed -n 1p "$dir/all") \
		python3 "$check" "sqlite:$dir/h.db" "$dir/h.dump" >/dev/null ||
		fail "search over HTTP after $n POSTs"
	[ "$(mark "$dir/h.db")" = "$(last_seq "$dir/h.db")" ] ||
		fail "keel serve's searches did not fold after $n POSTs"
	current_ok "$dir/h.db" "keel serve's folds after $n POSTs"
done
touch "$dir/stop"
wait "$searcher"
[ ! -s "$dir/search-failures" ] || fail "searches beside the POSTs: $(sort "$dir/search-failures" | uniq -c)"
[ -s "$dir/searched" ] || fail "no search beside the POSTs answered"
kill -TERM "$pid"
wait "$pid" || fail "keel serve exited $?"
pid=

# keel forget deletes the subject's rows: it is gone from the current
# rows, every other holder still found.
v=$("$KEEL" search tenant-00 status available --limit 1 --json "${g[@]}" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["subjects"][0]["subject"])')
[ "$(sqlite3 "$dir/g.db" "SELECT count(*) FROM fact_current WHERE tenant = 'tenant-00' AND subject = '$v'")" -gt 0 ] ||
	fail "$v is not in fact_current before keel forget"
expect 0 "$KEEL" forget tenant-00 "$v" "${g[@]}"
[ "$(sqlite3 "$dir/g.db" "SELECT count(*) FROM fact_current WHERE tenant = 'tenant-00' AND subject = '$v'")" = 0 ] ||
	fail "$v is still in fact_current"
check "$dir/g.db" "after keel forget $v"
current_ok "$dir/g.db" "keel forget" forgot

# The subject that holds the last seqs, forgotten: the rows written next
# take seqs at or below the watermark, which must come down with it.
{
	ev solo z1 registered 2026-01-05T07:00:00Z \
		'{"vehicle_id":"V-Z","make":"MAN","model":"TGX","year":2020,"depot_id":"D-9"}'
	status solo z2 2026-01-05T08:00:00Z V-Z in_progress
	status solo z3 2026-01-05T09:00:00Z V-Z maintenance
} >"$dir/solo.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "${g[@]}" "$dir/solo.ndjson"
db="sqlite:$dir/g.db" found "vehicle:V-Z" solo status maintenance
mark2=$(mark "$dir/g.db")
[ "$mark2" = "$(last_seq "$dir/g.db")" ] || fail "the search before forget did not fold"
expect 0 "$KEEL" forget solo vehicle:V-Z "${g[@]}"
[ "$(last_seq "$dir/g.db")" -lt "$mark2" ] ||
	fail "forgetting V-Z left the last seqs (the case is not made)"
[ "$(mark "$dir/g.db")" = "$(last_seq "$dir/g.db")" ] ||
	fail "the watermark $(mark "$dir/g.db") after forget, the last seq $(last_seq "$dir/g.db")"
[ "$(sqlite3 "$dir/g.db" "SELECT count(*) FROM fact_current WHERE subject = 'vehicle:V-Z'")" = 0 ] ||
	fail "V-Z is still in fact_current"
left=$(last_seq "$dir/g.db")
expect 0 "$KEEL" ingest --cartridge fleet --quiet --batch 37 "${g[@]}" "$dir/in.3"
[ "$(sqlite3 "$dir/g.db" "SELECT min(seq) FROM fact_rows WHERE seq > $left")" -le "$mark2" ] ||
	fail "the new rows took no seq at or below the old watermark (the case is not made)"
check "$dir/g.db" "after the seqs of a forgotten subject were taken again"
current_ok "$dir/g.db" "seqs taken again" forgot

# keel replay with a cartridge that gives every status change one value:
# the replaced predicates' current rows are written again.
python3 - "$(dirname "$0")/../cartridges/fleet.json" <<'PY' >"$dir/seen.json"
import json, sys
c = json.load(open(sys.argv[1]))
c["version"] = "2"
for op in c["events"]["fleet.vehicle.status_changed"]:
    if op.get("predicate") == "status":
        op["value"] = {"const": "seen"}
json.dump(c, sys.stdout)
PY
expect 0 "$KEEL" replay --tenant tenant-01 --cartridge "$dir/seen.json" --change-cartridge "${g[@]}"
expect 0 "$KEEL" dump "${g[@]}" --output "$dir/r.dump"
grep -q '"tenant":"tenant-01".*"predicate":"status","value":"seen"' "$dir/r.dump" ||
	fail "the replay wrote no \"seen\""
check "$dir/g.db" "after keel replay" status
current_ok "$dir/g.db" "keel replay" forgot

# More seqs than one fold transaction takes (KEEL_SQLITE_FOLD_SEQS,
# 65536): the first search folds them in several, the same as in one.
"$KEEL" generate fleet --events 40000 --tenants 1 --seed 3 --output "$dir/big.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet --quiet --store "sqlite:$dir/big.db" "$dir/big.ndjson"
[ "$(last_seq "$dir/big.db")" -gt 65536 ] || fail "too few fact rows for two folds"
db="sqlite:$dir/big.db" subjects tenant-00 status available >/dev/null ||
	fail "search on the big store"
[ "$(mark "$dir/big.db")" = "$(last_seq "$dir/big.db")" ] || fail "the big fold stopped short"
current_ok "$dir/big.db" "a fold in several transactions"

# keel load and keel ingest --replay write the rows in bulk; the first
# search folds them all.
expect 0 "$KEEL" dump "${g[@]}" --output "$dir/g.dump"
expect 0 "$KEEL" load "$dir/g.dump" --store "sqlite:$dir/l.db"
KEEL=$KEEL python3 "$check" "sqlite:$dir/l.db" "$dir/g.dump" >/dev/null ||
	fail "search on a loaded store"
current_ok "$dir/l.db" "keel load"
expect 0 "$KEEL" ingest --replay --cartridge fleet --quiet --store "sqlite:$dir/b.db" "$dir/in.ndjson"
check "$dir/b.db" "after keel ingest --replay"
current_ok "$dir/b.db" "keel ingest --replay"
finish
