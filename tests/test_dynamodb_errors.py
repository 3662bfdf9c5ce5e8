"""Every DynamoDB failure mode of DESIGN §3 is retried or surfaced, never swallowed — on the real local stack,
with the error injected into the boto3 client through botocore's hooks."""

from __future__ import annotations

import pytest

from seglog_aws.backend import Backend
from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.reader import LogReader
from seglog_core.retry import RetryPolicy
from seglog_core.schema import SetCell
from seglog_core.verify import verify_log
from seglog_emulator.faults.botocore_faults import BotocoreFaults

pytestmark = pytest.mark.stack

CELL = SetCell(row=1, col=1, value="x")


@pytest.fixture
def faults(backend: Backend) -> BotocoreFaults:
    return BotocoreFaults(backend.store._ddb)


@pytest.fixture
def log(backend: Backend) -> EventLog:
    return backend.event_log(retry=RetryPolicy(max_attempts=5, base=0.001, cap=0.005), cache_tail=False)


def _count(backend: Backend, log_id: object) -> int:
    return len(LogReader(store=backend.store).all_entries(log_id))  # type: ignore[arg-type]


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException",
                                  "RequestLimitExceeded"])
@pytest.mark.parametrize("operation", ["Query", "PutItem"])
def test_throttling_is_retried_with_backoff(backend: Backend, faults: BotocoreFaults, log: EventLog,
                                            code: str, operation: str) -> None:
    log_id = log.create()
    faults.fail(operation, code, times=2)
    done = log.append(log_id, CELL)
    assert done.attempts == 3
    assert [(op, c) for op, c, _ in faults.injected] == [(operation, code)] * 2
    assert _count(backend, log_id) == 2


def test_internal_server_error_before_the_write_is_retried(backend: Backend, faults: BotocoreFaults,
                                                           log: EventLog) -> None:
    log_id = log.create()
    faults.fail("PutItem", "InternalServerError", status=500)
    assert log.append(log_id, CELL).attempts == 2
    assert _count(backend, log_id) == 2


def test_internal_server_error_after_the_write_does_not_duplicate(backend: Backend, faults: BotocoreFaults,
                                                                  log: EventLog) -> None:
    log_id = log.create()
    faults.fail("PutItem", "InternalServerError", status=500, after_send=True)
    done = log.append(log_id, CELL)
    assert done.deduplicated
    assert _count(backend, log_id) == 2
    assert verify_log(backend.store, log_id, acknowledged=[done.entry.entry_id]).ok  # type: ignore[list-item]


def test_conditional_check_failed_moves_to_the_next_num(backend: Backend, log: EventLog) -> None:
    log_id = log.create()
    other = backend.event_log()
    log.append(log_id, CELL)
    with pytest.raises(errors.VersionConflictError) as caught:
        other.append(log_id, CELL, expected=1)
    assert caught.value.existing is not None
    assert caught.value.existing.num == 1


def test_transaction_conflict_is_retried(backend: Backend, faults: BotocoreFaults, log: EventLog) -> None:
    faults.fail("TransactWriteItems", "TransactionConflictException")
    log_id = log.create()
    assert [s.num for s in backend.store.segments(log_id)] == [0]


def test_transaction_cancelled_by_a_conflict_is_retried(backend: Backend, faults: BotocoreFaults,
                                                        log: EventLog) -> None:
    log_id = log.create()
    faults.fail("TransactWriteItems", "TransactionCanceledException",
                CancellationReasons=[{"Code": "None"}, {"Code": "TransactionConflict"}, {"Code": "None"}])
    segment = log.start_segment(log_id)
    assert segment.num == 1
    assert faults.injected == [("TransactWriteItems", "TransactionCanceledException", False)]


def test_transaction_cancelled_by_a_condition_is_surfaced(backend: Backend, log: EventLog) -> None:
    log_id = log.create()
    with pytest.raises(errors.TransactionCancelledError) as caught:
        backend.store.create_log(*_first_items(log_id))
    assert caught.value.condition_failed
    assert not caught.value.retryable


def _first_items(log_id: object) -> tuple[object, object]:
    from seglog_core.schema import Entry, EntryType, Segment

    return (Segment(log_id=log_id, num=0, created=1),  # type: ignore[arg-type]
            Entry(log_id=log_id, segment=0, num=0, created=1, type=EntryType.SNAPSHOT))  # type: ignore[arg-type]


def test_persistent_throttling_surfaces_after_bounded_attempts(faults: BotocoreFaults, log: EventLog) -> None:
    log_id = log.create()
    faults.fail("PutItem", "ThrottlingException", times=100)
    with pytest.raises(errors.AppendContentionError) as caught:
        log.append(log_id, CELL)
    assert caught.value.attempts == 5
    assert "same entry id" in str(caught.value)


def test_missing_table_is_surfaced_with_what_to_do(backend: Backend) -> None:
    from seglog_aws.dynamodb_log_store import DynamoDBLogStore

    store = DynamoDBLogStore(backend.store._ddb, segments_table="no-such-table", entries_table="no-such-table")
    with pytest.raises(errors.StoreError) as caught:
        store.latest_segments(__import__("uuid").uuid4())
    assert caught.value.code == "ResourceNotFoundException"
    assert not caught.value.retryable
    assert "seglog up" in str(caught.value)


def test_validation_errors_are_surfaced_not_retried(backend: Backend, faults: BotocoreFaults,
                                                    log: EventLog) -> None:
    log_id = log.create()
    faults.fail("PutItem", "ValidationException")
    with pytest.raises(errors.StoreError) as caught:
        log.append(log_id, CELL)
    assert caught.value.code == "ValidationException"
    assert len(faults.injected) == 1
