"""Headless Chromium for tests that look at a page as a person would: the report and the live console.

The ``chromium`` fixture hands a test a fresh tab (a :class:`Page`) of one headless Chromium per session. A test
opens a file or an ``http://`` URL, waits for a JavaScript condition (by convention ``window.seglogReady ===
true``, which a page sets once it has drawn), reads values back with :meth:`Page.evaluate`, checks
:attr:`Page.errors` (uncaught exceptions and ``console.error`` since the page began loading) and writes a
screenshot to ``.seglog/test-artifacts/screenshots/``.

It speaks the Chrome DevTools Protocol over a websocket to Debian's ``chromium`` itself: no chromedriver and no
WebDriver layer, so nothing can try to download a driver or a browser, and the protocol's own events report
script errors from the first line a page runs. ``./dev test`` installs the package (``./dev browser`` does only
that); without it the browser tests skip, and fail with ``CI=true``.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

REPO = Path(__file__).resolve().parent.parent
#: Screenshots land here, one file per test (and per name a test gives); .seglog/ is gitignored.
SCREENSHOTS = REPO / ".seglog" / "test-artifacts" / "screenshots"
INSTALL_HINT = "run ./dev browser (it installs Debian's chromium), or set SEGLOG_CHROMIUM to a Chromium binary"
#: The viewport a tab starts with; a screenshot is the whole page unless given a size.
WINDOW = (1280, 900)
#: The script errors a page can make: an uncaught exception (or unhandled rejection), and console.error/assert.
ERROR_KINDS = frozenset({"exception", "console.error", "console.assert"})


class BrowserError(Exception):
    """Chromium could not be started or driven, or a page did not do what the test waited for."""


class NavigationError(BrowserError):
    """The page could not be loaded at all (a missing file, a refused connection)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"could not open {url}: {reason}")
        self.url = url
        self.reason = reason


class JavaScriptError(BrowserError):
    """An expression given to :meth:`Page.evaluate` threw."""

    def __init__(self, expression: str, description: str) -> None:
        super().__init__(f"{expression!r} threw: {description}")
        self.expression = expression
        self.description = description


class PageTimeoutError(BrowserError):
    """A condition never became true; the message carries the page's script errors and console to say why."""

    def __init__(self, condition: str, url: str, timeout: float, messages: list[PageMessage],
                 last_error: str | None) -> None:
        lines = [f"{condition!r} was not true within {timeout:g}s on {url}"]
        if last_error:
            lines.append(f"the condition itself last threw: {last_error}")
        lines.append("script errors and console (oldest first):" if messages else "no script errors, no console")
        lines.extend(f"  {message}" for message in messages)
        super().__init__("\n".join(lines))
        self.condition = condition
        self.url = url
        self.timeout = timeout
        self.messages = messages


@dataclass(frozen=True, kw_only=True)
class PageMessage:
    """One line of the page's console: ``kind`` is ``exception``, ``console.<type>`` (log, error, warning, assert,
    ...) or ``log.<level>`` (the browser's own lines, such as a resource that failed to load)."""

    kind: str
    text: str
    url: str = ""
    line: int | None = None

    def __str__(self) -> str:
        # The protocol counts lines from 0; people (and editors) from 1.
        where = f" ({self.url}:{self.line + 1})" if self.url and self.line is not None else ""
        return f"[{self.kind}] {self.text}{where}"


def find_chromium() -> str | None:
    """The Chromium binary to run: SEGLOG_CHROMIUM, else Debian's, else one on PATH."""
    if configured := os.environ.get("SEGLOG_CHROMIUM"):
        return configured
    # Debian's /usr/bin/chromium is a launcher script that adds extension and GPU flags from /etc/chromium.d (and
    # prints a shell error where /dev/shm is large); the binary behind it takes our flags alone.
    if os.access("/usr/lib/chromium/chromium", os.X_OK):
        return "/usr/lib/chromium/chromium"
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


