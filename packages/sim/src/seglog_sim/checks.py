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

What clients were told, against the final log (:func:`check_clients`): an acknowledged entry's body never
changes; every load succeeded and answered one state of the log — the plain fold of the log up to the position
it answered (``LOAD``); every sync answered exactly the log's entries after its position (``SYNC``).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

import msgspec

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore, item_to_pending
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_core.errors import BlobNotFoundError, SeglogError
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retention import MIN_KEEP, read_archive
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Entry, EntryType, split_segment_key
from seglog_core.sheet import Sheet
from seglog_core.snapshot import read_sheet
from seglog_core.verify import is_whole_segment, verify_log
from seglog_core.violations import Violation
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.batching import markers
from seglog_sim.jobs import Jobs, job_key
from seglog_sim.topology import Topology
from seglog_sim.workload import Ledger, Load, Synced


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
            found.append(named(v, jobs))
        if quiescent:
            for p in report.pending:
                where = {"segment": int(str(p["segment"])), "entry": int(str(p["entry"]))}
                found.append(named(Violation(invariant="I5", log_id=str(log_id), **where,
                                             message=f"pending item left after quiescence (retries {p['retries']}, "
                                                     f"active {p['active']})"), jobs))
    wrongly, unseen = reuses_stored(store, ledger)
    found += wrongly
    found += _history(ddb, topology, unseen)
    if not quiescent:
        found += stuck(ddb, topology, jobs, waiting, running)
    for name, (visible, in_flight) in queues.items():
        if quiescent and visible + in_flight:
            found.append(Violation(invariant="I5", message=f"{name} holds {visible} visible and {in_flight} "
                                                           "in-flight messages after quiescence"))
    found += [Violation(invariant="I2", message=f"a correct request was refused: {r}") for r in ledger.refused]
    found += check_clients(store, blobs, logs, ledger, unseen)
    return found


def reuses_stored(store: LogStore, ledger: Ledger) -> tuple[list[Violation], set[uuid.UUID]]:
    """Reuses of an entry id with another body that were answered as stored: a violation, unless retention deleted
    the segment of the acknowledged entry first — the server finds ids by reading the log, and that entry is no
    longer in it (README "Appending exactly once"). Those ids are returned, for the checks that would see the
    second entry (seeds 2613, 7990, 8121), with those of every such reuse whose client never heard its answer (it
    vanished or gave up after the copy was stored: seed 5562)."""
    # Segments neither deleted nor gone, read once per log.
    kept = {log_id: {s.num for s in store.segments(log_id) if s.retired is None}
            for log_id in {log_id for log_id, _, _ in ledger.reuses}}
    deleted = {(log_id, segment) for log_id, _, (segment, _) in ledger.reuses if segment not in kept[log_id]}
    unseen = {entry_id for log_id, entry_id, (segment, _) in ledger.reuses if (log_id, segment) in deleted}
    return [Violation(invariant="I2", log_id=str(log_id), message=message)
            for log_id, entry_id, (segment, _), message in ledger.accepted_wrongly
            if (log_id, segment) not in deleted], unseen


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


def _history(ddb: SimDynamoDB, topology: Topology, unseen: Collection[uuid.UUID] = ()) -> list[Violation]:
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
    stored: dict[bytes, tuple[int, int]] = {}
    for record in _records(ddb, topology.entries_table):
        if record["eventName"] == "INSERT":
            # Exactly once over the whole history, deleted segments included: verify reads what retention left,
            # so an entry stored again after its first copy was deleted (a retry past a retired since that
            # resent: the reverted fixes since_retired_lookup and retention_by_creation) shows only here.
            image = record["dynamodb"].get("NewImage", {})
            key = image.get("K", {}).get("B")
            if key is None:
                continue
            position = (split_segment_key(bytes(image["G"]["B"]))[1], int(image["N"]["N"]))
            first = stored.setdefault(bytes(key), position)
            if first != position and uuid.UUID(bytes=bytes(key)) not in unseen:
                log_id = split_segment_key(bytes(image["G"]["B"]))[0]
                found.append(Violation(invariant="I2", log_id=str(log_id), segment=position[0], entry=position[1],
                                       message=f"entry id {uuid.UUID(bytes=bytes(key))} stored a second time (first "
                                               f"at {first[0]}/{first[1]}, maybe since retired)"))
            continue
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


#: Seconds a segment's close (its successor's ``C``, whole seconds of the appender's clock) and a stream record's
#: time (rounded down to the second) may each be off by.
_ROUNDING = 2.0


