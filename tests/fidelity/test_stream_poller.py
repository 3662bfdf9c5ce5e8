"""StreamPoller behaves as a Lambda event source mapping on a DynamoDB stream (DESIGN §9, items 1, 2, 5 and
10; items 3 and 4 are in :mod:`fidelity.test_stream_failures`).

Most tests read a real stream of a per-test table on the local stack and invoke the probe function in real
worker processes. What the local stack cannot produce (a resharded stream with a closed parent shard, 6 MB of
records, a TTL delete) is served by :class:`FakeStreamReader`, which answers as DescribeStream, GetShardIterator
and GetRecords do.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fidelity.conftest import MakeInvoker, Probe, RecordingCheckpoints, Table, quick_retries, running
from fidelity.drivers import collapse, wait_until
from seglog_awsmodel.config import FunctionResponseType, StreamMapping, StreamPosition
from seglog_awsmodel.events.dynamodb_stream import ShardIteratorType, stream_record
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import InvocationResult, Outcome
from seglog_emulator.pollers.common import Invoker
from seglog_emulator.pollers.stream import MAX_EVENT_BYTES, StreamPoller
from seglog_stack.local import LocalDeployment

REPORT = (FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,)


def stream_poller(table: Table | FakeStreamReader, invoker: Invoker, checkpoints: RecordingCheckpoints, *,
                  region: str = "us-east-1", on_failure: Any = None, clock: Any = time.time,
                  faults: FaultSchedule | None = None, **settings: Any) -> StreamPoller:
    """A poller of ``table``'s stream from the trim horizon, with the mapping settings given (AWS's names)."""
    reader = table.reader if isinstance(table, Table) else table
    mapping = StreamMapping(function="probe", event="Stream", table="Table",
                            StartingPosition=StreamPosition.TRIM_HORIZON, **settings)
    # A FakeStreamReader stands in for StreamReader: the poller uses shards, iterator, read_from, stream_arn.
    return StreamPoller(mapping, invoker, reader, checkpoints, region=region,
                        on_failure=on_failure, clock=clock, sleep=quick_retries, faults=faults)


def sequence_numbers(records: list[dict[str, Any]]) -> dict[str, str]:
    """SequenceNumber by the record's ``name``."""
    return {r["dynamodb"]["NewImage"]["name"]["S"]: r["dynamodb"]["SequenceNumber"] for r in records}


def moved_to(checkpoints: RecordingCheckpoints) -> list[str]:
    """Where the checkpoint went, in order (writing the same position twice is one move)."""
    return collapse([sequence for _, _, sequence in checkpoints.moves])


# --------------------------------------------------------------------------------------------- item 1


# --------------------------------------------------------------------------------------------- item 2


@pytest.mark.stack
def test_stream_invokes_when_batch_size_is_reached_or_the_batching_window_ends(
        stack: LocalDeployment, table: Table, probe: Probe, make_invoker: MakeInvoker,
        checkpoints: RecordingCheckpoints) -> None:
    """AWS Lambda Developer Guide, services-ddb-params
    (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html) and with-ddb: Lambda gathers records
    for up to MaximumBatchingWindowInSeconds and invokes as soon as BatchSize records (or 6 MB) are there."""
    for n in range(1, 8):
        table.put(f"r{n}")
    table.wait_for_records(7)
    poller = stream_poller(table, make_invoker(), checkpoints, region=stack.region, BatchSize=3,
                           MaximumBatchingWindowInSeconds=1)

    with running(poller):
        starts = probe.finished(3)

    assert [["r1", "r2", "r3"], ["r4", "r5", "r6"], ["r7"]] == probe.batches()
    assert starts[1]["time"] - starts[0]["end"]["time"] < 0.75, "a full batch waited for the batching window"
    assert starts[2]["time"] - starts[1]["end"]["time"] >= 0.95, "a short batch went before its window ended"


