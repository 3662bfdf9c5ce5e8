"""A chaos or demo run as the report draws it (:class:`seglog_report.model.RunData`), in wall-clock seconds.

Read from what the run left: its log (one JSON line per invocation with its end time and duration, per snapshot
job with its outcome, per crash point, per poller period), its fault log (every fault decided, with the time and
the process), the clients' tries (kept by :class:`.workload.ClientStats`) and the snapshot watcher's view of each
Snapshot entry's life. Invocations go on a lane per function worker process, tries on a lane per client, faults
on the lane of the process they hit. The same lines are metered (:class:`seglog_report.model.Meter`) for the cost
ledger: capacity and requests from each invocation's usage, the pollers' own requests from their "poller usage"
lines, and billed duration (init included, as Lambda bills it) at the memory each invocation line names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from seglog_core.violations import Violation
from seglog_emulator.jsonlog import json_lines
from seglog_plugin.chaos.runlog import CRASH_EVENT
from seglog_plugin.chaos.watch import SnapshotLife
from seglog_plugin.chaos.workload import ClientTry
from seglog_report import causes, events
from seglog_report.legend import CRASH_POINT
from seglog_report.metering import Metering
from seglog_report.model import Marker, Meter, RunData, Series, Span, outline

#: Where a violation's text names its log and entry: "I2 <uuid> at 0/5: ..." (:meth:`ChaosRunner._verify`).


def log_records(path: Path) -> list[dict[str, Any]]:
    """The run's log lines that have a time, with it as Unix time in ``_at`` (none when there is no log): read
    once, for both the run's tallies (:func:`.runlog.tally`) and its timeline."""
    if not path.is_file():
        return []
    with open(path, errors="replace") as lines:
        return [{**record, "_at": _epoch(record["timestamp"])} for record in json_lines(lines)
                if "timestamp" in record]


def run_data(*, run: int, seed: int, started_at: float, seconds: float, records: list[dict[str, Any]],
             fault_log: Path | None, tries: list[ClientTry], lives: list[SnapshotLife], violations: list[Violation],
             quiescence: float | None, series: Sequence[Series] = ()) -> RunData:
    """The run drawn from its log's ``records`` (:func:`log_records`) and the rest it left; ``series`` are what
    was sampled while it ran (queue depths), drawn under the timeline with each stream shard's iterator age."""
    spans, lane_of_pid, meter = _invocations(records, started_at)
    spans += _tries(tries, started_at)
    spans += [_life(life, started_at, started_at + seconds) for life in lives]
    markers = _markers(records, _faults(fault_log), lane_of_pid, started_at)
    meter.appends = sum(1 for t in tries if t.acknowledged)
    meter.api_requests = len(tries)
    found = outline(violations, spans, markers, link="request_id")
    latencies = {"append": _append_latencies(tries),
                 "snapshot": [round(s.end - s.start, 3) for s in spans if s.group == "snapshot"
                              and s.outcome == "completed"],
                 "stream_hop": _stream_hops(records),
                 "quiescence": [quiescence] if quiescence is not None else []}
    return causes.connect(RunData(kind="chaos", title="chaos run", run=run, seed=seed, started_at=started_at,
                                  seconds=seconds, violations=found, spans=spans, markers=markers, meter=meter,
                                  latencies={k: v for k, v in latencies.items() if v},
                                  series=[*_iterator_ages(records, started_at), *series]))


