# keelapi.py - what the browser tests share beside the driver (cdp.py):
# stopping with a message, and the JSON API as the test itself reads it,
# with a token, to know what the page should show.
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def api(base, token, path, params=None):
    """The JSON keel serve at base answers for path (None on a 404)."""
    query = "?" + urllib.parse.urlencode(params) if params else ""
    req = urllib.request.Request(base + path + query, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
