"""Which fault kinds a chaos run of an application can use, and at what rates ``--faults all`` fires them.

Every kind here needs no knowledge of the app: delivery faults (duplicate, reordered, late deliveries, visibility
expiring mid-invocation, timeouts, poller and supervisor restarts), a kill -9 after the Nth AWS call of an
invocation (``crash_after_call``), AWS errors on any service and lost answers inside the functions, and lost answers
at the gateway, and a clock running ahead (``clock_skew``: through the app's invocation hook if it has one, else the
worker's ``time`` module). The kinds that need the app's cooperation join only when its template gives it:
``worker_crash`` and ``router_crash_after_send`` need named crash points and the hook that arms them (template
``Metadata: SeglogEmulator``). The rest of the catalogue (``dlq``, ``redrive``, ``mixed_version``) belongs to
seglog's own chaos: they change its stack's parameters and code version, and are refused here by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.template import crash_points_of, emulator_metadata, load_template
from seglog_emulator.faults.plan import FaultPlan, FaultPlanError

#: The rates of ``--faults all`` for any app: each kind fires often enough in a short run to matter, none so often
#: that a run never finishes. seglog's own chaos starts from these (seglog_plugin.chaos.runner.DEFAULT_RATES).
APP_RATES: Final[dict[FaultKind, float]] = {
    FaultKind.DUPLICATE_DELIVERY: 0.1, FaultKind.VISIBILITY_EXPIRY: 0.1, FaultKind.REORDER: 0.1,
    FaultKind.FUNCTION_TIMEOUT: 0.05, FaultKind.POLLER_RESTART: 0.02, FaultKind.SUPERVISOR_RESTART: 0.1,
    FaultKind.DDB_THROTTLE: 0.02, FaultKind.DDB_TRANSACTION_CONFLICT: 0.2, FaultKind.DDB_5XX: 0.02,
    FaultKind.STALE_READ: 0.1, FaultKind.S3_ERROR: 0.03, FaultKind.S3_LATENCY: 0.05, FaultKind.LOST_RESPONSE: 0.03,
    FaultKind.DDB_LOST_RESPONSE: 0.02, FaultKind.AWS_ERROR: 0.02,
    # Per invocation, any function: the worker dies after one of its first six AWS calls (AMOUNTS).
    FaultKind.CRASH_AFTER_CALL: 0.05,
    # Per invocation: the app's hook runs its own clock ahead, or, with no hook, the worker its time module.
    FaultKind.CLOCK_SKEW: 0.15,
}
#: The kinds that need the template's crash points (``CrashPoints``) and its hook (``InvocationHook``), and rates.
HOOKED_RATES: Final[dict[FaultKind, float]] = {
    FaultKind.WORKER_CRASH: 0.3, FaultKind.ROUTER_CRASH_AFTER_SEND: 0.1,
}
#: seglog's own: what its chaos runner does to its stack, not something the emulator can do to any app.
SEGLOG_ONLY: Final = frozenset({FaultKind.DLQ, FaultKind.REDRIVE, FaultKind.MIXED_VERSION})


def app_kinds(metadata: Mapping[str, Any]) -> dict[FaultKind, float]:
    """The kinds an app with these ``Metadata: SeglogEmulator`` settings can use, at their ``all`` rates."""
    kinds = dict(APP_RATES)
    if metadata.get("InvocationHook") and metadata.get("CrashPoints"):
        kinds.update(HOOKED_RATES)
    return kinds


def template_kinds(template: Path) -> tuple[dict[FaultKind, float], list[str]]:
    """The kinds the app of ``template`` can use (:func:`app_kinds`) and the crash points it declares."""
    parsed = load_template(template)
    return app_kinds(emulator_metadata(parsed)), [p for points in crash_points_of(parsed).values() for p in points]


def app_plan(seed: int, faults: str, rate: float | None, kinds: Mapping[FaultKind, float],
             crash_points: Sequence[str] = ()) -> FaultPlan:
    """The plan of ``--faults`` (``all``, or ``kind[=rate],...``) for an app that can use ``kinds``: named kinds at
    their ``all`` rate (or ``rate``), a kind given as ``kind=rate`` at its own.

    Raises:
        FaultPlanError: a kind the app cannot use (with why), an unknown kind, a bad rate.
    """
    problems: list[str] = []
    named: list[str] = []
    for item in (part.strip() for part in faults.split(",")):
        if not item or item == "none":
            continue
        name, sep, value = item.partition("=")
        for one in [f"{kind}{sep}{value}" for kind in kinds] if name.strip() == "all" else [item]:
            kind = _kind(one.partition("=")[0].strip())
            if kind in SEGLOG_ONLY:
                problems.append(f"{kind} is seglog's own chaos fault (it changes seglog's stack or code version); "
                                f"an app's chaos uses: {', '.join(map(str, kinds))}")
            elif kind in HOOKED_RATES and kind not in kinds:
                problems.append(f"{kind} needs the template's Metadata SeglogEmulator (InvocationHook, CrashPoints);"
                                f" this app can use: {', '.join(map(str, kinds))}")
            else:  # an unknown name is refused by FaultPlan, with the known ones
                named.append(one)
    try:
        flagged = FaultPlan.from_flags(",".join(named), rate=rate if rate is not None else 0.05, seed=seed)
    except FaultPlanError as exc:
        problems.extend(exc.problems)
    if problems:
        raise FaultPlanError("--faults", problems)
    mapping = flagged.to_mapping()
    explicit = {one.partition("=")[0].strip() for one in named if "=" in one}
    for name, entry in mapping["faults"].items():
        if rate is None and name not in explicit:
            entry["rate"] = kinds.get(FaultKind(name), entry["rate"])
        if name == FaultKind.WORKER_CRASH and crash_points:
            entry["crash_points"] = list(crash_points)
    return FaultPlan.from_mapping(mapping, source="--faults")


def _kind(name: str) -> FaultKind | None:
    try:
        return FaultKind(name)
    except ValueError:
        return None
