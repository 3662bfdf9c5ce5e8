"""The demo's live view counts a function's invocations over every process its emulator child has had (issue 21:
it said "ApiFunction: 0 (0 so far)" after 125 invocations, the count of the process a late supervisor_restart
had just started)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from seglog_cli.demo import InvocationCounts, live_view
from seglog_emulator.child import status_file
from seglog_plugin.chaos import RunProgress
from seglog_plugin.chaos.workload import ClientStats


def report(state: Path, child: str, pid: int, invocations: int, in_flight: int = 0) -> None:
    """What the child's process writes four times a second (seglog_emulator.child)."""
    path = status_file(state, child)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"child": child, "pid": pid, "function": child.partition(":")[2].split(".")[0],
                                "in_flight": in_flight, "invocations": invocations}))


def frame(progress: RunProgress, invoked: InvocationCounts) -> str:
    out = Console(width=200, record=True, file=None, force_terminal=False)
    with out.capture() as captured:
        out.print(live_view(progress, invoked))
    return captured.get()


def test_invocations_so_far_survive_a_restart_of_the_child_that_counted_them(tmp_path: Path) -> None:
    progress = RunProgress(phase="clients editing", stats=ClientStats(), watcher=None, runtime=None,
                           state_dir=tmp_path, planned_edits=120)
    invoked = InvocationCounts()
    report(tmp_path, "gateway:ApiFunction", pid=100, invocations=60, in_flight=2)
    report(tmp_path, "queue:SnapshotWorkerFunction.Jobs", pid=101, invocations=7)
    assert "ApiFunction 60 so far, 2 in flight" in frame(progress, invoked)

    report(tmp_path, "gateway:ApiFunction", pid=100, invocations=125)
    frame(progress, invoked)
    # A supervisor_restart after the clients are done: every child is a new process, and the API gets no more.
    progress.phase = "faults off: waiting for quiescence"
    report(tmp_path, "gateway:ApiFunction", pid=200, invocations=0)
    report(tmp_path, "queue:SnapshotWorkerFunction.Jobs", pid=201, invocations=2, in_flight=1)
    shown = frame(progress, invoked)
    assert "ApiFunction 125 so far, 0 in flight" in shown
    assert "SnapshotWorkerFunction 9 so far, 1 in flight" in shown
    # The new processes count on from there; a frame read twice counts nothing twice.
    report(tmp_path, "gateway:ApiFunction", pid=200, invocations=3)
    frame(progress, invoked)
    assert "ApiFunction 128 so far" in frame(progress, invoked)
