#!/usr/bin/env python3
# cdp.py - a small driver of headless Chromium over the DevTools protocol,
# Python's standard library only: the browser tests of the /ui/ page
# (tests/http_ui.sh), its benchmark (bench/bench_ui.py) and its screenshot
# (scripts/ui-screenshot) share it.
#
# The browser is started with --remote-debugging-pipe: it reads
# NUL-terminated JSON commands from its fd 3 and writes NUL-terminated JSON
# answers and events to its fd 4, so no websocket and no port are needed.
# Everything waits with a deadline: a browser that hangs fails the caller
# with CdpError instead of hanging it, and the browser (its whole process
# group: Chromium starts helpers) is killed on the way out.
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

CHROMIUM = os.environ.get("KEEL_CHROMIUM", "/usr/bin/chromium")


class CdpError(Exception):
    pass


class Browser:
    """One headless Chromium with one page attached (flatten mode: the
    page's commands carry its sessionId on the browser's one pipe)."""

    def __init__(self, width=1400, height=900, timeout=30.0):
        self.timeout = timeout
        self.events = []  # every event seen, in order: (method, params); the caller may clear it
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="keel-chromium-")
        self.proc = None
        self.session = None
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        os.set_blocking(self._to_browser, False)  # a full pipe must not block past a deadline

        def child_fds():
            # The browser's ends must be exactly fds 3 and 4: both are
            # first copied above 4, so that neither dup2 clobbers the other.
            def above_4(fd):
                while fd <= 4:
                    fd = os.dup(fd)
                return fd
            reads, writes = above_4(to_browser_r), above_4(from_browser_w)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        args = [CHROMIUM, "--headless", "--remote-debugging-pipe", "--no-sandbox",
                "--user-data-dir=" + self._profile, "--no-first-run", "--disable-gpu",
                "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--mute-audio", "--password-store=basic",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        try:
            with open(os.path.join(self._profile, "stderr"), "wb") as stderr:
                self.proc = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                    pass_fds=(3, 4), preexec_fn=child_fds, start_new_session=True)
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})
            attached = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True})
            self.session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.page(domain + ".enable")
            self.viewport(width, height)
        except BaseException:
            self.kill()
            raise

    # -- the protocol ------------------------------------------------------

    def _send(self, method, params, session):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        deadline = time.monotonic() + self.timeout
        while data:
            if time.monotonic() > deadline:
                raise CdpError("browser does not read its pipe (%s)" % method)
            _, ready, _ = select.select([], [self._to_browser], [], 0.5)
            if ready:
                try:
                    data = data[os.write(self._to_browser, data):]
                except BlockingIOError:
                    pass
        return self._next_id

    def _read_message(self, deadline):
        """The next message from the browser, or None at the deadline."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("browser closed its pipe (exit %s): %s"
                               % (self.proc.poll(), self.stderr_tail()))
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None, timeout=None):
        """Sends a command and returns its result; events that arrive
        meanwhile are kept in self.events."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._read_message(deadline)
            if message is None:
                raise CdpError("no answer to %s within %.0f s" % (method, timeout or self.timeout))
            if message.get("id") == wanted:
                if "error" in message:
                    raise CdpError("%s: %s" % (method, message["error"]))
                return message.get("result", {})
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def page(self, method, params=None, timeout=None):
        """A command to the attached page."""
        return self.call(method, params, session=self.session, timeout=timeout)

    def pump(self, seconds=0.0):
        """Takes in the events the browser has sent (waiting up to seconds)."""
        deadline = time.monotonic() + seconds
        while True:
            message = self._read_message(deadline)
            if message is None:
                return
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    # -- what the tests use ------------------------------------------------

    def viewport(self, width, height):
        self.page("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def navigate(self, url):
        """Loads url and waits for the new document's load event (the old
        document may still answer "complete" just after the command)."""
        seen = len(self.events)
        result = self.page("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, result["errorText"]))
        self.wait_event("Page.loadEventFired", seen)

    def wait_event(self, method, seen=0, timeout=None):
        """The first event named method among self.events[seen:], waiting
        for it until the timeout."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for name, params in self.events[seen:]:
                if name == method:
                    return params
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise CdpError("no %s within %.0f s" % (method, timeout or self.timeout))
            self.pump(0.05)

    def eval(self, expression, timeout=None):
        """The value of a JavaScript expression (promises awaited), as JSON
        gives it; an exception in the page raises CdpError."""
        result = self.page("Runtime.evaluate",
                           {"expression": expression, "awaitPromise": True,
                            "returnByValue": True, "userGesture": True}, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError("javascript: %s\n  in: %s" % (text, expression[:300]))
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=None, what=None):
        """Evaluates expression every 50 ms until it is truthy and returns
        its value; CdpError when it has not become so within timeout."""
        deadline = time.monotonic() + (timeout or self.timeout)
        last_error = None
        while True:
            try:
                value = self.eval(expression)
                if value:
                    return value
                last_error = None
            except CdpError as e:  # e.g. the page is between documents
                last_error = e
            if time.monotonic() > deadline:
                raise CdpError("timed out waiting for %s%s"
                               % (what or expression, "" if last_error is None else ": %s" % last_error))
            self.pump(0.05)

    def click_at(self, x, y):
        """A left click with the mouse at (x, y) in the viewport, as a
        person's: the browser dispatches pointer, mouse and click events."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left" if kind != "mouseMoved" else "none",
                       "clickCount": 1 if kind != "mouseMoved" else 0})

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", {"format": "png"}, timeout=60)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def stderr_tail(self):
        try:
            with open(os.path.join(self._profile, "stderr"), "rb") as f:
                return f.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    # -- the end -----------------------------------------------------------

    def close(self):
        """Browser.close and a wait for the exit; killed if it will not."""
        if self.proc is None:
            return
        try:
            self.call("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this browser leads
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._to_browser = self._from_browser = -1
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self.kill()
        return False
