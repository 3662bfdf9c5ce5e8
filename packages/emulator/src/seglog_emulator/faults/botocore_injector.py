"""Drive a :class:`FaultSchedule` into boto3 clients through botocore's event hooks (DESIGN §7).

Like :mod:`seglog_emulator.faults.botocore_faults`, faults go in where real ones happen:

* ``before-call`` (the request is never sent): DynamoDB throttling, TransactionConflict on TransactWriteItems,
  InternalServerError; S3 SlowDown / InternalError; S3 latency (a sleep, then the call goes on); on any other
  service, one of the errors common to all (``aws_error``: ThrottlingException, ServiceUnavailable,
  InternalFailure);
* ``after-call`` (the service did the work): a lost response on a DynamoDB write (the caller sees
  InternalServerError although the write happened), and stale reads.

A short circuit at ``before-call`` skips botocore's own retries (they sit around the HTTP send), so the error
reaches the code that called the client, exactly as a real one reaches it past botocore: seglog's clients make one
attempt per call and retry above botocore — the services' stores with their RetryPolicy (each retry rolls again
here), the log's append path itself — so every injected fault meets the retry logic seglog really runs.

Stale reads. DynamoDB Local is always consistent; AWS's eventually consistent reads "might not reflect the
results of a recently completed write operation" (Amazon DynamoDB Developer Guide,
HowItWorks.ReadConsistency). For the "latest item" query (``ScanIndexForward=False``, ``Limit=1``, no
``ConsistentRead``) that means an *older* latest item, or none when every item is that recent — never one from
the future. The injector makes it so: it re-issues the query with ``Limit=1+items_behind`` (faults off) and
returns the last item of that page, or no item when there are fewer.

Decision sites. Each call's key is ``f"{service}:{operation}:{digest of its parameters}:{n}"``, ``n`` counting
calls with the same parameters — in the whole run when the run's :class:`FaultRuntime` counts them (every worker
process does: ``occurrence``), else in this injector: the same calls get the same faults whatever the thread
interleaving, and a retry of an identical request rolls again, in whichever worker process it lands. Only the
data operations listed below are touched; table, bucket and stack control calls never are (any other service: all
its operations). Low-level clients only (boto3 resources transform parameters in these hooks).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from seglog_awsmodel.faults import FaultKind
from seglog_emulator import jsonlog
from seglog_emulator.faults.schedule import Decision, FaultSchedule

log = jsonlog.get_logger("seglog.emulator.faults")

#: DynamoDB item operations (Amazon DynamoDB API Reference, "Actions"); control-plane calls are not faulted.
DDB_DATA_OPERATIONS: Final = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
    "TransactGetItems", "TransactWriteItems"})
#: The DynamoDB writes whose response can be lost after the write happened.
DDB_WRITE_OPERATIONS: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
                                         "TransactWriteItems"})
#: S3 object operations; bucket calls are not faulted.
S3_OBJECT_OPERATIONS: Final = frozenset({
    "GetObject", "PutObject", "HeadObject", "DeleteObject", "DeleteObjects", "CopyObject", "ListObjectsV2"})

_PARAMS = "seglog_faults_params"
_KEY = "seglog_faults_key"


class BotocoreFaultInjector:
    """Injects the botocore kinds of a schedule into every client :meth:`attach` is given.

    Args:
        schedule: decides each call's faults and records them.
        sleep: how S3 latency waits (seconds), a seam for tests.
        occurrence: the run-wide count of a site (:meth:`FaultRuntime.occurrence`); None: counted here.
    """

    def __init__(self, schedule: FaultSchedule, *, sleep: Callable[[float], None] = time.sleep,
                 occurrence: Callable[[str], int] | None = None) -> None:
        self.schedule = schedule
        self._sleep = sleep
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self._occurrence = occurrence
        self._local = threading.local()

    def attach(self, client: Any) -> bool:
        """Register the hooks on ``client``'s events. Returns whether this client's service has kinds of its own
        (DynamoDB and S3); any other service's calls get ``aws_error`` only, every operation of it (a function's
        calls to SQS, SNS, EventBridge, Lambda, ... are all its own work)."""
        service = client.meta.service_model.service_name
        if service not in ("dynamodb", "s3"):
            client.meta.events.register("before-parameter-build.*.*", self._remember_params,
                                        unique_id=f"seglog-faults-params-{id(self)}")
            client.meta.events.register_first("before-call.*.*", self._other_service_for(service),
                                              unique_id=f"seglog-faults-before-{id(self)}")
            return False
        operations = DDB_DATA_OPERATIONS if service == "dynamodb" else S3_OBJECT_OPERATIONS
        events = client.meta.events
        # Wildcard events, and first: botocore calls handlers of "*" before those of a named operation, and a
        # stub or short circuit registered on "before-call.*.*" would otherwise answer before the injector.
        events.register("before-parameter-build.*.*", self._remember_params,
                        unique_id=f"seglog-faults-params-{id(self)}")
        events.register_first("before-call.*.*", self._before_call_for(service, operations),
                              unique_id=f"seglog-faults-before-{id(self)}")
        events.register_first("after-call.*.*", self._after_call_for(client, service),
                              unique_id=f"seglog-faults-after-{id(self)}")
        return True

    # ------------------------------------------------------------------------------------------ hooks

    def _off(self) -> bool:
        return bool(getattr(self._local, "off", False))

    def _remember_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = dict(params)

    def _key(self, service: str, operation: str, params: dict[str, Any]) -> str:
        text = json.dumps(params, sort_keys=True, default=_opaque)
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        site = f"{service}:{operation}:{digest}"
        if self._occurrence is not None:
            return f"{site}:{self._occurrence(site)}"
        with self._lock:
            self._seen[site] += 1
            return f"{site}:{self._seen[site]}"

    def _before_call_for(self, service: str, operations: frozenset[str]
                         ) -> Callable[..., tuple[AWSResponse, dict[str, Any]] | None]:
        def before_call(model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            if self._off() or model.name not in operations:
                return None
            params = context.get(_PARAMS, {})
            key = context[_KEY] = self._key(service, model.name, params)
            decision = self._before_send(service, model.name, key)
            if decision is None:
                return None
            response = _error_response(decision)
            if decision.kind is FaultKind.DDB_THROTTLE:
                throttled(model.name, params)
            if decision.kind is FaultKind.DDB_TRANSACTION_CONFLICT:
                items = max(1, len(params.get("TransactItems", [])))
                response["CancellationReasons"] = (
                    [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
                    + [{"Code": "None"}] * (items - 1))
                codes = ", ".join(r["Code"] for r in response["CancellationReasons"])
                response["Error"]["Message"] = ("Transaction cancelled, please refer cancellation reasons for "
                                                f"specific reasons [{codes}] (injected)")
            return AWSResponse("", decision.http_status or 500, HTTPHeaders(), None), response

        return before_call

    def _other_service_for(self, service: str) -> Callable[..., tuple[AWSResponse, dict[str, Any]] | None]:
        def before_call(model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            if self._off():
                return None
            key = self._key(service, model.name, context.get(_PARAMS, {}))
            decision = self.schedule.decide(FaultKind.AWS_ERROR, key)
            if decision is None:
                return None
            return AWSResponse("", decision.http_status or 500, HTTPHeaders(), None), _error_response(decision)

        return before_call

    def _before_send(self, service: str, operation: str, key: str) -> Decision | None:
        decide = self.schedule.decide
        if service == "s3":
            latency = decide(FaultKind.S3_LATENCY, key)
            if latency is not None and latency.amount:
                self._sleep(latency.amount / 1000)
            return decide(FaultKind.S3_ERROR, key)
        if operation == "TransactWriteItems":
            conflict = decide(FaultKind.DDB_TRANSACTION_CONFLICT, key)
            if conflict is not None:
                return conflict
        return decide(FaultKind.DDB_THROTTLE, key) or decide(FaultKind.DDB_5XX, key)

    def _after_call_for(self, client: Any, service: str) -> Callable[..., None]:
        def after_call(http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any],
                       **_: Any) -> None:
            key = context.get(_KEY)
            if self._off() or key is None or service != "dynamodb" or http_response.status_code >= 300:
                return
            params = context.get(_PARAMS, {})
            if model.name == "Query" and _latest_item_query(params) and parsed.get("Items"):
                stale = self.schedule.decide(FaultKind.STALE_READ, key)
                if stale is not None:
                    self._make_stale(client, params, parsed, stale.amount or 1)
            if model.name in DDB_WRITE_OPERATIONS:
                lost = self.schedule.decide(FaultKind.DDB_LOST_RESPONSE, key)
                if lost is not None:
                    raise client.exceptions.from_code(lost.error_code)(_error_response(lost), model.name)

        return after_call

    def _make_stale(self, client: Any, params: dict[str, Any], parsed: dict[str, Any], behind: int) -> None:
        self._local.off = True
        try:
            page = client.query(**{**params, "Limit": 1 + behind})
        finally:
            self._local.off = False
        older = page.get("Items", [])[behind:behind + 1]
        parsed["Items"] = older
        parsed["Count"] = parsed["ScannedCount"] = len(older)
        last_key = parsed.pop("LastEvaluatedKey", None)
        if older and last_key is not None:
            parsed["LastEvaluatedKey"] = {name: older[0][name] for name in last_key if name in older[0]}


def _latest_item_query(params: dict[str, Any]) -> bool:
    return (params.get("ScanIndexForward") is False and params.get("Limit") == 1
            and not params.get("ConsistentRead", False))


def _error_response(decision: Decision) -> dict[str, Any]:
    return {"Error": {"Code": decision.error_code, "Message": f"injected {decision.kind} ({decision.key})"},
            "ResponseMetadata": {"HTTPStatusCode": decision.http_status, "HTTPHeaders": {}}}


def _opaque(value: object) -> str:
    """Stand-in for parameters JSON cannot hold: bytes by their hash, anything else (a stream) by its type."""
    if isinstance(value, bytes | bytearray):
        return "b:" + hashlib.blake2b(bytes(value), digest_size=8).hexdigest()
    return type(value).__name__


#: DynamoDB operations whose throttles count as ReadThrottleEvents (the rest write).
_READS: Final = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})


def throttled(operation: str, params: dict[str, Any]) -> None:
    """Meter an injected DynamoDB throttle as the table's Read- or WriteThrottleEvents, as DynamoDB would
    (DynamoDB Developer Guide, metrics-dimensions: "Requests to DynamoDB that exceed the provisioned throughput
    limits ..."; one event per table the request touched)."""
    tables = {str(params["TableName"])} if "TableName" in params else set()
    tables |= {str(name) for name in params.get("RequestItems") or {}}
    for item in params.get("TransactItems") or []:
        tables |= {str(op["TableName"]) for op in item.values() if isinstance(op, dict) and "TableName" in op}
    metric = "ReadThrottleEvents" if operation in _READS else "WriteThrottleEvents"
    for table in sorted(tables):  # a log line in embedded metric format: the invoker's log tap records it
        log.info("throttle metered", **jsonlog.embedded_metric("AWS/DynamoDB", metric, {"TableName": table}, 1))
