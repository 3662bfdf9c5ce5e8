"""SimSQS behaves as SQS's standard queues do (Amazon SQS Developer Guide and API Reference, cited per test),
driven by a clock the tests advance by hand."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
from botocore.exceptions import ClientError
from sim_support import ManualClock

from seglog_awsmodel.events.sqs import sqs_record
from seglog_sim.aws.sqs import SimSQS, SimSQSClient
from seglog_sim.aws.sqs_queue import MAX_MESSAGE_BYTES, md5_of_message_attributes


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock) -> SimSQS:
    return SimSQS(clock=clock, rng=random.Random(7))


@pytest.fixture
def sqs(sim: SimSQS) -> Any:
    return SimSQSClient.of(sim)


@pytest.fixture
def url(sim: SimSQS) -> str:
    return sim.create_queue("jobs", visibility_timeout=30)


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return str(caught.value.response["Error"]["Code"])


def _receive(sqs: Any, url: str, n: int = 10, **params: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n,
                                                         MessageSystemAttributeNames=["All"],
                                                         **params).get("Messages", [])
    return messages


# ------------------------------------------------------------------------------------------------ receive


def test_a_receive_hides_the_message_for_the_visibility_timeout_and_counts_the_receive(
        sqs: Any, url: str, clock: ManualClock) -> None:
    """Amazon SQS Developer Guide, sqs-visibility-timeout: hidden for the timeout, then visible again with a new
    receipt handle and ApproximateReceiveCount one higher."""
    sent = sqs.send_message(QueueUrl=url, MessageBody="job")
    [first] = _receive(sqs, url)
    clock.now += 29.9
    assert [] == _receive(sqs, url)
    clock.now += 0.1
    [second] = _receive(sqs, url)
    assert (sent["MessageId"], sent["MessageId"]) == (first["MessageId"], second["MessageId"])
    assert ("1", "2") == (first["Attributes"]["ApproximateReceiveCount"],
                          second["Attributes"]["ApproximateReceiveCount"])
    assert first["ReceiptHandle"] != second["ReceiptHandle"]
    assert sent["MD5OfMessageBody"] == first["MD5OfBody"] == hashlib.md5(b"job").hexdigest()


def test_system_attributes_are_returned_only_when_asked_for_and_as_strings(sqs: Any, url: str,
                                                                              clock: ManualClock) -> None:
    sqs.send_message(QueueUrl=url, MessageBody="a")
    clock.now += 2.5
    [bare] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert "Attributes" not in bare
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=bare["ReceiptHandle"], VisibilityTimeout=0)
    [some] = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"])["Messages"]
    assert {"ApproximateReceiveCount": "2"} == some["Attributes"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=some["ReceiptHandle"], VisibilityTimeout=0)
    [every] = _receive(sqs, url)
    assert {"ApproximateReceiveCount": "3", "SentTimestamp": "1700000000000",
            "ApproximateFirstReceiveTimestamp": "1700000002500"} == {
        k: every["Attributes"][k] for k in ("ApproximateReceiveCount", "SentTimestamp",
                                            "ApproximateFirstReceiveTimestamp")}


def test_the_event_source_mapping_receive_gives_what_a_lambda_sqs_record_needs(sim: SimSQS, url: str) -> None:
    """receive() carries every attribute Lambda's SQS event has (seglog_awsmodel.events.sqs refuses a message
    without them), message attributes included."""
    SimSQSClient.of(sim).send_message(QueueUrl=url, MessageBody="x", MessageAttributes={
        "kind": {"DataType": "String", "StringValue": "snapshot"}})
    [message] = sim.receive(url)
    record = sqs_record(message, queue_arn="arn:aws:sqs:us-east-1:123456789012:jobs", region="us-east-1")
    assert ("1", "snapshot") == (record["attributes"]["ApproximateReceiveCount"],
                                 record["messageAttributes"]["kind"]["stringValue"])


def test_a_standard_queue_delivers_in_an_order_drawn_from_the_seed(clock: ManualClock) -> None:
    """Standard queues give best-effort ordering (Amazon SQS Developer Guide, standard-queues): the order is the
    seed's, the same for the same seed and another for another."""

    def order(seed: int) -> list[str]:
        sim = SimSQS(clock=clock, rng=random.Random(seed))
        url = sim.create_queue("q")
        for n in range(10):
            SimSQSClient.of(sim).send_message(QueueUrl=url, MessageBody=str(n))
        return [m["Body"] for m in sim.receive(url, max_messages=10)]

    assert order(1) == order(1)
    assert order(1) != order(2)
    assert [str(n) for n in range(10)] == sorted(order(1))


