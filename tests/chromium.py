"""Open a page in headless Chromium and look at it as a person would: a tiny DevTools client.

Chromium speaks the DevTools protocol over a pair of pipes (``--remote-debugging-pipe``:
commands in on fd 3, replies and events out on fd 4, each message JSON ended by a NUL), so
no port, no websocket library and no browser download are needed: only a Chromium binary
(Debian's ``chromium``; ``$RELCOL_CHROMIUM`` names another).

Used by ``tests/test_browser.py``, and from the command line to make the README's
screenshot of a real report::

    relcol ingest && relcol report
    python -m tests.chromium reports/default/index.html docs/report.png --height 1600
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The flags headless Chromium needs here (no sandbox as root, no network chatter).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The Chromium binary: ``$RELCOL_CHROMIUM``, else the first of the usual names on PATH."""
    given = os.environ.get("RELCOL_CHROMIUM")
    if given:
        return given
    return next((path for name in _NAMES if (path := shutil.which(name))), None)


class BrowserError(RuntimeError):
    """Chromium did not start, answered with an error, or took too long."""


@dataclass
class Page:
    """What a loaded page showed: console messages, failed and outside requests."""

    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Everything a person would call an error on the page."""
        return [
            *self.console_errors,
            *self.exceptions,
            *self.log_errors,
            *(f"failed to load {url}" for url in self.failed_requests),
        ]


class Chromium:
    """One headless Chromium with one tab, driven over the DevTools pipe."""

    def __init__(self, binary: str, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="relcol-chromium-")
        self._log = tempfile.TemporaryFile()
        # Chromium reads commands on fd 3 and writes replies on fd 4. Our pipe ends are moved
        # above 10 first, so placing them on 3 and 4 in the child cannot clobber one another.
        to_browser_r, self._to_browser = (_high(fd) for fd in os.pipe())
        self._from_browser, from_browser_w = (_high(fd) for fd in os.pipe())

        def pipes() -> None:  # in the child, before exec; dup2'ed fds are inheritable
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            preexec_fn=pipes,  # a test helper with one thread: preexec_fn is safe here
            close_fds=False,  # our own fds are not inheritable (PEP 446): only 0-4 pass
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.session: str | None = None

    # The protocol -----------------------------------------------------------------------------

    def send(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def wait_for(self, method: str) -> dict:
        """The next event ``method`` of this tab (earlier events stay recorded)."""
        for event in self._events:
            if event.get("method") == method and not event.get("_seen"):
                event["_seen"] = True
                return event
        while True:
            event = self._read()
            self._events.append(event)
            if event.get("method") == method:
                event["_seen"] = True
                return event

    def _read(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer from Chromium within {self.timeout:g} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited ({self._process.poll()}): {self.log()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    # A tab --------------------------------------------------------------------------------------

    def open(self, url: str, *, width: int = 1400, height: int = 1600) -> Page:
        """Load ``url`` in a fresh tab of ``width`` × ``height`` CSS pixels; what it showed."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self._events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        return self._page()

    def _page(self) -> Page:
        page = Page()
        urls = {
            e["params"]["requestId"]: e["params"]["request"]["url"]
            for e in self._events
            if e.get("method") == "Network.requestWillBeSent"
        }
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                text = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params["args"]
                )
                page.console_errors.append(text)
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                page.exceptions.append(
                    details.get("exception", {}).get("description") or details.get("text", "")
                )
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                page.log_errors.append(params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if not url.startswith(("file:", "data:", "about:")):
                    page.outside_requests.append(url)
            elif method == "Network.loadingFailed":
                url = urls.get(params.get("requestId"), "?")
                page.failed_requests.append(f"{url} ({params.get('errorText', '')})")
        return page

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the tab (promises awaited)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: str | os.PathLike[str], *, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (or the whole page) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params |= {
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
            }
        data = self.send("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", session=False)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def log(self) -> str:
        """The end of Chromium's own log (its stderr)."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]


def _high(fd: int) -> int:
    """``fd`` moved to a number >= 10 (close-on-exec, like every fd Python opens)."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


@contextlib.contextmanager
def chromium(binary: str | None = None, *, timeout: float = 60.0) -> Iterator[Chromium]:
    """A running headless Chromium, closed (and its profile removed) on exit."""
    binary = binary or find_chromium()
    if binary is None:
        raise BrowserError("no Chromium found (install Debian's chromium or set RELCOL_CHROMIUM)")
    browser = Chromium(binary, timeout=timeout)
    try:
        yield browser
    finally:
        browser.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.chromium PAGE PNG``: a screenshot of the top of a page."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("page", type=Path, help="an HTML file, e.g. reports/default/index.html")
    parser.add_argument("png", type=Path, help="where to save the screenshot")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1600)
    parser.add_argument("--full-page", action="store_true", help="the whole page, not the top")
    args = parser.parse_args(argv)
    with chromium() as browser:
        page = browser.open(args.page.resolve().as_uri(), width=args.width, height=args.height)
        browser.screenshot(args.png, full_page=args.full_page)
    for error in page.errors:
        print(f"page error: {error}", file=sys.stderr)
    print(args.png)
    return 1 if page.errors else 0


if __name__ == "__main__":
    sys.exit(main())
