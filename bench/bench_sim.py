"""The deterministic simulation's speed: seeds a minute on one core for the default scenario (issue target:
at least 1,000), with what a seed costs (storage calls, scheduling steps, simulated time).

Run: uv run --no-sync python -m bench.bench_sim [--quick]
"""

from __future__ import annotations

import argparse
import os
import time

from bench.support import Headline
from seglog_sim import quiet_logs
from seglog_sim.run import run_seed

TARGET = 1_000
#: Quick (CI's bench step): enough seeds for a rate; CI's simulate step runs 5,000 in two processes, fails on any
#: failing seed and prints its own seeds a minute.
QUICK_SEEDS = 60


def headlines(quick: bool) -> list[Headline]:
    quiet_logs()
    seeds = range(10_001, 10_001 + (QUICK_SEEDS if quick else 2_000))
    run_seed(1)  # imports and caches (the template) outside the timing
    calls = steps = failed = 0
    simulated = 0.0
    started = time.perf_counter()
    for seed in seeds:
        result = run_seed(seed)
        calls += len(result.history)
        steps += result.steps
        simulated += result.sim_seconds
        failed += not result.ok
    elapsed = time.perf_counter() - started
    per_minute = 60.0 * len(seeds) / elapsed
    n = len(seeds)
    print(f"{n} seeds in {elapsed:.1f} s: {per_minute:,.0f} seeds/min, {1000 * elapsed / n:.1f} ms a seed; "
          f"{calls / n:.0f} storage calls, {steps / n:.0f} scheduling steps and {simulated / n / 60:.0f} simulated "
          f"minutes a seed; {failed} failing; load average {os.getloadavg()[0]:.1f}")
    return [Headline(name="simulate (1 process)", figure=f"{per_minute:,.0f} seeds/min, {failed} failing",
                     target=f">= {TARGET:,} seeds/min, 0 failing", met=per_minute >= TARGET and failed == 0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    for line in headlines(parser.parse_args().quick):
        print(line.line())


if __name__ == "__main__":
    main()
