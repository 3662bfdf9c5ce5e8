"""Chaos coverage by design (issue 19, point 6): each run of a campaign arms what the earlier runs did not reach.

A campaign should reach every named crash point (the snapshot worker's six and the stream router's, DESIGN §7,
§10.4) and fire every fault kind its plan switches on. Drawn at default rates, five runs did not: ``seglog chaos
--seed 1000 --runs 5 --faults all`` never hit after_root, and fired poller_restart, supervisor_restart and
s3_latency once each. So a campaign keeps what its runs reached — the crash points their logs show
(``RunReport.crash_points_hit``) and the kinds their fault logs recorded (``RunReport.faults``) — in a
:class:`Coverage`, and :meth:`Coverage.arm` builds the next run's plan from the base plan:

* a kind no run fired fires at :data:`TARGET_RATES` (or at its own rate, when that is higher);
* worker crash points no run hit: worker_crash drawing only from those points, at :data:`WORKER_CRASH_PER_POINT`
  for each (at most :data:`WORKER_CRASH_MOST`; that much for points a snapshot passes once, :data:`ONCE_PER_SNAPSHOT`);
* router_after_send not hit: router_crash_after_send at its target rate.

The first run (nothing reached yet, nothing known) runs the base plan, unless the campaign names targets of its
own (``seglog chaos --target``). The plan is a pure function of (base plan, run seed, missed names) and draws
nothing, so a replayed campaign gives the same plans where its runs reach the same, and one run replays from
its seed with ``--target`` naming what it armed for (:func:`target_args`). Each run's report keeps its
:class:`Target` list: what it armed, at which rate instead of which, and the names it armed for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from seglog_awsmodel.faults import EMULATED, FaultKind
from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS
from seglog_emulator.errors import FaultPlanError
from seglog_emulator.faults.plan import FaultPlan

#: The rate a kind fires at in a run that targets it (worker_crash: when none of its points is missed; see
#: below). Each is high enough that one run of ``seglog chaos``'s default workload (2 sheets, 3 clients, 15
#: edits) fires it with high probability, given how many decision sites such a run has for it (counted from the
#: faults that fired at DEFAULT_RATES): tens of deliveries and invocations, about ten ticks, one dlq decision,
#: hundreds of DynamoDB calls but only a handful of eventually consistent "latest item" queries and
#: transactions, about ten distinct S3 calls. None is so high that the run stops making progress while faults
#: are on.
TARGET_RATES: Final[dict[FaultKind, float]] = {
    # Decided per SQS delivery, invocation or stream batch: tens of sites in a run.
    FaultKind.DUPLICATE_DELIVERY: 0.4, FaultKind.VISIBILITY_EXPIRY: 0.4, FaultKind.REORDER: 0.4,
    FaultKind.WORKER_CRASH: 0.6, FaultKind.FUNCTION_TIMEOUT: 0.2, FaultKind.ROUTER_CRASH_AFTER_SEND: 0.5,
    FaultKind.POLLER_RESTART: 0.3, FaultKind.CLOCK_SKEW: 0.4, FaultKind.MIXED_VERSION: 0.5,
    # Per invocation of any function; it counts only where the invocation made its drawn number of calls.
    FaultKind.CRASH_AFTER_CALL: 0.2,
    # Per tick of the run's clock (about ten), or once per run.
    FaultKind.SUPERVISOR_RESTART: 0.5, FaultKind.REDRIVE: 0.7, FaultKind.DLQ: 1.0,
    # Per call: hundreds of DynamoDB calls and client requests, few transactions, stale-read and S3 sites.
    FaultKind.DDB_THROTTLE: 0.06, FaultKind.DDB_5XX: 0.06, FaultKind.DDB_LOST_RESPONSE: 0.08,
    FaultKind.LOST_RESPONSE: 0.1, FaultKind.DDB_TRANSACTION_CONFLICT: 0.6, FaultKind.STALE_READ: 0.8,
    FaultKind.S3_ERROR: 0.3, FaultKind.S3_LATENCY: 0.3,
    # Per call to another service: seglog's router's SendMessageBatch, once per stream batch.
    FaultKind.AWS_ERROR: 0.3,
}
#: worker_crash's rate in a run that targets crash points, for each point it targets: a run has only tens of
#: snapshot worker invocations, each armed with one point, and an armed point is reached only where the job
#: gets that far (after_root only when it completes a snapshot first): at the default 0.3 over six points, five
#: runs of seed 2000 reached after_claim once, in the last.
WORKER_CRASH_PER_POINT: Final = 0.4
#: At most this share of the worker's invocations is armed, so that jobs still complete while faults are on.
WORKER_CRASH_MOST: Final = 0.9
#: Crash points a snapshot passes once: the crash comes after its root is set, and the retry skips the point, so
#: arming it hard cannot keep a job from completing. Armed alone they get :data:`WORKER_CRASH_MOST`: after_root
#: is reached only by the few invocations that set a root (a batch's first job decides), and at 0.4 the CI
#: campaign (seed 1000) needed three targeted runs to reach it, the last one but one.
ONCE_PER_SNAPSHOT: Final = frozenset({"after_root"})
#: Every named crash point, in protocol order: the snapshot worker's, then the stream router's.
CRASH_POINT_NAMES: Final = (*WORKER_CRASH_POINTS, ROUTER_AFTER_SEND)


@dataclass(frozen=True, kw_only=True)
class Target:
    """One kind a run arms harder than the base plan, and why.

    Attributes:
        kind: the kind armed.
        rate: its rate in the run; ``base_rate`` the base plan's.
        crash_points: for worker_crash, the only points it draws from in the run.
        missed: the crash points and kinds no earlier run of the campaign reached, that this target is for.
    """

    kind: FaultKind
    rate: float
    base_rate: float
    crash_points: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "rate": self.rate, "base_rate": self.base_rate,
                "crash_points": list(self.crash_points), "missed": list(self.missed)}


@dataclass
class Coverage:
    """What a campaign's runs reached so far, and the plan that arms the rest.

    Args:
        targets: what the first run arms for (crash point and kind names, :func:`parse_targets`); later runs
            arm for what no run reached.
    """

    targets: frozenset[str] = frozenset()
    runs: int = 0
    crash_points: set[str] = field(default_factory=set)
    kinds: set[FaultKind] = field(default_factory=set)

    def add(self, crash_points_hit: Mapping[str, int], faults: Mapping[str, int]) -> None:
        """Count one run: the crash points its log shows and the kinds its fault log recorded."""
        self.runs += 1
        self.crash_points.update(p for p, n in crash_points_hit.items() if n)
        self.kinds.update(FaultKind(k) for k, n in faults.items() if n and k in FaultKind)

    def missed(self, plan: FaultPlan) -> frozenset[str]:
        """The names the next run arms for: before any run the campaign's own targets, then what ``plan`` could
        reach and no run reached."""
        if not self.runs:
            return self.targets
        reached = self.crash_points | {str(k) for k in self.kinds}
        return frozenset(reachable(plan)) - reached

    def arm(self, plan: FaultPlan) -> tuple[FaultPlan, list[Target]]:
        """The plan of the next run: ``plan`` arming what :meth:`missed` names (:func:`armed_plan`)."""
        return armed_plan(plan, self.missed(plan))


def reachable(plan: FaultPlan) -> tuple[str, ...]:
    """The crash points and kinds ``plan`` can reach, in catalogue order: its kinds that can fire, worker_crash's
    points, and router_after_send when router_crash_after_send can fire."""
    names = [str(kind) for kind in EMULATED if plan.enabled(kind)]
    if plan.enabled(FaultKind.WORKER_CRASH):
        names += plan.specs[FaultKind.WORKER_CRASH].crash_points
    if plan.enabled(FaultKind.ROUTER_CRASH_AFTER_SEND):
        names.append(ROUTER_AFTER_SEND)
    return tuple(names)


def armed_plan(plan: FaultPlan, missed: Iterable[str]) -> tuple[FaultPlan, list[Target]]:
    """``plan`` with what ``missed`` names armed (module docstring), and what was armed, in catalogue order.

    Raises:
        FaultPlanError: ``missed`` names something ``plan`` cannot reach (a kind it leaves off, a point its
            worker_crash does not draw from, an unknown name).
    """
    missed = frozenset(missed)
    unreachable = missed - set(reachable(plan))
    if unreachable:
        raise FaultPlanError("--target", [f"{name!r} cannot be reached by this plan; it reaches "
                                          f"{', '.join(reachable(plan)) or 'nothing'}" for name in sorted(unreachable)])
    specs = dict(plan.specs)
    targets = []
    for kind in EMULATED:
        names = _names(kind, missed, plan)
        if not names:
            continue
        spec = specs[kind]
        points = tuple(p for p in spec.crash_points if p in missed)
        rate = worker_crash_rate(points) if points else TARGET_RATES[kind]
        specs[kind] = replace(spec, rate=max(spec.rate, rate), crash_points=points or spec.crash_points)
        targets.append(Target(kind=kind, rate=specs[kind].rate, base_rate=spec.rate, crash_points=points,
                              missed=names))
    return FaultPlan(seed=plan.seed, specs=specs), targets


def worker_crash_rate(points: tuple[str, ...]) -> float:
    """worker_crash's rate in a run that targets ``points`` (module docstring, :data:`ONCE_PER_SNAPSHOT`)."""
    if set(points) <= ONCE_PER_SNAPSHOT:
        return WORKER_CRASH_MOST
    return min(WORKER_CRASH_MOST, WORKER_CRASH_PER_POINT * len(points))


