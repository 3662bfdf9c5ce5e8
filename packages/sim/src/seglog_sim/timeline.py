"""A seed's run as the report draws it (:class:`seglog_report.model.RunData`), in simulated seconds.

A seed is replayed bit for bit, so the report runs it again and reads the world as it ended: every invocation
(a task of the api, router, worker or retention kind) on a lane per function and concurrency slot, every client
try on its client's lane, every fault at the moment it fired on the lane of the task it hit, and each Snapshot
entry's life from the write that appended it to the write that completed it (from the storage history). A
violation's log, segment and entry mark the events that led to it. Under the lanes, each stream shard's iterator
age and the queues' depths (:mod:`seglog_sim.series`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from seglog_core.schema import SNAPSHOT_JOB_DECODER
from seglog_report import causes
from seglog_report.model import Marker, Meter, Report, RunData, SeedRow, Span, outline
from seglog_sim.cloud import Call
from seglog_sim.history import describe_key, entry_writes, snapshot_times
from seglog_sim.metering import FUNCTION_KINDS
from seglog_sim.run import SeedResult, execute
from seglog_sim.scenario import Scenario
from seglog_sim.series import QueueDepths, iterator_ages
from seglog_sim.world import Task


def run_data(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None,
             replay: str = "") -> tuple[SeedResult, RunData]:
    """Run ``seed`` again and draw it."""
    depths = QueueDepths()
    run, result = execute(seed, scenario, only=only, watch=depths.watch)
    start = run.world.start
    names = {kind: getattr(run.topology, kind).logical_id for kind in FUNCTION_KINDS}
    spans, lane_of = _invocations(run.world.tasks, names, start, run.world.now, _acts(result.history))
    spans += _client_tries(run.world.tasks, start)
    spans += _snapshot_lives(result.history, start, run.world.now)
    markers = [Marker(lane=lane_of.get(task, task), group=_group(task), at=round(at - start, 4), kind=kind,
                      label=f"{task}: {kind}", ids={"task": task})
               for at, task, kind in run.faults.fired_at]
    violations = outline(result.violations, spans, markers, link="task")
    latencies = {"append": _append_latencies(run.world.tasks),
                 "snapshot": [round(s.end - s.start, 4) for s in spans
                              if s.group == "snapshot" and s.outcome == "completed" and s.ids.get("entry") != 0]}
    data = causes.connect(RunData(kind="simulate", title=f"seed {seed}", run=seed, seed=seed, clock="simulated",
                   seconds=round(run.world.now - start, 3), violations=violations, spans=spans, markers=markers,
                   latencies={k: v for k, v in latencies.items() if v}, meter=result.meter,
                   summary={"faults": dict(result.fault_counts), "invocations": result.invocations,
                            "stats": result.stats, "acknowledged": result.acknowledged},
                   replay=replay, series=[*iterator_ages(run), *depths.series()]))
    return result, data


def _group(task: str) -> str:
    kind = task.rsplit("-", 1)[0]
    if kind in FUNCTION_KINDS:
        return "function"
    return "client" if "client" in task or task == "setup" else "operator"


def _outcome(task: Task) -> str:
    if task.killed is not None:
        return "timeout" if "timeout" in task.killed or "deadline" in task.killed else "crashed"
    if task.error is not None:
        return "error"
    outcomes = task.tags.get("outcomes")
    if outcomes:
        return "completed" if "completed" in outcomes else str(outcomes[-1])
    if not task.done:
        return "incomplete"
    return "success"


def _invocations(tasks: list[Task], names: dict[str, str], start: float, now: float,
                 acts: dict[str, dict[str, list[str]]]) -> tuple[list[Span], dict[str, str]]:
    """Spans of every invocation, each kind's on the lowest-numbered slot free when it started (as a pool of
    execution environments would run them)."""
    spans: list[Span] = []
    lane_of: dict[str, str] = {}
    free_at: dict[str, list[float]] = {}
    for task in sorted((t for t in tasks if t.kind in FUNCTION_KINDS), key=lambda t: t.started):
        end = task.ended if task.ended is not None else now
        slots = free_at.setdefault(task.kind, [])
        slot = next((n for n, t in enumerate(slots) if t <= task.started), len(slots))
        if slot == len(slots):
            slots.append(end)
        slots[slot] = end
        lane = f"{names[task.kind]} #{slot + 1}"
        lane_of[task.name] = lane
        ids = _ids(task)
        label = task.name + (f" ({task.killed})" if task.killed else "")
        done = dict(acts.get(task.name, {}))
        jobs = [k for k in (_job_key(body) for body in task.tags.get("bodies") or []) if k is not None]
        if jobs:  # its own job's snapshot first, then those it built while helping (from the history)
            done[causes.WORKED] = [*jobs, *(k for k in done.get(causes.WORKED, []) if k not in jobs)]
        spans.append(Span(lane=lane, group="function", start=round(task.started - start, 4),
                          end=round(end - start, 4), outcome=_outcome(task), label=label, ids=ids, acts=done))
    return spans, lane_of


def _ids(task: Task) -> dict[str, Any]:
    ids: dict[str, Any] = {"task": task.name}
    for key in ("log_id", "entry_id", "client", "attempt"):
        if key in task.tags:
            ids[key] = task.tags[key]
    messages = task.tags.get("messages")
    if messages:
        ids["message_id"] = ", ".join(messages)
    bodies = task.tags.get("bodies") or []
    if len(bodies) == 1:  # one job: the snapshot it worked on (a batch of several names none)
        try:
            job = SNAPSHOT_JOB_DECODER.decode(bodies[0])
        except msgspec.DecodeError:
            return ids
        ids.update(log_id=job.log, segment=job.segment, entry=job.entry)
    return ids


def _job_key(body: object) -> str | None:
    try:
        job = SNAPSHOT_JOB_DECODER.decode(body)  # type: ignore[arg-type]
    except (msgspec.DecodeError, TypeError):
        return None
    return causes.key(job.log, job.segment, job.entry)


def _acts(history: list[Call]) -> dict[str, dict[str, list[str]]]:
    """What each task did to Snapshot entries, from the calls that took effect: the write that appended one
    (:data:`~seglog_report.causes.APPENDED`), the SendMessage of its job (:data:`~seglog_report.causes.ROUTED`),
    the write that set its root (:data:`~seglog_report.causes.COMPLETED`, and WORKED: a job completes its own
    snapshot or an earlier one it helped)."""
    found: dict[str, dict[str, list[str]]] = {}

    def add(task: str, act: str, k: str | None) -> None:
        if k is not None:
            listed = found.setdefault(task, {}).setdefault(act, [])
            if k not in listed:
                listed.append(k)

    for call in history:
        if not (call.outcome.startswith("ok") or call.outcome.startswith("applied")):
            continue
        if call.service == "dynamodb":
            for item, sets_root in entry_writes(call):
                log_id, where = describe_key(item)
                if log_id is None:
                    continue
                segment, _, entry = where.partition("/")
                k = causes.key(log_id, segment, entry or 0)
                for act in (causes.WORKED, causes.COMPLETED) if sets_root else (causes.APPENDED,):
                    add(call.task, act, k)
        elif call.service == "sqs" and call.operation in ("SendMessage", "SendMessageBatch"):
            entries = call.params.get("Entries") if call.operation == "SendMessageBatch" else [call.params]
            for sent in entries or []:
                add(call.task, causes.ROUTED, _job_key(sent.get("MessageBody", "")))
    return found


def _client_tries(tasks: list[Task], start: float) -> list[Span]:
    return [Span(lane=str(t.tags["client"]), group="client", start=round(t.tags["asked"] - start, 4),
                 end=round(t.tags.get("answered", t.tags["asked"]) - start, 4),
                 outcome=str(t.tags.get("client_outcome", "retried")), label=f"try {t.tags['attempt']}",
                 ids=_ids(t)) for t in tasks if t.kind == "api" and "client" in t.tags]


def _append_latencies(tasks: list[Task]) -> list[float]:
    """Seconds from an append's first try to the try that was acknowledged."""
    first: dict[tuple[str, str], float] = {}
    found = []
    for task in sorted((t for t in tasks if t.kind == "api" and "client" in t.tags), key=lambda t: t.tags["asked"]):
        key = (task.tags["client"], task.tags.get("entry_id", ""))
        first.setdefault(key, task.tags["asked"])
        if task.tags.get("client_outcome") == "acknowledged":
            found.append(round(task.tags["answered"] - first[key], 4))
    return found


