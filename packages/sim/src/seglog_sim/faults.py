"""Which faults a seed injects, and where: every decision of DESIGN §7 drawn from the seed.

A seed first draws its *profile*: which fault kinds are on and how often each fires (so some seeds are calm and
some are storms, and every combination of kinds comes up across seeds). Then each decision point — a storage
call, a receive, an invocation's start, a named crash point, a client's request — asks :meth:`Faults.decide`,
which draws from a generator of the deciding task's own (seeded by the seed and the task's name), so a
decision depends on the task and how far it got, not on what other tasks did: disabling one fault leaves the
others where they were, which is what shrinking needs.

Every fault that fires gets an id, ``task#call:kind`` (``site:kind`` for a decision keyed by its site,
:meth:`Faults.decide_at`); a run can be limited to a set of ids (``only``), and the
shrinker searches for the smallest set that still fails.
"""

from __future__ import annotations

import math
import random
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from seglog_awsmodel.fault_sites import fires
from seglog_awsmodel.faults import FaultKind
from seglog_sim.world import Task

#: Per-decision probability ranges when a kind is on (drawn once per seed).
RATES: Final[dict[FaultKind, tuple[float, float]]] = {
    FaultKind.DDB_THROTTLE: (0.01, 0.08),
    FaultKind.DDB_5XX: (0.01, 0.05),
    FaultKind.DDB_TRANSACTION_CONFLICT: (0.1, 0.4),
    FaultKind.DDB_LOST_RESPONSE: (0.01, 0.06),
    FaultKind.STALE_READ: (0.2, 0.8),
    FaultKind.S3_ERROR: (0.01, 0.06),
    FaultKind.S3_LATENCY: (0.02, 0.1),
    FaultKind.SQS_ERROR: (0.01, 0.05),
    FaultKind.CRASH: (0.003, 0.02),
    FaultKind.WORKER_CRASH: (0.02, 0.1),
    FaultKind.PAUSE: (0.002, 0.01),
    FaultKind.DUPLICATE_DELIVERY: (0.05, 0.3),
    FaultKind.CLOCK_SKEW: (0.05, 0.3),
    FaultKind.MIXED_VERSION: (0.1, 0.5),
    FaultKind.LOST_RESPONSE: (0.05, 0.25),
    FaultKind.SUPERVISOR_RESTART: (0.005, 0.02),
    # Per stream invocation: the emulator's chaos rate (0.02), the demo's (half of it) and a plan's `all` at 0.05.
    FaultKind.POLLER_RESTART: (0.01, 0.05),
    FaultKind.DLQ: (1.0, 1.0),
    FaultKind.REDRIVE: (0.05, 0.2),
    # Per receive, as duplicate_delivery was before it meant the emulator's copy of a batch (issue 19).
    FaultKind.VISIBILITY_EXPIRY: (0.05, 0.3),
}
#: Kinds decided at a storage call, by service.
CALL_FAULTS: Final[dict[str, tuple[FaultKind, ...]]] = {
    "dynamodb": (FaultKind.DDB_THROTTLE, FaultKind.DDB_5XX, FaultKind.DDB_TRANSACTION_CONFLICT,
                 FaultKind.DDB_LOST_RESPONSE),
    "s3": (FaultKind.S3_ERROR, FaultKind.S3_LATENCY),
    "sqs": (FaultKind.SQS_ERROR,),
}
#: Task kinds that are Lambda invocations (they can crash, stall and time out).
INVOCATIONS: Final = frozenset({"api", "router", "worker", "retention"})


@dataclass(kw_only=True)
class Profile:
    """The fault kinds a seed turns on, each with its probability per decision."""

    rates: dict[FaultKind, float]

    @classmethod
    def draw(cls, rng: random.Random, kinds: Iterable[FaultKind], *, calm: float = 0.05,
             armed: Iterable[FaultKind] = ()) -> Profile:
        """Each of ``kinds`` on with probability 0.6; a ``calm`` share of seeds has no faults at all. Kinds in
        ``armed`` are on in every seed, calm ones included, at the rate drawn (the draws are the same as without
        them, so the other kinds stay as they were)."""
        armed = frozenset(armed)
        calm_seed = rng.random() < calm
        if calm_seed and not armed:
            return cls(rates={})
        rates: dict[FaultKind, float] = {}
        for kind in kinds:
            on = rng.random() < 0.6 and not calm_seed
            low, high = RATES[kind]
            rate = rng.uniform(low, high)
            if on or kind in armed:
                rates[kind] = rate
        return cls(rates=rates)


