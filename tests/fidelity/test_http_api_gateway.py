"""The gateway hands the function API Gateway's HTTP API payload format 2.0 event (DESIGN §9, item 10), and guards
its routes as API Gateway does (DESIGN §10.3): IAM authorization (SigV4) and CORS."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from structlog.testing import capture_logs

from fidelity.conftest import MakeInvoker, Probe
from seglog_awsmodel.config import AWS_IAM, HttpRoute
from seglog_awsmodel.cors import CorsConfiguration
from seglog_client import Credentials, SeglogClient
from seglog_client.sigv4 import sign
from seglog_emulator.access_log import AccessLog
from seglog_emulator.api_auth import IamAuthorizer
from seglog_emulator.gateway import Gateway
from signed_http import LOCAL, Reply, send, signed


def test_http_api_event_is_payload_format_2_0_field_for_field(probe: Probe, make_invoker: MakeInvoker) -> None:
    """Amazon API Gateway Developer Guide, http-api-develop-integrations-lambda
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html),
    "Payload format structure" for version 2.0: keys in AWS's order, lowercased headers, cookies apart, repeated
    query parameters joined with commas, the greedy path parameter, a text body not base64-encoded; and the
    function's statusCode/headers/body become the HTTP response (the gateway listens on a free port). The headers
    carry what API Gateway adds (x-forwarded-for/-port/-proto from the client and the listener, an X-Ray
    x-amzn-trace-id), and the path arrives decoded, as HTTP APIs decode it (cited in
    seglog_awsmodel.events.api_gateway)."""
    route = HttpRoute(function="probe", event="Api", Path="/items/{proxy+}", Method="ANY")
    gateway = Gateway([route], make_invoker(), port=0)
    server = threading.Thread(target=gateway.serve, daemon=True)
    server.start()
    try:
        request = urllib.request.Request(
            f"{gateway.url}/items/a%20b/c?x=1&x=2&y=z", data=b'{"k": 1}', method="POST",
            headers={"Content-Type": "application/json", "Cookie": "c1=v1; c2=v2", "X-Custom": "one",
                     "User-Agent": "fidelity-test"})
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, body = response.status, dict(response.headers), response.read()
    finally:
        gateway.stop()
        server.join(timeout=10)

    assert (201, "yes", {"rawPath": "/items/a b/c"}) == (status, headers.get("x-probe"), json.loads(body))
    (start,) = probe.starts()
    event = start["event"]
    assert ["version", "routeKey", "rawPath", "rawQueryString", "cookies", "headers", "queryStringParameters",
            "requestContext", "body", "pathParameters", "isBase64Encoded"] == list(event)
    assert ("2.0", "ANY /items/{proxy+}", "/items/a b/c", "x=1&x=2&y=z") == (
        event["version"], event["routeKey"], event["rawPath"], event["rawQueryString"])
    assert ["c1=v1", "c2=v2"] == event["cookies"]
    assert all(name == name.lower() for name in event["headers"])
    assert ("application/json", "one") == (event["headers"]["content-type"], event["headers"]["x-custom"])
    assert "cookie" not in event["headers"]
    port = gateway.server.server_address[1]
    assert ("127.0.0.1", str(port), "http") == (event["headers"]["x-forwarded-for"],
                                                 event["headers"]["x-forwarded-port"],
                                                 event["headers"]["x-forwarded-proto"])
    trace = re.fullmatch(r"Root=1-([0-9a-f]{8})-[0-9a-f]{24}", event["headers"]["x-amzn-trace-id"])
    assert trace is not None and int(trace.group(1), 16) == event["requestContext"]["timeEpoch"] // 1000
    assert {"x": "1,2", "y": "z"} == event["queryStringParameters"]
    assert ({"proxy": "a b/c"}, '{"k": 1}', False) == (
        event["pathParameters"], event["body"], event["isBase64Encoded"])
    context = event["requestContext"]
    assert ["accountId", "apiId", "domainName", "domainPrefix", "http", "requestId", "routeKey", "stage", "time",
            "timeEpoch"] == list(context)
    assert {"method": "POST", "path": "/items/a b/c", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
            "userAgent": "fidelity-test"} == context["http"]
    assert ("ANY /items/{proxy+}", "$default") == (context["routeKey"], context["stage"])
    assert isinstance(context["timeEpoch"], int)


# ------------------------------------------------------------------------------------------ IAM authorization and CORS
#
# Amazon API Gateway Developer Guide, http-api-access-control-iam
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-access-control-iam.html) and http-api-cors
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html); the refusal texts are cited in
# seglog_emulator.api_auth.

REGION = "us-east-1"
IAM_ROUTE = HttpRoute(function="probe", event="Api", Path="/items/{proxy+}", Method="POST", Authorizer=AWS_IAM)
CORS = CorsConfiguration(AllowOrigins=("https://app.example.com",), AllowHeaders=("authorization", "content-type",
                         "x-amz-date", "x-amz-security-token"), AllowMethods=("GET", "POST", "OPTIONS"),
                         ExposeHeaders=("x-probe",), MaxAge=600)
TEMPORARY = Credentials("ASIALOCALTEMP", "temporary-secret", "session-token-of-the-temporary-key")
MISMATCH = ("The request signature we calculated does not match the signature you provided. Check your AWS Secret "
            "Access Key and signing method. Consult the service documentation for details.")


@contextmanager
def serving(make_invoker: MakeInvoker, *routes: HttpRoute, cors: CorsConfiguration | None = CORS,
            callers: tuple[Credentials, ...] = (LOCAL, TEMPORARY), access_log: AccessLog | None = None
            ) -> Iterator[Gateway]:
    """A gateway on a free port for the probe function, with IAM authorization accepting ``callers``."""
    gateway = Gateway(routes or (IAM_ROUTE,), make_invoker(), port=0, cors=cors,
                      authorizer=IamAuthorizer.accepting(callers, region=REGION), access_log=access_log)
    server = threading.Thread(target=gateway.serve, daemon=True)
    server.start()
    try:
        yield gateway
    finally:
        gateway.stop()
        server.join(timeout=10)


def refusal(reply: Reply) -> tuple[int, str, str]:
    return reply.status, reply.headers.get("x-amzn-errortype", ""), reply.json["message"]


def test_an_unsigned_request_is_refused_with_api_gateways_403_and_never_reaches_the_function(
        probe: Probe, make_invoker: MakeInvoker) -> None:
    with serving(make_invoker) as gateway:
        reply = send("POST", f"{gateway.url}/items/a", b'{"k": 1}', {"content-type": "application/json"})
    assert (403, b'{"message":"Forbidden"}', "ForbiddenException") == (
        reply.status, reply.body, reply.headers.get("x-amzn-errortype"))
    assert [] == probe.starts()


def test_the_client_librarys_signed_request_reaches_the_function_with_the_callers_iam_identity(
        probe: Probe, make_invoker: MakeInvoker) -> None:
    """requestContext.authorizer.iam as API Gateway fills it for an IAM-authorized request (payload format 2.0:
    accessKey, accountId, callerId, cognitoIdentity, principalOrgId, userArn, userId), after apiId."""
    with serving(make_invoker) as gateway:
        answer = SeglogClient(gateway.url, credentials=LOCAL, region=REGION).request(
            "POST", "/items/a b/ü?x=1&y=a+b&z=%2F", {"k": 1})
    assert {"rawPath": "/items/a b/ü"} == answer  # signed over the encoded path; the function sees it decoded
    (start,) = probe.starts()
    context = start["event"]["requestContext"]
    assert ["accountId", "apiId", "authorizer", "domainName"] == list(context)[:4]
    assert {"iam": {"accessKey": "test", "accountId": "000000000000", "callerId": "000000000000",
                    "cognitoIdentity": None, "principalOrgId": None, "userArn": "arn:aws:iam::000000000000:root",
                    "userId": "000000000000"}} == context["authorizer"]
    assert "x=1&y=a+b&z=%2F" == start["event"]["rawQueryString"]


@pytest.mark.parametrize("change", ["body", "path", "query", "header", "method"])
def test_a_request_changed_after_signing_is_refused(change: str, probe: Probe, make_invoker: MakeInvoker) -> None:
    """The signature covers the method, path, query, every signed header and the body's hash."""
    signed_as = {"method": "POST", "path": "/items/a?x=1", "body": b'{"k":1}',
                 "headers": {"content-type": "application/json"}}
    sent_as = {**signed_as, **{
        "body": {"body": b'{"k":2}'}, "path": {"path": "/items/b?x=1"}, "query": {"path": "/items/a?x=2"},
        "header": {"headers": {"content-type": "text/plain"}}, "method": {"method": "PUT"}}[change]}
    route = HttpRoute(function="probe", event="Api", Path="/items/{proxy+}", Method="ANY", Authorizer=AWS_IAM)
    with serving(make_invoker, route) as gateway:
        headers = sign(signed_as["method"], gateway.url + signed_as["path"], signed_as["headers"],
                       signed_as["body"], LOCAL, region=REGION)
        headers.update({k: v for k, v in sent_as["headers"].items()})
        reply = send(sent_as["method"], gateway.url + sent_as["path"], sent_as["body"], headers)
    status, kind, message = refusal(reply)
    assert (403, "InvalidSignatureException", True) == (status, kind, message.startswith(MISMATCH))
    assert "The Canonical String for this request should have been\n'" in message
    assert [] == probe.starts()


