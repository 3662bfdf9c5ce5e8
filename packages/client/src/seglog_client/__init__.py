"""A Python client of the seglog HTTP API.

    from seglog_client import SeglogClient, set_cell

    client = SeglogClient("http://127.0.0.1:4599")   # signs with AWS_ACCESS_KEY_ID/... or botocore's chain
    sheet = client.create()
    client.append(sheet.log_id, set_cell("B2", 5))   # retried safely: stored once
    print(client.load(sheet.log_id).rows)

Imports no server code: stdlib HTTP and crypto (SigV4 signing), msgspec for typed answers, structlog for its log
lines; botocore only if installed, for its credential chain.
"""

from seglog_client.client import SeglogClient
from seglog_client.credentials import NoCredentialsError
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
from seglog_client.errors import ApiError, EntryIdReusedError, ProtocolError, RetriesExhaustedError, SeglogClientError
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
    "ClientHooks",
    "Counters",
    "Created",
    "Credentials",
    "DeleteRow",
    "EntryBody",
    "EntryIdReusedError",
    "InsertRow",
    "LogEntry",
    "NoCredentialsError",
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
