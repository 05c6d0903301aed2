#!/usr/bin/env python3
# ui_check.py BASE TOKEN_ALL TOKEN_OTHER KNOWN_AT
#
# Drives the /ui/ page of the keel serve at BASE in headless Chromium
# (cdp.py) and checks it against the JSON API it is built on
# (docs/ui.md). The store holds a generated fleet of two tenants, part of
# it recorded before KNOWN_AT and the rest, late events included, after;
# TOKEN_ALL may read every tenant, TOKEN_OTHER only tenant-01. Every
# expected value is what the API answers the test itself (urllib, same
# token) for the same moment, so a page that drew anything else fails.
import collections
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
import keelapi  # noqa: E402
from keelapi import check, fail  # noqa: E402

base, token_all, token_other, known_at = sys.argv[1:5]
TENANT = "tenant-00"
OTHER_TENANT = "tenant-01"
# A subject whose address needs escapes (tests/http_ui.sh adds it).
ODD_SUBJECT = "vehicle:A/B 1%"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
# Records every violation the page's CSP reports, in every document the tab opens.
CSP_LISTENER = """
window.__keelViolations = [];
document.addEventListener('securitypolicyviolation',
  e => window.__keelViolations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


def api(path, params=None, token=token_all):
    """The JSON the API answers for path (None on a 404)."""
    return keelapi.api(base, token, path, params)


def pages(path, params, key):
    """Every item of a paged read, following its cursors."""
    items, params = [], dict(params)
    while True:
        doc = api(path, params)
        items += doc[key]
        if doc["next"] is None:
            return items
        params["cursor"] = doc["next"]


def js_str(s):
    return json.dumps(s)


def canon(v):
    """JSON.stringify's form of an API value (member order kept)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def same_value(v):
    """A value as compared: integral floats as integers (the page's
    JSON.stringify writes 5.0 as 5)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [same_value(x) for x in v]
    if isinstance(v, dict):
        return {k: same_value(x) for k, x in v.items()}
    return v


def value_key(text):
    return json.dumps(same_value(json.loads(text)), sort_keys=True)


def encode_uri_component(s):
    return urllib.parse.quote(s, safe="-_.!~*'()")


def entity_path(tenant, subject):
    return "/ui/tenants/%s/entities/%s" % (encode_uri_component(tenant), encode_uri_component(subject))


# -- what the API says ------------------------------------------------------

def history(subject, known=None):
    params = {"known_at": known} if known else None
    return api("/v1/tenants/%s/entities/%s/history" % (TENANT, urllib.parse.quote(subject, safe="")), params)


def rows_of(doc):
    """The rows of a history document as the page must draw them: one bar
    each, as (lane, asserted_by, valid_from, valid_to, closed_by, what,
    unset, open), what being the value of a fact, the object and linked
    of a relation."""
    rows = []
    for f in doc["facts"]:
        rows.append(("fact:" + f["predicate"], canon(f["asserted_by"]), f["valid_from"],
                     f["valid_to"] or "", canon(f["closed_by"]) if f["closed_by"] else "",
                     "value=" + value_key(canon(f["value"])), f["value"] is None, f["valid_to"] is None))
    for r in doc["relations"]:
        rows.append(("relation:" + r["relation"], canon(r["asserted_by"]), r["valid_from"],
                     r["valid_to"] or "", canon(r["closed_by"]) if r["closed_by"] else "",
                     "object=%s linked=%s" % (r["object"], "true" if r["linked"] else "false"),
                     not r["linked"], r["valid_to"] is None))
    return rows


def state_of(subject, at, known=None):
    params = {"at": at}
    if known:
        params["known_at"] = known
    doc = api("/v1/tenants/%s/entities/%s" % (TENANT, urllib.parse.quote(subject, safe="")), params)
    if doc is None:
        return {"facts": [], "relations": []}
    return {"facts": sorted((p, value_key(canon(f["value"]))) for p, f in doc["facts"].items()),
            "relations": sorted((r["relation"], r["object"]) for r in doc["outgoing"])}


def row_id(row):
    """What makes a row the same one in two views: its lane, asserted_by
    and valid_from (and a relation row's object: one event may link
    several)."""
    return row[:3] + ((row[5],) if row[0].startswith("relation:") else ())


def changed_rows(full_doc, known_doc):
    """The rows of the known_at view that a later-recorded event changed:
    gone from the full view, or ending there otherwise."""
    full = {row_id(row): (row[3], row[4]) for row in rows_of(full_doc)}
    return sorted(row_id(row) for row in rows_of(known_doc) if full.get(row_id(row)) != (row[3], row[4]))


# -- what the page shows ----------------------------------------------------

BARS_JS = """[...document.querySelectorAll('#timeline .bar')].map(b => {
  const lane = b.closest('.lane'), d = b.dataset;
  return {lane: lane ? lane.dataset.lane : null, asserted_by: d.assertedBy, valid_from: d.validFrom,
          valid_to: d.validTo, closed_by: d.closedBy, value: d.value === undefined ? null : d.value,
          object: d.object === undefined ? null : d.object, linked: d.linked === undefined ? null : d.linked,
          unset: b.classList.contains('unset'), open: b.classList.contains('open'),
          changed: b.classList.contains('changed')};
})"""
STATE_JS = """({
  facts: [...document.querySelectorAll('#state .state-fact')].map(e => [e.dataset.predicate, e.dataset.value]),
  relations: [...document.querySelectorAll('#state .state-relation')].map(e => [e.dataset.relation, e.dataset.object])
})"""
READY_JS = "document.documentElement.dataset.state === 'ready'"
MORE_SHOWN_JS = ("(() => { const m = document.querySelector('button#more');"
                 " return !!m && !m.hidden && m.offsetParent !== null; })()")


def page_rows(bars):
    rows = []
    for b in bars:
        if b["lane"] is not None and b["lane"].startswith("relation:"):
            what = "object=%s linked=%s" % (b["object"], b["linked"])
        else:
            try:
                what = "value=" + value_key(b["value"])
            except (TypeError, ValueError):
                what = "value=(not JSON: %r)" % b["value"]
        rows.append((b["lane"], b["asserted_by"], b["valid_from"], b["valid_to"], b["closed_by"],
                     what, b["unset"], b["open"]))
    return rows


def changed_bars(b):
    bars = b.eval(BARS_JS)
    return sorted(row_id(row) for row, bar in zip(page_rows(bars), bars) if bar["changed"])


def page_state(b):
    s = b.eval(STATE_JS)
    return {"facts": sorted((p, value_key(v)) for p, v in s["facts"]),
            "relations": sorted((r, o) for r, o in s["relations"])}


def diff(want, got):
    w, g = collections.Counter(want), collections.Counter(got)
    missing, extra = list((w - g).elements()), list((g - w).elements())
    return "%d expected, %d shown; missing %s; unexpected %s" % (
        len(want), len(got), missing[:3], extra[:3])


class Page:
    def __init__(self, browser):
        self.b = browser

    def ready_after(self, action, what):
        """Runs an action (JavaScript, or a function) and waits until the
        page says it has drawn its result: the mark put on <html> first is
        "ready" again only once the page has been through its own
        "loading"."""
        self.b.eval("document.documentElement.dataset.state = 'stale'")
        if callable(action):
            action()
        else:
            self.b.eval(action)
        self.b.wait_for(READY_JS, what="the page ready after " + what)

    def expect(self, read, want, what, timeout=20.0):
        """Polls read() until it equals want (the page may still be
        drawing); fails with the difference when it never does."""
        deadline = time.monotonic() + timeout
        while True:
            got = read()
            if got == want:
                return
            if time.monotonic() > deadline:
                detail = diff(want, got) if isinstance(want, list) else "want %r, got %r" % (want, got)
                fail("%s: %s" % (what, detail))
            self.b.pump(0.05)

    def navigate(self, url):
        self.b.navigate(url)
        self.b.wait_for(READY_JS, what="the page ready at " + url)

    def type_into(self, selector, text):
        """Types text into an input as a person would: focus, select all,
        type, Enter."""
        self.b.eval("(() => { const e = document.querySelector(%s); e.focus(); e.select(); })()"
                    % js_str(selector))
        self.b.page("Input.insertText", {"text": text})
        self.key("Enter", 13)

    def key(self, name, code):
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": name, "code": name, "windowsVirtualKeyCode": code}
            if kind == "keyDown" and name == "Enter":
                params["text"] = "\r"
            self.b.page("Input.dispatchKeyEvent", params)

    def click(self, selector):
        self.b.eval("document.querySelector(%s).click()" % js_str(selector))

    def bars(self):
        return page_rows(self.b.eval(BARS_JS))


def choose_vehicle():
    """The tenant's vehicle with the most rows among those a later-recorded
    event changed: its known_at view must differ from its full one."""
    best = None
    for e in pages("/v1/tenants/%s/entities" % TENANT, {"kind": "vehicle"}, "entities"):
        full, then = history(e["subject"]), history(e["subject"], known_at)
        if then is None:
            continue
        changed = changed_rows(full, then)
        n = len(full["facts"]) + len(full["relations"])
        if changed and len(changed) < len(rows_of(then)) and (best is None or n > best[0]):
            best = (n, e["subject"])
    check(best is not None, "no vehicle that late events changed: the stream is too small")
    return best[1]


def choose_at(subject, full, then):
    """A moment whose state differs as known at known_at: the start of a
    row recorded later (the middle one of those that qualify), so that a
    page that ignored known_at in the state would fail."""
    known = {row_id(r) for r in rows_of(then)}
    later = sorted({r[2] for r in rows_of(full) if row_id(r) not in known})
    ok = [at for at in later if state_of(subject, at) != state_of(subject, at, known_at)]
    check(ok, "no moment whose state known_at changes")
    return ok[len(ok) // 2]


def sign_in(p, token):
    p.b.wait_for("document.querySelector('form#token-form') && "
                 "document.querySelector('form#token-form').offsetParent !== null",
                 what="the sign-in form")
    check(p.b.eval("document.querySelector('input#token').type") == "password", "#token is not a password input")
    p.ready_after(lambda: p.type_into("input#token", token), "signing in")


def check_token_kept_safely(p, token):
    check(p.b.eval("sessionStorage.getItem('keel.token')") == token,
          "the token is not in sessionStorage['keel.token']")
    where = p.b.eval("""({local: JSON.stringify(Object.entries(localStorage)), cookie: document.cookie,
                         url: location.href})""")
    for name, text in where.items():
        check(token not in text, "the token is in the %s: %s" % (name, text))
    sent = [e for m, e in p.b.events if m == "Network.requestWillBeSent"]
    for e in sent:
        check(token not in e["request"]["url"], "the token in a request's URL: " + e["request"]["url"])
    v1 = [e["request"] for e in sent if "/v1/" in e["request"]["url"]]
    check(v1, "no /v1 request seen after signing in")
    for r in v1:
        check(r["headers"].get("Authorization") == "Bearer " + token,
              "a /v1 request without the bearer header: %s %s" % (r["url"], r["headers"]))


def check_ui_headers(b, seen):
    """Every /ui answer the browser got carries the contract's headers."""
    for m, e in b.events:
        if m != "Network.responseReceived" or "/ui" not in e["response"]["url"]:
            continue
        h = {k.lower(): v for k, v in e["response"]["headers"].items()}
        url = e["response"]["url"]
        check(h.get("content-security-policy") == CSP, "CSP of %s: %r" % (url, h.get("content-security-policy")))
        check(h.get("x-content-type-options") == "nosniff", "nosniff missing on " + url)
        check(h.get("referrer-policy") == "no-referrer", "Referrer-Policy missing on " + url)
        seen.add(urllib.parse.urlsplit(url).path.split("/assets/")[-1] if "/assets/" in url else "index")


