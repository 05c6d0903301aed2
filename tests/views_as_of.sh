#!/usr/bin/env bash
# views_as_of.sh - a person's as-of query in plain SQL, on the views of
# each SQL store, gives what keel show --at gives (docs/store-sqlite.md,
# "Views for SQL tools"). One input, ingested into SQLite, MariaDB and
# PostgreSQL: a vehicle whose status changes at whole seconds and at
# fractions within the same seconds (the canonical text of a time has
# fraction digits only when they are not zero, so it does not sort as
# time), late events, two events at one time, strings with escapes and a
# U+0000, a driver linked and unlinked at fractions, a retirement.
# Moments: every time a row of the vehicle begins, the microsecond before
# it and the middle of each gap, one before the vehicle existed and one
# after everything; 50 of them, spread. At each, the query of the docs
# (the same text on the three stores), run with the sqlite3 shell, the
# mariadb client and psql: the facts by the fixed-width text times and by
# the integer microseconds, the outgoing and incoming links, and whether
# the entity existed, each equal to keel show's answer (facts with value,
# value_text, valid_from and valid_to). The same query over the canonical
# text (what the SQLite views showed before schema 10) answers some
# moments wrongly on this input: checked too, so that the input keeps its
# teeth. Needs the suite's MariaDB and PostgreSQL fixtures; without
# either, the rest runs and the test reports itself skipped.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"

# The input, the moments ("index text micros" a line) and the statements
# of each dialect (q.sqlite, q.mysql, q.postgres).
python3 - "$dir" <<'PY'
import datetime, json, random, sys
d = sys.argv[1]
rng = random.Random(29)
EPOCH = datetime.datetime(1970, 1, 1)
BASE = (datetime.datetime(2026, 1, 5, 6) - EPOCH) // datetime.timedelta(microseconds=1)
lines, starts = [], set()
def ev(id, type, us, data, vehicle=True):
    t = (EPOCH + datetime.timedelta(microseconds=us)).strftime('%Y-%m-%dT%H:%M:%S.%f')
    t = (t[:-7] if t.endswith('.000000') else t.rstrip('0')) + 'Z'
    lines.append(json.dumps({"specversion": "1.0", "id": id, "source": "/asof",
                             "tenant": "asof", "type": type, "time": t, "data": data}))
    if vehicle:
        starts.add(us)
def at(sec, us=0):
    return BASE + sec * 1000000 + us
ev("d1", "fleet.depot.opened", at(0, 500000),
   {"depot_id": "D-1", "name": "North", "city": "Porto", "location": {"lat": 41.1, "lon": -8.6}},
   vehicle=False)
ev("v1", "fleet.vehicle.registered", at(1),
   {"vehicle_id": "V-1", "depot_id": "D-1", "make": "DAF", "model": "LF", "year": 2019})
ev("h1", "fleet.driver.hired", at(1, 250000),
   {"driver_id": "DR-1", "depot_id": "D-1", "name": "Ana", "license_class": "C"}, vehicle=False)
statuses = ["available", "in_service", "caf\u00e9", "tab\there", 'quote "q"', "back\\slash",
            "\U0001F69A truck", "nul\u0000byte", "maintenance"]
# whole seconds and fractions of the same seconds, the microseconds at
# both ends of a second among them
fractions = [0, 0, 1, 250000, 500000, 999999]
seen = set()
for i in range(26):
    while True:
        t = (rng.randrange(2, 9), rng.choice(fractions) or rng.choice([0, rng.randrange(1, 999999)]))
        if t not in seen:
            break
    seen.add(t)
    ev("s%d" % i, "fleet.vehicle.status_changed", at(*t),
       {"vehicle_id": "V-1", "status": rng.choice(statuses), "reason": "r%d" % i})
# two events at one time: the later one holds, the earlier row is empty
ev("s-tie-a", "fleet.vehicle.status_changed", at(5, 500001), {"vehicle_id": "V-1", "status": "tie a"})
ev("s-tie-b", "fleet.vehicle.status_changed", at(5, 500001), {"vehicle_id": "V-1", "status": "tie b"})
ev("a1", "fleet.driver.assigned", at(2, 500000), {"driver_id": "DR-1", "vehicle_id": "V-1"})
ev("u1", "fleet.driver.unassigned", at(4), {"driver_id": "DR-1", "vehicle_id": "V-1"})
ev("a2", "fleet.driver.assigned", at(4, 1), {"driver_id": "DR-1", "vehicle_id": "V-1"})
ev("u2", "fleet.driver.unassigned", at(7, 750000), {"driver_id": "DR-1", "vehicle_id": "V-1"})
ev("r1", "fleet.vehicle.retired", at(9), {"vehicle_id": "V-1", "depot_id": "D-1", "reason": "old"})
# arrival out of time order: late events (the first three stay first, so
# that the entities exist before their links)
rest = lines[3:]
rng.shuffle(rest)
with open(f'{d}/in.ndjson', 'w') as f:
    f.write("\n".join(lines[:3] + rest) + "\n")

