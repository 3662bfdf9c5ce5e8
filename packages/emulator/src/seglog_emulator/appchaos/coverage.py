"""What a campaign of an app's chaos reached: the fault kinds its plans named that fired in some run, and the call
boundaries ``crash_after_call`` killed a function at (issue 37: "every fault kind and every call boundary
reached"), for the summary and ``--require-coverage``.

A function's call boundaries are 1 to the most AWS calls one of its invocations made in the campaign (from the
invocations' metered requests), capped by the highest call the plan draws (``call = [low, high]``): a boundary is
reached when some run killed the function as that call returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seglog_awsmodel.faults import AMOUNTS, FaultKind
from seglog_emulator.faults.plan import FaultPlan


@dataclass
class AppCoverage:
    """Kinds planned and reached, and each function's call boundaries and those crashed at."""

    planned: set[str] = field(default_factory=set)
    reached: set[str] = field(default_factory=set)
    #: Function -> its call boundaries (1..n), for the functions whose invocations made AWS calls.
    boundaries: dict[str, int] = field(default_factory=dict)
    #: Function -> the calls it was killed after.
    crashed: dict[str, set[int]] = field(default_factory=dict)

    def missed(self) -> list[str]:
        """What no run reached: kinds by name, call boundaries as ``crash_after_call Function#N``."""
        found = sorted(self.planned - self.reached)
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
        missed = self.missed()
        out.append("coverage: " + (f"never reached: {', '.join(missed)}" if missed else
                                   "every fault kind and call boundary the plans could reach was reached"))
        return out


def coverage_of(plans: Sequence[FaultPlan], runs: Iterable[Any]) -> AppCoverage:
    """The coverage of ``runs`` (:class:`.runner.AppRun`: their ``faults``, ``most_calls`` and ``crashed_calls``) under
    ``plans``."""
    found = AppCoverage()
    highest = 0
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
    return found
