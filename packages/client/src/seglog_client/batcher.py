"""Batched edits: the edits a caller makes within a short window go to the API as one entry (issue 35).

Every request costs API Gateway's and Lambda's fees whatever it holds, so ten edits in one ``edits`` entry cost
about a tenth of ten entries. A :class:`Batcher` gathers the edits made to one sheet, cuts them in order into
batches the API takes (at most :data:`MAX_EDITS` edits, at most :data:`BATCH_BYTES` stored), and sends the
batches one after the other through :meth:`SeglogClient.append`, so each batch has the API's exactly-once protocol:

* every edit belongs to exactly one batch, and a batch has one entry id from the moment it is cut: a batch whose
  answer was lost (:class:`RetriesExhaustedError`, no credentials, anything but a refusal) stays at the head of the
  queue, and the next :meth:`Batcher.flush` sends it again with the same entry id, ``since`` and body; nothing
  after it is sent before it is acknowledged, so the log holds the edits in the order they were added;
* a refused batch (a 4xx: nothing of it was written) is dropped and its tickets carry the refusal, except
  422 ``batch_too_large``, which is split in two (each half a new entry id: the refused one was never stored) and
  sent again;
* a single edit, or one too large to share a batch, is sent as the plain entry it is.

Timing, with the default background timer (``window`` 50 ms, short enough that a person does not notice)::

    caller             batcher                      timer thread            API
    add(e1) ---------> open [e1], timer(window) --> .
    add(e2) ---------> open [e1 e2]                 .
                                                    fires: flush()
                                                    cut [e1 e2] as K1 ---> POST entries {edits, K1, since}
                                                                   <------ 200 position
    add(e3) ---------> open [e3], timer(window) --> ...

When the background flush leaves a batch whose outcome is unknown, the timer sends it again after 1 s, then
2, 4, ... up to 30 s, until it is acknowledged; after a refusal it sends the batches behind it at once.

``timer=None`` sends only on :meth:`Batcher.flush`, or on :meth:`Batcher.poll` once the oldest waiting edit is
``window`` old (by ``monotonic``): the simulator drives it so, without threads. A client coming back online with
200 queued edits sends them in two requests of 100.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol

import msgspec
import structlog

from seglog_client.entries import Edit, Edits, EntryBody
from seglog_client.errors import ApiError, OutcomeUnknownError, RetriesExhaustedError, SeglogClientError
from seglog_client.models import Appended, Position

if TYPE_CHECKING:
    from seglog_client.client import SeglogClient

log = structlog.get_logger("seglog.client")

#: The most edits the API takes in one entry (seglog_core.schema.MAX_EDITS; a test holds the two equal).
MAX_EDITS: Final = 100
#: The most bytes an ``edits`` body takes stored (seglog_core.schema.MAX_EDITS_BYTES): one 1 KB write.
BATCH_BYTES: Final = 900
#: Seconds an edit waits for others to share its request.
DEFAULT_WINDOW: Final = 0.05
#: Seconds before the background timer sends again a batch whose outcome is unknown, doubling from the first to
#: the last while it keeps failing (the client's own retries, with their backoff, came before each).
RESEND_AFTER: Final = (1.0, 30.0)
#: Bytes of a stored batch around its edits (msgpack array headers), counted before the first edit.
_FRAME: Final = 8
#: The size bound of an edit that can share no batch.
_ALONE: Final = 1 << 62
_MSGPACK: Final = msgspec.msgpack.Encoder()


def stored_size_bound(edit: Edit) -> int:
    """At least the bytes ``edit`` takes in a stored batch, where it is ``[type, version, [fields...]]`` in msgpack
    with the cell as row and column numbers: here the same with the reference as text, whose letters, digits and
    length byte take at least as much as the two numbers bar one byte (``DX1``: 4 bytes, row 1 and column 128: 4),
    hence the 1. The values encode alike (msgpack both). An edit msgpack cannot hold (an integer past 64 bits)
    counts as too large to share a batch: it goes alone, and only it is refused."""
    fields = [getattr(edit, name) for name in edit.__struct_fields__]
    try:
        return len(_MSGPACK.encode([type(edit).__struct_config__.tag, 1, fields])) + 1
    except OverflowError:
        return _ALONE


class Timer(Protocol):
    def cancel(self) -> None: ...


def thread_timer(delay: float, action: Callable[[], None]) -> Timer:
    """Run ``action`` in a daemon thread after ``delay`` seconds."""
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer


@dataclass(eq=False)
class Ticket:
    """One edit given to a batcher: once sent, the batch's entry id, the edit's index in it, and the answer (or
    the refusal that dropped its batch)."""

    edit: Edit
    entry_id: uuid.UUID | None = None
    index: int = 0
    appended: Appended | None = None
    error: SeglogClientError | None = None
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> bool:
        """Acknowledged or refused (a batch still being retried is not done)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> Appended:
        """The answer of the edit's batch, waiting up to ``timeout`` seconds; raises what refused it."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"edit {self.edit!r} not acknowledged within {timeout} s; it stays queued")
        if self.error is not None:
            raise self.error
        assert self.appended is not None
        return self.appended


@dataclass(eq=False)
class _Batch:
    """Edits cut into one entry: its id and body never change; ``since`` and ``first_try`` once it was tried."""

    tickets: list[Ticket]
    entry_id: uuid.UUID
    since: Position | None = None
    first_try: float | None = None

    @property
    def body(self) -> EntryBody:
        edits = [t.edit for t in self.tickets]
        return edits[0] if len(edits) == 1 else Edits(edits=edits)


class Batcher:
    """Gathers the edits made to one sheet into batched entries; see the module docstring.

    Args:
        client: sends each batch (its retries, ``since`` and hooks apply).
        log_id: the sheet.
        window: seconds the first waiting edit waits for others.
        max_edits, max_bytes: a batch's limits (the API's by default).
        timer: schedules the flush a window after the first waiting edit (a daemon thread by default); None:
            sends only from :meth:`poll` and :meth:`flush`.
        monotonic: the clock of the window.
        ids: makes each batch's entry id when it is cut (random UUIDs; the simulator's are seeded, so a seed's
            history is the same in every process).
    """

    def __init__(self, client: SeglogClient, log_id: uuid.UUID | str, *, window: float = DEFAULT_WINDOW,
                 max_edits: int = MAX_EDITS, max_bytes: int = BATCH_BYTES,
                 timer: Callable[[float, Callable[[], None]], Timer] | None = thread_timer,
                 monotonic: Callable[[], float] = time.monotonic,
                 ids: Callable[[], uuid.UUID] = uuid.uuid4) -> None:
        from seglog_client.client import as_uuid

        if not 1 <= max_edits <= MAX_EDITS:
            raise ValueError(f"max_edits must be 1..{MAX_EDITS}, got {max_edits}")
        self.client, self.log_id = client, as_uuid(log_id)
        self.window, self.max_edits, self.max_bytes = window, max_edits, max_bytes
        self._timer, self._monotonic, self._ids = timer, monotonic, ids
        self._open: list[tuple[Ticket, int]] = []  # edits not yet cut, with their size bound
        self._opened_at = 0.0
        self._scheduled: Timer | None = None
        self._queue: deque[_Batch] = deque()  # cut, not yet acknowledged: sent from the head
        self._lock = threading.Lock()  # guards _open, _queue
        self._sending = threading.Lock()  # one sender at a time: batches go in the order they were cut
        self._failures = 0  # background flushes in a row that left a batch whose outcome is unknown

    @property
    def pending(self) -> int:
        """Edits added and not yet acknowledged or refused."""
        with self._lock:
            return len(self._open) + sum(len(b.tickets) for b in self._queue)

    def add(self, edit: Edit) -> Ticket:
        """Queue ``edit``; it is sent within ``window`` with the edits added around it, after those added before.
        Never sends on the caller's thread: the timer does (or, without one, :meth:`poll` and :meth:`flush`)."""
        ticket = Ticket(edit=edit)
        with self._lock:
            if not self._open:
                self._opened_at = self._monotonic()
            self._open.append((ticket, stored_size_bound(edit)))
            if self._timer is not None and self._scheduled is None:
                self._scheduled = self._timer(self.window, self._on_timer)
        return ticket

    def poll(self) -> list[Appended]:
        """:meth:`flush` once the oldest waiting edit is ``window`` old (else nothing): how a batcher without a timer
        keeps the window."""
        with self._lock:
            due = bool(self._open) and self._monotonic() - self._opened_at >= self.window
        return self.flush() if due else []

    def flush(self) -> list[Appended]:
        """Send every edit added so far, in batches, in order; the answers of the batches this call sent.

        Raises:
            RetriesExhaustedError (and any failure but a refusal): the head batch stays queued with its entry id,
                ``since`` and body; the next flush resends it first.
            ApiError: the head batch was refused (nothing of it written); its tickets hold the error, the batches
                after it stay queued.
        """
        with self._sending:
            with self._lock:
                self._cut()
            sent: list[Appended] = []
            while True:
                with self._lock:
                    if not self._queue:
                        return sent
                    batch = self._queue[0]
                sent.append(self._send(batch))

    def _send(self, batch: _Batch) -> Appended:
        """Send the head batch until it is acknowledged; a ``batch_too_large`` refusal sends its halves instead."""
        while True:
            if batch.since is None:
                batch.since = self.client.position(self.log_id)  # None: the client asks the API once
            try:
                appended = self.client.append(self.log_id, batch.body, entry_id=batch.entry_id, since=batch.since,
                                              first_try=batch.first_try)
            except ApiError as refusal:
                with self._lock:
                    self._queue.popleft()
                    if refusal.code == "batch_too_large" and len(batch.tickets) > 1:
                        half = len(batch.tickets) // 2  # the refused entry was never stored: new ids are safe
                        self._queue.extendleft([_Batch(batch.tickets[half:], self._ids()),
                                             _Batch(batch.tickets[:half], self._ids())])
                        log.info("batch split", log_id=str(self.log_id), entry_id=str(batch.entry_id),
                                 edits=len(batch.tickets), size=refusal.details.get("size"))
                        batch = self._queue[0]
                        continue
                self._settle(batch, error=refusal)
                raise
            except OutcomeUnknownError as exc:
                # Past the retry horizon: resending could store the batch twice, so it is not resent.
                with self._lock:
                    self._queue.popleft()
                self._settle(batch, error=exc)
                raise
            except RetriesExhaustedError as exc:
                # The outcome is unknown: the batch stays at the head, resent with the same id, since and body.
                batch.since, batch.first_try = exc.since or batch.since, exc.first_try or batch.first_try
                raise
            with self._lock:
                self._queue.popleft()
            self._settle(batch, appended=appended)
            log.debug("batch appended", log_id=str(self.log_id), entry_id=str(batch.entry_id),
                      edits=len(batch.tickets), num=appended.num)
            return appended

    @staticmethod
    def _settle(batch: _Batch, *, appended: Appended | None = None, error: SeglogClientError | None = None) -> None:
        for index, ticket in enumerate(batch.tickets):
            ticket.entry_id, ticket.index, ticket.appended, ticket.error = batch.entry_id, index, appended, error
            ticket._done.set()

    def _cut(self) -> None:
        """Cut the waiting edits, in order, into batches within the limits (lock held)."""
        current: list[Ticket] = []
        size = _FRAME
        for ticket, bound in self._open:
            if current and (len(current) == self.max_edits or size + bound > self.max_bytes):
                self._queue.append(_Batch(current, self._ids()))
                current, size = [], _FRAME
            current.append(ticket)
            size += bound
        if current:
            self._queue.append(_Batch(current, self._ids()))
        self._open = []
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None

    def _on_timer(self) -> None:
        """The background flush. A refused batch (or one past the retry horizon) is settled on its tickets and the
        batches after it go on at once; a batch whose outcome is unknown stays at the head and the timer tries
        again after :data:`RESEND_AFTER` (doubling while it keeps failing), so queued edits are not left waiting
        for the caller's next add or flush (a gap the issue 35 closing note named)."""
        with self._lock:
            self._scheduled = None
        while True:
            try:
                self.flush()
            except (ApiError, OutcomeUnknownError) as exc:
                log.warning("batch refused", log_id=str(self.log_id), error=type(exc).__name__, detail=str(exc),
                            pending=self.pending)
                continue
            except SeglogClientError as exc:
                self._failures += 1
                first, last = RESEND_AFTER
                delay = min(last, first * 2 ** (self._failures - 1))
                log.warning("batch not sent: trying again", log_id=str(self.log_id), error=type(exc).__name__,
                            detail=str(exc), pending=self.pending, retry_in=delay)
                with self._lock:
                    if self._timer is not None and self._scheduled is None:
                        self._scheduled = self._timer(delay, self._on_timer)
                return
            self._failures = 0
            return

    def close(self) -> None:
        """Send what is waiting (see :meth:`flush`)."""
        self.flush()

    def __enter__(self) -> Batcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
