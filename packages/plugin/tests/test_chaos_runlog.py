"""Reading a chaos run's log: invocations, job outcomes, crash points, and which builds two code versions
(mixed_version) worked on, joined by request id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seglog_emulator.jsonlog import json_lines
from seglog_plugin.chaos.runlog import RunLog, tally
from seglog_plugin.chaos.timeline import log_records

LOG = "3f0c6f7e-1111-4d6b-9a58-000000000001"


def invocation(request_id: str, outcome: str = "success", chunk_cells: str | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {"event": "invocation", "function": "SnapshotWorkerFunction", "request_id": request_id,
                            "outcome": outcome, "usage": {"sqs": {"requests": 2}}}
    if chunk_cells is not None:
        line["environment"] = {"SEGLOG_CHUNK_CELLS": chunk_cells}
    return line


def job(request_id: str, entry: int, outcome: str) -> dict[str, Any]:
    return {"event": "snapshot job", "request_id": request_id, "log_id": LOG, "segment": 0, "entry": entry,
            "outcome": outcome}


def crash(request_id: str, entry: int, point: str) -> dict[str, Any]:
    return {"event": "crash point reached: killing this process", "request_id": request_id, "log_id": LOG,
            "segment": 0, "entry": entry, "crash_point": point}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    # As in a real log: a worker's lines come before its invocation's line, and some lines are not JSON.
    path.write_text("starting\n" + "".join(json.dumps(r) + "\n" for r in records) + '{"cut off\n')
    return path


def test_a_build_started_by_one_version_and_finished_by_another_is_a_mixed_version_build(tmp_path: Path) -> None:
    """Snapshot 0/10: started by a worker with 7-cell chunks that died mid-chunk, completed by the function's
    own version. Snapshot 0/20: built by the other version alone (a build job, not a mixed build). Snapshot
    0/30: the other version only deferred (no build). If the join by request id were wrong, the counts would
    be too."""
    path = write(tmp_path / "emulator.log", [
        crash("r1", 10, "mid_chunk"), invocation("r1", "crashed", chunk_cells="7"),
        job("r2", 10, "completed"), invocation("r2"),
        job("r3", 20, "completed"), invocation("r3", chunk_cells="12"),
        job("r4", 30, "deferred"), invocation("r4", chunk_cells="12"),
        crash("r5", 30, "after_claim"), invocation("r5", "crashed"),
        {"event": "child exited: restarting", "child": "poller"},
    ])

    found = read_run_log(path)

    assert {"invocations": 3, "build_jobs": 2, "builds": 1} == found.mixed_version
    assert {"completed": 2, "deferred": 1} == found.job_outcomes
    assert {"after_claim": 1, "mid_chunk": 1} == found.crash_points_hit
    assert {"SnapshotWorkerFunction": {"crashed": 2, "success": 3}} == found.invocations
    assert ({"sqs": {"requests": 10}}, 1) == (found.usage, found.child_restarts)


def test_two_other_versions_on_one_build_count_as_mixed(tmp_path: Path) -> None:
    """A handoff under 5-cell chunks resumed under 9-cell chunks (the checkpoint keeps 5): two versions."""
    path = write(tmp_path / "emulator.log", [
        job("a", 10, "handed_off"), invocation("a", chunk_cells="5"),
        job("b", 10, "completed"), invocation("b", chunk_cells="9"),
    ])

    assert {"invocations": 2, "build_jobs": 2, "builds": 1} == read_run_log(path).mixed_version


def test_a_missing_log_reads_as_nothing(tmp_path: Path) -> None:
    """A run that never started its emulator has no log: empty tallies, not an error."""
    found = tally(log_records(tmp_path / "absent.log"))

    assert ({}, {}) == (found.invocations, found.job_outcomes)
    assert {"invocations": 0, "build_jobs": 0, "builds": 0} == found.mixed_version


def read_run_log(path: Path) -> RunLog:
    with open(path) as lines:
        return tally(json_lines(lines))
