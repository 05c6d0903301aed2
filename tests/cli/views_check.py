#!/usr/bin/env python3
# views_check.py DUMP ROWS...
#
# The SQL views of a store (facts, relations, entities; keel_facts, ... on
# MySQL and PostgreSQL) hold exactly the fact, relation and entity lines
# of its keel dump DUMP, nothing more, nothing less, in every column but
# seq and recorded_at (which the dump does not print): strings as their
# bytes, a fact's value as parsed JSON and value_text as the string
# itself when the value is a JSON string without U+0000 (NULL otherwise),
# each time as microseconds (X) and as fixed-width RFC 3339 text (X_text,
# six fraction digits and Z), linked as 1 or 0.
#
# ROWS are the views' rows as a test selected them with the SQL tool of
# the store, one row a line, tab-separated: the kind ('fact', 'relation',
# 'entity'), then the columns of COLUMNS below in that order, each the
# word NULL or, for an integer column (INTS), its decimal digits (linked
# 1/0, or true/false from PostgreSQL), for any other the hex of its bytes. A
# line that begins with none of the kinds (a client's header) is skipped.
# Exits 1 with what differed.
import datetime
import json
import sys

COLUMNS = {
    'fact': ['tenant', 'subject', 'predicate', 'value', 'value_text', 'valid_from',
             'valid_from_text', 'valid_to', 'valid_to_text', 'asserted_by_source',
             'asserted_by', 'closed_by_source', 'closed_by'],
    'relation': ['tenant', 'subject', 'relation', 'object', 'linked', 'valid_from',
                 'valid_from_text', 'valid_to', 'valid_to_text', 'asserted_by_source',
                 'asserted_by', 'closed_by_source', 'closed_by'],
    'entity': ['tenant', 'subject', 'kind', 'first_seen', 'first_seen_text', 'last_seen',
               'last_seen_text'],
}
INTS = {'linked', 'valid_from', 'valid_to', 'first_seen', 'last_seen'}
EPOCH = datetime.datetime(1970, 1, 1)


def micros(t):
    """The dump's canonical time as microseconds since the epoch."""
    day, _, clock = t.rstrip('Z').partition('T')
    whole, _, frac = clock.partition('.')
    d = datetime.datetime.strptime(day + 'T' + whole, '%Y-%m-%dT%H:%M:%S')
    return (d - EPOCH) // datetime.timedelta(microseconds=1) + int((frac + '000000')[:6])


def fixed(us):
    """Microseconds as the views' text: six fraction digits, always."""
    d = EPOCH + datetime.timedelta(microseconds=us)
    return d.strftime('%Y-%m-%dT%H:%M:%S.%f') + 'Z'


def want_rows(path):
    rows = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            r = json.loads(line)
            kind = r['type']
            if kind not in COLUMNS:
                continue
            row = {'tenant': r['tenant'], 'subject': r['subject']}
            if kind == 'entity':
                row['kind'] = r['kind']
                times = ['first_seen', 'last_seen']
            else:
                if kind == 'fact':
                    v = r['value']
                    row['predicate'] = r['predicate']
                    row['value'] = None if v is None else json.dumps(v, sort_keys=True)
                    row['value_text'] = v if isinstance(v, str) and '\0' not in v else None
                else:
                    row.update(relation=r['relation'], object=r['object'],
                               linked=1 if r['linked'] else 0)
                for ref in ('asserted_by', 'closed_by'):
                    e = r[ref]
                    row[ref + '_source'] = None if e is None else e['source']
                    row[ref] = None if e is None else e['id']
                times = ['valid_from', 'valid_to']
            for t in times:
                us = None if r[t] is None else micros(r[t])
                row[t] = us
                row[t + '_text'] = None if us is None else fixed(us)
            rows.append((kind,) + tuple(row[c] for c in COLUMNS[kind]))
    return rows


def got_rows(paths):
    rows = []
    for path in paths:
        with open(path, encoding='utf-8') as f:
            for line in f:
                cells = line.rstrip('\n').split('\t')
                kind = cells[0]
                if kind not in COLUMNS:
                    continue
                names = COLUMNS[kind]
                if len(cells) != len(names) + 1:
                    sys.exit(f'{path}: a {kind} row of {len(cells) - 1} columns, not '
                             f'{len(names)}: {line!r}')
                row = []
                for name, cell in zip(names, cells[1:]):
                    if cell == 'NULL':
                        v = None
                    elif name == 'linked':
                        v = 1 if cell in ('1', 't', 'true') else 0
                    elif name in INTS:
                        v = int(cell)
                    else:
                        v = bytes.fromhex(cell).decode('utf-8')
                        if name == 'value':
                            v = json.dumps(json.loads(v), sort_keys=True)
                    row.append(v)
                rows.append((kind,) + tuple(row))
    return rows


want = sorted(want_rows(sys.argv[1]), key=repr)
got = sorted(got_rows(sys.argv[2:]), key=repr)
if want != got or not want:
    missing = [r for r in want if r not in got][:3]
    extra = [r for r in got if r not in want][:3]
    print(f'{len(want)} dump rows, {len(got)} view rows; only in the dump: {missing}; '
          f'only in the views: {extra}', file=sys.stderr)
    sys.exit(1)
print(f'views: {len(got)} rows, each a line of the dump')
