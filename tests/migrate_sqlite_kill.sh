#!/usr/bin/env bash
# migrate_sqlite_kill.sh - keel migrate killed with kill -9 part way
# through a migration leaves the store at its old schema, whole, and the
# next run finishes it (docs/store-sqlite.md, "Schema and versions": every
# step in one transaction). The store is tests/data/migrate/v11.sqlite
# (schema 11, made by the Keel of ed2b8fc) with its fact and relation rows
# copied 300 times under other subjects by the sqlite3 tool, so that its
# migration to names as integers takes a second or so. A copy migrated
# without a kill is the reference: each copy killed as a part of the
# migration begins (keel migrate on a terminal says which), then migrated
# again, dumps byte for byte as it does.
. "$(dirname "$0")/cli/lib.sh"

command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"
old=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/data/migrate

cp "$old/v11.sqlite" "$dir/big.db" && chmod u+w "$dir/big.db"
sqlite3 "$dir/big.db" "
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT INTO fact_rows (tenant, subject, predicate, value, valid_from, asserted_by,
	recorded_at, asserted_by_source)
SELECT tenant, subject || '#' || i, predicate, value, valid_from, asserted_by, recorded_at,
	asserted_by_source FROM n, (SELECT * FROM fact_rows ORDER BY seq) ORDER BY i;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT INTO relation_rows (tenant, subject, relation, object, linked, valid_from,
	asserted_by, recorded_at, asserted_by_source)
SELECT tenant, subject || '#' || i, relation, object, linked, valid_from, asserted_by,
	recorded_at, asserted_by_source FROM n, (SELECT * FROM relation_rows ORDER BY seq)
	ORDER BY i;" || fail "could not grow the store"
version() { sqlite3 "$1" "SELECT value FROM meta WHERE key = 'schema_version'"; }
[ "$(version "$dir/big.db")" = 11 ] || fail "the grown store is not at schema 11"
rows=$(sqlite3 "$dir/big.db" "SELECT count(*) FROM fact_rows")

# the reference: one migration, not killed; piped, it says nothing on stderr
cp "$dir/big.db" "$dir/ref.db"
expect 0 "$KEEL" migrate --store "sqlite:$dir/ref.db"
contains out "from schema 11 to"
[ -s "$dir/err" ] && fail "keel migrate, piped, wrote to stderr: $(head -c 300 "$dir/err")"
expect 0 "$KEEL" dump --store "sqlite:$dir/ref.db" --output "$dir/ref.dump"
[ "$(grep -c '"type":"fact"' "$dir/ref.dump")" = "$rows" ] ||
	fail "the reference dump does not hold the $rows fact rows"

# On a terminal (script(1) gives it one) keel migrate says which part of
# the step runs; each kill comes as a part begins, so the migration's
# transaction is open: 2 copies fact_rows, 3 builds its key index, 5
# copies relation_rows (schema.c, keel_sqlite_step_names).
command -v script >/dev/null || skip_test "no script tool (util-linux)"
for part in 2 3 5; do
	cp "$dir/big.db" "$dir/k.db"
	rm -f "$dir/k.db-wal" "$dir/k.db-shm" "$dir/tty" "$dir/pid"
	script -qfec "sh -c 'echo \$\$ >\"$dir/pid\"; exec \"$KEEL\" migrate --store \"sqlite:$dir/k.db\"'" \
		"$dir/tty" >/dev/null 2>&1 &
	spid=$!
	for _ in $(seq 3000); do
		grep -q "part $part of" "$dir/tty" 2>/dev/null && break
		sleep 0.01
	done
	grep -q "step 12, part $part of" "$dir/tty" ||
		fail "keel migrate on a terminal did not say it began part $part: $(tr '\r' '\n' <"$dir/tty" | tail -n 3)"
	kill -9 "$(cat "$dir/pid")" 2>/dev/null || fail "keel migrate had ended at part $part"
	wait "$spid" 2>/dev/null
	[ "$(version "$dir/k.db")" = 11 ] ||
		fail "killed at part $part, the store is at schema $(version "$dir/k.db"), not 11"
	expect 0 "$KEEL" migrate --store "sqlite:$dir/k.db"
	contains out "from schema 11 to"
	expect 0 "$KEEL" dump --store "sqlite:$dir/k.db" --output "$dir/k.dump"
	cmp -s "$dir/k.dump" "$dir/ref.dump" ||
		fail "killed at part $part and migrated again, the store dumps otherwise: $(diff "$dir/k.dump" "$dir/ref.dump" | head -c 600)"
done
finish