def _epoch(stamp: Any) -> float:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _invocations(lines: list[dict[str, Any]], t0: float) -> tuple[list[Span], dict[int, str], Meter]:
    # The lines a handler wrote carry its request id, and the log, segment and entry it worked on.
    jobs: dict[str, list[dict[str, Any]]] = {}
    context: dict[str, dict[str, Any]] = {}
    acts: dict[str, dict[str, list[str]]] = {}
    for record in lines:
        request_id = record.get("request_id")
        if not request_id or record.get("event") == "invocation":
            continue
        if record.get("event") == "snapshot job":
            jobs.setdefault(request_id, []).append(record)
        for act in _acts(record):
            done = acts.setdefault(request_id, {}).setdefault(act, [])
            k = causes.key(record.get("log_id"), record.get("segment"), record.get("entry"))
            if k not in done:
                done.append(k)
        into = context.setdefault(request_id, {})
        if record.get("event") == "snapshot job":  # its own job's snapshot, not one it helped first
            into.update({k: v for k, v in events.ids(record).items() if k != "pid"})
        else:
            into.update({k: v for k, v in events.ids(record).items() if k not in into and k != "pid"})
    spans: list[Span] = []
    lane_of_pid: dict[int, str] = {}
    metering = Metering()
    for record in lines:
        event = record.get("event")
        if event == "poller usage":
            metering.poller(record)
            continue
        if event != "invocation":
            continue
        function = str(record.get("function", "?"))
        lane = events.function_lane(function, int(record.get("pid") or 0))
        lane_of_pid[int(record.get("pid") or 0)] = lane
        duration = float(record.get("duration_ms", 0.0)) / 1000
        end = record["_at"] - t0
        outcome = str(record.get("outcome", "?"))
        ran = jobs.get(str(record.get("request_id")), [])
        if outcome == "success" and ran:
            outcome = str(ran[-1].get("outcome", outcome))
        ids = events.ids(record)
        ids.update({k: v for k, v in context.get(str(record.get("request_id")), {}).items() if k not in ids})
        extra = "cold start" if record.get("cold_start") else ""
        if record.get("error_type"):
            extra = f"{record['error_type']}: {str(record.get('error_message', ''))[:160]}"
        spans.append(Span(lane=lane, group="function", start=round(end - duration, 4), end=round(end, 4),
                          outcome=outcome, label=f"{function} {extra}".strip(), ids=ids,
                          acts=acts.get(str(record.get("request_id")), {})))
        metering.invocation(record)
    return spans, lane_of_pid, metering.meter


def _acts(record: dict[str, Any]) -> list[str]:
    """What a handler's log line says it did to a Snapshot entry (:data:`seglog_report.causes.ACTS`): a worker's
    line on its own job (``snapshot job``) or on an earlier snapshot it built first (``snapshot helped``)."""
    event = record.get("event")
    if "log_id" not in record or "entry" not in record:
        return []
    if event == "snapshot entry appended":
        return [causes.APPENDED]
    if event == "routed" and record.get("enqueued"):
        return [causes.ROUTED]
    if event in ("snapshot job", "snapshot helped"):
        return [causes.WORKED, causes.COMPLETED] if record.get("outcome") == "completed" else [causes.WORKED]
    return []


def _tries(tries: list[ClientTry], t0: float) -> list[Span]:
    # api_request_id: the answer's apigw-requestid, which the API invocation that served the try logged too.
    return [Span(lane=events.client_lane(t.client), group="client", start=round(t.start - t0, 4),
                 end=round(t.end - t0, 4), outcome=t.outcome,
                 label=f"{t.method} {t.path} try {t.number}: {t.status or t.error or 'no answer'}",
                 ids={k: v for k, v in (("log_id", t.log_id), ("attempt", t.number),
                                        ("api_request_id", t.api_request_id)) if v}) for t in tries]


def _iterator_ages(lines: list[dict[str, Any]], t0: float) -> list[Series]:
    """Each stream shard's iterator age over the run, in seconds, from the stream poller's "poller usage" lines
    (``shards: {shard_id: iterator_age_ms}``, one per period: :class:`seglog_emulator.pollers.usage.ShardAges`)."""
    points: dict[str, list[tuple[float, float]]] = {}
    for record in lines:
        shards = record.get("shards") if record.get("event") == "poller usage" else None
        if not isinstance(shards, dict):
            continue
        for shard, age in shards.items():
            if isinstance(age, int | float) and not isinstance(age, bool):
                points.setdefault(str(shard), []).append((round(record["_at"] - t0, 4), age / 1000))
    names = _short_names(sorted(points))
    return [Series(name=f"iterator age {names[shard]}", unit="s", points=points[shard]) for shard in sorted(points)]