def test_refusals_say_what_api_gateway_says(make_invoker: MakeInvoker) -> None:
    """A wrong secret, a key the gateway does not know, another region's scope, a date more than 5 minutes off
    either way, a malformed Authorization header: each 403 with API Gateway's own text."""
    now = datetime.now(UTC).replace(microsecond=0)
    late = now - timedelta(minutes=6)
    early = now + timedelta(minutes=6)
    with serving(make_invoker) as gateway:
        url = f"{gateway.url}/items/a"
        wrong_secret = signed("POST", url, b"{}", credentials=Credentials("test", "not-the-secret"), region=REGION)
        unknown = signed("POST", url, b"{}", credentials=Credentials("AKIDUNKNOWN", "test"), region=REGION)
        elsewhere = signed("POST", url, b"{}", region="eu-west-1")
        expired = signed("POST", url, b"{}", region=REGION, now=late)
        future = signed("POST", url, b"{}", region=REGION, now=early)
        malformed = send("POST", url, b"{}", {"authorization": "Bearer abc.def", "x-amz-date": "20260101T000000Z"})
        broken_pair = send("POST", url, b"{}", {"authorization": "AWS4-HMAC-SHA256 Credential test/x",
                                                "x-amz-date": "20260101T000000Z"})
    status, kind, message = refusal(wrong_secret)
    assert (403, "InvalidSignatureException", True) == (status, kind, message.startswith(MISMATCH))
    assert (403, "UnrecognizedClientException", "The security token included in the request is invalid.") == \
        refusal(unknown)
    assert (403, "InvalidSignatureException", "Credential should be scoped to a valid region, not 'eu-west-1'. ") \
        == refusal(elsewhere)
    expired_status, _, expired_message = refusal(expired)
    basic = "%Y%m%dT%H%M%SZ"
    assert (403, f"Signature expired: {late:{basic}} is now earlier than ") == (
        expired_status, expired_message[:len(f"Signature expired: {late:{basic}} is now earlier than ")])
    assert expired_message.endswith(" - 5 min.)")
    future_status, _, future_message = refusal(future)
    assert (403, True, True) == (future_status, future_message.startswith(
        f"Signature not yet current: {early:{basic}} is still later than "), future_message.endswith(" + 5 min.)"))
    assert (403, "IncompleteSignatureException",
            "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' "
            "parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=Bearer abc.def") == \
        refusal(malformed)
    assert (403, "IncompleteSignatureException",
            "'Credential test/x' not a valid key=value pair (missing equal-sign) in Authorization header: "
            "'AWS4-HMAC-SHA256 Credential test/x'.") == refusal(broken_pair)


