"""`seglog sheet ... --api-url URL`: the same commands through the HTTP API (seglog_client) instead of the tables.

Nothing here needs the local stack: only the API's URL (`SEGLOG_API_URL`), e.g. the emulator's
http://127.0.0.1:4599 or a deployed stack's ApiUrl output, and AWS credentials to sign with (the API requires IAM
authorization): the environment's (`seglog env` exports the pair the emulator accepts), or `--profile`'s. Input is
parsed and checked here first, as the local commands do, so a bad edit or file writes nothing; the client retries
lost answers safely (the same request bytes, the entry id and since), so one edit is one entry however the network
behaves.
"""

from __future__ import annotations

import uuid
from typing import Final

import click

from seglog_cli.context import echo_json
from seglog_client import Position, SeglogClient, set_cell
from seglog_core.idempotence import Position as CorePosition
from seglog_core.schema import CellValue, SetCell
from seglog_core.sheet import Sheet, format_ref, render

XLSX: Final = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
#: The upload's content type per import format (the formats read_import knows).
IMPORT_CONTENT_TYPES: Final = {"csv": "text/csv", "xlsx": XLSX}


def client(url: str, profile: str | None = None) -> SeglogClient:
    """A client of the API at ``url`` that signs with the environment's credentials, or ``profile``'s."""
    return SeglogClient(url, profile=profile)


def create(api: SeglogClient) -> None:
    click.echo(str(api.create().log_id))


def set_cells(api: SeglogClient, log_id: uuid.UUID, assignments: tuple[str, ...], bodies: list[SetCell],
              base_id: uuid.UUID | None, since: CorePosition | None = None) -> None:
    """One append per assignment; with ``base_id`` the entry ids are the local command's, so a repeated run
    (after the previous one's answer was lost) finds its entries instead of writing them again; every append of a
    run then looks from one position (``since``, or the latest snapshot's), printed so a repeat can pass it."""
    start = None
    if base_id is not None:
        start = Position(segment=since.segment, num=since.num) if since else \
            api.snapshots(log_id).latest or Position(segment=0, num=0)
        click.echo(f"since {start.segment}/{start.num} (to repeat this run: --entry-id {base_id} "
                   f"--since {start.segment}/{start.num})")
    for index, body in enumerate(bodies):
        entry_id = None if base_id is None else base_id if len(bodies) == 1 else uuid.uuid5(base_id, str(index))
        done = api.append(log_id, set_cell(format_ref(body.row, body.col), body.value), entry_id=entry_id,
                             since=start)
        note = " (already there)" if done.deduplicated else ""
        click.echo(f"{assignments[index]} -> entry {done.segment}/{done.num}{note}")


def import_file(api: SeglogClient, log_id: uuid.UUID, name: str, data: bytes, fmt: str, rows: int) -> None:
    """The upload flow: a presigned URL, the PUT of the file's bytes, the ``imp`` entry."""
    done = api.upload(log_id, data, IMPORT_CONTENT_TYPES[fmt], "imp")
    where = f" (body in S3: {done.external})" if done.external else ""
    click.echo(f"imported {rows} rows from {name} -> entry {done.segment}/{done.num}{where}")


def show(api: SeglogClient, log_id: uuid.UUID, as_json: bool, max_rows: int, max_cols: int) -> None:
    sheet = api.load(log_id)
    at: Position = sheet.position
    if as_json:
        echo_json({"log_id": str(log_id), "segment": at.segment, "num": at.num, "rows": sheet.rows})
        return
    rows: list[list[CellValue]] = sheet.rows
    click.echo(render(Sheet(rows), max_rows=max_rows, max_cols=max_cols))
    click.echo(f"(at entry {at}; loaded through the API from snapshot {sheet.snapshot.segment}/"
               f"{sheet.snapshot.num}, {sheet.pages} page{'s' if sheet.pages > 1 else ''})")
