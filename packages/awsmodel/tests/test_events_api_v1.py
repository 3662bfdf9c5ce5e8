"""Payload format 1.0 (issue 36, point 3): a REST API's proxy event and an HTTP API route's 1.0 event have the
fields, types and nulls of the samples in API Gateway's guide (set-up-lambda-proxy-integrations, "Input format of
a Lambda function for proxy integration"; http-api-develop-integrations-lambda, "Payload format version"), and
the answers API Gateway gives for a malformed response, a function error, a timeout and an unknown path."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from seglog_awsmodel.events.api_gateway_v1 import (
    function_failure_v1,
    proxy_response,
    request_event_v1,
)

NOW = datetime(2020, 3, 4, 19, 15, 17, 135000, tzinfo=UTC)
#: The top-level keys of the guide's REST sample, in its order; an HTTP API's 1.0 event starts with "version".
REST_KEYS = ["resource", "path", "httpMethod", "headers", "multiValueHeaders", "queryStringParameters",
             "multiValueQueryStringParameters", "requestContext", "pathParameters", "stageVariables", "body",
             "isBase64Encoded"]
#: requestContext.identity's keys in the guide's samples.
IDENTITY_KEYS = {"accessKey", "accountId", "caller", "cognitoAuthenticationProvider", "cognitoAuthenticationType",
                 "cognitoIdentityId", "cognitoIdentityPoolId", "principalOrgId", "sourceIp", "user", "userAgent",
                 "userArn"}


def rest_event(**kwargs: object) -> dict[str, object]:
    headers = [("Host", "abc.execute-api.us-east-1.amazonaws.com"), ("User-Agent", "curl/8"),
               ("Header2", "one"), ("Header2", "two")]
    return request_event_v1("GET", "/orders/o%201?a=1&a=2&b=x", headers, None, resource="/orders/{id}",
                            path_parameters={"id": "o%201"}, request_id="c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
                            now=NOW, source_ip="198.51.100.7", **kwargs)  # type: ignore[arg-type]


def test_a_rest_event_has_the_samples_fields_in_order_with_their_types() -> None:
    event = rest_event()
    assert REST_KEYS == list(event)
    assert ("/orders/{id}", "/orders/o%201", "GET") == (event["resource"], event["path"], event["httpMethod"])
    # The single-value maps keep the last value of a repeated name; the multi-value maps keep them all.
    headers, multi = event["headers"], event["multiValueHeaders"]
    assert isinstance(headers, dict) and isinstance(multi, dict)
    assert ("two", ["one", "two"]) == (headers["Header2"], multi["Header2"])
    assert "Host" in headers  # a REST API keeps the client's case
    assert ({"a": "2", "b": "x"}, {"a": ["1", "2"], "b": ["x"]}) == (
        event["queryStringParameters"], event["multiValueQueryStringParameters"])
    assert {"id": "o%201"} == event["pathParameters"]  # a REST API does not decode
    assert (None, None, False) == (event["stageVariables"], event["body"], event["isBase64Encoded"])
    context = event["requestContext"]
    assert isinstance(context, dict)
    assert {"accountId", "apiId", "domainName", "domainPrefix", "extendedRequestId", "httpMethod", "identity",
            "path", "protocol", "requestId", "requestTime", "requestTimeEpoch", "resourceId", "resourcePath",
            "stage"} == set(context)
    assert ("/Prod/orders/o%201", "Prod", "/orders/{id}", "GET") == (
        context["path"], context["stage"], context["resourcePath"], context["httpMethod"])
    assert ("04/Mar/2020:19:15:17 +0000", 1583349317135) == (context["requestTime"], context["requestTimeEpoch"])
    assert ("abc.execute-api.us-east-1.amazonaws.com", "abc") == (context["domainName"], context["domainPrefix"])
    identity = context["identity"]
    assert isinstance(identity, dict) and IDENTITY_KEYS == set(identity)
    assert ("198.51.100.7", "curl/8", None) == (identity["sourceIp"], identity["userAgent"], identity["userArn"])


def test_an_http_api_route_of_format_1_0_says_its_version_decodes_and_lowercases() -> None:
    event = rest_event(rest=False, stage="$default")
    assert ["version", *REST_KEYS] == list(event) and "1.0" == event["version"]
    assert ("/orders/o 1", {"id": "o 1"}) == (event["path"], event["pathParameters"])
    assert "host" in event["headers"]  # type: ignore[operator]
    context = event["requestContext"]
    assert isinstance(context, dict)
    assert ("/orders/o 1", "$default", None) == (context["path"], context["stage"], context["resourceId"])


def test_iam_authorization_fills_the_callers_identity() -> None:
    iam = {"accessKey": "AKIA1", "accountId": "000000000000", "caller": "AIDA1", "user": "AIDA1",
           "userArn": "arn:aws:iam::000000000000:user/test"}
    identity = rest_event(authorizer={"iam": iam})["requestContext"]["identity"]  # type: ignore[index]
    assert ("AKIA1", "arn:aws:iam::000000000000:user/test") == (identity["accessKey"], identity["userArn"])


def test_a_body_travels_as_text() -> None:
    event = request_event_v1("POST", "/orders", [("content-type", "application/json")], b'{"item": "tea"}',
                             resource="/orders", now=NOW)
    assert ('{"item": "tea"}', False) == (event["body"], event["isBase64Encoded"])
    binary = request_event_v1("POST", "/up", [("content-type", "image/png")], b"\x89PNG", resource="/up",
                              rest=False, now=NOW)
    assert (base64.b64encode(b"\x89PNG").decode(), True) == (binary["body"], binary["isBase64Encoded"])


def test_the_response_is_made_of_the_proxy_result() -> None:
    answer = proxy_response({"statusCode": 201, "headers": {"content-type": "application/json", "x-one": "1"},
                             "multiValueHeaders": {"set-cookie": ["a=1", "b=2"]}, "body": '{"ok": true}'},
                            rest=True)
    assert (201, [("set-cookie", "a=1"), ("set-cookie", "b=2"), ("content-type", "application/json"),
                  ("x-one", "1")], b'{"ok": true}') == answer
    encoded = proxy_response({"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(),
                              "isBase64Encoded": True}, rest=True)
    assert (200, b"\x00\x01") == (encoded[0], encoded[2])


def test_a_malformed_result_a_failure_and_a_timeout_get_api_gateways_answers() -> None:
    for malformed in ("just a string", {"body": "no status"}, {"statusCode": 200, "body": 7},
                      {"statusCode": 200, "multiValueHeaders": {"x": "not a list"}}):
        assert (502, b'{"message": "Internal server error"}') == proxy_response(malformed, rest=True)[::2]
        assert (500, b'{"message":"Internal Server Error"}') == proxy_response(malformed, rest=False)[::2]
    assert (502, b'{"message": "Internal server error"}') == function_failure_v1(rest=True, timed_out=False)[::2]
    assert (504, b'{"message": "Endpoint request timed out"}') == function_failure_v1(rest=True, timed_out=True)[::2]
    assert 503 == function_failure_v1(rest=False, timed_out=True)[0]