def test_temporary_credentials_need_their_session_token(probe: Probe, make_invoker: MakeInvoker) -> None:
    """Signed with a temporary key but without its token (or with another token), the request is refused as an
    invalid security token; with it, it passes."""
    without = Credentials(TEMPORARY.access_key_id, TEMPORARY.secret_access_key)
    other = Credentials(TEMPORARY.access_key_id, TEMPORARY.secret_access_key, "some-other-token")
    with serving(make_invoker) as gateway:
        url = f"{gateway.url}/items/a"
        replies = [signed("POST", url, b"{}", credentials=c, region=REGION) for c in (without, other, TEMPORARY)]
    assert [403, 403, 201] == [r.status for r in replies]
    assert {"UnrecognizedClientException"} == {r.headers["x-amzn-errortype"] for r in replies[:2]}
    (start,) = probe.starts()
    assert "ASIALOCALTEMP" == start["event"]["requestContext"]["authorizer"]["iam"]["accessKey"]


def test_a_preflight_is_answered_by_the_gateway_unsigned_and_only_for_allowed_origins(
        probe: Probe, make_invoker: MakeInvoker) -> None:
    """No route catches OPTIONS, so the gateway answers the preflight itself from the CorsConfiguration, with no
    signature asked and no function run; an origin not allowed gets no CORS header, so the browser stops there."""
    preflight = {"access-control-request-method": "POST",
                 "access-control-request-headers": "authorization,content-type,x-amz-date"}
    with serving(make_invoker) as gateway:
        allowed = send("OPTIONS", f"{gateway.url}/items/a", None, {"origin": "https://app.example.com", **preflight})
        refused = send("OPTIONS", f"{gateway.url}/items/a", None, {"origin": "https://evil.example", **preflight})
    assert 204 == allowed.status
    assert {"access-control-allow-origin": "https://app.example.com",
            "access-control-allow-methods": "GET,POST,OPTIONS",
            "access-control-allow-headers": "authorization,content-type,x-amz-date,x-amz-security-token",
            "access-control-max-age": "600"} == {k: v for k, v in allowed.headers.items()
                                                 if k.startswith("access-control-")}
    assert (204, []) == (refused.status, [k for k in refused.headers if k.startswith("access-control-")])
    assert [] == probe.starts()


