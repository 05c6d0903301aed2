#!/usr/bin/env bash
# mysql_replay.sh - replay, ingest --replay and --workers on MariaDB
# (docs/replay.md): a replay right after ingest keeps the dump
# byte-identical and uses LOAD DATA LOCAL INFILE; strings with every byte
# the TSV file must escape (tab, newline, carriage return, backslash, NUL,
# "\N", non-ASCII) survive it; a changed cartridge gives the dump of
# ingesting from scratch with it; a replay that fails midway (a trigger
# refuses one row) leaves the tenant as it was; with local_infile off on
# the server the same replay falls back to multi-row INSERTs and says so;
# ingest --replay and --workers 1/2/4 give the dump of a plain ingest;
# --workers stopped by SIGINT commits what it read, reports it as
# interrupted, and the same command again completes the dump.
# Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
. "$(dirname "$0")/cli/lib.sh"
needs_mysql
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}

# Input: a generated stream plus a tenant whose strings need escaping (NUL
# only in a value: identifiers cannot hold it, docs/cartridges.md "Limits").
"$KEEL" generate fleet --events 8000 --tenants 4 --seed 21 --late 0.1 --duplicates 0.05 \
	>"$dir/in.ndjson"
cat >>"$dir/in.ndjson" <<'EOF'
{"specversion":"1.0","id":"w-1","tenant":"weird","type":"fleet.vehicle.registered","time":"2026-01-05T06:00:00Z","data":{"vehicle_id":"V\t1\n\\N\u0001é\r","depot_id":"D\\0","make":"Mä\tk\u0000e","model":"x\\ny","year":2020}}
{"specversion":"1.0","id":"w-2\\N","tenant":"weird","type":"fleet.vehicle.status_changed","time":"2026-01-05T07:00:00Z","data":{"vehicle_id":"V\t1\n\\N\u0001é\r","status":"in\tuse\\N","reason":"日本\n"}}
{"specversion":"1.0","id":"w-3","tenant":"weird","type":"fleet.vehicle.status_changed","time":"2026-01-05T06:30:00Z","data":{"vehicle_id":"\\N","status":"\\N","reason":"\\\\"}}
EOF
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "sqlite:$dir/ref.db"
expect 0 "$KEEL" dump --store "sqlite:$dir/ref.db" --output "$dir/ref.ndjson"
grep -q '"subject":"vehicle:V\\t1\\n\\\\N\\u0001é\\r"' "$dir/ref.ndjson" ||
	fail "the escaping tenant did not go in"
tenants=$(sed -n 's/^{"type":"event","tenant":"\([^"]*\)".*/\1/p' "$dir/ref.ndjson" | sort -u)

# 1. Replay after ingest: same bytes, nothing to write. (Every byte through
# LOAD DATA is case 2's rewrite and case 5's ingest --replay.)
url=$($KEEL_TEST_MYSQL_FRESH)
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$url"
for t in $tenants; do
	expect 0 "$KEEL" replay --tenant "$t" --store "$url"
	contains out "(no changes)"
	contains out "0 of "
done
expect 0 "$KEEL" dump --store "$url" --output "$dir/replayed.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/replayed.ndjson" ||
	fail "replay on mysql changed the dump: $(diff "$dir/ref.ndjson" "$dir/replayed.ndjson" | head -4)"

# 2. A changed cartridge equals ingesting from scratch with it.
sed -e 's/"predicate": "status"/"predicate": "state"/' "$src/cartridges/fleet.json" >"$dir/v2.json"
for t in $tenants; do
	expect 0 "$KEEL" replay --tenant "$t" --store "$url" --cartridge "$dir/v2.json" --change-cartridge
	contains out "mysql: LOAD DATA LOCAL INFILE in one transaction; "
done
expect 0 "$KEEL" dump --store "$url" --output "$dir/v2-replayed.ndjson"
expect 0 "$KEEL" ingest "$dir/in.ndjson" --store "sqlite:$dir/v2.db" --cartridge "$dir/v2.json"
expect 0 "$KEEL" dump --store "sqlite:$dir/v2.db" --output "$dir/v2-fresh.ndjson"
cmp -s "$dir/v2-replayed.ndjson" "$dir/v2-fresh.ndjson" || fail "mysql replay with v2 differs from ingest with v2"
grep -q '"predicate":"state"' "$dir/v2-fresh.ndjson" || fail "v2 made no state facts"

