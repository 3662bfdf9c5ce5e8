"""Shrinking a failing seed's fault schedule: the smallest set of its faults that still breaks an invariant.

Delta debugging (Zeller's ddmin) over the ids of the faults that fired: replay the seed with only a subset of
them allowed (:class:`seglog_sim.faults.Faults` ``only``), keep any subset that still fails with one of the
same invariants, and go on until no single fault can be dropped or the budget of replays is spent. Faults are
decided per task from the task's own generator, so dropping one leaves the others' decisions where they were;
the interleaving may still shift, which is why each candidate is replayed, never assumed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from seglog_sim.run import SeedResult, run_seed
from seglog_sim.scenario import Scenario


@dataclass(frozen=True, kw_only=True)
class Shrunk:
    faults: list[str]
    result: SeedResult
    replays: int


def shrink(seed: int, scenario: Scenario, failing: SeedResult, *, budget: int = 150,
           progress: Callable[[int, int], None] | None = None) -> Shrunk:
    """The smallest fault schedule found (within ``budget`` replays) that still fails like ``failing``."""
    wanted = {v.invariant for v in failing.violations}
    replays = 0
    best, best_result = list(failing.fired), failing

    def fails(subset: list[str]) -> SeedResult | None:
        nonlocal replays
        replays += 1
        result = run_seed(seed, scenario, only=frozenset(subset))
        if progress is not None:
            progress(replays, len(best))
        return result if wanted & {v.invariant for v in result.violations} else None

    empty = fails([])
    if empty is not None:
        return Shrunk(faults=[], result=empty, replays=replays)
    chunks = 2
    while len(best) >= 2 and replays < budget:
        size = max(1, len(best) // chunks)
        reduced = False
        for start in range(0, len(best), size):
            if replays >= budget:
                break
            complement = best[:start] + best[start + size:]
            result = fails(complement)
            if result is not None:
                best, best_result, reduced = complement, result, True
                chunks = max(chunks - 1, 2)
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(len(best), chunks * 2)
    return Shrunk(faults=best, result=best_result, replays=replays)
