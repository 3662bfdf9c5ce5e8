"""How long a busy sheet's snapshots stall under the README's fault command (issue 34, point 1).

Run: uv run --no-sync python -m bench.bench_stall [--profile ...] [--quick] [--minutes N] [--seed N]

The emulator runs as ``seglog emulate --faults all --rate 0.05 --seed 7 --parameter SnapshotEvery=10`` runs it:
the template's defaults otherwise (a 60 s worker timeout, the queue's 360 s visibility timeout, a 60 s takeover),
on resources of its own on the bench stack. One signed client appends to one sheet through the API as fast as it
is answered (:class:`~seglog_plugin.chaos.progress.FastWriter`), so a snapshot falls due every ten answers,
while :class:`~seglog_plugin.chaos.progress.SnapshotProgress` reads the sheet's latest completed snapshot each
second. A stall is the time between two of its moves; the figures are their p50 and max, and the 90-second
windows in which it did not move at all. A job lost before its claim with nothing to recover it shows as a stall
of the queue's visibility timeout (360 s).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_pipeline import emulated
from bench.support import Headline, local_deployment, percentile, profiles, quiet_logs
from seglog_cli.emulator_commands import fault_plan
from seglog_client import SeglogClient
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_plugin.chaos.progress import FastWriter, SnapshotProgress, stalls, still_windows
from seglog_plugin.resources import backend_of
from seglog_stack.local import LocalDeployment

#: The windows each of which must see the latest completed snapshot move (the liveness test's).
WINDOW_SECONDS = 90.0
#: The target of the longest stall: well under the queue's visibility timeout (360 s).
MAX_STALL_TARGET = 90.0


def measure(deployment: LocalDeployment, *, minutes: float, seed: int, rate: float, work: Path,
            overrides: dict[str, str] | None = None) -> list[Headline]:
    plan = fault_plan("all", None, rate, seed)
    assert plan is not None
    runtime = FaultRuntime(plan, work / "faults")
    runtime.start()
    parameters: dict[str, Any] = {"SnapshotEvery": 10, **(overrides or {})}
    shown = ", ".join(f"{k}={v}" for k, v in parameters.items())
    print(f"\n## stalls of a busy sheet's snapshots (--faults all --rate {rate:g} --seed {seed}, {shown}, "
          f"one writer as fast as answered, {minutes:g} min)", flush=True)
    try:
        with emulated(deployment, prefix="bench-stall", parameters=parameters, work=work,
                      log_path=work / "emulator.log", faults=runtime) as (pipe, emulator, _):
            api = SeglogClient(emulator.api_url, credentials=emulator.settings.api_credentials[0])
            log_id = api.create().log_id
            writer = FastWriter(api, log_id).start()
            progress = SnapshotProgress(backend_of(pipe).store, log_id).start()
            started = time.monotonic()
            try:
                while time.monotonic() - started < minutes * 60:
                    time.sleep(min(30.0, minutes * 60 - (time.monotonic() - started)))
                    latest = progress.samples[-1].position if progress.samples else None
                    print(f"  {time.monotonic() - started:5.0f} s: {writer.acknowledged:,} appends acknowledged, "
                          f"latest completed snapshot {latest}, load {os.getloadavg()[0]:.2f}", flush=True)
            finally:
                writer.stop()
                progress.stop()
    finally:
        runtime.stop()
    lengths = stalls(progress.samples)
    still = still_windows(progress.samples, WINDOW_SECONDS)
    p50, longest = percentile(lengths, 50), max(lengths, default=0.0)
    print(f"  appends acknowledged {writer.acknowledged:,} (given up {writer.given_up}); snapshot moves "
          f"{len(lengths)}; faults {sum(runtime.counts().values())}")
    print(f"  stall p50 {p50:.1f} s, max {longest:.1f} s; {WINDOW_SECONDS:.0f} s windows without a move: "
          f"{len(still)} of {int((progress.samples[-1].at - progress.samples[0].at) // WINDOW_SECONDS)} {still}")
    return [Headline(name="busy sheet: snapshot stall p50 / max under --faults all", figure=f"{p50:.1f} s / "
                     f"{longest:.1f} s", target=f"max <= {MAX_STALL_TARGET:.0f} s, a move every "
                     f"{WINDOW_SECONDS:.0f} s", met=longest <= MAX_STALL_TARGET and not still)]


#: Quick (CI's bench step): 15 s, the stalls of its first snapshots only, too short for a 90 s window.
#: CI's liveness step runs this same writer under this same fault command for 4 minutes and fails on a still
#: window (tests/emulator/test_liveness.py), so the quick run only shows the benchmark still runs.
QUICK_MINUTES = 0.25


def run(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    """For ``./dev bench``: the README's fault command, :data:`QUICK_MINUTES` quick, else 4."""
    with tempfile.TemporaryDirectory(prefix="bench-stall-") as work:
        return measure(deployment, minutes=QUICK_MINUTES if quick else 4.0, seed=7, rate=0.05, work=Path(work))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=("dynamodb-local", "localstack", "both"), default="dynamodb-local")
    parser.add_argument("--quick", action="store_true", help=f"a {QUICK_MINUTES:g}-minute run")
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--work", type=Path, help="keep the emulator's log and fault log here (default: deleted)")
    parser.add_argument("--parameter", action="append", default=[], metavar="NAME=VALUE",
                        help="another template parameter override (as seglog emulate --parameter)")
    args = parser.parse_args()
    overrides = dict(p.split("=", 1) for p in args.parameter)
    quiet_logs()
    summary: list[str] = []
    for profile in profiles(args.profile):
        with local_deployment(profile) as deployment, tempfile.TemporaryDirectory(prefix="bench-stall-") as temp:
            work = args.work / profile if args.work else Path(temp)
            work.mkdir(parents=True, exist_ok=True)
            minutes = QUICK_MINUTES if args.quick else args.minutes
            summary += [h.line(profile) for h in measure(deployment, minutes=minutes, seed=args.seed, rate=args.rate,
                                                         work=work, overrides=overrides)]
    print("\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
