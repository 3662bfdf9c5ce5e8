"""API Gateway's payload format 1.0: the event of a REST API's Lambda proxy integration (AWS::Serverless::Api,
SAM's ``Api`` events) and of an HTTP API route with ``PayloadFormatVersion: "1.0"``, and the response made of the
function's return value.

Sources: API Gateway Developer Guide, set-up-lambda-proxy-integrations ("Input format of a Lambda function for proxy
integration", "Output format ..."), http-api-develop-integrations-lambda ("Payload format version": the 1.0 sample
event and "Lambda function response for format 1.0"), and the error answers API Gateway documents
(api-gateway-known-issues, handle-errors-in-lambda-integration): a REST API answers a request no resource matches
403 ``{"message":"Missing Authentication Token"}``, a malformed proxy response or a function error 502
``{"message": "Internal server error"}`` and an integration past its 29 s 504 ``{"message": "Endpoint request timed
out"}``; an HTTP API answers as in format 2.0 (:mod:`seglog_awsmodel.events.api_gateway`).

Differences from 2.0 that handlers see: ``resource``/``path``/``httpMethod`` at the top; ``headers`` and
``queryStringParameters`` keep the *last* value of a repeated name while ``multiValueHeaders`` and
``multiValueQueryStringParameters`` keep all; absent maps and body are ``null``; ``requestContext`` carries
``identity`` (sourceIp, userAgent, and the caller's user ARN with IAM authorization), ``resourcePath``, ``path``
(a REST API's with its stage in front: ``/Prod/orders/1``) and ``stage``. A REST API does not decode the path;
an HTTP API does (:func:`seglog_awsmodel.events.api_gateway.event_path`).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from seglog_awsmodel.events.api_gateway import (
    AWS_LISTENER,
    LOCAL_ACCOUNT_ID,
    LOCAL_API_ID,
    _body,
    _clf_time,
    _request_id,
    event_path,
    forwarded_headers,
    query_pairs,
)

PAYLOAD_VERSION: Final = "1.0"
#: The stage of SAM's implicit REST API (sam-resource-function, "Api" event: "the implicit API's stage is Prod").
IMPLICIT_REST_STAGE: Final = "Prod"
MISSING_AUTHENTICATION_TOKEN: Final = (403, [("content-type", "application/json"),
                                             ("x-amzn-errortype", "MissingAuthenticationTokenException")],
                                       b'{"message":"Missing Authentication Token"}')
REST_INTERNAL_ERROR: Final = (502, [("content-type", "application/json")], b'{"message": "Internal server error"}')
REST_TIMEOUT: Final = (504, [("content-type", "application/json")], b'{"message": "Endpoint request timed out"}')
HTTP_INTERNAL_ERROR: Final = (500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}')

Response = tuple[int, list[tuple[str, str]], bytes]


def request_event_v1(method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes | None, *,
                     resource: str, path_parameters: Mapping[str, str] | None = None, rest: bool = True,
                     stage: str = IMPLICIT_REST_STAGE, authorizer: Mapping[str, Any] | None = None,
                     request_id: str | None = None, now: datetime | None = None, source_ip: str = "127.0.0.1",
                     listener: tuple[int, str] = AWS_LISTENER, account_id: str = LOCAL_ACCOUNT_ID,
                     api_id: str = LOCAL_API_ID) -> dict[str, Any]:
    """The format 1.0 event of one request (``target``: path and query as sent) to the route ``resource``
    (``/orders/{id}``, ``/{proxy+}``) that matched it, with ``path_parameters``; ``rest`` for a REST API (else an
    HTTP API route of format 1.0), whose stage is ``stage``."""
    now = now or datetime.now(UTC)
    request_id = request_id or (str(uuid.uuid4()) if rest else _request_id())
    parts = urlsplit(target)
    path = (parts.path or "/") if rest else event_path(parts.path)
    pairs = forwarded_headers(headers, source_ip=source_ip, listener=listener, request_id=request_id, now=now)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        key = name if rest else name.lower()  # a REST API keeps the client's case; an HTTP API lowercases
        single[key] = value
        multi.setdefault(key, []).append(value)
    query: dict[str, str] = {}
    multi_query: dict[str, list[str]] = {}
    for name, value in query_pairs(parts.query):
        query[name] = value
        multi_query.setdefault(name, []).append(value)
    lowered = {k.lower(): v for k, v in single.items()}
    domain = lowered.get("host", "localhost").rsplit(":", 1)[0] or "localhost"
    identity: dict[str, Any] = {
        "accessKey": None, "accountId": None, "caller": None, "cognitoAuthenticationProvider": None,
        "cognitoAuthenticationType": None, "cognitoIdentityId": None, "cognitoIdentityPoolId": None,
        "principalOrgId": None, "sourceIp": source_ip, "user": None, "userAgent": lowered.get("user-agent", ""),
        "userArn": None}
    context: dict[str, Any] = {"accountId": account_id, "apiId": api_id}
    if authorizer is not None:
        iam = authorizer.get("iam") if isinstance(authorizer.get("iam"), Mapping) else None
        if iam is not None:  # IAM authorization fills the caller's identity (REST: requestContext.identity)
            identity.update({k: iam.get(k) for k in ("accessKey", "accountId", "caller", "user", "userArn")
                             if k in iam})
        else:
            context["authorizer"] = dict(authorizer)
    context.update({
        "domainName": domain, "domainPrefix": domain.split(".", 1)[0],
        "extendedRequestId": _request_id() if rest else request_id,
        "httpMethod": method.upper(), "identity": identity,
        "path": f"/{stage}{path}" if rest else path,
        "protocol": "HTTP/1.1", "requestId": request_id,
        "requestTime": _clf_time(now), "requestTimeEpoch": int(now.timestamp() * 1000),
        "resourceId": base64.b32encode(resource.encode()).decode()[:6].lower() if rest else None,
        "resourcePath": resource, "stage": stage})
    text, encoded = _body(body or None, lowered.get("content-type", "") if not rest else "text/plain")
    if rest and encoded:  # a REST API without binary media types passes the bytes as they are, as text
        text, encoded = (body or b"").decode("utf-8", errors="replace"), False
    event: dict[str, Any] = {} if rest else {"version": PAYLOAD_VERSION}  # a REST API's event has no version
    event.update({
        "resource": resource,
        "path": path,
        "httpMethod": method.upper(),
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": multi_query or None,
        "requestContext": context,
        # A REST API passes path parameters as sent (percent-encoded); an HTTP API decodes its path first.
        "pathParameters": ({k: v if rest else unquote(v) for k, v in path_parameters.items()}
                           if path_parameters else None),
        "stageVariables": None,
        "body": text,
        "isBase64Encoded": encoded,
    })
    return event


def proxy_response(result: Any, *, rest: bool) -> Response:
    """The HTTP response API Gateway makes of a format 1.0 return value: a dict with an integer ``statusCode``,
    and optionally ``headers``, ``multiValueHeaders`` (both sent; a name in both gets every value), a string
    ``body`` and ``isBase64Encoded``. Anything else is a malformed proxy response: 502 from a REST API, 500 from
    an HTTP API."""
    failed = REST_INTERNAL_ERROR if rest else HTTP_INTERNAL_ERROR
    if not isinstance(result, Mapping):
        return failed[0], list(failed[1]), failed[2]
    status = result.get("statusCode")
    if isinstance(status, str) and status.isdigit():
        status = int(status)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return failed[0], list(failed[1]), failed[2]
    headers: list[tuple[str, str]] = []
    single = result.get("headers") or {}
    multi = result.get("multiValueHeaders") or {}
    if not isinstance(single, Mapping) or not isinstance(multi, Mapping):
        return failed[0], list(failed[1]), failed[2]
    for name, values in multi.items():
        if not isinstance(values, list):
            return failed[0], list(failed[1]), failed[2]
        headers.extend((str(name), str(value)) for value in values)
    headers.extend((str(name), str(value)) for name, value in single.items() if name not in multi)
    body = result.get("body")
    if body is None:
        return status, headers, b""
    if not isinstance(body, str):
        return failed[0], list(failed[1]), failed[2]
    if result.get("isBase64Encoded") is True:
        try:
            return status, headers, base64.b64decode(body, validate=True)
        except binascii.Error:
            return failed[0], list(failed[1]), failed[2]
    return status, headers, body.encode()


def function_failure_v1(*, rest: bool, timed_out: bool) -> Response:
    """API Gateway's answer when the function did not return (see the module docstring)."""
    if rest:
        status, headers, body = REST_TIMEOUT if timed_out else REST_INTERNAL_ERROR
        return status, list(headers), body
    from seglog_awsmodel.events.api_gateway import function_failure

    return function_failure(timed_out=timed_out)
