"""All benchmarks: append cost, latency, contention, load time, the pipeline under the emulator and the steady
state's price with its MemorySize sweep, 16 HTTP clients on one sheet, a busy sheet's snapshot stalls under the
README's faults and how soon the API answers after a restart (per profile, each on its own stack), then the fold
rate, the read units a load and a sync pay (strongly and eventually consistent, on the simulator's DynamoDB), what
SigV4 authorization costs a request, the snapshot builder's peak memory, the deterministic simulation's seeds a
minute and the branches its seeds reach, how many editors one hot sheet takes (simulated), what retention costs a
retired entry and an idle sheet, and the live console's memory over an hour.

Run: ./dev bench [--profile dynamodb-local|localstack|both] [--quick]
 or: uv run --no-sync python -m bench [...]
One benchmark: uv run --no-sync python -m bench.<module> [...] (e.g. bench.bench_pipeline --quick)

Prints each benchmark's tables, then a summary block of the headline figures with their targets. Every figure
is measured in this run; the machine's load average is printed with them, since the local stack shares the CPU.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from bench import (
    bench_append,
    bench_auth,
    bench_console,
    bench_contention,
    bench_cost,
    bench_fold,
    bench_hot_http,
    bench_hot_sheet,
    bench_latency,
    bench_load,
    bench_pipeline,
    bench_reads,
    bench_recovery,
    bench_retention,
    bench_sim,
    bench_sim_reach,
    bench_snapshot_rss,
    bench_stall,
)
from bench.support import Headline, local_deployment, options, profiles, quiet_logs
from seglog_plugin.resources import backend_of

FOLD_TARGET = 200_000


def fold(quick: bool) -> list[Headline]:
    """bench_fold.main, recording the best time of each workload it prints (its output is unchanged)."""
    n = 20_000 if quick else 500_000
    best: dict[str, tuple[int, float]] = {}
    report, timed = bench_fold.rate, bench_fold._timed
    label = ""

    def labelled_rate(name: str, count: int, run: Callable[[], object], repeat: int = 3) -> None:
        nonlocal label
        label = name
        best[name] = (count, float("inf"))
        report(name, count, run, repeat)

    def recorded_timed(run: Callable[[], object]) -> float:
        took = timed(run)
        best[label] = (best[label][0], min(best[label][1], took))
        return took

    print(f"\n## fold (bench_fold, {n:,} entries)")
    argv = sys.argv
    sys.argv, bench_fold.rate, bench_fold._timed = [bench_fold.__file__, str(n)], labelled_rate, recorded_timed
    try:
        bench_fold.main()
    finally:
        sys.argv, bench_fold.rate, bench_fold._timed = argv, report, timed
    count, seconds = best["SetCell fold"]
    per_second = count / seconds
    decoded = best.get("SetCell decode + fold")
    extra = f"; decode + fold {decoded[0] / decoded[1]:,.0f}/s" if decoded else ""
    return [Headline(name="SetCell fold", figure=f"{per_second:,.0f} entries/s{extra}",
                     target=f">= {FOLD_TARGET:,} SetCell/s", met=per_second >= FOLD_TARGET)]


def _timed[**P](name: str, run: Callable[P, list[Headline]]) -> Callable[P, list[Headline]]:
    """``run``, printing how long it took (CI's bench step is one of its longest: this says where it goes)."""

    def timed(*args: P.args, **kwargs: P.kwargs) -> list[Headline]:
        started = time.monotonic()
        try:
            return run(*args, **kwargs)
        finally:
            print(f"({name} took {time.monotonic() - started:.0f} s)", flush=True)

    return timed


def main() -> None:
    args = options(__doc__.splitlines()[0]).parse_args()
    quiet_logs()
    started = time.monotonic()
    lines: list[str] = []
    for profile in profiles(args.profile):
        print(f"\n# profile {profile}{' (quick)' if args.quick else ''}", flush=True)
        with local_deployment(profile) as deployment:
            backend = backend_of(deployment)
            for name, on_backend in (("bench_append", bench_append.run), ("bench_latency", bench_latency.run),
                                     ("bench_contention", bench_contention.run), ("bench_load", bench_load.run)):
                lines += [h.line(profile) for h in _timed(name, on_backend)(backend, args.quick)]
                sys.stdout.flush()
            for name, on_deployment in (("bench_pipeline", bench_pipeline.run), ("bench_cost", bench_cost.run),
                                        ("bench_hot_http", bench_hot_http.run),
                                        ("bench_cost batched", bench_cost.run_batched),
                                        ("bench_stall", bench_stall.run), ("bench_recovery", bench_recovery.run)):
                lines += [h.line(profile) for h in _timed(name, on_deployment)(deployment, args.quick)]
            sys.stdout.flush()
    lines += [h.line() for h in _timed("fold", fold)(args.quick)]
    lines += [h.line() for h in _timed("bench_reads", bench_reads.headlines)(args.quick)]
    print("\n## SigV4 authorization (bench_auth)")
    lines += [h.line() for h in _timed("bench_auth", bench_auth.headlines)(args.quick)]
    lines += [h.line() for h in _timed("bench_snapshot_rss", bench_snapshot_rss.headlines)(args.quick)]  # type: ignore[arg-type]
    print("\n## deterministic simulation (bench_sim)")
    lines += [h.line() for h in _timed("bench_sim", bench_sim.headlines)(args.quick)]
    lines += [h.line() for h in _timed("bench_sim_reach", bench_sim_reach.headlines)(args.quick)]
    print()
    lines += [h.line() for h in _timed("bench_hot_sheet", bench_hot_sheet.headlines)(args.quick)]
    print("\n## retention (bench_retention)")
    lines += [h.line() for h in _timed("bench_retention", bench_retention.main)(args.quick)]
    # Its --real campaign: bench.bench_console.
    lines += [h.line() for h in _timed("bench_console", bench_console.headlines)(args.quick)]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n== summary ({'quick, ' if args.quick else ''}{time.monotonic() - started:.0f} s; "
          f"load average {load} on {os.cpu_count()} CPUs) ==")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
