"""IAM enforced on the boto3 clients a function builds: each call is evaluated against the function's policies
before it is sent, and a denied call gets AWS's own AccessDenied answer without reaching the service.

Hooks (botocore events, as :mod:`seglog_emulator.faults.botocore_injector` uses them):

* ``before-call``: map the operation to its actions and resources (:mod:`seglog_emulator.iam.operations`), decide
  each (:mod:`seglog_emulator.iam.evaluation`), and on a deny answer with the service's error, built as raw HTTP
  and parsed by botocore's own parser for the service's protocol, so the caller sees exactly what botocore makes
  of AWS's response:

  - DynamoDB and DynamoDB Streams: HTTP 400 ``AccessDeniedException`` (DynamoDB Developer Guide,
    Programming.Errors), message ``User: <principal> is not authorized to perform: dynamodb:PutItem on resource:
    <arn> because no identity-based policy allows the dynamodb:PutItem action`` (IAM User Guide,
    troubleshoot_access-denied, "Access denied error messages"); an explicit deny says ``with an explicit deny in
    an identity-based policy`` (or ``a resource-based policy``).
  - S3: HTTP 403 ``AccessDenied``, the resource in quotes (S3 User Guide, troubleshoot-403-errors); a HEAD
    carries no body, so botocore reports ``403 Forbidden`` as it does for S3's own.
  - SQS (JSON protocol): HTTP 403 with ``x-amzn-query-error: AccessDenied;Sender``, so botocore reports
    ``AccessDenied``; SQS names the action in lowercase (``sqs:sendmessage``).

* ``after-call``: S3 answers 404 for a missing key only to a caller allowed ``s3:ListBucket`` on the bucket;
  without it the answer is 403 Access Denied (S3 API Reference, GetObject and HeadObject, "Permissions": "If you
  don't have the s3:ListBucket permission, Amazon S3 returns an HTTP status code 403 Forbidden error"; S3 applies
  the rule to every request for a missing key, so as not to reveal whether it exists). The answer is rewritten so.
  The same hook remembers which stream each shard iterator belongs to, for GetRecords.

An operation the emulator has no action for is denied (fail closed) with a log line naming it.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final
from xml.sax.saxutils import escape

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.parsers import create_parser

from seglog_emulator import jsonlog
from seglog_emulator.client_hooks import attach_to_every_client
from seglog_emulator.iam import ENV_VAR
from seglog_emulator.iam.evaluation import Decision, FunctionPermissions, Outcome
from seglog_emulator.iam.operations import Check, Target, UnknownResourceError, checks

log = jsonlog.get_logger("seglog.emulator.iam")

#: Operations the Lambda service itself makes for an event source mapping with the function's execution role
#: (the managed policies AWSLambdaSQSQueueExecutionRole and AWSLambdaDynamoDBExecutionRole, and sqs:SendMessage
#: to an OnFailure destination). A poller's other calls are the emulator's own machinery (putting a message back
#: past the 6 MB batch limit, fault injection) and are not evaluated.
EVENT_SOURCE_OPERATIONS: Final[Mapping[str, frozenset[str]]] = {
    "sqs": frozenset({"ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "GetQueueAttributes", "SendMessage"}),
    "dynamodbstreams": frozenset({"DescribeStream", "GetShardIterator", "GetRecords", "ListStreams"}),
}
_MISSING_KEY: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_PARAMS: Final = "seglog_iam_params"

Answer = tuple[AWSResponse, dict[str, Any]]
"""What a ``before-call`` handler returns to answer in the service's place: the HTTP response and its parse."""
_ITERATORS_KEPT: Final = 4096
#: IAM's service prefix where it differs from botocore's service name.
_PREFIX: Final = {"dynamodbstreams": "dynamodb"}


