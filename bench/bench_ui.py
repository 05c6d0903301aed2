#!/usr/bin/env python3
# bench_ui.py [--keel PATH] [--runs N] [--tiny] - the /ui/ page's weight and
# speed (docs/performance.md, "The /ui/ page"). --tiny: 100 and 1 000 rows,
# one run (what CI runs to see the benchmark run to its end,
# bench/CMakeLists.txt).
#
# Builds a SQLite store with two vehicles, one whose timelines hold 1 000
# stored rows and one with 10 000 (hand-made fleet telematics: a
# registration, then location, fuel and odometer reports ten seconds
# apart), serves it with keel serve (no token file: loopback only) and
# opens each vehicle's timeline in headless Chromium (tests/ui/cdp.py),
# freshly navigated each run. For each it prints the median of the runs:
#   render_ms  the page's own #timeline[data-render-ms]: from having the
#              JSON to the bars in the DOM
#   drawn_ms   render_ms plus the time from the bars in the DOM to the end
#              of the next frame (their style, layout and paint): from the
#              JSON to the bars on the screen
#   shown_ms   navigation start to the end of the frame that first shows
#              the bars: what a person waits for after opening the address
#   ready_ms   navigation start to the page saying "ready": the page's
#              fetches from keel serve (history, its changes, the state),
#              JSON parsing, drawing
#   zoom_ms    a click on #zoom-in to the end of the next frame
# taken in the page by an observer the driver installs before the page's
# script runs; side by side, with the 10 000 / 1 000 ratio and the target
# (<= 1 s for 10 000 rows); then the bytes of index.html and every asset it
# names, against the 100 KiB limit.
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "ui"))
import cdp  # noqa: E402

TENANT = "bench"
SIZES = (1000, 10000)
# Set before the page's own script runs. When #timeline gets its number of
# rows, the moment, and the end of the next frame: requestAnimationFrame
# runs just before that frame's style, layout and paint, and a timeout set
# there runs once they are done. And the moment the page says "ready".
OBSERVER = """
window.__keelTimes = {};
new MutationObserver(() => {
  const t = window.__keelTimes, tl = document.getElementById('timeline');
  if (!t.bars && tl && tl.dataset.rows && tl.dataset.rows !== '0') {
    t.bars = performance.now();
    requestAnimationFrame(() => setTimeout(() => { t.barsFrame = performance.now(); }, 0));
  }
  if (!t.ready && document.documentElement.dataset.state === 'ready')
    t.ready = performance.now();
}).observe(document, {attributes: true, subtree: true, attributeFilter: ['data-state', 'data-rows']});
"""


def event(n, vehicle, kind, seconds, data):
    t = time.gmtime(1767600000 + seconds)  # 2026-01-05T08:00:00Z onwards
    return {"specversion": "1.0", "id": "%s-%06d" % (vehicle, n),
            "source": "/fleet/%s/telematics" % TENANT, "type": "fleet.vehicle." + kind,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", t) + ".%06dZ" % (n % 1000000),
            "tenant": TENANT, "datacontenttype": "application/json",
            "data": dict(vehicle_id=vehicle, **data)}