def horizon_kept(ddb: SimDynamoDB, topology: Topology, horizon: float, until: float) -> list[Violation]:
    """The retry horizon as documented (README "Appending exactly once"): while clients write, no segment is
    retired (its item marked ``A`` or ``D``) before it was closed ``horizon`` seconds ago — its close being its
    successor's creation. Read from the Segments table's stream: the first record marking a segment, against the
    record creating the next one. Retention after ``until`` (the clients done) keeps no horizon. Checked directly
    because its consequence (a retry inside the horizon that finds nothing) needs a paused retry to land inside a
    window of seconds: the mutant retention_by_creation survived 2,000 seeds of that (issue 18)."""
    if horizon <= _ROUNDING:
        return []
    created: dict[tuple[bytes, int], int] = {}
    retired: dict[tuple[bytes, int], float] = {}
    for record in _records(ddb, topology.segments_table):
        image = record["dynamodb"].get("NewImage")
        if not image:
            continue
        key = (bytes(image["L"]["B"]), int(image["N"]["N"]))
        created.setdefault(key, int(image["C"]["N"]))
        if ("A" in image or "D" in image) and key not in retired:
            retired[key] = record["dynamodb"]["ApproximateCreationDateTime"].timestamp()
    found = []
    for (log, num), at in sorted(retired.items(), key=lambda kv: kv[1]):
        closed = created.get((log, num + 1))
        # ``at`` is rounded down to the second: a record up to a second before ``until`` may have come after it
        # (seed 3865: the clients done at 9.35 s, a retention free of the horizon at 9.88 s, recorded as 9 s).
        if closed is None or at + 1.0 > until or at - closed >= horizon - _ROUNDING:
            continue
        found.append(Violation(invariant="I2", log_id=str(uuid.UUID(bytes=log)), segment=num,
                               message=f"retired {at - closed:.0f} s after it closed, inside the {horizon:.0f} s retry "
                                       "horizon, while clients wrote: a retry inside the horizon may not find its "
                                       "entry (README \"Appending exactly once\")"))
    return found


# ------------------------------------------------------------------------------------- what clients were told


def check_clients(store: LogStore, blobs: BlobStore, logs: list[uuid.UUID], ledger: Ledger,
                  unseen: Collection[uuid.UUID] = ()) -> list[Violation]:
    """What clients were told against the final log: bodies of acknowledged entries (but those of ``unseen`` ids,
    reused after their entry was deleted), loads and syncs."""
    found = [Violation(invariant="LOAD", message=f"a read failed: {m}") for m in ledger.failed_reads]
    for log_id in logs:
        try:
            history = _history_of(store, blobs, log_id)
        except SeglogError:
            continue  # check_run reports a log that cannot be read back
        found += bodies_unchanged(history, blobs, ledger, unseen)
        found += edits_in_order(log_id, history, blobs, [b for b in ledger.batched if b[0] == log_id])
        found += loads_are_states(log_id, history, blobs, [x for x in ledger.loads if x.log_id == log_id])
        found += syncs_are_slices(log_id, history, [x for x in ledger.syncs if x.log_id == log_id])
    return found


def _history_of(store: LogStore, blobs: BlobStore, log_id: uuid.UUID) -> list[list[Entry] | None]:
    """Each segment's entries in order (archived ones from their archive), None where they are gone: segments
    retention deleted (a tombstone, or a num missing below the first one left), a segment not whole, an archive
    that cannot be read. Folds restart after a None, from the next completed snapshot's stored state."""
    segments = list(store.segments(log_id))
    out: list[list[Entry] | None] = []
    expected = 0
    for index, segment in enumerate(segments):
        if segment.num != expected:
            out.append(None)  # deleted with its item (before tombstones)
        expected = segment.num + 1
        if segment.retired is not None and segment.archive is None:
            out.append(None)
            continue
        if segment.archive is None:
            entries = list(store.entries(log_id, segment.num))
            out.append(entries if is_whole_segment(entries, final=index == len(segments) - 1) else None)
            continue
        try:
            out.append(read_archive(blobs, segment.archive))
        except (SeglogError, ValueError):
            out.append(None)  # verify reports the unreadable archive (I1)
    return out


def _body(entry: Entry, blobs: BlobStore) -> Any:
    return entry.decoded(blobs.get(entry.external) if entry.external is not None else None)