class IamGuard:
    """Evaluates every call of the clients it is attached to against one function's permissions.

    Args:
        permissions: the function's policies.
        only: per service, the operations to evaluate (others pass); None evaluates every call.
    """

    def __init__(self, permissions: FunctionPermissions, *, only: Mapping[str, frozenset[str]] | None = None) -> None:
        self.permissions = permissions
        self.only = only
        self._lock = threading.Lock()
        self._iterators: OrderedDict[str, str] = OrderedDict()

    def attach(self, client: Any) -> None:
        """Register the hooks on ``client`` (first, so a denied call is never faulted or sent)."""
        service = client.meta.service_model.service_name
        target = Target(region=client.meta.region_name or self.permissions.region, account=self.permissions.account,
                        stream_of_iterator=self._stream_of)
        events = client.meta.events
        events.register("before-parameter-build.*.*", _remember_params, unique_id=f"seglog-iam-params-{id(self)}")
        events.register_first("before-call.*.*", self._before_call_for(service, target),
                              unique_id=f"seglog-iam-before-{id(self)}")
        events.register_first("after-call.*.*", self._after_call_for(service, target),
                              unique_id=f"seglog-iam-after-{id(self)}")

    # ------------------------------------------------------------------------------------------ before

    def _before_call_for(self, service: str, target: Target) -> Callable[..., Answer | None]:
        def before_call(model: Any, context: dict[str, Any], **_: Any) -> Answer | None:
            if self.only is not None and model.name not in self.only.get(service, ()):
                return None
            params = context.get(_PARAMS, {})
            try:
                needed = checks(service, model.name, params, target)
            except UnknownResourceError as exc:
                return self._refuse(model, service, f"{_PREFIX.get(service, service)}:{model.name}", "*",
                                    reason=str(exc))
            if needed is None:
                return self._refuse(model, service, f"{_PREFIX.get(service, service)}:{model.name}", "*",
                                    reason="the emulator does not know which IAM action this operation needs: add it "
                                           "to seglog_emulator.iam.operations")
            for check in needed:
                decision = self.permissions.decide(check.action, check.resource, check.context)
                if not decision.allowed:
                    return self._deny(model, service, check, decision)
            return None
        return before_call

    def _deny(self, model: Any, service: str, check: Check, decision: Decision) -> Answer:
        log.warning("access denied (IAM)", function=self.permissions.function, operation=model.name,
                    action=check.action, resource=check.resource, outcome=str(decision.outcome),
                    policy=decision.source)
        message = denial_message(self.permissions.caller.session, check.action, check.resource, decision,
                                 service=service)
        return error_response(model, service, message)

    def _refuse(self, model: Any, service: str, action: str, resource: str, *, reason: str
                ) -> Answer:
        log.error("access denied (IAM): call the emulator cannot authorize", function=self.permissions.function,
                  operation=model.name, service=service, reason=reason)
        message = (f"User: {self.permissions.caller.session} is not authorized to perform: {action} on resource: "
                   f"{resource} ({reason})")
        return error_response(model, service, message)

    # ------------------------------------------------------------------------------------------ after

    def _after_call_for(self, service: str, target: Target) -> Callable[..., None]:
        def after_call(http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any],
                       **_: Any) -> None:
            params = context.get(_PARAMS, {})
            if service == "dynamodbstreams":
                self._remember_iterator(model.name, params, parsed)
            elif (service == "s3" and http_response.status_code == 404 and "Key" in params
                  and parsed.get("Error", {}).get("Code") in _MISSING_KEY):
                self._missing_key(model, params, parsed)
        return after_call

    def _missing_key(self, model: Any, params: Mapping[str, Any], parsed: dict[str, Any]) -> None:
        bucket = f"arn:aws:s3:::{params['Bucket']}"
        decision = self.permissions.decide("s3:ListBucket", bucket)
        if decision.allowed:
            return
        log.warning("access denied (IAM): a missing key without s3:ListBucket answers 403",
                    function=self.permissions.function, operation=model.name, key=params["Key"], bucket=bucket)
        message = denial_message(self.permissions.caller.session, "s3:ListBucket", bucket, decision, service="s3")
        _, denied = error_response(model, "s3", message)
        parsed.clear()
        parsed.update(denied)

    def _remember_iterator(self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> None:
        if operation == "GetShardIterator":
            stream, iterator = params.get("StreamArn"), parsed.get("ShardIterator")
        elif operation == "GetRecords":
            stream, iterator = self._stream_of(str(params.get("ShardIterator"))), parsed.get("NextShardIterator")
        else:
            return
        if stream and iterator:
            with self._lock:
                self._iterators[str(iterator)] = str(stream)
                while len(self._iterators) > _ITERATORS_KEPT:
                    self._iterators.popitem(last=False)

    def _stream_of(self, iterator: str) -> str | None:
        with self._lock:
            return self._iterators.get(iterator)


def _remember_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    context[_PARAMS] = dict(params)


def denial_message(principal: str, action: str, resource: str, decision: Decision, *, service: str) -> str:
    """AWS's access denied message for ``decision`` (IAM User Guide, troubleshoot_access-denied)."""
    shown_action = action.lower() if service == "sqs" else action
    shown_resource = f'"{resource}"' if service == "s3" else resource
    if decision.outcome is Outcome.EXPLICIT_DENY:
        kind = decision.policy_type.value if decision.policy_type else "identity-based"
        article = "an" if kind.startswith("identity") else "a"
        why = f"with an explicit deny in {article} {kind} policy"
    else:
        why = f"because no identity-based policy allows the {shown_action} action"
    return f"User: {principal} is not authorized to perform: {shown_action} on resource: {shown_resource} {why}"


def error_response(model: Any, service: str, message: str) -> Answer:
    """AWS's access denied answer to ``model``'s operation as raw HTTP, and botocore's parse of it."""
    request_id = str(uuid.uuid4())
    headers = HTTPHeaders()
    protocol = model.service_model.resolved_protocol
    if protocol == "json":  # DynamoDB, DynamoDB Streams, SQS
        headers["x-amzn-RequestId"] = request_id
        headers["Content-Type"] = "application/x-amz-json-1.0"
        body = json.dumps({"__type": "com.amazon.coral.service#AccessDeniedException", "Message": message}).encode()
        status = 400
        if service == "sqs":
            status = 403
            headers["x-amzn-query-error"] = "AccessDenied;Sender"
    elif protocol == "rest-json":
        status = 403
        headers["x-amzn-RequestId"] = request_id
        headers["x-amzn-ErrorType"] = "AccessDeniedException"
        body = json.dumps({"message": message}).encode()
    else:  # rest-xml (S3), query, ec2
        status = 403
        headers["x-amz-request-id"] = request_id
        error = f"<Error><Code>AccessDenied</Code><Message>{escape(message)}</Message></Error>"
        if protocol == "rest-xml":
            text = f'<?xml version="1.0" encoding="UTF-8"?>\n{error[:-8]}<RequestId>{request_id}</RequestId></Error>'
        else:
            text = f"<ErrorResponse>{error}<RequestId>{request_id}</RequestId></ErrorResponse>"
        # A HEAD response has no body: botocore reports S3's status alone ("403", "Forbidden").
        body = b"" if model.http.get("method") == "HEAD" else text.encode()
    parser = create_parser(protocol)
    parsed: dict[str, Any] = parser.parse({"status_code": status, "headers": headers, "body": body},
                                          model.output_shape)
    response = AWSResponse("", status, headers, None)
    response._content = body  # type: ignore[attr-defined]  # .content reads the raw stream otherwise: none here
    return response, parsed


def install_from_env() -> FunctionPermissions | None:
    """In a worker process: take the function's permissions out of the environment (the handler never sees the
    variable) and enforce them on every botocore client built from now on. Does nothing without the variable."""
    raw = os.environ.pop(ENV_VAR, None)
    if not raw:
        return None
    permissions = FunctionPermissions.from_json(raw)
    attach_to_every_client(IamGuard(permissions).attach)
    return permissions
