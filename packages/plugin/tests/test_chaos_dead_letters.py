"""The dlq and redrive kinds of a chaos run, decided from the seed: which runs lower maxReceiveCount, what each
redrive moves, and that faults stopping puts the campaign's count back before the last redrive.

The stack update and the redrive are recorded, not performed (tests/emulator/test_dead_letters.py runs them on
the local stack's SQS)."""

from __future__ import annotations

from typing import Any

from seglog_aws.redrive import RedriveError
from seglog_emulator.faults import FaultKind, FaultPlan, FaultSchedule
from seglog_emulator.pollers.queue import WAIT_SECONDS
from seglog_plugin.chaos.dead_letters import (
    MAX_RECEIVE_PARAMETER,
    SETTLE_SECONDS,
    DeadLetterFaults,
    claims_stale_after,
)

CAMPAIGN = {"SnapshotEvery": 10, "SnapshotWorkerTimeout": 3}
#: Takeover time + largest clock skew + 1 s, as the runner computes it for the chaos parameters.
STALE = 13.0


class Recorder:
    """Records stack updates and redrives, in one list, in the order they happen."""

    def __init__(self, moves: list[int | Exception] | None = None, parked: int = 1) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.moves = list(moves or [])
        self.parked = parked

    def depth(self) -> int:
        self.calls.append(("depth", self.parked))
        return self.parked

    def update(self, parameters: dict[str, Any]) -> None:
        self.calls.append(("update", parameters.get(MAX_RECEIVE_PARAMETER)))

    def sleep(self, seconds: float) -> None:
        self.calls.append(("sleep", seconds))

    def redrive(self, sqs: Any, *, dlq_url: str, queue_url: str, limit: int | None = None, delay: int = 0) -> int:
        # Every copy arrives once the claims parked jobs held are stale, or it could be deleted as a duplicate.
        assert delay >= STALE
        self.calls.append(("redrive", (dlq_url, queue_url, limit)))
        move = self.moves.pop(0) if self.moves else 0
        if isinstance(move, Exception):
            raise move
        return move


def faults(plan: str | None, recorder: Recorder, seed: int = 1) -> DeadLetterFaults:
    schedule = FaultSchedule(FaultPlan.from_flags(plan, rate=1.0, seed=seed)) if plan is not None else None
    return DeadLetterFaults(object(), queue_url="q", dlq_url="dlq", parameters=dict(CAMPAIGN),
                            update=recorder.update, schedule=schedule, depth=recorder.depth, stale_after=STALE,
                            redrive=recorder.redrive, sleep=recorder.sleep)


def test_a_dlq_run_lowers_max_receive_count_and_gets_the_campaign_s_back_before_the_last_redrive() -> None:
    """The run's parameters (which the emulator reads the template with) and the stack carry the lowered count;
    when faults stop the stack is updated back first, the queue pollers' long polls begun under the lowered
    count are waited out, and the DLQ is redriven whole after, its copies delayed until the claims the parked
    jobs held are stale (the recorder's redrive checks the delay), not waited for a second time before it. If
    the order were otherwise, a job parked during the drain, or a copy deleted as a duplicate of a claim that
    still looked live, would strand its snapshot for good."""
    recorder = Recorder(moves=[4])
    dead_letters = faults("dlq", recorder)

    parameters = dead_letters.begin()
    count = parameters[MAX_RECEIVE_PARAMETER]
    dead_letters.stop()
    dead_letters.restore()  # the runner's finally: already restored, nothing more

    assert count in (2, 3)
    assert {**CAMPAIGN, MAX_RECEIVE_PARAMETER: count} == parameters
    assert [("update", count), ("update", None), ("sleep", SETTLE_SECONDS), ("depth", 1),
            ("redrive", ("dlq", "q", None))] == recorder.calls
    assert SETTLE_SECONDS > WAIT_SECONDS
    assert {"max_receive_count": count, "arrivals": 4, "redrives": 0, "redriven": 0, "redriven_at_stop": 4,
            "left": 0} == dead_letters.tally.to_dict()


def test_an_empty_dead_letter_queue_is_not_waited_for() -> None:
    """When nothing was parked, faults stopping costs the count's update and the settling, not the claims'
    takeover time."""
    recorder = Recorder(parked=0)
    dead_letters = faults("dlq", recorder)

    count = dead_letters.begin()[MAX_RECEIVE_PARAMETER]
    dead_letters.stop()

    assert [("update", count), ("update", None), ("sleep", SETTLE_SECONDS), ("depth", 0)] == recorder.calls


def test_without_the_dlq_kind_nothing_changes_and_nothing_is_redriven_when_faults_stop() -> None:
    """A run whose maxReceiveCount was not lowered leaves the stack alone, and a job in its DLQ stays there for
    the run's check to report: redriving it would hide a job parked by the campaign's own count."""
    for plan in (None, "redrive"):
        recorder = Recorder()
        dead_letters = faults(plan, recorder)

        assert CAMPAIGN == dead_letters.begin()
        dead_letters.stop()
        dead_letters.restore()
        assert [] == recorder.calls, plan


def test_redrive_ticks_move_what_the_schedule_says_and_count_what_moved() -> None:
    """Each tick's decision is keyed on the tick, so a seed replays the same redrives; its amount is the limit;
    a redrive that fails part-way still counts what it moved, and one that fails outright moves nothing."""
    recorder = Recorder(moves=[3, RedriveError(2, ["m: boom"], what="sent to the queue"), RuntimeError("down")])
    dead_letters = faults("redrive", recorder)
    expected = FaultSchedule(FaultPlan.from_flags("redrive", rate=1.0, seed=1))
    limits = [expected.peek(FaultKind.REDRIVE, f"redrive:{tick}") for tick in (1, 2, 3)]

    for tick in (1, 2, 3):
        dead_letters.tick(tick)

    assert [("redrive", ("dlq", "q", d.amount if d else None)) for d in limits] == recorder.calls
    assert (3, 5) == (dead_letters.tally.redrives, dead_letters.tally.redriven)


def test_a_redrive_that_does_not_fire_moves_nothing() -> None:
    """At rate 0 the kind is in the plan but never fires: no redrive, no count."""
    recorder = Recorder()
    schedule = FaultSchedule(FaultPlan.from_flags("redrive=0", rate=1.0, seed=1))
    dead_letters = DeadLetterFaults(object(), queue_url="q", dlq_url="dlq", parameters=dict(CAMPAIGN),
                                    update=recorder.update, schedule=schedule, depth=recorder.depth,
                                    stale_after=STALE, redrive=recorder.redrive)

    for tick in range(1, 20):
        dead_letters.tick(tick)

    assert ([], 0) == (recorder.calls, dead_letters.tally.redrives)


def test_claims_are_waited_out_for_the_takeover_time_and_the_largest_clock_skew() -> None:
    """A claim stamped by a clock running up to 8 s fast looks live that much longer: with the chaos takeover
    time of 4 s the last redrive waits 4 + 8 + 1 s; without clock_skew 4 + 1 s. If it waited less, a parked
    claimer's copy could be deleted as a duplicate and its snapshot stranded."""
    parameters = {"SnapshotTakeoverSeconds": 4}

    assert 13.0 == claims_stale_after(parameters, FaultPlan.from_flags("dlq,clock_skew", rate=0.1, seed=1))
    assert 5.0 == claims_stale_after(parameters, FaultPlan.from_flags("dlq,clock_skew=0", rate=0.1, seed=1))
    assert 5.0 == claims_stale_after(parameters, None)