class FakeStreamReader:
    """Answers as a DynamoDB stream with the shards given: ``{shard id: (parent id, records, closed)}``.

    A closed shard read to its end gives no next iterator (GetRecords' NextShardIterator is null), as a parent
    shard does after a split. :meth:`shards` lists the shards in the order given, children first if so given.
    Every read is remembered in :attr:`reads` as (time.monotonic(), shard id, records returned).
    """

    stream_arn = "arn:aws:dynamodb:us-east-1:000000000000:table/Fake/stream/2026-01-01T00:00:00.000"

    def __init__(self, shards: Mapping[str, tuple[str | None, list[dict[str, Any]], bool]]) -> None:
        self._shards = dict(shards)
        self._lock = threading.Lock()
        self.reads: list[tuple[float, str, int]] = []

    def shards(self) -> list[dict[str, Any]]:
        described = []
        for shard_id, (parent, records, closed) in self._shards.items():
            numbers = [r["dynamodb"]["SequenceNumber"] for r in records] or ["0"]
            shard: dict[str, Any] = {"ShardId": shard_id,
                                     "SequenceNumberRange": {"StartingSequenceNumber": numbers[0]}}
            if closed:
                shard["SequenceNumberRange"]["EndingSequenceNumber"] = numbers[-1]
            if parent is not None:
                shard["ParentShardId"] = parent
            described.append(shard)
        return described

    def iterator(self, shard_id: str, iterator_type: ShardIteratorType | str,
                 sequence_number: str | None = None) -> str:
        records = self._shards[shard_id][1]
        kind = ShardIteratorType(iterator_type)
        if kind is ShardIteratorType.TRIM_HORIZON:
            position = 0
        elif kind is ShardIteratorType.LATEST:
            position = len(records)
        else:
            numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
            position = numbers.index(str(sequence_number)) + (kind is ShardIteratorType.AFTER_SEQUENCE_NUMBER)
        return f"{shard_id}|{position}"

    def read_from(self, shard_iterator: str, *, limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
        shard_id, _, position = shard_iterator.partition("|")
        _, records, closed = self._shards[shard_id]
        start = int(position)
        got = records[start:start + limit]
        with self._lock:
            self.reads.append((time.monotonic(), shard_id, len(got)))
        following = start + len(got)
        if closed and following >= len(records):
            return got, None
        return got, f"{shard_id}|{following}"


def raw_record(sequence: int, name: str, *, event_name: str = "INSERT", padding: int = 0,
               identity: dict[str, str] | None = None) -> dict[str, Any]:
    """A stream record as boto3's get_records returns it."""
    change: dict[str, Any] = {"ApproximateCreationDateTime": datetime.now(UTC), "Keys": {"pk": {"S": name}},
                              "SequenceNumber": f"{sequence:021d}", "SizeBytes": 20 + padding,
                              "StreamViewType": "NEW_IMAGE"}
    if event_name != "REMOVE":
        change["NewImage"] = {"pk": {"S": name}, "name": {"S": name}, "pad": {"S": "x" * padding}}
    record: dict[str, Any] = {"eventID": uuid.uuid4().hex, "eventName": event_name, "eventVersion": "1.1",
                              "eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "dynamodb": change}
    if identity is not None:
        record["userIdentity"] = identity
    return record


class RecordingInvoker:
    """An in-process invoker that remembers each batch (names, start and end on time.monotonic()) and succeeds
    after ``seconds``."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.calls: list[tuple[float, float, list[str], int]] = []
        self._lock = threading.Lock()

    def invoke(self, event: Mapping[str, Any], *, attempt: int = 1, source: str = "", crash_points: Any = (),
               timeout: float | None = None, log_fields: Mapping[str, Any] | None = None,
               **_: Any) -> InvocationResult:
        started = time.monotonic()
        time.sleep(self.seconds)
        names = [r["dynamodb"]["NewImage"]["name"]["S"] for r in event["Records"]]
        with self._lock:
            self.calls.append((started, time.monotonic(), names, len(json.dumps(event))))
        return InvocationResult(outcome=Outcome.SUCCESS, function="fake", request_id=str(uuid.uuid4()),
                                pid=os.getpid(), duration_ms=self.seconds * 1000, cold_start=False)

    def batches(self) -> list[list[str]]:
        with self._lock:
            return [names for _, _, names, _ in self.calls]


def test_stream_reads_a_parent_shard_to_its_end_before_its_child(tmp_path: Path) -> None:
    """AWS Lambda Developer Guide, with-ddb (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html): after a
    shard splits, Lambda processes the records of the parent shard before those of its children, so the order of
    changes to an item is kept. The child is listed first and the parent's batches are slow: a poller that read
    both at once would interleave them."""
    parent = [raw_record(n, f"p{n}") for n in (1, 2, 3)]
    child = [raw_record(n, f"c{n}") for n in (10, 11)]
    reader = FakeStreamReader({"shard-child": ("shard-parent", child, False),
                               "shard-parent": (None, parent, True)})
    invoker = RecordingInvoker(seconds=0.2)
    checkpoints = RecordingCheckpoints(tmp_path / "checkpoints.json")
    poller = stream_poller(reader, invoker, checkpoints, BatchSize=1)

    with running(poller):
        wait_until(lambda: len(invoker.batches()) >= 5, "five invocations")

    assert [["p1"], ["p2"], ["p3"], ["c10"], ["c11"]] == invoker.batches()
    parent_done = invoker.calls[2][1]
    first_child_read = min(at for at, shard_id, _ in reader.reads if shard_id == "shard-child")
    assert parent_done <= first_child_read, "the child shard was read before its parent was finished"
    assert checkpoints.finished("shard-parent")



def test_duplicate_delivery_hands_a_batch_to_the_function_again_before_its_checkpoint(tmp_path: Path) -> None:
    """duplicate_delivery on a stream (issue 37, point 1): Lambda processes a stream's records at least once, so a
    batch can reach the function twice. The copy comes right after the first invocation, before the checkpoint moves
    past it, and the next batch comes after both; at rate 0.5 some batches are copied and some not, the same ones for
    the same seed."""
    def run(seed: int) -> list[list[str]]:
        checkpoints = RecordingCheckpoints(tmp_path / f"checkpoints-{uuid.uuid4().hex}.json")  # each run from the start
        reader = FakeStreamReader({"shard-1": (None, [raw_record(n, f"r{n}") for n in range(1, 9)], False)})
        invoker = RecordingInvoker()
        faults = FaultSchedule(FaultPlan.from_mapping({"seed": seed, "faults": {"duplicate_delivery": {"rate": 0.5}}}))
        poller = stream_poller(reader, invoker, checkpoints, BatchSize=1, faults=faults)
        with running(poller):
            wait_until(lambda: ["r8"] in invoker.batches(), "r8 delivered")
            time.sleep(0.5)  # r8's copy, if it has one
        copies = sum(1 for fault in faults.injected())
        batches = invoker.batches()
        assert len(batches) == 8 + copies, batches
        return batches

    first = run(5)
    names = [name for [name] in first]
    assert sorted(set(names)) == [f"r{n}" for n in range(1, 9)]
    assert names == sorted(names, key=lambda name: int(name[1:]))  # each copy right after its first delivery
    assert 0 < len(names) - 8 < 8
    assert first == run(5)

def test_stream_shard_is_polled_about_four_times_a_second(tmp_path: Path) -> None:
    """AWS Lambda Developer Guide, with-ddb (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html): "Lambda
    polls shards in your DynamoDB stream for records at a base rate of 4 times per second"."""
    reader = FakeStreamReader({"shard-idle": (None, [], False)})
    poller = stream_poller(reader, RecordingInvoker(), RecordingCheckpoints(tmp_path / "checkpoints.json"))

    with running(poller):
        time.sleep(2.1)

    times = [at for at, _, _ in reader.reads]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert 6 <= len(times) <= 10
    assert 0.2 <= sum(gaps) / len(gaps) <= 0.35


def test_stream_batch_stops_at_the_6_mb_payload_limit(tmp_path: Path) -> None:
    """AWS Lambda Developer Guide, services-ddb-params and with-ddb
    (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html): a batch is invoked when BatchSize, the
    batching window or the 6 MB payload limit is reached. Two records of exactly 6 MB together exceed the
    limit once the event around them is counted, so they go in two invocations."""
    first = sized_record(1, "b1", 3 * 1024 * 1024)
    second = sized_record(2, "b2", MAX_EVENT_BYTES - event_record_size(first))
    reader = FakeStreamReader({"shard-big": (None, [first, second, raw_record(3, "b3")], False)})
    invoker = RecordingInvoker()
    poller = stream_poller(reader, invoker, RecordingCheckpoints(tmp_path / "checkpoints.json"), BatchSize=10)

    with running(poller):
        wait_until(lambda: len(invoker.batches()) >= 2, "two invocations")

    assert [["b1"], ["b2", "b3"]] == invoker.batches()
    assert all(size <= MAX_EVENT_BYTES for _, _, _, size in invoker.calls), "an event over 6 MB was sent"


def event_record_size(raw: dict[str, Any]) -> int:
    """The length of the record's JSON in the event the poller makes of it."""
    return len(json.dumps(stream_record(raw, event_source_arn=FakeStreamReader.stream_arn, region="us-east-1")))


def sized_record(sequence: int, name: str, size: int) -> dict[str, Any]:
    """A record whose event JSON is exactly ``size`` characters (bytes: the JSON is ASCII)."""
    padding = size
    while (record := raw_record(sequence, name, padding=padding)) and event_record_size(record) != size:
        padding += size - event_record_size(record)
    return record


# --------------------------------------------------------------------------------------------- item 5


# --------------------------------------------------------------------------------------------- item 10


@pytest.mark.stack
def test_stream_event_the_function_receives_matches_aws_field_for_field(
        stack: LocalDeployment, table: Table, probe: Probe, make_invoker: MakeInvoker,
        checkpoints: RecordingCheckpoints) -> None:
    """AWS Lambda Developer Guide, with-ddb (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html), "Example
    event": the envelope's keys in AWS's order, eventVersion "1.1", SequenceNumber a string, images in typed
    DynamoDB JSON with binary values in base64 — as the function receives it from its worker process; and
    ApproximateCreationDateTime to the second, as AWS gives it, though the stack gives the minute (the record is
    written while the poller watches the shard: fidelity.test_stream_creation_time)."""
    typed = {"n": {"N": "42.5"}, "b": {"B": b"\x00\xff"}, "flag": {"BOOL": True}, "nothing": {"NULL": True},
             "list": {"L": [{"S": "a"}, {"N": "1"}]}, "map": {"M": {"k": {"S": "v"}}}, "ss": {"SS": ["x", "y"]},
             "ns": {"NS": ["1", "2"]}, "bs": {"BS": [b"\x01"]}}
    table.put("warm")  # a first record, so the shard exists before the poller starts
    table.wait_for_records(1)
    poller = stream_poller(table, make_invoker(), checkpoints, region=stack.region, BatchSize=1)

    with running(poller):
        probe.finished(1)
        time.sleep(0.5)  # the poller reads the end of the shard a few times
        written_from = time.time()
        table.put("ev", **typed)
        written_by = time.time()
        _, start = probe.finished(2)

    assert ["Records"] == list(start["event"])
    (record,) = start["event"]["Records"]
    assert ["eventID", "eventName", "eventVersion", "eventSource", "awsRegion", "dynamodb",
            "eventSourceARN"] == list(record)
    assert ("INSERT", "1.1", "aws:dynamodb", stack.region) == (
        record["eventName"], record["eventVersion"], record["eventSource"], record["awsRegion"])
    assert isinstance(record["eventID"], str) and record["eventID"]
    arn = record["eventSourceARN"]
    assert arn.startswith(f"arn:aws:dynamodb:{stack.region}:") and arn.endswith(f"table/{table.name}/stream/"
                                                                                 + arn.rsplit("/", 1)[1])
    change = record["dynamodb"]
    assert ["ApproximateCreationDateTime", "Keys", "NewImage", "SequenceNumber", "SizeBytes",
            "StreamViewType"] == list(change)
    assert isinstance(change["ApproximateCreationDateTime"], int)
    assert int(written_from) - 1 <= change["ApproximateCreationDateTime"] <= int(written_by), (
        "ApproximateCreationDateTime is not the second of the write", written_from, written_by)
    assert isinstance(change["SequenceNumber"], str) and change["SequenceNumber"].isdigit()
    assert isinstance(change["SizeBytes"], int) and change["SizeBytes"] > 0
    assert "NEW_IMAGE" == change["StreamViewType"]
    assert {"pk": {"S": "ev"}} == change["Keys"]
    image = change["NewImage"]
    image["ss"]["SS"].sort()
    image["ns"]["NS"].sort()
    assert {"pk": {"S": "ev"}, "name": {"S": "ev"}, "action": {"S": "ok"}, "n": {"N": "42.5"},
            "b": {"B": "AP8="}, "flag": {"BOOL": True}, "nothing": {"NULL": True},
            "list": {"L": [{"S": "a"}, {"N": "1"}]}, "map": {"M": {"k": {"S": "v"}}}, "ss": {"SS": ["x", "y"]},
            "ns": {"NS": ["1", "2"]}, "bs": {"BS": ["AQ=="]}} == image


def test_stream_ttl_delete_reaches_the_function_with_user_identity(
        tmp_path: Path, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, with-ddb (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html), "Example
    event": a delete made by Time to Live carries ``"userIdentity": {"type": "Service", "principalId":
    "dynamodb.amazonaws.com"}`` (boto3 spells it PrincipalId/Type). The local stack makes no TTL deletes, so
    the stream is the fake one; the invoker and the function are real."""
    identity = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    reader = FakeStreamReader({"shard-ttl": (None, [raw_record(1, "gone", event_name="REMOVE",
                                                               identity=identity)], False)})
    poller = stream_poller(reader, make_invoker(), RecordingCheckpoints(tmp_path / "checkpoints.json"))

    with running(poller):
        (start,) = probe.finished(1)

    (record,) = start["event"]["Records"]
    assert "REMOVE" == record["eventName"]
    assert {"principalId": "dynamodb.amazonaws.com", "type": "Service"} == record["userIdentity"]
    assert "NewImage" not in record["dynamodb"]
