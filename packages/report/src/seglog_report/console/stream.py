"""Server-sent events: the console's push to its pages (WHATWG HTML, "Server-sent events").

A page connects to ``/events`` and gets one ``state`` event (everything the aggregator holds, as of the last
push), then a ``delta`` event at most every :data:`PUSH_SECONDS` while anything changes: the items added since
the last push, the window's ``low`` (the page drops items numbered below it), what is in flight and the panels.
Every push has a sequence number ``seq``; a page that sees a gap reconnects and starts again from a state.

Each page has its own queue of at most :data:`QUEUE_LIMIT` pushes. A page that reads too slowly (its queue is
full) loses the queued pushes and is sent a fresh ``state`` instead, when it next reads — drop and resync — so
a slow page never makes the console hold more than one queue's worth for it::

    pump ──delta 7──delta 8── ... ──delta 39── queue full: cleared, resync flagged
    page      (reading nothing)                              ──reads── state (seq 40) ──delta 41── ...
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from typing import Any, Final

import msgspec
import structlog

from seglog_report.console.aggregator import Aggregator

log = structlog.get_logger("seglog.console.stream")

PUSH_SECONDS: Final = 0.25
QUEUE_LIMIT: Final = 32
#: Pages served at once; more are refused (each holds a server thread and a queue).
MAX_SUBSCRIBERS: Final = 16
#: A comment line sent to an idle page this often, so a page that went away is noticed.
KEEPALIVE_SECONDS: Final = 15.0

_encoder = msgspec.json.Encoder()


def frame(event: str, data: Any, *, event_id: int | None = None) -> bytes:
    """One server-sent event: ``event:``, optional ``id:``, the JSON of ``data`` on ``data:`` lines, a blank
    line. JSON has no raw newlines, but a line break in ``data`` would end the field, so each line is its own
    ``data:`` field, which the page's EventSource joins back with newlines."""
    body = _encoder.encode(data).decode()
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    lines = "".join(f"data: {line}\n" for line in body.split("\n"))
    return (head + lines + "\n").encode()


RESYNC: Final = b""
"""What :meth:`Subscriber.take` returns when the page must be sent a fresh state."""


class Subscriber:
    """One page's queue of pushes, bounded: full, it is emptied and a resync is flagged."""

    def __init__(self, limit: int = QUEUE_LIMIT) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.limit = limit
        self._queue: deque[bytes] = deque()
        self._cond = threading.Condition()
        self._resync = False
        self.closed = False
        #: Pushes dropped for this page, and resyncs it was sent.
        self.dropped = 0
        self.resyncs = 0

    def offer(self, message: bytes) -> None:
        with self._cond:
            if self._resync:
                self.dropped += 1
            elif len(self._queue) >= self.limit:
                self.dropped += len(self._queue) + 1
                self._queue.clear()
                self._resync = True
                self.resyncs += 1
            else:
                self._queue.append(message)
            self._cond.notify()

    def take(self, timeout: float) -> bytes | None:
        """The next push, :data:`RESYNC`, or None when nothing came within ``timeout`` (or it was closed)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._queue or self._resync or self.closed, timeout):
                return None
            if self.closed:
                return None
            if self._resync:
                self._resync = False
                return RESYNC
            return self._queue.popleft()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)


class Broadcaster:
    """Pushes the aggregator's changes to every subscribed page, :data:`PUSH_SECONDS` apart."""

    def __init__(self, aggregator: Aggregator, *, interval: float = PUSH_SECONDS, limit: int = QUEUE_LIMIT,
                 max_subscribers: int = MAX_SUBSCRIBERS) -> None:
        self.aggregator = aggregator
        self.interval = interval
        self.limit = limit
        self.max_subscribers = max_subscribers
        self._lock = threading.Lock()
        self._subscribers: dict[str, Subscriber] = {}
        self._seq = 0
        self._sent_n = 0
        self._sent_version = -1

    def subscribe(self) -> tuple[Subscriber, bytes] | None:
        """A new page's queue and its first event (a state); None when too many pages are open."""
        with self._lock:
            if len(self._subscribers) >= self.max_subscribers:
                return None
            subscriber = Subscriber(self.limit)
            self._subscribers[subscriber.id] = subscriber
            return subscriber, self._state_frame()

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.pop(subscriber.id, None)
        subscriber.close()

    def resync(self) -> bytes:
        """A state event for a page that fell behind."""
        with self._lock:
            return self._state_frame()

    def state(self) -> dict[str, Any]:
        """What a page that applied every push so far holds (``/state``)."""
        with self._lock:
            return {**self.aggregator.state(upto=self._sent_n), "seq": self._seq}

    def _state_frame(self) -> bytes:
        state = {**self.aggregator.state(upto=self._sent_n), "seq": self._seq}
        return frame("state", state, event_id=self._seq)

    def pump(self) -> bool:
        """Push what changed since the last push, if anything did; whether something was pushed."""
        with self._lock:
            delta = self.aggregator.since(self._sent_n)
            if delta["v"] == self._sent_version:
                return False
            self._seq += 1
            delta["seq"] = self._seq
            self._sent_n, self._sent_version = delta["last"], delta["v"]
            message = frame("delta", delta, event_id=self._seq)
            subscribers = list(self._subscribers.values())
        for subscriber in subscribers:
            subscriber.offer(message)
        return True

    def run(self, stop: threading.Event) -> None:
        """Age the aggregator and push, every interval, until ``stop``; a failing push is logged, not fatal."""
        while not stop.wait(self.interval):
            try:
                self.aggregator.tick()
                self.pump()
            except Exception as exc:
                log.warning("console push failed", error=f"{type(exc).__name__}: {exc}")
                time.sleep(self.interval)

    def subscribers(self) -> list[Subscriber]:
        with self._lock:
            return list(self._subscribers.values())
