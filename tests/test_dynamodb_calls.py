"""DynamoDBCalls turns every botocore failure into a core error, HTTP client errors included (their
``response`` is None): found by the simulator, where a read's lost answer crashed the store with AttributeError."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from conftest import sim_tables
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_core import errors
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient


def _store(failures: list[Exception], *, retry: RetryPolicy | None) -> tuple[DynamoDBLogStore, list[str]]:
    clock = itertools.count(1_700_000_000)
    sim = SimDynamoDB(sim_tables(), clock=lambda: float(next(clock)))
    calls: list[str] = []

    def call(operation: str, params: dict[str, Any]) -> dict[str, Any]:
        calls.append(operation)
        if failures:
            raise failures.pop(0)
        return sim.call(operation, params)

    return DynamoDBLogStore(SimDynamoDBClient(call), segments_table="Segments", entries_table="Entries",
                            retry=retry), calls


@pytest.mark.parametrize("failure", [ReadTimeoutError(endpoint_url="https://dynamodb"),
                                     ConnectionClosedError(endpoint_url="https://dynamodb")])
def test_a_read_whose_connection_is_lost_is_retried(failure: Exception) -> None:
    store, calls = _store([failure], retry=RetryPolicy(max_attempts=3, base=0.0, cap=0.0))
    assert store.latest_segments(uuid.uuid4()) == []
    assert calls == ["Query", "Query"]


def test_a_write_whose_answer_is_lost_has_an_unknown_outcome() -> None:
    store, _ = _store([ReadTimeoutError(endpoint_url="https://dynamodb")], retry=None)
    entry = Entry(log_id=uuid.uuid4(), segment=0, num=1, created=1, type=EntryType.SNAPSHOT)
    with pytest.raises(errors.TransientStoreError) as caught:
        store.put_entry(entry)
    assert (caught.value.code, caught.value.outcome_unknown, caught.value.retryable) == ("ConnectionLost", True, True)
