"""HTTP requests become API Gateway HTTP API payload format 2.0 events, and handler returns become HTTP responses,
as "Create AWS Lambda proxy integrations for HTTP APIs in API Gateway" describes (DESIGN §8, §9 item 10):
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from seglog_awsmodel.events import function_failure, http_api_event, http_api_response, match_route, request_event

# The 2.0 example of "Payload format structure" on that page (without authentication/authorizer, which a
# route without authorization does not get).
AWS_HTTP_API_EVENT: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/my/path",
    "rawQueryString": "parameter1=value1&parameter1=value2&parameter2=value",
    "cookies": ["cookie1", "cookie2"],
    "headers": {"header1": "value1", "header2": "value1,value2"},
    "queryStringParameters": {"parameter1": "value1,value2", "parameter2": "value"},
    "requestContext": {
        "accountId": "123456789012",
        "apiId": "api-id",
        "domainName": "id.execute-api.us-east-1.amazonaws.com",
        "domainPrefix": "id",
        "http": {"method": "POST", "path": "/my/path", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
                 "userAgent": "agent"},
        "requestId": "id",
        "routeKey": "$default",
        "stage": "$default",
        "time": "12/Mar/2020:19:03:58 +0000",
        "timeEpoch": 1583348638390,
    },
    "body": "Hello from Lambda",
    "pathParameters": {"parameter1": "value1"},
    "isBase64Encoded": False,
    "stageVariables": {"stageVariable1": "value1"},
}
NOW = datetime(2020, 3, 12, 19, 3, 58, 390_000, tzinfo=UTC)


def shape(value: Any) -> Any:
    """Keys and JSON types, all the way down (list items by their types)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def test_a_full_request_gives_the_documented_event() -> None:
    event = http_api_event(
        "post", "/my/path", query="parameter1=value1&parameter1=value2&parameter2=value",
        headers=[("Header1", "value1"), ("Header2", "value1"), ("header2", "value2"), ("Cookie", "cookie1; cookie2"),
                 ("User-Agent", "agent")],
        body="Hello from Lambda", path_parameters={"parameter1": "value1"},
        stage_variables={"stageVariable1": "value1"}, request_id="id", source_ip="192.0.2.1", now=NOW,
        account_id="123456789012", api_id="api-id",
        domain_name="id.execute-api.us-east-1.amazonaws.com")
    assert event == json.loads(json.dumps(event)), "the event is plain JSON"
    # The example's userAgent comes from a User-Agent header, which it leaves out of "headers".
    expected = {**AWS_HTTP_API_EVENT, "headers": {**AWS_HTTP_API_EVENT["headers"], "user-agent": "agent"}}
    assert list(AWS_HTTP_API_EVENT) == list(event)
    assert shape(expected) == shape(event)
    # The example's timeEpoch is not its time (it is 4 Mar 2020); ours is NOW's.
    expected["requestContext"] = {**expected["requestContext"], "timeEpoch": 1584039838390}
    assert expected == event


def test_a_bare_get_leaves_out_what_it_does_not_have() -> None:
    event = http_api_event("GET", "/logs", now=NOW, request_id="r")
    assert {"version": "2.0", "routeKey": "$default", "rawPath": "/logs", "rawQueryString": "", "headers": {},
            "requestContext": {"accountId": "000000000000", "apiId": "seglog", "domainName": "localhost",
                               "domainPrefix": "localhost",
                               "http": {"method": "GET", "path": "/logs", "protocol": "HTTP/1.1",
                                        "sourceIp": "127.0.0.1", "userAgent": ""},
                               "requestId": "r", "routeKey": "$default", "stage": "$default",
                               "time": "12/Mar/2020:19:03:58 +0000", "timeEpoch": 1584039838390},
            "isBase64Encoded": False} == event


def test_the_route_key_and_stage_appear_in_the_event_and_its_context() -> None:
    event = http_api_event("POST", "/logs/abc/entries", route_key="POST /logs/{log}/entries", stage="prod",
                           path_parameters={"log": "abc"}, headers={"Host": "api.example.com:8080"})
    assert ("POST /logs/{log}/entries", "POST /logs/{log}/entries", "prod") == (
        event["routeKey"], event["requestContext"]["routeKey"], event["requestContext"]["stage"])
    assert {"log": "abc"} == event["pathParameters"]
    assert ("api.example.com", "api") == (event["requestContext"]["domainName"],
                                          event["requestContext"]["domainPrefix"])


def test_query_parameters_repeat_with_commas_and_are_decoded() -> None:
    event = http_api_event("GET", "/q", query={"a": ["1", "2"], "b": "x y", "empty": ""})
    assert "a=1&a=2&b=x%20y&empty=" == event["rawQueryString"]
    assert {"a": "1,2", "b": "x y", "empty": ""} == event["queryStringParameters"]
    raw = http_api_event("GET", "/q", query="?b=x%2Cy&b=z")
    assert ("b=x%2Cy&b=z", {"b": "x,y,z"}) == (raw["rawQueryString"], raw["queryStringParameters"])


def test_a_default_request_id_is_fresh_each_time() -> None:
    ids = {http_api_event("GET", "/")["requestContext"]["requestId"] for _ in range(20)}
    assert 20 == len(ids)


