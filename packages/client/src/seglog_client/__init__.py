"""A Python client of the seglog HTTP API.

    from seglog_client import SeglogClient, set_cell

    client = SeglogClient("http://127.0.0.1:4599")
    sheet = client.create()
    client.append(sheet.log_id, set_cell("B2", 5))   # retried safely: stored once
    print(client.load(sheet.log_id).rows)

Imports no server code: stdlib HTTP, msgspec for typed answers, structlog for its log lines.
"""

from seglog_client.client import SeglogClient
from seglog_client.entries import (
    DeleteRow,
    EntryBody,
    InsertRow,
    SetCell,
    SetRange,
    delete_row,
    insert_row,
    set_cell,
    set_range,
)
from seglog_client.errors import ApiError, ProtocolError, RetriesExhaustedError, SeglogClientError
from seglog_client.hooks import Attempt, ClientHooks, Counters
from seglog_client.models import START, Appended, Created, LogEntry, Position, Sheet, Snapshots, Sync
from seglog_client.retry import Backoff

__all__ = [
    "START",
    "ApiError",
    "Appended",
    "Attempt",
    "Backoff",
    "ClientHooks",
    "Counters",
    "Created",
    "DeleteRow",
    "EntryBody",
    "InsertRow",
    "LogEntry",
    "Position",
    "ProtocolError",
    "RetriesExhaustedError",
    "SeglogClient",
    "SeglogClientError",
    "SetCell",
    "SetRange",
    "Sheet",
    "Snapshots",
    "Sync",
    "delete_row",
    "insert_row",
    "set_cell",
    "set_range",
]