def bodies_unchanged(history: list[list[Entry] | None], blobs: BlobStore, ledger: Ledger,
                     unseen: Collection[uuid.UUID] = ()) -> list[Violation]:
    """An acknowledged entry's body never changes: each stored entry with an acknowledged id holds the body its
    client sent (a large body read from its object)."""
    found = []
    for entries in history:
        for e in entries or ():
            sent = ledger.bodies.get(e.entry_id) if e.entry_id is not None else None
            if sent is None or e.entry_id in unseen:
                continue
            try:
                stored = _body(e, blobs)
            except SeglogError:
                continue  # an object gone is verify's I6
            if stored != sent:
                found.append(Violation(invariant="I3", log_id=str(e.log_id), segment=e.segment, entry=e.num,
                                       message=f"acknowledged entry {e.entry_id} holds {stored!r}, its client sent "
                                               f"{sent!r}: an acknowledged entry's body changed"))
    return found


def edits_in_order(log_id: uuid.UUID, history: list[list[Entry] | None], blobs: BlobStore,
                   batched: list[tuple[uuid.UUID, str, list[tuple[uuid.UUID, list[int]]]]]) -> list[Violation]:
    """A batching client's edits (issue 35), followed by the markers in their values whatever entry holds them:
    each acknowledged edit is in the log exactly once, and the client's edits stand in the order it added them
    (an edit stored twice, a batch resent under another entry id or behind later ones, breaks one or the other).
    Segments retention deleted are not seen: the edits of batches the log no longer shows are not expected."""
    found = []
    for _, client, acked in batched:
        shown: dict[uuid.UUID, list[int]] = {}
        stored: list[int] = []
        for entries in history:
            for e in entries or ():
                if e.type in (EntryType.SNAPSHOT, EntryType.END_SEGMENT) or e.entry_id is None:
                    continue
                try:
                    found_here = markers(_body(e, blobs), client)
                except SeglogError:
                    continue  # an object gone is verify's I6
                shown[e.entry_id] = found_here
                stored += found_here
        expected = [k for entry_id, ks in acked if entry_id in shown for k in ks]
        twice = sorted(k for k in set(stored) if stored.count(k) > 1)
        missing = sorted(set(expected) - set(stored))
        if twice or missing or stored != sorted(stored):
            found.append(Violation(invariant="I2", log_id=str(log_id), message=(
                f"{client}'s edits stand in the log as {stored}; acknowledged: {expected}; stored twice: {twice}, "
                f"missing: {missing}: every acknowledged edit is in the log once, in the order its client added it")))
    return found


def loads_are_states(log_id: uuid.UUID, history: list[list[Entry] | None], blobs: BlobStore,
                     loads: list[Load]) -> list[Violation]:
    """Every load answered one state of the log: the plain fold of every entry up to the position it answered
    (from the log's creation; past deleted history, from the next completed snapshot's stored state)."""
    if not loads:
        return []
    wanted: dict[tuple[int, int], list[Load]] = {}
    for load in loads:
        wanted.setdefault(load.position, []).append(load)
    found: list[Violation] = []
    state: Sheet | None = Sheet()
    for entries in history:
        if entries is None:
            state = None
            continue
        for e in entries:
            if e.type is EntryType.SNAPSHOT:
                if state is None and e.snapshot_root is not None:
                    try:
                        state = (Sheet() if e.snapshot_root == EMPTY_SNAPSHOT_ROOT
                                 else read_sheet(blobs, e.snapshot_root))
                    except SeglogError as exc:
                        # A violation, not a crash of the check (seeds 286, 356 of retain_delete: an archive run and
                        # a delete run on one segment left an archived snapshot whose objects were gone).
                        found.append(Violation(invariant="I3", log_id=str(log_id), segment=e.segment, entry=e.num,
                                               message=f"a completed snapshot the log still names cannot be read: "
                                                       f"{exc}"))
            elif e.type is not EntryType.END_SEGMENT and state is not None:
                try:
                    state.apply(_body(e, blobs))
                except BlobNotFoundError:
                    state = None  # a body retention deleted with its segment: the fold restarts at a snapshot
            for load in wanted.pop((e.segment, e.num), ()):
                if state is not None and msgspec.json.encode(state.rows()) != msgspec.json.encode(load.rows):
                    found.append(Violation(
                        invariant="LOAD", log_id=str(log_id), segment=e.segment, entry=e.num,
                        message=f"{load.client}'s load ({load.pages} pages) is not the state of the log at the "
                                f"position it answered: rows {load.rows!r}, the fold {state.rows()!r}"))
    return found


