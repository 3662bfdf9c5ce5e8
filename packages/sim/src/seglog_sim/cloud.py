"""The simulated AWS account: DynamoDB with streams, SQS, S3, and the one door every storage call goes through.

The services' real adapters (seglog_aws: DynamoDBLogStore, DynamoDBPendingStore, S3BlobStore, SqsJobQueue) run
on boto3-shaped clients whose every call lands in :meth:`Cloud.io`. There the call travels (a latency drawn
from the seed, during which other tasks run), the fault model decides its fate, and the service applies it
atomically at one instant:

    task            Cloud.io                                   service
      | call ---->  sleep(latency)        (others run)
      |             fault? throttle / 5xx / conflict: raise ------------------ (not applied)
      |             crash before: Killed ------------------------------------ (not applied)
      |             stale read: as_of = now - lag
      |             apply --------------------------------------------------> state changes here
      |             crash after: Killed                                       (applied, nobody knows)
      |             lost answer: raise 500                                    (applied, caller sees an error)
      |  <-------   sleep(latency)        (others run)

Each call is recorded in the history (who, when, what, how it ended) and counted by call site (the adapter
method that made it, and the kind of task that called it).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Final, NamedTuple

from botocore.exceptions import ClientError, ReadTimeoutError

from seglog_awsmodel.faults import AWS_ERRORS, FaultKind
from seglog_sim.aws.facade import client_error
from seglog_sim.faults import CALL_FAULTS, INVOCATIONS, SLOW_S3, Faults, Outage
from seglog_sim.world import Killed, Task, World

#: Seconds a call takes each way: (typical low, typical high). DynamoDB single-digit milliseconds, S3 and SQS
#: tens (DynamoDB Developer Guide, "What is Amazon DynamoDB": "single-digit millisecond performance").
LATENCY: Final[dict[str, tuple[float, float]]] = {
    "dynamodb": (0.001, 0.006), "s3": (0.005, 0.03), "sqs": (0.003, 0.02),
}
_READS: Final = frozenset({"GetItem", "Query", "Scan"})
#: The files whose public methods are the call sites we count (the adapters of the ports).
_SITE_FILES: Final = ("dynamodb_log_store.py", "dynamodb_pending_store.py", "s3_blob_store.py", "sqs_job_queue.py")


class Call(NamedTuple):
    """One storage call as the history keeps it.

    A named tuple rather than a frozen dataclass: as immutable, and three times cheaper to make, which counts for a
    record made at every storage call."""

    at: float
    task: str
    service: str
    operation: str
    params: dict[str, Any]
    outcome: str
    site: str


def _error(operation: str, code: str, **extra: Any) -> ClientError:
    """AWS's answer with ``code``: its status and message from the one catalogue (seglog_awsmodel.faults)."""
    status, message = AWS_ERRORS[code]
    return client_error(operation, code, message, status=status, sender=status < 500, extra=extra)


def _site_name(code: CodeType) -> str | None:
    """The call site a frame running ``code`` is (a public method of an adapter), or None."""
    name = code.co_qualname
    if code.co_filename.endswith(_SITE_FILES) and "<" not in name and not name.rpartition(".")[2].startswith("_"):
        return name
    return None


#: (code, _site_name(code)) by id(code) of each code object met: every storage call walks about eight frames, and
#: the answer per code object never changes. Keyed by id, as hashing a code object hashes its bytecode; the entry
#: keeps the code object alive, so its id is not reused.
_SITE_NAMES: dict[int, tuple[CodeType, str | None]] = {}


def call_site(depth: int = 3) -> str:
    """The adapter method (``DynamoDBPendingStore.claim``) that made the current storage call."""
    frame = sys._getframe(depth)
    names = _SITE_NAMES
    while frame is not None:
        code = frame.f_code
        known = names.get(id(code))
        if known is None:
            known = names[id(code)] = (code, _site_name(code))
        name = known[1]
        if name is not None:
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return "direct"


