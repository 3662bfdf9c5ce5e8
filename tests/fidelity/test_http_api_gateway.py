"""The gateway hands the function API Gateway's HTTP API payload format 2.0 event (DESIGN §9, item 10)."""

from __future__ import annotations

import json
import threading
import urllib.request

from fidelity.conftest import MakeInvoker, Probe
from seglog_emulator.config import HttpRoute
from seglog_emulator.gateway import Gateway


def test_http_api_event_is_payload_format_2_0_field_for_field(probe: Probe, make_invoker: MakeInvoker) -> None:
    """Amazon API Gateway Developer Guide, http-api-develop-integrations-lambda
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html),
    "Payload format structure" for version 2.0: keys in AWS's order, lowercased headers, cookies apart, repeated
    query parameters joined with commas, the greedy path parameter, a text body not base64-encoded; and the
    function's statusCode/headers/body become the HTTP response (the gateway listens on a free port)."""
    route = HttpRoute(function="probe", event="Api", Path="/items/{proxy+}", Method="ANY")
    gateway = Gateway([route], make_invoker(), port=0)
    server = threading.Thread(target=gateway.serve, daemon=True)
    server.start()
    try:
        request = urllib.request.Request(
            f"{gateway.url}/items/a/b?x=1&x=2&y=z", data=b'{"k": 1}', method="POST",
            headers={"Content-Type": "application/json", "Cookie": "c1=v1; c2=v2", "X-Custom": "one",
                     "User-Agent": "fidelity-test"})
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, body = response.status, dict(response.headers), response.read()
    finally:
        gateway.stop()
        server.join(timeout=10)

    assert (201, "yes", {"rawPath": "/items/a/b"}) == (status, headers.get("x-probe"), json.loads(body))
    (start,) = probe.starts()
    event = start["event"]
    assert ["version", "routeKey", "rawPath", "rawQueryString", "cookies", "headers", "queryStringParameters",
            "requestContext", "body", "pathParameters", "isBase64Encoded"] == list(event)
    assert ("2.0", "ANY /items/{proxy+}", "/items/a/b", "x=1&x=2&y=z") == (
        event["version"], event["routeKey"], event["rawPath"], event["rawQueryString"])
    assert ["c1=v1", "c2=v2"] == event["cookies"]
    assert all(name == name.lower() for name in event["headers"])
    assert ("application/json", "one") == (event["headers"]["content-type"], event["headers"]["x-custom"])
    assert "cookie" not in event["headers"]
    assert {"x": "1,2", "y": "z"} == event["queryStringParameters"]
    assert ({"proxy": "a/b"}, '{"k": 1}', False) == (event["pathParameters"], event["body"], event["isBase64Encoded"])
    context = event["requestContext"]
    assert ["accountId", "apiId", "domainName", "domainPrefix", "http", "requestId", "routeKey", "stage", "time",
            "timeEpoch"] == list(context)
    assert {"method": "POST", "path": "/items/a/b", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
            "userAgent": "fidelity-test"} == context["http"]
    assert ("ANY /items/{proxy+}", "$default") == (context["routeKey"], context["stage"])
    assert isinstance(context["timeEpoch"], int)
