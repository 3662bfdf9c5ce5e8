"""DynamoDB and S3 faults injected into boto3 clients (DESIGN §7), without a stack.

Clients point at an unreachable endpoint; a ``before-call`` handler registered last plays the service (the
injector's hooks run before it), counting the calls that "reached" it. Error codes follow the Amazon DynamoDB
Developer Guide (Programming.Errors) and the Amazon S3 API Reference (ErrorResponses); stale reads follow
HowItWorks.ReadConsistency.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from seglog_emulator.faults import BotocoreFaultInjector, FaultKind, FaultPlan, FaultSchedule
from seglog_emulator.faults.runtime import FaultRuntime

ITEMS = [{"log": {"S": "L"}, "num": {"N": str(n)}} for n in (5, 4, 3, 2, 1)]  # newest first
LATEST = {"TableName": "T", "KeyConditionExpression": "log = :l", "ExpressionAttributeValues": {":l": {"S": "L"}},
          "ScanIndexForward": False, "Limit": 1}


class FakeService:
    """Answers every call that gets past the injector; Query pages through ITEMS."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        self.calls.append(model.name)
        parsed: dict[str, Any] = {}
        if model.name == "Query":
            limit = json.loads(params["body"])["Limit"]
            page = ITEMS[:limit]
            parsed = {"Items": page, "Count": len(page), "ScannedCount": len(page)}
            if limit < len(ITEMS):
                parsed["LastEvaluatedKey"] = dict(page[-1])
        return AWSResponse("", 200, HTTPHeaders(), None), parsed


def client(service: str) -> tuple[Any, FakeService]:
    made = boto3.client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                        aws_access_key_id="x", aws_secret_access_key="x",
                        config=Config(retries={"max_attempts": 1}, connect_timeout=0.1))
    fake = FakeService()
    made.meta.events.register_last("before-call.*.*", fake)
    return made, fake


def injected(faults: str, service: str, *, seed: int = 1, rate: float = 1.0,
             sleep: Callable[[float], None] = lambda _: None) -> tuple[Any, FakeService, FaultSchedule]:
    schedule = FaultSchedule(FaultPlan.from_flags(faults, rate=rate, seed=seed))
    made, fake = client(service)
    assert BotocoreFaultInjector(schedule, sleep=sleep).attach(made)
    return made, fake, schedule


def put(ddb: Any, n: int = 1) -> None:
    ddb.put_item(TableName="T", Item={"log": {"S": "L"}, "num": {"N": str(n)}})


def test_ddb_throttle_fails_the_call_before_it_is_sent() -> None:
    ddb, fake, _ = injected("ddb_throttle", "dynamodb")
    codes = set()
    for n in range(20):
        with pytest.raises(ClientError) as caught:
            put(ddb, n)
        assert 400 == caught.value.response["ResponseMetadata"]["HTTPStatusCode"]
        codes.add(caught.value.response["Error"]["Code"])

    assert {"ProvisionedThroughputExceededException", "ThrottlingException"} == codes
    assert [] == fake.calls


def test_ddb_5xx_is_the_modeled_internal_server_error() -> None:
    ddb, fake, _ = injected("ddb_5xx", "dynamodb")

    with pytest.raises(ddb.exceptions.InternalServerError) as caught:
        ddb.get_item(TableName="T", Key={"log": {"S": "L"}, "num": {"N": "1"}})

    assert 500 == caught.value.response["ResponseMetadata"]["HTTPStatusCode"]
    assert [] == fake.calls


def test_transaction_conflict_cancels_transact_write_items_with_a_reason_per_item() -> None:
    ddb, fake, _ = injected("ddb_transaction_conflict", "dynamodb")
    items = [{"Put": {"TableName": "T", "Item": {"log": {"S": "L"}, "num": {"N": str(n)}}}} for n in (1, 2)]

    with pytest.raises(ddb.exceptions.TransactionCanceledException) as caught:
        ddb.transact_write_items(TransactItems=items)
    put(ddb)  # not a transaction: untouched

    assert ["TransactionConflict", "None"] == [r["Code"] for r in caught.value.response["CancellationReasons"]]
    assert ["PutItem"] == fake.calls


