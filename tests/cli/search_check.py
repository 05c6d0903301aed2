#!/usr/bin/env python3
# search_check.py STORE DUMP [PREDICATE...]
#
# keel search at the present, checked against the store's keel dump (the
# history rows, with valid_to derived from them): for each tenant and
# predicate of the dump (or only those named), each value some subject
# holds now, `keel search` (run as $KEEL on the store URL STORE) lists
# exactly the subjects whose row holding now has that value, in bytewise
# order, each with that row's valid_from and asserted_by. Values are
# searched as the dump writes them (the stored JSON text), numbers and
# objects as well as strings; at most a few values of each predicate, its
# least in bytewise order, so that a predicate of readings stays cheap.
# The same at two earlier times (`--at`), taken from the dump so that
# rows begin and end there: the valid_from of the fact row a third of the
# way through them in time and the microsecond before it; the least value
# of each predicate then, of those a store may fold (a string, an integer,
# true, false: on SQLite these read the spans), so that the check stays
# cheap.
# With KEEL_HTTP (a keel serve's base URL) and KEEL_TOKEN set, the
# searches are GET /v1/tenants/T/search on that server instead (STORE is
# then only named in messages). Exits 1 with what differed.
import datetime
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request

store, dump_path = sys.argv[1:3]
only = set(sys.argv[3:])
KEEL = os.environ.get("KEEL", "keel")
HTTP = os.environ.get("KEEL_HTTP")
# values searched per (tenant, predicate) at the present: 3, or fewer in
# a test's later checks (KEEL_SEARCH_PER_PREDICATE), each after another
# way of writing: a wrong fold shows in any value whose timeline it touched
PER_PREDICATE = int(os.environ.get("KEEL_SEARCH_PER_PREDICATE", "3"))
now = datetime.datetime.now(datetime.timezone.utc)


def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def fail(msg):
    sys.stderr.write("FAIL: %s (%s)\n" % (msg, store))
    sys.exit(1)


facts = []  # (raw value, row) of every fact row but unsets
for line in open(dump_path, encoding="utf-8"):
    r = json.loads(line)
    if r["type"] != "fact" or (only and r["predicate"] not in only):
        continue
    raw = line[line.find('"value":') + 8:line.find(',"valid_from":')]
    if r["value"] is None or raw == "null":
        continue  # an unset holds no value
    facts.append((raw, r))


def held_at(when):
    """(tenant, predicate) -> {raw value: [(subject, row)]} holding at when."""
    held = {}
    for raw, r in facts:
        if t(r["valid_from"]) <= when and (r["valid_to"] is None or
                                           when < t(r["valid_to"])):
            held.setdefault((r["tenant"], r["predicate"]), {}).setdefault(
                raw, []).append((r["subject"], r))
    return held

def search(tenant, predicate, raw, cursor, at):
    """One page of the search, by keel search or over HTTP."""
    if HTTP:
        args = {"predicate": predicate, "value": raw, "limit": "1000"}
        if cursor:
            args["cursor"] = cursor
        if at:
            args["at"] = at
        url = "%s/v1/tenants/%s/search?%s" % (HTTP, urllib.parse.quote(tenant, safe=""),
                                              urllib.parse.urlencode(args))
        req = urllib.request.Request(
            url, headers={"Authorization": "Bearer " + os.environ["KEEL_TOKEN"]})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)
        except OSError as e:
            fail("GET %s: %s" % (url, e))
    argv = [KEEL, "search", tenant, predicate, raw, "--limit", "1000", "--json",
            "--store", store] + (["--after", cursor] if cursor else []) + \
        (["--at", at] if at else [])
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        fail("keel search %s %s %s: exit %d: %s" % (tenant, predicate, raw,
                                                    r.returncode, r.stderr))
    return json.loads(r.stdout)


def folded(raw):
    return raw[0] == '"' or raw in ("true", "false") or \
        raw.lstrip("-").isdigit()


def check_at(when, at, per_predicate, which):
    """Searches at when (at: its text for --at, None for the present)."""
    n = 0
    for (tenant, predicate), values in sorted(held_at(when).items()):
        raws = sorted(filter(which, values), key=str.encode)
        for raw in raws[:per_predicate]:
            want = sorted(values[raw], key=lambda x: x[0].encode())
            got, cursor = [], None
            while True:
                doc = search(tenant, predicate, raw, cursor, at)
                got += doc["subjects"]
                cursor = doc["next"]
                if cursor is None:
                    break
            what = "search %s %s %s%s" % (tenant, predicate, raw,
                                          " --at " + at if at else "")
            if [g["subject"] for g in got] != [s for s, _ in want]:
                fail("%s: %s, the dump says %s" % (
                    what, [g["subject"] for g in got], [s for s, _ in want]))
            for g, (_, row) in zip(got, want):
                if t(g["valid_from"]) != t(row["valid_from"]) or \
                        g["asserted_by"] != row["asserted_by"]:
                    fail("%s: %s, the dump's row is %s" % (what, g, row))
            n += 1
    return n


def iso(when):
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


searched = check_at(now, None, PER_PREDICATE, lambda raw: True)
if not searched:
    fail("no value held now in %s" % dump_path)
start = sorted(t(r["valid_from"]) for _, r in facts)[len(facts) // 3]
for when in (start, start - datetime.timedelta(microseconds=1)):
    searched += check_at(when, iso(when), 1, folded)
print("searched %d values" % searched)