@pytest.mark.parametrize(("content_type", "body", "expected", "encoded"), [
    ("application/json", b'{"a": "\xc3\xa9"}', '{"a": "\u00e9"}', False),
    ("text/csv; charset=utf-8", b"a,b\n", "a,b\n", False),
    ("application/vnd.api+json", b"{}", "e30=", True),  # only application/json of the JSON types travels as text
    ("application/octet-stream", b"\x00\xff", "AP8=", True),
    ("application/x-www-form-urlencoded", b"a=1", "YT0x", True),
    ("text/plain", b"\xff\xfe", "//4=", True),  # not UTF-8: it cannot travel as text
])
def test_binary_bodies_are_base64_and_text_bodies_are_text(content_type: str, body: bytes, expected: str,
                                                           encoded: bool) -> None:
    event = http_api_event("POST", "/b", headers={"Content-Type": content_type}, body=body)
    assert (expected, encoded) == (event["body"], event["isBase64Encoded"])
    received = base64.b64decode(event["body"]) if event["isBase64Encoded"] else event["body"].encode()
    assert body == received


def test_a_path_with_a_query_string_is_refused() -> None:
    with pytest.raises(ValueError, match="pass query="):
        http_api_event("GET", "/a?b=c")


# --- responses: "Lambda function response format", format 2.0 ----------------------------------------------


@pytest.mark.parametrize(("result", "body"), [
    ("Hello from Lambda!", b"Hello from Lambda!"),
    ({"message": "Hello from Lambda!"}, b'{"message": "Hello from Lambda!"}'),
    ([1, 2], b"[1, 2]"),
])
def test_a_result_without_status_code_is_a_200_json_body(result: Any, body: bytes) -> None:
    assert (200, [("content-type", "application/json")], body) == http_api_response(result)


def test_a_full_response_gives_status_headers_cookies_and_body() -> None:
    result = {"statusCode": 201, "headers": {"Content-Type": "text/plain", "X-Count": 3},
              "cookies": ["a=1; HttpOnly", "b=2"], "body": "created", "isBase64Encoded": False}
    assert (201, [("Content-Type", "text/plain"), ("X-Count", "3"), ("set-cookie", "a=1; HttpOnly"),
                  ("set-cookie", "b=2")], b"created") == http_api_response(result)


def test_a_base64_body_is_decoded_and_a_missing_body_is_empty() -> None:
    assert (200, [], b"\x00\xff") == http_api_response({"statusCode": 200, "body": "AP8=", "isBase64Encoded": True})
    assert (204, [], b"") == http_api_response({"statusCode": 204})


@pytest.mark.parametrize("result", [
    {"statusCode": "200"},
    {"statusCode": True},
    {"statusCode": 200, "body": {"not": "a string"}},
    {"statusCode": 200, "body": "not base64!", "isBase64Encoded": True},
    {"statusCode": 200, "headers": {"x": ["a"]}},
    {"statusCode": 200, "cookies": "a=1"},
    {"not JSON": object()},
])
def test_a_malformed_result_is_an_internal_server_error(result: Any) -> None:
    assert (500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}') == (
        http_api_response(result))


def test_a_binary_upload_round_trips_through_a_handler() -> None:
    payload = bytes(range(256))

    def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
        data = base64.b64decode(event["body"]) if event["isBase64Encoded"] else event["body"].encode()
        return {"statusCode": 200, "headers": {"content-type": "application/octet-stream"},
                "cookies": [f"seen={event['cookies'][0]}"], "body": base64.b64encode(data[::-1]).decode(),
                "isBase64Encoded": True}

    event = http_api_event("PUT", "/blobs/x", headers={"content-type": "application/octet-stream", "cookie": "s=1"},
                           body=payload)
    status, headers, body = http_api_response(handler(json.loads(json.dumps(event)), None))
    assert (200, [("content-type", "application/octet-stream"), ("set-cookie", "seen=s=1")], payload[::-1]) == (
        status, headers, body)


def test_a_json_api_call_round_trips_through_a_handler() -> None:
    def handler(event: dict[str, Any], context: object) -> Any:
        request = json.loads(event["body"])
        return {"log": event["pathParameters"]["log"], "got": request, "q": event["queryStringParameters"]}

    event = http_api_event("POST", "/logs/L1/entries", route_key="POST /logs/{log}/entries",
                           path_parameters={"log": "L1"}, query={"wait": "1"},
                           headers={"Content-Type": "application/json"}, body=b'{"type": "SetCell"}')
    status, headers, body = http_api_response(handler(event, None))
    assert (200, [("content-type", "application/json")]) == (status, headers)
    assert {"log": "L1", "got": {"type": "SetCell"}, "q": {"wait": "1"}} == json.loads(body)


@dataclass(frozen=True)
class _Route:
    Path: str  # the template's property names
    Method: str


def test_a_request_takes_the_first_route_its_method_allows_and_a_greedy_proxy_takes_the_rest() -> None:
    """What both gateways (the emulator's and the simulator's) route by: the template's HttpApi events."""
    get, post = _Route("/{proxy+}", "GET"), _Route("/{proxy+}", "POST")
    assert match_route([get, post], "POST", "/sheets/a/entries") == (post, "POST /{proxy+}",
                                                                      {"proxy": "sheets/a/entries"})
    assert match_route([get, post], "DELETE", "/sheets") is None
    assert match_route([_Route("/openapi.json", "ANY")], "GET", "/openapi.json") == (
        _Route("/openapi.json", "ANY"), "ANY /openapi.json", {})
    event = request_event("GET", "/sheets/a?cursor=1.2", [("Host", "x")], None, route_key="GET /{proxy+}",
                          path_parameters={"proxy": "sheets/a"}, request_id="r1")
    assert (event["rawPath"], event["rawQueryString"], event["queryStringParameters"], event["pathParameters"],
            "body" in event) == ("/sheets/a", "cursor=1.2", {"cursor": "1.2"}, {"proxy": "sheets/a"}, False)


def test_a_function_that_did_not_return_is_answered_as_api_gateway_answers() -> None:
    assert function_failure(timed_out=True)[0] == 503
    assert function_failure(timed_out=False) == (500, [("content-type", "application/json")],
                                                 b'{"message":"Internal Server Error"}')