starts = sorted(starts)
moments = set(starts) | {t - 1 for t in starts}
moments |= {(a + b) // 2 for a, b in zip(starts, starts[1:])}
moments |= {starts[0] - 1000000, starts[-1] + 1000000}  # before it existed, after all
moments = sorted(moments)
moments = sorted({moments[round(i * (len(moments) - 1) / 49)] for i in range(50)})
assert len(moments) >= 45, len(moments)
moments = [(str(i), (EPOCH + datetime.timedelta(microseconds=us)).strftime(
    '%Y-%m-%dT%H:%M:%S.%fZ'), us) for i, us in enumerate(moments)]
with open(f'{d}/moments', 'w') as f:
    f.writelines(f'{i} {text} {us}\n' for i, text, us in moments)

# The person's query at each moment (the text of the docs' example, the
# moment put in); the select list in hex, so that any string survives the
# client's output, and tagged with the question and the moment.
for dialect in ('sqlite', 'mysql', 'postgres'):
    prefix = '' if dialect == 'sqlite' else 'keel_'
    def h(x):
        if dialect == 'sqlite':
            return f"CASE WHEN {x} IS NULL THEN 'NULL' ELSE hex({x}) END"
        if dialect == 'mysql':
            return f"coalesce(HEX({x}), 'NULL')"
        return f"coalesce(encode(convert_to({x}, 'UTF8'), 'hex'), 'NULL')"
    def select(tag, i, cells, view, where):
        if dialect == 'postgres':
            joined = ', '.join([f"'{tag}'", f"'{i}'"] + cells)
            cells = f"concat_ws(E'\\t', {joined})"
        else:  # the mariadb client prints a header: one the check skips
            cells = ', '.join([f"'{tag}' AS q", f"'{i}' AS m"] + cells)
        return f"SELECT {cells} FROM {prefix}{view}\nWHERE {where};\n"
    fact = [h('predicate'), h('value'), h('value_text'), h('valid_from_text'), h('valid_to_text')]
    with open(f'{d}/q.{dialect}', 'w') as f:
        for i, text, us in moments:
            t = f"'{text}'"
            f.write(select('F', i, fact, 'facts',
                           f"tenant = 'asof' AND subject = 'vehicle:V-1'\n"
                           f"  AND valid_from_text <= {t}\n"
                           f"  AND (valid_to_text IS NULL OR valid_to_text > {t})\n"
                           f"  AND value IS NOT NULL"))
            f.write(select('I', i, fact, 'facts',
                           f"tenant = 'asof' AND subject = 'vehicle:V-1'\n"
                           f"  AND valid_from <= {us} AND (valid_to IS NULL OR valid_to > {us})\n"
                           f"  AND value IS NOT NULL"))
            links = (f"valid_from_text <= {t} AND (valid_to_text IS NULL OR valid_to_text > {t})"
                     f"\n  AND linked")
            f.write(select('O', i, [h('relation'), h('object')], 'relations',
                           f"tenant = 'asof' AND subject = 'vehicle:V-1' AND {links}"))
            f.write(select('N', i, [h('subject'), h('relation')], 'relations',
                           f"tenant = 'asof' AND object = 'vehicle:V-1' AND {links}"))
            f.write(select('E', i, [h('subject')], 'entities',
                           f"tenant = 'asof' AND subject = 'vehicle:V-1' "
                           f"AND first_seen_text <= {t}"))
PY

"$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --quiet --store "sqlite:$dir/a.db"
"$KEEL" dump --store "sqlite:$dir/a.db" --output "$dir/a.dump"

# keel show at each moment (status 1 before the vehicle existed). Under
# the sanitizers, the leak check (two fifths of each run) on the first two
# only, one of each answer: the 48 runs after them repeat the same code.
asan=${ASAN_OPTIONS:-}
while read -r i text us; do
	[ "$i" -lt 2 ] || [ -z "$asan" ] || export ASAN_OPTIONS=$asan:detect_leaks=0
	if ! "$KEEL" show asof vehicle:V-1 --at "$text" --json --store "sqlite:$dir/a.db" \
		>"$dir/show.$i" 2>"$dir/show.$i.err"; then
		grep -q 'did not exist' "$dir/show.$i.err" || fail "keel show --at $text: $(cat "$dir/show.$i.err")"
		echo null >"$dir/show.$i"
	fi
done <"$dir/moments"
[ -z "$asan" ] || export ASAN_OPTIONS=$asan

# SQLite: the sqlite3 shell.
answers=(sqlite "$dir/a.sqlite")
sqlite3 -separator "$(printf '\t')" "$dir/a.db" <"$dir/q.sqlite" >"$dir/a.sqlite" ||
	fail "sqlite3: $(head -c 600 "$dir/a.sqlite")"

missing=
# MariaDB: the mariadb client (the fixture's script runs it on the
# server's socket).
if [ -n "${KEEL_TEST_MYSQL_FRESH:-}" ] && [ -n "${KEEL_TEST_MYSQL_DIR:-}" ]; then
	url=$($KEEL_TEST_MYSQL_FRESH)
	"$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --quiet --store "$url"
	{
		echo "USE \`${url##*/}\`;"
		cat "$dir/q.mysql"
	} | "$KEEL_MYSQL_SCRIPT" sql "$KEEL_TEST_MYSQL_DIR" >"$dir/a.mysql" ||
		fail "mariadb: $(head -c 600 "$dir/a.mysql")"
	answers+=(mariadb "$dir/a.mysql")
else
	missing="$missing MariaDB (the mysql_server fixture)"
fi

# PostgreSQL: psql (the fixture's script runs it on the server's socket).
if [ -n "${KEEL_TEST_PG_FRESH:-}" ] && [ -n "${KEEL_TEST_PG_DIR:-}" ]; then
	url=$($KEEL_TEST_PG_FRESH)
	"$KEEL" ingest --cartridge fleet "$dir/in.ndjson" --quiet --store "$url"
	{
		echo '\pset format unaligned'
		echo '\pset tuples_only on'
		echo "SET search_path TO ${url##*search_path%3D};"
		cat "$dir/q.postgres"
	} | KEEL_PG_DB=keel "$KEEL_PG_SCRIPT" sql "$KEEL_TEST_PG_DIR" >"$dir/a.postgres" ||
		fail "psql: $(head -c 600 "$dir/a.postgres")"
	answers+=(postgresql "$dir/a.postgres")
else
	missing="$missing PostgreSQL (the postgres_server fixture)"
fi

# Each store's answers (tab-separated lines: question, moment, cells;
# other lines are a client's headers) equal keel show's; and the input has
# teeth: over the canonical text, the same question answers some moments
# wrongly.
python3 - "$dir" "${answers[@]}" <<'PY' || fail "the as-of query in SQL differs from keel show --at"
import json, sys
d, answers = sys.argv[1], sys.argv[2:]
def fixed(t):
    return None if t is None else t if '.' in t else t[:-1] + '.000000Z'
moments = [line.split() for line in open(f'{d}/moments')]
want = {}
for i, text, _ in moments:
    doc = json.load(open(f'{d}/show.{i}', encoding='utf-8')) or {}
    facts = set()
    for p, f in doc.get('facts', {}).items():
        v = f['value']
        facts.add((p, json.dumps(v, sort_keys=True),
                   v if isinstance(v, str) and '\0' not in v else None,
                   fixed(f['valid_from']), fixed(f['valid_to'])))
    want[i] = {'F': facts, 'I': facts,
               'O': {(r['relation'], r['object']) for r in doc.get('outgoing', [])},
               'N': {(r['subject'], r['relation']) for r in doc.get('incoming', [])},
               'E': {('vehicle:V-1',)} if doc else set()}
assert any(w['F'] for w in want.values()) and any(w['N'] for w in want.values())
assert any(not w['E'] for w in want.values())
bad = 0
for name, path in zip(answers[::2], answers[1::2]):
    got = {i: {k: set() for k in 'FIONE'} for i in want}
    for line in open(path, encoding='utf-8'):
        cells = line.rstrip('\n').split('\t')
        if len(cells) < 3 or cells[0] not in 'FIONE' or cells[1] not in got:
            continue
        row = [None if c == 'NULL' else bytes.fromhex(c).decode('utf-8') for c in cells[2:]]
        if cells[0] in 'FI':
            row[1] = json.dumps(json.loads(row[1]), sort_keys=True)
        got[cells[1]][cells[0]].add(tuple(row))
    diff = [(i, k) for i in want for k in want[i] if want[i][k] != got[i][k]]
    for i, k in diff[:3]:
        print(f'{name}, moment {moments[int(i)][1]}, {k}: keel show {sorted(want[i][k])}, '
              f'SQL {sorted(got[i][k])}', file=sys.stderr)
    bad += len(diff)
rows = [json.loads(l) for l in open(f'{d}/a.dump', encoding='utf-8')]
rows = [r for r in rows if r['type'] == 'fact' and r['subject'] == 'vehicle:V-1']
wrong = 0
for i, text, _ in moments:
    canon = text.replace('.000000Z', 'Z')
    old = {(r['predicate'], json.dumps(r['value'], sort_keys=True)) for r in rows
           if r['valid_from'] <= canon and (r['valid_to'] is None or r['valid_to'] > canon)
           and r['value'] is not None}
    wrong += old != {f[:2] for f in want[i]['F']}
if wrong < 5:
    print(f'over the canonical text only {wrong} moments are answered wrongly', file=sys.stderr)
    bad += 1
print(f'{len(moments)} moments, {len(answers) // 2} stores: the answers of keel show '
      f'({wrong} moments answered wrongly over the canonical text)')
sys.exit(1 if bad else 0)
PY
[ -z "$missing" ] || skip_test "SQLite checked; no server for:$missing"
