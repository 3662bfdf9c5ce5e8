"""The mutants: each names one module, the exact text it replaces there, and the guard or order it breaks.

Every guard of the protocol (DESIGN §3, §5) is here, and every bug the chaos runs and reviews found, brought
back. ``seglog simulate --mutants`` runs each against the simulator; a mutant no seed kills is either a gap in
the fault model or a guard that only defends in depth — then ``survives`` says why, and it is reported as such.
"""

from __future__ import annotations

from typing import Final

from seglog_sim.mutants import pipeline, retention, writes
from seglog_sim.mutants.model import Mutant

__all__ = ["BASELINE", "MUTANTS", "Mutant", "by_name"]

#: Every mutant, by the part of the protocol it breaks (one module each: writes, pipeline, retention).
MUTANTS: Final[tuple[Mutant, ...]] = (*writes.MUTANTS, *pipeline.MUTANTS, *retention.MUTANTS)



#: No edit at all: the code as it is, run over the same seeds for the waste figures a survivor is compared with.
BASELINE: Final = Mutant(name="baseline", module="", old="", new="", breaks="nothing: the unmutated code")


def by_name(name: str) -> Mutant:
    for mutant in (*MUTANTS, BASELINE):
        if mutant.name == name:
            return mutant
    raise KeyError(f"no mutant {name!r}; known: {', '.join(m.name for m in MUTANTS)}")
