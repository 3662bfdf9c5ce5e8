"""API Gateway HTTP API, payload format 2.0: the event a request becomes, and how a handler's return is answered.

Both halves follow "Create AWS Lambda proxy integrations for HTTP APIs in API Gateway"
(https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html),
sections "Payload format differences", "Payload format structure" and "Lambda function response format".
Both gateways of the API — the emulator's (an HTTP server in front of the function) and the simulator's (the
client library's in-process transport, inside the simulated world) — call :func:`match_route` and
:func:`request_event` for each request, :func:`http_api_response` with the handler's return value, and
:func:`function_failure` when the function failed or timed out: one piece builds every event either sees.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from seglog_awsmodel.events._wire import to_base64

# The event, from the 2.0 example of "Payload format structure" on the page above (keys in that order; header
# names are lowercased):
#   {"version": "2.0", "routeKey": "$default", "rawPath": "/my/path",
#    "rawQueryString": "parameter1=value1&parameter1=value2&parameter2=value", "cookies": ["cookie1", "cookie2"],
#    "headers": {"header1": "value1", "header2": "value1,value2"},
#    "queryStringParameters": {"parameter1": "value1,value2", "parameter2": "value"},
#    "requestContext": {"accountId": "123456789012", "apiId": "api-id",
#                       "domainName": "id.execute-api.us-east-1.amazonaws.com", "domainPrefix": "id",
#                       "http": {"method": "POST", "path": "/my/path", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
#                                "userAgent": "agent"}, "requestId": "id", "routeKey": "$default",
#                       "stage": "$default", "time": "12/Mar/2020:19:03:58 +0000", "timeEpoch": 1583348638390},
#    "body": "Hello from Lambda", "pathParameters": {"parameter1": "value1"}, "isBase64Encoded": false,
#    "stageVariables": {"stageVariable1": "value1"}}
# Duplicate headers and query parameters are joined with commas; every Cookie header goes into "cookies", one
# element per cookie. Keys with nothing to say (cookies, queryStringParameters, body, pathParameters,
# stageVariables) are left out, as AWS leaves them out.
PAYLOAD_VERSION = "2.0"
DEFAULT_ROUTE_KEY = "$default"
DEFAULT_STAGE = "$default"
#: LocalStack's account; AWS puts the API owner's account here.
LOCAL_ACCOUNT_ID = "000000000000"
LOCAL_API_ID = "seglog"
#: Bodies of these media types (and of every ``text/*``) reach the handler as text; any other body, and a body
#: without a Content-Type, is base64 (isBase64Encoded true). AWS documents the mechanism, not the list: the page
#: above says a binary body is base64-encoded and isBase64Encoded says so, and HTTP APIs have no binaryMediaTypes
#: to configure (that setting is REST APIs': "Binary media types for REST APIs in API Gateway",
#: api-gateway-payload-encodings). Which types count as text is what AWS does, measured on an HTTP API (payload
#: 2.0, AWS_PROXY) and published with its table in https://github.com/ministackorg/ministack/pull/766: text only
#: for text/*, application/json, application/xml and application/javascript; everything else base64, a missing
#: Content-Type and application/x-www-form-urlencoded included, hence application/yaml and the structured-syntax
#: suffixes (application/merge-patch+json, +xml) too. Parameters (``; charset=...``) and the case of the media
#: type do not matter (RFC 9110 §8.3.1).
TEXT_CONTENT_TYPES = ("application/json", "application/javascript", "application/xml")
INTERNAL_SERVER_ERROR = (500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}')
#: API Gateway's answer when the integration timed out (http-api-troubleshooting-lambda: "503 Service Unavailable"
#: for a function that ran past the integration's timeout).
SERVICE_UNAVAILABLE = (503, [("content-type", "application/json")], b'{"message":"Service Unavailable"}')

# What API Gateway adds to every request's headers before the integration sees them (AWS's sample HTTP API events
# carry all four: "x-amzn-trace-id": "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c", "x-forwarded-for": "1.2.3.4",
# "x-forwarded-port": "443", "x-forwarded-proto": "https"). Their meaning is the load balancers' (Elastic Load
# Balancing, "HTTP headers and Application Load Balancers",
# https://docs.aws.amazon.com/elasticloadbalancing/latest/application/x-forwarded-headers.html): X-Forwarded-For is
# the client's IP address, appended to the list a client or proxy already sent; X-Forwarded-Port and
# X-Forwarded-Proto the port and protocol the client connected to (the listener), whatever the client claimed.
# The trace header is X-Ray's (https://docs.aws.amazon.com/xray/latest/devguide/xray-services-elb.html, "X-Ray
# trace ID format"): Root=1-<the request's Unix time in 8 hex digits>-<a 96-bit id in 24 hex digits>; a client's
# own trace header is passed on as it came.
#: API Gateway's listener: HTTPS on 443 (x-forwarded-port, x-forwarded-proto).
AWS_LISTENER = (443, "https")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

type Headers = Mapping[str, str] | Iterable[tuple[str, str]]
type Query = str | Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]]


def http_api_event(method: str, path: str, *, query: Query | None = None, headers: Headers | None = None,
                   body: bytes | str | None = None, path_parameters: Mapping[str, str] | None = None,
                   route_key: str | None = None, stage: str = DEFAULT_STAGE,
                   stage_variables: Mapping[str, str] | None = None, request_id: str | None = None,
                   source_ip: str = "127.0.0.1", now: datetime | None = None, account_id: str = LOCAL_ACCOUNT_ID,
                   api_id: str = LOCAL_API_ID, domain_name: str | None = None,
                   protocol: str = "HTTP/1.1", authorizer: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The event API Gateway sends to a Lambda integration for one HTTP request.

    Args:
        path: the request path as the event carries it (an HTTP API decodes it first: :func:`event_path`),
            without the query string.
        query: the raw query string (``"a=1&a=2"``), or parameters to encode (a mapping, list values repeat
            the name, or (name, value) pairs).
        headers: request headers; a list of pairs may repeat a name. Names are lowercased.
        body: bytes are passed as text when the content type is textual and they are UTF-8, else base64.
        route_key: the matched route, e.g. ``"POST /logs/{log}"``; ``$default`` when None.
        request_id: defaults to a fresh id shaped like API Gateway's.
        now: when the request arrived (the clock seam); defaults to the current time.
        domain_name: defaults to the Host header without its port, else ``localhost``.
        authorizer: ``requestContext.authorizer`` of a route with an authorizer, e.g. ``{"iam": {...}}`` for
            IAM authorization; it goes after ``apiId`` as in AWS's example events ("authorizer": {"jwt": ...}).

    Raises:
        ValueError: ``path`` does not start with ``/`` or holds a query string.
    """
    if not path.startswith("/") or "?" in path:
        raise ValueError(f"path must start with '/' and hold no query string (pass query=...), got {path!r}")
    now = now or datetime.now(UTC)
    route_key = route_key or DEFAULT_ROUTE_KEY
    joined, cookies = _headers(headers or {})
    raw_query = _raw_query(query)
    domain = domain_name or joined.get("host", "localhost").rsplit(":", 1)[0] or "localhost"

    event: dict[str, Any] = {"version": PAYLOAD_VERSION, "routeKey": route_key, "rawPath": path,
                             "rawQueryString": raw_query}
    if cookies:
        event["cookies"] = cookies
    event["headers"] = joined
    parameters = _query_parameters(raw_query)
    if parameters:
        event["queryStringParameters"] = parameters
    context: dict[str, Any] = {"accountId": account_id, "apiId": api_id}
    if authorizer is not None:
        context["authorizer"] = dict(authorizer)
    event["requestContext"] = {
        **context,
        "domainName": domain,
        "domainPrefix": domain.split(".", 1)[0],
        "http": {"method": method.upper(), "path": path, "protocol": protocol, "sourceIp": source_ip,
                 "userAgent": joined.get("user-agent", "")},
        "requestId": request_id or _request_id(),
        "routeKey": route_key,
        "stage": stage,
        "time": _clf_time(now),
        "timeEpoch": int(now.timestamp() * 1000),
    }
    text, encoded = _body(body, joined.get("content-type", ""))
    if text is not None:
        event["body"] = text
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    event["isBase64Encoded"] = encoded
    if stage_variables:
        event["stageVariables"] = dict(stage_variables)
    return event


