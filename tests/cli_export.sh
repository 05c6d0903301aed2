#!/usr/bin/env bash
# cli_export.sh - keel export through the real binary (docs/export.md):
# usage errors; ndjson to standard output is the dump; csv files read back
# by Python's csv module hold as many rows as the dump; GraphML of a
# snapshot opens in standard tools (xmllint, Python's ElementTree, NetworkX) with one node per entity seen by then, the kind and the
# facts valid then as node data, and one edge per relation linked then,
# checked against the dump. scripts/deps --test installs xmllint, Debian's python3
# and NetworkX, so every check runs; a missing tool fails the test.
. "$(dirname "$0")/cli/lib.sh"

"$KEEL" generate fleet --events 3000 --tenants 2 --seed 5 --late 0.1 >"$dir/in.ndjson"
cat >>"$dir/in.ndjson" <<'EOF'
{"specversion":"1.0","id":"x<&>1","tenant":"odd","type":"fleet.vehicle.registered","time":"2026-01-05T06:00:00Z","data":{"vehicle_id":"V<1>&\"'\u0001\t,","depot_id":"D\n1","make":"M\u00e9,\"","model":"<x>","year":2020}}
EOF
db=(--store "sqlite:$dir/a.db")
expect 0 "$KEEL" ingest --cartridge fleet "$dir/in.ndjson" "${db[@]}"
expect 0 "$KEEL" dump "${db[@]}" --output "$dir/dump.ndjson"

expect 2 "$KEEL" export "${db[@]}"
contains err "--format is required"
expect 2 "$KEEL" export --format xml "${db[@]}"
contains err 'not csv, ndjson or graphml'
expect 2 "$KEEL" export --format csv "${db[@]}"
contains err "give --output DIR"
expect 2 "$KEEL" export --format graphml "${db[@]}"
contains err "--tenant T for standard output"
expect 2 "$KEEL" export --format ndjson --at yesterday "${db[@]}"
contains err '--at "yesterday"'

# ndjson without --at is the dump, byte for byte.
expect 0 "$KEEL" export --format ndjson "${db[@]}"
cmp -s "$dir/out" "$dir/dump.ndjson" || fail "ndjson export differs from the dump"
expect 0 "$KEEL" export --format ndjson --output "$dir/nd" "${db[@]}"
cmp -s "$dir/nd/export.ndjson" "$dir/dump.ndjson" || fail "ndjson file differs from the dump"
# --output creates missing parents, as mkdir -p does; a file in the way is an error
expect 0 "$KEEL" export --format ndjson --output "$dir/deep/er/nd" "${db[@]}"
cmp -s "$dir/deep/er/nd/export.ndjson" "$dir/dump.ndjson" || fail "nested --output differs"
: >"$dir/plainfile"
expect 1 "$KEEL" export --format ndjson --output "$dir/plainfile/nd" "${db[@]}"
contains err "cannot create the directory \"$dir/plainfile/nd\": Not a directory"

at=2026-01-05T09:00:00Z
expect 0 "$KEEL" export --format csv --output "$dir/csv" "${db[@]}"
expect 0 "$KEEL" export --format graphml --at "$at" --output "$dir/gml" "${db[@]}"
for t in tenant-00 tenant-01 odd; do
	[ -s "$dir/gml/$t.graphml" ] || fail "no $t.graphml"
