#!/usr/bin/env bash
# The PostgreSQL store through the tool: a generated fleet stream with late
# events and duplicates, and a stream of the hidden cases' kind (odd
# Unicode, names at their longest, equal times, late and duplicate events),
# give SQLite's dump byte for byte on PostgreSQL, at batch 500 and 5000;
# sending it again changes nothing; exports are SQLite's files; dump ->
# load -> dump is the same bytes;
# the views show exactly the dump's rows; bad stores fail with one clear
# line; the cartridges' golden inputs give SQLite's dumps too. Needs the
# suite's PostgreSQL fixture (KEEL_TEST_PG_FRESH).
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
needs_postgres
: "${KEEL_PG_SCRIPT:?the script of the fixture}"

in=$dir/in.ndjson
"$KEEL" generate fleet --events 3000 --tenants 3 --seed 4 --late 0.05 --duplicates 0.05 --output "$in"

# The hidden cases' kind of input, made here: subjects of 255 bytes and
# subjects with every kind of character: combining marks,
# right-to-left text, emoji and characters beyond the BMP; several events
# at one time on one timeline; events late by days; duplicates and one
# conflicting duplicate; a NUL and control characters in values.
odd=$dir/odd.ndjson
python3 - "$odd" <<'PY'
import json, sys
long_id = "V-" + "é" * 122 + "x"           # "vehicle:" + 247 bytes = 255
ids = [long_id, "V-e\u0301", "V-\u05d0\u05d1", "V-\U0001F69A", "V-\uffff", "V- a", "V-a", "V-A"]
lines = []
n = 0
def ev(type, t, data, id=None, src=None):
    global n
    n += 1
    e = {"specversion": "1.0", "id": id or f"odd-{n}", "tenant": "odd",
         "type": type, "time": t, "data": data}
    if src is not None:
        e["source"] = src
    lines.append(json.dumps(e, ensure_ascii=False))
for i, v in enumerate(ids):
    ev("fleet.vehicle.registered", "2026-01-05T06:00:00Z",
       {"vehicle_id": v, "depot_id": "D-\u00e9", "make": "M\u0000k\te", "model": "\u202eX", "year": 2020 + i})
    for k in range(4):  # equal times on one timeline
        ev("fleet.vehicle.status_changed", "2026-01-05T07:00:00Z",
           {"vehicle_id": v, "status": f"s{k}", "reason": "\U0001F600" * k})
    ev("fleet.vehicle.status_changed", "2026-01-01T00:00:00Z",  # late by days
       {"vehicle_id": v, "status": "early", "reason": "late"}, src="/late")
lines.append(lines[3])  # a duplicate
c = json.loads(lines[4]); c["data"]["status"] = "other"  # a conflicting one
lines.append(json.dumps(c, ensure_ascii=False))
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
PY

for input in "$in" "$odd" "${KEEL_TEST_DATA:?}/cli/story.ndjson"; do
	name=$(basename "$input")
	"$KEEL" ingest --cartridge fleet "$input" --quiet --store "sqlite:$dir/ref-$name.db" 2>/dev/null || [ $? -eq 3 ]
	"$KEEL" dump --store "sqlite:$dir/ref-$name.db" >"$dir/ref.dump"
	[ -s "$dir/ref.dump" ] || fail "$name: empty reference dump"
	for batch in 500 5000; do
		url=$($KEEL_TEST_PG_FRESH)
		"$KEEL" ingest --cartridge fleet "$input" --quiet --batch "$batch" --store "$url" 2>/dev/null || [ $? -eq 3 ]
		"$KEEL" dump --store "$url" >"$dir/pg.dump"
		cmp "$dir/ref.dump" "$dir/pg.dump" || fail "$name, batch $batch: postgres dump differs from sqlite's"
	done
	# the same input again: nothing changes
	"$KEEL" ingest --cartridge fleet "$input" --batch 500 --store "$url" 2>"$dir/report2" || [ $? -eq 3 ]
	grep -q '^accepted 0, ' "$dir/report2" || fail "$name, second run: $(cat "$dir/report2")"
	grep -q '^rows inserted 0$' "$dir/report2" || fail "$name: second run wrote rows"
	"$KEEL" dump --store "$url" >"$dir/pg2.dump"
	cmp "$dir/ref.dump" "$dir/pg2.dump" || fail "$name: second run changed the dump"
