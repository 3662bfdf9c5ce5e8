"""Liveness under faults (DESIGN §6 I5, §11): while the faults go on, every stream shard keeps being read.

I5 as the checks (:mod:`seglog_sim.checks`) hold it is quiescence once the faults stop: everything completes
within hours of calm. A poller that stalls only while faults last passes it — the emulator's stream poller did,
firing the same poller_restart in every new process (issue 19): the snapshots froze for as long as the faults
went on, and caught up the moment they stopped. This check judges the run while the faults last.

What it measures is AWS's IteratorAge for the stream mapping: at each moment, the age of the oldest record of a
shard past the mapping's checkpoint. It is read back after the run from the checkpoint's moves (kept by
:class:`seglog_sim.pollers.Pollers`) and the shard's records (:func:`waits`, which the report's iterator age
reads too): the age only grows between two moves, so its greatest values are just before a move and when the
faults stopped. A violation names the shard, how long its oldest record waited and that record's entry (log,
segment, entry: the snapshot or body it held back).

The bound (:func:`stream_bound`), from the rules every fault respects:

* a record is noticed within a poll (the simulated poller waits for a signal, then up to a quarter second, §9.2);
* each failed attempt of a batch costs at most the router's Timeout (30 s in the template: a stalled invocation
  is ended there, a crash or error ends it sooner), then the model's retry pause, capped at 2 s
  (:data:`seglog_awsmodel.stream_batches.RETRY_CAP_SECONDS`); a poller_restart or supervisor restart costs the
  same attempt plus the supervisor's restart pause; BisectBatchOnFunctionError splits a failing batch without
  spending retries, so a bad record is isolated, and retried, within the batch's attempts;
* so a record waits at most ``ATTEMPTS`` attempt cycles. Only an attempt that runs to the timeout costs much
  (a stall, the pause fault, past the router's timeout); other failures cost a retry pause. Faults are
  independent draws, so such attempts in a row are a geometric tail — measured over seeds 1-2,300 of the
  default scenario: one timeout (30 s) in about 4 % of seeds, 60 s or more in 6 seeds, the longest 89 s (three
  in a row) in one; each more in a row is five to ten times rarer, so five (162 s) should come up about once
  in a hundred thousand seeds or less. A stall past that is a poller that stopped trying, or tries in vain the
  same way each time.

Every seed of the campaign is judged, under the rates it draws (:data:`seglog_sim.faults.RATES`); poller_restart's
range holds the demo's rate (0.01), the emulator's chaos plan's (0.02) and ``--faults all --rate 0.05``.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

from seglog_awsmodel.stream_batches import RETRY_CAP_SECONDS
from seglog_core.schema import split_pending_key, split_segment_key
from seglog_core.violations import Violation
from seglog_sim.aws.dynamodb import SimDynamoDB
from seglog_sim.cloud import Call
from seglog_sim.history import SnapshotKey, snapshot_times
from seglog_sim.jobs import JobRun
from seglog_sim.pollers import RESTART_PAUSE
from seglog_sim.topology import Topology

#: Attempt cycles a record may wait while faults last: the batch ahead of it and its own tries (see above).
ATTEMPTS: Final = 5
#: Seconds before an idle poller reads a new record: at most a quarter second after its signal (§9.2).
POLL_SECONDS: Final = 0.25
#: ApproximateCreationDateTime is rounded down to the second: a record may be up to this much younger.
_ROUNDING: Final = 1.0


def stream_bound(topology: Topology) -> float:
    """Seconds a shard's oldest unread record may wait while faults last (the module's docstring says why)."""
    cycle = topology.router.Timeout + RETRY_CAP_SECONDS + RESTART_PAUSE
    return POLL_SECONDS + ATTEMPTS * cycle


class Wait(NamedTuple):
    """What a shard's mapping held back between two moves of its checkpoint, ``(since, until]``: the oldest record
    past the checkpoint (None when none was past it by the end of the run), and when it arrived — its
    ApproximateCreationDateTime rounded up, so the age is never overstated."""

    since: float
    until: float
    arrived: float | None
    record: Mapping[str, Any] | None

    def age(self, at: float) -> float:
        """AWS's IteratorAge at ``at`` (within ``(since, until]``): how long the oldest unread record has waited,
        0 while none waits."""
        return 0.0 if self.arrived is None else max(0.0, at - self.arrived)


def waits(ddb: SimDynamoDB, table: str, shard: str, moves: Sequence[tuple[float, str]], *, start: float,
          until: float) -> Iterator[Wait]:
    """The shard's checkpoint from ``start`` to ``until``, one :class:`Wait` per move before ``until`` and a last
    one ending there; ``moves`` are (time, SequenceNumber), in order. The age only grows within a wait, so its
    greatest value is at the wait's end. The one rule :func:`stalled_shards` and the report's iterator age
    (:mod:`seglog_sim.series`) read."""
    checkpoint: str | None = None
    since = start
    for at, moved_to in [*[m for m in moves if m[0] < until], (until, None)]:
        waiting = ddb.stream_records(table, shard, after=checkpoint, limit=1)
        if waiting:
            record = waiting[0]["dynamodb"]
            yield Wait(since, at, record["ApproximateCreationDateTime"].timestamp() + _ROUNDING, record)
        else:
            yield Wait(since, at, None, None)
        if moved_to is not None:
            checkpoint = moved_to
        since = at


def stalled_shards(ddb: SimDynamoDB, topology: Topology, moves: Mapping[str, Sequence[tuple[float, str]]],
                   *, start: float, until: float, bound: float | None = None) -> list[Violation]:
    """A violation for each shard whose oldest unread record waited longer than ``bound`` (default
    :func:`stream_bound`) before ``until``, the moment the faults stopped; ``moves`` are each shard's checkpoint
    moves, (time, SequenceNumber) in order. At most one per shard: its longest wait."""
    bound = stream_bound(topology) if bound is None else bound
    table = topology.stream.table
    found = []
    for shard in ddb.shard_ids(table):
        worst: Wait | None = None
        for wait in waits(ddb, table, shard, moves.get(shard, ()), start=start, until=until):
            age = wait.age(wait.until)
            if age > bound and (worst is None or age > worst.age(worst.until)):
                worst = wait
        if worst is not None:
            assert worst.arrived is not None and worst.record is not None
            found.append(_stalled(shard, worst.age(worst.until), worst.arrived, worst.until, worst.record,
                                  start=start, bound=bound))
    return found


def _stalled(shard: str, age: float, arrived: float, seen: float, record: Mapping[str, Any], *, start: float,
             bound: float) -> Violation:
    message = (f"stream shard {shard} stalled under faults: its oldest record waited {age:.0f} s unread (from "
               f"{arrived - start:.0f} s into the run), past the {bound:.0f} s a shard may wait while faults last "
               "(seglog_sim.liveness.stream_bound)")
    image = record.get("NewImage") or record["Keys"]
    if "G" not in image or "N" not in image:
        return Violation(invariant="I5", message=message, at=round(seen - start, 3))
    log_id, segment = split_segment_key(bytes(image["G"]["B"]))
    return Violation(invariant="I5", log_id=str(log_id), segment=segment, entry=int(image["N"]["N"]),
                     message=message, at=round(seen - start, 3))


# --------------------------------------------------------------------------------------------- snapshots
#
# Issue 34: a busy sheet's snapshots froze for minutes in the emulator while faults fired. One job, lost before its
# claim, came back only after the queue's 360 s visibility timeout, and every later job of the sheet waited behind
# it. The worker's rule since (DESIGN §5 step 3, seglog_core.pipeline.worker): a job that finds an earlier
# snapshot of its log buildable (its predecessor complete) and held by no live claim builds it itself, at once. A
# claim is live from the claim (A set) until it is released, taken over or deleted, or its last stamp (M, renewed
# by the builder at least every third of the takeover time) is older than the takeover time.
#
# The bound, then: a buildable snapshot that no live claim holds is built by the next job of its sheet that reaches
# its order step; a dead builder's claim holds it at most the takeover time past its last renewal. What is judged,
# while the faults last: no buildable snapshot stays idle (no live claim) through the whole runs of IDLE_RUNS later
# jobs of its sheet that ended normally (an invocation killed mid-run is no such job; one more than the first
# allows for a job that looked just before the claim it saw went stale). A duplicate or a job already done does
# not reach the order step and is not counted, nor is a job that never made the order step's read (the pending
# items of its sheet before it): one whose storage failed earlier, in its pending upsert, can help nobody (seed
# 655: a table's outage throttled eight later jobs at step 2 while a router pause had held their snapshot back).

#: Later jobs of a sheet that may run, each start to end, within one idle stretch of its buildable snapshot.
IDLE_RUNS: Final = 2
#: Outcomes of jobs that never reach the order step (they cannot help).
_NO_ORDER_STEP: Final = frozenset({"duplicate", "already_done"})


def live_claims(history: Iterable[Call], pending_table: str, takeover: float) -> dict[SnapshotKey,
                                                                                    list[tuple[float, float]]]:
    """When each snapshot's claim was live, from the pending table's writes that took effect: (since, until)
    intervals in simulated seconds. A stamp M is the builder's clock's (seconds); others see the claim stale once
    their clock passes M + takeover."""
    live: dict[SnapshotKey, list[tuple[float, float]]] = {}
    open_: dict[SnapshotKey, tuple[float, float]] = {}
    for call in history:
        if call.service != "dynamodb" or not (call.outcome.startswith("ok") or call.outcome.startswith("applied")):
            continue
        for item in _created_claimed(call, pending_table):  # a helper's item, born claimed
            key = _pending_key(item)
            _close(live, open_, key, call.at)
            open_[key] = (call.at, float(item["M"]["N"]) + takeover + 1.0)
        if call.operation not in ("UpdateItem", "DeleteItem") or call.params.get("TableName") != pending_table:
            continue
        key = _pending_key(call.params["Key"])
        expression = str(call.params.get("UpdateExpression", ""))
        stamp = call.params.get("ExpressionAttributeValues", {}).get(":m", {}).get("N")
        until = (float(stamp) + takeover + 1.0) if stamp is not None else call.at
        if "A = :t" in expression:  # a claim (a worker's, or a helper's seize)
            _close(live, open_, key, call.at)
            open_[key] = (call.at, until)
        elif expression.startswith("SET S = :s") and key in open_:  # a checkpoint or a renewal
            open_[key] = (open_[key][0], max(open_[key][1], until))
        elif call.operation == "DeleteItem" or "A = :f" in expression:  # done, released, taken over
            _close(live, open_, key, call.at)
    for key in list(open_):
        _close(live, open_, key, float("inf"))
    return live


def _created_claimed(call: Call, pending_table: str) -> Iterator[Mapping[str, Any]]:
    """The pending items ``call`` writes whole with their claim on (A true)."""
    puts = ([call.params] if call.operation == "PutItem" else
            [a["Put"] for a in call.params.get("TransactItems", []) if "Put" in a]
            if call.operation == "TransactWriteItems" else [])
    for put in puts:
        item = put.get("Item", {})
        if put.get("TableName") == pending_table and item.get("A", {}).get("BOOL"):
            yield item


def _pending_key(key: Mapping[str, Any]) -> SnapshotKey:
    segment, entry = split_pending_key(bytes(key["P"]["B"]))
    return str(uuid.UUID(bytes=bytes(key["L"]["B"]))), segment, entry


def _close(live: dict[SnapshotKey, list[tuple[float, float]]], open_: dict[SnapshotKey, tuple[float, float]],
           key: SnapshotKey, at: float) -> None:
    if key in open_:
        since, until = open_.pop(key)
        live.setdefault(key, []).append((since, min(at, until)))


def _idle_stretches(start: float, end: float, live: list[tuple[float, float]]) -> Iterator[tuple[float, float]]:
    """The parts of [start, end) no live interval covers."""
    at = start
    for since, until in sorted(live):
        if since > at:
            yield at, min(since, end)
        at = max(at, until)
        if at >= end:
            return
    if at < end:
        yield at, end


def idle_snapshots(history: list[Call], topology: Topology, runs: Sequence[JobRun], *, start: float,
                   until: float) -> list[Violation]:
    """A violation for each snapshot that stayed buildable and idle while IDLE_RUNS later jobs of its sheet ran,
    before ``until`` (the moment the faults stopped). At most one per snapshot: its first such stretch."""
    live = live_claims(history, topology.pending_table, topology.takeover)
    times = snapshot_times(history)
    by_log: dict[str, list[SnapshotKey]] = {}
    for key in sorted(times):
        by_log.setdefault(key[0], []).append(key)
    ordered = _order_reads(history, topology.pending_table)
    later: dict[str, list[JobRun]] = {}
    for run in runs:
        if run.outcome not in _NO_ORDER_STEP and any(run.start <= at <= run.end for at in ordered.get(run.task, ())):
            later.setdefault(run.key[0], []).append(run)
    found = []
    for log_id, keys in by_log.items():
        for before, key in itertools.pairwise(keys):
            appeared, completed = times[key]
            predecessor_done = times[before][1]
            if predecessor_done is None:
                continue
            # Buildable once its predecessor is complete and its claim let go (its completer deletes the pending
            # item last: until then a helper finds that item held, and waits).
            held = [until for since, until in live.get(before, []) if until > predecessor_done]
            buildable = max(appeared, predecessor_done, *held)
            end = min(until, completed if completed is not None else until)
            for u, v in _idle_stretches(buildable, end, live.get(key, [])):
                ran = [r for r in later.get(log_id, []) if (r.key[1], r.key[2]) > key[1:] and u <= r.start
                       and r.end <= v]
                if len(ran) >= IDLE_RUNS:
                    found.append(_idle(key, u, v, ran, start=start))
                    break
    return found


def _order_reads(history: Iterable[Call], pending_table: str) -> dict[str, list[float]]:
    """When each task read the pending items of a sheet (the order step's read, PendingStore.for_log) and got them."""
    reads: dict[str, list[float]] = {}
    for call in history:
        if (call.operation == "Query" and call.service == "dynamodb" and call.outcome.startswith("ok")
                and call.params.get("TableName") == pending_table):
            reads.setdefault(call.task, []).append(call.at)
    return reads


def _idle(key: SnapshotKey, since: float, to: float, ran: list[JobRun], *, start: float) -> Violation:
    log_id, segment, entry = key
    jobs = ", ".join(f"{r.key[1]}/{r.key[2]} ({r.outcome} at {r.start - start:.1f} s)" for r in ran[:4])
    return Violation(invariant="I5", log_id=log_id, segment=segment, entry=entry, at=round(since - start, 3),
                     message=f"snapshot {segment}/{entry} stayed buildable with no live claim for {to - since:.0f} s "
                             f"(from {since - start:.0f} s into the run) while {len(ran)} later jobs of its sheet ran "
                             f"and left it: {jobs} (seglog_sim.liveness.idle_snapshots)")
