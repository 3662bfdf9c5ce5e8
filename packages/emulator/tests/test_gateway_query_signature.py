"""The gateway's SigV4 check and the event it hands the function read a query string by one rule: a signature covers
the values the function acts on, or the request is refused. A raw ``+`` is a space in the event's
``queryStringParameters`` (:func:`seglog_awsmodel.events.api_gateway.query_pairs`, where the AWS behaviour is
cited), and so it is in the canonical query string the signature is checked against; a signer encodes a space
``%20`` and a plus ``%2B``, never ``+`` ("Create a signed AWS API request", IAM User Guide,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html). ``rawQueryString``
stays as sent (payload format 2.0: Amazon API Gateway Developer Guide, http-api-develop-integrations-lambda).
No stack: the invoker is a stand-in that records the event."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from seglog_awsmodel.config import AWS_IAM, HttpRoute
from seglog_client.sigv4 import Credentials, sign
from seglog_emulator.api_auth import IamAuthorizer
from seglog_emulator.gateway import Gateway
from seglog_emulator.invoker import InvocationResult, Outcome

REGION = "us-east-1"
KEYS = Credentials("AKIDQUERYTEST", "query-test-secret")
ROUTE = HttpRoute(function="ApiFunction", event="Api", Path="/sheets/{proxy+}", Method="GET", Authorizer=AWS_IAM)
HOST = "127.0.0.1:4599"


class Invoker:
    """Answers 200 to every event and keeps it."""

    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        self.events.append(event)
        return InvocationResult(outcome=Outcome.SUCCESS, function="ApiFunction", request_id="lambda-request", pid=1,
                                duration_ms=1.0, cold_start=False, payload={"statusCode": 200, "body": "{}"})


@pytest.fixture
def invoker() -> Invoker:
    return Invoker()


@pytest.fixture
def gateway(invoker: Invoker) -> Iterator[Gateway]:
    gateway = Gateway([ROUTE], invoker, authorizer=IamAuthorizer.accepting([KEYS], region=REGION))
    yield gateway
    gateway.server.server_close()  # never served: shutdown() would wait for a loop that never ran


def _send(gateway: Gateway, signed_query: str, sent_query: str) -> int:
    """GET /sheets/x/entries signed for ``?signed_query`` and sent with ``?sent_query``; the status answered."""
    headers = sign("GET", f"http://{HOST}/sheets/x/entries?{signed_query}", {}, None, KEYS, region=REGION,
                   now=datetime.now(UTC))
    answer = gateway.answer("GET", f"/sheets/x/entries?{sent_query}", list(headers.items()), b"")
    assert answer is not None
    return answer[0]


def test_a_plus_signed_as_a_plus_and_sent_raw_is_refused_never_handled_as_a_space(gateway: Gateway,
                                                                                 invoker: Invoker) -> None:
    """Signed for ``x%2By`` (the value ``x+y``), sent as ``x+y`` (which the function would get as ``x y``): the
    signature covered another value than the one the function would act on, so the gateway refuses it."""
    assert 403 == _send(gateway, "segment=x%2By", "segment=x+y")
    assert [] == invoker.events


@pytest.mark.parametrize(("signed", "sent", "value"), [
    pytest.param("segment=x%20y", "segment=x+y", "x y", id="space-signed-%20-sent-+"),
    pytest.param("segment=x%20y", "segment=x%20y", "x y", id="space-as-signed"),
    pytest.param("segment=x%2By", "segment=x%2By", "x+y", id="plus-as-signed"),
    pytest.param("segment=x+y", "segment=x%20y", "x y", id="space-signed-+-sent-%20"),
])
def test_an_accepted_request_hands_the_function_the_value_its_signature_covers(
        gateway: Gateway, invoker: Invoker, signed: str, sent: str, value: str) -> None:
    assert 200 == _send(gateway, signed, sent)
    [event] = invoker.events
    assert ({"segment": value}, sent) == (event["queryStringParameters"], event["rawQueryString"])
