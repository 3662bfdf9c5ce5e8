"""After a seed: I1-I6 of DESIGN §6 on every log, with liveness and exactly-once, plus what only a history shows.

The final state is judged by :func:`seglog_core.verify.verify_log` — the same checker ``seglog log verify`` and
the chaos runs use — read through the real adapters from the simulated tables and bucket (without faults).
Two things the final state cannot show are read from the tables' streams, which record every change in order:

* I4 over time: a segment's ``S`` never moved back (each MODIFY of a segment item carries its new image);
* I4 order: no Snapshot entry got its root before an earlier Snapshot entry of the same log.

Liveness (I5): once the faults stopped, every Snapshot entry completed, the pending table emptied and both
queues drained within the scenario's bound; and no correct client was refused (a 4xx for a request that followed
the protocol). Each liveness violation names what is stuck — the log, the segment, the entry — and quotes its
job's last outcome (:class:`seglog_sim.jobs.Jobs`), so a stuck seed is understood without a replay (issue 18).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore, item_to_pending
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_core.schema import split_segment_key
from seglog_core.verify import verify_log
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.jobs import Jobs, job_key
from seglog_sim.topology import Topology
from seglog_sim.workload import Ledger


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One broken invariant: which, what, and where (log, segment, entry) when known."""

    invariant: str
    message: str
    log_id: str | None = None
    segment: int | None = None
    entry: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "message": self.message, "log_id": self.log_id,
                "segment": self.segment, "entry": self.entry}

    def __str__(self) -> str:
        where = "/".join(str(p) for p in (self.segment, self.entry) if p is not None)
        return f"{self.invariant} {self.log_id or ''} {where} {self.message}".replace("  ", " ")


def check_run(*, ddb: SimDynamoDB, s3: SimS3, topology: Topology, logs: list[uuid.UUID], ledger: Ledger,
              quiescent: bool, queues: dict[str, tuple[int, int]], jobs: Jobs | None = None,
              waiting: Sequence[str | bytes] = (), running: Sequence[str] = ()) -> list[Violation]:
    """Every violation of the run (empty when it passed). ``waiting``: the bodies of the messages still in the
    queues, ``running``: the tasks still running (each is named when the run is not quiet)."""
    jobs = jobs or Jobs()
    store = DynamoDBLogStore(SimDynamoDBClient.of(ddb), segments_table=topology.segments_table,
                             entries_table=topology.entries_table)
    blobs = S3BlobStore(SimS3Client.of(s3), bucket=topology.bucket)
    pending = DynamoDBPendingStore(SimDynamoDBClient.of(ddb), table=topology.pending_table)
    found: list[Violation] = []
    for log_id in logs:
        try:
            report = verify_log(store, log_id, acknowledged=ledger.acknowledged.get(log_id, []), blobs=blobs,
                                pending=pending, quiescent=quiescent)
        except Exception as exc:  # state the real code cannot even read back (a malformed item) is a violation too
            found.append(Violation(invariant="I5", log_id=str(log_id),
                                   message=f"the log's state cannot be read back: {type(exc).__name__}: {exc}"))
            continue
        for v in report.violations:
            if v.invariant == "I5" and v.segment is None and v.message.startswith("pending items left"):
                continue  # named one by one below
            found.append(named(Violation(invariant=v.invariant, message=v.message, log_id=str(log_id),
                                         segment=v.segment, entry=v.entry), jobs))
        if quiescent:
            for p in report.pending:
                where = {"segment": int(str(p["segment"])), "entry": int(str(p["entry"]))}
                found.append(named(Violation(invariant="I5", log_id=str(log_id), **where,
                                             message=f"pending item left after quiescence (retries {p['retries']}, "
                                                     f"active {p['active']})"), jobs))
    found += _history(ddb, topology)
    if not quiescent:
        found += stuck(ddb, topology, jobs, waiting, running)
    for name, (visible, in_flight) in queues.items():
        if quiescent and visible + in_flight:
            found.append(Violation(invariant="I5", message=f"{name} holds {visible} visible and {in_flight} "
                                                           "in-flight messages after quiescence"))
    found += [Violation(invariant="I2", message=f"a correct request was refused: {r}") for r in ledger.refused]
    return found


