"""Fixtures of the fidelity tests: the local stack, per-test tables and queues, the probe function and its log.

The stack is the session's own (tests/conftest.py starts it), on one profile only: the DynamoDB stream is the
profile's (DynamoDB Local or LocalStack), SQS is LocalStack's in both, and the behaviours checked here are the
pollers', so a second profile would double the time and check nothing new.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from conftest import PROFILES
from seglog_aws.clients import client, local_session
from seglog_awsmodel.events.dynamodb_stream import ShardIteratorType, StreamReader
from seglog_emulator.checkpoints import CheckpointStore
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker
from seglog_stack.local import LocalDeployment

HERE = Path(__file__).resolve().parent
#: The profile the fidelity tests run on: DynamoDB Local's when the session has it.
PROFILE = "dynamodb-local" if "dynamodb-local" in PROFILES else PROFILES[0]


# ------------------------------------------------------------------------------------------------ the stack


@pytest.fixture(scope="session")
def stack(stacks: Any) -> LocalDeployment:
    """The session's local deployment on :data:`PROFILE` (started on first use; never skipped)."""
    deployment: LocalDeployment = stacks.deployment(PROFILE)
    return deployment


@pytest.fixture(scope="session")
def aws(stack: LocalDeployment) -> dict[str, Any]:
    """boto3 clients on the local stack: dynamodb, dynamodbstreams, sqs."""
    session = local_session(stack.region)
    return {service: client(service, session=session, endpoint_url=stack.endpoints[service])
            for service in ("dynamodb", "dynamodbstreams", "sqs")}


def unique(prefix: str) -> str:
    return f"fid-{prefix}-{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------------------------------------ tables


@dataclass
class Table:
    """A table of this test, keyed by ``pk`` (S), with a NEW_IMAGE stream."""

    name: str
    reader: StreamReader
    dynamodb: Any

    def put(self, name: str, action: str = "ok", *, times: int | None = None, seconds: float | None = None,
            **extra: dict[str, Any]) -> None:
        """Writes the item ``name`` with the probe's instructions (see probe_handler)."""
        item: dict[str, Any] = {"pk": {"S": name}, "name": {"S": name}, "action": {"S": action}, **extra}
        if times is not None:
            item["times"] = {"N": str(times)}
        if seconds is not None:
            item["seconds"] = {"N": str(seconds)}
        self.dynamodb.put_item(TableName=self.name, Item=item)

    def wait_for_records(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The stream's records once ``count`` are readable from the trim horizon (so a poller started now
        finds them all in its first read). The stream of a new table has one shard."""
        deadline = time.monotonic() + timeout
        while True:
            shards = self.reader.shards()
            records = [r for s in shards
                       for r in self.reader.read(s["ShardId"], ShardIteratorType.TRIM_HORIZON)[0]]
            if len(records) >= count:
                assert 1 == len(shards), f"a new table's stream should have one shard, got {shards}"
                return records
            if time.monotonic() > deadline:
                raise AssertionError(f"only {len(records)} of {count} stream records within {timeout}s")
            time.sleep(0.05)


@pytest.fixture
def table(aws: dict[str, Any]) -> Iterator[Table]:
    """A fresh table with a NEW_IMAGE stream, deleted after the test."""
    ddb = aws["dynamodb"]
    name = unique("table")
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    yield Table(name=name, reader=StreamReader.for_table(aws["dynamodbstreams"], ddb, name), dynamodb=ddb)
    ddb.delete_table(TableName=name)


# ------------------------------------------------------------------------------------------------ queues


@dataclass
class Queue:
    url: str
    arn: str
    sqs: Any

    def send(self, name: str, action: str = "ok", *, times: int | None = None, seconds: float | None = None,
             **attributes: Any) -> str:
        """Sends a message whose JSON body carries the probe's instructions; returns its MessageId."""
        body: dict[str, Any] = {"name": name, "action": action}
        if times is not None:
            body["times"] = times
        if seconds is not None:
            body["seconds"] = seconds
        message_id: str = self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(body),
                                                **attributes)["MessageId"]
        return message_id

    def counts(self) -> tuple[int, int]:
        """(ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible)."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return (int(attributes["ApproximateNumberOfMessages"]),
                int(attributes["ApproximateNumberOfMessagesNotVisible"]))

    def receive(self) -> list[dict[str, Any]]:
        """What one ReceiveMessage (up to 10 messages, long-polling 1 s) gets; left in flight, not deleted."""
        messages: list[dict[str, Any]] = self.sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=30).get("Messages", [])
        return messages


class MakeQueue(Protocol):
    def __call__(self, *, visibility_timeout: int, dead_letter: Queue | None = None,
                 max_receive_count: int | None = None) -> Queue: ...


@pytest.fixture
def make_queue(aws: dict[str, Any]) -> Iterator[MakeQueue]:
    """Creates queues of this test (deleted after it) with a VisibilityTimeout and optionally a RedrivePolicy."""
    sqs = aws["sqs"]
    made: list[str] = []

    def make(*, visibility_timeout: int, dead_letter: Queue | None = None,
             max_receive_count: int | None = None) -> Queue:
        attributes = {"VisibilityTimeout": str(visibility_timeout)}
        if dead_letter is not None:
            attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dead_letter.arn,
                                                      "maxReceiveCount": str(max_receive_count)})
        url = sqs.create_queue(QueueName=unique("queue"), Attributes=attributes)["QueueUrl"]
        made.append(url)
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Queue(url=url, arn=arn, sqs=sqs)

    yield make
    for url in made:
        sqs.delete_queue(QueueUrl=url)


# ------------------------------------------------------------------------------------------------ the probe


class Probe:
    """Reads the probe function's log (see probe_handler): what each invocation received and when."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def starts(self) -> list[dict[str, Any]]:
        """One entry per invocation, in the order they started, each with its ``end`` line (None if the
        invocation never finished: killed on its timeout)."""
        lines = self.lines()
        ends = {line["request_id"]: line for line in lines if line["phase"] == "end"}
        return [{**line, "end": ends.get(line["request_id"])} for line in lines if line["phase"] == "start"]

    def batches(self) -> list[list[str]]:
        """The record names of each invocation, in order."""
        return [start["names"] for start in self.starts()]

    def deliveries(self, name: str) -> list[dict[str, Any]]:
        """The records named ``name`` as each invocation received them, in order."""
        found = []
        for start in self.starts():
            for record, record_name in zip(start["event"]["Records"], start["names"], strict=True):
                if record_name == name:
                    found.append(record)
        return found

    def wait(self, done: Callable[[list[dict[str, Any]]], bool], what: str, timeout: float = 15.0
             ) -> list[dict[str, Any]]:
        """Waits until ``done(starts())``; returns ``starts()``."""
        deadline = time.monotonic() + timeout
        while True:
            starts = self.starts()
            if done(starts):
                return starts
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; invocations: "
                                     f"{[(s['names'], s['end'] is not None) for s in starts]}")
            time.sleep(0.05)

    def finished(self, count: int) -> list[dict[str, Any]]:
        """Waits for ``count`` invocations that ended."""
        return self.wait(lambda starts: sum(s["end"] is not None for s in starts) >= count,
                         f"{count} finished invocations")


