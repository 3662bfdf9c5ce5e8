"""Every example of "Any SAM app" under seeded faults, through seglog's pytest plugin (issue 37, point 5): each
test is what a user of the plugin writes — ``sam_app(template)`` under a ``seglog_chaos`` marker, a workload, then
``app.settle()`` and a check of what the app left. The faults are the ones each example's delivery path meets:
lost answers and crashes between AWS calls behind an API (the client retries, as the API's callers must), and
duplicate, late and crashed deliveries behind streams, queues, buckets, topics and rules.

heartbeat-schedule and orders-events' digest count their runs with ``ADD`` — a schedule delivered twice
(EventBridge Scheduler delivers at least once) counts twice. How many beats are right depends on the clock, so the
heartbeat's test measures the firings from the emulator's log and shows the counter counting deliveries instead
(the bug chaos is for; sales-tally's tests show it caught where the right answer is known)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.support import EXAMPLES, call
from seglog_emulator.appchaos.app import App
from seglog_emulator.faults.runtime import read_injected
from seglog_emulator.jsonlog import read_json_lines
from seglog_emulator.pytest_plugin import RUNS

pytestmark = pytest.mark.stack

SamApp = Callable[..., App]


@pytest.fixture(autouse=True)
def faults_fired(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test: its app ran under faults that fired (a test whose faults never fired proves nothing)."""
    yield
    runs = request.node.stash.get(RUNS, [])
    assert runs, "the test ran no app under faults"
    fired = {fault["kind"] for _, _, directory in runs for fault in read_injected(Path(directory) / "faults")}
    assert fired, f"no fault fired in {runs}"


def answered(method: str, url: str, body: object = None, tries: int = 12) -> tuple[int, Any]:
    """The request retried, as a client of an API must, until an answer that is not a 5xx comes (a lost answer
    closes the connection; a function that died answers 500 or 502)."""
    for _ in range(tries):
        try:
            status, answer = call(method, url, body)
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, json.JSONDecodeError):
            time.sleep(0.2)
            continue
        if status < 500:
            return status, answer
        time.sleep(0.2)
    raise AssertionError(f"{method} {url}: no answer but errors after {tries} tries")


def items(app: App, table: str) -> dict[str, dict[str, Any]]:
    """The table's items by their ``id`` (or ``key``) attribute, values as DynamoDB writes them."""
    found = app.client("dynamodb").scan(TableName=app.resource(table), ConsistentRead=True)["Items"]
    return {(item.get("id") or item.get("key") or item.get("item"))["S"]: item for item in found}


@pytest.mark.seglog_chaos(faults="lost_response=0.3,crash_after_call=0.3,ddb_5xx=0.2", seed=21)
def test_orders_http_stores_each_order_once_however_its_answers_are_lost(sam_app: SamApp) -> None:
    app = sam_app(EXAMPLES / "orders-http" / "template.yaml")
    orders = {f"o-{n}": f"item {n}" for n in range(8)}
    for order, item in orders.items():
        assert answered("PUT", f"{app.api_url()}/orders/{order}", {"item": item})[0] == 201
    app.settle()
    assert {k: v["item"]["S"] for k, v in items(app, "OrdersTable").items()} == orders
    assert answered("GET", f"{app.api_url()}/orders/o-3") == (200, {"id": "o-3", "item": "item 3"})


@pytest.mark.seglog_chaos(faults="lost_response=0.5", seed=22)
def test_hello_rest_answers_every_retried_request_though_answers_are_lost(sam_app: SamApp) -> None:
    """Its functions call no AWS service: what can go wrong is the answer (lost for requests that are not reads)."""
    app = sam_app(EXAMPLES / "hello-rest" / "template.yaml")
    for n in range(6):
        status, echoed = answered("POST", f"{app.api_url()}/echo/{n}", f"hi {n}".encode())
        assert (status, echoed["path"], echoed["body"]) == (200, f"/echo/{n}", f"hi {n}")
    assert answered("GET", f"{app.api_url()}/hello/ann") == (200, {"message": "hello ann"})
    app.settle()


@pytest.mark.seglog_chaos(faults="aws_error=0.3,lost_response=0.3", seed=23)
def test_quote_invoke_prices_and_audits_through_invokes_that_fail(sam_app: SamApp) -> None:
    """lambda.invoke answered ThrottlingException, ServiceUnavailable or InternalFailure (the function fails, the
    client retries), answers lost after the audit was accepted: each quote right, each audit recorded once."""
    app = sam_app(EXAMPLES / "quote-invoke" / "template.yaml")
    for qty in (1, 2, 3, 4):
        assert answered("GET", f"{app.api_url()}/quote/tea?qty={qty}") == (
            200, {"item": "tea", "qty": qty, "total_cents": 250 * qty})
    for item in ("cake", "tea", "scone"):
        assert answered("POST", f"{app.api_url()}/audit/{item}") == (202, {"audit": item})
    app.settle()
    assert sorted(items(app, "AuditTable")) == ["cake", "scone", "tea"]