def test_the_same_seed_gives_the_same_ids_and_receipt_handles(clock: ManualClock) -> None:
    def history(seed: int) -> list[Any]:
        sim = SimSQS(clock=clock, rng=random.Random(seed))
        sqs = SimSQSClient.of(sim)
        url = sim.create_queue("q")
        sent = [sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")["MessageId"] for n in range(3)]
        return sent + [(m["MessageId"], m["ReceiptHandle"]) for m in sim.receive(url)]

    assert history(3) == history(3)
    assert history(3) != history(4)


def test_receive_validates_its_parameters(sqs: Any, url: str) -> None:
    """MaxNumberOfMessages 1..10, VisibilityTimeout 0..43200, WaitTimeSeconds 0..20 (API Reference,
    ReceiveMessage)."""
    for params in ({"MaxNumberOfMessages": 11}, {"MaxNumberOfMessages": 0}, {"VisibilityTimeout": 43201},
                   {"WaitTimeSeconds": 21}):
        with pytest.raises(ClientError) as caught:
            sqs.receive_message(QueueUrl=url, **params)
        assert "InvalidParameterValue" == _code(caught), params


def test_a_visibility_timeout_given_to_the_receive_replaces_the_queues(sqs: Any, url: str, clock: ManualClock) -> None:
    sqs.send_message(QueueUrl=url, MessageBody="a")
    _receive(sqs, url, VisibilityTimeout=5)
    clock.now += 5
    assert 1 == len(_receive(sqs, url))


def test_a_visibility_expiry_hands_out_a_message_already_in_flight(sim: SimSQS, url: str) -> None:
    """A visibility timeout that ran out while the first consumer still runs (FaultKind.VISIBILITY_EXPIRY): the
    next receive gets the message with a new receipt handle and a higher receive count, which makes the first
    consumer's handle stale."""
    sqs = SimSQSClient.of(sim)
    sqs.send_message(QueueUrl=url, MessageBody="only")
    [first] = sim.receive(url)
    [copy] = sim.receive(url, in_flight_again=True)
    assert (first["MessageId"], "2") == (copy["MessageId"], copy["Attributes"]["ApproximateReceiveCount"])
    assert first["ReceiptHandle"] != copy["ReceiptHandle"]
    with pytest.raises(ClientError) as caught:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    assert "InvalidParameterValue" == _code(caught)


def test_no_duplicate_without_a_message_in_flight(sim: SimSQS, url: str) -> None:
    assert [] == sim.receive(url, in_flight_again=True)


# ------------------------------------------------------------------------------------------------ dead letters


def test_a_receive_past_max_receive_count_moves_the_message_to_the_dead_letter_queue(sim: SimSQS,
                                                                                      clock: ManualClock) -> None:
    """Amazon SQS Developer Guide, sqs-dead-letter-queues: the move happens when the ReceiveCount would exceed
    maxReceiveCount; the message keeps its id and names its source queue."""
    dlq = sim.create_queue("jobs-dlq")
    url = sim.create_queue("jobs", dead_letter="jobs-dlq", max_receive_count=2)
    sent = SimSQSClient.of(sim).send_message(QueueUrl=url, MessageBody="poison")["MessageId"]
    counts = []
    for _ in range(3):
        counts.append([m["Attributes"]["ApproximateReceiveCount"] for m in sim.receive(url)])
        clock.now += 30
    assert [["1"], ["2"], []] == counts
    assert ((0, 0), (1, 0)) == (sim.depth(url), sim.depth(dlq))
    [moved] = sim.receive(dlq)
    assert (sent, "arn:aws:sqs:us-east-1:123456789012:jobs") == (
        moved["MessageId"], moved["Attributes"]["DeadLetterQueueSourceArn"])


def test_a_receive_that_moves_messages_still_returns_the_others(sim: SimSQS, clock: ManualClock) -> None:
    """The moved messages are not returned, but they do not crowd out the visible ones that remain."""
    dlq = sim.create_queue("d")
    url = sim.create_queue("q", dead_letter=dlq, max_receive_count=1)
    sqs = SimSQSClient.of(sim)
    for n in range(6):
        sqs.send_message(QueueUrl=url, MessageBody=f"old {n}")
    sim.receive(url)
    clock.now += 30
    for n in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=f"new {n}")
    got = sim.receive(url, max_messages=4)
    assert [f"new {n}" for n in range(4)] == sorted(m["Body"] for m in got)
    assert 6 == sim.depth(dlq)[0] + sim.depth(url)[0]