class Route(Protocol):
    """An HttpApi event of a function, as far as routing needs it: ``Path`` (``/sheets/{proxy+}``, or
    ``$default``) and ``Method`` (``ANY`` or a method)."""

    @property
    def Path(self) -> str: ...  # the template's property names

    @property
    def Method(self) -> str: ...


def match_route[R: Route](routes: Sequence[R], method: str, path: str) -> tuple[R, str, dict[str, str]] | None:
    """The route API Gateway selects for ``method path``, its routeKey and its path parameters; None when no route
    matches (API Gateway answers 404 ``{"message":"Not Found"}``).

    AWS's priority (API Gateway Developer Guide, http-api-develop-routes, "Routing API requests"): a full match of
    route and method, then a match with a greedy path variable (``{proxy+}``, which takes the rest of the path), then
    the ``$default`` route, wherever it is listed. ``{name}`` matches one segment. Among full matches a literal
    segment beats a variable at the first place they differ (``GET /pets/dog/1`` over ``GET /pets/dog/{id}``), and
    a route of the request's method beats ``ANY`` ("the ANY method matches all methods that you haven't defined");
    among greedy matches the longest literal prefix wins, then the method.

    ``path`` is the path as the client sent it; routes match its decoded form (:func:`event_path`), so path
    parameters come decoded, as HTTP APIs give them."""
    path = event_path(path)
    best: tuple[tuple[object, ...], R, dict[str, str]] | None = None
    default: R | None = None
    for route in routes:
        if route.Path == "$default":
            default = default or route
            continue
        if route.Method.upper() not in ("ANY", method.upper()):
            continue
        matched = _match_path(route.Path, path)
        if matched is None:
            continue
        shape, params = matched
        rank = (*shape, route.Method.upper() == "ANY")
        if best is None or rank < best[0]:
            best = (rank, route, params)
    if best is not None:
        _, route, params = best
        return route, f"{route.Method.upper()} {route.Path}", params
    return (default, "$default", {}) if default is not None else None


