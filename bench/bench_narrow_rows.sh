#!/usr/bin/env bash
# bench_narrow_rows.sh - what narrower fact rows would save the SQLite
# write path: the fact rows of a store inserted into today's
# table and indexes, beside the same rows with every name (tenant,
# subject, predicate, and the event's source and id) replaced by an
# integer, into the same table and indexes over those integers. Only the
# inserts are timed (one INSERT ... SELECT in one transaction each, in
# seq order as an ingest writes them, 32 MiB page cache as the store
# opens); the integer ids are assigned beforehand, untimed, so the figure
# is the b-tree work of the two layouts and not the cost of finding ids.
#
#   bench/bench_narrow_rows.sh STORE.db [RUNS]
#
# The rows are read through the store's view facts, which shows them with
# their names as text whether the store keeps them as text (schema 11 and
# before) or as ids (docs/store-sqlite.md, "Names as integers").
# STORE.db is a store written by keel (the million-event fleet store:
# keel ingest --cartridge fleet of keel generate fleet --events 1000000
# --seed 1). RUNS (default 2) alternated runs of each; prints wall, user
# and system seconds of each run, the medians' ratio and the file sizes.
set -euo pipefail
store=$1
runs=${2:-2}
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 tool" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-narrow.XXXXXX")
trap 'rm -rf "$work"' EXIT

sqlite3 "$work/src.db" <<EOF
ATTACH '$store' AS o;
CREATE TABLE text_rows AS SELECT seq, tenant, subject, predicate, value, valid_from,
	asserted_by, recorded_at, asserted_by_source FROM o.facts ORDER BY seq;
CREATE TABLE names (id INTEGER PRIMARY KEY, s TEXT UNIQUE);
INSERT OR IGNORE INTO names (s) SELECT tenant FROM text_rows;
INSERT OR IGNORE INTO names (s) SELECT subject FROM text_rows;
INSERT OR IGNORE INTO names (s) SELECT predicate FROM text_rows;
CREATE TABLE events (id INTEGER PRIMARY KEY, source TEXT, eid TEXT, UNIQUE (source, eid));
INSERT OR IGNORE INTO events (source, eid) SELECT asserted_by_source, asserted_by FROM text_rows;
CREATE TABLE int_rows AS SELECT seq, (SELECT id FROM names WHERE s = tenant) AS tenant,
	(SELECT id FROM names WHERE s = subject) AS subject,
	(SELECT id FROM names WHERE s = predicate) AS predicate, value, valid_from,
	(SELECT id FROM events WHERE source = asserted_by_source AND eid = asserted_by) AS event,
	recorded_at FROM text_rows ORDER BY seq;
EOF

# The store's own table and indexes (src/store/sqlite/schema.c), and the
# same over integers.
text_schema="CREATE TABLE fact_rows (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL,
	subject TEXT NOT NULL, predicate TEXT NOT NULL, value TEXT, valid_from INTEGER NOT NULL,
	asserted_by TEXT NOT NULL, recorded_at INTEGER NOT NULL, asserted_by_source TEXT NOT NULL,
	string_value TEXT GENERATED ALWAYS AS (CASE WHEN value >= '\"' AND value < '#' THEN value END) VIRTUAL);"
int_schema="CREATE TABLE fact_rows (seq INTEGER PRIMARY KEY, tenant INTEGER NOT NULL,
	subject INTEGER NOT NULL, predicate INTEGER NOT NULL, value TEXT, valid_from INTEGER NOT NULL,
	event INTEGER NOT NULL, recorded_at INTEGER NOT NULL,
	string_value TEXT GENERATED ALWAYS AS (CASE WHEN value >= '\"' AND value < '#' THEN value END) VIRTUAL);"
indexes="CREATE INDEX fact_rows_key ON fact_rows (tenant, subject, predicate, valid_from, recorded_at);
CREATE INDEX fact_rows_value ON fact_rows (tenant, predicate, string_value, subject)
	WHERE string_value IS NOT NULL;"

one() { # LAYOUT: prints "wall user sys"
	local db=$work/$1.db schema source
	rm -f "$db" "$db-wal" "$db-shm"
	if [ "$1" = text ]; then schema=$text_schema source=text_rows; else schema=$int_schema source=int_rows; fi
	sqlite3 "$db" "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL;" >/dev/null
	sqlite3 "$db" "$schema $indexes"
	/usr/bin/time -f '%e %U %S' -o "$work/time" sqlite3 "$db" \
		"PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;
		ATTACH '$work/src.db' AS s; BEGIN;
		INSERT INTO fact_rows SELECT * FROM s.$source; COMMIT;"
	cat "$work/time"
}

rows=$(sqlite3 "$work/src.db" "SELECT count(*) FROM text_rows")
echo "fact rows of $store: $rows; $runs alternated runs each; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %8s %8s %8s\n' "layout" "wall s" "user s" "sys s"
: >"$work/text.all"
: >"$work/int.all"
for _ in $(seq "$runs"); do
	for layout in text int; do
		read -r wall user sys < <(one "$layout")
		echo "$wall $user $sys" >>"$work/$layout.all"
		printf '%-34s %8s %8s %8s\n' \
			"$([ "$layout" = text ] && echo "names as text (today)" || echo "names as integers")" \
			"$wall" "$user" "$sys"
	done
done
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
tw=$(cut -d' ' -f1 "$work/text.all" | median)
iw=$(cut -d' ' -f1 "$work/int.all" | median)
tc=$(awk '{print $2 + $3}' "$work/text.all" | median)
ic=$(awk '{print $2 + $3}' "$work/int.all" | median)
awk -v tw="$tw" -v iw="$iw" -v tc="$tc" -v ic="$ic" 'BEGIN {
	printf "medians: text %.2f s wall, %.2f s CPU; integers %.2f s wall, %.2f s CPU; integers / text: %.2fx wall, %.2fx CPU\n",
		tw, tc, iw, ic, iw / tw, ic / tc }'
echo "file sizes: text $(stat -c %s "$work/text.db") bytes, integers $(stat -c %s "$work/int.db") bytes"
