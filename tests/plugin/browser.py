"""A headless Chromium driven through the DevTools protocol, for the tests that look at
pages: the quality page (test_page_chromium.py) and Label Studio's own Data Manager
(test_pair_links.py).

The protocol runs over ``--remote-debugging-pipe`` (file descriptors 3 and 4, messages
separated by NUL bytes, as Puppeteer does): no websocket library, no port to pick.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
CHROMIUM_ENV = "LS_AGREEMENT_CHROMIUM"
ARTIFACTS_ENV = "LS_AGREEMENT_ARTIFACTS"


def find_chromium() -> str | None:
    """``$LS_AGREEMENT_CHROMIUM`` or the first Chromium/Chrome on the PATH."""
    env = os.environ.get(CHROMIUM_ENV)
    if env:
        return env if Path(env).exists() else shutil.which(env)
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


class DevTools:
    """A minimal DevTools-protocol client over Chromium's ``--remote-debugging-pipe``.

    Parameters
    ----------
    exe : str
        The browser executable.
    profile : Path
        A fresh user-data directory (no state shared with any other browser).
    """

    def __init__(self, exe: str, profile: Path) -> None:
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        # moved above 100 first, so that dup2 onto 3 and 4 in the child cannot clobber one another
        hi_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 100)
        hi_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 100)
        os.close(to_browser_r)
        os.close(from_browser_w)

        def child() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.log = profile.parent / "chromium-stderr.log"
        self.proc = subprocess.Popen(
            [exe, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--mute-audio", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log.open("wb"),
            preexec_fn=child, pass_fds=(3, 4))
        os.close(hi_r)
        os.close(hi_w)
        self._next = 0
        self._lock = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._lock.notify_all()
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._lock:
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                self._lock.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        """One command; its result, or AssertionError with the protocol's error."""
        with self._lock:
            self._next += 1
            mid = self._next
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._lock:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, \
                    f"no reply to {method} (browser log: {self.log.read_text()[-2000:]})"
                self._lock.wait(min(left, 1.0))
            reply = self._replies.pop(mid)
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply.get("result", {})

    def wait_event(self, method: str, session: str, timeout: float = 60.0, after: int = 0) -> dict[str, Any]:
        """The first ``method`` event of ``session`` from the ``after``-th event received on."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for ev in self.events[after:]:
                    if ev["method"] == method and ev.get("sessionId") == session:
                        return ev
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} event within {timeout:.0f}s"
                self._lock.wait(min(left, 1.0))

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()     # our own child, by its handle
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


class Page:
    """One tab of :class:`DevTools`: evaluate JS, real mouse input, screenshots."""

    def __init__(self, tools: DevTools, width: int = 1200, height: int = 900) -> None:
        self.tools = tools
        target = tools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.tools.send(method, params, self.session)

    def open(self, url: str) -> None:
        # this navigation's load event, not an earlier page's (events are kept)
        with self.tools._lock:
            seen = len(self.tools.events)
        self.send("Page.navigate", {"url": url})
        self.tools.wait_event("Page.loadEventFired", self.session, after=seen)

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (AssertionError on a JS exception)."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def centre(self, selector_js: str) -> tuple[float, float]:
        """Scroll the element into view; its centre in viewport coordinates."""
        x, y = self.js(f"(() => {{ const el = {selector_js}; el.scrollIntoView({{block: 'center'}}); "
                       "const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        return float(x), float(y)

    def click(self, selector_js: str) -> None:
        """A real mouse click (pressed and released) at the element's centre."""
        x, y = self.centre(selector_js)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                   "clickCount": 1})

    def hover(self, selector_js: str) -> None:
        x, y = self.centre(selector_js)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self, path: Path, full: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 20000), "scale": 1})
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))
        return path

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries of this tab so far."""
        out = []
        for ev in self.tools.events:
            if ev.get("sessionId") != self.session:
                continue
            p = ev.get("params", {})
            if ev["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {json.dumps(p.get('exceptionDetails'))[:500]}")
            elif ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {json.dumps(p.get('args'))[:500]}")
            elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url')})")
        return out

    def requests(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.tools.events
                if ev.get("sessionId") == self.session and ev["method"] == "Network.requestWillBeSent"]