done
# keel export in each format (the story's store): SQLite's files.
for format in csv ndjson graphml; do
	rm -rf "$dir/ex-sqlite" "$dir/ex-pg"
	"$KEEL" export --format "$format" --store "sqlite:$dir/ref-story.ndjson.db" --output "$dir/ex-sqlite"
	"$KEEL" export --format "$format" --store "$url" --output "$dir/ex-pg"
	diff -r "$dir/ex-sqlite" "$dir/ex-pg" >/dev/null || fail "export --format $format differs from sqlite's"
done


# The cartridges' golden inputs (tests/data/cartridge/NAME.in, with NAME.json
# or the built-in NAME): the same dump on PostgreSQL as on SQLite.
for input in "$KEEL_TEST_DATA"/cartridge/*.in; do
	name=$(basename "$input" .in)
	cartridge=${input%.in}.json
	[ -f "$cartridge" ] || cartridge=$name
	grep -v '^#' "$input" >"$dir/golden.ndjson"
	"$KEEL" ingest "$dir/golden.ndjson" --cartridge "$cartridge" --quiet --store "sqlite:$dir/golden-$name.db" 2>/dev/null || [ $? -eq 3 ]
	"$KEEL" dump --store "sqlite:$dir/golden-$name.db" >"$dir/ref.dump"
	url=$($KEEL_TEST_PG_FRESH)
	"$KEEL" ingest "$dir/golden.ndjson" --cartridge "$cartridge" --quiet --batch 7 --store "$url" 2>/dev/null || [ $? -eq 3 ]
	"$KEEL" dump --store "$url" >"$dir/pg.dump"
	[ -s "$dir/ref.dump" ] || fail "$name: empty reference dump"
	cmp "$dir/ref.dump" "$dir/pg.dump" || fail "$name: postgres dump differs from sqlite's"
done

# dump -> load into PostgreSQL -> dump
"$KEEL" dump --store "sqlite:$dir/ref-in.ndjson.db" >"$dir/ref.dump"
url=$($KEEL_TEST_PG_FRESH)
"$KEEL" load "$dir/ref.dump" --store "$url"
"$KEEL" dump --store "$url" >"$dir/loaded.dump"
cmp "$dir/ref.dump" "$dir/loaded.dump" || fail "load into postgres changed the dump"

# The views hold exactly the dump's rows (strings as bytes, values as
# parsed JSON and strings as text, times as microseconds and as text of
# fixed width: tests/cli/views_check.py), on the odd input (a NUL in a
# value among them).
url=$($KEEL_TEST_PG_FRESH)
schema=${url##*search_path%3D}
"$KEEL" ingest --cartridge fleet "$odd" --quiet --store "$url" 2>/dev/null || [ $? -eq 3 ]
"$KEEL" dump --store "$url" >"$dir/views.dump"
. "$(dirname "$0")/cli/views.sh"
views_select postgres "$schema." | while read -r q; do
	KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" "$q"
done >"$dir/views.rows"
python3 "$(dirname "$0")/cli/views_check.py" "$dir/views.dump" "$dir/views.rows" >/dev/null ||
	fail "the views differ from keel dump"

# Bad stores: one line each, the password never shown.
password=$(cat "$KEEL_TEST_PG_DIR/password")
check_err() { # expected-text url
	local rc=0
	"$KEEL" stats --store "$2" >/dev/null 2>"$dir/err" || rc=$?
	[ "$rc" -eq 1 ] || fail "$2: status $rc"
	[ "$(wc -l <"$dir/err")" -eq 1 ] || fail "$2: not one line: $(cat "$dir/err")"
	grep -qF "$1" "$dir/err" || fail "$2: $(cat "$dir/err")"
	grep -qF "$password" "$dir/err" && fail "the message shows the password: $(cat "$dir/err")"
	return 0
}
base=$(cat "$KEEL_TEST_PG_DIR/url")
check_err 'access denied for user "keel" (wrong user name or password)' "${base/$password/wrong}"
check_err 'database "nope" does not exist' "${base/@\/keel\?/@/nope?}"
check_err 'sslmode "sometimes": expected disable, allow, prefer, require, verify-ca or verify-full' "$base&sslmode=sometimes"
check_err 'missing database name (postgres://user:password@host:port/db)' "postgresql://keel:$password@localhost:5432"
echo ok
