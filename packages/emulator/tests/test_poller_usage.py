"""The pollers' "poller usage" lines: requests per period on the poller's own client, iterator age per shard
(Lambda's IteratorAge, AWS Lambda Developer Guide events-dynamodb-metrics), the oldest message's age."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber
from structlog.testing import capture_logs

from seglog_emulator.pollers.usage import OldestMessage, PollerUsage, ShardAges, usage_seconds


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_each_line_counts_the_requests_since_the_line_before() -> None:
    sqs = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(sqs)
    for _ in range(3):
        stub.add_response("receive_message", {"Messages": []})
    usage = PollerUsage("F.Jobs", "sqs", sqs, lambda: {"oldest_age_ms": 0})
    with stub, capture_logs() as lines:
        sqs.receive_message(QueueUrl="http://q")
        sqs.receive_message(QueueUrl="http://q")
        usage.report()
        sqs.receive_message(QueueUrl="http://q")
        usage.report()
        usage.report()

    assert [2, 1, 0] == [line["requests"] for line in lines if line["event"] == "poller usage"]
    assert {"event": "poller usage", "poller": "F.Jobs", "service": "sqs", "requests": 2, "oldest_age_ms": 0,
            "log_level": "info"} == lines[0]


def test_a_client_without_botocore_events_counts_none_and_figures_that_fail_still_log_the_line() -> None:
    def broken() -> dict[str, object]:
        raise RuntimeError("boom")

    usage = PollerUsage("F.E", "dynamodbstreams", object(), broken)
    with capture_logs() as lines:
        usage.report()

    [line] = [x for x in lines if x["event"] == "poller usage"]
    assert (0, "boom") == (line["requests"], line["figures_error"])


def test_iterator_age_is_the_last_batch_records_age_when_it_finished_and_zero_once_caught_up() -> None:
    clock = Clock(1000.0)
    ages = ShardAges(clock)
    ages.read("s1", created=990.0)
    clock.now = 1002.0
    ages.finished("s1", created=990.0, drained=True)  # 12 s old when its batch finished
    ages.caught_up("s1")
    assert {"shards": {"s1": 12000}} == ages.figures()
    assert {"shards": {"s1": 0}} == ages.figures()  # nothing read, nothing finished since: caught up


def test_a_shard_stuck_on_a_batch_reports_how_old_its_last_record_read_is_now() -> None:
    clock = Clock(1000.0)
    ages = ShardAges(clock)
    ages.read("s1", created=995.0)
    assert {"shards": {"s1": 5000}} == ages.figures()
    clock.now = 1030.0
    assert {"shards": {"s1": 35000}} == ages.figures()


def test_a_creation_time_rounded_down_is_raised_to_when_the_shard_was_last_caught_up() -> None:
    """Local stacks round ApproximateCreationDateTime down to the minute: a record read 0.3 s after a read that
    found nothing was written in those 0.3 s, not up to a minute before."""
    clock = Clock(1059.0)
    ages = ShardAges(clock)
    ages.caught_up("s1")
    clock.now = 1059.3
    ages.read("s1", created=1020.0)  # rounded down to the minute
    clock.now = 1059.5
    ages.finished("s1", created=1020.0, drained=True)

    assert {"shards": {"s1": 500}} == ages.figures()


def test_a_closed_shard_is_reported_once_more_then_no_longer() -> None:
    ages = ShardAges(Clock())
    ages.read("old", created=999.0)
    ages.closed("old")
    assert {"shards": {"old": 0}} == ages.figures()
    assert {"shards": {}} == ages.figures()


def test_oldest_message_age_comes_from_sent_timestamp_and_resets_each_period() -> None:
    oldest = OldestMessage(Clock(1000.0))
    oldest.received([{"Attributes": {"SentTimestamp": "997000"}}, {"Attributes": {"SentTimestamp": "999500"}},
                     {"Attributes": {}}, {}])
    assert {"oldest_age_ms": 3000} == oldest.figures()
    assert {"oldest_age_ms": 0} == oldest.figures()


def test_a_stream_poller_logs_often_enough_for_every_scaled_alarm_period_to_hold_an_iterator_age() -> None:
    """Every 5 s at real time; twice a scaled 60 s period when that is shorter: at --alarm-scale 0.05 (a 60 s
    period in 3 s) lines every 5 s left most periods without a datapoint."""
    assert 5.0 == usage_seconds(1.0)
    assert 3.0 == usage_seconds(0.1)
    assert 1.5 == usage_seconds(0.05)
