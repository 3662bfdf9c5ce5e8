"""seglog's verdict on a chaos run, in one place: quiescence within its bound (I5), then I1-I6 of every sheet, the
clients' give-ups and the dead-letter queue — what :class:`~.runner.ChaosRunner` judges and what seglog's
``check(app)`` (:mod:`.as_app`) judges when its chaos runs on the interface any app uses (issue 37, point 2).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from seglog_aws.backend import Backend
from seglog_core.verify import verify_log
from seglog_core.violations import Violation
from seglog_plugin.chaos.watch import SnapshotWatcher, queue_depth, quiescent
from seglog_plugin.chaos.workload import ClientStats


def await_quiescence(backend: Backend, log_ids: list[uuid.UUID], watcher: SnapshotWatcher, queue_url: str,
                     dlq_url: str, within: float) -> tuple[float | None, Violation | None]:
    """Wait until every Snapshot entry of ``log_ids`` is complete, no pending item is left and the queue is empty:
    (the seconds it took, None) or, past ``within``, (None, the I5 violation saying what is outstanding)."""
    started = time.monotonic()
    state = "not checked"
    while time.monotonic() - started < within:
        done, state = quiescent(backend, log_ids, watcher, queue_url)
        if done:
            return round(time.monotonic() - started, 2), None
        time.sleep(0.25)
    pending = [f"{p.segment}/{p.entry} retries={p.retries} active={p.active} claimer={p.claimer}"
               for log_id in log_ids for p in backend.pending.for_log(log_id)]
    attributes = backend.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    queue = {k.removeprefix("ApproximateNumberOfMessages") or "visible": v for k, v in attributes.items()
             if k.startswith("ApproximateNumberOfMessages")}
    return None, Violation(invariant="I5", message=f"not quiescent {within:.0f} s after faults stopped: {state}; "
                                                   f"pending {pending or 'none'}; queue {queue}; "
                                                   f"dead letters {queue_depth(backend, dlq_url)}")


def verify_sheets(backend: Backend, log_ids: Iterable[uuid.UUID], stats: ClientStats,
                  dlq_url: str) -> tuple[list[Violation], int]:
    """I1-I6 of every sheet (quiescent), with the entry ids its clients were told were appended (I2); a client that
    gave up, and a message in the dead-letter queue, are violations too. Returns them and the DLQ's depth."""
    violations = [Violation(invariant="CLIENT", message=f"client gave up: {failure}") for failure in stats.failures]
    for log_id in log_ids:
        result = verify_log(backend.store, log_id, acknowledged=stats.acknowledged.get(log_id, []),
                            blobs=backend.blobs, pending=backend.pending, quiescent=True)
        violations += result.violations
    dlq = queue_depth(backend, dlq_url)
    if dlq:
        violations.append(Violation(invariant="I5", message=f"{dlq} message(s) in the dead-letter queue"))
    return violations, dlq
