"""The steady state's price: appends through the emulator's HTTP API, no faults, snapshots at the template's
policy, priced by the cost ledger (issue 20: at most $2.50 per million appends; issue 35: it stays at most $2.20, the
figure measured before batching, while batched edits cost at most $0.40 a million).

Run: uv run --no-sync python -m bench.bench_cost [--profile dynamodb-local|localstack|both] [--quick]

The emulator runs the template as it deploys (its defaults: SnapshotEvery 1000, each function's MemorySize) on
resources of its own, without faults. A warm-up sheet gets a few edits first, so every function's cold start is
behind us: the steady state is what a busy deployment pays, and a cold start during it is billed with it (Init
included, as Lambda bills it). Then CLIENTS sheets are edited at once, each by one signed client appending as
fast as its answers come, until APPENDS appends were acknowledged; the pipeline drains (every Snapshot entry
complete) and the emulator stops.

Everything is metered from the emulator's log lines after the warm-up, as the chaos report and the live console
meter them (seglog_report.metering): each invocation's billed duration and memory, the AWS requests its
handler made and the capacity they consumed, the pollers' own requests, and the appends the API acknowledged.
The ledger prices them at list prices; durations are measured on this machine, where the local stack shares two
cores with the functions, so they are an upper bound for AWS.

Printed: the ledger; $ per million appends; Lambda billed ms per append (the API's, and every function's) and
per completed snapshot (the worker's); failed conditional writes per committed append (writes a condition
refused, counted by each function's SDK: seglog_emulator.usage). Then bench_memory's MemorySize sweep over the same
invocations.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from bench import bench_memory
from bench.bench_pipeline import Measured, drain, edit_concurrently, emulated, read_log, wall
from bench.support import Headline, deployed, scratch
from seglog_awsmodel.template import default_template_path, load_template
from seglog_client import SeglogClient
from seglog_plugin.chaos.watch import SnapshotWatcher
from seglog_plugin.resources import backend_of
from seglog_report.cost import Ledger, ledger
from seglog_report.metering import Metering
from seglog_stack.local import LocalDeployment

TARGET = 2.20
#: Issue 35: edits per request in the batched run, and its target per million edits.
BATCH, BATCH_TARGET = 10, 0.40
#: Quick (CI's bench step): a smaller sample, enough for a price per append that shows the benchmark still runs;
#: the ledger's arithmetic is checked against a hand calculation by tests/emulator/test_run_report.py.
APPENDS, QUICK_APPENDS = 5_000, 200
#: Sheets edited at once, one client each (5,000 appends make 1,250 a sheet: one snapshot each at the default).
CLIENTS = 4
WARM_EDITS = 5


@dataclass(frozen=True, kw_only=True)
class Priced:
    """The steady state's bill and the figures per append and per snapshot."""

    ledger: Ledger
    appends: int
    snapshots: int
    billed_ms: dict[str, float]
    invocations: dict[str, int]
    conditional_failures: int

    def per_append_ms(self, function: str | None = None) -> float:
        billed = sum(self.billed_ms.values()) if function is None else self.billed_ms.get(function, 0)
        return billed / self.appends if self.appends else float("nan")

    def per_snapshot_ms(self) -> float:
        worker = sum(ms for name, ms in self.billed_ms.items() if "SnapshotWorker" in name)
        return worker / self.snapshots if self.snapshots else float("nan")


def price(records: list[dict[str, Any]], since: float) -> Priced:
    """Meter the log lines from ``since`` on and price them."""
    metering = Metering()
    failures = snapshots = 0
    for record in records:
        if wall(record) < since:
            continue
        event = record.get("event")
        if event == "invocation":
            metering.invocation(record)
            usage = record.get("usage") or {}
            failures += int(float((usage.get("dynamodb") or {}).get("conditional_failures", 0)))
        elif event == "poller usage":
            metering.poller(record)
        elif event == "request":
            metering.request(record)
        elif event == "snapshot job" and record.get("outcome") == "completed":
            snapshots += 1
    meter = metering.meter
    return Priced(ledger=ledger(meter), appends=meter.appends, snapshots=snapshots,
                  billed_ms={name: use.billed_ms for name, use in meter.functions.items()},
                  invocations={name: use.invocations for name, use in meter.functions.items()},
                  conditional_failures=failures)


