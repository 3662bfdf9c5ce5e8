"""seglog reprocess / rebuild / redrive: the manual fallbacks of the snapshot pipeline (seed 001 "Manual Fallback")."""

from __future__ import annotations

import datetime as dt
import os

import click

from seglog_aws.redrive import redrive as redrive_queue
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_cli.context import echo_json, parse_log_id, reports_errors, settings
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS
from seglog_core.pipeline.fallback import rebuild as rebuild_log
from seglog_core.pipeline.fallback import reprocess as reprocess_logs
from seglog_core.snapshot import DEFAULT_CHUNK_CELLS


def _parse_since(value: str) -> float:
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date: write 2026-11-22 or 2026-11-22T10:30") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


@click.command()
@click.option("--since", required=True, help="ISO date or time (UTC unless it says otherwise).")
@click.option("--log", "logs", multiple=True, help="Only these logs (default: every log).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@reports_errors
def reprocess(ctx: click.Context, since: str, logs: tuple[str, ...], as_json: bool) -> None:
    """Re-enqueue every incomplete Snapshot entry since a date and untag the large bodies entries reference.

    Safe while the pipeline runs: duplicate jobs are absorbed by the worker."""
    backend = settings(ctx).backend()
    report = reprocess_logs(backend.store, backend.blobs, backend.queue, since=_parse_since(since),
                            log_ids=[parse_log_id(x) for x in logs] or None)
    if as_json:
        echo_json({"logs": report.logs, "entries": report.entries, "enqueued": report.enqueued,
                   "kept": report.kept})
        return
    click.echo(f"{report.logs} logs, {report.entries} entries since {since}: {len(report.enqueued)} snapshot jobs "
               f"enqueued, {len(report.kept)} large bodies untagged")


@click.command()
@click.argument("log")
@click.option("--takeover", type=click.IntRange(min=1), default=DEFAULT_TAKEOVER_SECONDS, show_default=True,
              metavar="SECONDS",
              help="The snapshot worker's takeover timeout (SnapshotTakeoverSeconds): a build claimed more recently "
                   "is left to its worker, an older claim is taken over.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@reports_errors
def rebuild(ctx: click.Context, log: str, takeover: int, as_json: bool) -> None:
    """Recreate the snapshots of a log from the log, in order (safe while the pipeline runs).

    Completed snapshots are checked against the fold and never written over (only restored when their objects are
    gone); where retention deleted the history, the fold starts at the oldest retained completed snapshot. An
    incomplete one is claimed as a worker claims it; one a worker is building is left to it. Exit 1 when a
    snapshot differs from the fold or cannot be built."""
    backend = settings(ctx).backend()
    document = backend.document()
    chunk_cells = int(os.environ.get("SEGLOG_CHUNK_CELLS", DEFAULT_CHUNK_CELLS))
    report = rebuild_log(backend.store, backend.blobs, backend.pending, parse_log_id(log), body_of=document.body,
                         chunk_cells=chunk_cells, takeover_after=takeover)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"checked {report.snapshots} snapshots against the log; completed {len(report.completed)} that "
                   f"were not; restored {len(report.restored)} whose objects were gone; {len(report.strays)} stray "
                   "objects (from another chunk size) left for review")
        if report.gone:
            click.echo(f"  segments {report.gone} are retired (deleted): the fold started again at "
                       f"{report.started_from or 'no completed snapshot'}")
        for segment, entry, reason in report.refused:
            click.echo(f"  snapshot {segment}/{entry} left as it is: {reason}; run `seglog log verify {log}`")
        if report.left:
            click.echo(f"  snapshots {report.left} left to the pipeline: a worker holds a live claim on the first "
                       "(later ones complete after it); their jobs complete them")
        if report.unbuildable:
            click.echo(f"  snapshots {report.unbuildable} cannot be built: the history before them is gone and no "
                       "completed snapshot since; restore the deleted segments from a backup to build them")
    if not report.ok:
        ctx.exit(1)


@click.command()
@click.option("--limit", type=click.IntRange(min=1), help="Move at most this many messages (default: all).")
@click.option("--delay", type=click.IntRange(min=0, max=900), default=DEFAULT_TAKEOVER_SECONDS, show_default=True,
              metavar="SECONDS",
              help="Each job reaches the queue this late: the snapshot worker's takeover timeout "
                   "(SnapshotTakeoverSeconds), so a job whose claimer died finds the claim stale and takes it over.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@reports_errors
def redrive(ctx: click.Context, limit: int | None, delay: int, as_json: bool) -> None:
    """Move snapshot jobs from the dead-letter queue back to the snapshot queue, as new messages.

    Safe while the pipeline runs: each job arrives ``--delay`` seconds later, when a claim its dead claimer left
    is stale, and takes it over; a job that finds a claim another message keeps live, or the snapshot done, is
    absorbed as a duplicate."""
    backend = settings(ctx).backend()
    queue_url, dlq_url = backend.resources.queue_url, backend.resources.dlq_url
    if not queue_url or not dlq_url:
        raise click.ClickException("the snapshot queue or its dead-letter queue is unknown: set SEGLOG_QUEUE_URL and "
                                   "SEGLOG_DLQ_URL (the stack's outputs), or run `seglog up` locally")
    moved = redrive_queue(backend.sqs, dlq_url=dlq_url, queue_url=queue_url, limit=limit, delay=delay)
    left = SqsJobQueue(backend.sqs, queue_url=dlq_url).depth()
    if as_json:
        echo_json({"moved": moved, "left_in_dlq": left, "dlq_url": dlq_url, "queue_url": queue_url})
        return
    click.echo(f"moved {moved} snapshot jobs from the dead-letter queue to the snapshot queue (new messages, "
               f"visible in {delay} s); {left} left in the dead-letter queue")
    if left:
        click.echo("  those left are in flight or beyond --limit: run `seglog redrive` again to move them")
