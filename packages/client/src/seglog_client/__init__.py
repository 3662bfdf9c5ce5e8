"""A Python client of the seglog HTTP API.

    from seglog_client import SeglogClient, set_cell

    client = SeglogClient("http://127.0.0.1:4599")   # signs with AWS_ACCESS_KEY_ID/... or botocore's chain
    sheet = client.create()
    client.append(sheet.log_id, set_cell("B2", 5))   # retried safely: stored once
    with client.batcher(sheet.log_id) as batch:      # edits within 50 ms share one request
        batch.add(set_cell("A1", 1))
        batch.add(set_cell("A2", 2))
    print(client.load(sheet.log_id).rows)

Imports no server code: stdlib HTTP and crypto (SigV4 signing), msgspec for typed answers, structlog for its log
lines; botocore only if installed, for its credential chain.
"""

from seglog_client.batcher import Batcher, Ticket
from seglog_client.client import SeglogClient
from seglog_client.credentials import NoCredentialsError
from seglog_client.entries import (
    DeleteRow,
    Edit,
    Edits,
    EntryBody,
    InsertRow,
    SetCell,
    SetRange,
    delete_row,
    edits,
    insert_row,
    set_cell,
    set_range,
)
from seglog_client.errors import (
    ApiError,
    EntryIdReusedError,
    OutcomeUnknownError,
    ProtocolError,
    RetriesExhaustedError,
    SeglogClientError,
)
from seglog_client.hooks import Attempt, ClientHooks, Counters
from seglog_client.models import START, Appended, Created, LogEntry, Position, Sheet, Snapshots, Sync
from seglog_client.retry import Backoff
from seglog_client.sigv4 import Credentials

__all__ = [
    "START",
    "ApiError",
    "Appended",
    "Attempt",
    "Backoff",
    "Batcher",
    "ClientHooks",
    "Counters",
    "Created",
    "Credentials",
    "DeleteRow",
    "Edit",
    "Edits",
    "EntryBody",
    "EntryIdReusedError",
    "InsertRow",
    "LogEntry",
    "NoCredentialsError",
    "OutcomeUnknownError",
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
    "Ticket",
    "delete_row",
    "edits",
    "insert_row",
    "set_cell",
    "set_range",
]
