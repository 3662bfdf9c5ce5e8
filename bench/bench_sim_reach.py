"""What the simulator's worlds reach (issue 34, point 4): branch coverage of the code a campaign runs, and every
branch of the protocol's rules that no seed takes.

Run: uv run --no-sync python -m bench.bench_sim_reach [--seeds N] [--quick] [--out FILE]

``seglog simulate --seeds N`` (one process, the default scenario) runs under coverage.py with branch measurement,
for the packages the simulator drives in process: seglog_core, seglog_awsmodel, seglog_services and seglog_client.
It prints each package's branch coverage, then, for the areas the liveness and exactly-once guarantees rest on
(below), how many branches no seed took; the list itself — file, line, the branch's target and the source line —
goes to ``--out`` (default ``.seglog/bench/sim-reach.md``), for deciding per branch whether a world should reach it
or why none can (and which test holds it instead).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import coverage

from bench.support import Headline

PACKAGES: Final = ("seglog_core", "seglog_awsmodel", "seglog_services", "seglog_client")
#: The areas whose unreached branches are listed, by the files that hold them.
AREAS: Final[dict[str, tuple[str, ...]]] = {
    "stream and queue settlement rules": ("seglog_awsmodel/stream_batches.py", "seglog_awsmodel/queue_batches.py",
                                          "seglog_awsmodel/batch_responses.py", "seglog_core/pipeline/router.py"),
    "snapshot protocol": ("seglog_core/pipeline/worker.py", "seglog_core/pipeline/claims.py",
                          "seglog_core/pipeline/order.py", "seglog_core/pipeline/backoff.py"),
    "in-process turns": ("seglog_core/turns.py",),
    "rebuild": ("seglog_core/pipeline/fallback.py",),
    "the API's append paths": ("seglog_services/api/routes.py", "seglog_core/idempotence.py", "seglog_core/log.py",
                               "seglog_core/bodies.py"),
    "the client's retry and horizon logic": ("seglog_client/client.py", "seglog_client/retry.py"),
}
TARGET_SEEDS: Final = 1_000
#: Quick (CI's bench step): a sample that shows the measurement still runs; its coverage is lower than the full
#: run's, so compare figures at equal seeds. Whether seeds pass is CI's simulate step's (5,000 seeds).
QUICK_SEEDS: Final = 25


def measure(seeds: int, out: Path) -> tuple[list[Headline], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="sim-reach-") as work:
        data_file = Path(work) / ".coverage"
        seglog = str(Path(sys.executable).with_name("seglog"))
        # The worlds' tasks are greenlets: coverage follows them only when told.
        command = [sys.executable, "-m", "coverage", "run", "--branch", "--concurrency=greenlet,thread",
                   f"--data-file={data_file}", f"--source={','.join(PACKAGES)}", seglog, "simulate",
                   "--seeds", str(seeds), "--report", str(Path(work) / "report")]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        took = time.perf_counter() - started
        verdict = "every seed passed" if done.returncode == 0 else f"exit status {done.returncode}: a seed failed"
        cov = coverage.Coverage(data_file=str(data_file))
        cov.load()
        report = Path(work) / "coverage.json"
        cov.json_report(outfile=str(report))
        found = json.loads(report.read_text())
    files = {_relative(name): data for name, data in found["files"].items()}
    print(f"\n## what `seglog simulate --seeds {seeds}` reaches (coverage.py {coverage.__version__}, branches; "
          f"{took:.0f} s, load {os.getloadavg()[0]:.1f}): {verdict}")
    headlines = []
    figures: dict[str, Any] = {"seeds": seeds, "packages": {}, "areas": {}}
    for package in PACKAGES:
        mine = [d["summary"] for name, d in files.items() if name.startswith(package + "/")]
        branches = sum(s["num_branches"] for s in mine)
        taken = sum(s["covered_branches"] for s in mine)
        statements = sum(s["num_statements"] for s in mine)
        run = sum(s["covered_lines"] for s in mine)
        share = 100.0 * taken / branches if branches else 100.0
        figures["packages"][package] = {"branches": branches, "taken": taken, "percent": round(share, 1)}
        print(f"  {package:16s} branches {taken:5,}/{branches:5,} = {share:5.1f} %   lines {run:6,}/{statements:6,}")
        headlines.append(Headline(name=f"simulate reaches: {package} branch coverage ({seeds:,} seeds)",
                                  figure=f"{share:.1f} %", target="printed (issue 34: before and after)", met=True))
    lines = [f"# Branches no seed of {seeds:,} takes\n"]
    for area, names in AREAS.items():
        missing = [(name, pair) for name in names for pair in files.get(name, {}).get("missing_branches", [])]
        figures["areas"][area] = len(missing)
        print(f"  {area:40s} {len(missing):4d} branches no seed takes")
        lines.append(f"\n## {area} ({len(missing)})\n")
        for name, (line, target) in missing:
            lines.append(f"- `{name}:{line} -> {'exit' if target < 0 else target}`: "
                         f"`{_source(name, line)}`")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"  the branches: {out}")
    return headlines, figures


def _relative(path: str) -> str:
    """``.../src/seglog_core/log.py`` -> ``seglog_core/log.py``."""
    parts = Path(path).parts
    index = next(i for i, part in enumerate(parts) if part.startswith("seglog_"))
    return "/".join(parts[index:])


def _source(name: str, line: int) -> str:
    for package_dir in Path(__file__).resolve().parent.parent.glob("*/**/src"):
        path = package_dir / name
        if path.is_file():
            return path.read_text().splitlines()[line - 1].strip()[:110]
    return "?"


def headlines(quick: bool) -> list[Headline]:
    """For ``./dev bench``: :data:`QUICK_SEEDS` quick, else 1,000."""
    found, _ = measure(QUICK_SEEDS if quick else TARGET_SEEDS, Path(".seglog/bench/sim-reach.md"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=TARGET_SEEDS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds")
    parser.add_argument("--out", type=Path, default=Path(".seglog/bench/sim-reach.md"))
    args = parser.parse_args()
    headlines, _ = measure(QUICK_SEEDS if args.quick else args.seeds, args.out)
    print()
    for headline in headlines:
        print(headline.line())


if __name__ == "__main__":
    main()