def _short_names(shards: list[str]) -> dict[str, str]:
    """Shard ids by the part that tells them apart ("shardId-00000001700000000000-0a1b2c3d" -> "0a1b2c3d"), or
    whole where that part repeats."""
    short = {shard: shard.rsplit("-", 1)[-1] for shard in shards}
    return short if len(set(short.values())) == len(short) else {shard: shard for shard in shards}


def _life(life: SnapshotLife, t0: float, t_end: float) -> Span:
    end = life.completed if life.completed is not None else t_end
    return Span(lane=f"snapshot {str(life.log_id)[:8]} {life.segment}/{life.entry}", group="snapshot",
                start=round(life.appeared - t0, 4),
                end=round(end - t0, 4), outcome="completed" if life.completed is not None else "incomplete",
                label=f"snapshot {life.segment}/{life.entry}",
                ids={"log_id": str(life.log_id), "segment": life.segment, "entry": life.entry})


def _faults(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.is_file():
        return []
    return [record for record in json_lines(path.read_text(errors="replace").splitlines()) if "at" in record]


def _markers(lines: list[dict[str, Any]], faults: list[dict[str, Any]], lane_of_pid: dict[int, str],
             t0: float) -> list[Marker]:
    # The fault log has every decision with its process and time; the run log adds the request it hit.
    requests = {str(r.get("key")): r for r in lines if r.get("event") == "fault injected" and r.get("key")}
    markers = []
    for fault in faults:
        pid = int(fault.get("pid") or 0)
        lane = lane_of_pid.get(pid) or f"{fault.get('process', '?')} (pid {pid})"
        group = "function" if pid in lane_of_pid else "operator"
        ids = {"key": str(fault.get("key", "")), "pid": pid, **events.ids(requests.get(str(fault.get("key")), {}))}
        params = fault.get("params") or {}
        markers.append(Marker(lane=lane, group=group, at=round(float(fault["at"]) - t0, 4),
                              kind=str(fault.get("kind", "?")),
                              label=" ".join(f"{k}={v}" for k, v in params.items()), ids=ids))
    for record in lines:
        if record.get("event") == CRASH_EVENT:
            pid = int(record.get("pid") or 0)
            markers.append(Marker(lane=lane_of_pid.get(pid, f"pid {pid}"), group="function",
                                  at=round(record["_at"] - t0, 4), kind=CRASH_POINT,
                                  label=f"{record.get('crash_point')}: the worker kills itself here",
                                  ids=events.ids(record)))
    return markers


def _append_latencies(tries: Iterable[ClientTry]) -> list[float]:
    """From a request's first try to the try that was acknowledged, per client."""
    first: dict[str, float] = {}
    found = []
    for t in sorted(tries, key=lambda t: t.start):
        if t.number == 1:
            first[t.client] = t.start
        if t.acknowledged:
            found.append(round(t.end - first.get(t.client, t.start), 4))
    return found


def _stream_hops(lines: list[dict[str, Any]]) -> list[float]:
    """From a Snapshot entry's append to the stream router's line about it."""
    appended = {(r.get("log_id"), r.get("segment"), r.get("entry")): r["_at"] for r in lines
                if r.get("event") == "snapshot entry appended"}
    hops = {}
    for r in lines:
        key = (r.get("log_id"), r.get("segment"), r.get("entry"))
        if r.get("event") == "routed" and key in appended and key not in hops:
            hops[key] = round(r["_at"] - appended[key], 4)
    return sorted(v for v in hops.values() if v >= 0)
