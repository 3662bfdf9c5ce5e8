"""What a chaos run's log says: one JSON line per invocation, per snapshot job, per crash point reached.

The supervisor, its children and their worker processes all write to the run's log. An invocation's line is
written by the invoker when it ends, with the environment a mixed_version fault gave it; the lines the
handler wrote meanwhile carry the same ``request_id`` (and the job's ``log_id``, ``segment``, ``entry``), so
the two are joined here to tell which builds ran under two code versions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from seglog_awsmodel.faults import CHUNK_CELLS_ENV
from seglog_emulator.usage import Usage, add_usage

#: Job outcomes that show the invocation built (DESIGN §5 step 5); the others never reached the build.
BUILD_OUTCOMES: Final = frozenset({"completed", "handed_off", "taken_over"})
#: Crash points only a build reaches (after_root is skipped when step 1 finds the snapshot done).
BUILD_CRASH_POINTS: Final = frozenset({"mid_chunk", "after_root"})
#: The version label of an invocation that runs the function's own configuration.
OWN_VERSION: Final = "template"

CRASH_EVENT: Final = "crash point reached: killing this process"


@dataclass
class RunLog:
    """The tallies of one run's log.

    Attributes:
        mixed_version: ``invocations`` run as another code version, ``build_jobs`` of them that built, and
            ``builds``: snapshots that two versions built on (one started, another resumed or took over).
    """

    invocations: dict[str, dict[str, int]] = field(default_factory=dict)
    job_outcomes: dict[str, int] = field(default_factory=dict)
    crash_points_hit: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=dict)
    child_restarts: int = 0
    mixed_version: dict[str, int] = field(default_factory=dict)


def tally(records: Iterable[dict[str, Any]]) -> RunLog:
    """Tally a run's log lines (:func:`seglog_emulator.jsonlog.json_lines`)."""
    found = RunLog()
    invocations: dict[str, Counter[str]] = {}
    outcomes: Counter[str] = Counter()
    crashes: Counter[str] = Counter()
    versions: dict[str, str] = {}
    built: list[tuple[str, tuple[Any, Any, Any]]] = []
    for record in records:
        event = record.get("event")
        if event == "invocation":
            invocations.setdefault(record.get("function", "?"), Counter())[record.get("outcome", "?")] += 1
            add_usage(found.usage, record.get("usage"))
            chunk_cells = (record.get("environment") or {}).get(CHUNK_CELLS_ENV)
            if chunk_cells is not None:
                versions[str(record.get("request_id"))] = str(chunk_cells)
        elif event == "snapshot job":
            outcomes[record.get("outcome", "?")] += 1
            if record.get("outcome") in BUILD_OUTCOMES:
                built.append(_build(record))
        elif event == CRASH_EVENT:
            crashes[record.get("crash_point", "?")] += 1
            if record.get("crash_point") in BUILD_CRASH_POINTS:
                built.append(_build(record))
        elif event == "child exited: restarting":
            found.child_restarts += 1
    found.invocations = {f: dict(c) for f, c in sorted(invocations.items())}
    found.job_outcomes = dict(sorted(outcomes.items()))
    found.crash_points_hit = dict(sorted(crashes.items()))
    found.mixed_version = _mixed_versions(versions, built)
    return found


def _build(record: dict[str, Any]) -> tuple[str, tuple[Any, Any, Any]]:
    return str(record.get("request_id")), (record.get("log_id"), record.get("segment"), record.get("entry"))


def _mixed_versions(versions: dict[str, str], built: list[tuple[str, tuple[Any, Any, Any]]]) -> dict[str, int]:
    by_snapshot: dict[tuple[Any, Any, Any], set[str]] = {}
    for request_id, snapshot in built:
        by_snapshot.setdefault(snapshot, set()).add(versions.get(request_id, OWN_VERSION))
    return {"invocations": len(versions),
            "build_jobs": sum(request_id in versions for request_id, _ in built),
            "builds": sum(len(seen) > 1 for seen in by_snapshot.values())}
