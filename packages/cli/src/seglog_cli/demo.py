"""seglog demo: the main job, and the showcase (issue 4, point 5).

Stack up; the emulator started on fresh resources (HTTP gateway, stream and queue pollers, the deployed
handlers in worker processes); simulated clients editing a sheet through the HTTP API while moderate faults
are injected on a seeded schedule; a live view of entries, snapshots, faults and invocations in flight; then
faults off, quiescence, the sheet loaded from its latest snapshot, and the verify report (DESIGN §6 I1-I6).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from seglog_cli.build_commands import artifact_option, emulated_artifact, template_option
from seglog_cli.context import reports_errors, settings
from seglog_cli.reports import command_line, interruptible, report_directory, report_option
from seglog_core.sheet import render
from seglog_emulator.child import read_statuses
from seglog_emulator.faults.plan import FaultPlan
from seglog_plugin.chaos import Campaign, RunProgress, Workload, default_plan
from seglog_plugin.chaos.watch import percentile
from seglog_plugin.resources import backend_of
from seglog_report.html import publish
from seglog_stack import StackManager

#: The demo's faults fire at this share of a chaos run's rates: visible, never in the way.
DEMO_RATE_FACTOR = 0.5


def demo_plan(seed: int, faults: str) -> FaultPlan | None:
    if faults == "none":
        return None
    plan = default_plan(seed, faults).to_mapping()
    for entry in plan["faults"].values():
        entry["rate"] = round(entry["rate"] * DEMO_RATE_FACTOR, 4)
    return FaultPlan.from_mapping(plan, source="demo")


class InvocationCounts:
    """Invocations so far per emulator child, over every process that child has had.

    A child's status file counts what the process writing it invoked: a child started again (a poller_restart,
    and a supervisor_restart restarts them all) counts from 0. The chaos runner's supervisor restarts fire up to
    the end of the fault tail, after the clients are done, so the API's new process often never gets a request
    and the view said "ApiFunction: 0 (0 so far)" after 125 invocations (issue 21). This keeps each process's
    last count (the view reads the files four times a second, as often as a child writes them) and adds them up.
    """

    def __init__(self) -> None:
        self._seen: dict[str, dict[int, int]] = {}

    def update(self, statuses: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
        """``(function, in flight now, invocations so far)`` per child that runs a function."""
        found = []
        for status in statuses:
            if not status.get("function"):
                continue
            processes = self._seen.setdefault(str(status.get("child") or status["function"]), {})
            pid = int(status.get("pid") or 0)
            processes[pid] = max(processes.get(pid, 0), int(status.get("invocations") or 0))
            found.append((str(status["function"]), int(status.get("in_flight") or 0), sum(processes.values())))
        return found


def live_view(progress: RunProgress, invoked: InvocationCounts) -> Table:
    """One frame of the live view (``invoked`` carries the invocation counts from one frame to the next)."""
    stats = progress.stats
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row("phase", progress.phase)
    lost = stats.statuses.get("lost", 0) + sum(n for s, n in stats.statuses.items() if s.startswith("5"))
    table.add_row("entries", f"{stats.appends} of {progress.planned_edits} edits appended  "
                             f"({stats.retries} client retries, {lost} lost or failed answers, "
                             f"{stats.deduplicated} retries found already appended)")
    if progress.watcher is not None:
        done = progress.watcher.latencies()
        seen = len(done) + len(progress.watcher.incomplete())
        p50 = percentile(done, 50)
        table.add_row("snapshots", f"{len(done)} of {seen} built"
                      + (f"  (entry committed -> snapshot complete: p50 {p50:.2f}s)" if p50 is not None else ""))
    if progress.runtime is not None:
        counts = {k: v for k, v in progress.runtime.counts().items() if v}
        table.add_row("faults", ", ".join(f"{k} {v}" for k, v in counts.items()) or "none yet"
                      + ("" if progress.runtime.active else "  (stopped)"))
    invocations = invoked.update(read_statuses(progress.state_dir))
    if invocations:
        table.add_row("invocations", "  ".join(f"{function} {total} so far, {in_flight} in flight"
                                               for function, in_flight, total in invocations))
    return table


@click.command()
@click.option("--clients", default=6, show_default=True, help="Concurrent simulated clients.")
@click.option("--edits", default=20, show_default=True, help="Edits per client.")
@click.option("--snapshot-every", default=20, show_default=True, help="A Snapshot entry every this many entries.")
@click.option("--faults", default="all", show_default=True,
              help="Fault kinds to inject (comma-separated, 'all', or 'none' for a quiet demo).")
@click.option("--seed", default=1, show_default=True, help="Seed of the edits and of the fault schedule.")
@report_option
@template_option
@artifact_option
@click.pass_context
@reports_errors
def demo(ctx: click.Context, clients: int, edits: int, snapshot_every: int, faults: str, seed: int,
         report_dir: Path | None, template: Path | None, artifact: Path | None) -> None:
    """Stack up, the emulator on fresh resources, clients editing a sheet through the HTTP API under seeded
    faults with a live view; then quiescence, the sheet loaded from its latest snapshot, and verify (I1-I6)."""
    console = Console()
    config = settings(ctx).stack_config()
    code = emulated_artifact(artifact, template)
    with console.status("starting the local stack (the first run installs LocalStack and DynamoDB Local)"):
        info = StackManager(config).up()
        campaign = Campaign(dict(info.endpoints), profile=str(config.profile), region=config.region,
                            state_root=config.run_dir / "demo", prefix="seglog-demo", template=template,
                            artifact=code,
                            parameters={"SnapshotEvery": snapshot_every},
                            workload=Workload(sheets=1, clients=clients, edits=edits, large_rows=400))
    console.print(f"[bold]local stack[/] up, profile {config.profile}: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(info.endpoints.items())))
    console.print(f"[bold]emulator[/] on stack {campaign.stack}: HTTP gateway -> api; Entries stream -> "
                  "stream_router -> SQS -> snapshot_worker; each function in its own worker processes")
    plan = demo_plan(seed, faults)
    console.print(f"[bold]faults[/] {faults} (seed {seed}): "
                  + (", ".join(f"{k} {v.rate:.3f}" for k, v in plan.specs.items()) if plan else "none"))
    frame: dict[str, Any] = {}
    invoked = InvocationCounts()
    with (interruptible() as stopped,
          Live(Text("starting the emulator..."), console=console, refresh_per_second=4, transient=False) as live):
        def monitor(progress: RunProgress) -> None:
            frame["table"] = live_view(progress, invoked)
            live.update(frame["table"])

        result = campaign.run(seed, 1, faults=faults, base=plan, monitor=monitor, kind="demo")
    console.print()
    console.print(result.render())
    page, priced = publish(result.to_report(command_line(ctx)), report_directory(report_dir, config.run_dir, "demo"))
    if result.interrupted or not result.runs:
        campaign.close(keep=not result.ok)
        console.print(f"[bold]interrupted[/]: the run is drawn from what its log held: {page}")
        ctx.exit(stopped.status)
    report = result.runs[0]
    console.out(priced.render())  # a table: never wrapped to the terminal's width
    backend = backend_of(campaign.deployment)
    for log_id in report.log_ids:
        try:
            state, view = backend.document().load(uuid.UUID(log_id))
        except Exception as exc:  # the verify report above says why; the demo still ends cleanly
            console.print(f"[red]cannot load sheet {log_id}[/]: {exc}")
            continue
        console.print(Group(Text(f"sheet {log_id}", style="bold"), render(state, max_rows=16, max_cols=6)))
        console.print(f"loaded from snapshot {view.snapshot.segment}/{view.snapshot.num} "
                      f"({view.snapshot.snapshot_root}) + {len(view.entries)} entries after it")
    verdict = "[green]verified[/]" if report.ok else "[red]VIOLATIONS[/]"
    console.print(f"{verdict}: {report.clients.get('appends', 0)} acknowledged edits each in the log exactly once, "
                  f"{report.snapshots} snapshots each equal to the fold of the log, quiescent "
                  f"{report.quiescence_seconds}s after the faults stopped, {len(report.violations)} violations "
                  "(DESIGN §6 I1-I6)")
    campaign.close(keep=not report.ok)
    console.print(f"logs: {campaign.state_dir}   replay: seglog demo --seed {seed} --faults {faults}   "
                  f"more: seglog chaos --runs 20")
    console.print(f"[bold]report[/]: {page}  (the timeline, latencies and cost; opens offline in a browser)")
    if not report.ok:
        ctx.exit(1)
