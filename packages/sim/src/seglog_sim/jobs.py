"""What happened to each snapshot job: its receives and its last outcome, so a stuck seed says what is stuck.

The worker runner notes every message it hands to the worker (:meth:`Jobs.received`) and what the worker did
with it (:meth:`Jobs.ended`); an invocation that dies first leaves its receive without an outcome, and
:meth:`Jobs.last` then says how it died. A liveness violation names the job by (log, segment, entry) and quotes
that last outcome, so no seed needs a replay to be understood (issue 18).

The same notes give two of the waste figures (:mod:`seglog_sim.waste`): receives per job, and the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from seglog_core.schema import SNAPSHOT_JOB_DECODER
from seglog_sim.world import Task

#: A job: (log id, segment, entry).
Key = tuple[str, int, int]


def job_key(body: str | bytes) -> Key | None:
    """The job a message body names; None for a body that is no snapshot job."""
    try:
        job = SNAPSHOT_JOB_DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return job.log, job.segment, job.entry


@dataclass(kw_only=True)
class Receive:
    """One receive of a job by a worker invocation (what :meth:`Jobs.received` hands back for its end)."""

    key: Key
    task: Task
    at: float
    receive_count: int
    outcome: str | None = None


@dataclass(frozen=True, kw_only=True)
class JobRun:
    """One worker invocation's run of a job that ended with an outcome (not killed): from its receive to its end
    (simulated seconds). What the snapshot liveness check counts as a later job of a sheet that ran."""

    key: Key
    start: float
    end: float
    outcome: str
    #: The invocation's task (its calls in the history are its own).
    task: str = ""


@dataclass(kw_only=True)
class Jobs:
    """Every job's receives and its last one's outcome."""

    #: The world's start: times are told in simulated seconds from it, as the history tells them.
    start: float = 0.0
    receives: dict[Key, int] = field(default_factory=dict)
    _last: dict[Key, Receive] = field(default_factory=dict)
    #: Times each job reached the DLQ after the faults stopped (seen by the operator before it redrives).
    dead_after_faults: dict[Key, int] = field(default_factory=dict)
    #: Every receive whose invocation ended with an outcome, in the order they ended.
    runs: list[JobRun] = field(default_factory=list)

    def received(self, body: str | bytes, task: Task, at: float, receive_count: int) -> Receive | None:
        """Note a receive (None for a body that is no snapshot job); hand it back to :meth:`ended`."""
        key = job_key(body)
        if key is None:
            return None
        self.receives[key] = self.receives.get(key, 0) + 1
        receive = self._last[key] = Receive(key=key, task=task, at=at, receive_count=receive_count)
        return receive

    def ended(self, receive: Receive | None, outcome: str, at: float) -> None:
        """The invocation that made ``receive`` ended with ``outcome`` at ``at`` (a duplicate delivery of the same
        job may have been received meanwhile: each receive keeps its own start)."""
        if receive is not None:
            receive.outcome = outcome
            self.runs.append(JobRun(key=receive.key, start=receive.at, end=at, outcome=outcome,
                                     task=receive.task.name))

    @property
    def total_receives(self) -> int:
        return sum(self.receives.values())

    def last(self, key: Key) -> str:
        """The job's last outcome, in words."""
        r = self._last.get(key)
        if r is None:
            return "no worker ever received its job"
        outcome = r.outcome
        if outcome is None:
            outcome = f"killed ({r.task.killed})" if r.task.killed is not None else "no outcome (still running)"
        return f"{outcome} in {r.task.name} at {r.at - self.start:.1f} s, receive {r.receive_count}"
