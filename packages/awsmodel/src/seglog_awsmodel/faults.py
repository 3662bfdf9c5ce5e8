"""The one catalogue of fault kinds (DESIGN §7, §12): both drivers' kinds, which driver injects each
(:data:`EMULATED`, :data:`SIMULATED`), what each one's decision carries, and AWS's error codes they answer with
(:data:`AWS_ERRORS`: status and message, one table for the emulator's injector and the simulator's services).

A kind's *amount* is one integer parameter drawn from a range the plan may set (``latency_ms = [50, 500]``);
:data:`AMOUNTS` names it and gives the default range. Kinds that answer with an AWS error draw one of
:data:`ERROR_CODES`, AWS's literal codes with their HTTP status.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class FaultKind(StrEnum):
    """One kind of fault of DESIGN §7. Values are the names plans and flags use."""

    DUPLICATE_DELIVERY = "duplicate_delivery"
    """Lambda invokes a received batch again, beside the first, exactly as received (same messageIds, receipt
    handles and receive counts): at-least-once processing (with-sqs: "Lambda might process a message more than
    once"). The copies settle nothing; the first invocation's outcome decides. Amount ``copies`` (the simulator
    makes one)."""
    VISIBILITY_EXPIRY = "visibility_expiry"
    """The visibility timeout runs out mid-run: the message is visible again and another receive delivers it
    concurrently, with a new receipt handle and its receive count one higher, so the first invocation's delete
    uses a stale handle. The emulator makes it visible ``after_ms`` into the run; the simulator hands it to the
    next receive."""
    REORDER = "reorder"
    """Out-of-order delivery: the message is held back ``delay_ms`` while later ones go first."""
    WORKER_CRASH = "worker_crash"
    """kill -9 of a queue-triggered function's worker at :attr:`Decision.crash_point`, one of the points its
    application declares for it (template ``Metadata: SeglogEmulator: CrashPoints``)."""
    FUNCTION_TIMEOUT = "function_timeout"
    """The invocation hits its time limit: the supervisor ends it as timed out ``after_ms`` into the run."""
    ROUTER_CRASH_AFTER_SEND = "router_crash_after_send"
    """A stream-triggered function dies at the points its application declares for it (seglog's router: after
    SendMessage, before its checkpoint): the batch is delivered again."""
    CRASH_AFTER_CALL = "crash_after_call"
    """kill -9 between any two AWS calls of an invocation, in any function and on any trigger, with no crash point
    declared: the worker counts the calls the handler's clients complete (botocore's ``after-call``) and dies as
    call ``call`` returns, so its side effect stands and its answer never reaches the handler. Lambda then treats
    the invocation as failed (Runtime.ExitError) and its trigger retries it as AWS would: an SQS message comes
    back after its visibility timeout, a stream batch is retried, an asynchronous event is retried twice, an API
    request gets 502 (AWS Lambda Developer Guide, "Understanding retry behavior in Lambda"; invocation-retries).
    An invocation that makes fewer calls is not crashed; a crash is recorded when it happens, not when drawn."""
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
    AWS_ERROR = "aws_error"
    """A call to any other service a function calls (SQS, SNS, EventBridge, Lambda, ...: every one but DynamoDB and
    S3, which have their kinds) fails before it is sent with one of the errors common to the API actions of all AWS
    services: ThrottlingException (400), ServiceUnavailable (503) or InternalFailure (500) (each service's API
    Reference, "Common Errors")."""
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
    SQS_ERROR = "sqs_error"
    """Simulator only: an SQS call fails with InternalFailure before it is sent."""
    CRASH = "crash"
    """Simulator only: a Lambda invocation dies (kill -9) at a storage call, before it is sent or after it was
    applied (the emulator kills at named crash points: worker_crash, router_crash_after_send)."""
    PAUSE = "pause"
    """Simulator only: a long stall before a storage call. Past the function's timeout it is killed (what the
    emulator's function_timeout does), past the queue's visibility timeout a duplicate runs concurrently
    (visibility_expiry), past the takeover timeout its claim is taken over while it lives."""
    MIXED_VERSION = "mixed_version"
    """Two code versions at once, as during a deploy mid-build: one snapshot worker invocation (duplicates
    included) runs with ``SEGLOG_CHUNK_CELLS`` = ``chunk_cells``. A build it starts is cut that way; a build it
    resumes keeps the chunk size its checkpoint recorded (DESIGN §5 step 5)."""


#: The amount each kind draws: its name (the key a plan sets a range with) and the default inclusive range.
AMOUNTS: Final[dict[FaultKind, tuple[str, tuple[int, int]]]] = {
    FaultKind.DUPLICATE_DELIVERY: ("copies", (1, 1)),
    FaultKind.VISIBILITY_EXPIRY: ("after_ms", (0, 2_000)),
    FaultKind.REORDER: ("delay_ms", (100, 2_000)),
    # The AWS call of the invocation after which its worker dies: seglog's functions make a handful per invocation.
    FaultKind.CRASH_AFTER_CALL: ("call", (1, 6)),
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

#: The kinds only the simulator injects; every other kind is the emulator's too.
_SIMULATOR_ONLY: Final = frozenset({FaultKind.SQS_ERROR, FaultKind.CRASH, FaultKind.PAUSE})
#: The kinds the emulator injects (a plan's ``all``), in catalogue order.
EMULATED: Final[tuple[FaultKind, ...]] = tuple(k for k in FaultKind if k not in _SIMULATOR_ONLY)
#: The kinds the simulator injects, in the order a seed draws its profile (changing it changes every seed).
SIMULATED: Final[tuple[FaultKind, ...]] = (
    FaultKind.DDB_THROTTLE, FaultKind.DDB_5XX, FaultKind.DDB_TRANSACTION_CONFLICT, FaultKind.DDB_LOST_RESPONSE,
    FaultKind.STALE_READ, FaultKind.S3_ERROR, FaultKind.S3_LATENCY, FaultKind.SQS_ERROR, FaultKind.CRASH,
    FaultKind.WORKER_CRASH, FaultKind.PAUSE, FaultKind.DUPLICATE_DELIVERY, FaultKind.CLOCK_SKEW,
    FaultKind.MIXED_VERSION, FaultKind.LOST_RESPONSE, FaultKind.SUPERVISOR_RESTART, FaultKind.DLQ, FaultKind.REDRIVE,
    # Last, so the kinds before them draw what they drew before they joined (issue 19).
    FaultKind.POLLER_RESTART, FaultKind.VISIBILITY_EXPIRY,
)

#: AWS's error codes the faults answer with: HTTP status and the message AWS sends. DynamoDB: Amazon DynamoDB
#: Developer Guide, Programming.Errors; S3: Amazon S3 API Reference, ErrorResponses ("InternalError 500",
#: "SlowDown 503"); SQS: Amazon SQS API Reference, CommonErrors ("InternalFailure 500").
AWS_ERRORS: Final[dict[str, tuple[int, str]]] = {
    "ProvisionedThroughputExceededException": (400, "The level of configured provisioned throughput for the table "
                                                    "was exceeded. Consider increasing your provisioning level with "
                                                    "the UpdateTable API."),
    "ThrottlingException": (400, "Rate of requests exceeds the allowed throughput."),
    "TransactionCanceledException": (400, "Transaction cancelled, please refer cancellation reasons for specific "
                                          "reasons"),
    "TransactionConflictException": (400, "Transaction is ongoing for the item"),
    "InternalServerError": (500, "Internal server error"),
    "SlowDown": (503, "Please reduce your request rate."),
    "InternalError": (500, "We encountered an internal error. Please try again."),
    "InternalFailure": (500, "The request processing has failed because of an unknown error, exception or "
                             "failure."),
    "ServiceUnavailable": (503, "The request has failed due to a temporary failure of the server."),
}

#: The codes (with their HTTP status) each error kind draws from in the emulator. The simulator answers with
#: codes of :data:`AWS_ERRORS` too, chosen by the call (a single-item write's conflict is
#: TransactionConflictException; its throttle is always ThrottlingException).
ERROR_CODES: Final[dict[FaultKind, tuple[tuple[str, int], ...]]] = {
    kind: tuple((code, AWS_ERRORS[code][0]) for code in codes) for kind, codes in {
        FaultKind.DDB_THROTTLE: ("ProvisionedThroughputExceededException", "ThrottlingException"),
        FaultKind.DDB_TRANSACTION_CONFLICT: ("TransactionCanceledException",),
        FaultKind.DDB_5XX: ("InternalServerError",),
        FaultKind.S3_ERROR: ("SlowDown", "InternalError"),
        FaultKind.DDB_LOST_RESPONSE: ("InternalServerError",),
        FaultKind.SQS_ERROR: ("InternalFailure",),
        FaultKind.AWS_ERROR: ("ThrottlingException", "ServiceUnavailable", "InternalFailure"),
    }.items()
}



__all__ = ["AMOUNTS", "AWS_ERRORS", "CHUNK_CELLS_ENV", "EMULATED", "ERROR_CODES", "SIMULATED",
           "FaultKind"]
