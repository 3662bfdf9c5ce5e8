"""bench_console (b): ``seglog chaos --runs N --console-port P`` with a page subscribed, on a stack of its own.

The campaign runs as the command a user types, in a process of its own, from a temporary directory (so its
stack's run directory is its own) on ports no other stack uses; the page reads /events the whole time. Every 3 s
the chaos process's RSS (it hosts the console) and the console's feed figures are sampled. At the end, every
invocation the runs' logs hold must have reached the page: the console kept up. The stack is stopped after.
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
from pathlib import Path
from typing import Any, Final

from bench.bench_console import FLAT_TARGET, flat, rss_mb
from bench.support import Headline
from seglog_emulator.supervisor import free_port

REPO: Final = Path(__file__).resolve().parent.parent
#: (LocalStack, DynamoDB Local) ports of this benchmark's stack.
PORTS: Final = (4690, 8090)
SAMPLE_SECONDS: Final = 3.0


def seglog(*args: str) -> list[str]:
    return [sys.executable, "-c", "from seglog_cli.main import main; main()", *args]


def feed_figures(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url + "state", timeout=5) as answer:
            figures: dict[str, Any] = json.loads(answer.read())["panels"]["feed"]
            return figures
    except (OSError, ValueError, KeyError):
        return {}


def logged_invocations(state_dir: Path) -> set[str]:
    found: set[str] = set()
    for path in state_dir.glob("*/run-*/emulator.log"):
        for line in path.read_text(errors="replace").splitlines():
            if '"invocation"' in line and line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == "invocation":
                    found.add(str(record["request_id"]))
    return found


def campaign(runs: int, page_type: Callable[[str], Any]) -> list[Headline]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory(prefix="seglog-bench-console-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "SEGLOG_LOCALSTACK_PORT": str(PORTS[0]), "SEGLOG_DYNAMODB_PORT": str(PORTS[1])}
        log_path = work / "chaos.err"
        command = seglog("chaos", "--runs", str(runs), "--console-port", str(port), "--template",
                         str(REPO / "template.yaml"), "--state-dir", str(work / "chaos"))
        print(f"\n## live console, real (bench_console --real): seglog chaos --runs {runs} --console-port {port}",
              flush=True)
        samples: list[tuple[float, float, dict[str, Any]]] = []
        page = page_type(url).start()
        started = time.monotonic()
        try:
            with log_path.open("w") as err:
                proc = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err)
                while proc.poll() is None:
                    time.sleep(SAMPLE_SECONDS)
                    if proc.poll() is None and page.seq >= 0:  # the console is up
                        samples.append((time.monotonic() - started, rss_mb(proc.pid), feed_figures(url)))
            took = time.monotonic() - started
        finally:
            page.stop()
            subprocess.run(seglog("down"), cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
        logged = logged_invocations(work / "chaos")
        missed = logged - page.invocations
        print(log_path.read_text()[-3000:])
    print(f"{'seconds':>8} {'RSS MB':>8} {'received':>9} {'kept':>6} {'rolled':>7}")
    for at, rss, feed in samples[:: max(1, len(samples) // 20)] + samples[-1:]:
        print(f"{at:>8.0f} {rss:>8.1f} {feed.get('received', 0):>9} {feed.get('retained', 0):>6} "
              f"{feed.get('evicted', 0):>7}")
    print(f"campaign: exit {proc.returncode} in {took:.0f} s; the runs' logs hold {len(logged):,} invocations, the "
          f"page saw {len(page.invocations & logged):,} of them ({len(missed)} missed); page: {page.states} "
          f"state(s), {page.deltas} deltas")
    if not samples:
        return [Headline(name="live console with seglog chaos", figure="no sample: the console never answered",
                         target="keeps up, flat", met=False)]
    rss_figure, rss_flat = flat([sample[1] for sample in samples])
    return [Headline(name=f"live console with seglog chaos --runs {runs} ({len(logged):,} invocations)",
                     figure=f"chaos process RSS {rss_figure} (start/mid/end); {len(missed)} invocation(s) missed "
                            "by the page",
                     target=f"{FLAT_TARGET}; none missed", met=rss_flat and not missed and bool(logged))]