def test_a_handle_from_before_the_move_deletes_nothing_in_the_dead_letter_queue(sim: SimSQS,
                                                                                clock: ManualClock) -> None:
    dlq = sim.create_queue("d")
    url = sim.create_queue("q", dead_letter=dlq, max_receive_count=1)
    sqs = SimSQSClient.of(sim)
    sqs.send_message(QueueUrl=url, MessageBody="m")
    [received] = sim.receive(url)
    clock.now += 30
    assert [] == sim.receive(url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=received["ReceiptHandle"])
    assert (1, 0) == sim.depth(dlq)


def test_create_queue_refuses_a_dead_letter_queue_that_does_not_exist(sim: SimSQS, sqs: Any) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        sim.create_queue("q", dead_letter="nope", max_receive_count=3)
    with pytest.raises(ValueError, match="needs a dead_letter"):
        sim.create_queue("q", max_receive_count=3)
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName="q", Attributes={
            "RedrivePolicy": '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:nope","maxReceiveCount":3}'})
    assert "InvalidParameterValue" == _code(caught)


# ------------------------------------------------------------------------------------------------ visibility


def test_change_visibility_counts_from_now_and_zero_makes_the_message_visible(sqs: Any, url: str,
                                                                               clock: ManualClock) -> None:
    """API Reference, ChangeMessageVisibility: "the 10 seconds begin to count from the time that you make the
    ChangeMessageVisibility call"."""
    sqs.send_message(QueueUrl=url, MessageBody="a")
    [m] = _receive(sqs, url)
    clock.now += 15
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=10)
    clock.now += 9.9
    assert [] == _receive(sqs, url)
    clock.now += 0.1
    [again] = _receive(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"], VisibilityTimeout=0)
    assert "3" == _receive(sqs, url)[0]["Attributes"]["ApproximateReceiveCount"]


def test_change_visibility_answers_as_sqs_for_handles_it_cannot_use(sqs: Any, url: str, clock: ManualClock) -> None:
    """Not in flight: MessageNotInflight; an older handle: InvalidParameterValue ("The receipt handle has
    expired"); a handle never issued: ReceiptHandleIsInvalid; out of 0..43200 or past 12 hours since the receive:
    InvalidParameterValue (API Reference, ChangeMessageVisibility; re:Post, sqs-receipt-handle-error)."""
    sqs.send_message(QueueUrl=url, MessageBody="a")
    [old] = _receive(sqs, url)
    clock.now += 30

    def code(handle: str, seconds: int = 5) -> str:
        with pytest.raises(ClientError) as caught:
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=seconds)
        return _code(caught)

    assert "AWS.SimpleQueueService.MessageNotInflight" == code(old["ReceiptHandle"])
    [new] = _receive(sqs, url)
    assert "InvalidParameterValue" == code(old["ReceiptHandle"])
    assert "ReceiptHandleIsInvalid" == code("not-a-handle")
    assert "InvalidParameterValue" == code(new["ReceiptHandle"], 43_201)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=new["ReceiptHandle"], VisibilityTimeout=43_200)
    clock.now += 43_000
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=new["ReceiptHandle"], VisibilityTimeout=200)
    assert "InvalidParameterValue" == code(new["ReceiptHandle"], 201)


