#!/usr/bin/env python3
# find_check.py MODE TARGET KNOWN_AT DUMP > TRANSCRIPT
#
# keel tenants, keel entities and keel search (docs/cli.md, docs/http.md)
# asked one way: MODE cli runs $KEEL on the store URL TARGET; MODE http
# asks the server at the base URL TARGET with the bearer token $TOKEN. The
# store holds `keel generate fleet --events 4000 --tenants 2 --seed 11`,
# its first half recorded before KNOWN_AT and its second half after; DUMP
# is its keel dump.
#
# Checks what must hold of the answers in themselves (paging gives the
# whole list once, in order; kind, prefix and --at filter it exactly;
# --known-at sees only the first half; search agrees with the dump; bad
# cursors and limits are refused) and prints every page it got, one JSON
# document a line, so the shell tests can compare stores and ways in.
import datetime
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

mode, target, known_at, dump_path = sys.argv[1:5]
KEEL = os.environ.get("KEEL", "keel")
NOW = "2026-06-01T00:00:00Z"  # after every event of the stream
PAST = "2026-01-05T06:30:00Z"  # half an hour into it
CLI_OPTION = {"known_at": "--known-at", "cursor": "--after"}


def fail(msg):
    sys.stderr.write("FAIL: %s (%s %s)\n" % (msg, mode, target))
    sys.exit(1)


def call(kind, tenant=None, args=(), params=None):
    """(0, document) or (exit status / HTTP status, error text)."""
    params = dict(params or {})
    if mode == "cli":
        argv = [KEEL, kind] + ([tenant] if tenant else []) + list(args)
        for k, v in params.items():
            argv += [CLI_OPTION.get(k, "--" + k), str(v)]
        r = subprocess.run(argv + ["--json", "--store", target],
                           capture_output=True, text=True)
        if r.returncode:
            return r.returncode, r.stderr
        return 0, json.loads(r.stdout)
    path = "/v1/tenants"
    if kind == "show":
        path += "/%s/entities/%s" % (tenant, urllib.parse.quote(args[0], safe=""))
    elif tenant:
        path += "/%s/%s" % (tenant, kind)
    if kind == "search":
        params["predicate"], params["value"] = args
    url = target + path + ("?" + urllib.parse.urlencode(params) if params else "")
    req = urllib.request.Request(
        url, headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
    try:
        with urllib.request.urlopen(req) as resp:
            return 0, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


transcript = []


def pages(what, tenant, args=(), **params):
    """Every page, following next; the entries of all of them."""
    entries, cursor = [], None
    while True:
        p = dict(params)
        if cursor is not None:
            p["cursor"] = cursor
        status, doc = call(what, tenant, args, p)
        if status:
            fail("%s %s %s: %s %s" % (what, tenant, p, status, doc))
        transcript.append(doc)
        page = doc["entities" if what == "entities" else "subjects"]
        entries += page
        cursor = doc["next"]
        if cursor is None:
            return entries
        if len(page) != int(params["limit"]):
            fail("a page with a next one holds %d, not %s" % (len(page), params["limit"]))
        if len(transcript) > 5000:
            fail("paging does not end")


status, doc = call("tenants")
if status or doc != {"tenants": ["tenant-00", "tenant-01"], "next": None}:
    fail("tenants: %s %s" % (status, doc))
transcript.append(doc)

full = pages("entities", "tenant-00", at=NOW, limit=1000)
subjects = [e["subject"] for e in full]
if len(subjects) < 50 or subjects != sorted(subjects, key=lambda s: s.encode()) \
        or len(set(subjects)) != len(subjects):
    fail("entities not each once in bytewise order: %s" % subjects)
if pages("entities", "tenant-00", at=NOW, limit=3) != full:
    fail("paging three at a time differs from one page of all")

for kind in ("vehicle", "driver", "trip", "depot"):
    got = pages("entities", "tenant-00", at=NOW, limit=10, kind=kind)
    if not got or got != [e for e in full if e["kind"] == kind]:
        fail("--kind %s" % kind)
got = pages("entities", "tenant-00", at=NOW, limit=4, prefix="vehicle:V-001")
if not got or got != [e for e in full if e["subject"].startswith("vehicle:V-001")]:
    fail("--prefix")
got = pages("entities", "tenant-00", at=PAST, limit=10)
if not got or len(got) == len(full) or \
        got != [e for e in full if t(e["first_seen"]) <= t(PAST)]:
    fail("--at %s: not the entities first seen by then" % PAST)
got = pages("entities", "tenant-00", at=NOW, known_at=known_at, limit=10)
if not got or len(got) == len(full) or \
        not {e["subject"] for e in got} < set(subjects):
    fail("--known-at: not fewer entities than now")


# What the dump (another read of the same store) says each subject's
# status is at a time: the row with valid_from <= at < valid_to.
status_rows = [r for r in map(json.loads, open(dump_path))
               if r["type"] == "fact" and r["tenant"] == "tenant-00"
               and r["predicate"] == "status"]


def status_at(subject, at):
    for r in status_rows:
        if r["subject"] == subject and t(r["valid_from"]) <= t(at) and \
                (r["valid_to"] is None or t(at) < t(r["valid_to"])):
            return r["value"]
    return None


for at in (NOW, PAST):
    for value in ("available", '"maintenance"'):
        want = json.loads(value) if value.startswith('"') else value
        got = [s["subject"] for s in
               pages("search", "tenant-00", ("status", value), at=at, limit=3)]
        expect = [s for s in subjects if status_at(s, at) == want]
        if not expect or got != expect:
            fail("search status %s at %s: %s, show says %s" % (value, at, got, expect))
got = pages("search", "tenant-00", ("year", "2018"), at=NOW, limit=1000)
if not got or pages("search", "tenant-00", ("year", '"2018"'), at=NOW, limit=1000):
    fail("search year: 2018 is a number, \"2018\" a string")

refused = 2 if mode == "cli" else 400
for params in ({"cursor": "not a cursor!"}, {"cursor": "A"}, {"limit": 0},
               {"limit": 1001}):
    status, _ = call("entities", "tenant-00", (), params)
    if status != refused:
        fail("entities %s: %s, not %d" % (params, status, refused))
    status, _ = call("search", "tenant-00", ("status", "available"), params)
    if status != refused:
        fail("search %s: %s, not %d" % (params, status, refused))

for doc in transcript:
    print(json.dumps(doc, sort_keys=True))