@pytest.mark.seglog_chaos(faults="duplicate_delivery=0.5,crash_after_call=0.1,visibility_expiry=0.2", seed=24)
def test_orders_pipeline_ships_each_good_order_once_through_stream_and_queue(sam_app: SamApp) -> None:
    app = sam_app(EXAMPLES / "orders-pipeline" / "template.yaml")
    orders = {f"p-{n}": f"item {n}" for n in range(8)}
    for order, item in orders.items():
        app.client("dynamodb").put_item(TableName=app.resource("OrdersTable"),
                                        Item={"id": {"S": order}, "item": {"S": item}})
    app.settle()
    assert {k: v["item"]["S"] for k, v in items(app, "ShipmentsTable").items()} == orders
    dead = app.client("sqs").receive_message(QueueUrl=app.resource("ShippingDeadLetterQueue"), WaitTimeSeconds=0)
    assert dead.get("Messages", []) == []


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1,reorder=0.5,crash_after_call=0.2", seed=25)
def test_orders_notify_notes_each_order_once_per_subscriber_under_duplicate_notifications(sam_app: SamApp) -> None:
    app = sam_app(EXAMPLES / "orders-notify" / "template.yaml")
    for order, qty in (("n-1", 2), ("n-2", 12), ("n-3", 5)):
        assert answered("POST", f"{app.api_url()}/orders/{order}", {"qty": qty})[0] == 202
    app.settle()
    assert sorted(items(app, "NoticesTable")) == ["every#n-1", "every#n-2", "every#n-3", "large#n-2"]


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1,reorder=0.5,crash_after_call=0.2", seed=26)
def test_orders_events_notes_each_matching_rule_once_under_duplicate_events(sam_app: SamApp) -> None:
    app = sam_app(EXAMPLES / "orders-events" / "template.yaml")
    for order, qty in (("e-1", 2), ("e-2", 12)):
        assert answered("POST", f"{app.api_url()}/orders/{order}", {"qty": qty})[0] == 202
    app.settle()
    noted = {key: item for key, item in items(app, "NoticesTable").items() if key != "digest"}
    assert sorted(noted) == ["every#e-1", "every#e-2", "large#e-2"]
    assert noted["large#e-2"]["qty"] == {"N": "12"}


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1,crash_after_call=0.3", seed=27)
def test_upload_invoke_counts_each_upload_once_under_duplicate_s3_events(sam_app: SamApp) -> None:
    app = sam_app(EXAMPLES / "upload-invoke" / "template.yaml")
    texts = {f"notes/u-{n}.txt": " ".join(["word"] * (n + 1)) for n in range(4)}
    for key, text in texts.items():
        app.client("s3").put_object(Bucket=app.resource("UploadsBucket"), Key=key, Body=text.encode())
    app.settle()
    assert {k: int(v["words"]["N"]) for k, v in items(app, "CountsTable").items()} == {
        key: len(text.split()) for key, text in texts.items()}


@pytest.mark.seglog_chaos(faults="duplicate_delivery=1", seed=28)
def test_heartbeat_counts_deliveries_not_firings_when_each_firing_is_delivered_twice(
        sam_app: SamApp, request: pytest.FixtureRequest) -> None:
    """The schedule at 60 times real speed (a beat a second), every firing delivered twice: the counter equals the
    successful invocations, which are more than the firings (distinct scheduled times in the emulator's log) — so a
    check that the beats equal the firings, what the counter means, fails under at-least-once delivery."""
    app = sam_app(EXAMPLES / "heartbeat-schedule" / "template.yaml", schedule_scale=60)
    [(_, _, directory)] = request.node.stash[RUNS]
    log = Path(directory) / "emulator.log"

    def beats_so_far() -> tuple[int, int]:
        """(successful invocations, distinct firings) of the heartbeat so far, from the invocations' lines."""
        lines = [r for r in read_json_lines(log) if r.get("event") == "invocation"
                 and r.get("function") == "HeartbeatFunction"]
        return (sum(1 for r in lines if r.get("outcome") == "success"),
                len({r.get("scheduled_time") for r in lines}))

    deadline = time.monotonic() + 60
    while beats_so_far()[1] < 4:
        assert time.monotonic() < deadline, f"fewer than 4 firings in 60 s: {beats_so_far()}"
        time.sleep(0.5)
    before, firings = beats_so_far()
    beats = int(items(app, "BeatsTable")["heartbeat"]["beats"]["N"])
    after, _ = beats_so_far()
    assert before <= beats <= after  # the counter counts successful deliveries
    assert beats > firings, (beats, firings)  # each firing's duplicate counted too
