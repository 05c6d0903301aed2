#!/usr/bin/env bash
# The MySQL store through the tool: a generated fleet stream with late
# events and duplicates gives the same dump on MySQL as on SQLite, at batch
# 500 and 5000, with a small constant number of statements per batch;
# sending it again changes nothing; bad stores fail with one clear line.
# Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
set -euo pipefail
if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ]; then
	echo "no MySQL fixture: skipped"
	exit 0
fi
. "$(dirname "$0")/cli/scratch.sh"

in=$dir/in.ndjson
"$KEEL" generate fleet --events 20000 --tenants 3 --seed 4 --late 0.05 --duplicates 0.05 --output "$in"

"$KEEL" ingest "$in" --quiet --store "sqlite:$dir/ref.db"
"$KEEL" dump --store "sqlite:$dir/ref.db" >"$dir/ref.dump"
[ -s "$dir/ref.dump" ] || fail "empty reference dump"

for batch in 500 5000; do
	url=$($KEEL_TEST_MYSQL_FRESH)
	"$KEEL" ingest "$in" --verbose --batch "$batch" --store "$url" 2>"$dir/report"
	"$KEEL" dump --store "$url" >"$dir/my.dump"
	cmp "$dir/ref.dump" "$dir/my.dump" || fail "batch $batch: mysql dump differs from sqlite's"
	# "batches B, statements S": at most 12 statements a batch (with late
	# events; docs/store-mysql.md), beside the 9 that open a new store
	# (session, schema version, creating it)
	read -r batches statements < <(sed -n 's/^batches \([0-9]*\), statements \([0-9]*\)$/\1 \2/p' "$dir/report")
	[ -n "${batches:-}" ] || fail "no statements line in: $(cat "$dir/report")"
	[ "$batches" -eq $(((20000 + batch - 1) / batch)) ] || fail "batch $batch: $batches batches"
	[ "$statements" -le $((batches * 12 + 9)) ] || fail "batch $batch: $statements statements in $batches batches"

	# the same input again: all duplicates, nothing changes
	"$KEEL" ingest "$in" --batch "$batch" --store "$url" 2>"$dir/report2"
	grep -q '^accepted 0, duplicates 20000 (conflicting 0)' "$dir/report2" ||
		fail "second run: $(cat "$dir/report2")"
	grep -q '^rows inserted 0, rows closed 0$' "$dir/report2" || fail "second run wrote rows"
	"$KEEL" dump --store "$url" >"$dir/my2.dump"
	cmp "$dir/ref.dump" "$dir/my2.dump" || fail "batch $batch: second run changed the dump"
done

# dump -> load into MySQL -> dump
url=$($KEEL_TEST_MYSQL_FRESH)
"$KEEL" load "$dir/ref.dump" --store "$url"
"$KEEL" dump --store "$url" >"$dir/loaded.dump"
cmp "$dir/ref.dump" "$dir/loaded.dump" || fail "load into mysql changed the dump"

# bad stores: exit 1, one line naming the store, the password hidden
set +e
"$KEEL" ingest "$in" --store "mysql://keel:secret@127.0.0.1:1/keel" 2>"$dir/err"
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