def vehicle_events(vehicle, rows):
    """A vehicle's events that store exactly rows rows: its registration
    (make, model, year, status, based_at: 5), location reports (location
    and speed: 2 each), fuel and odometer reports (1 each)."""
    yield event(0, vehicle, "registered", 0, {"depot_id": "D-01", "make": "DAF", "model": "LF",
                                              "year": 2020, "vin": "VF4N59LS5A4D7SBPT"})
    rest = rows - 5
    locations = rest * 3 // 10
    singles = rest - 2 * locations
    counts = {"location": locations, "fuel": singles // 2, "odometer": singles - singles // 2}
    # Interleaved evenly: every lane spans the whole timeline.
    kinds = [k for _, k in sorted(((j + 0.5) / c, k) for k, c in counts.items() for j in range(c))]
    for n, kind in enumerate(kinds, start=1):
        if kind == "location":
            yield event(n, vehicle, "location_reported", n * 10,
                        {"location": {"lat": 41.15 + (n % 97) / 1000, "lon": -8.62 - (n % 89) / 1000},
                         "speed_kmh": float(n % 90), "heading_deg": n % 360})
        elif kind == "fuel":
            yield event(n, vehicle, "fuel_reported", n * 10, {"fuel_pct": float(100 - n % 80), "range_km": 500})
        else:
            yield event(n, vehicle, "odometer_reported", n * 10, {"odometer_km": 10000.0 + n, "unit": "km"})


def start_server(keel, db, log):
    proc = subprocess.Popen([keel, "serve", "--cartridge", "fleet", "--listen", "127.0.0.1:0",
                             "--store", db, "--threads", "2"], stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(log.name) as f:
            m = re.search(r"\(port (\d+)\)", f.read())
        if m:
            return proc, "http://127.0.0.1:" + m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("keel serve did not start: " + open(log.name).read())


def asset_bytes(base):
    """(name, bytes) of index.html and every /ui/assets/ file it names."""
    def get(path):
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.read()
    index = get("/ui/")
    sizes = [("index.html", len(index))]
    for path in sorted(set(re.findall(rb'"(/ui/assets/[^"]+)"', index))):
        sizes.append((path.decode().rsplit("/", 1)[1], len(get(path.decode()))))
    return sizes


def api_time(base, rows, query, runs):
    """(bytes, median ms) of the history of the vehicle with rows rows, as
    the page asks for it: what ready_ms spends waiting for keel serve."""
    url = "%s/v1/tenants/%s/entities/vehicle%%3AV-%05d/history%s" % (base, TENANT, rows, query)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            size = len(r.read())
        times.append((time.perf_counter() - started) * 1000)
    return size, statistics.median(times)


# A click on #zoom-in to the end of the next frame: the bars moved to their
# new places and painted.
ZOOM_JS = """new Promise(resolve => {
  const started = performance.now();
  document.querySelector('button#zoom-in').click();
  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - started), 0));
})"""


def measure(browser, url, rows):
    browser.navigate(url)
    browser.wait_for("document.documentElement.dataset.state === 'ready' && window.__keelTimes.barsFrame",
                     timeout=120, what="the timeline drawn")
    shown = browser.eval("document.querySelector('#timeline').dataset.rows")
    if shown != str(rows):
        sys.exit("the page drew %s rows of %d at %s" % (shown, rows, url))
    times = browser.eval("window.__keelTimes")
    render = float(browser.eval("document.querySelector('#timeline').dataset.renderMs"))
    zoom = browser.eval(ZOOM_JS)
    browser.eval("document.querySelector('button#zoom-fit').click()")
    return render, render + times["barsFrame"] - times["bars"], times["barsFrame"], times["ready"], zoom


def main():
    global SIZES
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", default="build/keel")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    if args.tiny:
        SIZES, args.runs = (100, 1000), 1
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    with tempfile.TemporaryDirectory(prefix="keel-bench-ui-") as tmp:
        stream = os.path.join(tmp, "in.ndjson")
        with open(stream, "w") as f:
            for rows in SIZES:
                for e in vehicle_events("V-%05d" % rows, rows):
                    f.write(json.dumps(e, separators=(",", ":")) + "\n")
        db = "sqlite:" + os.path.join(tmp, "ui.db")
        subprocess.run([args.keel, "ingest", "--cartridge", "fleet", "--quiet", "--store", db, stream], check=True)
        with open(os.path.join(tmp, "serve.log"), "w") as log:
            server, base = start_server(args.keel, db, log)
            try:
                with cdp.Browser(width=1400, height=900, timeout=60) as browser:
                    browser.page("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
                    version = browser.call("Browser.getVersion")["product"]
                    results = {}
                    for rows in SIZES:
                        url = "%s/ui/tenants/%s/entities/vehicle%%3AV-%05d" % (base, TENANT, rows)
                        measure(browser, url, rows)  # warm: the assets cached, the code compiled
                        runs = [measure(browser, url, rows) for _ in range(args.runs)]
                        results[rows] = [statistics.median(r[i] for r in runs) for i in range(5)]
                sizes = asset_bytes(base)
                api = {query: api_time(base, SIZES[1], query, args.runs) for query in ("", "?changes=1")}
            finally:
                server.terminate()
                server.wait()
    small, big = results[SIZES[0]], results[SIZES[1]]
    print("the /ui/ page in headless %s, 1400x900, median of %d navigations; %d cores, load average %s at start"
          % (version, args.runs, os.cpu_count(), load))
    print("%-8s %10s %10s %10s %10s %10s   %s" % ("rows", "render_ms", "drawn_ms", "shown_ms", "ready_ms", "zoom_ms", "target"))
    for rows in SIZES:
        r = results[rows]
        target = "drawn, shown <= 1000 ms: %s, %s" % tuple("yes" if x <= 1000 else "NO" for x in r[1:3]) \
            if rows == 10000 else ""
        print("%-8d %10.1f %10.1f %10.1f %10.1f %10.1f   %s" % (rows, r[0], r[1], r[2], r[3], r[4], target))
    print("%-8s %10.1f %10.1f %10.1f %10.1f %10.1f" % ("ratio", *(b / s for b, s in zip(big, small))))
    for query, (size, ms) in api.items():
        print("keel serve: history%s of the %d rows, %d bytes, in %.1f ms" % (query, SIZES[1], size, ms))
    total = sum(n for _, n in sizes)
    print("assets: %s; total %d bytes (%.1f KiB), target < 100 KiB: %s"
          % (", ".join("%s %d" % s for s in sizes), total, total / 1024, "yes" if total < 102400 else "NO"))


if __name__ == "__main__":
    main()
