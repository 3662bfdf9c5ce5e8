"""seglog demo: the main job. Stack up, a sheet, concurrent simulated clients editing it, the result verified."""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from seglog_aws import local
from seglog_cli.context import reports_errors, settings
from seglog_core.errors import SeglogError
from seglog_core.log import EventLog
from seglog_core.schema import Body, CellValue, EntryType, Import, InsertRow, SetCell, SetRange
from seglog_core.sheet import render
from seglog_core.verify import verify_log
from seglog_emulator.inline import InlinePipeline

PRODUCTS = ["Nails", "Screws", "Bolts", "Washers", "Hinges", "Brackets", "Rivets", "Dowels"]


@dataclass
class ClientStats:
    appends: int = 0
    attempts: list[int] = field(default_factory=list)
    deduplicated: int = 0
    errors: list[str] = field(default_factory=list)
    acknowledged: list[uuid.UUID] = field(default_factory=list)


def _edit(rng: random.Random, client: int, n: int) -> Body:
    """One simulated user edit: mostly single cells, sometimes a row insert or a block."""
    roll = rng.random()
    row = rng.randint(2, 20)
    if roll < 0.06:
        return InsertRow(after=rng.randint(1, 20), values=[rng.choice(PRODUCTS), round(rng.uniform(0.01, 9), 2)])
    if roll < 0.12:
        return SetRange(row=row, col=5, values=[[f"c{client}", n], [rng.randint(1, 99), None]])
    col = rng.randint(1, 4)
    value: int | float | str = (rng.choice(PRODUCTS) if col == 1 else rng.randint(1, 500) if col == 3
                                else round(rng.uniform(0.01, 9), 2))
    return SetCell(row=row, col=col, value=value)


def _client(event_log: EventLog, log_id: uuid.UUID, client: int, edits: int, seed: int, stats: ClientStats,
            progress: Progress, task: object) -> None:
    rng = random.Random(seed * 1000 + client)
    for n in range(edits):
        entry_id = uuid.uuid4()
        try:
            done = event_log.append(log_id, _edit(rng, client, n), entry_id=entry_id)
        except SeglogError as exc:
            stats.errors.append(str(exc))
        else:
            stats.appends += 1
            stats.attempts.append(done.attempts)
            stats.deduplicated += done.deduplicated
            stats.acknowledged.append(entry_id)
        progress.advance(task)  # type: ignore[arg-type]
        time.sleep(rng.uniform(0, 0.01))  # think time


def _snapshot_counts(backend: Any, log_id: uuid.UUID) -> tuple[int, int]:
    snaps = [e for e in backend.reader().all_entries(log_id) if e.type is EntryType.SNAPSHOT]
    return len(snaps), sum(e.snapshot_root is not None for e in snaps)


