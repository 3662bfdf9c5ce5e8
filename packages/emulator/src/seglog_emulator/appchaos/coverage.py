"""What a campaign of an app's chaos reached: the fault kinds its plans named that fired in some run, and the call
boundaries ``crash_after_call`` killed a function at (issue 37: "every fault kind and every call boundary
reached"), for the summary and ``--require-coverage``.

A function's call boundaries are 1 to the most AWS calls one of its invocations made in the campaign (from the
invocations' metered requests), capped by the highest call the plan draws (``call = [low, high]``): a boundary is
reached when some run killed the function as that call returned. A kind about a service no function called
(``ddb_*`` and ``stale_read`` without DynamoDB, ``s3_*`` without S3, ``aws_error`` without any other service) is
unreachable, not missed; so is a kind about a trigger the template does not have (``lost_response`` without an API,
``visibility_expiry`` without a queue mapping, ``reorder`` without a queue or a notification, ``duplicate_delivery``
without a queue, a stream, a schedule or a notification, ``poller_restart`` without a queue or stream mapping).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seglog_awsmodel.config import EmulatorConfig
from seglog_awsmodel.faults import AMOUNTS, FaultKind
from seglog_emulator.faults.plan import FaultPlan


@dataclass
class AppCoverage:
    """Kinds planned and reached, and each function's call boundaries and those crashed at."""

    planned: set[str] = field(default_factory=set)
    reached: set[str] = field(default_factory=set)
    #: Planned kinds about a service no function called, or a trigger the app does not have.
    unreachable: set[str] = field(default_factory=set)
    #: Function -> its call boundaries (1..n), for the functions whose invocations made AWS calls.
    boundaries: dict[str, int] = field(default_factory=dict)
    #: Function -> the calls it was killed after.
    crashed: dict[str, set[int]] = field(default_factory=dict)

    def missed(self) -> list[str]:
        """What no run reached: kinds by name, call boundaries as ``crash_after_call Function#N``."""
        found = sorted(self.planned - self.reached - self.unreachable)
        if str(FaultKind.CRASH_AFTER_CALL) in self.planned:
            for function, last in sorted(self.boundaries.items()):
                found += [f"{FaultKind.CRASH_AFTER_CALL} {function}#{n}" for n in range(1, last + 1)
                          if n not in self.crashed.get(function, set())]
        return found

    def lines(self) -> list[str]:
        out = [f"fault kinds reached: {', '.join(sorted(self.planned & self.reached)) or 'none'}"]
        if str(FaultKind.CRASH_AFTER_CALL) in self.planned:
            for function, last in sorted(self.boundaries.items()):
                hit = sorted(self.crashed.get(function, set()))
                out.append(f"call boundaries of {function}: crashed after call {', '.join(map(str, hit)) or 'none'}"
                           f" of 1-{last}")
        if self.unreachable:
            out.append(f"unreachable (no function called their service, or no trigger of the app delivers them): "
                       f"{', '.join(sorted(self.unreachable))}")
        missed = self.missed()
        out.append("coverage: " + (f"never reached: {', '.join(missed)}" if missed else
                                   "every fault kind and call boundary the plans could reach was reached"))
        return out


def coverage_of(plans: Sequence[FaultPlan], runs: Iterable[Any]) -> AppCoverage:
    """The coverage of ``runs`` (:class:`.runner.AppRun`: their ``faults``, ``most_calls``, ``crashed_calls``,
    ``services`` and ``triggers``) under ``plans``."""
    found = AppCoverage()
    highest = 0
    services: set[str] = set()
    triggers: set[str] | None = None  # None: no run said which triggers its app has
    for plan in plans:
        found.planned |= {str(kind) for kind, spec in plan.specs.items() if spec.rate > 0}
        spec = plan.specs.get(FaultKind.CRASH_AFTER_CALL)
        if spec is not None:
            highest = max(highest, (spec.amount or AMOUNTS[FaultKind.CRASH_AFTER_CALL][1])[1])
    for run in runs:
        found.reached |= {kind for kind, count in run.faults.items() if count}
        for function, calls in run.most_calls.items():
            if calls:
                found.boundaries[function] = max(found.boundaries.get(function, 0), min(calls, highest))
        for function, calls in run.crashed_calls.items():
            found.crashed.setdefault(function, set()).update(calls)
        services |= set(run.services)
        if run.triggers is not None:
            triggers = (triggers or set()) | set(run.triggers)
    found.unreachable = {str(kind) for kind in _SERVICE_KINDS if str(kind) in found.planned
                         and not _SERVICE_KINDS[kind](services) and str(kind) not in found.reached}
    if triggers is not None:
        found.unreachable |= {str(kind) for kind, needs in _TRIGGER_KINDS.items() if str(kind) in found.planned
                              and not needs & triggers and str(kind) not in found.reached}
    return found


def triggers_of(config: EmulatorConfig) -> set[str]:
    """The kinds of trigger the template gives its functions: ``api``, ``queue``, ``stream``, ``schedule``,
    ``notification`` (S3, SNS, EventBridge)."""
    present = {"api": config.http_routes, "queue": config.queue_mappings, "stream": config.stream_mappings,
               "schedule": config.schedules,
               "notification": (*config.s3_notifications, *config.sns_subscriptions, *config.event_rules)}
    return {name for name, items in present.items() if items}


#: The kinds that fire only on calls to a service, and whether the services called include one.
_SERVICE_KINDS: dict[FaultKind, Callable[[set[str]], bool]] = {
    **{kind: (lambda used: "dynamodb" in used) for kind in (
        FaultKind.DDB_THROTTLE, FaultKind.DDB_5XX, FaultKind.DDB_TRANSACTION_CONFLICT, FaultKind.DDB_LOST_RESPONSE,
        FaultKind.STALE_READ)},
    FaultKind.S3_ERROR: lambda used: "s3" in used, FaultKind.S3_LATENCY: lambda used: "s3" in used,
    FaultKind.AWS_ERROR: lambda used: bool(used - {"dynamodb", "s3"}),
}
#: The kinds that fire only on deliveries of some triggers (:func:`triggers_of`), and those triggers.
_TRIGGER_KINDS: dict[FaultKind, frozenset[str]] = {
    FaultKind.LOST_RESPONSE: frozenset({"api"}),
    FaultKind.VISIBILITY_EXPIRY: frozenset({"queue"}),
    FaultKind.REORDER: frozenset({"queue", "notification"}),
    FaultKind.DUPLICATE_DELIVERY: frozenset({"queue", "stream", "schedule", "notification"}),
    FaultKind.POLLER_RESTART: frozenset({"queue", "stream"}),
}
