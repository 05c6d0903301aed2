#!/usr/bin/env python3
# values_check.py BASE
#
# How the /ui/ page of the keel serve at BASE shows values
# (tests/http_ui_values.sh, docs/ui.md "Values"), read from the DOM of
# headless Chromium (cdp.py) and held against the JSON API:
#   * a categorical fact (status): each value one colour, the same in every
#     bar holding it and in the legend, no two values alike;
#   * a numeric fact (odometer_km, speed_kmh): a step line whose every point
#     is a row's value at its valid_from and valid_to, broken where the fact
#     is unset, with its smallest and largest value as its scale;
#   * the first view: V-DENSE zoomed so that the rows of its busiest lane in
#     view are wide enough to read, on its latest stretch, or around "as
#     of"; a depot (a few rows) whole; Fit shows all;
#   * the mixed case: the fleet's own V-0001 (tenant-mx: a dense first hour
#     of telemetry, then a sparse day) opens zoomed on its dense stretch,
#     its rows there MIN_ROW_PX wide on average, where whole they are a
#     smear; its fuel_pct is a step line like the others;
#   * the finder: no subject, no time broken across lines.
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
from keelapi import check, fail  # noqa: E402

base = sys.argv[1]
TENANT = "tenant-00"
DENSE = "vehicle:V-DENSE"
MIXED_TENANT = "tenant-mx"  # the demo fleet's V-0001 alone (http_ui_values.sh)
MIXED = "vehicle:V-0001"
READY = "document.documentElement.dataset.state === 'ready'"
MIN_ROW_PX = 24  # keel.js: the first view gives a busy lane's rows this much


def api(path, params=None):
    """The JSON the API answers (the server has no token file)."""
    import urllib.request
    query = "?" + urllib.parse.urlencode(params) if params else ""
    with urllib.request.urlopen(base + path + query, timeout=30) as r:
        return json.load(r)


def history(subject, tenant=TENANT):
    return api("/v1/tenants/%s/entities/%s/history" % (tenant, urllib.parse.quote(subject, safe="")))


def ms(t):
    """Milliseconds since the epoch of an API time, as the page's Date.parse
    reads it (microseconds cut to milliseconds)."""
    import datetime
    whole, _, frac = t.rstrip("Z").partition(".")
    d = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 1000 + int((frac + "000")[:3])


def open_view(b, path):
    b.navigate(base + path)
    b.wait_for(READY + " && document.querySelectorAll('#timeline .bar').length > 0",
               what="the timeline of " + path)


def entity(subject, query="", tenant=TENANT):
    return "/ui/tenants/%s/entities/%s%s" % (tenant, urllib.parse.quote(subject, safe=""), query)


def check_categorical(b, doc, predicate):
    """One colour a value: bars and legend agree, values differ."""
    lane = "fact:" + predicate
    bars = b.eval("""[...document.querySelectorAll('#timeline .lane[data-lane=%s] .bar:not(.unset)')]
        .map(e => [e.dataset.value, getComputedStyle(e).backgroundColor])""" % json.dumps(lane))
    values = sorted({json.dumps(f["value"]) for f in doc["facts"]
                     if f["predicate"] == predicate and f["value"] is not None})
    check(len(values) >= 3, "%s has %d values: the check proves little" % (predicate, len(values)))
    colour = {}
    for value, c in bars:
        check(colour.setdefault(value, c) == c,
              "%s %s is drawn in %s and in %s" % (predicate, value, colour[value], c))
    check(sorted(colour) == values, "%s: bars hold %s, the API %s" % (predicate, sorted(colour), values))
    check(len(set(colour.values())) == len(colour),
          "%s: two values share a colour: %s" % (predicate, colour))
    check(all(c not in ("rgba(0, 0, 0, 0)", "") for c in colour.values()), "a bar without colour")
    legend = dict(b.eval("""[...document.querySelectorAll('#value-legend .value-lane[data-lane=%s] .value-item')]
        .map(e => [e.dataset.value, getComputedStyle(e.querySelector('.swatch')).backgroundColor])"""
                         % json.dumps(lane)))
    check(legend == colour, "%s: the legend %s is not the bars' %s" % (predicate, legend, colour))
    names = b.eval("""[...document.querySelectorAll('#value-legend .value-lane[data-lane=%s] .value-name')]
        .map(e => e.textContent)""" % json.dumps(lane))
    check(names == [json.loads(v) for v in values], "%s: the legend names %s" % (predicate, names))
    return len(values)


