"""bench_console (b): ``seglog chaos --runs N --console-port P`` with a page subscribed, on a stack of its own.

The campaign runs as the command a user types, in a process of its own, from a temporary directory (so its
stack's run directory is its own) on ports no other stack uses; the page reads /events the whole time. Every 3 s
the chaos process's RSS is sampled, and the console's state (its size as /state sends it, and its feed figures).
At the end, every invocation the runs' logs hold must have reached the page: the console kept up.

The console lives in the chaos process, beside the runner, whose own memory grows from run to run (each run
makes new clients, watchers and reports). So the same campaign runs again without ``--console-port``, and the
console's share is the difference: flat means the process grew no more with the console than without it (within
:data:`SHARE_SLACK_MB`). The stack is stopped after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.bench_console import rss_mb
from bench.support import Headline
from seglog_emulator.supervisor import free_port

REPO: Final = Path(__file__).resolve().parent.parent
#: (LocalStack, DynamoDB Local) ports of this benchmark's stack.
PORTS: Final = (4690, 8090)
SAMPLE_SECONDS: Final = 3.0
#: The process may grow this much more with the console than without it and still count as flat.
SHARE_SLACK_MB: Final = 10.0


@dataclass
class Sample:
    at: float
    rss: float
    state_kb: float = 0.0
    feed: dict[str, Any] = field(default_factory=dict)


@dataclass
class Campaign:
    samples: list[Sample]
    seconds: float
    status: int | None
    logged: set[str]
    tail: str

    def growth(self) -> float:
        """RSS at the end over RSS at the first sample, MB."""
        return self.samples[-1].rss - self.samples[0].rss if self.samples else 0.0


def seglog(*args: str) -> list[str]:
    return [sys.executable, "-c", "from seglog_cli.main import main; main()", *args]


def console_sample(url: str, sample: Sample) -> None:
    try:
        with urllib.request.urlopen(url + "state", timeout=5) as answer:
            body = answer.read()
        sample.state_kb = len(body) / 1024
        sample.feed = json.loads(body)["panels"]["feed"]
    except (OSError, ValueError, KeyError):
        pass


def logged_invocations(state_dir: Path) -> set[str]:
    found: set[str] = set()
    for path in state_dir.glob("*/run-*/emulator.log"):
        for line in path.read_text(errors="replace").splitlines():
            if '"invocation"' in line and line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == "invocation":
                    found.add(str(record["request_id"]))
    return found


def run_campaign(runs: int, console_url: str | None, page: Any | None) -> Campaign:
    """One campaign from a temporary directory; with ``console_url``, served there (``--console-port``)."""
    with tempfile.TemporaryDirectory(prefix="seglog-bench-console-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "SEGLOG_LOCALSTACK_PORT": str(PORTS[0]), "SEGLOG_DYNAMODB_PORT": str(PORTS[1])}
        console = ["--console-port", console_url.rsplit(":", 1)[1].strip("/")] if console_url else []
        command = seglog("chaos", "--runs", str(runs), *console, "--template", str(REPO / "template.yaml"),
                         "--state-dir", str(work / "chaos"), "--report", str(work / "report"))
        samples: list[Sample] = []
        started = time.monotonic()
        try:
            with (work / "chaos.err").open("w") as err:
                proc = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err)
                while proc.poll() is None:
                    time.sleep(SAMPLE_SECONDS)
                    if proc.poll() is not None or (page is not None and page.seq < 0):
                        continue  # ended, or the console is not up yet
                    if page is None and not (work / "chaos").is_dir():
                        continue  # the stack and campaign are not up yet
                    sample = Sample(at=time.monotonic() - started, rss=rss_mb(proc.pid))
                    if console_url:
                        console_sample(console_url, sample)
                    samples.append(sample)
        finally:
            if page is not None:
                page.stop()
            subprocess.run(seglog("down"), cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
        return Campaign(samples=samples, seconds=time.monotonic() - started, status=proc.returncode,
                        logged=logged_invocations(work / "chaos"), tail=(work / "chaos.err").read_text()[-1500:])


def campaign(runs: int, page_type: Callable[[str], Any]) -> list[Headline]:
    url = f"http://127.0.0.1:{free_port()}/"
    print(f"\n## live console, real (bench_console --real): seglog chaos --runs {runs} --console-port, then the "
          "same campaign without the console", flush=True)
    page = page_type(url).start()
    with_console = run_campaign(runs, url, page)
    without = run_campaign(runs, None, None)
    print(with_console.tail)
    print(f"{'seconds':>8} {'RSS MB':>8} {'state KB':>9} {'received':>9} {'kept':>6} {'rolled':>7}   "
          f"{'seconds':>8} {'RSS MB (no console)':>20}")
    step = max(1, len(with_console.samples) // 20)
    for i in range(0, len(with_console.samples), step):
        s = with_console.samples[i]
        other = without.samples[min(i, len(without.samples) - 1)] if without.samples else Sample(at=0, rss=0)
        print(f"{s.at:>8.0f} {s.rss:>8.1f} {s.state_kb:>9.0f} {s.feed.get('received', 0):>9} "
              f"{s.feed.get('retained', 0):>6} {s.feed.get('evicted', 0):>7}   {other.at:>8.0f} {other.rss:>20.1f}")
    missed = with_console.logged - page.invocations
    print(f"with the console: exit {with_console.status} in {with_console.seconds:.0f} s; the runs' logs hold "
          f"{len(with_console.logged):,} invocations, the page saw {len(page.invocations & with_console.logged):,} "
          f"({len(missed)} missed; {page.states} state(s), {page.deltas} deltas). Without: exit {without.status} "
          f"in {without.seconds:.0f} s")
    if not with_console.samples or not without.samples:
        return [Headline(name="live console with seglog chaos", figure="no samples: a campaign did not run",
                         target="keeps up, flat", met=False)]
    share = with_console.growth() - without.growth()
    first, last = with_console.samples[0], with_console.samples[-1]
    return [Headline(
        name=f"live console with seglog chaos --runs {runs} ({len(with_console.logged):,} invocations)",
        figure=f"{len(missed)} missed by the page; chaos process RSS {first.rss:.0f} -> {last.rss:.0f} MB with the "
               f"console, {without.samples[0].rss:.0f} -> {without.samples[-1].rss:.0f} MB without (console's share "
               f"of the growth {share:+.1f} MB); state sent to a page {last.state_kb:.0f} KB",
        target=f"none missed; growth with the console <= growth without + {SHARE_SLACK_MB:.0f} MB",
        met=not missed and bool(with_console.logged) and share <= SHARE_SLACK_MB)]
