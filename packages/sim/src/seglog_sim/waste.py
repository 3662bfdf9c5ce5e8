"""What a seed wasted: the work the protocol's guards exist to save, in numbers (issue 18).

Three figures, each a ratio of two counts kept per seed and added up over a campaign:

* builds started per build completed — a build starts with each claim answered ``ok`` (DESIGN §5 step 4, a
  takeover's claim included) and completes with each ``completed`` outcome; two builders of one snapshot, a
  zombie that goes on after a takeover or a build cut short show here first;
* receives per job — every message a worker invocation was handed, per distinct (log, segment, entry);
* failed conditional writes per append — every write a DynamoDB condition refused (``ConditionalCheckFailed``,
  a transaction cancelled by a condition), per acknowledged append.

A guard the catalogue explains as defence in depth (``survives``) breaks no invariant when removed; these
figures say what it saves instead (``python -m seglog_sim.mutants`` prints them next to the unmutated code's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from seglog_sim.cloud import Call

#: A claim answered: one build starts (DynamoDBPendingStore.claim, the worker's step 4).
_CLAIM_SITE: Final = "DynamoDBPendingStore.claim"
_REFUSED: Final = frozenset({"error ConditionalCheckFailedException", "error TransactionCanceledException"})
#: The counts a seed keeps; each figure is one count over another.
FIGURES: Final = {
    "builds started per build completed": ("builds_started", "builds_completed"),
    "receives per job": ("receives", "jobs"),
    "failed conditional writes per append": ("failed_conditional_writes", "appends"),
}


def counts(history: Iterable[Call], *, builds_completed: int, receives: int, jobs: int, appends: int
           ) -> dict[str, int]:
    """One seed's counts, from its history and what the runners noted."""
    started = refused = 0
    for call in history:
        if call.outcome in _REFUSED:
            refused += 1
        elif call.site == _CLAIM_SITE and call.outcome == "ok":
            started += 1
    return {"builds_started": started, "builds_completed": builds_completed, "receives": receives, "jobs": jobs,
            "failed_conditional_writes": refused, "appends": appends}


def figures(totals: Mapping[str, int]) -> dict[str, float | None]:
    """The three ratios of some counts (None where the denominator is 0)."""
    out: dict[str, float | None] = {}
    for name, (over, under) in FIGURES.items():
        out[name] = round(totals.get(over, 0) / totals[under], 3) if totals.get(under) else None
    return out


def render(totals: Mapping[str, int]) -> str:
    """The figures in one line."""
    return ", ".join(f"{name} {'-' if value is None else f'{value:.3f}'}" for name, value in figures(totals).items())