def expected_line(rows, t0, t1, lo, hi):
    """The step line the rows make: a list of polylines, each a list of
    (x, y), x in percent of [t0, t1], y the value's height in 0..100."""
    x = lambda t: (ms(t) - t0) / (t1 - t0) * 100
    y = lambda v: 90 - (v - lo) / (hi - lo) * 80
    lines, cur, end = [], [], None
    for r in rows:
        if r["value"] is None:
            if cur:
                lines.append(cur)
            cur, end = [], None
            continue
        if r["valid_to"] == r["valid_from"]:
            continue
        if end is not None and end != r["valid_from"] and cur:
            lines.append(cur)
            cur = []
        x1 = 100.0 if r["valid_to"] is None else x(r["valid_to"])
        cur += [(x(r["valid_from"]), y(r["value"])), (x1, y(r["value"]))]
        end = r["valid_to"]
    if cur:
        lines.append(cur)
    return lines


def check_numeric(b, doc, predicate):
    lane = "fact:" + predicate
    rows = [f for f in doc["facts"] if f["predicate"] == predicate]
    nums = [f["value"] for f in rows if f["value"] is not None]
    lo, hi = min(nums), max(nums)
    sel = "#timeline .lane[data-lane=%s]" % json.dumps(lane)
    check(b.eval("document.querySelector(%s).classList.contains('lane-numeric')" % json.dumps(sel)),
          "%s is not drawn as a numeric lane" % predicate)
    got = b.eval("""(() => { const s = document.querySelector(%s + ' svg.step-line');
        return s && {min: +s.dataset.min, max: +s.dataset.max,
          lines: [...s.querySelectorAll('polyline')].map(p => p.getAttribute('points')),
          axis: [...document.querySelectorAll(%s + ' .y-axis > span')].map(e => e.textContent)}; })()"""
                 % (json.dumps(sel), json.dumps(sel)))
    check(got is not None, "%s has no step line" % predicate)
    check((got["min"], got["max"]) == (lo, hi), "%s's scale %s..%s, the API's %s..%s"
          % (predicate, got["min"], got["max"], lo, hi))
    check([float(a) for a in got["axis"]] == [hi, lo], "%s's axis says %s, not %s and %s"
          % (predicate, got["axis"], hi, lo))
    t0, t1 = float(b.eval("document.querySelector('#timeline').dataset.t0")), \
        float(b.eval("document.querySelector('#timeline').dataset.t1"))
    want = expected_line(rows, t0, t1, lo, hi)
    shown = [[tuple(float(c) for c in p.split(",")) for p in line.split()] for line in got["lines"]]
    check(len(shown) == len(want), "%s: %d stretches of line, the rows make %d"
          % (predicate, len(shown), len(want)))
    for i, (s, w) in enumerate(zip(shown, want)):
        check(len(s) == len(w), "%s, stretch %d: %d points, the rows make %d" % (predicate, i, len(s), len(w)))
        for (sx, sy), (wx, wy) in zip(s, w):
            check(abs(sx - wx) < 0.002 and abs(sy - wy) < 0.002,
                  "%s, stretch %d: point (%s, %s), the rows say (%.3f, %.3f)" % (predicate, i, sx, sy, wx, wy))
    # Steps: a level a row, a vertical from one level to the next.
    check(all(s[k][1] == s[k + 1][1] for s in shown for k in range(0, len(s), 2)), "a level that is not level")
    return sum(len(s) for s in shown)


