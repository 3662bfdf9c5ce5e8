"""Loop: a step run again and again on a thread of its own until stopped — how the chaos run's watchers and
writers keep going beside it."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


class Loop:
    """Calls ``step`` on a thread of its own, ``interval`` seconds apart (0: back to back), until :meth:`stop`,
    which waits for the step under way. A step that raises is tried again at the next turn (a throttled read, a
    request the client gave up on)."""

    def __init__(self, step: Callable[[], object], *, interval: float, name: str) -> None:
        self._step = step
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(Exception):
                self._step()
            self._stopping.wait(self._interval)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