def _names(kind: FaultKind, missed: frozenset[str], plan: FaultPlan) -> tuple[str, ...]:
    """What ``kind`` is armed for: itself and the crash points only it reaches, where ``missed`` names them."""
    if not plan.enabled(kind):
        return ()
    own: tuple[str, ...] = (str(kind),)
    if kind is FaultKind.WORKER_CRASH:
        own += plan.specs[kind].crash_points
    elif kind is FaultKind.ROUTER_CRASH_AFTER_SEND:
        own += (ROUTER_AFTER_SEND,)
    return tuple(name for name in own if name in missed)


def parse_targets(text: str) -> frozenset[str]:
    """The names of ``--target NAME,...``: crash points and fault kinds.

    Raises:
        FaultPlanError: a name that is neither.
    """
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    known = (*CRASH_POINT_NAMES, *EMULATED)
    unknown = sorted(names - set(known))
    if unknown:
        raise FaultPlanError("--target", [f"unknown crash point or fault kind {name!r}; known: {', '.join(known)}"
                                          for name in unknown])
    return names


def target_args(targets: Sequence[Target]) -> str:
    """The ``seglog chaos`` option that arms a run as ``targets`` did (empty when it armed nothing)."""
    names = [name for target in targets for name in target.missed]
    return f"--target {','.join(names)}" if names else ""


__all__ = ["CRASH_POINT_NAMES", "ONCE_PER_SNAPSHOT", "TARGET_RATES", "WORKER_CRASH_MOST", "WORKER_CRASH_PER_POINT",
           "Coverage", "Target", "armed_plan", "parse_targets", "reachable", "target_args", "worker_crash_rate"]
