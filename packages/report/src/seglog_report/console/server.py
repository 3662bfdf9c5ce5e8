"""Console: the live console's HTTP server, its feed receiver, its push and its stack probe, in one object.

Routes (standard library ``http.server``, one thread per connection):

- ``/``: the page (:file:`page.html`, :file:`page.js`);
- ``/plotly.min.js``: Plotly from the installed package (``plotly.offline.get_plotlyjs``): nothing from a CDN;
- ``/events``: server-sent events (:mod:`.stream`): a state, then deltas;
- ``/state``: the state as JSON — what a page that applied every push holds (tests compare the two).

The console is an observer: it binds its ports when made (so a busy port fails at once, before the emulator
starts) and runs in daemon threads; nothing it does can stop or slow the run it watches.
"""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final

import msgspec
import structlog

from seglog_report.console.aggregator import Aggregator
from seglog_report.console.probe import StackProbe
from seglog_report.console.receiver import FeedReceiver
from seglog_report.console.stream import KEEPALIVE_SECONDS, PUSH_SECONDS, RESYNC, Broadcaster
from seglog_report.legend import legend
from seglog_report.model import GROUPS

log = structlog.get_logger("seglog.console")

#: Kernel send buffer of an event stream.
SEND_BUFFER_BYTES: Final = 256 * 1024


@functools.cache
def _asset(name: str) -> bytes:
    if name == "plotly.min.js":
        from plotly.offline import get_plotlyjs

        script: str = get_plotlyjs()
        return script.encode()
    text = resources.files("seglog_report.console").joinpath(name).read_text()
    if name == "page.html":
        # The page draws every marker and bar in the legend's styles (issue 21: the report's visual language).
        config = json.dumps({"legend": msgspec.to_builtins(legend()), "groups": list(GROUPS)}).replace("</", "<\\/")
        text = text.replace("__SEGLOG_CONFIG__", config)
    return text.encode()


_ASSETS = {"/": ("page.html", "text/html; charset=utf-8"), "/page.js": ("page.js", "text/javascript"),
           "/plotly.min.js": ("plotly.min.js", "text/javascript")}


class Console:
    """The live console.

    Args:
        host, port: where the page is served (port 0: any free one; see :attr:`url`).
        feed_port: the UDP port the feed is read on (0: any free one; see :attr:`feed_address`).
        probe: reads queue depths and pending snapshots from the stack (None: those panels stay empty).
        clock, region: the aggregator's (a seam, and the price table's region).
        push_seconds: the least time between two pushes to the pages.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, feed_port: int = 0,
                 probe: StackProbe | None = None, clock: Callable[[], float] = time.time,
                 region: str = "us-east-1", aggregator: Aggregator | None = None,
                 push_seconds: float = PUSH_SECONDS) -> None:
        self.aggregator = aggregator or Aggregator(clock=clock, region=region)
        self.broadcaster = Broadcaster(self.aggregator, interval=push_seconds)
        self.receiver = FeedReceiver(self.aggregator, port=feed_port)
        try:
            self.server = _Server((host, port), _Handler, console=self)
        except OSError:
            self.receiver.stop()
            raise
        self.probe = probe
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else str(host)
        return f"http://{shown}:{port}/"

    @property
    def feed_address(self) -> str:
        """What ``SEGLOG_CONSOLE_FEED`` must be for the emulator's processes to feed this console."""
        return self.receiver.address

    def start(self) -> Console:
        self.receiver.start()
        self._spawn("console-http", self.server.serve_forever)
        self._spawn("console-push", self.broadcaster.run, self._stop)
        if self.probe is not None:
            self._spawn("console-probe", self.probe.run, self._stop, self.aggregator.stack)
        log.info("console started", url=self.url, feed=self.feed_address)
        return self

    def watch(self, probe: StackProbe) -> None:
        """Start reading the stack with ``probe`` (when its resources are known only after the start)."""
        if self.probe is None:
            self.probe = probe
            if self._threads:
                self._spawn("console-probe", probe.run, self._stop, self.aggregator.stack)

    def _spawn(self, name: str, target: Callable[..., Any], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for subscriber in self.broadcaster.subscribers():
            subscriber.close()
        self.server.shutdown()
        self.server.server_close()
        self.receiver.stop()
        log.info("console stopped", url=self.url)

    def __enter__(self) -> Console:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, console: Console) -> None:
        self.console = console
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    #: A page that stops reading is given up after this long (a write that cannot proceed raises).
    timeout = 60.0

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            if path == "/events":
                self._events()
            elif path == "/state":
                state = self.server.console.broadcaster.state()
                self._send(HTTPStatus.OK, "application/json", msgspec.json.encode(state))
            elif path in _ASSETS:
                name, content_type = _ASSETS[path]
                self._send(HTTPStatus.OK, content_type, _asset(name))
            else:
                self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found: the console serves /, /events, /state\n")
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the page went away
        except Exception as exc:  # one request failing must not take the console down
            log.warning("console request failed", path=path, error=f"{type(exc).__name__}: {exc}")

    def _send(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=3600" if content_type == "text/javascript" else "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _events(self) -> None:
        broadcaster = self.server.console.broadcaster
        subscribed = broadcaster.subscribe()
        if subscribed is None:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "text/plain", b"too many console pages open\n")
            return
        subscriber, first = subscribed
        # A small send buffer: a page that stops reading blocks this thread (and fills its queue) after a
        # quarter megabyte, not after the several the kernel would otherwise hold for it.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        with structlog.contextvars.bound_contextvars(console_client=subscriber.id):
            log.info("console page connected", client=self.client_address[0])
            try:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(b"retry: 1000\n\n" + first)
                self.wfile.flush()
                while not subscriber.closed:
                    message = subscriber.take(KEEPALIVE_SECONDS)
                    if message is None:
                        if subscriber.closed:
                            break
                        message = b": keepalive\n\n"
                    elif message == RESYNC:
                        log.info("console page behind: sent a fresh state", dropped=subscriber.dropped)
                        message = broadcaster.resync()
                    self.wfile.write(message)
                    self.wfile.flush()
            finally:
                broadcaster.unsubscribe(subscriber)
                log.info("console page disconnected", dropped=subscriber.dropped, resyncs=subscriber.resyncs)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("console request", request=format % args)
