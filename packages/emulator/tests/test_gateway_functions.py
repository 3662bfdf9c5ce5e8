"""One gateway serves one API's routes, each by the function its route names (issue 36: one gateway process per
function, all on one port, answered a route of another function 404 from whichever process accepted it), and a
template with routes on two HTTP APIs is refused in words before anything starts. No stack needed: the invokers are
stand-ins that answer as their function would."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from seglog_awsmodel.config import IMPLICIT_HTTP_API, EmulatorConfig, HttpRoute
from seglog_emulator.errors import EmulatorError
from seglog_emulator.gateway import Gateway
from seglog_emulator.invoker import InvocationResult, Outcome
from seglog_emulator.supervisor import child_names

ORDERS = (HttpRoute(function="GetOrder", event="Get", Path="/orders/{id}", Method="GET"),
          HttpRoute(function="PutOrder", event="Put", Path="/orders/{id}", Method="PUT"),
          HttpRoute(function="ListOrders", event="List", Path="/orders", Method="GET"))


class Named:
    """Answers every event with its function's name; records the route keys it was invoked for."""

    def __init__(self, name: str) -> None:
        self.name, self.keys = name, list[str]()

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        self.keys.append(event["routeKey"])
        return InvocationResult(outcome=Outcome.SUCCESS, function=self.name, request_id="r", pid=1, duration_ms=1.0,
                                cold_start=False, payload={"statusCode": 200, "body": self.name})


def test_each_route_is_answered_by_its_own_function() -> None:
    invokers = {name: Named(name) for name in ("GetOrder", "PutOrder", "ListOrders")}
    gateway = Gateway(ORDERS, invokers)
    try:
        answers = {f"{method} {path}": gateway.answer(method, path, [], b"{}")
                   for method, path in (("GET", "/orders/7"), ("PUT", "/orders/7"), ("GET", "/orders"))}
    finally:
        gateway.server.server_close()
    assert {"GET /orders/7": b"GetOrder", "PUT /orders/7": b"PutOrder", "GET /orders": b"ListOrders"} == {
        key: answer[2] for key, answer in answers.items() if answer is not None}
    assert (["GET /orders/{id}"], ["PUT /orders/{id}"], ["GET /orders"]) == (
        invokers["GetOrder"].keys, invokers["PutOrder"].keys, invokers["ListOrders"].keys)


def test_a_route_without_an_invoker_for_its_function_is_refused_when_the_gateway_is_made() -> None:
    with pytest.raises(ValueError, match="no invoker for the functions of routes: \\['ListOrders'\\]"):
        Gateway(ORDERS, {"GetOrder": Named("GetOrder"), "PutOrder": Named("PutOrder")})


def test_one_gateway_child_per_api_and_two_apis_are_refused() -> None:
    config = EmulatorConfig(functions={}, queues={}, stream_mappings=(), queue_mappings=(), http_routes=ORDERS)
    assert [f"gateway:{IMPLICIT_HTTP_API}"] == child_names(config)
    admin = HttpRoute(function="Admin", event="Admin", Path="/admin", Method="GET", ApiId="AdminApi")
    two = EmulatorConfig(functions={}, queues={}, stream_mappings=(), queue_mappings=(), http_routes=(*ORDERS, admin))
    with pytest.raises(EmulatorError, match="2 APIs with routes \\(ServerlessHttpApi, AdminApi\\)"):
        child_names(two)


class Echo(Named):
    """Answers a format 1.0 event with the resource, path and path parameters it got."""

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        self.keys.append(event["resource"])
        body = json.dumps({k: event[k] for k in ("resource", "path", "pathParameters", "httpMethod")})
        return InvocationResult(outcome=Outcome.SUCCESS, function=self.name, request_id="r", pid=1, duration_ms=1.0,
                                cold_start=False, payload={"statusCode": 200, "body": body})


def test_a_rest_api_answers_with_format_1_0_with_or_without_its_stage_and_403_for_an_unknown_path() -> None:
    routes = (HttpRoute(function="Hello", event="Hello", Path="/hello/{name}", Method="GET",
                        PayloadFormatVersion="1.0", Rest=True, Stage="Prod"),)
    gateway = Gateway(routes, {"Hello": Echo("Hello")})
    try:
        plain = gateway.answer("GET", "/hello/ann", [], b"")
        staged = gateway.answer("GET", "/Prod/hello/bob", [], b"")
        unknown = gateway.answer("GET", "/nothing", [], b"")
    finally:
        gateway.server.server_close()
    assert plain is not None and staged is not None and unknown is not None
    assert {"resource": "/hello/{name}", "path": "/hello/ann", "pathParameters": {"name": "ann"},
            "httpMethod": "GET"} == json.loads(plain[2])
    assert {"name": "bob"} == json.loads(staged[2])["pathParameters"]
    assert (403, b'{"message":"Missing Authentication Token"}') == (unknown[0], unknown[2])