def test_lost_response_reaches_the_service_then_fails() -> None:
    ddb, fake, schedule = injected("ddb_lost_response", "dynamodb")

    with pytest.raises(ddb.exceptions.InternalServerError):
        put(ddb)
    ddb.get_item(TableName="T", Key={"log": {"S": "L"}, "num": {"N": "1"}})  # reads have no lost response

    assert ["PutItem", "GetItem"] == fake.calls
    assert {FaultKind.DDB_LOST_RESPONSE: 1} == schedule.summary()


def test_s3_errors_are_slowdown_503_or_internal_error_500() -> None:
    s3, fake, _ = injected("s3_error", "s3")
    seen = set()
    for n in range(20):
        with pytest.raises(ClientError) as caught:
            s3.put_object(Bucket="b", Key=f"k{n}", Body=b"x")
        seen.add((caught.value.response["Error"]["Code"], caught.value.response["ResponseMetadata"]["HTTPStatusCode"]))

    assert {("SlowDown", 503), ("InternalError", 500)} == seen
    assert [] == fake.calls


def test_s3_latency_sleeps_then_sends() -> None:
    slept: list[float] = []
    schedule = FaultSchedule(FaultPlan.from_mapping(
        {"seed": 1, "faults": {"s3_latency": {"rate": 1.0, "latency_ms": [250, 250]}}}))
    s3, fake = client("s3")
    BotocoreFaultInjector(schedule, sleep=slept.append).attach(s3)

    s3.head_object(Bucket="b", Key="k")

    assert [0.25] == slept
    assert ["HeadObject"] == fake.calls


def test_stale_read_returns_an_older_latest_item_never_a_newer_one() -> None:
    schedule = FaultSchedule(FaultPlan.from_mapping(
        {"seed": 1, "faults": {"stale_read": {"rate": 1.0, "items_behind": [2, 2]}}}))
    ddb, fake = client("dynamodb")
    BotocoreFaultInjector(schedule).attach(ddb)

    page = ddb.query(**LATEST)

    assert [ITEMS[2]] == page["Items"]
    assert (1, ITEMS[2]) == (page["Count"], page["LastEvaluatedKey"])
    assert ["Query", "Query"] == fake.calls  # the original, and the re-issued one with Limit=3
    assert {FaultKind.STALE_READ: 1} == schedule.summary()


def test_stale_read_past_the_oldest_item_returns_none() -> None:
    schedule = FaultSchedule(FaultPlan.from_mapping(
        {"seed": 1, "faults": {"stale_read": {"rate": 1.0, "items_behind": [5, 5]}}}))
    ddb, _ = client("dynamodb")
    BotocoreFaultInjector(schedule).attach(ddb)

    page = ddb.query(**LATEST)

    assert ([], 0) == (page["Items"], page["Count"])
    assert "LastEvaluatedKey" not in page


@pytest.mark.parametrize("change", [{"ConsistentRead": True}, {"ScanIndexForward": True}, {"Limit": 2}])
def test_stale_read_touches_only_eventually_consistent_latest_item_queries(change: dict[str, Any]) -> None:
    ddb, fake, schedule = injected("stale_read", "dynamodb")

    page = ddb.query(**{**LATEST, **change})

    assert ITEMS[0] == page["Items"][0]
    assert ["Query"] == fake.calls
    assert {FaultKind.STALE_READ: 0} == schedule.summary()


def test_control_calls_and_other_services_are_never_faulted() -> None:
    ddb, ddb_fake, schedule = injected("all", "dynamodb")
    s3, s3_fake = client("s3")
    sqs, _ = client("sqs")
    injector = BotocoreFaultInjector(schedule)
    injector.attach(s3)

    ddb.describe_table(TableName="T")
    ddb.list_tables()
    s3.create_bucket(Bucket="b")
    s3.head_bucket(Bucket="b")

    assert ["DescribeTable", "ListTables"] == ddb_fake.calls
    assert ["CreateBucket", "HeadBucket"] == s3_fake.calls
    assert not injector.attach(sqs)
    assert all(0 == n for n in schedule.summary().values())


def test_disabled_kinds_never_fire_on_a_client() -> None:
    ddb, fake, schedule = injected("s3_error,s3_latency", "dynamodb")
    for n in range(50):
        put(ddb, n)
        ddb.query(**LATEST)

    assert 100 == len(fake.calls)
    assert [] == schedule.injected()


