"""report.html's size and load time (issue 21, closing note): for a simulate campaign of N seeds (run here) and for
any run directory given (a chaos campaign's, say), the page's bytes, the time to draw it from its report.json
(decode + render + write, what ``seglog report DIR`` does), and the time headless Chromium takes from navigation
to ``window.seglogReady`` (every plot drawn), best of three loads.

Run: uv run --no-sync python -m bench.bench_report [--seeds N] [--quick] [DIR ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.support import Headline
from seglog_report.html import publish
from seglog_report.model import decode

REPO = Path(__file__).resolve().parent.parent
LOADS = 3


def simulate(seeds: int, into: Path) -> float:
    """Run ``seglog simulate --seeds N`` with its report in ``into``; its wall time."""
    started = time.perf_counter()
    seglog = Path(sys.executable).with_name("seglog")
    subprocess.run([str(seglog), "simulate", "--seeds", str(seeds), "--jobs", "2", "--report", str(into)],
                   check=False, capture_output=True, cwd=REPO)
    return time.perf_counter() - started


def measure(directory: Path) -> dict[str, float]:
    """Redraw the page from the directory's report.json, then load it in Chromium."""
    started = time.perf_counter()
    report = decode((directory / "report.json").read_bytes())
    page, _ = publish(report, directory)
    render = time.perf_counter() - started
    sys.path.insert(0, str(REPO / "tests"))
    from browser import Chromium, find_chromium  # the tests' CDP driver (tests/browser.py)

    binary = find_chromium()
    loads = []
    if binary is not None:
        browser = Chromium(binary)
        tab = browser.new_page("bench-report")
        try:
            for _ in range(LOADS):
                began = time.perf_counter()
                tab.open(page, ready="window.seglogReady === true", timeout=120.0)
                loads.append(time.perf_counter() - began)
        finally:
            tab.close()
            browser.close()
    return {"runs": len(report.runs), "seeds": len(report.seeds), "bytes": page.stat().st_size,
            "json_bytes": (directory / "report.json").stat().st_size, "render_s": render,
            "load_s": min(loads) if loads else float("nan")}


def main(argv: list[str] | None = None) -> list[Headline]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, help="run directories with a report.json to measure too")
    parser.add_argument("--seeds", type=int, default=1000, help="seeds of the simulate campaign (default 1000)")
    parser.add_argument("--quick", action="store_true", help="100 seeds")
    args = parser.parse_args(argv)
    seeds = 100 if args.quick else args.seeds
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as scratch:
        campaign = Path(scratch) / "simulate"
        took = simulate(seeds, campaign)
        if (campaign / "report.json").is_file():
            rows.append((f"simulate --seeds {seeds} ({took:.0f} s to run)", measure(campaign)))
        for directory in args.dirs:
            rows.append((str(directory), measure(directory)))
    print(f"{'report':<48} {'runs':>5} {'seeds':>6} {'page MB':>8} {'json MB':>8} {'draw s':>7} {'load s':>7}")
    for name, row in rows:
        print(f"{name[:48]:<48} {row['runs']:>5} {row['seeds']:>6} {row['bytes'] / 1e6:>8.2f} "
              f"{row['json_bytes'] / 1e6:>8.2f} {row['render_s']:>7.2f} {row['load_s']:>7.2f}")
    return [Headline(name=f"report.html of {name[:40]}",
                     figure=f"{row['bytes'] / 1e6:.1f} MB, loads in {row['load_s']:.1f} s", target="none (context)",
                     met=None) for name, row in rows]


if __name__ == "__main__":
    main()
