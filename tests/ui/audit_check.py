#!/usr/bin/env python3
# audit_check.py BASE TOKEN_ALL TOKEN_OTHER KNOWN_AT SERVER_PID STORE TOKENS
#
# The /ui/ page of the keel serve at BASE used as a new user would
# (tests/http_ui_audit.sh, docs/ui-testing.md): hostile subjects and
# values, the error paths, keyboard use and the timeline's geometry at
# zoom 1, each compared with what the JSON API answers the test itself.
# The last checks stop the server (SERVER_PID) while the page is open,
# then start it again on the same port (keel serve, $KEEL, on the store URL
# STORE with the token file TOKENS) and stop it at the end.
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
import keelapi  # noqa: E402
from keelapi import check, fail  # noqa: E402

base, token_all, token_other, known_at, server_pid, store, tokens = sys.argv[1:8]
TENANT = "tenant-00"
ODD = "<script>alert(1)</script>\"'%/?# é日本"
ODD_VEHICLE = "vehicle:" + ODD
ODD_DRIVER = "driver:" + ODD
READY_JS = "document.documentElement.dataset.state === 'ready'"
ROWS_JS = "Number(document.getElementById('timeline').dataset.rows)"
ERROR_JS = "document.getElementById('error').hidden ? '' : document.getElementById('error').textContent"


def quote(s):
    return urllib.parse.quote(s, safe="")


def api(path, params=None):
    return keelapi.api(base, token_all, path, params)


def api_rows(subject, known=None):
    doc = api("/v1/tenants/%s/entities/%s/history" % (TENANT, quote(subject)),
              {"known_at": known} if known else None)
    return len(doc["facts"]) + len(doc["relations"])


def entity_url(subject, query="", tenant=TENANT):
    return "%s/ui/tenants/%s/entities/%s%s" % (base, tenant, quote(subject), query)


def wait_ready(b, what):
    b.wait_for(READY_JS, what=what)


def open_view(b, url, what):
    b.navigate(url)
    wait_ready(b, what)


def act(b, js, what):
    """Runs js (a user's action) and waits until the page has done with
    it: the page's handlers mark it "loading" before they return."""
    b.eval(js)
    wait_ready(b, what)


def set_input(b, id_, value, what):
    act(b, "document.getElementById(%s).value = %s; document.getElementById(%s)"
        ".dispatchEvent(new Event('change'))" % (json.dumps(id_), json.dumps(value), json.dumps(id_)), what)


def key(b, name, code):
    for kind in ("rawKeyDown", "keyUp"):
        b.page("Input.dispatchKeyEvent", {"type": kind, "key": name, "code": name,
                                           "windowsVirtualKeyCode": code})


def dialogs(b):
    return [p for m, p in b.events if m == "Page.javascriptDialogOpening"]


def sign_in(b, token):
    open_view(b, base + "/ui/", "the sign-in form")
    b.wait_for("!document.getElementById('sign-in').hidden", what="the sign-in form")
    act(b, "document.getElementById('token').value = %s;"
        " document.getElementById('token-form').requestSubmit()" % json.dumps(token), "signing in")


def hostile(b):
    """Markup in subjects and values is shown as text, runs nothing, and
    the addresses built from it lead back to the same entity."""
    open_view(b, base + "/ui/tenants/%s?prefix=%s" % (TENANT, quote("vehicle:<script>")), "finding")
    links = b.eval("[...document.querySelectorAll('a.entity')].map(a => a.dataset.subject)")
    check(links == [ODD_VEHICLE], "find by a hostile prefix: %r" % links)
    open_view(b, b.eval("document.querySelector('a.entity').href"), "the hostile vehicle")
    check(b.eval("document.getElementById('entity-title').textContent") == ODD_VEHICLE,
          "the vehicle's title after following its link: %r" % b.eval("location.href"))
    want = api_rows(ODD_VEHICLE)
    check(b.eval(ROWS_JS) == want, "hostile vehicle: %s bars, the API %d rows" % (b.eval(ROWS_JS), want))
    texts = b.eval("[...document.querySelectorAll('#timeline .bar')].map(b => b.title)")
    check(any("<img src=x onerror=alert(2)>" in t for t in texts), "the markup value as text: %r" % texts[:3])
    check(b.eval("document.querySelectorAll('#timeline img, #timeline script, #state img').length") == 0,
          "a value became markup")
    href = b.eval("[...document.querySelectorAll('#state .state-incoming a')].map(a => a.href)")
    check(len(href) == 1, "the driver pointing here: %r" % href)
    open_view(b, href[0], "the hostile driver")
    check(b.eval("document.getElementById('entity-title').textContent") == ODD_DRIVER,
          "the driver's title after its link %s" % href[0])
    check(not dialogs(b), "a dialog opened: %r" % dialogs(b))


