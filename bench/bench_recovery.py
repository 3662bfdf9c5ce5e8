"""How soon the API answers again after the emulator's parts restart (issue 34, point 3).

Run: uv run --no-sync python -m bench.bench_recovery [--profile ...] [--quick] [--times N]

The emulator runs on resources of its own on the bench stack, without faults. Each round kills one part with
SIGKILL, as a crash or a chaos fault would, and times from the kill to the first answer of a signed request that
was sent right after it (and sent again at once if it got no answer):

gateway     the gateway child (its supervisor starts it again after the restart pause);
supervisor  the whole supervisor and its children, started again the way ``seglog chaos``'s supervisor_restart
            does (SupervisorProcess.restart);
worker      the API function's warm worker processes (the next request starts a cold one, Init included).

The API's listening socket outlives all three (seglog_emulator.settings.LISTENER_ENV): a request sent meanwhile
waits in its backlog instead of being refused, and every figure should stay under
``seglog_emulator.supervisor.API_RECOVERY_SECONDS``, the bound the chaos clients' patience is derived from.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from bench.bench_pipeline import emulated
from bench.support import Headline, local_deployment, percentile, profiles, quiet_logs
from seglog_client import SeglogClient
from seglog_client.errors import RetriesExhaustedError
from seglog_emulator.supervisor import API_RECOVERY_SECONDS, STATE_FILE
from seglog_stack.local import LocalDeployment


def _answered_after(client: SeglogClient, kill: Callable[[], None]) -> tuple[float, int]:
    """Seconds from ``kill()`` to the first answer, and how many tries that took."""
    killed = time.monotonic()
    kill()
    tries = 0
    while True:
        tries += 1
        try:
            client.openapi()
            return time.monotonic() - killed, tries
        except RetriesExhaustedError:  # no answer (a connection the dying process had accepted): at once again
            if time.monotonic() - killed > 120:
                raise
            time.sleep(0.05)


def _children(state: Path) -> dict[str, int]:
    return json.loads((state / STATE_FILE).read_text())["children"]


def measure(deployment: LocalDeployment, *, times: int, work: Path) -> list[Headline]:
    print(f"\n## the API after a restart ({times} of each, no faults; bound {API_RECOVERY_SECONDS:.0f} s)",
          flush=True)
    found: dict[str, list[float]] = {"gateway": [], "supervisor": [], "worker": []}
    with emulated(deployment, prefix="bench-rec", parameters={}, work=work,
                  log_path=work / "emulator.log") as (_, supervisor, _ready):
        settings = supervisor.settings
        client = SeglogClient(supervisor.api_url, credentials=settings.api_credentials[0], max_tries=1)
        client.openapi()  # warm
        state = settings.state_dir
        for _ in range(times):
            gateway = next(pid for name, pid in _children(state).items() if name.startswith("gateway:"))
            seconds, _ = _answered_after(client, lambda pid=gateway: os.kill(pid, signal.SIGKILL))
            found["gateway"].append(seconds)
            time.sleep(6)  # past the child's healthy time: the next kill restarts after the base pause
            gateway = next(pid for name, pid in _children(state).items() if name.startswith("gateway:"))
            workers = [p.pid for p in psutil.Process(gateway).children()]
            seconds, _ = _answered_after(client, lambda ws=workers: [os.kill(w, signal.SIGKILL) for w in ws])
            found["worker"].append(seconds)
            seconds, _ = _answered_after(client, supervisor.restart)
            found["supervisor"].append(seconds)
            time.sleep(1)
    headlines = []
    for part, values in found.items():
        p50, worst = percentile(values, 50), max(values)
        print(f"  {part:10s} answered again after p50 {p50:.2f} s, max {worst:.2f} s  ({len(values)} kills)")
        headlines.append(Headline(name=f"API answers again after a {part} restart (p50 / max)",
                                  figure=f"{p50:.2f} s / {worst:.2f} s", target=f"max <= {API_RECOVERY_SECONDS:.0f} s",
                                  met=worst <= API_RECOVERY_SECONDS))
    return headlines


def run(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    """For ``./dev bench``: one kill of each part quick, else five."""
    with tempfile.TemporaryDirectory(prefix="bench-rec-") as work:
        return measure(deployment, times=1 if quick else 5, work=Path(work))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=("dynamodb-local", "localstack", "both"), default="dynamodb-local")
    parser.add_argument("--quick", action="store_true", help="one kill of each")
    parser.add_argument("--times", type=int, default=5)
    args = parser.parse_args()
    quiet_logs()
    summary: list[str] = []
    for profile in profiles(args.profile):
        with local_deployment(profile) as deployment, tempfile.TemporaryDirectory(prefix="bench-rec-") as work:
            summary += [h.line(profile) for h in measure(deployment, times=1 if args.quick else args.times,
                                                         work=Path(work))]
    print("\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