# 3. A replay that fails midway leaves the tenant as it was: a trigger
# refuses one fact row of tenant-01, after the deletes and the entity load.
mysql_dir=$KEEL_TEST_MYSQL_DIR
: "${KEEL_MYSQL_SCRIPT:?the script of the fixture}"
db=${url##*/}
db=${db%%\?*}
"$KEEL_MYSQL_SCRIPT" sql "$mysql_dir" "DELIMITER //
CREATE TRIGGER \`$db\`.keel_test_refuse BEFORE INSERT ON \`$db\`.keel_fact_rows FOR EACH ROW BEGIN IF NEW.tenant = 'tenant-01' AND NEW.predicate IN ('state', 'status') AND NEW.subject = 'vehicle:V-0003' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test'; END IF; END //
DELIMITER ;" ||
	fail "cannot create the test trigger"
expect 0 "$KEEL" dump --store "$url" --tenant tenant-01 --output "$dir/t1-before.ndjson"
# The store holds v2's rows: the first cartridge rewrites the state
# facts back to status and is refused; v2 (still the recorded one) again
# has nothing to write.
expect 1 "$KEEL" replay --tenant tenant-01 --store "$url" --cartridge fleet --change-cartridge
contains err "refused by the test"
expect 0 "$KEEL" replay --tenant tenant-01 --store "$url"
contains out "0 of "
expect 0 "$KEEL" dump --store "$url" --tenant tenant-01 --output "$dir/t1-after.ndjson"
cmp -s "$dir/t1-before.ndjson" "$dir/t1-after.ndjson" || fail "a failed replay changed the tenant"
"$KEEL_MYSQL_SCRIPT" sql "$mysql_dir" "DROP TRIGGER \`$db\`.keel_test_refuse"

# 4. local_infile off on the server: the same result by INSERTs (back to
# the first cartridge, a change).
"$KEEL_MYSQL_SCRIPT" sql "$mysql_dir" "SET GLOBAL local_infile = 0"
for t in $tenants; do
	expect 0 "$KEEL" replay --tenant "$t" --store "$url" --cartridge fleet --change-cartridge
	contains out "local_infile is off on the server: multi-row INSERTs"
done
"$KEEL_MYSQL_SCRIPT" sql "$mysql_dir" "SET GLOBAL local_infile = 1"
expect 0 "$KEEL" dump --store "$url" --output "$dir/insert-replayed.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/insert-replayed.ndjson" || fail "the INSERT fallback changed the dump"

# 5. ingest --replay into a fresh database, and refusing an existing tenant.
url2=$($KEEL_TEST_MYSQL_FRESH)
expect 0 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "$url2"
contains err "written by mysql: LOAD DATA LOCAL INFILE"
expect 0 "$KEEL" dump --store "$url2" --output "$dir/bulk.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/bulk.ndjson" || fail "ingest --replay on mysql differs"
expect 1 "$KEEL" ingest --cartridge fleet --replay "$dir/in.ndjson" --store "$url2"
contains err "--replay loads only new tenants"

# 6. Workers: 1, 2 and 4 give the same dump.
for w in 1 2 4; do
	url3=$($KEEL_TEST_MYSQL_FRESH)
	expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --store "$url3" --workers "$w" --batch 300
	[ "$w" = 1 ] || contains err "written by $w workers, one connection each, each tenant on one worker"
	expect 0 "$KEEL" dump --store "$url3" --output "$dir/w$w.ndjson"
	cmp -s "$dir/ref.ndjson" "$dir/w$w.ndjson" || fail "--workers $w differs on mysql"
done

# 7. SIGINT with --workers: the input comes through a FIFO held open until
# the signal is sent; the rejection of line 2 shows the workers started.
url4=$($KEEL_TEST_MYSQL_FRESH)
{
	head -n 1 "$dir/in.ndjson"
	echo '{"specversion":"1.0","id":"bad","tenant":"tenant-00","type":"fleet.trip.started","time":"no","data":{}}'
	tail -n +2 "$dir/in.ndjson"
} >"$dir/in-bad.ndjson"
mkfifo "$dir/fifo"
"$KEEL" ingest --cartridge fleet - --store "$url4" --workers 2 --batch 50 <"$dir/fifo" 2>"$dir/int.err" &
pid=$!
exec 3>"$dir/fifo"
head -n 4000 "$dir/in-bad.ndjson" >&3
for ((i = 0; i < 1200; i++)); do
	grep -q 'line 2: event "bad"' "$dir/int.err" && break
	sleep 0.05
done
kill -INT "$pid"
tail -n +4001 "$dir/in-bad.ndjson" >&3
exec 3>&-
wait "$pid"
st=$?
[ "$st" -eq 3 ] || fail "--workers: exit $st after SIGINT, expected 3: $(cat "$dir/int.err")"
grep -q '^interrupted: read [0-9]* events' "$dir/int.err" || fail "--workers: no interrupted: report: $(cat "$dir/int.err")"
accepted=$(sed -n 's/^accepted \([0-9]*\),.*/\1/p' "$dir/int.err")
held=$("$KEEL" stats --store "$url4" |
	sed -n 's/.*"total":{"entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":\([0-9]*\)}.*/\1/p')
[ -n "$accepted" ] && [ "$accepted" = "$held" ] ||
	fail "--workers: the report says accepted $accepted, the store holds $held events"
expect 3 "$KEEL" ingest --cartridge fleet "$dir/in-bad.ndjson" --store "$url4" --workers 2
expect 0 "$KEEL" dump --store "$url4" --output "$dir/int.ndjson"
cmp -s "$dir/ref.ndjson" "$dir/int.ndjson" || fail "--workers after SIGINT and a second run differs"

finish
