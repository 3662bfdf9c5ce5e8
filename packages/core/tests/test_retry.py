"""Retries within a deadline (seglog_core.retry): how many, how long, and which failures may be sent again."""

from __future__ import annotations

import random

import pytest

from seglog_core import errors
from seglog_core.retry import RetryPolicy, call_with_retries, deadline, seconds_left


class Clock:
    """Time that passes only when a retry sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def failing(*failures: Exception) -> tuple[list[int], object]:
    """A call that raises ``failures`` in turn, then answers "done"; the list counts its calls."""
    calls: list[int] = []

    def call() -> str:
        calls.append(len(calls) + 1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return "done"

    return calls, call


def throttle() -> errors.ThrottledError:
    return errors.ThrottledError("throttled", code="ThrottlingException")


def test_a_retry_stops_before_the_deadline() -> None:
    """With 3 s left and throttles forever, retries stop while a try still fits: if this fails, a retrying call
    sleeps into the function's time limit (and is killed there) instead of failing with time to spare."""
    clock = Clock()
    policy = RetryPolicy(max_attempts=50, base=0.5, cap=2.0, reserve=1.0, rng=random.Random(7), sleep=clock.sleep,
                         remaining=lambda: 3.0 - clock.now)
    calls, call = failing(*[throttle() for _ in range(50)])
    with pytest.raises(errors.ThrottledError):
        call_with_retries(policy, call, what="GetItem", retry_unknown=False)
    assert 1 < len(calls) < 50  # retried, and stopped by time rather than by the attempts
    assert clock.now <= 3.0 - 1.0  # the last try started with at least the reserve left


def test_without_a_deadline_retries_stop_at_max_attempts() -> None:
    clock = Clock()
    policy = RetryPolicy(max_attempts=4, base=0.01, cap=0.02, sleep=clock.sleep, remaining=lambda: None)
    calls, call = failing(*[throttle() for _ in range(10)])
    with pytest.raises(errors.ThrottledError):
        call_with_retries(policy, call, what="Query", retry_unknown=False)
    assert [1, 2, 3, 4] == calls
    assert 3 == len(clock.sleeps)


def test_throttles_and_5xx_are_retried_until_the_call_succeeds() -> None:
    policy = RetryPolicy(max_attempts=5, base=0.0, cap=0.0, remaining=lambda: None)
    calls, call = failing(throttle(), errors.TransientStoreError("500", code="InternalServerError"))
    assert "done" == call_with_retries(policy, call, what="Query", retry_unknown=False)
    assert 3 == len(calls)


def test_a_write_whose_outcome_is_unknown_is_sent_again_only_when_the_caller_says_it_is_safe() -> None:
    """If this fails, a lost answer to a non-idempotent write (an append) is repeated behind the log's back."""
    policy = RetryPolicy(max_attempts=5, base=0.0, cap=0.0, remaining=lambda: None)
    lost = errors.TransientStoreError("lost", code="InternalServerError", outcome_unknown=True)
    calls, call = failing(lost)
    with pytest.raises(errors.TransientStoreError):
        call_with_retries(policy, call, what="PutItem", retry_unknown=False)
    assert [1] == calls
    calls, call = failing(lost)
    assert "done" == call_with_retries(policy, call, what="UpdateItem", retry_unknown=True)
    assert [1, 2] == calls


def test_a_failed_condition_after_a_lost_answer_says_so() -> None:
    """The retry of a conditional write whose first try landed fails its own condition: the error must say that
    an earlier try may have landed, or the caller takes its own win for someone else's."""
    policy = RetryPolicy(max_attempts=5, base=0.0, cap=0.0, remaining=lambda: None)
    lost = errors.TransientStoreError("lost", code="InternalServerError", outcome_unknown=True)
    _, call = failing(lost, errors.ItemExistsError("pending snapshot"))
    with pytest.raises(errors.ItemExistsError) as caught:
        call_with_retries(policy, call, what="PutItem", retry_unknown=True)
    assert caught.value.after_unknown_outcome
    _, call = failing(errors.ItemExistsError("pending snapshot"))
    with pytest.raises(errors.ItemExistsError) as first_try:
        call_with_retries(policy, call, what="PutItem", retry_unknown=True)
    assert not first_try.value.after_unknown_outcome


def test_backoff_refuses_a_pause_that_would_end_within_the_reserve() -> None:
    """The log's own retry loops (EventLog) stop with DeadlineError, which says what to do, when time runs out."""
    clock = Clock()
    policy = RetryPolicy(base=1.0, cap=1.0, reserve=1.0, rng=random.Random(1), sleep=clock.sleep,
                         remaining=lambda: 1.5 - clock.now)
    with pytest.raises(errors.DeadlineError) as caught:
        for attempt in range(1, 10):
            policy.backoff(attempt)
    assert clock.now <= 0.5
    assert "same entry id" in str(caught.value)


def test_the_deadline_holds_inside_its_block_only() -> None:
    """A handler's deadline must not outlive its invocation (a later call in the process would stop too soon)."""
    assert seconds_left() is None
    with deadline(lambda: 12.5):
        assert 12.5 == seconds_left()
        assert 12.5 == RetryPolicy().remaining()
    assert seconds_left() is None