def named(violation: Violation, jobs: Jobs) -> Violation:
    """A liveness violation about one Snapshot entry, with its job's last outcome."""
    if violation.invariant != "I5" or violation.log_id is None or violation.segment is None or violation.entry is None:
        return violation
    outcome = jobs.last((violation.log_id, violation.segment, violation.entry))
    return Violation(invariant="I5", log_id=violation.log_id, segment=violation.segment, entry=violation.entry,
                     message=f"{violation.message}; its job's last outcome: {outcome}")


def stuck(ddb: SimDynamoDB, topology: Topology, jobs: Jobs, waiting: Sequence[str | bytes],
          running: Sequence[str] = ()) -> list[Violation]:
    """What kept the run from going quiet within the liveness bound, one violation per job: the Snapshot entries
    not complete, the pending items left, the messages still queued (each with its job's last outcome); else the
    tasks still running."""
    found: dict[tuple[str, int, int], list[str]] = {}
    for item in ddb.items(topology.entries_table, copy=False):
        if item.get("T", {}).get("S") == "snap" and "R" not in item:
            log_id, segment = split_segment_key(bytes(item["G"]["B"]))
            found.setdefault((str(log_id), segment, int(item["N"]["N"])), []).append("Snapshot entry not complete")
    for item in ddb.items(topology.pending_table, copy=False):
        p = item_to_pending(item)
        found.setdefault((str(p.log_id), p.segment, p.entry), []).append(
            f"pending item (retries {p.retries}, active {p.active}{', blocked' if p.blocked else ''})")
    for body in waiting:
        key = job_key(body)
        if key is not None:
            found.setdefault(key, []).append("a message still queued")
    violations = [named(Violation(invariant="I5", log_id=key[0], segment=key[1], entry=key[2],
                                  message=f"not quiet within the liveness bound after faults stopped: "
                                          f"{', '.join(what)}"), jobs) for key, what in sorted(found.items())]
    if violations:
        return violations
    what = f"still running: {', '.join(running)}" if running else "a stream not read to its end"
    return [Violation(invariant="I5", message=f"not quiescent within the liveness bound after faults stopped (every "
                                              f"job is done; {what})")]


def _records(ddb: SimDynamoDB, table: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for shard in ddb.shard_ids(table):
        out += ddb.stream_records(table, shard, limit=1_000_000)
    out.sort(key=lambda r: int(r["dynamodb"]["SequenceNumber"]))
    return out


def _history(ddb: SimDynamoDB, topology: Topology) -> list[Violation]:
    found: list[Violation] = []
    last_s: dict[tuple[bytes, int], int] = {}
    for record in _records(ddb, topology.segments_table):
        image = record["dynamodb"].get("NewImage")
        if not image or "S" not in image:
            continue
        key = (bytes(image["L"]["B"]), int(image["N"]["N"]))
        s = int(image["S"]["N"])
        before = last_s.get(key)
        if before is not None and s < before:
            found.append(Violation(invariant="I4", log_id=str(uuid.UUID(bytes=key[0])), segment=key[1],
                                   message=f"the segment's S moved back from {before} to {s}"))
        last_s[key] = s
    done: dict[uuid.UUID, tuple[int, int]] = {}
    rooted: set[tuple[uuid.UUID, int, int]] = set()
    for record in _records(ddb, topology.entries_table):
        if record["eventName"] != "MODIFY":
            continue
        image = record["dynamodb"].get("NewImage", {})
        if image.get("T", {}).get("S") != "snap" or "R" not in image:
            continue
        log_id, segment = split_segment_key(bytes(image["G"]["B"]))
        position = (segment, int(image["N"]["N"]))
        if (log_id, *position) in rooted:
            continue  # the root set again by a redo of the completion steps (DESIGN §5 step 1)
        rooted.add((log_id, *position))
        latest = done.get(log_id)
        if latest is not None and position < latest:
            found.append(Violation(invariant="I4", log_id=str(log_id), segment=position[0], entry=position[1],
                                   message=f"completed after the later snapshot {latest[0]}/{latest[1]}"))
        done[log_id] = max(position, latest or position)
    return found