class _Connection:
    """One DevTools websocket. A command waits for the answer with its id; events that arrive meanwhile go to
    ``on_event`` in order, so a test sees every console line even while it is busy evaluating."""

    def __init__(self, url: str, on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self._exit = contextlib.ExitStack()
        # proxy=None: websockets would otherwise take HTTP(S)_PROXY from the environment, even for 127.0.0.1.
        self._ws: ClientConnection = self._exit.enter_context(connect(
            url, proxy=None, compression=None, max_size=None, ping_interval=None, open_timeout=10, close_timeout=2))
        self._ids = itertools.count(1)
        self._on_event = on_event

    def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and return its result; a protocol error or no answer in time raises BrowserError."""
        id_ = next(self._ids)
        self._ws.send(json.dumps({"id": id_, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline - time.monotonic())
            if message is None:
                raise BrowserError(f"no answer to {method} within {timeout:g}s")
            if message.get("id") == id_:
                if "error" in message:
                    raise BrowserError(f"{method} failed: {message['error'].get('message')}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def pump(self, seconds: float) -> None:
        """Hand events to ``on_event`` for ``seconds`` (the wait between two polls)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and self._receive(left) is not None:
            pass

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        try:
            message: dict[str, Any] = json.loads(self._ws.recv(timeout=max(timeout, 0)))
        except TimeoutError:
            return None
        if "method" in message and self._on_event is not None:
            self._on_event(message["method"], message.get("params", {}))
        return message

    def close(self) -> None:
        self._exit.close()


class Page:
    """A tab of the session's Chromium. Each test gets its own; :attr:`errors` are the current page's."""

    def __init__(self, browser: Chromium, target_id: str, websocket_url: str, artifact_stem: str) -> None:
        self._browser = browser
        self._target_id = target_id
        self._artifact_stem = artifact_stem
        self.messages: list[PageMessage] = []
        self.url = "about:blank"
        self._loaded: set[str] = set()
        self._connection = _Connection(websocket_url, self._on_event)
        for domain in ("Page", "Runtime", "Log"):
            self._connection.call(f"{domain}.enable")
        self._connection.call("Page.setLifecycleEventsEnabled", {"enabled": True})

    @property
    def errors(self) -> list[PageMessage]:
        """The page's script errors since it began loading: uncaught exceptions, console.error and failed
        console.assert. A page a test passes has none: ``assert [] == page.errors``."""
        return [message for message in self.messages if message.kind in ERROR_KINDS]

    def open(self, target: str | os.PathLike[str], *, ready: str | None = None, timeout: float = 15.0) -> None:
        """Load a file (a path, or a ``file://`` URL) or an ``http://`` URL and wait for its load event, then for
        ``ready`` (a JavaScript expression, e.g. ``"window.seglogReady === true"``) when given.

        Raises:
            NavigationError: the page could not be loaded at all.
            PageTimeoutError: it did not load, or ``ready`` did not become true, within ``timeout`` seconds.
        """
        is_url = isinstance(target, str) and re.match(r"^[a-z]+:", target)
        url = str(target) if is_url else Path(target).resolve().as_uri()
        deadline = time.monotonic() + timeout
        self.messages.clear()
        self._loaded.clear()
        self.url = url
        navigation = self._connection.call("Page.navigate", {"url": url}, timeout=timeout)
        if reason := navigation.get("errorText"):
            raise NavigationError(url, reason)
        loader = navigation.get("loaderId")  # none for a same-document navigation (a #fragment): nothing loads
        while loader is not None and loader not in self._loaded:
            if time.monotonic() > deadline:
                raise PageTimeoutError("the load event", url, timeout, list(self.messages), None)
            self._connection.pump(0.05)
        if ready is not None:
            self.wait_for(ready, timeout=max(deadline - time.monotonic(), 0.1))

    def wait_for(self, condition: str, *, timeout: float = 10.0, poll: float = 0.05) -> None:
        """Poll a JavaScript expression until it is truthy; an expression that throws counts as not yet.

        Raises:
            PageTimeoutError: it never became true; the message lists the page's errors and console.
        """
        deadline = time.monotonic() + timeout
        last_error: str | None = None
        while True:
            try:
                if self.evaluate(f"Boolean({condition})"):
                    return
                last_error = None
            except JavaScriptError as exc:
                last_error = exc.description
            if time.monotonic() > deadline:
                raise PageTimeoutError(condition, self.url, timeout, list(self.messages), last_error)
            self._connection.pump(poll)

    def evaluate(self, expression: str, *, timeout: float = 10.0) -> Any:
        """The JSON value of a JavaScript expression in the page (a promise is awaited); ``undefined`` is None.

        Raises:
            JavaScriptError: the expression threw (or its promise rejected).
        """
        answer = self._connection.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True}, timeout=timeout)
        if details := answer.get("exceptionDetails"):
            raise JavaScriptError(expression, _describe(details))
        return answer["result"].get("value")

    def click(self, x: float, y: float) -> None:
        """A left click at (x, y) in CSS pixels of the viewport, as a person makes it: the pointer moves there
        (a plot computes what is under it on the move), presses and releases."""
        for kind, buttons in (("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)):
            self._connection.call("Input.dispatchMouseEvent", {
                "type": kind, "x": x, "y": y, "button": "none" if kind == "mouseMoved" else "left",
                "buttons": buttons, "clickCount": 0 if kind == "mouseMoved" else 1})
            self._connection.pump(0.05)

    def screenshot(self, name: str | None = None, *, size: tuple[int, int] | None = None) -> Path:
        """Write a PNG of the whole page (or of its top-left ``size`` = (width, height) in CSS pixels) to
        ``.seglog/test-artifacts/screenshots/<test>[--<name>].png`` and return its path."""
        if size is None:
            content = self._connection.call("Page.getLayoutMetrics")["cssContentSize"]
            size = (max(int(content["width"]), 1), max(int(content["height"]), 1))
        width, height = size
        shot = self._connection.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
        stem = self._artifact_stem if name is None else f"{self._artifact_stem}--{_file_safe(name)}"
        path = SCREENSHOTS / f"{stem}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        self._connection.close()
        self._browser.close_target(self._target_id)

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.lifecycleEvent" and params.get("name") == "load":
            self._loaded.add(params["loaderId"])
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.messages.append(PageMessage(kind="exception", text=_describe(details), url=details.get("url", ""),
                                             line=details.get("lineNumber")))
        elif method == "Runtime.consoleAPICalled":
            text = " ".join(_remote_text(arg) for arg in params.get("args", []))
            frames = params.get("stackTrace", {}).get("callFrames", [])
            top = frames[0] if frames else {}
            self.messages.append(PageMessage(kind=f"console.{params['type']}", text=text, url=top.get("url", ""),
                                             line=top.get("lineNumber")))
        elif method == "Log.entryAdded":
            entry = params["entry"]
            self.messages.append(PageMessage(kind=f"log.{entry['level']}", text=entry["text"],
                                             url=entry.get("url", ""), line=entry.get("lineNumber")))


class Chromium:
    """One headless Chromium process with its own throwaway profile; tabs are :class:`Page`."""

    def __init__(self, binary: str, *, startup_timeout: float = 30.0) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="seglog-chromium-", ignore_cleanup_errors=True)
        flags = [
            "--headless", "--remote-debugging-port=0", f"--user-data-dir={self._profile.name}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars", "--mute-audio",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            # Nothing reaches out: no component updates, sync, metrics, or field trials (the machine has no network,
            # and a test must not depend on one).
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--metrics-recording-only", "--disable-field-trial-config",
            "--password-store=basic", "--use-mock-keychain",
            # /dev/shm in a container can be tiny; shared memory files then go to /tmp.
            "--disable-dev-shm-usage",
        ]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        # HOME in the profile too: the crash handlers keep their database under ~/.config/chromium, which is then
        # not the user's, and their command lines name the profile, so processes() finds them outside the group.
        home = self._profile.name
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache"}
        self._log = Path(home) / "chromium.log"
        with self._log.open("wb") as log:
            # A session of its own: close() can end the renderer, GPU and zygote children with the browser.
            self._process = subprocess.Popen([binary, *flags, "about:blank"], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
        self.pid = self._process.pid
        try:
            self._port, browser_path = self._devtools_address(startup_timeout)
            self._connection = _Connection(f"ws://127.0.0.1:{self._port}{browser_path}")
            self.version = self._connection.call("Browser.getVersion")["product"]
        except BaseException:
            self._kill()
            raise

    def new_page(self, artifact_stem: str = "page") -> Page:
        """A fresh tab on about:blank; screenshots are named after ``artifact_stem`` (the test's name)."""
        target_id = self._connection.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        return Page(self, target_id, f"ws://127.0.0.1:{self._port}/devtools/page/{target_id}",
                    _file_safe(artifact_stem))

    def close_target(self, target_id: str) -> None:
        self._connection.call("Target.closeTarget", {"targetId": target_id})

    def close(self) -> None:
        """Ask the browser to quit, then make sure nothing of it is left (no zombie renderers)."""
        with contextlib.suppress(BrowserError, OSError, ConnectionError):  # already gone: _kill makes sure
            self._connection.call("Browser.close", timeout=5)
            self._connection.close()
        self._kill()

    def _kill(self) -> None:
        started = set(self.processes())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        # Children that outlive the browser (a renderer mid-crash, the zygote) share its process group; the crash
        # handlers, in groups of their own, normally leave with the browser.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        for pid, state in self.processes().items():
            if state != "Z":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        # The zygotes and crash handlers outlive the browser by a moment, and init reaps them, not us: wait for
        # that, so a session leaves no chromium process behind, not even a zombie (bounded: init is not ours).
        deadline = time.monotonic() + 5
        while any(Path(f"/proc/{pid}").exists() for pid in started | set(self.processes())):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self._profile.cleanup()

    def processes(self) -> dict[int, str]:
        """This browser's processes, by pid, with their state (``Z``: a zombie): its process group, and the crash
        handlers it starts in groups of their own (found by the profile in their command line)."""
        return {pid: state for pid, (state, pgrp, command) in _process_table().items()
                if pgrp == self._process.pid or self._profile.name in command}

    def _devtools_address(self, timeout: float) -> tuple[int, str]:
        """Chromium writes the port it chose and the browser's websocket path to DevToolsActivePort."""
        active = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BrowserError(f"Chromium exited with status {self._process.returncode} at startup:\n"
                                   + self._log.read_text(errors="replace")[-2000:])
            lines = active.read_text().splitlines() if active.exists() else []
            if len(lines) >= 2:
                return int(lines[0]), lines[1]
            time.sleep(0.02)
        raise BrowserError(f"Chromium did not open its DevTools port within {timeout:g}s:\n"
                           + self._log.read_text(errors="replace")[-2000:])


def _process_table() -> dict[int, tuple[str, int, str]]:
    """Every process's state letter, process group and command line, from /proc (Linux)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after its last ')'.
        state, _ppid, pgrp = stat[stat.rindex(")") + 2:].split()[:3]
        table[int(entry.name)] = (state, int(pgrp), command)
    return table


def _describe(details: dict[str, Any]) -> str:
    """An exception's own description (``ReferenceError: x is not defined``) over the protocol's generic text."""
    exception = details.get("exception") or {}
    return str(exception.get("description") or exception.get("value") or details.get("text", "exception"))


def _remote_text(arg: dict[str, Any]) -> str:
    if "value" in arg:
        return arg["value"] if isinstance(arg["value"], str) else json.dumps(arg["value"])
    return str(arg.get("description") or arg.get("unserializableValue") or arg.get("type"))


def _file_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "page"


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    """The Chromium to run. Missing: the test skips, or fails with CI=true (CI must run the browser tests)."""
    binary = find_chromium()
    if binary is None:
        message = f"Chromium not found: {INSTALL_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return binary


@pytest.fixture(scope="session")
def chromium_browser(chromium_binary: str) -> Iterator[Chromium]:
    """The session's headless Chromium: started once (about a second), each test gets a tab of its own."""
    browser = Chromium(chromium_binary)
    yield browser
    browser.close()


@pytest.fixture
def chromium(chromium_browser: Chromium, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh tab of the session's Chromium, its screenshots named after the test."""
    page = chromium_browser.new_page(request.node.name)
    yield page
    page.close()
