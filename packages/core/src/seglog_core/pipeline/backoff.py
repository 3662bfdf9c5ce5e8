"""How long a snapshot job that cannot be built yet stays hidden in the queue, receive by receive (DESIGN §5 as
amended by issue 18): the visibility backoff of deferred and blocked jobs, within SQS's and Lambda's limits."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

#: The longest a message may stay hidden, counted from its receive: "You can continue to call
#: ChangeMessageVisibility to extend the visibility timeout to the maximum allowed time. If you try to extend the
#: visibility timeout beyond the maximum, your request is rejected" — 12 hours (Amazon SQS API Reference,
#: ChangeMessageVisibility; Amazon SQS Developer Guide, sqs-visibility-timeout).
SQS_MAX_VISIBILITY: Final = 43_200
#: Lambda's longest function timeout: a hide is set at most this long after the poller received the message.
LAMBDA_MAX_TIMEOUT: Final = 900


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How long a deferred or blocked job hides, by the receive it is on: the one rule the worker follows and the
    template's SnapshotMaxReceiveCount figure (:meth:`to_dead_letter`, asserted by the tests) is computed from.

    Receive n's hide is drawn between half its ceiling and the ceiling (jitter), the ceiling::

        n <= patience:  min(cap, base * 2**(n-1))       0.5 s, 1 s, 2 s ... 900 s (a predecessor usually
                                                        completes within the first seconds; bench_pipeline)
        n >  patience:  min(longest, cap * 2**(n-patience))   1800 s, 3600 s, 7200 s, then 3 h on every receive

    A blocked job (only newer code helps) starts at ``cap``. ``longest`` stays under SQS's 12 hours from the
    receive, with a whole Lambda timeout to spare; each hide is a new ChangeMessageVisibility from *now*, and the
    next receive starts the 12 hours again.
    """

    base: float = 0.5
    cap: float = 900.0
    patience: int = 20
    longest: float = 10_800.0

    def __post_init__(self) -> None:
        if not 0 < self.cap <= self.longest <= SQS_MAX_VISIBILITY - LAMBDA_MAX_TIMEOUT:
            raise ValueError(f"backoff cap {self.cap} s and longest {self.longest} s must satisfy 0 < cap <= longest "
                             f"<= {SQS_MAX_VISIBILITY - LAMBDA_MAX_TIMEOUT} s (SQS hides a message at most 12 h from "
                             "its receive, and the hide is set up to a Lambda timeout after it): lower them")

    def ceiling(self, receive: int, *, blocked: bool = False) -> float:
        """The longest hide of the ``receive``-th receive (1-based)."""
        if receive > self.patience:
            return min(self.longest, self.cap * 2.0 ** min(receive - self.patience, 40))
        quick = min(self.cap, self.base * 2.0 ** min(max(receive - 1, 0), 40))
        return self.cap if blocked else quick

    def shortest(self, receive: int, *, blocked: bool = False) -> int:
        """The least hide :meth:`hide` draws for the ``receive``-th receive."""
        return max(1, int(self.ceiling(receive, blocked=blocked) / 2))

    def hide(self, receive: int, rng: random.Random, *, blocked: bool = False) -> int:
        """Seconds to hide the message on its ``receive``-th receive (whole seconds, as SQS takes them)."""
        ceiling = self.ceiling(receive, blocked=blocked)
        return max(1, int(rng.uniform(ceiling / 2, ceiling)))

    def waiting_long(self, receive: int) -> bool:
        """Past the patience: the job has waited over an hour and its hides now grow (the alarm's metric)."""
        return receive > self.patience

    def to_dead_letter(self, max_receive_count: int, *, blocked: bool = False) -> int:
        """The least seconds a job deferred (or blocked) on every receive takes to reach the DLQ: SQS moves it on
        the receive after ``max_receive_count``, so it hid after each of those receives."""
        return sum(self.shortest(n, blocked=blocked) for n in range(1, max_receive_count + 1))
