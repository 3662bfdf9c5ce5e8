"""Bounded retries with exponential backoff and full jitter, never past the deadline of the work under way.

Full jitter (sleep a uniform random time in [0, min(cap, base * 2**attempt)]) spreads competing writers
apart best (AWS Architecture Blog, "Exponential Backoff And Jitter"). Randomness and sleeping are injected
so tests and the emulator can replay a seed and skip real waits.

The deadline: a Lambda handler sets it at entry from its context (``get_remaining_time_in_millis``, AWS Lambda
Developer Guide, python-context) with :func:`deadline`; every :class:`RetryPolicy` reads it, so no retry starts
that could not end before the function's time limit (a retry past it would be killed mid-request, and its work
given up for a whole visibility timeout). Outside a handler (the CLI, tests) there is none.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import structlog

from seglog_core import errors

log = structlog.get_logger("seglog.retry")

#: Seconds left before the time limit of the invocation running in this context, as a function (None: no limit).
_DEADLINE: ContextVar[Callable[[], float] | None] = ContextVar("seglog_deadline", default=None)


@contextlib.contextmanager
def deadline(remaining: Callable[[], float] | None) -> Iterator[None]:
    """Within the block, retries end before ``remaining()`` reaches zero (``None``: no deadline)."""
    token = _DEADLINE.set(remaining)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_left() -> float | None:
    """Seconds before the deadline set by :func:`deadline`, or None outside one."""
    remaining = _DEADLINE.get()
    return None if remaining is None else remaining()


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How many attempts an operation gets and how long it waits between them.

    Attributes:
        max_attempts: attempts before giving up (the first try counts).
        base: the first backoff ceiling, in seconds.
        cap: the largest backoff ceiling, in seconds.
        reserve: seconds a try needs before the deadline: no retry starts whose backoff ends closer to it.
        remaining: seconds left before the deadline (None: none); by default the one :func:`deadline` set.
    """

    # Measured (bench/bench_contention.py --sweep, 16 writers on one log): base 5 ms starved writers and gave
    # up (up to 47 of 800 appends); base 20-50 ms with 20 attempts still gave up 7 times through LocalStack;
    # 30 attempts (about 10 s of patience at the 0.5 s cap) gave none.
    max_attempts: int = 30
    base: float = 0.03
    cap: float = 0.5
    reserve: float = 1.0
    rng: random.Random = field(default_factory=random.Random, compare=False)
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    remaining: Callable[[], float | None] = field(default=seconds_left, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not 0 <= self.base <= self.cap:
            raise ValueError("need 0 <= base <= cap")

    def delay(self, attempt: int) -> float:
        """The backoff before attempt ``attempt + 1`` (attempt counts from 1)."""
        ceiling = min(self.cap, self.base * (2 ** min(attempt - 1, 30)))
        return self.rng.uniform(0.0, ceiling)

    def pause(self, attempt: int) -> float | None:
        """The backoff before attempt ``attempt + 1``, or None when there is no such attempt: ``max_attempts`` are
        spent, or the backoff would end less than ``reserve`` seconds before the deadline."""
        if attempt >= self.max_attempts:
            return None
        pause = self.delay(attempt)
        left = self.remaining()
        if left is not None and left - pause < self.reserve:
            return None
        return pause

    def backoff(self, attempt: int) -> float:
        """Sleep the backoff for ``attempt`` and return how long it was.

        Raises:
            DeadlineError: the next attempt could not end before the deadline; the caller's loop ends here.
        """
        pause = self.delay(attempt)
        left = self.remaining()
        if left is not None and left - pause < self.reserve:
            raise errors.DeadlineError(left, attempt)
        if pause > 0:
            self.sleep(pause)
        return pause


def call_with_retries[T](policy: RetryPolicy, call: Callable[[], T], *, what: str, retry_unknown: bool) -> T:
    """Run ``call``, retrying retryable store errors (throttles, 5xx, lost connections) within ``policy``.

    A failure that may have been applied (``outcome_unknown``: a write whose answer was lost) is retried only when
    ``retry_unknown`` says repeating the call is safe. A retry of a conditional write whose first try was applied
    fails its own condition: the :class:`~seglog_core.errors.ItemExistsError` then carries
    ``after_unknown_outcome`` so the caller can tell "someone else got there" from "maybe we did".

    Raises:
        StoreError: the last failure, when it is not retryable or the attempts or the time ran out.
    """
    attempt, unknown = 1, False
    while True:
        try:
            return call()
        except errors.ItemExistsError as exc:
            exc.after_unknown_outcome = unknown
            raise
        except errors.StoreError as exc:
            maybe_applied = bool(getattr(exc, "outcome_unknown", False))
            if not exc.retryable or (maybe_applied and not retry_unknown):
                if isinstance(exc, errors.TransactionCancelledError):  # a transaction's own conditions, as above
                    exc.after_unknown_outcome = unknown
                raise
            pause = policy.pause(attempt)
            if pause is None:
                log.warning("store retries spent", what=what, tries=attempt, code=exc.code,
                            seconds_left=policy.remaining())
                raise
            log.info("store retry", what=what, tries=attempt, code=exc.code, pause=round(pause, 3))
            unknown = unknown or maybe_applied
            if pause > 0:
                policy.sleep(pause)
            attempt += 1
