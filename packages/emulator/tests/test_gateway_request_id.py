"""The gateway names the request it answered in the ``apigw-requestid`` header, as an HTTP API does, and the API
invocation's log line carries the same id (``api_request_id``): the two ends a report links a client's try to the
invocation that served it by. (API Gateway reserves the ``apigw-*`` headers: Amazon API Gateway Developer Guide,
http-api-parameter-mapping, "Reserved headers",
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-parameter-mapping.html.) No stack needed: the
invoker is a stand-in that answers as the function would."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from seglog_awsmodel.config import HttpRoute
from seglog_emulator.gateway import Gateway
from seglog_emulator.invoker import InvocationResult, Outcome

ROUTE = HttpRoute(function="ApiFunction", event="Api", Path="/sheets/{proxy+}", Method="POST")


class Invoker:
    """Answers every event with ``outcome``; records each event and the log fields it was invoked with."""

    def __init__(self, outcome: Outcome = Outcome.SUCCESS) -> None:
        self.outcome = outcome
        self.calls: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []

    def invoke(self, event: Mapping[str, Any], *, log_fields: Mapping[str, Any] | None = None,
               **_: Any) -> InvocationResult:
        self.calls.append((event, dict(log_fields or {})))
        return InvocationResult(outcome=self.outcome, function="ApiFunction", request_id="lambda-request",
                                pid=1, duration_ms=1.0, cold_start=False,
                                payload={"statusCode": 201, "body": "{}"} if self.outcome is Outcome.SUCCESS else None)


@pytest.fixture
def invoker() -> Invoker:
    return Invoker()


@pytest.fixture
def gateway(invoker: Invoker) -> Iterator[Gateway]:
    gateway = Gateway([ROUTE], invoker)
    yield gateway
    gateway.server.server_close()  # never served: shutdown() would wait for a loop that never ran


def _post(gateway: Gateway, path: str = "/sheets/s1/entries") -> tuple[int, dict[str, str]]:
    answer = gateway.answer("POST", path, [("content-type", "application/json")], b"{}")
    assert answer is not None
    status, headers, _ = answer
    return status, dict(headers)


def test_the_answer_names_the_request_the_invocation_logged(gateway: Gateway, invoker: Invoker) -> None:
    status, headers = _post(gateway)
    [(event, fields)] = invoker.calls
    request_id = event["requestContext"]["requestId"]
    assert (201, request_id) == (status, headers.get("apigw-requestid"))
    assert {"method": "POST", "path": "/sheets/s1/entries", "api_request_id": request_id} == fields


def test_each_request_gets_its_own_id(gateway: Gateway, invoker: Invoker) -> None:
    ids = {_post(gateway)[1]["apigw-requestid"] for _ in range(5)}
    assert 5 == len(ids)
    assert ids == {fields["api_request_id"] for _, fields in invoker.calls}


@pytest.mark.parametrize(("outcome", "status"), [(Outcome.CRASHED, 500), (Outcome.TIMEOUT, 503)])
def test_api_gateways_own_answer_for_a_failed_function_names_the_request_too(outcome: Outcome, status: int) -> None:
    """A function that crashed or timed out ran as a request of the API: its 500/503 carries that request's id."""
    invoker = Invoker(outcome)
    gateway = Gateway([ROUTE], invoker)
    try:
        answered, headers = _post(gateway)
    finally:
        gateway.server.server_close()
    [(event, fields)] = invoker.calls
    assert (status, event["requestContext"]["requestId"]) == (answered, headers.get("apigw-requestid"))
    assert fields["api_request_id"] == headers["apigw-requestid"]


def test_a_path_no_route_matches_reaches_no_function_and_names_no_invocation(gateway: Gateway,
                                                                              invoker: Invoker) -> None:
    status, headers = _post(gateway, "/nowhere")
    assert (404, None, []) == (status, headers.get("apigw-requestid"), invoker.calls)
