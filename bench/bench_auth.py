"""Measure what IAM authorization costs a request: the client's SigV4 signing, the gateway's verification, and a
whole HTTP exchange with the local gateway, signed and verified versus open (no function runs: an in-process
invoker answers at once, so the difference is the authorization alone).

Run: uv run --no-sync python -m bench.bench_auth [--quick]

The request is a typical append: POST /sheets/{id}/entries with a ~180-byte JSON body and the client's headers.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bench.support import Headline
from seglog_awsmodel.config import AWS_IAM, HttpRoute
from seglog_client.sigv4 import Credentials, header_map, sign
from seglog_client.transport import exchange
from seglog_emulator.api_auth import Caller, IamAuthorizer
from seglog_emulator.gateway import Gateway
from seglog_emulator.invoker import InvocationResult, Outcome

KEYS = Credentials("test", "test")
REGION = "us-east-1"
BODY = (b'{"entry":{"ref":"B2","type":"set","value":5},"entry_id":"7d9e1c2b-0a4f-4e3d-8c5b-6a7f8e9d0c12",'
        b'"since":{"num":41,"segment":0}}')
HEADERS = {"content-type": "application/json", "accept": "application/json"}


class _Answering:
    """An invoker that answers every event at once: the exchange measured is the gateway's own work."""

    def invoke(self, event: Mapping[str, Any], *, attempt: int = 1, source: str = "",
               crash_points: Iterable[str] = (), timeout: float | None = None, clock_skew: float = 0.0,
               environment: Mapping[str, str] | None = None,
               log_fields: Mapping[str, Any] | None = None, crash_after_call: Any = None) -> InvocationResult:
        return InvocationResult(outcome=Outcome.SUCCESS, function="f", request_id="bench", pid=0, duration_ms=0.0,
                                cold_start=False, payload={"statusCode": 200, "body": "{}"})


def per_call_us(run: Callable[[], object], n: int, batches: int = 5) -> float:
    """The median of ``batches`` batches of ``n`` calls, in microseconds per call."""
    times = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(n):
            run()
        times.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(times)


def headlines(quick: bool) -> list[Headline]:
    n = 500 if quick else 5000
    url = f"http://127.0.0.1:4599/sheets/{uuid.uuid4()}/entries"
    path = url.split("4599", 1)[1]
    authorizer = IamAuthorizer([Caller(credentials=KEYS)], region=REGION)
    signed = sign("POST", url, HEADERS, BODY, KEYS, region=REGION)
    assert isinstance(authorizer.authorize("POST", path, "", header_map(signed), BODY), Caller)
    signing = per_call_us(lambda: sign("POST", url, HEADERS, BODY, KEYS, region=REGION), n)
    verifying = per_call_us(lambda: authorizer.authorize("POST", path, "", header_map(signed), BODY), n)
    open_us, iam_us = exchanges(max(n // 10, 100))
    print(f"sign (client)                 {signing:8.1f} µs/request")
    print(f"verify (gateway)              {verifying:8.1f} µs/request")
    print(f"HTTP exchange, open route     {open_us:8.1f} µs/request")
    print(f"HTTP exchange, IAM route      {iam_us:8.1f} µs/request (signed by the client, verified)")
    return [Headline(name="SigV4 sign + verify", figure=f"{signing + verifying:.0f} µs/request (sign {signing:.0f}, "
                     f"verify {verifying:.0f}); a local gateway exchange {open_us:.0f} µs open, {iam_us:.0f} µs "
                     "signed", target="context: a fraction of the exchange; Lambda's own overhead is milliseconds",
                     met=None)]


def exchanges(n: int) -> tuple[float, float]:
    """Microseconds per request through a real gateway: an open route and an IAM route with signing, measured in
    alternating batches so that the machine's load weighs on both alike."""
    gateways, calls = [], []
    for authorizer in (None, AWS_IAM):
        route = HttpRoute(function="f", event="e", Path="/sheets/{proxy+}", Method="POST", Authorizer=authorizer)
        gateway = Gateway([route], _Answering(), port=0,
                          authorizer=IamAuthorizer([Caller(credentials=KEYS)], region=REGION))
        threading.Thread(target=gateway.serve, daemon=True).start()
        gateways.append(gateway)
        url = f"{gateway.url}/sheets/{uuid.uuid4()}/entries"

        def one(url: str = url, signs: bool = authorizer is not None) -> None:
            headers = sign("POST", url, HEADERS, BODY, KEYS, region=REGION) if signs else HEADERS
            assert 200 == exchange("POST", url, BODY, headers, 10.0).status

        calls.append(one)
    try:
        rounds: list[list[float]] = [[], []]
        for _ in range(5):
            for i, one in enumerate(calls):
                rounds[i].append(per_call_us(one, n // 5 or 1, batches=1))
        return statistics.median(rounds[0]), statistics.median(rounds[1])
    finally:
        for gateway in gateways:
            gateway.stop()


if __name__ == "__main__":
    for headline in headlines("--quick" in sys.argv):
        print(headline.line())
