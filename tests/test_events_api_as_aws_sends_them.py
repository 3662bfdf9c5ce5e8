"""What an HTTP API adds to and does to a request before its Lambda integration sees it (issue 19, point 5): the
forwarding and trace headers, the decoded path, and which bodies travel as text. Each rule is cited where it is
kept, in :mod:`seglog_awsmodel.events.api_gateway`. No stack: the builder both gateways use is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from seglog_awsmodel.events.api_gateway import event_path, http_api_event, match_route, request_event

NOW = datetime(2020, 3, 12, 19, 3, 58, 390000, tzinfo=UTC)


@dataclass(frozen=True)
class _Route:
    Path: str  # the template's property names
    Method: str


def test_the_event_carries_the_forwarding_and_trace_headers_api_gateway_adds() -> None:
    """x-forwarded-for is the client's address, port and proto the listener's (443, https on AWS), and
    x-amzn-trace-id an X-Ray root: version 1, the request's Unix time in 8 hex digits, 24 hex digits of id."""
    event = request_event("GET", "/sheets/a", [("Host", "api.example.com"), ("Accept", "*/*")], None,
                          route_key="GET /{proxy+}", request_id="r1", now=NOW, source_ip="198.51.100.7")
    headers = event["headers"]
    assert ("198.51.100.7", "443", "https") == (
        headers["x-forwarded-for"], headers["x-forwarded-port"], headers["x-forwarded-proto"])
    match = re.fullmatch(r"Root=1-([0-9a-f]{8})-[0-9a-f]{24}", headers["x-amzn-trace-id"])
    assert match is not None, headers["x-amzn-trace-id"]
    assert int(NOW.timestamp()) == int(match.group(1), 16)
    assert ("api.example.com", "*/*") == (headers["host"], headers["accept"])
    assert "198.51.100.7" == event["requestContext"]["http"]["sourceIp"]


def test_a_clients_forwarding_headers_are_extended_or_replaced_and_its_trace_kept() -> None:
    """A proxy's X-Forwarded-For gets the client's address appended; the port and protocol are the listener's
    whatever the client claimed; a trace header the client sent goes on unchanged."""
    sent = [("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-Port", "8080"), ("X-Forwarded-Proto", "http"),
            ("X-Amzn-Trace-Id", "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c")]
    headers = request_event("GET", "/", sent, None, route_key="$default", request_id="r1", now=NOW,
                            source_ip="198.51.100.7", listener=(8443, "https"))["headers"]
    assert {"x-forwarded-for": "203.0.113.9, 198.51.100.7", "x-forwarded-port": "8443",
            "x-forwarded-proto": "https", "x-amzn-trace-id": "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c"} == headers


def test_a_trace_id_follows_from_the_request_id_so_a_seeded_run_repeats_it() -> None:
    """The simulator names its requests; the same request id gives the same trace, another id another one."""
    def trace(request_id: str) -> str:
        event = request_event("GET", "/", [], None, route_key="$default", request_id=request_id, now=NOW)
        return str(event["headers"]["x-amzn-trace-id"])

    assert trace("sim-1") == trace("sim-1")
    assert trace("sim-1") != trace("sim-2")


def test_the_path_and_its_parameters_reach_the_function_decoded() -> None:
    """HTTP APIs decode the path before routing: rawPath, requestContext.http.path and the greedy parameter come
    decoded (UTF-8; "+" stays "+"), and a decoded "?" ends the path. The query string is left as sent."""
    target = "/items/a%20b/%C3%BC+x?q=a%20b"
    _, key, parameters = match_route([_Route("/items/{proxy+}", "GET")], "GET", target.partition("?")[0]) \
        or pytest.fail("no route matched")
    event = request_event("GET", target, [], None, route_key=key, path_parameters=parameters, now=NOW)
    assert ("/items/a b/ü+x", "/items/a b/ü+x", {"proxy": "a b/ü+x"}, "q=a%20b") == (
        event["rawPath"], event["requestContext"]["http"]["path"], event["pathParameters"], event["rawQueryString"])
    assert ("/a/b", "/a", "/") == (event_path("/a%2Fb"), event_path("/a%3Fb=c"), event_path(""))


@pytest.mark.parametrize("content_type", [
    "application/json", "Application/JSON", "application/json; charset=utf-8", "application/javascript",
    "application/xml", "text/plain", "text/yaml", "text/csv; charset=utf-8",
])
def test_bodies_of_text_content_types_arrive_as_text(content_type: str) -> None:
    """isBase64Encoded false and the body as it was sent, for the types an HTTP API passes as text: text/*,
    application/json, application/javascript and application/xml (the rule and its source are cited at
    seglog_awsmodel.events.api_gateway.TEXT_CONTENT_TYPES)."""
    event = http_api_event("PATCH", "/a", headers={"Content-Type": content_type}, body=b'{"k": "\xc3\xa9"}')
    assert ('{"k": "\u00e9"}', False) == (event["body"], event["isBase64Encoded"])


@pytest.mark.parametrize("content_type", [
    "application/merge-patch+json", "application/yaml", "application/yaml; charset=utf-8", "application/ld+json",
    "application/vnd.api+json", "application/atom+xml", "application/x-www-form-urlencoded",
    "application/octet-stream", "image/png", "",
])
def test_bodies_of_other_content_types_arrive_base64_encoded(content_type: str) -> None:
    """Every other body is base64, JSON-shaped and YAML ones included: AWS encodes application/merge-patch+json and
    application/yaml bodies, so a function that reads ``body`` without looking at isBase64Encoded breaks on AWS."""
    headers = {"Content-Type": content_type} if content_type else {}
    event = http_api_event("POST", "/a", headers=headers, body=b"a=1")
    assert ("YT0x", True) == (event["body"], event["isBase64Encoded"])