def test_answers_to_an_allowed_origin_carry_the_cors_headers(make_invoker: MakeInvoker) -> None:
    with serving(make_invoker) as gateway:
        ours = signed("POST", f"{gateway.url}/items/a", b"{}", {"origin": "https://app.example.com"}, region=REGION)
        theirs = signed("POST", f"{gateway.url}/items/a", b"{}", {"origin": "https://evil.example"}, region=REGION)
    assert (201, "https://app.example.com", "x-probe") == (
        ours.status, ours.headers.get("access-control-allow-origin"), ours.headers.get("access-control-expose-headers"))
    assert (201, None) == (theirs.status, theirs.headers.get("access-control-allow-origin"))


def test_an_any_route_sends_preflights_through_the_iam_check(probe: Probe, make_invoker: MakeInvoker) -> None:
    """Why the template has one route per method: an ANY route catches OPTIONS, so API Gateway does not answer
    the preflight itself, and the unsigned preflight meets the route's IAM authorizer."""
    route = HttpRoute(function="probe", event="Api", Path="/items/{proxy+}", Method="ANY", Authorizer=AWS_IAM)
    with serving(make_invoker, route) as gateway:
        reply = send("OPTIONS", f"{gateway.url}/items/a", None, {"origin": "https://app.example.com",
                                                                 "access-control-request-method": "POST"})
    assert (403, "ForbiddenException") == (reply.status, reply.headers.get("x-amzn-errortype"))
    assert [] == probe.starts()


def test_the_access_log_has_a_line_per_request_in_the_apis_format(probe: Probe, make_invoker: MakeInvoker) -> None:
    """AccessLogSettings.Format with its $context variables filled in, one line per request, refused ones too
    (API Gateway Developer Guide, http-api-logging-variables); a variable without a value renders as "-"."""
    fmt = ('{"requestId":"$context.requestId","caller":"$context.identity.userArn","route":"$context.routeKey",'
           '"status":"$context.status","error":"$context.integrationErrorMessage"}')
    with capture_logs() as logs, serving(make_invoker, access_log=AccessLog(fmt)) as gateway:
        signed("POST", f"{gateway.url}/items/a", b"{}", {"content-type": "application/json"})
        send("POST", f"{gateway.url}/items/b", b"{}", {"content-type": "application/json"})
    lines = [json.loads(line["line"]) for line in logs if line["event"] == "access log"]
    (start,) = probe.starts()
    assert [{"requestId": start["event"]["requestContext"]["requestId"], "caller": "arn:aws:iam::000000000000:root",
             "route": "POST /items/{proxy+}", "status": "201", "error": "-"},  # the probe answers 201
            {"requestId": "-", "caller": "-", "route": "-", "status": "403", "error": "-"}] == lines
