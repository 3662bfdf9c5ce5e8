"""The stream event's ApproximateCreationDateTime has AWS's precision, the second (issue 19, point 5).

DynamoDB Streams API Reference, StreamRecord
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html): "rounded down to
the closest second". The local stacks round it down to the minute; the poller raises a whole-minute value to the
start of its last read that found the end of the shard (:func:`seglog_awsmodel.events.dynamodb_stream.creation_second`).
The stack's own case is in :mod:`fidelity.test_stream_poller` (the field-for-field event); here the rule alone,
and the poller driven by a fake stream and the test's clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fidelity.conftest import Clock, RecordingCheckpoints, running
from fidelity.test_stream_poller import FakeStreamReader, raw_record, stream_poller, wait_until
from seglog_awsmodel.events.dynamodb_stream import creation_second
from seglog_emulator.invoker import InvocationResult, Outcome

MINUTE = 1_700_000_040  # 2023-11-14T22:14:00Z, a whole minute


def test_a_whole_minute_is_raised_to_the_second_the_last_empty_read_began_within_its_minute() -> None:
    at = datetime.fromtimestamp(MINUTE, UTC)
    assert [MINUTE + 17, MINUTE + 17, MINUTE, MINUTE + 59, MINUTE] == [
        creation_second(MINUTE, not_before=MINUTE + 17.9),
        creation_second(at, not_before=MINUTE + 17.9),  # boto3 gives a datetime
        creation_second(MINUTE, not_before=None),  # nothing read empty yet: the minute is all there is
        creation_second(MINUTE, not_before=MINUTE + 300),  # a bound past the minute cannot leave it
        creation_second(MINUTE, not_before=MINUTE - 5),  # a bound before it says nothing
    ]


def test_a_value_with_seconds_is_kept() -> None:
    """A backend that keeps seconds (AWS, the simulator) is already right: the bound never moves it."""
    assert MINUTE + 3 == creation_second(MINUTE + 3, not_before=MINUTE + 30)


class CapturingInvoker:
    """Remembers every event it is given and ends each invocation with ``outcome`` at once."""

    def __init__(self, outcome: Outcome = Outcome.SUCCESS) -> None:
        self.events: list[Mapping[str, Any]] = []
        self.outcome = outcome
        self._lock = threading.Lock()

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        with self._lock:
            self.events.append(event)
        return InvocationResult(outcome=self.outcome, function="fake", request_id="r", pid=0, duration_ms=0.0,
                                cold_start=False)

    def creation_times(self) -> list[int]:
        return [r["dynamodb"]["ApproximateCreationDateTime"] for event in self.events for r in event["Records"]]


def test_stream_record_written_while_the_poller_watches_carries_its_second(tmp_path: Path) -> None:
    """The shard is empty while the poller reads it (the test's clock says 20.5 s past the minute); a record the
    stack stamps with the whole minute then appears, and the function gets the second of the last empty read:
    never later than the write, at most one poll earlier."""
    records: list[dict[str, Any]] = []
    reader = FakeStreamReader({"shard-live": (None, records, False)})
    invoker = CapturingInvoker()
    clock = Clock(MINUTE + 20.5)
    poller = stream_poller(reader, invoker, RecordingCheckpoints(tmp_path / "checkpoints.json"), clock=clock)

    with running(poller):
        wait_until(lambda: len(reader.reads) >= 2, "the poller to read the empty shard")
        record = raw_record(1, "late")
        record["dynamodb"]["ApproximateCreationDateTime"] = datetime.fromtimestamp(MINUTE, UTC)
        records.append(record)
        wait_until(lambda: bool(invoker.events), "the record's invocation")
        time.sleep(0.3)

    ((event_record,),) = [event["Records"] for event in invoker.events]
    assert MINUTE + 20 == event_record["dynamodb"]["ApproximateCreationDateTime"]


def test_a_record_delivered_again_after_the_poller_restarts_carries_the_second_of_its_first_delivery(
        tmp_path: Path) -> None:
    """ApproximateCreationDateTime is the record's own (DynamoDB Streams API Reference, StreamRecord), so every
    delivery of a record carries the same value. The first poller raises the stack's whole minute to the second of
    its last empty read and invokes with the record; the invocation fails, and the poller stops (restarts) before
    the batch is checkpointed. The new poller reads the record again from the trim horizon, knowing no bound, 75 s
    later: it must deliver the record with its first value, not the minute."""
    records: list[dict[str, Any]] = []
    reader = FakeStreamReader({"shard-live": (None, records, False)})
    path = tmp_path / "checkpoints.json"
    clock = Clock(MINUTE + 20.5)
    first = CapturingInvoker(Outcome.ERROR)
    with running(stream_poller(reader, first, RecordingCheckpoints(path), clock=clock)):
        wait_until(lambda: len(reader.reads) >= 2, "the poller to read the empty shard")
        record = raw_record(1, "late")
        record["dynamodb"]["ApproximateCreationDateTime"] = datetime.fromtimestamp(MINUTE, UTC)
        records.append(record)
        wait_until(lambda: bool(first.events), "the record's first invocation")
    assert RecordingCheckpoints(path).get("shard-live") is None  # left for the next start, uncheckpointed

    clock.now = MINUTE + 95.0
    again = CapturingInvoker()
    restarted = RecordingCheckpoints(path)
    with running(stream_poller(reader, again, restarted, clock=clock)):
        wait_until(lambda: bool(again.events), "the record's delivery by the restarted poller")
        wait_until(lambda: restarted.get("shard-live") is not None, "the checkpoint after it")

    assert {MINUTE + 20} == set(first.creation_times())
    assert [MINUTE + 20] == again.creation_times()
    assert {} == restarted.creation_seconds("shard-live")  # the checkpoint passed it: nothing left to remember
