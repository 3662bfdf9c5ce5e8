"""The DynamoDB adapter creates a pending item only while its Snapshot entry has no root (one transaction), on
the simulated DynamoDB with template.yaml's tables."""

from __future__ import annotations

import uuid

import pytest

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore
from seglog_core import errors
from seglog_core.schema import Entry, EntryType, PendingSnapshot, Segment
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.topology import load_topology


def test_create_is_refused_once_the_snapshot_entry_has_its_root() -> None:
    topology = load_topology()
    sim = SimDynamoDB([TableSpec.from_properties(name, props) for name, props in topology.tables.items()],
                      clock=lambda: 1_700_000_000.0)
    client = SimDynamoDBClient.of(sim)
    log = DynamoDBLogStore(client, segments_table=topology.segments_table, entries_table=topology.entries_table)
    pending = DynamoDBPendingStore(client, table=topology.pending_table, entries_table=topology.entries_table)
    log_id = uuid.uuid4()
    log.create_log(Segment(log_id=log_id, num=0, created=1, last_snapshot=0),
                   Entry(log_id=log_id, segment=0, num=0, created=1, type=EntryType.SNAPSHOT, snapshot_root="empty"))
    log.put_entry(Entry(log_id=log_id, segment=0, num=1, created=1, type=EntryType.SNAPSHOT))
    item = PendingSnapshot(log_id=log_id, segment=0, entry=1, created=5, modified=5, claimer="m1")
    pending.create(item)
    with pytest.raises(errors.ItemExistsError) as taken:
        pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=1, created=6, modified=6, claimer="m2"))
    assert not isinstance(taken.value, errors.SnapshotCompleteError)
    log.set_snapshot_root(log_id, 0, 1, "snapshots/x/root")
    pending.delete(log_id, 0, 1)
    with pytest.raises(errors.SnapshotCompleteError):
        pending.create(item)
    assert pending.get(log_id, 0, 1) is None


def test_a_create_whose_answer_was_lost_is_known_as_ours_on_retry() -> None:
    from typing import Any

    from botocore.exceptions import ReadTimeoutError

    from seglog_core.retry import RetryPolicy

    topology = load_topology()
    sim = SimDynamoDB([TableSpec.from_properties(name, props) for name, props in topology.tables.items()],
                      clock=lambda: 1_700_000_000.0)
    lost = ["TransactWriteItems"]

    def call(operation: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = sim.call(operation, params)
        if operation in lost:
            lost.remove(operation)
            raise ReadTimeoutError(endpoint_url="https://dynamodb")  # applied, answer lost
        return answer

    pending = DynamoDBPendingStore(SimDynamoDBClient(call), table=topology.pending_table,
                                   entries_table=topology.entries_table,
                                   retry=RetryPolicy(max_attempts=3, base=0.0, cap=0.0))
    item = PendingSnapshot(log_id=uuid.uuid4(), segment=0, entry=1, created=5, modified=5, claimer="m1")
    pending.create(item)  # the retry finds the item its first try wrote: ours, no error
    assert pending.get(item.log_id, 0, 1) == item
