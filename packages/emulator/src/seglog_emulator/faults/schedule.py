"""Seeded, replayable fault decisions (DESIGN §7).

Each decision is a pure function of (seed, kind, key), the model's rule (seglog_awsmodel.fault_sites, which the
simulator's poller_restart shares); further draws with other salts give the parameters. No RNG stream is shared,
so which thread asks first changes nothing: the same seed and the same decision sites give the same faults, in
any interleaving, and a run is replayed from its seed alone.

The key names the decision site, and must be stable across runs: ``f"sqs:{message_id}:{attempt}"``,
``f"invoke:{message_id}:{attempt}"``, ``f"poller:{name}:{batch_no}"``. A site asked about twice gets the same
answer twice (and is recorded twice): to roll again, change the key (the attempt number, a counter).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seglog_awsmodel.fault_sites import draw, fires
from seglog_awsmodel.faults import AMOUNTS, ERROR_CODES, FaultKind
from seglog_emulator import jsonlog
from seglog_emulator.faults.plan import FaultPlan

log = jsonlog.get_logger("seglog.emulator.faults")


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One fault to inject at one site, with its parameters.

    Attributes:
        amount: the kind's amount (``kinds.AMOUNTS`` names it: ``latency_ms``, ``delay_ms``, ``after_ms``,
            ``copies``, ``items_behind``), or ``None`` for kinds without one.
        crash_point: for worker_crash, the named point to kill the worker at.
        error_code, http_status: for error kinds, AWS's error code and its HTTP status.
    """

    kind: FaultKind
    key: str
    amount: int | None = None
    crash_point: str | None = None
    error_code: str | None = None
    http_status: int | None = None

    @property
    def params(self) -> dict[str, Any]:
        """The parameters by name, as the log records them."""
        params: dict[str, Any] = {}
        if self.amount is not None:
            params[AMOUNTS[self.kind][0]] = self.amount
        if self.crash_point is not None:
            params["crash_point"] = self.crash_point
        if self.error_code is not None:
            params["error_code"] = self.error_code
            params["http_status"] = self.http_status
        return params


@dataclass(frozen=True, kw_only=True)
class InjectedFault:
    """One entry of the injection log: what fired where, and when (the schedule's clock)."""

    kind: FaultKind
    key: str
    params: dict[str, Any]
    at: float


class FaultSchedule:
    """The decisions of one :class:`FaultPlan`, and the thread-safe log of the faults injected.

    Args:
        plan: which kinds fire, how often, and the seed.
        clock: the time recorded with each injected fault (seconds).
        active: asked before every decision; while it answers False nothing fires (a chaos run stops its
            faults this way before it waits for quiescence).
        sink: also given every fault recorded (the emulator appends them to a file its processes share).
        incarnation: how many times this process (by name) was started before in this run. Sites whose key
            holds process-local counters (a stream batch's attempt number restarts at 1 in a new poller) add it,
            so no decision repeats deterministically across a restart: before, the same poller_restart fired
            at the same batch in every new process (17 restarts in 4 minutes, snapshots frozen, found by
            ``./dev emulate --faults all --rate 0.05 --seed 7`` under a steady writer).
    """

    def __init__(self, plan: FaultPlan, *, clock: Callable[[], float] = time.time,
                 active: Callable[[], bool] | None = None,
                 sink: Callable[[InjectedFault], None] | None = None, incarnation: int = 0) -> None:
        self.plan = plan
        self.incarnation = incarnation
        self._clock = clock
        self._active = active
        self._sink = sink
        self._lock = threading.Lock()
        self._log: list[InjectedFault] = []

    def peek(self, kind: FaultKind, key: str, *, points: Sequence[str] = ()) -> Decision | None:
        """The decision for ``kind`` at site ``key``, without recording it. ``points``: the crash points of the
        function at the site, which a crash kind draws from (those of them the plan names, if it names any)."""
        spec = self.plan.specs.get(kind)
        if spec is None or (self._active is not None and not self._active()):
            return None
        if not fires(self.plan.seed, kind, key, spec.rate):
            return None
        amount = crash_point = error_code = status = None
        if spec.amount is not None:
            low, high = spec.amount
            amount = low + self._draw(kind, key, "amount") % (high - low + 1)
        choices = [p for p in points if not spec.crash_points or p in spec.crash_points]
        if kind is FaultKind.WORKER_CRASH and not choices:
            return None  # nothing to crash at in this function
        if choices:
            crash_point = choices[self._draw(kind, key, "crash_point") % len(choices)]
        codes = ERROR_CODES.get(kind)
        if codes:
            error_code, status = codes[self._draw(kind, key, "code") % len(codes)]
        return Decision(kind=kind, key=key, amount=amount, crash_point=crash_point, error_code=error_code,
                        http_status=status)

    def decide(self, kind: FaultKind, key: str, *, points: Sequence[str] = ()) -> Decision | None:
        """The decision for ``kind`` at site ``key`` (``None``: no fault); a fault returned is recorded."""
        decision = self.peek(kind, key, points=points)
        if decision is not None:
            self.record(decision)
        return decision

    def record(self, decision: Decision) -> None:
        """Add ``decision`` to the log (``decide`` does; call it for a peeked decision acted on later)."""
        entry = InjectedFault(kind=decision.kind, key=decision.key, params=decision.params, at=self._clock())
        with self._lock:
            self._log.append(entry)
        if self._sink is not None:
            self._sink(entry)
        log.info("fault injected", fault=str(decision.kind), key=decision.key, seed=self.plan.seed,
                 **decision.params)

    def injected(self) -> list[InjectedFault]:
        """Every fault recorded so far, in the order recorded."""
        with self._lock:
            return list(self._log)

    def fingerprint(self) -> list[tuple[str, str, tuple[tuple[str, Any], ...]]]:
        """The recorded faults without their times, sorted: equal for two runs that injected the same faults
        whatever order their threads asked in."""
        return sorted((str(f.kind), f.key, tuple(sorted(f.params.items()))) for f in self.injected())

    def summary(self) -> dict[FaultKind, int]:
        """How many faults of each kind were recorded: every kind of the plan, in FaultKind order."""
        counts = Counter(f.kind for f in self.injected())
        return {kind: counts[kind] for kind in FaultKind if kind in self.plan.specs or counts[kind]}

    def _draw(self, kind: FaultKind, key: str, salt: str) -> int:
        return draw(self.plan.seed, kind, key, salt)
