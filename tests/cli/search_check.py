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
PER_PREDICATE = 5
now = datetime.datetime.now(datetime.timezone.utc)


def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def fail(msg):
    sys.stderr.write("FAIL: %s (%s)\n" % (msg, store))
    sys.exit(1)


held = {}  # (tenant, predicate) -> {raw value: [(subject, row)]}
for line in open(dump_path, encoding="utf-8"):
    r = json.loads(line)
    if r["type"] != "fact" or (only and r["predicate"] not in only):
        continue
    raw = line[line.find('"value":') + 8:line.find(',"valid_from":')]
    if r["value"] is None or raw == "null":
        continue  # an unset holds no value
    if t(r["valid_from"]) <= now and (r["valid_to"] is None or now < t(r["valid_to"])):
        held.setdefault((r["tenant"], r["predicate"]), {}).setdefault(raw, []).append(
            (r["subject"], r))

def search(tenant, predicate, raw, cursor):
    """One page of the search, by keel search or over HTTP."""
    if HTTP:
        args = {"predicate": predicate, "value": raw, "limit": "1000"}
        if cursor:
            args["cursor"] = cursor
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
            "--store", store] + (["--after", cursor] if cursor else [])
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        fail("keel search %s %s %s: exit %d: %s" % (tenant, predicate, raw,
                                                    r.returncode, r.stderr))
    return json.loads(r.stdout)


searched = 0
for (tenant, predicate), values in sorted(held.items()):
    for raw in sorted(values, key=str.encode)[:PER_PREDICATE]:
        want = sorted(values[raw], key=lambda x: x[0].encode())
        got, cursor = [], None
        while True:
            doc = search(tenant, predicate, raw, cursor)
            got += doc["subjects"]
            cursor = doc["next"]
            if cursor is None:
                break
        if [g["subject"] for g in got] != [s for s, _ in want]:
            fail("search %s %s %s: %s, the dump says %s" % (
                tenant, predicate, raw, [g["subject"] for g in got], [s for s, _ in want]))
        for g, (_, row) in zip(got, want):
            if t(g["valid_from"]) != t(row["valid_from"]) or \
                    g["asserted_by"] != row["asserted_by"]:
                fail("search %s %s %s: %s, the dump's row is %s" % (
                    tenant, predicate, raw, g, row))
        searched += 1
if not searched:
    fail("no value held now in %s" % dump_path)
print("searched %d values" % searched)
