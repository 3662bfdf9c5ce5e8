"""Running the mutants: each in its own process (its import hook needs a fresh interpreter), a few at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog_sim.mutants.catalogue import MUTANTS, Mutant
from seglog_sim.waste import figures


@dataclass(frozen=True, kw_only=True)
class MutantResult:
    mutant: Mutant
    killed: bool
    seeds_run: int
    seconds: float
    seed: int | None = None
    violations: tuple[str, ...] = ()
    error: str | None = None
    #: The killing seed's report.html, when one was asked for.
    report: str | None = None
    #: The waste counts of the seeds run (seglog_sim.waste).
    waste: dict[str, int] = field(default_factory=dict)

    @property
    def explained(self) -> bool:
        """A survivor whose guard is documented as defence in depth."""
        return not self.killed and self.error is None and self.mutant.survives is not None

    @property
    def ok(self) -> bool:
        return self.killed or self.explained

    @property
    def passed(self) -> bool:
        """Every seed passed (what the unmutated baseline must do)."""
        return not self.killed and self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {"mutant": self.mutant.name, "module": self.mutant.module, "breaks": self.mutant.breaks,
                "killed": self.killed, "seed": self.seed, "seeds_run": self.seeds_run, "seconds": self.seconds,
                "violations": list(self.violations), "error": self.error, "survives": self.mutant.survives,
                "report": self.report, "waste": figures(self.waste)}


def run_mutant(mutant: Mutant, *, seeds: int = 1000, start: int = 1, report_dir: Path | None = None
               ) -> MutantResult:
    """Run seeds against one mutant in a child process until one fails (drawn in ``report_dir``, if given)."""
    command = [sys.executable, "-m", "seglog_sim.mutants", mutant.name, str(seeds), str(start)]
    if report_dir is not None:
        command.append(str(report_dir / mutant.name))
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return MutantResult(mutant=mutant, killed=False, seeds_run=0, seconds=0.0,
                            error=f"the mutant's process failed (exit {proc.returncode}): {' | '.join(tail)}")
    data = json.loads(lines[-1])
    return MutantResult(mutant=mutant, killed=bool(data["killed"]), seeds_run=int(data["seeds_run"]),
                        seconds=float(data["seconds"]), seed=data.get("seed"),
                        violations=tuple(data.get("violations", ())), report=data.get("report"),
                        waste={k: int(v) for k, v in data.get("waste", {}).items()})


def run_mutants(mutants: Sequence[Mutant] = MUTANTS, *, seeds: int = 1000, start: int = 1, jobs: int = 2,
                progress: Callable[[MutantResult], None] | None = None,
                report_dir: Path | None = None) -> list[MutantResult]:
    """Every mutant, ``jobs`` at a time, in catalogue order; each killing seed drawn in ``report_dir/<name>``."""
    def one(mutant: Mutant) -> MutantResult:
        result = run_mutant(mutant, seeds=seeds, start=start, report_dir=report_dir)
        if progress is not None:
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, mutants))