@dataclass(kw_only=True)
class Cloud:
    """The simulated services of one run, and the door (:meth:`io`) to them."""

    world: World
    faults: Faults
    ddb: Any
    sqs: Any
    s3: Any
    #: Every storage call, in order (the run's history).
    history: list[Call] = field(default_factory=list)
    #: Calls per "task kind:call site" and per "service operation".
    sites: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    #: The seed's outage, if it has one (every call it covers is refused while the faults last).
    outage: Outage | None = None
    #: Called after every applied write: (service, operation, params) -> None (the pollers' wake-ups).
    on_write: Callable[[str, str, dict[str, Any]], None] = lambda service, operation, params: None

    def io(self, service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        world, faults = self.world, self.faults
        task = world.current
        if task.killed is not None:
            raise Killed(task.killed)
        task.calls += 1
        site = call_site()
        self.sites[f"{task.kind}:{site}"] += 1
        self.operations[f"{service} {operation}"] += 1
        rng = faults.rng(task)
        low, high = LATENCY[service]
        invocation = task.kind in INVOCATIONS
        # A stall before the call: the invocation may time out in it, or be overtaken by a duplicate.
        if invocation and faults.decide(task, FaultKind.PAUSE, site):
            world.sleep(faults.stall(task))
        if service == "s3" and faults.decide(task, FaultKind.S3_LATENCY, site):
            world.sleep(faults.amount(task, 0.05, 2.0))
        if self.outage is not None and faults.active and self.outage.slows(service, world.now):
            world.sleep(faults.amount(task, *SLOW_S3))
        world.sleep(rng.uniform(low, high))
        crash = invocation and faults.decide(task, FaultKind.CRASH, site)
        crash_after = crash and rng.random() < 0.5
        if crash and not crash_after:
            self._record(task, service, operation, params, "crashed before", site)
            world.kill(task, "crash")
            raise Killed("crash")
        error = self._injected(task, service, operation, params, site)
        if error is None and self.outage is not None and faults.active:
            code = self.outage.error(service, operation, params, world.now)
            error = None if code is None else _error(operation, code)
        if error is not None:
            self._record(task, service, operation, params, f"fault {error.response['Error']['Code']}", site)
            world.sleep(rng.uniform(low, high))
            raise error
        as_of = None
        if (service == "dynamodb" and operation in _READS and not params.get("ConsistentRead")
                and faults.decide(task, FaultKind.STALE_READ, site)):
            as_of = world.now - rng.uniform(0.0, 1.0)
        lost = service == "dynamodb" and operation not in _READS and faults.decide(
            task, FaultKind.DDB_LOST_RESPONSE, site)
        try:
            if service == "dynamodb":
                result: dict[str, Any] = self.ddb.call(operation, params, as_of=as_of)
            else:
                result = (self.s3 if service == "s3" else self.sqs).call(operation, params)
        except ClientError as exc:
            self._record(task, service, operation, params, f"error {exc.response['Error']['Code']}", site)
            world.sleep(rng.uniform(low, high))
            raise
        self.on_write(service, operation, params)
        if crash_after:
            self._record(task, service, operation, params, "applied, then crashed", site)
            world.kill(task, "crash")
            raise Killed("crash")
        if lost:
            self._record(task, service, operation, params, "applied, answer lost", site)
            world.sleep(rng.uniform(low, high))
            if rng.random() < 0.5:
                raise ReadTimeoutError(endpoint_url=f"https://{service}.sim")
            raise _error(operation, "InternalServerError")
        self._record(task, service, operation, params, "stale read" if as_of is not None else "ok", site)
        world.sleep(rng.uniform(low, high))
        return result

    def _injected(self, task: Task, service: str, operation: str, params: dict[str, Any],
                  site: str) -> ClientError | None:
        """An error answered instead of applying the call (the call never reached the table, bucket or queue)."""
        faults = self.faults
        for kind in CALL_FAULTS[service]:
            if kind in (FaultKind.DDB_LOST_RESPONSE, FaultKind.S3_LATENCY):
                continue
            if kind is FaultKind.DDB_TRANSACTION_CONFLICT and operation not in ("TransactWriteItems", "PutItem",
                                                                           "UpdateItem"):
                continue
            if not faults.decide(task, kind, site):
                continue
            if kind is FaultKind.DDB_THROTTLE:
                return _error(operation, "ThrottlingException")
            if kind is FaultKind.DDB_5XX:
                return _error(operation, "InternalServerError")
            if kind is FaultKind.DDB_TRANSACTION_CONFLICT:
                if operation == "TransactWriteItems":
                    count = len(params.get("TransactItems", []))
                    return _error(operation, "TransactionCanceledException",
                                  CancellationReasons=[{"Code": "TransactionConflict"}] * count)
                return _error(operation, "TransactionConflictException")
            if kind is FaultKind.S3_ERROR:
                return _error(operation, "SlowDown" if self.faults.rng(task).random() < 0.5 else "InternalError")
            if kind is FaultKind.SQS_ERROR:
                return _error(operation, "InternalFailure")
        return None

    def _record(self, task: Task, service: str, operation: str, params: dict[str, Any], outcome: str,
                site: str) -> None:
        self.history.append(Call(self.world.now, task.name, service, operation, params, outcome, site))
