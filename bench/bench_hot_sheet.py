"""A hot sheet, in simulated time: N editors on one sheet through the HTTP API (issue 35).

Run: uv run --no-sync python -m bench.bench_hot_sheet [--quick] [--editors N ...] [--mode pace|full ...]
     [--seconds S] [--rebases K ...]

Why simulated: 16 writer processes on a 2-core machine measure the CPU, not the protocol (bench_contention). Here
each editor is a :class:`seglog_client.SeglogClient` in a world of its own (seglog_sim): its tries go through the
simulated API Gateway to the real API handler (append_after), which runs on the real adapters against the
simulated DynamoDB, S3 and SQS, the pipeline's real functions building snapshots beside it. Nothing is faulted;
what limits the sheet is DynamoDB's per-partition throughput (1,000 write units and 3,000 read units a second per
partition key: seglog_sim.aws.dynamodb_throughput), the chain of conditional puts on one partition key, and the
backoff each loser sleeps inside the handler, billed as Lambda bills it.

Latencies, each way: DynamoDB 1-6 ms and S3 5-30 ms as every seed draws them (seglog_sim.cloud.LATENCY); between the
editor and the API function :data:`API_LATENCY` (the internet, API Gateway, Lambda's invoke; AWS publishes no
figure, so this is the benchmark's choice).

Editors: 1, 4, 16, 64, 100, 128 and 256 on one sheet (``--quick``: 1, 16, 64 and 100, for a third of the time),
each for :data:`SECONDS` simulated seconds,

* at a person's pace: an edit about every second (exponential gaps), and one time in ten a burst of 3-6 edits a
  tenth of a second apart (a paste, a fill-down);
* at full speed: the next edit as soon as the last is answered.

Each editor sends the position of its own last answer as ``since`` (seglog_client's default), so the server reads
forward past every other editor's entries since then.

Printed per row: goodput (acknowledged appends a simulated second), p50/p99 append latency (first try to answer,
retries included), refused writes (conditional puts lost to another writer) and throttles (DynamoDB's) per
acknowledged append, 503s the editors received per append, edits given up, acknowledged edits the sheet does not
hold and entry ids it holds twice (both must be 0), Lambda ms billed per append, and dollars per million edits priced
from the run's own meter (seglog_sim.metering -> seglog_report.cost: API Gateway requests, DynamoDB units, Lambda
billed duration with the backoff sleeps inside the handler, S3, SQS).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from bench.support import Headline, percentile
from seglog_client import entries as client_entries
from seglog_client.errors import ApiError, RetriesExhaustedError
from seglog_client.models import START
from seglog_report.cost import ledger
from seglog_services.api.routes import hosting
from seglog_sim import quiet_logs
from seglog_sim.metering import meter_of
from seglog_sim.phases import Run, build
from seglog_sim.scenario import Scenario
from seglog_sim.workload import new_id
from seglog_sim.world import Task, World

#: The issue's counts, and 100 and 128 to place the knee against the target.
EDITORS: Final = (1, 4, 16, 64, 100, 128, 256)
QUICK_EDITORS: Final = (1, 16, 64, 100)
#: Simulated seconds the editors edit (each finishes the edit under way).
SECONDS: Final = 30.0
#: Quick (CI's bench step): the quick rows for half as long, a smaller sample that shows the benchmark still runs
#: (the real time goes with the appends simulated, about 3 ms each); the targets are the full run's to judge.
QUICK_SECONDS: Final = 10.0
#: Seconds each way between an editor and the API function (see the module docstring).
API_LATENCY: Final = (0.01, 0.04)
#: A person's pace: mean seconds between edits; a burst's chance, length and gaps.
PACE_MEAN: Final = 1.0
BURST_CHANCE: Final = 0.1
BURST_EDITS: Final = (3, 6)
BURST_GAP: Final = (0.05, 0.15)
#: The targets (issue 35).
EDITORS_TARGET: Final = 100
P99_BOUND: Final = 1.0
REFUSED_TARGET: Final = 1.0
#: The world: no faults, the template's snapshot and segment policy, no operators, no other clients.
SCENARIO: Final = Scenario(vary=False, faults=(), logs=1, api_clients=0, library_clients=0, readers=0,
                           vanish_share=0.0, reuse_share=0.0, stale_since_share=0.0, pause_share=0.0,
                           return_share=0.0, large_share=0.0, snapshot_every=1000, segment_entries=100_000,
                           chunk_cells=4096, retain=False, retain_delete=False, rebuild=False, reprocess=False,
                           redrive=False, outage_share=0.0, api_latency=API_LATENCY, client_timeout=29.0,
                           parameters=())


@dataclass(kw_only=True)
class Row:
    """One run's figures."""

    mode: str
    editors: int
    seconds: float
    appends: int = 0
    latencies: list[float] = field(default_factory=list)
    refused: int = 0
    throttles: int = 0
    unavailable: int = 0
    gave_up: int = 0
    #: Acknowledged entries the sheet does not hold, and entry ids it holds more than once (both must be 0).
    lost: int = 0
    doubled: int = 0
    dollars_per_million: float = math.nan
    api_ms: float = 0.0

    @property
    def goodput(self) -> float:
        return self.appends / self.seconds if self.seconds else 0.0

    def per_append(self, count: int) -> float:
        return count / self.appends if self.appends else math.nan

    def p(self, q: float) -> float:
        return percentile(sorted(self.latencies), q) if self.latencies else math.nan

    def line(self) -> str:
        return (f"{self.mode:<6} {self.editors:>4} {self.goodput:>9.1f} {1000 * self.p(50):>8.0f} "
                f"{1000 * self.p(99):>8.0f} {self.per_append(self.refused):>9.2f} "
                f"{self.per_append(self.throttles):>9.2f} "
                f"{self.per_append(self.unavailable):>7.2f} {self.gave_up:>6} {self.lost:>4}/{self.doubled:<4} "
                f"{self.api_ms:>8.1f} {self.dollars_per_million:>8.2f}")


