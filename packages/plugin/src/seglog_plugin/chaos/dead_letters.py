"""The dead-letter faults of a chaos run: jobs that reach the DLQ, and redrives that bring them back (DESIGN §7,
"messages that reach the DLQ and are redriven (new messageIds)").

* dlq — decided once per run: the run's stack is updated with the template parameter SnapshotMaxReceiveCount
  lowered to the decision's ``max_receive_count``, so the snapshot queue's RedrivePolicy lets SQS itself move a
  job received that often without being deleted — crashed, timed out, deferred, busy — to the DLQ ("after the
  value of maxReceiveCount is exceeded": Amazon SQS Developer Guide, sqs-dead-letter-queues,
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).
* redrive — decided once per tick of the run: up to ``messages`` messages of the DLQ are moved back to the
  queue with :func:`seglog_aws.redrive.redrive`, as new messages with new messageIds.

When faults stop, the stack gets the campaign's own maxReceiveCount back (a deferral chain while the pipeline
drains must not be parked), and what a lowered count left in the DLQ is redriven, so the run can reach
quiescence (I5); the runner's check that the DLQ ends empty stays. A run without the dlq kind redrives nothing
then: a job in its DLQ is a finding.

SetQueueAttributes changes "can take up to 60 seconds ... to propagate" on AWS (SQS API Reference,
API_SetQueueAttributes). LocalStack applies them at once, except to a ReceiveMessage already waiting: it reads
the RedrivePolicy when the call starts, so a long poll begun before the update may still park a job (seen on
2026-11-22 with LocalStack 2026.3). The last redrive therefore waits out the queue pollers' long polls first::

    queue poller                         runner                          DLQ
    ReceiveMessage(wait 1 s) starts      (maxReceiveCount 2)
                                         update: maxReceiveCount 50
    job visible, receive count 3 > 2  -----------------------------> parked
                                         settle (> the 1 s wait)
                                         redrive everything  <-------- taken back, new messageId

A parked job may be the claimer its pending item names; its copy (a new messageId) takes the claim over only
once the claim is stale, and is deleted as a duplicate while it looks live (DESIGN §5 step 2). So every redrive,
the last one too, sends its copies with a delay (SQS DelaySeconds) until every claim a parked job held is stale:
the takeover time after its last stamp, which a clock_skew fault may have put up to its largest skew in the
future; `seglog redrive` does the same. Before it, a copy redriven within the takeover time met its own dead
claimer's claim still looking live, was deleted as a duplicate, and stranded the snapshot (a 5-run campaign's
seed 4). The last redrive does not also wait that long before it: its copies' delay already does, and waiting
twice cost every run that parked a job 13 s more of the chaos parameters' takeover time and skew.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import structlog

from seglog_aws.redrive import RedriveError
from seglog_aws.redrive import redrive as redrive_messages
from seglog_awsmodel.faults import FaultKind
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.pollers.queue import WAIT_SECONDS
from seglog_stack import local
from seglog_stack.local import LocalDeployment

log = structlog.get_logger("seglog.chaos.dead_letters")

#: The template parameter behind the snapshot queue's RedrivePolicy maxReceiveCount.
MAX_RECEIVE_PARAMETER: Final = "SnapshotMaxReceiveCount"
#: After maxReceiveCount is raised again: every long poll begun under the lowered count has ended.
SETTLE_SECONDS: Final = WAIT_SECONDS + 1.0

#: ``redrive(sqs, *, dlq_url=..., queue_url=..., limit=None) -> messages moved``.
Redrive = Callable[..., int]
#: Applies template parameters to the run's stack (a stack update).
Update = Callable[[dict[str, Any]], None]


@dataclass
class DeadLetterTally:
    """What reached the DLQ in one run and what came back.

    Attributes:
        max_receive_count: the lowered maxReceiveCount of the run (0: the campaign's own).
        redrives: redrive faults that fired while the run went.
        redriven: messages they moved back.
        redriven_at_stop: messages moved back when faults stopped.
        left: messages still in the DLQ when the run was verified (a violation).
    """

    max_receive_count: int = 0
    redrives: int = 0
    redriven: int = 0
    redriven_at_stop: int = 0
    left: int = 0

    @property
    def arrivals(self) -> int:
        """Messages SQS moved to the DLQ during the run: nothing else takes them out but the redrives."""
        return self.redriven + self.redriven_at_stop + self.left

    def to_dict(self) -> dict[str, int]:
        return {"max_receive_count": self.max_receive_count, "arrivals": self.arrivals, "redrives": self.redrives,
                "redriven": self.redriven, "redriven_at_stop": self.redriven_at_stop, "left": self.left}


class DeadLetterFaults:
    """The dlq and redrive kinds of one run.

    Args:
        sqs: a boto3 SQS client of the deployment.
        queue_url, dlq_url: the snapshot queue and its dead-letter queue.
        parameters: the campaign's template parameters.
        update: applies a run's parameters to the stack (:func:`stack_update`).
        schedule: the run's fault schedule (None: no faults).
        depth: the messages in the DLQ now.
        stale_after: seconds after which every claim a parked job held is stale (module docstring).
        redrive: moves messages from the DLQ back to the queue.
        sleep: how the last redrive waits out the long polls (a seam for tests).
    """

    def __init__(self, sqs: Any, *, queue_url: str, dlq_url: str, parameters: dict[str, Any], update: Update,
                 schedule: FaultSchedule | None, depth: Callable[[], int], stale_after: float,
                 redrive: Redrive = redrive_messages, sleep: Callable[[float], None] = time.sleep) -> None:
        self.sqs = sqs
        self.queue_url, self.dlq_url = queue_url, dlq_url
        self.parameters = parameters
        self._update = update
        self._schedule = schedule
        self._depth = depth
        self.stale_after = stale_after
        self._redrive = redrive
        self._sleep = sleep
        self._lock = threading.Lock()
        self._restored = False
        self.tally = DeadLetterTally()

    def begin(self) -> dict[str, Any]:
        """Decide the dlq fault for the run and, when it fires, lower maxReceiveCount on the stack; the run's
        template parameters (the emulator reads the template with them)."""
        decision = self._schedule.decide(FaultKind.DLQ, "dlq:run") if self._schedule is not None else None
        if decision is None or decision.amount is None:
            return dict(self.parameters)
        self.tally.max_receive_count = decision.amount
        lowered = {**self.parameters, MAX_RECEIVE_PARAMETER: decision.amount}
        self._update(lowered)
        log.info("dlq (injected fault): the snapshot queue's maxReceiveCount is lowered for this run",
                 max_receive_count=decision.amount)
        return lowered

    def tick(self, tick: int) -> None:
        """The redrive decision of one tick of the run; a redrive that fails is logged and left to the next."""
        if self._schedule is None:
            return
        decision = self._schedule.decide(FaultKind.REDRIVE, f"redrive:{tick}")
        if decision is None:
            return
        moved = self._move(decision.amount)
        with self._lock:
            self.tally.redrives += 1
            self.tally.redriven += moved
        log.info("redrive (injected fault)", tick=tick, limit=decision.amount, moved=moved)

    def restore(self) -> None:
        """The campaign's maxReceiveCount on the stack again, if this run lowered it (once; a run that failed
        half-way must not leave the next one a lowered count)."""
        if self.tally.max_receive_count and not self._restored:
            self._update(dict(self.parameters))
            self._restored = True

    def stop(self) -> None:
        """Faults stop: the campaign's maxReceiveCount again, then everything a lowered one parked in the DLQ
        goes back to the queue: in that order, with the receives begun before the update over, so nothing is
        parked after the last redrive; its copies arrive once the parked jobs' claims are stale, so they take
        them over (module docstring)."""
        if not self.tally.max_receive_count:
            return
        self.restore()
        self._sleep(SETTLE_SECONDS)
        if not self._depth():
            log.info("faults stopped: the dead-letter queue is empty")
            return
        moved = self._move(None)
        with self._lock:
            self.tally.redriven_at_stop += moved
        log.info("faults stopped: the dead-letter queue was redriven", moved=moved)

    def _move(self, limit: int | None) -> int:
        """Redrive up to ``limit`` messages; how many moved. A redrive that fails part-way is logged: what it
        left in the DLQ shows again there, for the next redrive (or the run's check that the DLQ ends empty)."""
        try:
            return self._redrive(self.sqs, dlq_url=self.dlq_url, queue_url=self.queue_url, limit=limit,
                                 delay=int(self.stale_after + 0.999))
        except RedriveError as exc:
            log.warning("redrive failed part-way", moved=exc.moved, error=str(exc))
            return exc.moved
        except Exception as exc:  # the local stack is slow or restarting
            log.warning("redrive failed: the dead-letter queue keeps its messages", error=str(exc))
            return 0


def claims_stale_after(parameters: dict[str, Any], plan: FaultPlan | None) -> float:
    """Seconds after its last stamp by which a claim is surely stale: the takeover time (SnapshotTakeoverSeconds,
    the template's default unless set), plus the largest skew a clock_skew fault may have stamped it with, plus a
    second (claims are stamped in whole seconds)."""
    skew = plan.specs.get(FaultKind.CLOCK_SKEW) if plan is not None else None
    ahead = skew.amount[1] / 1000 if skew is not None and skew.rate > 0 and skew.amount is not None else 0.0
    return float(parameters.get("SnapshotTakeoverSeconds", DEFAULT_TAKEOVER_SECONDS)) + ahead + 1.0


def stack_update(deployment: LocalDeployment, *, template: Path, stack: str) -> Update:
    """Applies template parameters to ``stack`` on the local stack, as a stack update would (the provisioner
    changes what differs: here the snapshot queue's RedrivePolicy)."""

    def update(parameters: dict[str, Any]) -> None:
        local.provision(deployment.endpoints, profile=deployment.profile, region=deployment.region,
                        template=template, stack_name=stack, parameters=parameters)

    return update