def _match_path(template: str, path: str) -> tuple[tuple[object, ...], dict[str, str]] | None:
    """Whether ``path`` matches the route path ``template``: the match's rank (lower is more specific: full before
    greedy, then a literal before a variable segment by segment, a longer greedy prefix first) and the path
    parameters; None if it does not match."""
    wanted, given = template.strip("/").split("/"), path.strip("/").split("/")
    last = wanted[-1]
    greedy = last.startswith("{") and last.endswith("+}")
    if greedy:
        fixed = wanted[:-1]
        if len(given) <= len(fixed) or not "/".join(given[len(fixed):]):
            return None  # a greedy variable takes at least one segment: /pets/{proxy+} does not match /pets
    elif len(given) != len(wanted):
        return None
    else:
        fixed = wanted
    params: dict[str, str] = {}
    shape: list[int] = []
    for want, got in zip(fixed, given, strict=False):
        if want.startswith("{") and want.endswith("}"):
            if not got:
                return None
            params[want[1:-1]] = got
            shape.append(1)
        elif want == got:
            shape.append(0)
        else:
            return None
    if greedy:
        params[last[1:-2]] = "/".join(given[len(fixed):])
        return (1, -len(fixed), *shape), params
    return (0, *shape), params


def request_event(method: str, target: str, headers: Headers, body: bytes | None, *, route_key: str,
                  path_parameters: Mapping[str, str] | None = None, authorizer: Mapping[str, Any] | None = None,
                  request_id: str | None = None, now: datetime | None = None, source_ip: str = "127.0.0.1",
                  listener: tuple[int, str] = AWS_LISTENER) -> dict[str, Any]:
    """The event of one HTTP request (``target``: path and query as sent) to the route :func:`match_route` found.

    The path goes into the event decoded (:func:`event_path`), and the headers get what API Gateway adds
    (:func:`forwarded_headers`) for a client at ``source_ip`` connected to ``listener`` (port, protocol).
    """
    now = now or datetime.now(UTC)
    request_id = request_id or _request_id()
    parts = urlsplit(target)
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return http_api_event(method, event_path(parts.path), query=parts.query,
                          headers=forwarded_headers(pairs, source_ip=source_ip, listener=listener,
                                                    request_id=request_id, now=now),
                          body=body or None, route_key=route_key, path_parameters=path_parameters or None,
                          authorizer=authorizer, request_id=request_id, now=now, source_ip=source_ip)