# ------------------------------------------------------------------------------------------------ delete


def test_delete_with_the_latest_handle_deletes_and_is_idempotent(sqs: Any, url: str, sim: SimSQS) -> None:
    sqs.send_message(QueueUrl=url, MessageBody="a")
    [m] = _receive(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert ((0, 0), []) == (sim.depth(url), sim.messages(url))


def test_delete_with_a_handle_never_issued_or_from_another_queue_is_receipt_handle_is_invalid(
        sqs: Any, url: str, sim: SimSQS) -> None:
    other = sim.create_queue("other")
    sqs.send_message(QueueUrl=other, MessageBody="a")
    [m] = _receive(sqs, other)
    for handle in ("garbage", m["ReceiptHandle"]):
        with pytest.raises(ClientError) as caught:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
        assert "ReceiptHandleIsInvalid" == _code(caught)


@pytest.mark.parametrize(("weights", "left", "code"), [
    ((1.0, 0.0, 0.0), 0, None), ((0.0, 1.0, 0.0), 1, None), ((0.0, 0.0, 1.0), 1, "InvalidParameterValue")])
def test_delete_with_an_older_handle_does_one_of_the_three_things_sqs_documents(
        clock: ManualClock, weights: tuple[float, float, float], left: int, code: str | None) -> None:
    """API Reference, DeleteMessage: with an older receipt handle "the request will still succeed, but the message
    might not be deleted"; re:Post sqs-receipt-handle-error: it "might sometimes succeed", or InvalidParameterValue."""
    sim = SimSQS(clock=clock, rng=random.Random(1), stale_delete=weights)
    sqs = SimSQSClient.of(sim)
    url = sim.create_queue("q")
    sqs.send_message(QueueUrl=url, MessageBody="a")
    [old] = sim.receive(url)
    sim.receive(url, in_flight_again=True)
    try:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=old["ReceiptHandle"])
        got = None
    except ClientError as exc:
        got = exc.response["Error"]["Code"]
    assert (left, code) == (len(sim.messages(url)), got)


def test_the_default_draws_each_of_the_three_outcomes(clock: ManualClock) -> None:
    sim = SimSQS(clock=clock, rng=random.Random(5))
    seen = {sim._stale_delete() for _ in range(50)}
    assert {"deletes", "ignored", "refused"} == seen


# ------------------------------------------------------------------------------------------------ send