HEADER: Final = (f"{'mode':<6} {'eds':>4} {'goodput/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'refused/a':>9} "
                 f"{'thrott/a':>9} {'503/a':>7} {'gaveup':>6} {'lost/dup':>9} {'apims/a':>8} {'$/M':>8}")


def _editor(run: Run, row: Row, log_id: uuid.UUID, until: float, pace: bool) -> None:
    world, ledger_ = run.world, run.clients.ledger
    me = world.current
    rng = run.faults.rng(me)
    client = run.clients.client()
    client.note_position(log_id, START)
    burst = 0
    while world.now < until:
        if pace:
            if burst:
                burst -= 1
                world.sleep(rng.uniform(*BURST_GAP))
            else:
                world.sleep(rng.expovariate(1.0 / PACE_MEAN))
                if rng.random() < BURST_CHANCE:
                    burst = rng.randint(*BURST_EDITS) - 1
        entry_id = new_id(rng)
        asked = world.now
        try:
            client.append(log_id, client_entries.set_cell(f"A{rng.randint(1, 500)}", rng.randint(0, 999)),
                          entry_id=entry_id)
        except (ApiError, RetriesExhaustedError):
            row.gave_up += 1
            continue
        row.latencies.append(world.now - asked)
        ledger_.acknowledged.setdefault(log_id, []).append(entry_id)


def measure(mode: str, editors: int, seconds: float, seed: int = 35, scenario: Scenario = SCENARIO) -> Row:
    """One world: ``editors`` on one sheet for ``seconds`` of simulated time."""
    run = build(seed, scenario)
    world = run.world
    row = Row(mode=mode, editors=editors, seconds=seconds)
    span: list[float] = []

    def bench() -> None:
        log_id = new_id(run.faults.rng(world.current))
        run.clients.create(log_id)
        start = world.now
        until = start + seconds
        tasks: list[Task] = [world.spawn(f"editor-{i}", "client", _editor, run, row, log_id, until, mode == "pace",
                                         delay=random.Random(i).uniform(0.0, 1.0)) for i in range(editors)]
        for task in tasks:
            world.join(task)
        span.extend((start, world.now))
        world.stop()

    def driver(w: World) -> None:
        w.spawn("bench", "client", bench)
        run.pollers.start()

    with hosting(run.lambdas.api_services()):
        try:
            world.run(driver)
        finally:
            world.close()
    row.seconds = span[1] - span[0] if span else seconds
    row.appends = len(row.latencies)
    entries = run.topology.entries_table
    for call in run.cloud.history:
        if call.service != "dynamodb":
            continue
        if call.outcome == "error ProvisionedThroughputExceededException":
            row.throttles += 1
        elif (call.outcome == "error ConditionalCheckFailedException" and call.operation == "PutItem"
              and call.params.get("TableName") == entries):
            row.refused += 1
    row.unavailable = run.clients.ledger.counters.statuses["503"]
    stored = Counter(bytes(item["K"]["B"]) for item in run.ddb.items(entries, copy=False) if "K" in item)
    row.doubled = sum(1 for count in stored.values() if count > 1)
    row.lost = sum(1 for ids in run.clients.ledger.acknowledged.values() for i in ids if i.bytes not in stored)
    meter = meter_of(run)
    priced = ledger(meter)
    row.dollars_per_million = math.nan if priced.per_million_appends is None else priced.per_million_appends
    api = meter.functions.get(run.topology.api.logical_id)
    row.api_ms = api.billed_ms / row.appends if api is not None and row.appends else math.nan
    return row