def event_path(raw_path: str) -> str:
    """The path of a request as an HTTP API hands it to the function: percent-escapes decoded (UTF-8; ``+``
    stays ``+``, ``%2F`` becomes ``/``), cut at a decoded ``?``; ``/`` when empty.

    HTTP APIs decode the path before routing, unlike REST APIs and function URLs: rawPath, requestContext.http.path
    and the path parameters all come decoded. AWS's pages do not say so; AWS's own Lambda test tool for .NET
    settled it against API Gateway ("The path and path parameters should be decoded",
    https://github.com/aws/aws-lambda-dotnet/pull/1901), and live captures agree (a request for
    /capture/space%20value arrived as "rawPath": "/capture/space value",
    https://github.com/middleapi/standard-server/pull/93, which also saw the cut at a decoded "?").
    """
    return unquote(raw_path).partition("?")[0] or "/"


def forwarded_headers(headers: Iterable[tuple[str, str]], *, source_ip: str, listener: tuple[int, str],
                      request_id: str, now: datetime) -> list[tuple[str, str]]:
    """``headers`` as the integration receives them: x-amzn-trace-id (a client's own kept; else a new trace
    whose id follows from ``request_id``, so a seeded run makes the same ones), x-forwarded-for ending in
    ``source_ip``, and x-forwarded-port and x-forwarded-proto from ``listener`` in place of any a client sent
    (see the comment at :data:`AWS_LISTENER`)."""
    kept: list[tuple[str, str]] = []
    chain: list[str] = []
    trace = None
    for name, value in headers:
        key = name.lower()
        if key == "x-forwarded-for":
            chain.append(value)
        elif key == "x-amzn-trace-id" and trace is None:
            trace = value
        elif key not in ("x-forwarded-port", "x-forwarded-proto", "x-amzn-trace-id"):
            kept.append((name, value))
    if trace is None:
        trace_id = hashlib.sha256(request_id.encode()).hexdigest()[:24]
        trace = f"Root=1-{int(now.timestamp()):08x}-{trace_id}"
    port, proto = listener
    return [*kept, ("x-amzn-trace-id", trace), ("x-forwarded-for", ", ".join([*chain, source_ip])),
            ("x-forwarded-port", str(port)), ("x-forwarded-proto", proto)]


def function_failure(*, timed_out: bool) -> tuple[int, list[tuple[str, str]], bytes]:
    """API Gateway's answer when the function did not return: 503 after a timeout, else 500 (a function error or
    a crash)."""
    status, headers, body = SERVICE_UNAVAILABLE if timed_out else INTERNAL_SERVER_ERROR
    return status, list(headers), body