VIEW_JS = """(() => { const t = document.querySelector('#timeline');
  return {zoom: +t.dataset.zoom, from: t.dataset.viewFrom, to: t.dataset.viewTo,
          t0: +t.dataset.t0, t1: +t.dataset.t1}; })()"""
# The widths in pixels of a lane's bars that begin in view.
WIDTHS_JS = """((lane) => { const t = document.querySelector('#timeline'), a = document.querySelector('#axis');
  const left = t.getBoundingClientRect().left + t.clientLeft + a.offsetLeft;
  const right = t.getBoundingClientRect().left + t.clientLeft + t.clientWidth;
  return [...document.querySelectorAll('#timeline .lane[data-lane="' + lane + '"] .bar')]
    .map(e => e.getBoundingClientRect()).filter(r => r.left >= left && r.left < right).map(r => r.width); })"""


def check_first_view(b):
    open_view(b, entity(DENSE))
    v = b.eval(VIEW_JS)
    check(v["zoom"] >= 2, "the first view of %s is not zoomed: %s" % (DENSE, v))
    # the latest stretch: the view ends at the drawing's end
    check(abs(ms(v["to"]) - v["t1"]) < 2000, "the first view does not end at the latest: %s" % v)
    widths = sorted(b.eval(WIDTHS_JS + "('fact:speed_kmh')"))
    check(len(widths) >= 10, "only %d speed rows in the first view" % len(widths))
    median = widths[len(widths) // 2]
    check(median >= MIN_ROW_PX - 1, "the speed rows in view are %.1f px wide (median): unreadable" % median)
    # Fit: everything, zoom 1.
    b.eval("document.getElementById('zoom-fit').click()")
    b.wait_for("document.querySelector('#timeline').dataset.zoom === '1'", what="Fit")
    fitted = sorted(b.eval(WIDTHS_JS + "('fact:speed_kmh')"))
    check(fitted[len(fitted) // 2] < MIN_ROW_PX, "at Fit the rows are as wide: the first view zoomed for nothing")
    # Around "as of": a moment early in the hour is in view.
    at = "2026-01-05T06:12:00Z"
    open_view(b, entity(DENSE, "?at=" + at))
    v = b.eval(VIEW_JS)
    check(v["zoom"] >= 2 and ms(v["from"]) <= ms(at) <= ms(v["to"]), "the first view at %s: %s" % (at, v))
    # A depot: a few rows, shown whole.
    depots = api("/v1/tenants/%s/entities" % TENANT, {"kind": "depot"})["entities"]
    open_view(b, entity(depots[0]["subject"]))
    check(b.eval(VIEW_JS)["zoom"] == 1, "%s's few rows are not shown whole" % depots[0]["subject"])


def check_mixed_first_view(b):
    """A dense first hour, then a sparse day: whole, the hour is a smear;
    the first view opens on the dense stretch, readable."""
    doc = history(MIXED, MIXED_TENANT)
    rows = [f for f in doc["facts"] if f["predicate"] == "location"]
    first = min(ms(r["valid_from"]) for r in rows)
    last = max(ms(r["valid_from"]) for r in rows)
    in_hour = sum(1 for r in rows if ms(r["valid_from"]) < first + 3600e3)
    check(last - first > 12 * 3600e3 and in_hour * 3 > len(rows),
          "%s is not the mixed case: %d of %d location rows in its first hour, %.1f h in all"
          % (MIXED, in_hour, len(rows), (last - first) / 3600e3))
    open_view(b, entity(MIXED, tenant=MIXED_TENANT))
    v = b.eval(VIEW_JS)
    check(v["zoom"] >= 2, "the first view of the mixed %s is not zoomed: %s" % (MIXED, v))
    check(ms(v["from"]) < first + 3600e3 and ms(v["to"]) <= first + 2 * 3600e3,
          "the first view of %s is not on its dense first hour (from %s): %s"
          % (MIXED, doc["facts"][0]["valid_from"], v))
    # The stretch's rows fill the view, MIN_ROW_PX each on average (the
    # widest left out: the last may run on past the view's edge).
    widths = sorted(b.eval(WIDTHS_JS + "('fact:location')"))
    check(len(widths) >= 10, "only %d location rows in the first view of %s" % (len(widths), MIXED))
    mean = sum(widths[:-1]) / (len(widths) - 1)
    check(mean >= MIN_ROW_PX - 1, "the location rows in the first view of %s are %.1f px wide (mean)"
          % (MIXED, mean))
    n_fuel = check_numeric(b, doc, "fuel_pct")
    b.eval("document.getElementById('zoom-fit').click()")
    b.wait_for("document.querySelector('#timeline').dataset.zoom === '1'", what="Fit")
    fitted = sorted(w for w in b.eval(WIDTHS_JS + "('fact:location')"))
    check(fitted[len(fitted) // 4] < MIN_ROW_PX,
          "whole, %s's rows are wide enough: the mixed case proves nothing" % MIXED)
    return n_fuel


def check_finder(b):
    """At a narrow width: each subject one line (one too long cut, whole in
    its title), each time one line."""
    for width in (420, 800):
        b.viewport(width, 900)
        b.navigate(base + "/ui/tenants/%s?kind=vehicle" % TENANT)
        b.wait_for(READY + " && document.querySelectorAll('#entities a.entity').length > 0", what="the finder")
        got = b.eval("""[...document.querySelectorAll('#entities a.entity')].map(a => {
            const lh = parseFloat(getComputedStyle(a).lineHeight) || 20;
            const t = a.parentElement.querySelector('time');
            return {subject: a.dataset.subject, title: a.title, lines: a.getClientRects().length,
                    height: a.getBoundingClientRect().height, lh: lh, cut: a.scrollWidth > a.clientWidth,
                    time: t ? t.textContent : null, timeLines: t ? t.getClientRects().length : 0}; })""")
        check(any(g["subject"].startswith("vehicle:V-LONG-SUBJECT") for g in got), "the long subject is not listed")
        for g in got:
            check(g["lines"] == 1 and g["height"] < 1.5 * g["lh"],
                  "at %d px %s takes %d line boxes, %.0f px high" % (width, g["subject"], g["lines"], g["height"]))
            check(g["title"] == g["subject"], "the link of %s has the title %r" % (g["subject"], g["title"]))
            check(g["time"] and g["timeLines"] == 1,
                  "at %d px the time %r of %s is on %d lines" % (width, g["time"], g["subject"], g["timeLines"]))
        if width == 420:
            check(any(g["cut"] for g in got), "nothing cut at 420 px: the check proves little")
    b.viewport(1400, 900)


def main():
    doc = history(DENSE)
    with cdp.Browser(width=1400, height=900, timeout=30) as b:
        open_view(b, entity(DENSE))
        n_status = check_categorical(b, doc, "status")
        n_odo = check_numeric(b, doc, "odometer_km")
        n_speed = check_numeric(b, doc, "speed_kmh")
        check(b.eval("document.querySelector('#timeline .lane[data-lane=\"fact:location\"]')"
                     ".classList.contains('lane-numeric')") is False, "location (an object) drawn as a line")
        check_first_view(b)
        n_fuel = check_mixed_first_view(b)
        check_finder(b)
        thrown = [e for m, e in b.events if m == "Runtime.exceptionThrown"]
        check(not thrown, "the page threw: %s" % json.dumps(thrown)[:400])
    print("ok: %d status values, %d odometer, %d speed and %d fuel points"
          % (n_status, n_odo, n_speed, n_fuel))


try:
    main()
except cdp.CdpError as e:
    fail(str(e))