def syncs_are_slices(log_id: uuid.UUID, history: list[list[Entry] | None], syncs: list[Synced]) -> list[Violation]:
    """Every sync answered exactly the entries after its position up to the one it answered (ids in order)."""
    if not syncs or any(entries is None for entries in history):
        return []
    ids = [((e.segment, e.num), str(e.entry_id)) for entries in history for e in entries or () if e.entry_id]
    found = []
    for sync in syncs:
        expected = [i for position, i in ids if sync.since < position <= sync.position]
        answered = [i for _, _, i in sync.entries if i is not None]
        if answered != expected:
            found.append(Violation(invariant="SYNC", log_id=str(log_id), segment=sync.position[0],
                                   entry=sync.position[1],
                                   message=f"{sync.client}'s sync after {sync.since} answered entries {answered}, "
                                           f"the log holds {expected} up to {sync.position}"))
    return found


def retiring(ddb: SimDynamoDB, topology: Topology) -> list[Violation]:
    """Segments retention claimed and never finished (their ``P`` still set) once the world is quiet: every run
    cut short after its claim must be finished by a later one (seglog_core.retention, "Claim first"), or its
    segment stays half removed. Verify only lists them (VerifyReport.claimed), as a run may be at work on them;
    with the finishing reruns done, one left is a violation."""
    found = []
    for item in ddb.items(topology.segments_table, copy=False):
        if "P" in item:
            log_id = str(uuid.UUID(bytes=bytes(item["L"]["B"])))
            found.append(Violation(invariant="I5", log_id=log_id, segment=int(item["N"]["N"]),
                                   message="retention claimed this segment and never finished retiring it (P is "
                                           "still set after the runs that finish retention cut short)"))
    return found


def retention_behind(ddb: SimDynamoDB, topology: Topology, runs: Sequence[Any]) -> list[Violation]:
    """Segments the scheduled function should have retired and left, once the world is quiet: the last clean run
    (ended complete, failing on no log, from the first log) that started at ``t`` with policy (keep, min_age) had
    every segment ``s`` whose segment ``s + keep`` was created before ``t - min_age`` (on the run's clock, less the
    staleness of an eventually consistent read, the index Due's, and a second) to retire (seglog_core.retention, "Due
    segments"). One left unretired is a segment no run will look at until its log's next close."""
    clean = [t for t in runs if t.done and t.killed is None and t.error is None and isinstance(t.result, dict)
             and t.result.get("complete") and not t.result.get("failed") and t.result.get("resumed_after") is None
             and "keep" in t.tags]
    if not clean:
        return []
    last = max(clean, key=lambda t: t.started)
    # The run's own clock (its skew) decides what is old enough; C is the writer's, to the second.
    keep = max(last.tags["keep"], MIN_KEEP)
    cutoff = last.started + last.skew - last.tags["min_age"] - ddb.history - 1
    logs: dict[bytes, list[dict[str, Any]]] = {}
    for item in ddb.items(topology.segments_table, copy=False):
        logs.setdefault(bytes(item["L"]["B"]), []).append(item)
    found = []
    for log, items in logs.items():
        items.sort(key=lambda i: int(i["N"]["N"]))
        # Segment s is due once the segment whose creation left it behind the kept ones, s + keep, is older than
        # min_age: that segment's item holds the due mark (s itself closed no later).
        for item, behind in zip(items, items[keep:], strict=False):
            if "A" not in item and "D" not in item and int(behind["C"]["N"]) < cutoff:
                found.append(Violation(invariant="I5", log_id=str(uuid.UUID(bytes=log)), segment=int(item["N"]["N"]),
                                       message=f"the scheduled retention run that started at {last.started:.1f} s left "
                                               f"this segment unretired, though segment {behind['N']['N']}, {keep} "
                                               f"after it, was created at {behind['C']['N']} (before {cutoff:.1f} s)"))
    return found


def retired(ddb: SimDynamoDB, topology: Topology, logs: list[uuid.UUID]) -> int:
    """Segments archived or deleted in the run: segment items with an archive (``A``) or a deletion time (``D``),
    and the segments below each log's first item (deleted with their item, the legacy form)."""
    first: dict[bytes, int] = {log_id.bytes: -1 for log_id in logs}
    count = 0
    for item in ddb.items(topology.segments_table, copy=False):
        log = bytes(item["L"]["B"])
        num = int(item["N"]["N"])
        if "A" in item or "D" in item:
            count += 1
        if log in first and (first[log] < 0 or num < first[log]):
            first[log] = num
    return count + sum(max(0, num) for num in first.values())
