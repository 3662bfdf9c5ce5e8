"""seglog log dump / verify / retain."""

from __future__ import annotations

import datetime as dt

import click
import msgspec

from seglog_cli.context import echo_json, parse_log_id, reports_errors, settings
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.verify import verify_log


@click.group("log")
def log_group() -> None:
    """Inspect and check the raw log."""


@log_group.command()
@click.argument("log")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@click.pass_context
@reports_errors
def dump(ctx: click.Context, log: str, as_json: bool) -> None:
    """Print every stored entry in order."""
    log_id = parse_log_id(log)
    backend = settings(ctx).backend()
    for entry in backend.reader().all_entries(log_id):
        record = {
            "segment": entry.segment, "num": entry.num, "type": str(entry.type),
            "entry_id": str(entry.entry_id) if entry.entry_id else None, "external": entry.external,
            "created": entry.created, "snapshot_root": entry.snapshot_root,
        }
        if entry.body is not None:
            record["body"] = msgspec.to_builtins(entry.decoded())
        if as_json:
            echo_json(record)
        else:
            when = dt.datetime.fromtimestamp(entry.created, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            click.echo(f"{entry.segment:>4}/{entry.num:<8} {when} {entry.type!s:<7} {record.get('body', '')}"
                       f"{'  [S3 ' + entry.external + ']' if entry.external else ''}")


@log_group.command()
@click.argument("log")
@click.option("--json", "as_json", is_flag=True, help='Print {"ok", "violations", "entries", "segments", ...}.')
@click.option("--quiescent", is_flag=True, help="The pipeline should be idle: anything pending is a violation.")
@click.pass_context
@reports_errors
def verify(ctx: click.Context, log: str, as_json: bool, quiescent: bool) -> None:
    """Check the invariants of DESIGN §6 (I1-I6). Exit 1 on any violation."""
    log_id = parse_log_id(log)
    backend = settings(ctx).backend()
    report = verify_log(backend.store, log_id, blobs=backend.blobs, pending=backend.pending, quiescent=quiescent)
    data = report.to_dict()
    data["queue_depth"] = backend.queue.depth()
    if as_json:
        echo_json(data)
    else:
        click.echo(f"{'ok' if report.ok else 'VIOLATIONS'}: {report.entries} entries in {report.segments} segments, "
                   f"{report.completed}/{report.snapshots} snapshots complete, {len(report.pending)} pending, "
                   f"{report.objects} snapshot objects, queue depth {data['queue_depth']}")
        if report.unchecked or report.retiring:
            click.echo(f"  history retired: snapshots {report.unchecked} taken as stored, {len(report.unaccounted)} "
                       f"acknowledged ids not found (maybe retired)"
                       + (f"; segments {report.retiring} half retired: run `seglog log retain` again"
                          if report.retiring else ""))
        if report.claimed:
            # Not a violation: they read as retired from the claim on, and a run may be at work on them now.
            click.echo(f"  segments {report.claimed} claimed by a retention run that has not finished (P): if none "
                       "runs now, run `seglog log retain` (any run finishes them, whatever its policy)")
        for v in report.violations:
            click.echo(f"  {v}")
    if not report.ok:
        ctx.exit(1)


@log_group.command()
@click.argument("log")
@click.option("--keep", default=3, show_default=True, help="Segments to keep (at least 2).")
@click.option("--min-age-days", default=7.0, show_default=True,
              help="Keep segments closed less than this long ago: the retry horizon, keep it at least the "
                   "deployment's RetentionMinAgeSeconds, or a client's retry within it may be stored twice.")
@click.option("--delete", is_flag=True, help="Delete old segments instead of archiving them to S3.")
@click.pass_context
@reports_errors
def retain(ctx: click.Context, log: str, keep: int, min_age_days: float, delete: bool) -> None:
    """Archive (or delete) segments older than the policy allows; never the two latest."""
    backend = settings(ctx).backend()
    policy = RetentionPolicy(keep=keep, min_age=min_age_days * 86400, archive=not delete)
    done = apply_retention(backend.store, backend.blobs, parse_log_id(log), policy)
    click.echo(f"{'deleted' if delete else 'archived'} segments {done}" if done else "nothing to retire")
