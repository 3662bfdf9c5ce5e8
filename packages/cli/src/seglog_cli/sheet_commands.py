"""seglog sheet create / set / import / show."""

from __future__ import annotations

import uuid
from pathlib import Path

import click

from seglog_cli import remote
from seglog_cli.context import api_url_option, echo_json, parse_log_id, reports_errors, settings
from seglog_core import errors
from seglog_core.idempotence import Position, append_after
from seglog_core.schema import Import
from seglog_core.sheet import parse_assignment, read_import, render

#: Largest import file read at all (the parsed rows are checked against the model's own limits too).
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def import_key(log_id: uuid.UUID, entry_id: uuid.UUID, name: str) -> str:
    """Where a file imported without the API is kept: ``imports/{log}/{entry id}/{file name}`` (the Import's source;
    through the API it is the upload's own key, seglog_services.api.uploads.upload_key)."""
    return f"imports/{log_id}/{entry_id}/{name}"


@click.group()
def sheet() -> None:
    """Create and edit spreadsheets stored in the log."""


@sheet.command()
@api_url_option
@click.pass_context
@reports_errors
def create(ctx: click.Context, api_url: str | None, aws_profile: str | None) -> None:
    """Create an empty sheet and print its log id."""
    if api_url:
        remote.create(remote.client(api_url, aws_profile))
        return
    backend = settings(ctx).backend()
    click.echo(str(backend.event_log().create()))


@sheet.command("set")
@click.argument("log")
@click.argument("assignments", nargs=-1, required=True)
@click.option("--entry-id", help="A UUID that makes this edit idempotent: the same id twice makes one entry.")
@click.option("--since", "since_text", metavar="SEGMENT/NUM",
              help="With --entry-id: where an earlier run of this edit may have landed after (the first run prints "
                   "it). Default: the current segment's latest completed snapshot.")
@api_url_option
@click.pass_context
@reports_errors
def set_cells(ctx: click.Context, log: str, assignments: tuple[str, ...], entry_id: str | None,
              since_text: str | None, api_url: str | None, aws_profile: str | None) -> None:
    """Set cells: seglog sheet set LOG A1=42 B2=hello ('42 forces text; A1= clears).

    A repeat of a run whose outcome is unknown stores nothing twice when it has the same --entry-id and the
    --since the first run printed; without --since it looks from the latest completed snapshot, which misses the
    first run's entries if a snapshot completed after them meanwhile."""
    log_id = parse_log_id(log)
    bodies = [parse_assignment(a) for a in assignments]  # all parsed before anything is written
    base_id = None
    if entry_id is not None:
        try:
            base_id = uuid.UUID(entry_id)
        except ValueError:
            raise click.BadParameter(f"{entry_id!r} is not a UUID", param_hint="--entry-id") from None
    since = parse_position(since_text) if since_text is not None else None
    if since is not None and base_id is None:
        raise click.BadParameter("--since only means something with --entry-id", param_hint="--since")
    if api_url:
        remote.set_cells(remote.client(api_url, aws_profile), log_id, assignments, bodies, base_id, since)
        return
    backend = settings(ctx).backend()
    event_log = backend.event_log()
    if base_id is not None and since is None:
        # A retry of an earlier run: its entries lie after the current segment's latest snapshot, so the log is
        # read forward from there (consistently) before anything is written again.
        segments = backend.store.latest_segments(log_id, 1, consistent=True)
        if not segments:
            raise errors.LogNotFoundError(log_id)
        since = Position(segment=segments[0].num, num=segments[0].last_snapshot or 0)
    if since is not None:
        click.echo(f"since {since} (to repeat this run: --entry-id {base_id} --since {since})")
    for index, body in enumerate(bodies):
        if base_id is None:
            done = event_log.append(log_id, body)
        else:
            eid = base_id if len(bodies) == 1 else uuid.uuid5(base_id, str(index))
            assert since is not None
            done = append_after(event_log, log_id, body, entry_id=eid, since=since)
        note = " (already there)" if done.deduplicated else ""
        click.echo(f"{assignments[index]} -> entry {done.entry.segment}/{done.entry.num}{note}")


def parse_position(text: str) -> Position:
    segment, _, num = text.partition("/")
    if not (segment.isdigit() and num.isdigit()):
        raise click.BadParameter(f"{text!r} is not a position: give SEGMENT/NUM, e.g. 0/17", param_hint="--since")
    return Position(segment=int(segment), num=int(num))


@sheet.command("import")
@click.argument("log")
@click.argument("file", type=click.Path(path_type=Path))
@api_url_option
@click.pass_context
@reports_errors
def import_file(ctx: click.Context, log: str, file: Path, api_url: str | None, aws_profile: str | None) -> None:
    """Replace the sheet with the contents of a CSV or XLSX file (the file is kept in the bucket)."""
    log_id = parse_log_id(log)
    if not file.is_file():
        raise click.ClickException(f"cannot import {file}: no such file")
    if file.stat().st_size > MAX_IMPORT_BYTES:
        raise click.ClickException(f"cannot import {file}: larger than {MAX_IMPORT_BYTES} bytes")
    data = file.read_bytes()
    fmt, rows = read_import(file.name, data)  # parsed and checked before anything is written
    if api_url:
        remote.import_file(remote.client(api_url, aws_profile), log_id, file.name, data, fmt, len(rows))
        return
    backend = settings(ctx).backend()
    entry_id = uuid.uuid4()
    source = import_key(log_id, entry_id, file.name)
    backend.blobs.put(source, data)
    done = backend.event_log().append(log_id, Import(source=source, format=fmt, rows=rows), entry_id=entry_id)
    where = f" (body in S3: {done.entry.external})" if done.entry.external else ""
    click.echo(f"imported {len(rows)} rows from {file.name} -> entry {done.entry.segment}/{done.entry.num}{where}")


@sheet.command()
@click.argument("log")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.option("--max-rows", default=40, show_default=True)
@click.option("--max-cols", default=12, show_default=True)
@api_url_option
@click.pass_context
@reports_errors
def show(ctx: click.Context, log: str, as_json: bool, max_rows: int, max_cols: int, api_url: str | None,
         aws_profile: str | None) -> None:
    """Load the sheet (latest snapshot + the entries after it) and print it as a grid."""
    log_id = parse_log_id(log)
    if api_url:
        remote.show(remote.client(api_url, aws_profile), log_id, as_json, max_rows, max_cols)
        return
    state, view = settings(ctx).backend().document().load(log_id)
    if as_json:
        echo_json({"log_id": str(log_id), "segment": view.segment, "num": view.num, "rows": state.rows()})
        return
    click.echo(render(state, max_rows=max_rows, max_cols=max_cols))
    click.echo(f"(at entry {view.segment}/{view.num}; loaded from snapshot {view.snapshot.segment}/"
               f"{view.snapshot.num} + {len(view.entries)} entries)")
