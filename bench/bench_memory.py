"""MemorySize by measurement (issue 20, in the spirit of AWS Lambda Power Tuning): the same workload priced at each
size, per function, and the size each function should get.

Run: uv run --no-sync python -m bench.bench_memory [--profile ...] [--quick]
     (bench_cost's run at SnapshotEvery=50, then this sweep over its invocations, to size the worker and the
     router; ./dev bench prints the sweep of the steady state itself, after bench_cost)

Lambda gives a function CPU in proportion to its memory: "At 1,769 MB, a function has the equivalent of one vCPU"
(AWS Lambda Developer Guide, configuration-memory). The emulator runs every handler on a whole core of this
machine, so one run measures each invocation's CPU time (``cpu_ms``, from its worker process) apart from its
waiting (AWS calls: duration - CPU), and predicts its duration at size m as

    waiting + CPU x max(1, 1769 / m)

(our handlers are single-threaded: no gain above one vCPU). Assumed: this machine's core is about one Lambda vCPU
(arm64 Graviton); the waiting is measured against the local stack on shared cores, an upper bound for AWS. A size
is a candidate only if it is at least HEADROOM times the function's peak resident memory in the run (Lambda's
"Max Memory Used"). Cost at m: Lambda's request fee plus m in GB x each predicted duration (rounded up to the ms,
as Lambda bills) at the ledger's arm64 price.

Below one vCPU the CPU part costs the same at every size (m x 1769/m) and the waiting costs more with m, so the
cheapest candidate is always the smallest; the pick is the cheapest size whose mean predicted duration is within
SLOWEST of the fastest size's (Power Tuning's "balanced" idea, one rule for every function), for a function with at
least MIN_SAMPLES invocations in the run (the steady state invokes the snapshot worker only once per 1,000 appends
a sheet, so its size is not picked here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bench.support import Headline, deployed
from seglog_report.prices import load

SIZES: Final = (128, 256, 512, 768, 1024, 1536, 1769, 2048)
#: Lambda's memory at which a function has one vCPU (configuration-memory).
ONE_VCPU_MB: Final = 1769
#: A size must be at least this many times the function's peak resident memory.
HEADROOM: Final = 1.5
#: The pick may be at most this much slower (mean predicted duration) than the function's fastest size.
SLOWEST: Final = 1.25
#: Fewer invocations than this (a cold start or two) pick nothing: the template's size stays.
MIN_SAMPLES: Final = 20
#: The standalone run's SnapshotEvery: 5,000 appends on 4 sheets make 100 snapshots, enough to size the worker.
SNAPSHOT_HEAVY: Final = 50


@dataclass(frozen=True, kw_only=True)
class Size:
    """One function at one MemorySize: predicted mean duration and the cost of the run's invocations."""

    memory_mb: int
    mean_ms: float
    dollars: float
    fits: bool


@dataclass(frozen=True, kw_only=True)
class Sweep:
    function: str
    configured_mb: int
    invocations: int
    peak_rss_mb: float
    cpu_share: float
    sizes: list[Size]

    @property
    def pick(self) -> Size | None:
        candidates = [s for s in self.sizes if s.fits]
        if not candidates or self.invocations < MIN_SAMPLES:
            return None
        fastest = min(s.mean_ms for s in candidates)
        good = [s for s in candidates if s.mean_ms <= SLOWEST * fastest]
        return min(good, key=lambda s: (s.dollars, s.memory_mb))


def predicted_ms(duration_ms: float, cpu_ms: float, memory_mb: int) -> float:
    """An invocation's duration at ``memory_mb``, from its duration and CPU time on a whole core."""
    cpu = min(cpu_ms, duration_ms)
    return (duration_ms - cpu) + cpu * max(1.0, ONE_VCPU_MB / memory_mb)


def sweep(invocations: Iterable[Mapping[str, Any]], region: str = "us-east-1") -> list[Sweep]:
    """One :class:`Sweep` per function, from its ``invocation`` log lines that carry ``cpu_ms``."""
    table = load()
    request = table.unit_price(region, "lambda_request")
    gb_second = table.unit_price(region, "lambda_duration_arm64")
    by_function: dict[str, list[Mapping[str, Any]]] = {}
    for line in invocations:
        if line.get("cpu_ms") is not None and line.get("duration_ms") is not None:
            by_function.setdefault(str(line.get("function")), []).append(line)
    sweeps: list[Sweep] = []
    for function, lines in sorted(by_function.items()):
        peak = max(float(line.get("max_rss_mb") or 0.0) for line in lines)
        sizes = []
        for memory in SIZES:
            durations = [predicted_ms(float(line["duration_ms"]), float(line["cpu_ms"]), memory) for line in lines]
            billed = sum(math.ceil(d) for d in durations)
            sizes.append(Size(memory_mb=memory, mean_ms=sum(durations) / len(durations),
                              dollars=len(lines) * request + memory / 1024 * billed / 1000 * gb_second,
                              fits=memory >= HEADROOM * peak))
        total = sum(float(line["duration_ms"]) for line in lines)
        cpu = sum(min(float(line["cpu_ms"]), float(line["duration_ms"])) for line in lines)
        sweeps.append(Sweep(function=function, configured_mb=int(lines[0].get("memory_mb") or 0),
                            invocations=len(lines), peak_rss_mb=peak, cpu_share=cpu / total if total else 0.0,
                            sizes=sizes))
    return sweeps


def report(sweeps: list[Sweep], appends: int) -> list[Headline]:
    """Print each function's sizes (predicted mean ms, $ per million appends) and return one headline."""
    print(f"\n## MemorySize sweep (bench_memory: predicted from each invocation's CPU time; {appends:,} appends)")
    print(f"{'function':<24}{'calls':>7}{'peak MB':>9}{'CPU':>6}  " + "".join(f"{m:>13}" for m in SIZES))
    picks: list[str] = []
    for s in sweeps:
        per_million = 1_000_000 / appends if appends else 0.0
        cells = "".join(f"{f'{z.mean_ms:.0f}ms ${z.dollars * per_million:.2f}':>13}" if z.fits else f"{'-':>13}"
                        for z in s.sizes)
        print(f"{s.function:<24}{s.invocations:>7}{s.peak_rss_mb:>9.0f}{s.cpu_share:>6.0%}  {cells}")
        pick = s.pick
        picks.append(f"{s.function} {pick.memory_mb} MB (template {s.configured_mb})" if pick else
                     f"{s.function}: {s.invocations} invocations, too few to pick (template {s.configured_mb})")
    print("cells: mean predicted duration and the function's $ per million appends at that size; '-' is under "
          f"{HEADROOM:g}x the peak memory. Pick: the cheapest within {SLOWEST:g}x of the fastest size's duration "
          f"(at least {MIN_SAMPLES} invocations).")
    print("picks: " + "; ".join(picks))
    picked = [s for s in sweeps if s.pick is not None]
    agree = all(s.pick is not None and s.pick.memory_mb == s.configured_mb for s in picked)
    return [Headline(name="MemorySize picks", figure="; ".join(picks) or "no invocations measured",
                     target="the template's MemorySize is the sweep's pick", met=bool(picked) and agree)]


def run(deployment: Any, quick: bool) -> list[Headline]:
    """bench_cost's run at SnapshotEvery=SNAPSHOT_HEAVY, which ends with this sweep over its invocations: the
    steady state (``./dev bench``) invokes the worker and the router too rarely to pick their sizes."""
    from bench import bench_cost

    return bench_cost.run(deployment, quick, snapshot_every=SNAPSHOT_HEAVY)


if __name__ == "__main__":
    deployed(__doc__.splitlines()[0], run)
