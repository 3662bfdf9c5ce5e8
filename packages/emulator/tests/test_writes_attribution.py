"""Who wrote a record that differs (issue 37, point 3): the worker's call counter logs each successful writing call
of an invocation with its request id and the keys it wrote (before a crash_after_call kill: the write whose answer
is lost is named too), and the differential verdict matches each differing record to the invocations that wrote it,
the ones whose delivery was handled more than once first. botocore's Stubber answers the calls; the log is written
by hand as the invoker and the workers write it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from structlog.testing import capture_logs

from seglog_emulator.appchaos.attribution import attribute
from seglog_emulator.appchaos.state import AppState, compare
from seglog_emulator.faults.call_crash import CRASH_AFTER_CALL_EVENT, CallCounter
from seglog_emulator.faults.writes import WRITE_EVENT, matches, written


class Killed(Exception):
    pass


def _kill() -> None:
    raise Killed


def stubbed(counter: CallCounter, service: str) -> tuple[Any, Stubber]:
    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    counter.attach(client)
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def test_a_successful_write_is_logged_with_its_invocation_and_keys_a_failed_one_is_not() -> None:
    counter = CallCounter(kill=_kill, writes=True)
    ddb, stubber = stubbed(counter, "dynamodb")
    stubber.add_response("put_item", {})
    stubber.add_client_error("update_item", "ConditionalCheckFailedException", http_status_code=400)
    counter.arm(None, request_id="req-1")
    with capture_logs() as logs:
        ddb.put_item(TableName="Totals", Item={"product": {"S": "coffee"}, "units": {"N": "3"}})
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            ddb.update_item(TableName="Totals", Key={"product": {"S": "tea"}})
    lines = [line for line in logs if line["event"] == WRITE_EVENT]
    assert [("req-1", "PutItem", [{"resource": "Totals", "key": {"product": "coffee", "units": 3}}])] == \
        [(line["invocation"], line["operation"], line["records"]) for line in lines]


def test_the_write_is_logged_before_the_kill_after_it() -> None:
    counter = CallCounter(kill=_kill, writes=True)
    sqs, stubber = stubbed(counter, "sqs")
    stubber.add_response("send_message", {"MessageId": "m", "MD5OfMessageBody": "d41d8cd98f00b204e9800998ecf8427e"})
    counter.arm({"call": 1, "key": "k"}, request_id="req-2")
    with capture_logs() as logs, pytest.raises(Killed):
        sqs.send_message(QueueUrl="http://q/Shipments", MessageBody='{"order": 7}')
    assert [WRITE_EVENT, CRASH_AFTER_CALL_EVENT] == [line["event"] for line in logs]
    assert [{"resource": "http://q/Shipments", "key": {"body": {"order": 7}}}] == logs[0]["records"]


def test_writes_are_not_logged_unless_asked_or_outside_an_invocation() -> None:
    quiet = CallCounter(kill=_kill)
    ddb, stubber = stubbed(quiet, "dynamodb")
    stubber.add_response("put_item", {})
    quiet.arm(None, request_id="r")
    with capture_logs() as logs:
        ddb.put_item(TableName="T", Item={"k": {"S": "a"}})
    assert not logs
    between = CallCounter(kill=_kill, writes=True)
    ddb, stubber = stubbed(between, "dynamodb")
    stubber.add_response("put_item", {})
    with capture_logs() as logs:
        ddb.put_item(TableName="T", Item={"k": {"S": "a"}})  # no invocation armed: a background call
    assert not logs


def test_every_writing_operation_names_its_records() -> None:
    assert [{"resource": "T", "key": {"k": "a"}}, {"resource": "U", "key": {"k": 2}}] == written(
        "dynamodb", "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": "T", "Item": {"k": {"S": "a"}, "big": {"S": "x" * 600}, "list": {"L": []}}}},
            {"ConditionCheck": {"TableName": "T", "Key": {"k": {"S": "b"}}}},
            {"Update": {"TableName": "U", "Key": {"k": {"N": "2"}}}}]})
    assert [{"resource": "T", "key": {"k": "a"}}, {"resource": "T", "key": {"k": "b"}}] == written(
        "dynamodb", "BatchWriteItem", {"RequestItems": {"T": [{"PutRequest": {"Item": {"k": {"S": "a"}}}},
                                                              {"DeleteRequest": {"Key": {"k": {"S": "b"}}}}]}})
    assert [{"resource": "B", "key": {"key": "a.json"}}] == written("s3", "PutObject", {"Bucket": "B", "Key": "a.json"})
    assert [{"resource": "Q", "key": {"body": {"sha256": written("sqs", "SendMessage", {
        "QueueUrl": "Q", "MessageBody": "plain"})[0]["key"]["body"]["sha256"], "bytes": 5}}}] == written(
        "sqs", "SendMessageBatch", {"QueueUrl": "Q", "Entries": [{"Id": "1", "MessageBody": "plain"}]})
    assert [] == written("dynamodb", "GetItem", {"TableName": "T"}) == written("sns", "Publish", {})
    assert matches({"product": "coffee"}, {"product": "coffee", "units": 3})
    assert not matches({"product": "coffee"}, {"product": "tea"}) and not matches({}, {"a": 1})


def _line(**fields: Any) -> str:
    return json.dumps(fields)


def test_a_differing_record_is_named_with_its_writers_the_twice_handled_delivery_first(tmp_path: Path) -> None:
    """A counter counted per delivery: the sale m-2 was delivered twice (a duplicate), and both invocations added its
    units to coffee; m-1's single delivery did too. tea's record is the same in both runs and is not reported."""
    clean = AppState({"Totals": [({"product": "coffee"}, {"product": "coffee", "units": 3}),
                                 ({"product": "tea"}, {"product": "tea", "units": 1})]})
    faulted = AppState({"Totals": [({"product": "coffee"}, {"product": "coffee", "units": 5}),
                                   ({"product": "tea"}, {"product": "tea", "units": 1})]})
    log = tmp_path / "emulator.log"
    write = {"event": WRITE_EVENT, "service": "dynamodb", "operation": "UpdateItem"}
    log.write_text("\n".join([
        _line(**write, invocation="a", records=[{"resource": "totals-x", "key": {"product": "coffee"}}]),
        _line(event="invocation", request_id="a", function="Tally", source="Tally.Sales", attempt=1,
              outcome="success", message_id="m-1", timestamp="t1"),
        _line(**write, invocation="b", records=[{"resource": "totals-x", "key": {"product": "coffee"}}]),
        _line(event="invocation", request_id="b", function="Tally", source="Tally.Sales", attempt=1,
              outcome="success", message_id="m-2", timestamp="t2"),
        _line(**write, invocation="c", records=[{"resource": "totals-x", "key": {"product": "coffee"}}]),
        _line(event="invocation", request_id="c", function="Tally", source="Tally.Sales", attempt=1,
              outcome="success", message_id="m-2", timestamp="t3"),
        _line(**write, invocation="d", records=[{"resource": "totals-x", "key": {"product": "tea"}}]),
        "not json",
    ]) + "\n")
    [difference] = attribute(compare(clean, faulted), log, {"Totals": "totals-x"})
    assert (difference.resource, difference.keys) == ("Totals", ({"product": "coffee"},))
    assert ["b", "c", "a"] == [w["request_id"] for w in difference.written_by]
    assert [2, 2, 1] == [w["handled"] for w in difference.written_by]
    text = "\n".join(difference.lines())
    assert "written in the faulted run by 3 invocation(s), 2 of them" in text
    assert "Tally request b: UpdateItem from Tally.Sales (message_id m-2), attempt 1, success, delivery handled " \
           "2 times" in text


def test_a_message_left_in_a_queue_is_matched_by_its_body(tmp_path: Path) -> None:
    clean = AppState({"Out": [(None, {"body": {"order": 1}})]})
    faulted = AppState({"Out": [(None, {"body": {"order": 1}}), (None, {"body": {"order": 1}})]})
    log = tmp_path / "emulator.log"
    log.write_text(_line(event=WRITE_EVENT, operation="SendMessage", invocation="x",
                         records=[{"resource": "http://q/out", "key": {"body": {"order": 1}}}]) + "\n")
    [difference] = attribute(compare(clean, faulted), log, {"Out": "http://q/out"})
    assert ["x"] == [w["request_id"] for w in difference.written_by]
    assert difference.written_by[0]["suspect"]  # its invocation line is missing: its worker died