@click.command()
@click.option("--clients", default=8, show_default=True, help="Concurrent simulated clients.")
@click.option("--edits", default=25, show_default=True, help="Edits per client.")
@click.option("--snapshot-every", default=40, show_default=True, help="A Snapshot entry every this many entries.")
@click.option("--seed", default=1, show_default=True, help="Seed of the simulated edits.")
@click.pass_context
@reports_errors
def demo(ctx: click.Context, clients: int, edits: int, snapshot_every: int, seed: int) -> None:
    """Bring the stack up, create a sheet, let concurrent clients edit it while the pipeline builds snapshots,
    load it from its latest snapshot, print it and verify the log (DESIGN §6 I1-I6)."""
    console = Console(stderr=False)
    config = settings(ctx).stack_config()
    with console.status("starting the local stack (the first run installs LocalStack and DynamoDB Local)"):
        deployment = local.up(config)
    console.print(f"[bold]local stack[/] up, profile {deployment.profile}: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(deployment.endpoints.items())))
    backend = deployment.backend()
    pipeline = InlinePipeline(deployment)
    pipeline.start()
    console.print("[bold]pipeline[/] running in this process: Entries stream -> stream_router -> SQS -> "
                  "snapshot_worker (the deployed handlers, fed Lambda events)")
    setup = backend.event_log(snapshot_every=snapshot_every)
    log_id = setup.create()
    console.print(f"[bold]sheet[/] {log_id}")
    header: list[list[CellValue]] = [["Product", "Price", "Qty", "Cost", "Note", "By"]]
    big: list[list[CellValue]] = [
        [PRODUCTS[i % len(PRODUCTS)], i, i * 2, f"row {i} " + "x" * 40] for i in range(400)
    ]
    setup.append(log_id, Import(source="demo/generated.csv", format="csv", rows=header + big[:20]))
    large = setup.append(log_id, SetRange(row=30, col=1, values=big))
    console.print(f"imported a header; appended a {len(big)}-row block whose body went to S3: "
                  f"{large.entry.external}")

    stats = [ClientStats() for _ in range(clients)]
    started = time.monotonic()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        task = progress.add_task(f"{clients} clients editing", total=clients * edits)
        snaps = progress.add_task("snapshots built", total=1)
        threads = [threading.Thread(target=_client, args=(backend.event_log(snapshot_every=snapshot_every), log_id,
                                                          i, edits, seed, stats[i], progress, task))
                   for i in range(clients)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            total, done = _snapshot_counts(backend, log_id)
            progress.update(snaps, total=total, completed=done)
            time.sleep(0.3)
        elapsed = time.monotonic() - started
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # quiescence: every Snapshot entry complete, nothing pending
            total, done = _snapshot_counts(backend, log_id)
            progress.update(snaps, total=total, completed=done)
            if done == total and not backend.pending.for_log(log_id):
                break
            time.sleep(0.3)
    quiesced = time.monotonic() - started - elapsed
    pipeline.stop()

    attempts = sorted(a for s in stats for a in s.attempts)
    appended = sum(s.appends for s in stats)
    failures = [e for s in stats for e in s.errors]
    console.print(f"{appended} edits appended in {elapsed:.1f}s ({appended / elapsed:.0f}/s); attempts per append "
                  f"p50 {statistics.median(attempts):.0f}, p99 {attempts[int(0.99 * (len(attempts) - 1))]}; "
                  f"failures {len(failures)}")
    for op, figures in backend.meter.snapshot().items():
        console.print(f"  DynamoDB {op:<18} calls {figures['calls']:>6.0f}  RCU {figures['rcu']:>8.1f}  "
                      f"WCU {figures['wcu']:>8.1f}")

    total, done = _snapshot_counts(backend, log_id)
    console.print(f"snapshots: {done} of {total} built by the pipeline, quiescent {quiesced:.1f}s after the last "
                  f"edit ({pipeline.stats['messages_done']} jobs done, {pipeline.stats['messages_kept']} deferred "
                  f"or kept, {pipeline.stats['stream_records']} stream records routed)")
    state, view = backend.document().load(log_id)
    console.print(render(state, max_rows=24, max_cols=6))
    console.print(f"loaded from snapshot {view.snapshot.segment}/{view.snapshot.num} "
                  f"({view.snapshot.snapshot_root}) + {len(view.entries)} entries after it")
    report = verify_log(backend.store, log_id, acknowledged=[i for s in stats for i in s.acknowledged],
                        blobs=backend.blobs, pending=backend.pending, quiescent=True)
    verdict = "[green]verified[/]" if report.ok else "[red]VIOLATIONS[/]"
    console.print(f"{verdict}: {report.entries} entries in {report.segments} segment(s), {report.completed} "
                  f"snapshots each equal to the fold of the log, {report.objects} snapshot objects, "
                  f"{len(report.violations)} violations (DESIGN §6 I1-I6)")
    for v in report.violations:
        console.print(f"  {v.invariant}: {v.message}")
    console.print(f"next: seglog sheet show {log_id} | seglog log verify {log_id} --json | seglog down")
    if not report.ok or failures:
        ctx.exit(1)