def errors(b):
    """Each error path shows its message, no data, and the page ready."""
    b.eval("sessionStorage.removeItem('keel.token')")
    sign_in(b, "not-a-token")
    check(not b.eval("document.getElementById('sign-in').hidden") and "refused" in b.eval(ERROR_JS),
          "a wrong token: the form again with a message, got %r" % b.eval(ERROR_JS))
    check(b.eval("sessionStorage.getItem('keel.token')") is None, "a refused token was kept")
    act(b, "document.getElementById('token').value = %s;"
        " document.getElementById('token-form').requestSubmit()" % json.dumps(token_other), "signing in")
    open_view(b, entity_url("vehicle:V-0001"), "another tenant's entity")
    check(b.eval(ERROR_JS).startswith("403") and b.eval(ROWS_JS) == 0 and
          b.eval("document.querySelectorAll('#state li').length") == 0,
          "another tenant: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))
    b.eval("sessionStorage.setItem('keel.token', %s)" % json.dumps(token_all))
    open_view(b, entity_url("vehicle:NO-SUCH"), "an entity that does not exist")
    check(b.eval(ERROR_JS).startswith("404") and b.eval(ROWS_JS) == 0, "no such entity: %r" % b.eval(ERROR_JS))
    check(b.eval("document.getElementById('state').textContent") == "",
          "no such entity, yet a state: %r" % b.eval("document.getElementById('state').textContent"))
    # Forgotten while the page shows it: Latest reads it again.
    subject = "vehicle:V-0009"
    open_view(b, entity_url(subject), subject)
    check(b.eval(ROWS_JS) == api_rows(subject), "%s before forgetting" % subject)
    req = urllib.request.Request(base + "/v1/tenants/%s/entities/%s" % (TENANT, quote(subject)),
                                 method="DELETE", headers={"Authorization": "Bearer " + token_all})
    urllib.request.urlopen(req, timeout=30).read()
    act(b, "document.getElementById('known-at-now').click()", "Latest after forgetting")
    check(b.eval(ERROR_JS).startswith("410") and b.eval(ROWS_JS) == 0,
          "forgotten: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))
    shown = b.eval("document.getElementById('entity-meta').textContent + document.getElementById('state').textContent")
    check(shown == "", "forgotten, yet still shown: %r" % shown)


def bad_times(b):
    """A malformed "as of" is the API's 400 in #error, and the timeline,
    which does not depend on it, stays drawn; a good one clears the error."""
    subject = "vehicle:V-0001"
    want = api_rows(subject)
    open_view(b, entity_url(subject, "?at=garbage"), "a malformed at in the address")
    check(b.eval(ERROR_JS).startswith("400"), "at=garbage: %r" % b.eval(ERROR_JS))
    check(b.eval(ROWS_JS) == want, "at=garbage: %s bars, the API %d rows" % (b.eval(ROWS_JS), want))
    set_input(b, "at", "2026-13-99", "a malformed at typed")
    check(b.eval(ERROR_JS).startswith("400") and b.eval(ROWS_JS) == want,
          "at typed malformed: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))
    set_input(b, "known-at", "yesterday", "a malformed known_at typed")
    check(b.eval(ERROR_JS).startswith("400") and b.eval(ROWS_JS) == 0,
          "known_at typed malformed: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))
    act(b, "document.getElementById('known-at-now').click()", "Latest")
    check(b.eval(ROWS_JS) == want, "Latest with a malformed at: %s bars, the API %d rows"
          % (b.eval(ROWS_JS), want))
    act(b, "document.getElementById('at-now').click()", "Now")
    check(b.eval(ERROR_JS) == "" and b.eval(ROWS_JS) == want and
          b.eval("document.querySelectorAll('#state .state-fact').length") > 0,
          "after Now: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))


def known_before(b):
    """Known at a moment before the entity was first recorded: no rows
    and the state's note, as the API's 404 for that moment means, not an
    error."""
    subject = "vehicle:V-0001"
    open_view(b, entity_url(subject, "?known_at=2020-01-01T00:00:00Z"), "known at 2020")
    check(b.eval(ERROR_JS) == "" and b.eval(ROWS_JS) == 0,
          "known at 2020: %r, %s bars" % (b.eval(ERROR_JS), b.eval(ROWS_JS)))
    check(b.eval("!!document.querySelector('#timeline .empty')"), "known at 2020: no 'no rows' note")
    check(b.eval("document.querySelectorAll('#state .state-fact').length") == 0 and
          "Nothing known" in b.eval("document.getElementById('state').textContent"),
          "known at 2020: the state %r" % b.eval("document.getElementById('state').textContent"))


def one_event_two_objects(b):
    """One event linked team:T1 to person:A and person:B; a later one
    unlinked A. Known before that, only A's row is highlighted as changed,
    and selecting B's bar stays on B across readings."""
    open_view(b, entity_url("team:T1", "?known_at=" + quote(known_at), "pairs"), "team:T1 as known then")
    b.eval("document.getElementById('highlight-changed').click()")
    changed = b.eval("[...document.querySelectorAll('#timeline .bar.changed')].map(b => b.dataset.object)")
    check(changed == ["person:A"], "team:T1: the rows highlighted as changed are %r, not person:A's" % changed)
    act(b, "document.querySelector('#timeline .bar[data-object=\"person:B\"]').click()", "selecting B")
    act(b, "document.getElementById('known-at-now').click()", "Latest")
    selected = b.eval("[...document.querySelectorAll('#timeline .bar.selected')].map(b => b.dataset.object)")
    check(selected == ["person:B"], "team:T1: after Latest the selected bar is %r, not person:B's" % selected)


def slider_keys(b):
    """Tab onto the known-at slider changes nothing; its keys still move it."""
    subject = "vehicle:V-0001"
    open_view(b, entity_url(subject), subject)
    b.eval("document.getElementById('known-at-now').focus()")
    key(b, "Tab", 9)
    check(b.eval("document.activeElement.id") == "known-at-slider",
          "Tab from Latest went to %r" % b.eval("document.activeElement.id"))
    b.eval("new Promise(r => setTimeout(r, 300))")  # past the slider's debounce
    wait_ready(b, "after Tab")
    check(b.eval("location.search") == "" and b.eval("document.getElementById('known-at').value") == "",
          "Tab onto the slider set known_at: %r" % b.eval("location.search"))
    key(b, "Home", 36)
    b.wait_for("new URLSearchParams(location.search).has('known_at')", what="Home on the slider")
    wait_ready(b, "Home on the slider")
    first = b.eval("new URLSearchParams(location.search).get('known_at')")
    check(b.eval(ROWS_JS) == api_rows(subject, first), "Home: known_at %s" % first)


def arrow_keys(b):
    """Zoomed in, the arrows along a row of short bars bring each bar into
    view beside the lane names, never under them."""
    subject = "vehicle:V-0001"
    open_view(b, entity_url(subject), subject)
    for _ in range(6):
        b.eval("document.getElementById('zoom-in').click()")
    b.eval("document.getElementById('timeline').scrollLeft = 0")
    b.eval("document.querySelector('[data-lane=\"fact:speed_kmh\"] .bar').focus()")
    where = """(() => { const tl = document.getElementById('timeline'), v = tl.getBoundingClientRect();
      const edge = v.left + tl.clientLeft + document.getElementById('axis').offsetLeft;
      const r = document.activeElement.getBoundingClientRect();
      return [r.left - edge, v.left + tl.clientLeft + tl.clientWidth - r.right, r.width,
              document.activeElement.dataset.validFrom]; })()"""
    for name, code in [("ArrowRight", 39)] * 40 + [("ArrowLeft", 37)] * 40:
        key(b, name, code)
        left, right, width, valid_from = b.eval(where)
        check(left >= -1 and (right >= -1 or width > 300),
              "after %s the bar from %s is %.0f px under the names, %.0f px past the right edge"
              % (name, valid_from, max(0, -left), max(0, -right)))


def fit_geometry(b):
    """At zoom 1 the timeline fits its box (no tick label makes it
    scrollable), so Fit shows the first moment at the axis' left edge."""
    for width in (600, 1000, 1400):
        b.viewport(width, 900)
        for n in range(1, 9):
            subject = "vehicle:V-%04d" % n
            open_view(b, entity_url(subject), subject)
            act(b, "document.getElementById('zoom-in').click();"
                " document.getElementById('timeline').scrollLeft += 400;"
                " document.getElementById('zoom-fit').click()", "zoom in, pan, Fit")
            over = b.eval("(() => { const t = document.getElementById('timeline');"
                          " return [t.scrollWidth - t.clientWidth, t.scrollLeft]; })()")
            check(over == [0, 0], "%s at %d px, after Fit: %d px too wide, scrolled %d px"
                  % (subject, width, over[0], over[1]))
    b.viewport(1400, 900)


def server_exited(pid):
    """True once the process has exited (gone, or a zombie its shell has
    not yet waited for)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def server_gone(b):
    """The server stopped under the page: a message that says so, the
    timeline drawn still, the page ready."""
    subject = "vehicle:V-0001"
    open_view(b, entity_url(subject), subject)
    want = b.eval(ROWS_JS)
    os.kill(int(server_pid), signal.SIGTERM)
    # Gone, not only closed to new connections: a connection the browser
    # keeps open is served while the server finishes.
    deadline = time.monotonic() + 30
    while not server_exited(server_pid):
        check(time.monotonic() < deadline, "the server did not stop within 30 s")
        time.sleep(0.05)
    set_input(b, "at", "2026-01-05T09:00:00Z", "an at with the server gone")
    check("no answer from the server" in b.eval(ERROR_JS), "server gone: %r" % b.eval(ERROR_JS))
    check(b.eval(ROWS_JS) == want, "server gone: the timeline was wiped")


def server_back(b):
    """A "known at" moved while the server is gone clears the timeline;
    once the server is back, *Now* reads the whole view again, not only
    the state beside it."""
    subject = "vehicle:V-0001"
    set_input(b, "known-at", known_at, "a known at with the server gone")
    check("no answer from the server" in b.eval(ERROR_JS), "known at, server gone: %r" % b.eval(ERROR_JS))
    port = urllib.parse.urlsplit(base).port
    server = subprocess.Popen([os.environ["KEEL"], "serve", "--cartridge", "fleet", "--listen",
                               "127.0.0.1:%d" % port, "--store", store, "--tokens", tokens,
                               "--threads", "2", "--quiet"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5):
                    break
            except OSError:
                check(server.poll() is None, "keel serve did not start again")
                check(time.monotonic() < deadline, "keel serve did not answer within 30 s")
                time.sleep(0.05)
        act(b, "document.getElementById('at-now').click()", "now with the server back")
        check(b.eval(ERROR_JS) == "", "server back: %r" % b.eval(ERROR_JS))
        want = api_rows(subject, known_at)
        check(b.eval(ROWS_JS) == want, "server back: %s bars, history?known_at= has %d rows"
              % (b.eval(ROWS_JS), want))
    finally:
        server.terminate()
        server.wait(timeout=30)


def main():
    with cdp.Browser() as b:
        b.page("Page.enable")
        sign_in(b, token_all)
        hostile(b)
        errors(b)
        bad_times(b)
        known_before(b)
        one_event_two_objects(b)
        slider_keys(b)
        arrow_keys(b)
        fit_geometry(b)
        server_gone(b)
        server_back(b)
    print("audit: every check passed")


if __name__ == "__main__":
    main()
