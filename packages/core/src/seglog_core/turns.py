"""Writers of one process take turns on a log, and hand each other the tail (issue 20).

Optimistic appends settle contention at the store: every writer puts at ``tail + 1``, one wins, the others
get the winner back (ALL_OLD) and go again. Between processes nothing cheaper exists. Within one process it
does: a lock. Sixteen threads appending to one log (a server with a thread per request, sharing one boto3
client) met at DynamoDB Local 0.9 times per append, and their goodput was 0.48-0.51x one writer's
(bench_contention, threads); queued here, each holding the tail the last one wrote, every put lands first time
and the goodput is one writer's (0.96-1.16x).

Timing, two threads of one process on log L::

    thread A                 Turns[L]                    thread B
      | take ------------->  | A holds                    |
      | put #7 ok            |  <------------------ take  | waits
      | leave (tail #7) -->  | B holds, tail #7           |
      |                      |  ---- tail #7 ----------->  | put #8 ok (no conflict; no read if B trusts #7)

What is handed over is a hint, never a promise: the tail a writer of the same store object last proved (by its
own write or read), with the time it proved it, so :meth:`EventLog._fresh` applies to it unchanged. A writer
that may not trust it (``EventLog.tail_ttl``: none when not told the retry horizon) reads the tail first, and
still writes after the hint's num whatever an eventually consistent read answers. A writer that holds a later
tail keeps its own. Writers in other processes still meet at the store, as before.

The turn is a re-entrant lock per log id, dropped when no writer of this process holds or awaits it. The
simulator gives each simulated process turns of its own, with locks its tasks wait on (its clients are greenlets
of one thread, which a threading lock would not separate): :class:`Turns` is per simulated process there, shared
here by default.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Hint:
    """A tail a writer proved: ``num`` is taken in ``segment``, proved at ``checked`` (epoch s)."""

    segment: int
    num: int
    checked: float


@dataclass(kw_only=True)
class Tail:
    """What one client knows of a log's tail: its current segment and, when known, the latest num in it."""

    segment: int
    num: int | None = None
    #: A num a failed conditional put proved taken: an eventually consistent Query may still return an
    #: older latest entry, and writing below this num would only conflict again.
    taken: int = -1
    #: When ``num`` was last proved the segment's tail (epoch s): by a read, or by a write at ``num`` itself.
    checked: float = 0.0

    def hint(self) -> Hint | None:
        """What to hand the next writer of this process: the num proved and when (None: none known)."""
        return None if self.num is None else Hint(segment=self.segment, num=self.num, checked=self.checked)

    @classmethod
    def adopting(cls, tail: Tail | None, hint: Hint | None) -> Tail | None:
        """The tail to take from ``hint`` when it is later than ``tail``; None: keep ``tail``."""
        if hint is None:
            return None
        if tail is not None and (hint.segment, hint.num) <= (tail.segment, -1 if tail.num is None else tail.num):
            return None
        taken = tail.taken if tail is not None and tail.segment == hint.segment else -1
        return cls(segment=hint.segment, num=hint.num, taken=taken, checked=hint.checked)


@dataclass(kw_only=True)
class Turn:
    """One log's turn: its lock, how many writers hold or await it, and the tail the last one left."""

    lock: AbstractContextManager[Any] = field(default_factory=threading.RLock)
    waiting: int = 0
    #: The store object the hint was proved against: a hint is handed only to writers of that same object.
    store: Any = None
    hint: Hint | None = None

    def hint_for(self, store: Any) -> Hint | None:
        return self.hint if self.store is store else None

    def leave_hint(self, store: Any, hint: Hint | None) -> None:
        if hint is None:
            return
        mine = self.hint_for(store)
        if mine is None or (hint.segment, hint.num) >= (mine.segment, mine.num):
            self.store, self.hint = store, hint


class Turns:
    """The turns of one process (or, in the simulator, of one simulated process).

    Args:
        lock: makes each log's lock, re-entrant (a seam: the simulator's tasks wait on a lock of its world).
    """

    def __init__(self, lock: Callable[[], AbstractContextManager[Any]] = threading.RLock) -> None:
        self._lock = lock
        self._guard = threading.Lock()
        self._turns: dict[uuid.UUID, Turn] = {}

    @contextmanager
    def take(self, log_id: uuid.UUID) -> Iterator[Turn]:
        """Hold ``log_id``'s turn for the block (waiting for the writer before, if any)."""
        with self._guard:
            turn = self._turns.get(log_id)
            if turn is None:
                turn = self._turns[log_id] = Turn(lock=self._lock())
            turn.waiting += 1
        try:
            with turn.lock:
                yield turn
        finally:
            with self._guard:
                turn.waiting -= 1
                if not turn.waiting:
                    del self._turns[log_id]

    def __len__(self) -> int:
        """Logs with a writer holding or awaiting their turn (0 when idle: nothing is kept)."""
        return len(self._turns)


#: The process's turns: every EventLog shares them unless given others.
PROCESS = Turns()
