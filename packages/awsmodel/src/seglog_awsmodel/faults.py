"""The kinds of fault the emulator injects (DESIGN §7) and what each one's decision carries.

A kind's *amount* is one integer parameter drawn from a range the plan may set (``latency_ms = [50, 500]``);
:data:`AMOUNTS` names it and gives the default range. Kinds that answer with an AWS error draw one of
:data:`ERROR_CODES`, AWS's literal codes with their HTTP status.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from seglog_core.pipeline.worker import CRASH_POINTS


class FaultKind(StrEnum):
    """One kind of fault of DESIGN §7. Values are the names plans and flags use."""

    DUPLICATE_DELIVERY = "duplicate_delivery"
    """SQS delivers a message again (at-least-once delivery); amount ``copies`` extra deliveries."""
    VISIBILITY_EXPIRY = "visibility_expiry"
    """The visibility timeout runs out mid-run: a concurrent duplicate arrives ``after_ms`` into the run."""
    REORDER = "reorder"
    """Out-of-order delivery: the message is held back ``delay_ms`` while later ones go first."""
    WORKER_CRASH = "worker_crash"
    """kill -9 of the worker at :attr:`Decision.crash_point` (one of ``CRASH_POINTS``)."""
    FUNCTION_TIMEOUT = "function_timeout"
    """The invocation hits its time limit: the supervisor ends it as timed out ``after_ms`` into the run."""
    ROUTER_CRASH_AFTER_SEND = "router_crash_after_send"
    """The stream router dies after SendMessage, before its checkpoint: the batch is delivered again."""
    POLLER_RESTART = "poller_restart"
    """A poller is stopped and started again (its in-memory state is lost)."""
    SUPERVISOR_RESTART = "supervisor_restart"
    """The whole supervisor is stopped and started again."""
    DDB_THROTTLE = "ddb_throttle"
    """A DynamoDB data call is throttled before it is sent."""
    DDB_TRANSACTION_CONFLICT = "ddb_transaction_conflict"
    """TransactWriteItems is cancelled with a TransactionConflict reason before it is sent."""
    DDB_5XX = "ddb_5xx"
    """A DynamoDB data call fails with InternalServerError before it is sent."""
    STALE_READ = "stale_read"
    """An eventually consistent "latest item" Query returns an older item, ``items_behind`` the latest."""
    S3_ERROR = "s3_error"
    """An S3 object call fails with SlowDown or InternalError before it is sent."""
    S3_LATENCY = "s3_latency"
    """An S3 object call is delayed ``latency_ms`` before it is sent."""
    LOST_RESPONSE = "lost_response"
    """A client's request went through, but its answer is lost: the gateway closes the connection without one
    (DESIGN §7, "lost responses on client appends")."""
    DDB_LOST_RESPONSE = "ddb_lost_response"
    """Inside a function: a DynamoDB write went through, but the caller sees InternalServerError."""
    CLOCK_SKEW = "clock_skew"
    """A snapshot worker's clock runs ``ahead_ms`` fast for one invocation. Claims look older to it than they
    are, so it may take over one whose holder still runs (a zombie, which learns at its next checkpoint that
    its increment is gone, DESIGN §5 step 5). Beyond DESIGN §7's list: it is how a live claim gets taken over
    when the takeover time is no shorter than the function timeout."""
    DLQ = "dlq"
    """Jobs reach the dead-letter queue: for one chaos run the snapshot queue's RedrivePolicy maxReceiveCount
    (template parameter SnapshotMaxReceiveCount) is lowered to ``max_receive_count``, so a job received that
    often without being deleted — crashed, timed out, deferred, busy — is moved to the DLQ by SQS itself.
    Decided once per run, by the chaos runner."""
    REDRIVE = "redrive"
    """While a chaos run goes, the DLQ is redriven to the snapshot queue (at most ``messages`` messages): they
    come back with new messageIds, so the claimer a pending item names may never be seen again. Decided once
    per tick of the run, by the chaos runner (which also redrives what is left when faults stop)."""
    MIXED_VERSION = "mixed_version"
    """Two code versions at once, as during a deploy mid-build: one snapshot worker invocation (duplicates
    included) runs with ``SEGLOG_CHUNK_CELLS`` = ``chunk_cells``. A build it starts is cut that way; a build it
    resumes keeps the chunk size its checkpoint recorded (DESIGN §5 step 5)."""


#: The amount each kind draws: its name (the key a plan sets a range with) and the default inclusive range.
AMOUNTS: Final[dict[FaultKind, tuple[str, tuple[int, int]]]] = {
    FaultKind.DUPLICATE_DELIVERY: ("copies", (1, 1)),
    FaultKind.VISIBILITY_EXPIRY: ("after_ms", (0, 2_000)),
    FaultKind.REORDER: ("delay_ms", (100, 2_000)),
    FaultKind.FUNCTION_TIMEOUT: ("after_ms", (0, 3_000)),
    FaultKind.STALE_READ: ("items_behind", (1, 1)),
    FaultKind.S3_LATENCY: ("latency_ms", (50, 500)),
    FaultKind.CLOCK_SKEW: ("ahead_ms", (5_000, 8_000)),
    # SQS accepts 1 to 1,000; with 2-3, a job deferred or crashed twice or three times lands in the DLQ.
    FaultKind.DLQ: ("max_receive_count", (2, 3)),
    FaultKind.REDRIVE: ("messages", (1, 10)),
    # Against the default 20,000: a chaos sheet (tens to hundreds of cells) is cut into several chunks.
    FaultKind.MIXED_VERSION: ("chunk_cells", (3, 40)),
}

#: The variable the snapshot worker reads its chunk size from (services/.../snapshot_worker.py): what a
#: mixed_version invocation overrides.
CHUNK_CELLS_ENV: Final = "SEGLOG_CHUNK_CELLS"

#: The AWS error codes (and HTTP status) each error kind draws from. DynamoDB: Amazon DynamoDB Developer Guide,
#: Programming.Errors; S3: Amazon S3 API Reference, ErrorResponses ("InternalError 500", "SlowDown 503").
ERROR_CODES: Final[dict[FaultKind, tuple[tuple[str, int], ...]]] = {
    FaultKind.DDB_THROTTLE: (("ProvisionedThroughputExceededException", 400), ("ThrottlingException", 400)),
    FaultKind.DDB_TRANSACTION_CONFLICT: (("TransactionCanceledException", 400),),
    FaultKind.DDB_5XX: (("InternalServerError", 500),),
    FaultKind.S3_ERROR: (("SlowDown", 503), ("InternalError", 500)),
    FaultKind.DDB_LOST_RESPONSE: (("InternalServerError", 500),),
}

__all__ = ["AMOUNTS", "CHUNK_CELLS_ENV", "CRASH_POINTS", "ERROR_CODES", "FaultKind"]
