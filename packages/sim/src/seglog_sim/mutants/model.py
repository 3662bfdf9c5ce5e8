"""A mutant: one module, the exact text it replaces there, and the guard or order it breaks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Mutant:
    name: str
    module: str
    old: str
    new: str
    #: What the edit breaks, in one sentence.
    breaks: str
    #: When the guard is defence in depth that no reachable history needs: why (the mutant is expected to live).
    survives: str | None = None
    #: Fault kinds (seglog_awsmodel.faults.FaultKind values; names here, so that importing the catalogue imports
    #: no module a mutant edits) on in every seed run against this mutant, the others drawn as usual
    #: (Scenario.armed): the combination that reaches a guard a random profile reaches in too few seeds.
    arms: tuple[str, ...] = ()