def _pace_capacity(rows: list[Row]) -> int:
    """The most editors at a person's pace whose p99 stayed within the bound, below the first count that did not."""
    best = 0
    for row in sorted((r for r in rows if r.mode == "pace"), key=lambda r: r.editors):
        if row.p(99) > P99_BOUND or row.gave_up or row.lost or row.doubled:
            break
        best = row.editors
    return best


def counts_of(quick: bool) -> tuple[int, ...]:
    return QUICK_EDITORS if quick else EDITORS


def seconds_of(quick: bool) -> float:
    return QUICK_SECONDS if quick else SECONDS


def headlines(quick: bool) -> list[Headline]:
    quiet_logs()
    counts, seconds = counts_of(quick), seconds_of(quick)
    print(f"## a hot sheet, simulated (bench_hot_sheet): {seconds:.0f} simulated s per row; API latency "
          f"{API_LATENCY[0] * 1000:.0f}-{API_LATENCY[1] * 1000:.0f} ms each way; per partition 1,000 WCU/s, "
          f"3,000 RCU/s")
    print(HEADER)
    rows: list[Row] = []
    started = time.perf_counter()
    for mode in ("pace", "full"):
        for editors in counts:
            row = measure(mode, editors, seconds)
            rows.append(row)
            print(row.line(), flush=True)
    full16 = next((r for r in rows if r.mode == "full" and r.editors == 16), None)
    if full16 is None:  # quick runs measure 16 at full speed whatever their counts
        full16 = measure("full", 16, seconds)
        rows.append(full16)
        print(full16.line(), flush=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"({time.perf_counter() - started:.0f} s of real time; load average {load})")
    capacity = _pace_capacity(rows)
    largest = max(r.editors for r in rows if r.mode == "pace")
    pace_figure = f"{'>= ' if capacity == largest else ''}{capacity} editors (largest run {largest})"
    refused = full16.per_append(full16.refused)
    return [
        Headline(name="hot sheet: editors at p99 <= 1 s (simulated)", figure=pace_figure,
                 target=f">= {EDITORS_TARGET} at a person's pace", met=capacity >= EDITORS_TARGET),
        Headline(name="hot sheet: refused writes per append, 16 writers (API, simulated)",
                 figure=f"{refused:.2f} ({full16.goodput:.0f} appends/s, p99 {1000 * full16.p(99):.0f} ms)",
                 target=f"<= {REFUSED_TARGET:.1f} at full speed", met=refused <= REFUSED_TARGET),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--editors", type=int, nargs="*", help="only these editor counts (both modes)")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--mode", choices=("pace", "full"), nargs="*", default=["pace", "full"])
    parser.add_argument("--rebases", type=int, nargs="*", default=[],
                        help="EventLog.rebases_before_backoff values to sweep (1: append_after as before it rebased)")
    args = parser.parse_args()
    if args.editors or args.rebases:
        quiet_logs()
        print(f"{'rebases':<8}{HEADER}")
        for rebases in args.rebases or [None]:
            scenario = dataclasses.replace(SCENARIO, rebases_before_backoff=rebases)
            for mode in args.mode:
                for editors in args.editors or counts_of(args.quick):
                    row = measure(mode, editors, args.seconds or seconds_of(args.quick), scenario=scenario)
                    print(f"{'default' if rebases is None else rebases:<8}{row.line()}", flush=True)
        return
    for line in headlines(args.quick):
        print(line.line())


if __name__ == "__main__":
    main()