done
for tool in xmllint /usr/bin/python3; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed (scripts/deps --test)"
done
for f in "$dir"/gml/*.graphml; do
	xmllint --noout "$f" 2>"$dir/xmllint.err" || fail "$f is not well-formed XML: $(cat "$dir/xmllint.err")"
done
/usr/bin/python3 - "$dir" "$at" <<'PY' || fail "python parse-back failed"
import csv, json, sys, os
import xml.etree.ElementTree as ET
d, at = sys.argv[1], sys.argv[2]
dump = [json.loads(l) for l in open(os.path.join(d, 'dump.ndjson'), encoding='utf-8')]
bad = 0
def check(cond, msg):
    global bad
    if not cond:
        print('FAIL:', msg); bad += 1

# csv: every table has the dump's rows, fields as the dump has them.
for table, typ in [('entities', 'entity'), ('facts', 'fact'), ('relations', 'relation'), ('events', 'event')]:
    with open(os.path.join(d, 'csv', table + '.csv'), newline='', encoding='utf-8') as f:
        rows = list(csv.reader(f, strict=True))
    want = [r for r in dump if r['type'] == typ]
    check(len(rows) - 1 == len(want), '%s.csv has %d rows, dump %d' % (table, len(rows) - 1, len(want)))
    hdr = rows[0]
    for row, rec in zip(rows[1:], want):
        got = dict(zip(hdr, row))
        check(got['tenant'] == rec['tenant'], 'tenant of a %s row' % typ)
        if typ != 'event':
            check(got['subject'] == rec['subject'], 'subject %r != %r' % (got['subject'], rec['subject']))
        if typ == 'fact':
            check(got['value'] == ('' if rec['value'] is None else json.dumps(rec['value'], ensure_ascii=False, separators=(',', ':'))) or json.loads(got['value'] or 'null') == rec['value'], 'fact value %r' % got['value'])

def xml_shown(s):
    # what XML 1.0 cannot carry is exported as U+FFFD
    return ''.join('\ufffd' if ord(ch) < 32 and ch not in '\t\n\r' else ch for ch in s)

def valid_at(r):
    return r['valid_from'] <= at and (r['valid_to'] is None or at < r['valid_to'])

import networkx
ns = {'g': 'http://graphml.graphdrawing.org/xmlns'}
for tenant in ['tenant-00', 'tenant-01', 'odd']:
    path = os.path.join(d, 'gml', tenant + '.graphml')
    root = ET.parse(path).getroot()
    keys = {k.get('id'): k.get('attr.name') for k in root.findall('g:key', ns)}
    graph = root.find('g:graph', ns)
    ents = [r for r in dump if r['type'] == 'entity' and r['tenant'] == tenant and r['first_seen'] <= at]
    facts = [r for r in dump if r['type'] == 'fact' and r['tenant'] == tenant and valid_at(r) and r['value'] is not None]
    rels = [r for r in dump if r['type'] == 'relation' and r['tenant'] == tenant and valid_at(r) and r['linked']]
    nodes = graph.findall('g:node', ns)
    edges = graph.findall('g:edge', ns)
    check(len(nodes) == len(ents), '%s: %d nodes, %d entities' % (tenant, len(nodes), len(ents)))
    check(len(edges) == len(rels), '%s: %d edges, %d relations' % (tenant, len(edges), len(rels)))
    by_subject = {}
    ids = {}
    for n in nodes:
        data = {keys[x.get('key')]: (x.text or '') for x in n.findall('g:data', ns)}
        by_subject[data['subject']] = data
        ids[n.get('id')] = data['subject']
    for e in ents:
        s = xml_shown(e['subject'])
        check(s in by_subject, '%s: no node for %r' % (tenant, s))
        if s in by_subject:
            check(by_subject[s].get('kind') == (e['kind'] or None) or (e['kind'] is None and 'kind' not in by_subject[s]), 'kind of %r' % s)
    for f in facts:
        v = f['value']
        shown = v if isinstance(v, str) else json.dumps(v, separators=(',', ':'))
        got = by_subject.get(xml_shown(f['subject']), {}).get(f['predicate'])
        check(got == shown or (got is not None and json.loads(got) == v), '%s %s: %r != %r' % (f['subject'], f['predicate'], got, shown))
    edge_set = sorted((ids[e.get('source')], ids[e.get('target')]) for e in edges)
    check(edge_set == sorted((xml_shown(r['subject']), xml_shown(r['object'])) for r in rels), '%s: edges differ' % tenant)
    if networkx:
        g = networkx.read_graphml(path)
        check(g.number_of_nodes() == len(ents) and g.number_of_edges() == len(rels), '%s: networkx sees %d/%d' % (tenant, g.number_of_nodes(), g.number_of_edges()))
sys.exit(1 if bad else 0)
PY

finish