def run(deployment: LocalDeployment, quick: bool, *, snapshot_every: int | None = None,
        batch: int = 1) -> list[Headline]:
    """The steady state at the template's SnapshotEvery, or at ``snapshot_every`` (bench_memory's snapshot-heavy
    run: then the price is not the steady state's headline); with ``batch`` > 1, each append an edits entry of that
    many edits, priced per million edits (issue 35)."""
    appends = QUICK_APPENDS if quick else APPENDS
    template = default_template_path()
    every = snapshot_every or int(load_template(template).body["Parameters"]["SnapshotEvery"]["Default"])
    parameters = {"SnapshotEvery": every} if snapshot_every else {}
    print(f"\n## steady state through the HTTP API, priced ({appends:,} appends on {CLIENTS} sheets, "
          f"{batch} edit{'s' if batch > 1 else ''} each, SnapshotEvery={every}, no faults)", flush=True)
    measured = Measured()
    with scratch("seglog-bench-cost-") as work:
        log_path = work / "emulator.log"
        with emulated(deployment, prefix="bench-cost", parameters=parameters, work=work,
                      log_path=log_path) as (pipe, supervisor, _):
            url, credentials = supervisor.api_url, supervisor.settings.api_credentials[0]
            client = SeglogClient(url, credentials=credentials)
            edit_concurrently(url, credentials, [client.create().log_id], measured, rate=20.0, count=WARM_EDITS)
            sheets = [client.create().log_id for _ in range(CLIENTS)]
            measured.acks.clear()
            measured.since = time.time()
            started = time.monotonic()
            edit_concurrently(url, credentials, sheets, measured, rate=1_000.0, count=-(-appends // CLIENTS),
                              batch=batch)
            measured.seconds = time.monotonic() - started
            measured.load = os.getloadavg()[0]
            expected = sum(1 for (_, _, num) in measured.acks if num % every == 0)
            watcher = SnapshotWatcher(backend_of(pipe), sheets).start()
            try:
                drain(watcher, expected=expected)
            finally:
                watcher.stop()
        records = [r for r in read_log(log_path) if wall(r) >= measured.since]
        priced = price(records, measured.since)
        sizes = bench_memory.sweep(r for r in records if r.get("event") == "invocation")
    if batch > 1:
        return report_batched(priced, measured, batch)
    headlines = report(priced, measured, every=None if snapshot_every is None else every)
    return headlines + bench_memory.report(sizes, priced.appends)


def run_batched(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    """The steady state with :data:`BATCH` edits per request (issue 35)."""
    return run(deployment, quick, batch=BATCH)


def report_batched(priced: Priced, measured: Measured, batch: int) -> list[Headline]:
    """The ledger of a batched run, and its price per million edits (each acknowledged append holds ``batch``)."""
    for failure in measured.failures[:5]:
        print(f"  ! client gave up: {failure}")
    print(priced.ledger.render())
    edits = priced.appends * batch
    per_million = priced.ledger.total / edits * 1_000_000 if edits else None
    figure = "no appends" if per_million is None else (
        f"${per_million:.2f} ({edits:,} edits in {priced.appends:,} requests, {priced.per_append_ms():.1f} Lambda "
        "ms billed per request)")
    return [Headline(name=f"steady-state $ per million edits, {batch} edits per request", figure=figure,
                     target=f"<= ${BATCH_TARGET:.2f}",
                     met=per_million is not None and not measured.failures and per_million <= BATCH_TARGET)]


def run_both(deployment: LocalDeployment, quick: bool) -> list[Headline]:
    return run(deployment, quick) + run_batched(deployment, quick)


def report(priced: Priced, measured: Measured, *, every: int | None = None) -> list[Headline]:
    """Print the figures; the headline is the steady state's unless ``every`` names another SnapshotEvery."""
    print(f"{len(measured.acks):,} appends acknowledged in {measured.seconds:.1f} s "
          f"({len(measured.acks) / max(measured.seconds, 1e-9):.0f}/s), load average {measured.load:.1f} on "
          f"{os.cpu_count()} CPUs; {priced.snapshots} snapshots completed")
    for failure in measured.failures[:5]:
        print(f"  ! client gave up: {failure}")
    print(priced.ledger.render())
    print("durations are measured on this machine, where the local stack shares the CPUs: an upper bound for AWS")
    for name in sorted(priced.billed_ms):
        print(f"  {name}: {priced.invocations[name]:,} invocations, {priced.billed_ms[name]:,.0f} ms billed, "
              f"{priced.per_append_ms(name):.2f} ms per append")
    per_million = priced.ledger.per_million_appends
    failures = priced.conditional_failures / priced.appends if priced.appends else float("nan")
    print(f"Lambda billed per append: {priced.per_append_ms():.2f} ms; snapshot worker billed per completed "
          f"snapshot: {priced.per_snapshot_ms():,.0f} ms; failed conditional writes per committed append: "
          f"{failures:.3f}")
    figure = "no appends" if per_million is None else (
        f"${per_million:.2f} ({priced.appends:,} appends, {priced.per_append_ms():.1f} Lambda ms billed each, "
        f"{priced.per_snapshot_ms():,.0f} ms per snapshot, {failures:.2f} failed conditional writes each)")
    if every is not None:
        return [Headline(name=f"$ per million appends at SnapshotEvery={every}", figure=figure,
                         target="context (the steady state's is at the template's SnapshotEvery)", met=None)]
    return [Headline(name="steady-state $ per million appends", figure=figure, target=f"<= ${TARGET:.2f}",
                     met=per_million is not None and not measured.failures and per_million <= TARGET)]


if __name__ == "__main__":
    deployed(__doc__.splitlines()[0], run_both)