def _snapshot_lives(history: list[Call], start: float, now: float) -> list[Span]:
    """From the write that appended each Snapshot entry to the one that set its root."""
    spans = []
    for (log_id, segment, entry), (at, done) in sorted(snapshot_times(history).items(), key=lambda kv: kv[1][0]):
        where = f"{segment}/{entry}"
        spans.append(Span(lane=f"snapshot {log_id[:8]} {where}", group="snapshot", start=round(at - start, 4),
                          end=round((done if done is not None else now) - start, 4),
                          outcome="completed" if done is not None else "incomplete", label=f"snapshot {where}",
                          ids={"log_id": log_id, "segment": segment, "entry": entry}))
    return spans


def seeds_report(seeds: list[int], scenario: Scenario | None, *, command: str, title: str,
                 replay: Callable[[int], str], total: Meter | None = None,
                 only: frozenset[str] | None = None, rows: Iterable[SeedRow] = ()) -> Report:
    """A report drawing ``seeds`` (each run again, bit for bit); ``total`` is the whole campaign's meter and
    ``rows`` its every seed (:attr:`seglog_sim.campaign.Campaign.rows`), listed failing first, then by seed, each
    with its replay command."""
    runs = [run_data(seed, scenario, only=only, replay=replay(seed))[1] for seed in seeds]
    table = sorted((msgspec.structs.replace(row, replay=replay(row.seed)) for row in rows),
                   key=lambda row: (row.ok, row.seed))
    return Report(kind="simulate", title=title, command=command, created_at=time.time(), runs=runs, total=total,
                  seeds=table)