def test_message_bodies_are_checked_as_sqs_does(sqs: Any, url: str) -> None:
    """API Reference, SendMessage: at least one character, at most 1 MiB, only the XML character set."""
    sqs.send_message(QueueUrl=url, MessageBody="x" * MAX_MESSAGE_BYTES)
    for body, code in (("", "MissingParameter"), ("x" * (MAX_MESSAGE_BYTES + 1), "InvalidParameterValue"),
                       ("é" * (MAX_MESSAGE_BYTES // 2 + 1), "InvalidParameterValue"),
                       ("bad \x00 char", "InvalidMessageContents")):
        with pytest.raises(ClientError) as caught:
            sqs.send_message(QueueUrl=url, MessageBody=body)
        assert code == _code(caught)


def test_a_delayed_message_stays_hidden_and_counts_as_delayed(sqs: Any, url: str, sim: SimSQS,
                                                               clock: ManualClock) -> None:
    """Amazon SQS Developer Guide, sqs-delay-queues (DelaySeconds 0..900); GetQueueAttributes reports it in
    ApproximateNumberOfMessagesDelayed."""
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    _receive(sqs, url, 1)
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert ("0", "1", "1") == (attributes["ApproximateNumberOfMessages"],
                               attributes["ApproximateNumberOfMessagesNotVisible"],
                               attributes["ApproximateNumberOfMessagesDelayed"])
    assert ((0, 2), clock.now + 30) == (sim.depth(url), sim.next_visible_at(url))
    clock.now += 60
    assert ["later", "now"] == sorted(m["Body"] for m in _receive(sqs, url))
    assert clock.now + 30 == sim.next_visible_at(url)
    with pytest.raises(ClientError) as caught:
        sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901)
    assert "InvalidParameterValue" == _code(caught)


def test_md5_of_message_attributes_follows_the_developer_guide() -> None:
    """Amazon SQS Developer Guide, sqs-message-metadata: the known digest of one string attribute."""
    assert "19e27d4e946b072f3f58da80d94fd778" == md5_of_message_attributes(
        {"attribName1": {"DataType": "String", "StringValue": "attribValue 1"}})


# ------------------------------------------------------------------------------------------------ batches


def test_batches_report_each_entry_and_refuse_bad_batches_whole(sqs: Any, url: str) -> None:
    """API Reference, SendMessageBatch / DeleteMessageBatch: per-entry Successful and Failed; empty, more than 10
    or repeated Ids fail the whole request."""
    sent = sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "1"},
                                                          {"Id": "b", "MessageBody": ""}])
    assert (["a"], [("b", "MissingParameter", True)]) == (
        [s["Id"] for s in sent["Successful"]], [(f["Id"], f["Code"], f["SenderFault"]) for f in sent["Failed"]])
    [m] = _receive(sqs, url)
    deleted = sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "ok", "ReceiptHandle": m["ReceiptHandle"]},
                                                              {"Id": "bad", "ReceiptHandle": "nope"}])
    assert (["ok"], ["ReceiptHandleIsInvalid"]) == (
        [s["Id"] for s in deleted["Successful"]], [f["Code"] for f in deleted["Failed"]])
    for entries, code in (([], "AWS.SimpleQueueService.EmptyBatchRequest"),
                          ([{"Id": str(n), "MessageBody": "x"} for n in range(11)],
                           "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"),
                          ([{"Id": "same", "MessageBody": "x"}] * 2, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
                          ([{"Id": "a b", "MessageBody": "x"}], "AWS.SimpleQueueService.InvalidBatchEntryId"),
                          ([{"Id": str(n), "MessageBody": "x" * 300_000} for n in range(4)],
                           "AWS.SimpleQueueService.BatchRequestTooLong")):
        with pytest.raises(ClientError) as caught:
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert code == _code(caught)


def test_change_visibility_batch_sets_each_entry(sqs: Any, url: str) -> None:
    sqs.send_message(QueueUrl=url, MessageBody="a")
    [m] = _receive(sqs, url)
    answer = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "1", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}])
    assert ([{"Id": "1"}], [], 1) == (answer["Successful"], answer["Failed"], len(_receive(sqs, url)))


# ------------------------------------------------------------------------------------------------ queues


def test_queues_are_found_by_name_and_an_unknown_url_is_non_existent_queue(sqs: Any, url: str) -> None:
    assert url == sqs.get_queue_url(QueueName="jobs")["QueueUrl"]
    assert [url] == sqs.list_queues(QueueNamePrefix="jo")["QueueUrls"]
    for call in (lambda: sqs.send_message(QueueUrl=url + "x", MessageBody="a"),
                 lambda: sqs.get_queue_url(QueueName="nope")):
        with pytest.raises(ClientError) as caught:
            call()
        assert "AWS.SimpleQueueService.NonExistentQueue" == _code(caught)
    with pytest.raises(ClientError) as caught:
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Colour"])
    assert "InvalidAttributeName" == _code(caught)


def test_create_queue_is_idempotent_only_for_the_same_attributes(sqs: Any, url: str) -> None:
    assert url == sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "31"})
    assert "QueueAlreadyExists" == _code(caught)


def test_an_operation_not_modelled_fails_loudly(sqs: Any, sim: SimSQS) -> None:
    with pytest.raises(NotImplementedError, match="StartMessageMoveTask"):
        sim.call("StartMessageMoveTask", {})
    with pytest.raises(AttributeError):
        sqs.start_message_move_task(QueueUrl="x")