@pytest.fixture(scope="session")
def probe_pointer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file that holds the path of the current test's probe log (read by the probe at each invocation)."""
    return tmp_path_factory.mktemp("probe") / "pointer"


@pytest.fixture
def probe(tmp_path: Path, probe_pointer: Path) -> Probe:
    """This test's probe log; the probe function writes to it from now on."""
    probe = Probe(tmp_path / "probe.jsonl")
    probe_pointer.write_text(str(probe.path))
    return probe


MakeInvoker = Callable[..., LambdaInvoker]


@pytest.fixture(scope="session")
def _invokers() -> Iterator[dict[tuple[float, int], LambdaInvoker]]:
    """LambdaInvokers of the probe function by (timeout, concurrency), kept for the session: their warm workers
    serve test after test (each test's probe fixture points them at its own log), so a test pays no cold start
    for a configuration an earlier test used. Pollers drain before a test ends, so no invocation crosses tests."""
    invokers: dict[tuple[float, int], LambdaInvoker] = {}
    yield invokers
    for invoker in invokers.values():
        invoker.close(grace=0)


@pytest.fixture
def make_invoker(probe: Probe, probe_pointer: Path, _invokers: dict[tuple[float, int], LambdaInvoker],
                 lambda_code: Path) -> MakeInvoker:
    """An invoker of the probe function (logging to ``probe``) with the function timeout and concurrency given."""

    def make(*, timeout: float = 10.0, concurrency: int = 1) -> LambdaInvoker:
        key = (timeout, concurrency)
        if key not in _invokers:
            spec = FunctionSpec(logical_id="probe", Handler="probe_handler.handler", Timeout=timeout,
                                Environment={"PROBE_POINTER": str(probe_pointer)})
            _invokers[key] = LambdaInvoker(spec, code=[HERE, lambda_code], concurrency=concurrency)
        return _invokers[key]

    return make


# ------------------------------------------------------------------------------------------------ pollers


class RecordingCheckpoints(CheckpointStore):
    """A CheckpointStore that remembers every move: (time.time(), shard id, sequence number)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.moves: list[tuple[float, str, str]] = []

    def put(self, shard_id: str, sequence_number: str) -> None:
        self.moves.append((time.time(), shard_id, sequence_number))
        super().put(shard_id, sequence_number)


@pytest.fixture
def checkpoints(tmp_path: Path) -> RecordingCheckpoints:
    return RecordingCheckpoints(tmp_path / "checkpoints" / "mapping.json")


class Poller(Protocol):
    def run(self) -> None: ...

    def stop(self) -> None: ...


@contextmanager
def running(poller: Poller) -> Iterator[None]:
    """Runs ``poller.run()`` in a thread for the ``with`` block, then stops it and waits for it to drain."""
    thread = threading.Thread(target=poller.run, name="poller-under-test", daemon=True)
    thread.start()
    try:
        yield
    finally:
        poller.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the poller did not stop within 30 s"


def quick_retries(seconds: float) -> None:
    """The stream poller's pause between retries, kept short so retry-heavy tests stay fast."""
    time.sleep(min(seconds, 0.05))


class Clock:
    """An injectable clock (epoch seconds) the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