def check_no_violation(b, when):
    reported = b.eval("window.__keelViolations")
    check(reported == [], "CSP violations %s: %s" % (when, reported))
    logged = [e["entry"]["text"] for m, e in b.events
              if m == "Log.entryAdded" and e["entry"]["source"] == "security"]
    check(logged == [], "CSP violations logged %s: %s" % (when, logged[:3]))
    thrown = [json.dumps(e["exceptionDetails"])[:400] for m, e in b.events if m == "Runtime.exceptionThrown"]
    check(thrown == [], "the page threw %s: %s" % (when, thrown[:2]))


def entity_list(b):
    return b.eval("[...document.querySelectorAll('#entities a.entity')].map(a => a.dataset.subject)")


def all_entities(p, what):
    """Clicks #more until it hides; the whole list the page shows."""
    while p.b.eval(MORE_SHOWN_JS):
        before = len(entity_list(p.b))
        p.ready_after("document.querySelector('button#more').click()", "#more (%s)" % what)
        check(len(entity_list(p.b)) > before, "#more added nothing (%s)" % what)
    return entity_list(p.b)


def main():
    vehicle = choose_vehicle()
    full = history(vehicle)
    then = history(vehicle, known_at)
    with cdp.Browser(width=1400, height=900, timeout=30) as b:
        p = Page(b)
        b.page("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_LISTENER})
        headers_seen = set()

        # 1. Signing in: a wrong token is refused and forgotten, a right one kept
        # in the tab's sessionStorage only.
        p.navigate(base + "/ui/")
        check_ui_headers(b, headers_seen)
        sign_in(p, "keel_" + "0" * 64)
        b.wait_for("document.querySelector('form#token-form').offsetParent !== null && "
                   "document.querySelector('#error').textContent.trim() !== ''",
                   what="the form again with a message in #error after a wrong token")
        check(b.eval("sessionStorage.getItem('keel.token')") is None, "a refused token was kept")
        check_no_violation(b, "opening the page")
        b.events.clear()  # what follows is the right token's requests
        sign_in(p, token_all)
        want_tenants = api("/v1/tenants")["tenants"]
        p.expect(lambda: b.eval("[...document.querySelectorAll('#tenants a.tenant')].map(a => a.dataset.tenant)"),
                 want_tenants, "#tenants against GET /v1/tenants")
        check(b.eval("document.querySelector('#tenants a.tenant[data-tenant=%s]').pathname" % js_str(TENANT))
              == "/ui/tenants/" + TENANT, "a tenant's link")
        check(b.eval("(() => { const e = document.querySelector('#error');"
                     " return e.textContent.trim() === '' && e.offsetParent === null; })()"),
              "#error shown after a right token: %r" % b.eval("document.querySelector('#error').textContent"))
        check_token_kept_safely(p, token_all)
        check_no_violation(b, "signing in")

        # 2. Finding: by kind, by prefix, by a fact's value.
        p.ready_after("document.querySelector('#tenants a.tenant[data-tenant=%s]').click()" % js_str(TENANT),
                      "opening a tenant")
        b.wait_for("location.pathname === %s" % js_str("/ui/tenants/" + TENANT), what="the tenant's address")
        for kind, prefix in (("vehicle", ""), ("", "driver:DR-000"), ("", "")):
            b.eval("document.querySelector('input#kind').value = %s; document.querySelector('input#prefix').value = %s"
                   % (js_str(kind), js_str(prefix)))
            p.ready_after("document.querySelector('form#find-form').requestSubmit()", "find")
            want = [e["subject"] for e in pages("/v1/tenants/%s/entities" % TENANT,
                                                 {"kind": kind, "prefix": prefix}, "entities")]
            check(want, "nothing to find for kind %r prefix %r" % (kind, prefix))
            if not kind and not prefix:  # all of them: more than one page
                check(b.eval(MORE_SHOWN_JS), "#more hidden after the first page of all %d entities" % len(want))
            p.expect(lambda: all_entities(p, "find"), want, "#entities for kind %r prefix %r" % (kind, prefix))
        link = b.eval("document.querySelector('#entities a.entity[data-subject=%s]').pathname" % js_str(vehicle))
        check(link == entity_path(TENANT, vehicle), "an entity's link: %s" % link)
        # The odd subject's link, followed: its path escaped, its timeline drawn.
        odd = "document.querySelector('#entities a.entity[data-subject=%s]')" % js_str(ODD_SUBJECT)
        check(b.eval(odd + ".pathname") == entity_path(TENANT, ODD_SUBJECT),
              "the link of %s: %s" % (ODD_SUBJECT, b.eval(odd + ".pathname")))
        p.ready_after(odd + ".click()", "following the link of " + ODD_SUBJECT)
        p.expect(lambda: sorted(p.bars()), sorted(rows_of(history(ODD_SUBJECT))), "the bars of " + ODD_SUBJECT)
        p.navigate(base + "/ui/tenants/" + TENANT)
        for predicate, value in (("status", "available"), ("make", '"DAF"')):
            b.eval("document.querySelector('input#predicate').value = %s; document.querySelector('input#value').value = %s"
                   % (js_str(predicate), js_str(value)))
            p.ready_after("document.querySelector('form#search-form').requestSubmit()", "search")
            want = [s["subject"] for s in pages("/v1/tenants/%s/search" % TENANT,
                                                 {"predicate": predicate, "value": value}, "subjects")]
            check(want, "search %s=%s finds nothing" % (predicate, value))
            p.expect(lambda: all_entities(p, "search"), want, "#entities for search %s=%s" % (predicate, value))
        check_no_violation(b, "finding")

        # 3. The timeline: one bar per stored row, each with its event.
        address = base + entity_path(TENANT, vehicle)
        p.navigate(address)
        check_ui_headers(b, headers_seen)
        want_rows = rows_of(full)
        p.expect(lambda: sorted(p.bars()), sorted(want_rows), "the bars against GET history")
        check(b.eval("document.querySelector('#timeline').dataset.rows") == str(len(want_rows)),
              "#timeline[data-rows] is not the number of rows")
        lanes = b.eval("[...document.querySelectorAll('#timeline .lane')].map(l => l.dataset.lane)")
        want_lanes = (sorted({"fact:" + f["predicate"] for f in full["facts"]}) +
                      sorted({"relation:" + r["relation"] for r in full["relations"]}))
        check(lanes == want_lanes, "lanes %s, want %s" % (lanes, want_lanes))
        check(b.eval("document.querySelector('#axis') !== null && "
                     "document.querySelector('#axis').textContent.trim() !== ''"), "#axis without labels")

        # Selecting a bar: click one, press Enter on another.
        fact_rows = [f for f in full["facts"] if f["value"] is not None]
        for row, how in ((fact_rows[len(fact_rows) // 2], "click"), (fact_rows[-1], "Enter")):
            sel = ("#timeline .lane[data-lane=%s] .bar[data-asserted-by=%s][data-valid-from=%s]"
                   % (js_str("fact:" + row["predicate"]), js_str(canon(row["asserted_by"])),
                      js_str(row["valid_from"])))
            b.eval("document.querySelector('pre#detail-event').textContent = ''")
            if how == "click":
                p.click(sel)
            else:
                b.eval("document.querySelector(%s).focus()" % js_str(sel))
                p.key("Enter", 13)
            shown = b.wait_for("(() => { try { return JSON.parse(document.querySelector('pre#detail-event')"
                               ".textContent); } catch (e) { return null; } })()",
                               what="an event in #detail-event after selecting a bar by " + how)
            why = api("/v1/tenants/%s/entities/%s/why" % (TENANT, urllib.parse.quote(vehicle, safe="")),
                      {"predicate": row["predicate"], "at": row["valid_from"]})
            check(shown == why["event"]["envelope"],
                  "#detail-event is not why's envelope: %s" % json.dumps(shown)[:300])
            check(b.eval("document.querySelector(%s).classList.contains('selected')" % js_str(sel)),
                  "the selected bar is not .selected")
            check(b.eval("document.querySelectorAll('#timeline .bar.selected').length") == 1,
                  "more than one bar .selected")

        # Zoom: in widens the drawing (the timeline scrolls) with every bar
        # still there; fit brings it back to the timeline's width.
        width = "document.querySelector('#timeline').scrollWidth"
        fit_width = b.eval(width)
        p.click("button#zoom-in")
        b.wait_for("%s > %d" % (width, fit_width * 1.5), what="#zoom-in widening the timeline")
        p.expect(lambda: sorted(p.bars()), sorted(want_rows), "the bars after #zoom-in")
        p.click("button#zoom-fit")
        b.wait_for("%s <= %d" % (width, fit_width), what="#zoom-fit bringing the timeline back")

        # 4. "As of": a click on the axis sets it; the state at a moment is
        # what show?at= answers.
        spot = b.eval("""(() => { const a = document.querySelector('#axis');
                          a.scrollIntoView({block: 'center'}); const r = a.getBoundingClientRect();
                          return [r.left + r.width * 0.6, r.top + r.height / 2]; })()""")
        p.ready_after(lambda: b.click_at(*spot), "a click on the axis")
        clicked_at = b.eval("document.querySelector('input#at').value")
        check(clicked_at != "", "a click on the axis left #at empty")
        p.expect(lambda: page_state(p.b), state_of(vehicle, clicked_at),
                 "#state after a click on the axis, against show?at=%s" % clicked_at)
        check(urllib.parse.parse_qs(urllib.parse.urlsplit(b.eval("location.href")).query).get("at") == [clicked_at],
              "the address after a click on the axis: %s" % b.eval("location.href"))
        at = choose_at(vehicle, full, then)
        p.ready_after(lambda: p.type_into("input#at", at), "setting #at")
        p.expect(lambda: page_state(p.b), state_of(vehicle, at), "#state at %s against show?at=" % at)
        check(state_of(vehicle, at)["facts"], "the state at %s has no facts: the check proves nothing" % at)
        check(b.eval("document.querySelector('#at-cursor') !== null"), "no #at-cursor")
        before_first = "2000-01-01T00:00:00Z"
        p.ready_after(lambda: p.type_into("input#at", before_first), "setting #at before the first event")
        p.expect(lambda: page_state(p.b), {"facts": [], "relations": []}, "#state before the first event")
        p.ready_after(lambda: p.type_into("input#at", at), "setting #at again")
        p.expect(lambda: page_state(p.b), state_of(vehicle, at), "#state at %s again" % at)

        # 5. "Known at": the bars and the state as recorded then.
        p.ready_after(lambda: p.type_into("input#known-at", known_at), "setting #known-at")
        want_then = rows_of(then)
        check(sorted(want_then) != sorted(want_rows), "known_at changes nothing for %s" % vehicle)
        p.expect(lambda: sorted(p.bars()), sorted(want_then), "the bars against history?known_at=")
        p.expect(lambda: page_state(p.b), state_of(vehicle, at, known_at),
                 "#state against show?at=&known_at=")

        # Rows a later-recorded event changed, highlighted.
        want_changed = changed_rows(full, then)
        check(b.eval("document.querySelectorAll('#timeline .bar.changed').length") == 0,
              ".changed before #highlight-changed is on")
        b.eval("document.querySelector('input#highlight-changed').click()")
        p.expect(lambda: changed_bars(b),
                 want_changed, "the .changed bars against the two histories")

        # 6. The address: at and known_at in it, and it restores the view.
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(b.eval("location.href")).query)
        check(query.get("at") == [at] and query.get("known_at") == [known_at],
              "the address lacks at/known_at: %s" % b.eval("location.href"))
        check(b.eval("location.pathname") == entity_path(TENANT, vehicle), "the entity's address")
        shown_bars, shown_state = sorted(p.bars()), page_state(p.b)
        p.navigate(b.eval("location.href"))
        p.expect(lambda: sorted(p.bars()), shown_bars, "the bars at the shared address")
        p.expect(lambda: page_state(p.b), shown_state, "the state at the shared address")
        check(b.eval("document.querySelector('input#known-at').value") == known_at, "#known-at not restored")
        check(b.eval("document.querySelector('input#at').value") == at, "#at not restored")

        # "Latest" brings everything back; then the slider, from its start:
        # its moments are the subject's recordings, oldest first.
        p.ready_after(lambda: p.click("button#known-at-now"), "#known-at-now")
        p.expect(lambda: sorted(p.bars()), sorted(want_rows), "the bars after #known-at-now")
        check(b.eval("document.querySelector('input#known-at').value") == "", "#known-at not emptied")
        changes = api("/v1/tenants/%s/entities/%s/history" % (TENANT, urllib.parse.quote(vehicle, safe="")),
                      {"changes": "1"})
        recorded = sorted({c["recorded_at"] for c in changes["facts"] + changes["relations"]})
        check(len(recorded) >= 2, "a single recording moment: the slider proves nothing")
        b.eval("document.querySelector('input#known-at-slider').focus()")
        for key, code, moment in (("Home", 36, recorded[0]), ("ArrowRight", 39, recorded[1])):
            p.ready_after(lambda: p.key(key, code), "%s on the slider" % key)
            p.expect(lambda: b.eval("document.querySelector('input#known-at').value"), moment,
                     "#known-at after %s on the slider" % key)
            p.expect(lambda: sorted(p.bars()), sorted(rows_of(history(vehicle, moment))),
                     "the bars after %s on the slider" % key)
        check_ui_headers(b, headers_seen)
        check(headers_seen >= {"index", "keel.js", "keel.css"}, "/ui answers seen: %s" % headers_seen)
        check_no_violation(b, "using the timeline")

        # 7. The Content-Security-Policy is in force: an inline script put
        # into the document does not run, and is reported.
        ran = b.eval("""(() => { const s = document.createElement('script');
                        s.textContent = 'window.__keelInlineRan = true';
                        document.body.appendChild(s); return window.__keelInlineRan === true; })()""")
        check(not ran, "an inline script ran: no CSP in force")
        b.wait_for("window.__keelViolations.some(v => v.startsWith('script-src'))",
                   what="the CSP's report of the inline script")

        # 8. Another tenant's token sees nothing of this one.
        p.click("button#sign-out")
        b.wait_for("sessionStorage.getItem('keel.token') === null", what="#sign-out forgetting the token")
        p.navigate(base + "/ui/")
        sign_in(p, token_other)
        p.expect(lambda: b.eval("[...document.querySelectorAll('#tenants a.tenant')].map(a => a.dataset.tenant)"),
                 [OTHER_TENANT], "#tenants for a token of " + OTHER_TENANT)
        p.navigate(address)
        b.wait_for("document.querySelector('#error').textContent.trim() !== ''",
                   what="#error for another tenant's entity")
        check(b.eval("document.querySelector('#error').offsetParent !== null"), "#error hidden")
        check(b.eval("document.querySelectorAll('.bar').length") == 0, "bars shown to another tenant's token")
        check(page_state(p.b) == {"facts": [], "relations": []}, "state shown to another tenant's token")
    print("ok: %s, %d rows, %d known at %s, %d changed" % (vehicle, len(want_rows), len(want_then),
                                                           known_at, len(want_changed)))


try:
    main()
except cdp.CdpError as e:
    fail(str(e))