def test_same_seed_faults_the_same_calls_whatever_the_thread_interleaving() -> None:
    def run(workers: int) -> FaultSchedule:
        ddb, _, schedule = injected("ddb_throttle,ddb_5xx,ddb_lost_response", "dynamodb", seed=3, rate=0.2)

        def call(n: int) -> None:
            for _ in range(3):  # a retry of an identical request rolls again
                with contextlib.suppress(ClientError):
                    put(ddb, n % 40)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(call, range(80)))
        return schedule

    first, second = run(1), run(8)

    assert first.fingerprint() == second.fingerprint()
    assert first.summary() == second.summary()
    assert 0 < sum(first.summary().values())


def test_faults_fire_ahead_of_a_stubber_activated_after_attach() -> None:
    schedule = FaultSchedule(FaultPlan.from_mapping({"seed": 1, "faults": {"ddb_lost_response": 1.0}}))
    ddb, _ = client("dynamodb")
    BotocoreFaultInjector(schedule).attach(ddb)
    with Stubber(ddb) as stubber:
        stubber.add_response("put_item", {})
        with pytest.raises(ddb.exceptions.InternalServerError):
            put(ddb)
        stubber.assert_no_pending_responses()  # the write "happened": the stub answered it


@pytest.mark.parametrize(("service", "call"), [
    ("sqs", lambda c: c.send_message(QueueUrl="http://127.0.0.1:9/000000000000/q", MessageBody="{}")),
    ("sns", lambda c: c.publish(TopicArn="arn:aws:sns:us-east-1:000000000000:t", Message="m")),
    ("events", lambda c: c.put_events(Entries=[{"Source": "s", "DetailType": "d", "Detail": "{}"}])),
    ("lambda", lambda c: c.invoke(FunctionName="F", Payload=b"{}")),
])
def test_any_other_service_fails_with_an_error_common_to_all_aws_services(service: str,
                                                                         call: Callable[[Any], Any]) -> None:
    schedule = FaultSchedule(FaultPlan.from_flags("aws_error", rate=1.0, seed=3))
    made, fake = client(service)
    assert not BotocoreFaultInjector(schedule).attach(made)  # no kinds of its own: aws_error only
    codes = set()
    for _ in range(12):
        with pytest.raises(ClientError) as caught:
            call(made)
        codes.add((caught.value.response["Error"]["Code"], caught.value.response["ResponseMetadata"]["HTTPStatusCode"]))
    assert codes <= {("ThrottlingException", 400), ("ServiceUnavailable", 503), ("InternalFailure", 500)}
    assert len(codes) >= 2 and fake.calls == []  # never sent
    assert {f.kind for f in schedule.injected()} == {FaultKind.AWS_ERROR}


def test_other_services_calls_pass_when_the_plan_does_not_fail_them() -> None:
    schedule = FaultSchedule(FaultPlan.from_flags("aws_error", rate=0.0, seed=3))
    made, fake = client("sqs")
    BotocoreFaultInjector(schedule).attach(made)
    made.send_message(QueueUrl="http://127.0.0.1:9/000000000000/q", MessageBody="{}")
    assert fake.calls == ["SendMessage"]


def test_an_identical_call_retried_in_another_process_rolls_again(tmp_path: Path) -> None:
    """Two injectors (two worker processes) of one run count an identical call together: the retry of a failed
    call meets a new decision wherever it lands (issue 37: a retried API request met the same aws_error on every
    fresh worker)."""
    runtime = FaultRuntime(FaultPlan.from_flags("aws_error", rate=0.5, seed=4), tmp_path / "faults")
    keys = []
    for _process in range(4):
        schedule = runtime.schedule("worker")
        made, _fake = client("sqs")
        BotocoreFaultInjector(schedule, occurrence=runtime.occurrence).attach(made)
        with contextlib.suppress(ClientError):
            made.send_message(QueueUrl="http://127.0.0.1:9/000000000000/q", MessageBody="{}")
    keys = [fault["key"] for fault in runtime.injected()]
    assert keys and len(keys) == len(set(keys))  # never the same site twice: each try was a new occurrence
    assert runtime.occurrence("sqs:probe") == 1 and runtime.occurrence("sqs:probe") == 2
