"""What the simulated services' tests share."""

from __future__ import annotations


class ManualClock:
    """Simulated time the test moves by hand (``clock.now += 30``)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
