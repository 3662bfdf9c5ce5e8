"""The API's door inside the world: a client's request becomes an API Gateway payload 2.0 event, an invocation of
the API function runs the real handler on it, and its return becomes the answer the client reads.

``seglog_client``'s :class:`~seglog_client.transport.InProcess` transport calls :meth:`Gateway.serve` with the
request exactly as it would go out (the encoded body, the signed headers), from the client's task:

    client task (SeglogClient._send)      Gateway.serve                           api invocation task
      | try n ------------------------->  match_route, request_event  (the emulator's gateway builds events alike)
      |                                   spawn ------------------------------------> handler(event, context)
      |                                   join(timeout = the client's)                 (storage calls: others run)
      |                                   not done in time: no answer  (the invocation runs on: overlapping retry)
      |                                   crashed / killed: 500, timed out: 503 (API Gateway's answers)
      |                                   lost_response fault: no answer (the handler's work is done), or
      |                                   the connection reset within 30 ms (the invocation runs on)
      | <------- status, headers, body    http_api_response(result)

A try travels ``latency`` seconds each way (drawn from the client's generator: the internet, API Gateway and
Lambda's invoke; Scenario.api_latency, none in the seeds, 10-40 ms in bench.bench_hot_sheet).

So the handler's validation and status mapping, and the client's retry decisions (what it resends, when it gives
up, which refusals it raises), are the code under test, not copies of it.

One resolver serves the whole world, as one warm container would; unlike a container it answers many requests at
once, interleaved at every storage call. Powertools keeps the request being answered in a class attribute
(``BaseRouter.current_event``), so a route must read its event (path, query, body) before its first storage call,
as every route of ``seglog_services.api.routes`` does; a route that read it later would see another request's.

A PUT to a presigned URL (the bucket's host: an upload's bytes, ``seglog_client``'s ``upload``) is S3's, not the
API's: it becomes the PutObject the URL signed (its headers: content type, tagging, ``If-None-Match: *``), through
the same door as every storage call, and S3's answer (an error as S3's XML) or a lost one.

Not done here, as on AWS: the SigV4 signature is not verified (the client still signs every try, as it must for
API Gateway; the emulator's gateway verifies signatures, and its tests cover that), throttling (429) is not
simulated, and the event carries no ``requestContext.authorizer`` (no route reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import unquote
from xml.sax.saxutils import escape

from botocore.exceptions import ClientError

from seglog_awsmodel.config import HttpRoute
from seglog_awsmodel.events.api_gateway import function_failure, http_api_response, match_route, request_event
from seglog_awsmodel.faults import FaultKind
from seglog_client.sigv4 import Credentials
from seglog_sim.aws.s3 import S3_HOST
from seglog_sim.faults import Faults
from seglog_sim.lambdas import Lambdas
from seglog_sim.world import World

#: The API's URL as the clients know it (API Gateway's default endpoint: the region is read from it to sign).
BASE_URL: Final = "https://sim.execute-api.us-east-1.amazonaws.com"
#: What the simulated clients sign with (never checked: see the module's docstring).
CREDENTIALS: Final = Credentials(access_key_id="AKIASIMULATEDCLIENT0", secret_access_key="simulated-secret")
_NOT_FOUND: Final = (404, [("content-type", "application/json")], b'{"message":"Not Found"}')

type Answer = tuple[int, list[tuple[str, str]], bytes]


@dataclass(kw_only=True)
class Gateway:
    """Serves the API function's routes (the template's HttpApi events) inside the world."""

    world: World
    faults: Faults
    lambdas: Lambdas
    routes: tuple[HttpRoute, ...]
    #: The world's S3 for a PUT to a presigned URL: ``(operation, params) -> answer``, a call through its door.
    s3: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    #: Seconds each way between the client and the API function, drawn per try (Scenario.api_latency).
    latency: tuple[float, float] = (0.0, 0.0)
    requests: int = 0
    #: Tries per client task (the timeline's "try n").
    _tries: dict[str, int] = field(default_factory=dict)

    def serve(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes,
              timeout: float) -> Answer | None:
        """The answer to one try, or None when none reaches the client (lost, or not within ``timeout``)."""
        world, faults = self.world, self.faults
        me = world.current
        me.calls += 1  # one decision point per try (fault ids stay apart)
        path = target.partition("?")[0]
        host = next((value for name, value in headers if name.lower() == "host"), "")
        if host.endswith("." + S3_HOST) and self.s3 is not None:
            return self._s3_put(method, host.removesuffix("." + S3_HOST), path, headers, body)
        matched = match_route(self.routes, method, path)
        if matched is None:
            return _NOT_FOUND[0], list(_NOT_FOUND[1]), _NOT_FOUND[2]
        _, key, parameters = matched
        self.requests += 1
        event = request_event(method, target, headers, body, route_key=key, path_parameters=parameters,
                              request_id=f"sim-{self.requests}", now=datetime.fromtimestamp(world.now, UTC))
        tags: dict[str, Any] = {k: me.tags[k] for k in ("log_id", "entry_id") if k in me.tags}
        if method == "POST":  # a client's try of a write (the report's client lanes and append latencies)
            tries = self._tries[me.name] = self._tries.get(me.name, 0) + 1
            tags.update(client=me.name, attempt=tries, asked=world.now)
        low, high = self.latency
        if high > 0.0:
            world.sleep(faults.rng(me).uniform(low, high))
        task = self.lambdas.api(event, **tags)
        me.calls += 1  # the reset's own decision point (fault ids stay apart)
        if faults.decide(me, FaultKind.LOST_RESPONSE, "in flight") and faults.amount(me, 0.0, 1.0) < 0.5:
            # The connection drops while the invocation runs (a reset between the client and API Gateway): no
            # answer reaches the client within a few milliseconds, it retries, and the invocation goes on, so two
            # tries of one entry overlap (issue 35: a first try's put may lose to its own retry's copy).
            world.join(task, timeout=min(timeout, faults.amount(me, 0.0, 0.03)))
            task.tags["client_outcome"] = "lost"
            return None
        answered = world.join(task, timeout=timeout)
        task.tags["answered"] = world.now
        task.tags.setdefault("client_outcome", "retried")
        if not answered:
            return None
        if high > 0.0:
            world.sleep(faults.rng(me).uniform(low, high))
        if task.killed is not None or task.error is not None:
            return function_failure(timed_out=task.killed == "timeout")
        if faults.decide(me, FaultKind.LOST_RESPONSE):
            task.tags["client_outcome"] = "lost"
            return None
        status, answer_headers, payload = http_api_response(task.result)
        if status < 300:
            task.tags["client_outcome"] = "acknowledged"
        elif status < 500:
            task.tags["client_outcome"] = "error"
        return status, answer_headers, payload

    def _s3_put(self, method: str, bucket: str, path: str, headers: list[tuple[str, str]], body: bytes
                ) -> Answer | None:
        """A client's PUT to a presigned URL: the PutObject it signed (Amazon S3 API Reference, PutObject: the
        ``x-amz-tagging`` and ``If-None-Match`` headers); a refusal answered as S3 answers it, in XML."""
        if method != "PUT":
            return 405, [("content-type", "application/xml")], _s3_error("MethodNotAllowed",
                                                                         "The specified method is not allowed")
        given = {name.lower(): value for name, value in headers}
        params: dict[str, Any] = {"Bucket": bucket, "Key": unquote(path[1:]), "Body": body,
                                  "ContentType": given.get("content-type"), "Tagging": given.get("x-amz-tagging", "")}
        if "if-none-match" in given:
            params["IfNoneMatch"] = given["if-none-match"]
        assert self.s3 is not None
        try:
            answer = self.s3("PutObject", params)
        except ClientError as exc:
            error, status = exc.response["Error"], exc.response["ResponseMetadata"]["HTTPStatusCode"]
            return status, [("content-type", "application/xml")], _s3_error(error["Code"], error["Message"])
        if self.faults.decide(self.world.current, FaultKind.LOST_RESPONSE):
            return None  # stored; the connection dropped before the answer
        return 200, [("etag", answer.get("ETag", ""))], b""


def _s3_error(code: str, message: str) -> bytes:
    """S3's error document (Amazon S3 API Reference, "Error responses")."""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{escape(code)}</Code>'
            f"<Message>{escape(message)}</Message></Error>").encode()
