"""One mutant in a fresh process: ``python -m seglog_sim.mutants NAME SEEDS START [REPORT_DIR]`` prints one
JSON line.

The mutant's import hook is installed before any seglog module is imported; then seeds START, START+1, ... run
until one fails (the mutant is killed) or SEEDS have passed (it survived). With REPORT_DIR, the killing seed is
drawn there (report.html, opening on its violation), by this process: only it runs the mutated code.

The line carries the waste counts of the seeds run (seglog_sim.waste): a survivor's, next to those of NAME
``baseline`` (the unmutated code over the same seeds), show what its guard saves.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING

from seglog_sim.mutants.catalogue import BASELINE, by_name
from seglog_sim.mutants.hook import install

if TYPE_CHECKING:
    from seglog_sim.scenario import Scenario


def main(argv: list[str]) -> int:
    name, seeds, start = argv[0], int(argv[1]), int(argv[2])
    report_dir = argv[3] if len(argv) > 3 else None
    mutant = by_name(name)
    if mutant is not BASELINE:
        install(mutant)
    from seglog_awsmodel.faults import FaultKind
    from seglog_sim import quiet_logs
    from seglog_sim.run import run_seed
    from seglog_sim.scenario import Scenario

    quiet_logs()
    scenario = Scenario(armed=tuple(FaultKind(k) for k in mutant.arms)) if mutant.arms else None

    started = time.perf_counter()
    outcome: dict[str, object] = {"mutant": name, "killed": False, "seeds_run": 0}
    waste: Counter[str] = Counter()
    for seed in range(start, start + seeds):
        result = run_seed(seed, scenario)
        outcome["seeds_run"] = seed - start + 1
        waste.update(result.waste)
        outcome["waste"] = dict(waste)
        if not result.ok:
            outcome.update(killed=True, seed=seed, violations=[str(v) for v in result.violations[:3]])
            if report_dir is not None:
                outcome["report"] = str(_draw(name, seed, scenario, report_dir))
            break
    outcome["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(outcome), flush=True)
    return 0


def _draw(name: str, seed: int, scenario: Scenario | None, directory: str) -> object:
    from pathlib import Path

    from seglog_report.html import publish
    from seglog_sim.timeline import seeds_report

    replay = f"seglog simulate --mutants --mutant {name} --seed {seed} --seeds 1"
    report = seeds_report([seed], scenario, command=replay, title=f"mutant {name}: seed {seed}",
                          replay=lambda _: replay)
    return publish(report, Path(directory))[0]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
