"""The live console's memory over a long run, and whether it keeps up with a chaos campaign (issue 12, point 3).

(a) synthetic (``./dev bench`` runs it): an hour of a busy emulator — 50 invocations a second (each announced
    and ended), 20 client tries, faults and the pollers' usage lines, ~440,000 events — fed through the
    aggregator on a simulated clock as fast as it takes them, while a page is subscribed to /events. Samples,
    every simulated 5 minutes: Python's traced memory (tracemalloc), the process's RSS, the items the window
    keeps and the size of the state a new page is sent. Flat: the end within 10 % (+1 MB) of the middle, once
    the window has filled (10 minutes in).
(b) real (``--real``): ``seglog chaos --runs 5 --console-port P`` on a stack of its own, with a page subscribed
    to /events; the chaos process (which hosts the console) is sampled every 3 s, and every invocation the runs'
    logs hold must have reached the page.

Run: uv run --no-sync python -m bench.bench_console [--quick] [--real [--runs N]]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import threading
import time
import tracemalloc
from typing import Any, Final

import msgspec

from bench.support import Headline, quiet_logs
from seglog_report.console import Aggregator, Console

#: Flat: the last sample within this ratio (plus FLAT_SLACK_MB) of the middle one.
FLAT_RATIO: Final = 1.10
FLAT_SLACK_MB: Final = 1.0
#: Per simulated second.
INVOCATIONS, CLIENT_TRIES, FAULTS = 50, 20, 2


class SimClock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Page:
    """A page subscribed to /events, reading as fast as it can: what it was pushed, and the invocations it saw."""

    def __init__(self, url: str, *, collect: bool = True) -> None:
        self.url = url
        #: Whether to keep the request id of every invocation seen (not in (a): it would be measured as the
        #: console's memory, which this process hosts).
        self.collect = collect
        self.seq = -1
        self.states = self.deltas = self.bytes = 0
        self.invocations: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-page", daemon=True)

    def start(self) -> Page:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, http.client.HTTPException):  # not up yet, or gone: try again
                self._read()
            self._stop.wait(0.5)

    def _read(self) -> None:
        host, port = self.url.split("//", 1)[1].split("/", 1)[0].split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request("GET", "/events")
            answer = connection.getresponse()
            name, data = "", []
            while not self._stop.is_set() and (line := answer.fp.readline()):
                self.bytes += len(line)
                text = line.decode().rstrip("\n")
                if text.startswith("event: "):
                    name = text[7:]
                elif text.startswith("data: "):
                    data.append(text[6:])
                elif not text and data:
                    self._take(name, json.loads("\n".join(data)))
                    name, data = "", []
        finally:
            connection.close()

    def _take(self, name: str, data: dict[str, Any]) -> None:
        self.seq = data["seq"]
        if name == "state":
            self.states += 1
        else:
            self.deltas += 1
        for item in data["items"] if self.collect else ():
            if item.get("group") == "function" and item.get("outcome") != "incomplete":
                self.invocations.add(str(item.get("ids", {}).get("request_id")))


def flat(megabytes: list[float], *, first: int = 0) -> tuple[str, bool]:
    """"start / mid / end" of a series of memory samples (from index ``first``) and whether it is flat: the end
    within :data:`FLAT_RATIO` (+ :data:`FLAT_SLACK_MB`) of the middle."""
    start, mid, end = megabytes[min(first, len(megabytes) - 1)], megabytes[len(megabytes) // 2], megabytes[-1]
    return f"{start:.1f} / {mid:.1f} / {end:.1f} MB", end <= mid * FLAT_RATIO + FLAT_SLACK_MB


#: What a flat series means, for the headlines.
FLAT_TARGET: Final = f"flat: end <= mid x {FLAT_RATIO} + {FLAT_SLACK_MB:.0f} MB"


def rss_mb(pid: int | None = None) -> float:
    """The resident set of process ``pid`` (this one by default) now, in MB (Linux /proc)."""
    with open(f"/proc/{pid or os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


def feed_second(aggregator: Aggregator, clock: SimClock, rng: random.Random, second: int) -> int:
    """One simulated second of a busy emulator; returns the events fed."""
    fed = 0
    for i in range(INVOCATIONS):
        clock.now += 1 / (INVOCATIONS + CLIENT_TRIES)
        pid = 1000 + rng.randrange(12)
        request_id = f"{second}-{i}"
        aggregator.ingest({"event": "invocation started", "ts": clock.now - 0.05, "function": "SnapshotWorkerFunction",
                           "pid": pid, "request_id": request_id, "sender": 99})
        aggregator.ingest({"event": "invocation", "ts": clock.now, "function": "SnapshotWorkerFunction", "pid": pid,
                           "request_id": request_id, "outcome": rng.choice(("success", "success", "error")),
                           "duration_ms": 50.0, "memory_mb": 1024, "source": "SnapshotWorkerFunction.Jobs",
                           "usage": {"dynamodb": {"requests": 6, "rcu": 2.5, "wcu": 3.0},
                                     "s3": {"requests": 4, "writes": 2, "deletes": 0}}})
        fed += 2
    for i in range(CLIENT_TRIES):
        aggregator.ingest({"event": "client try", "client": f"c{i % 6}", "start": clock.now - 0.1, "end": clock.now,
                           "status": rng.choice(("200", "200", "lost", "503")), "attempt": 1, "method": "POST"})
        fed += 1
    for _ in range(FAULTS):
        aggregator.ingest({"event": "fault injected", "ts": clock.now, "fault": rng.choice(("reorder", "worker_crash")),
                           "lane": f"SnapshotWorkerFunction {1000 + rng.randrange(12)}"})
        fed += 1
    if second % 5 == 0:
        aggregator.ingest({"event": "poller usage", "ts": clock.now, "poller": "SnapshotWorkerFunction.Jobs",
                           "service": "sqs", "requests": 40, "oldest_age_ms": 120})
        aggregator.ingest({"event": "poller usage", "ts": clock.now, "poller": "StreamRouterFunction.Entries",
                           "service": "dynamodbstreams", "requests": 20, "shards": {"shardId-1": 300}})
        fed += 2
    return fed


def synthetic(minutes: int) -> list[Headline]:
    clock = SimClock()
    aggregator = Aggregator(clock=clock)
    rng = random.Random(12)
    samples: list[tuple[int, float, float, int, int]] = []
    fed = 0
    tracemalloc.start()
    started = time.perf_counter()
    with Console(aggregator=aggregator) as console:
        page = Page(console.url, collect=False).start()
        every = minutes * 60 // 12
        for second in range(minutes * 60):
            fed += feed_second(aggregator, clock, rng, second)
            if second % every == every - 1:
                aggregator.tick()
                state = len(msgspec.json.encode(aggregator.state()))
                samples.append((second + 1, tracemalloc.get_traced_memory()[0] / 2**20, rss_mb(),
                                len(aggregator.window), state))
        took = time.perf_counter() - started
        deadline = time.monotonic() + 10
        while page.seq < console.broadcaster.state()["seq"] and time.monotonic() < deadline:
            time.sleep(0.1)
        behind = console.broadcaster.state()["seq"] - page.seq
        page.stop()
    tracemalloc.stop()
    print(f"\n## live console, synthetic (bench_console): {minutes} simulated minutes, {fed:,} events "
          f"in {took:.1f} s ({fed / took:,.0f} events/s into the aggregator)")
    print(f"{'minute':>7} {'traced MB':>10} {'RSS MB':>8} {'kept':>6} {'state KB':>9}")
    for second, traced, rss, kept, state in samples:
        print(f"{second / 60:>7.1f} {traced:>10.2f} {rss:>8.1f} {kept:>6} {state / 1024:>9.0f}")
    print(f"page: {page.states} state(s), {page.deltas} deltas, {page.bytes / 2**20:.1f} MB read, "
          f"{behind} push(es) behind at the end")
    # start: once the window is full (10 minutes of an hour, the second sample of a shorter run)
    traced_figure, traced_flat = flat([sample[1] for sample in samples], first=1)
    rss_figure, _ = flat([sample[2] for sample in samples], first=1)
    return [Headline(name=f"live console memory over {minutes} simulated minutes ({fed:,} events)",
                     figure=f"traced {traced_figure}, RSS {rss_figure} (start/mid/end); page {behind} push(es) behind",
                     target=f"{FLAT_TARGET} (traced), page caught up", met=traced_flat and behind == 0)]


def headlines(quick: bool) -> list[Headline]:
    """The summary line for ``python -m bench``: (a), an hour (10 minutes with ``quick``)."""
    quiet_logs()
    return synthetic(10 if quick else 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 simulated minutes instead of 60")
    parser.add_argument("--real", action="store_true", help="also (b): a seglog chaos campaign with the console")
    parser.add_argument("--runs", type=int, default=5, help="runs of the campaign in (b)")
    args = parser.parse_args()
    lines = headlines(args.quick)
    if args.real:
        from bench.bench_console_chaos import campaign

        lines += campaign(args.runs, Page)
    print("\n" + "\n".join(line.line() for line in lines))


if __name__ == "__main__":
    main()