def http_api_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """The HTTP response API Gateway makes of a handler's return value (payload format 2.0).

    A dict with ``statusCode`` is a full response: statusCode, headers, cookies (each becomes a ``set-cookie``
    header), body and isBase64Encoded. Anything else is taken as the body of a 200 ``application/json`` response:
    a str as it is, any other value as its JSON. A malformed response is answered as API Gateway answers it:
    500 ``{"message":"Internal Server Error"}``.

    Returns:
        (status code, header pairs in order, body bytes).
    """
    if not (isinstance(result, Mapping) and "statusCode" in result):
        if isinstance(result, str):
            return 200, [("content-type", "application/json")], result.encode()
        try:
            text = json.dumps(result)
        except (TypeError, ValueError):
            return _internal_error()  # Lambda could not serialize the result: the invocation failed
        return 200, [("content-type", "application/json")], text.encode()

    status = result["statusCode"]
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return _internal_error()
    headers: list[tuple[str, str]] = []
    for name, value in (result.get("headers") or {}).items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return _internal_error()
        headers.append((str(name), str(value)))
    cookies = result.get("cookies") or []
    if not isinstance(cookies, list) or not all(isinstance(c, str) for c in cookies):
        return _internal_error()
    headers.extend(("set-cookie", cookie) for cookie in cookies)
    body = result.get("body")
    if body is None:
        return status, headers, b""
    if not isinstance(body, str):
        return _internal_error()
    if result.get("isBase64Encoded") is True:
        try:
            return status, headers, base64.b64decode(body, validate=True)
        except binascii.Error:
            return _internal_error()
    return status, headers, body.encode()


def _internal_error() -> tuple[int, list[tuple[str, str]], bytes]:
    status, headers, body = INTERNAL_SERVER_ERROR
    return status, list(headers), body


def _headers(headers: Headers) -> tuple[dict[str, str], list[str]]:
    """Lowercased headers with repeats joined by commas, and the cookies taken out of Cookie headers."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in pairs:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    return joined, cookies


def _raw_query(query: Query | None) -> str:
    if query is None:
        return ""
    if isinstance(query, str):
        return query.removeprefix("?")
    pairs: list[tuple[str, str]] = []
    items = query.items() if isinstance(query, Mapping) else query
    for name, value in items:
        if isinstance(value, str):
            pairs.append((name, value))
        else:
            pairs.extend((name, v) for v in value)
    return urlencode(pairs, quote_via=quote)


def query_pairs(raw_query: str) -> list[tuple[str, str]]:
    """The query string's (name, value) pairs as the function gets them in ``queryStringParameters``: split at
    ``&``, each name and value percent-decoded as UTF-8 with ``+`` as a space (the form encoding), a piece without
    ``=`` kept with an empty value. ``rawQueryString`` keeps the string as sent, percent-encoding and all (a
    capture on AWS: https://github.com/ministackorg/ministack/issues/1035). AWS's pages do not say how a raw ``+``
    decodes; a capture of an API Gateway proxy integration shows ``?sort=-+createdAt`` arriving as
    ``"- createdAt"`` (https://github.com/aws/aws-cdk/issues/19827, a REST API's event), and HTTP APIs are taken
    to decode alike.

    Whatever the rule, it is this one function's: the emulator's gateway checks a request's SigV4 signature
    against these same pairs (:mod:`seglog_emulator.api_auth`), so the values a signature covers are the values
    the handler acts on.
    """
    return parse_qsl(raw_query, keep_blank_values=True)


def _query_parameters(raw_query: str) -> dict[str, str]:
    parameters: dict[str, str] = {}
    for name, value in query_pairs(raw_query):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    return parameters


def _body(body: bytes | str | None, content_type: str) -> tuple[str | None, bool]:
    """(the event's body or None, isBase64Encoded)."""
    if body is None or len(body) == 0:
        return None, False
    if isinstance(body, str):
        return body, False
    if _is_text(content_type):
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return to_base64(body), True


def _is_text(content_type: str) -> bool:
    """Whether API Gateway passes a body of ``content_type`` as text (:data:`TEXT_CONTENT_TYPES`)."""
    media = content_type.split(";", 1)[0].strip(" \t").lower()
    return media.startswith("text/") or media in TEXT_CONTENT_TYPES


def _clf_time(now: datetime) -> str:
    """``12/Mar/2020:19:03:58 +0000`` (always UTC; month names never from the locale)."""
    t = now.astimezone(UTC)
    return f"{t.day:02d}/{_MONTHS[t.month - 1]}/{t.year}:{t.hour:02d}:{t.minute:02d}:{t.second:02d} +0000"


def _request_id() -> str:
    # API Gateway's ids look like "JKJaXmPLvHcESHA=": 11 random bytes in base64.
    return base64.b64encode(os.urandom(11)).decode("ascii")
