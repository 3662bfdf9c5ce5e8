"""Bounded retries with exponential backoff and full jitter.

Full jitter (sleep a uniform random time in [0, min(cap, base * 2**attempt)]) spreads competing writers
apart best (AWS Architecture Blog, "Exponential Backoff And Jitter"). Randomness and sleeping are injected
so tests and the emulator can replay a seed and skip real waits.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How many attempts an operation gets and how long it waits between them.

    Attributes:
        max_attempts: attempts before giving up (the first try counts).
        base: the first backoff ceiling, in seconds.
        cap: the largest backoff ceiling, in seconds.
    """

    # Measured (bench/bench_contention.py --sweep, 16 writers on one log): base 5 ms starved writers and gave
    # up (up to 47 of 800 appends); base 20-50 ms with 20 attempts still gave up 7 times through LocalStack;
    # 30 attempts (about 10 s of patience at the 0.5 s cap) gave none.
    max_attempts: int = 30
    base: float = 0.03
    cap: float = 0.5
    rng: random.Random = field(default_factory=random.Random, compare=False)
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not 0 <= self.base <= self.cap:
            raise ValueError("need 0 <= base <= cap")

    def delay(self, attempt: int) -> float:
        """The backoff before attempt ``attempt + 1`` (attempt counts from 1)."""
        ceiling = min(self.cap, self.base * (2 ** min(attempt - 1, 30)))
        return self.rng.uniform(0.0, ceiling)

    def backoff(self, attempt: int) -> float:
        """Sleep the backoff for ``attempt`` and return how long it was."""
        pause = self.delay(attempt)
        if pause > 0:
            self.sleep(pause)
        return pause
