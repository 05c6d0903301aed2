#!/usr/bin/env bash
# The MySQL store through the tool: a generated fleet stream with late
# events and duplicates gives the same dump on MySQL as on SQLite, at batch
# 500 and 5000, with a small constant number of statements per batch;
# sending it again changes nothing; bad stores fail with one clear line.
# Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_mysql

in=$dir/in.ndjson
"$KEEL" generate fleet --events 20000 --tenants 3 --seed 4 --late 0.05 --duplicates 0.05 --output "$in"

"$KEEL" ingest --cartridge fleet "$in" --quiet --store "sqlite:$dir/ref.db"
"$KEEL" dump --store "sqlite:$dir/ref.db" >"$dir/ref.dump"
[ -s "$dir/ref.dump" ] || fail "empty reference dump"

for batch in 500 5000; do
	url=$($KEEL_TEST_MYSQL_FRESH)
	"$KEEL" ingest --cartridge fleet "$in" --verbose --batch "$batch" --store "$url" 2>"$dir/report"
	"$KEEL" dump --store "$url" >"$dir/my.dump"
	cmp "$dir/ref.dump" "$dir/my.dump" || fail "batch $batch: mysql dump differs from sqlite's"
	# "batches B, commits C, statements S": a batch is a lookup of its
	# ids, its savepoint and one insert each for events, facts and
	# relations (docs/store-mysql.md); each commit adds its START
	# TRANSACTION, the writers' gate (the clock), the mentions' insert and
	# COMMIT; 15 more open a new store (session, schema version, creating
	# its tables and views)
	read -r batches commits statements < <(sed -n 's/^batches \([0-9]*\), commits \([0-9]*\), statements \([0-9]*\)$/\1 \2 \3/p' "$dir/report")
	[ -n "${batches:-}" ] || fail "no statements line in: $(cat "$dir/report")"
	[ "$batches" -eq $(((20000 + batch - 1) / batch)) ] || fail "batch $batch: $batches batches"
	# and each of the 3 tenants, once, reads and records its cartridge
	[ "$statements" -le $((batches * 5 + commits * 4 + 15 + 3 * 2)) ] ||
		fail "batch $batch: $statements statements in $batches batches, $commits commits"

	# the same input again: all duplicates, nothing changes
	"$KEEL" ingest --cartridge fleet "$in" --batch "$batch" --store "$url" 2>"$dir/report2"
	grep -q '^accepted 0, duplicates 20000 (conflicting 0)' "$dir/report2" ||
		fail "second run: $(cat "$dir/report2")"
	grep -q '^rows inserted 0$' "$dir/report2" || fail "second run wrote rows"
	"$KEEL" dump --store "$url" >"$dir/my2.dump"
	cmp "$dir/ref.dump" "$dir/my2.dump" || fail "batch $batch: second run changed the dump"
done

# dump -> load into MySQL -> dump
url=$($KEEL_TEST_MYSQL_FRESH)
"$KEEL" load "$dir/ref.dump" --store "$url"
"$KEEL" dump --store "$url" >"$dir/loaded.dump"
cmp "$dir/ref.dump" "$dir/loaded.dump" || fail "load into mysql changed the dump"

# An event too long for one statement on this server (half its
# max_allowed_packet, less room for the row) is rejected alone, naming its
# line and the rule; the events around it go in (exit 3: some rejected).
# Without the rule it failed its batch with mysql error 1153 and the input
# stopped there.
packet=$("$KEEL_MYSQL_SCRIPT" sql "$KEEL_TEST_MYSQL_DIR" "SELECT @@max_allowed_packet" | tail -n 1)
max=$(((packet - 4096 - 4096) / 2))
big=$dir/big.ndjson
head -n 300 "$in" >"$big"
python3 - "$big" "$max" <<'PY'
import json, sys
path, size = sys.argv[1], int(sys.argv[2]) + 1
head = '{"id":"too-long","tenant":"tenant-00","type":"fleet.vehicle.fuel_reported","time":"2026-01-01T00:00:00Z","data":{"vehicle_id":"V-0001","fuel_pct":1,"note":"'
tail = '"}}'
line = head + 'x' * (size - len(head) - len(tail)) + tail
assert len(line) == size and json.loads(line)
with open(path, "a") as f:
    f.write(line + "\n")
PY
tail -n 20 "$in" >>"$big"
url=$($KEEL_TEST_MYSQL_FRESH)
set +e
"$KEEL" ingest --cartridge fleet "$big" --max-line 64M --store "$url" --rejects "$dir/rejects" 2>"$dir/report"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "long event: exit $rc: $(cat "$dir/report")"
grep -q '^read 321 events' "$dir/report" || fail "long event: $(cat "$dir/report")"
grep -q ', rejected 1$' "$dir/report" || fail "long event: $(cat "$dir/report")"
accepted=$(sed -n 's/^accepted \([0-9]*\),.*/\1/p' "$dir/report")
duplicates=$(sed -n 's/.*duplicates \([0-9]*\) .*/\1/p' "$dir/report")
[ $((accepted + duplicates)) -eq 320 ] || fail "long event: $(cat "$dir/report")"
expected="line 301: event \"too-long\": envelope of $((max + 1)) bytes (compacted) is longer than the store takes: at most $max bytes (half the mysql server's max_allowed_packet, less room for the rest of its row)"
got=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert len(r) == 1; print(r[0]["position"], r[0]["error"])' "$dir/rejects")
[ "$got" = "301 $expected" ] || fail "long event rejected as: $got"

# bad stores: exit 1, one line naming the store, the password hidden
set +e
"$KEEL" ingest --cartridge fleet "$in" --store "mysql://keel:secret@127.0.0.1:1/keel" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "unreachable server: exit $rc"
expected='keel ingest: store "mysql://keel:***@127.0.0.1:1/keel": cannot connect to 127.0.0.1:1: connection refused'
[ "$(cat "$dir/err")" = "$expected" ] || fail "unreachable server said: $(cat "$dir/err")"

set +e
"$KEEL" dump --store "mysql://keel@127.0.0.1" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "bad url: exit $rc"
expected='keel dump: store "mysql://keel@127.0.0.1": missing database name (mysql://user:password@host:port/db)'
[ "$(cat "$dir/err")" = "$expected" ] || fail "bad url said: $(cat "$dir/err")"
echo ok