@dataclass(kw_only=True)
class Faults:
    """Decides faults for one seed's run and keeps what fired.

    Args:
        seed: the run's seed.
        profile: which kinds are on, how often.
        only: when given, only faults with these ids fire (a replay of a shrunk schedule).
        active: faults fire only while this is True (the driver turns it off for the liveness phase).
    """

    seed: int
    profile: Profile
    only: frozenset[str] | None = None
    active: bool = True
    fired: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    #: The world's clock, to note when each fault fired (None: not noted).
    clock: Callable[[], float] | None = None
    #: (simulated time, task name, kind) of each fault that fired, for the report's timeline.
    fired_at: list[tuple[float, str, str]] = field(default_factory=list)
    _rngs: dict[str, random.Random] = field(default_factory=dict)

    def rng(self, task: Task) -> random.Random:
        """The task's own generator, seeded by the run's seed and the task's name."""
        rng = self._rngs.get(task.name)
        if rng is None:
            rng = self._rngs[task.name] = random.Random(self.seed * 1_000_003 + zlib.crc32(task.name.encode()))
        return rng

    def on(self, kind: FaultKind) -> bool:
        return kind in self.profile.rates

    def decide(self, task: Task, kind: FaultKind, where: str = "") -> bool:
        """Whether ``kind`` fires for ``task`` now. Draws one number whether the kind is on or not, so a task's
        later decisions do not depend on which kinds are on."""
        # self.rng(task) without the call while the task has its generator: a storage call decides five times.
        draw = (self._rngs.get(task.name) or self.rng(task)).random()
        rate = self.profile.rates.get(kind)
        if rate is None or not self.active or draw >= rate:
            return False
        fault_id = f"{task.name}#{task.calls}:{kind}"
        if self.only is not None and fault_id not in self.only:
            return False
        self._fired(fault_id, task, kind, where)
        return True

    def decide_at(self, task: Task, kind: FaultKind, site: str) -> bool:
        """Whether ``kind`` fires at ``site`` by the model's rule (seglog_awsmodel.fault_sites, the emulator's
        too): the same site gets the same answer, in this run and in its replays, whichever task asks. A
        site must name whatever makes two decisions different — the poller's incarnation, where a restart starts
        the attempt count again (seglog_sim.pollers). The fault's id is the site's, so a shrunk schedule replays
        it."""
        rate = self.profile.rates.get(kind)
        if rate is None or not self.active:
            return False
        if not fires(self.seed, kind, site, rate):
            return False
        fault_id = f"{site}:{kind}"
        if self.only is not None and fault_id not in self.only:
            return False
        self._fired(fault_id, task, kind)
        return True

    def _fired(self, fault_id: str, task: Task, kind: FaultKind, where: str = "") -> None:
        self.fired.append(fault_id)
        self.counts[str(kind)] += 1
        if self.clock is not None:
            self.fired_at.append((self.clock(), task.name, str(kind)))
        if where:
            self.counts[f"{kind}@{where}"] += 1

    def amount(self, task: Task, low: float, high: float) -> float:
        """A fault's parameter, from the task's generator."""
        return self.rng(task).uniform(low, high)

    def stall(self, task: Task) -> float:
        """How long a paused invocation stalls before a call (FaultKind.PAUSE): 5-400 s, long enough to time out or be
        overtaken by a duplicate; an API invocation's, 0.5-400 s log-uniform, so half its stalls end before its
        timeout and it goes on after its client gave up on it and retried (issue 35: mutant rebase_own_copy)."""
        if task.kind != "api":
            return self.amount(task, 5.0, 400.0)
        return math.exp(self.amount(task, math.log(0.5), math.log(400.0)))


#: The Entries table's writes (an outage of ``entries``: the writes throttled, the reads answered).
_WRITES: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
#: The error each outage that refuses calls answers with (seglog_awsmodel.faults.AWS_ERRORS).
_OUTAGE_ERRORS: Final = {"sqs": "InternalFailure", "s3": "InternalError", "entries": "ThrottlingException"}
#: Seconds an S3 call takes more during an outage of ``s3-slow`` (a brownout: every call answered, slowly).
SLOW_S3: Final = (1.0, 4.0)


@dataclass(kw_only=True)
class Outage:
    """A seed's outage (:attr:`seglog_sim.scenario.Scenario.outage`): from ``start`` to ``end`` (simulated time)
    every call to ``what`` is refused — or, for ``s3-slow``, every S3 call is slow — whoever makes it. Part of the
    seed's scenario, not of its fault schedule: a replay of a shrunk schedule has it too."""

    what: str
    start: float
    end: float
    entries_table: str
    #: Calls refused (or slowed) so far.
    hit: int = 0

    def error(self, service: str, operation: str, params: dict[str, Any], now: float) -> str | None:
        """The error code that answers this call instead of the service, or None when the outage spares it."""
        if self.what not in _OUTAGE_ERRORS or not self.start <= now < self.end:
            return None
        if self.what == "entries":
            if service != "dynamodb" or operation not in _WRITES or self.entries_table not in _tables(params):
                return None
        elif service != self.what:
            return None
        self.hit += 1
        return _OUTAGE_ERRORS[self.what]

    def slows(self, service: str, now: float) -> bool:
        """Whether this call is slowed (by :data:`SLOW_S3`)."""
        if self.what != "s3-slow" or service != "s3" or not self.start <= now < self.end:
            return False
        self.hit += 1
        return True


def _tables(params: dict[str, Any]) -> set[str]:
    """The tables a DynamoDB call writes (a transaction's condition checks count: they use write capacity)."""
    if "TableName" in params:
        return {params["TableName"]}
    if "RequestItems" in params:
        return set(params["RequestItems"])
    return {str(op.get("TableName")) for item in params.get("TransactItems", []) for op in item.values()}
