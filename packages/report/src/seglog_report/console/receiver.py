"""FeedReceiver: the console's end of the feed — JSON datagrams on a UDP port, into the aggregator.

The emulator's processes send selected log events there (``seglog_emulator.logfeed``); their address is what
``SEGLOG_CONSOLE_FEED`` is set to. One thread reads; a datagram that is not a JSON object is counted and
dropped. The receive buffer is made large so that a burst (a campaign's supervisor restarting, every worker
ending at once) waits in the kernel rather than being lost while the aggregator holds its lock.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Final

import structlog

from seglog_report.console.aggregator import Aggregator

log = structlog.get_logger("seglog.console.feed")

RECEIVE_BUFFER_BYTES: Final = 8 * 1024 * 1024
MAX_DATAGRAM: Final = 65536


class FeedReceiver:
    """Binds ``host:port`` (0: any free port) at once; :meth:`start` reads in a thread until :meth:`stop`."""

    def __init__(self, aggregator: Aggregator, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.aggregator = aggregator
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with contextlib.suppress(OSError):  # the system's maximum is lower: keep its default
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        self.socket.bind((host, port))
        self.socket.settimeout(0.5)
        self.host, self.port = self.socket.getsockname()[:2]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.datagrams = 0

    @property
    def address(self) -> str:
        """``host:port``: the value of ``SEGLOG_CONSOLE_FEED`` for the processes that feed this console."""
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="console-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.socket.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.socket.recv(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError as exc:
                if not self._stop.is_set():
                    log.warning("console feed read failed", error=str(exc))
                return
            self.datagrams += 1
            try:
                event = json.loads(data)
            except ValueError:
                event = None  # counted as malformed below
            self.aggregator.ingest(event)
