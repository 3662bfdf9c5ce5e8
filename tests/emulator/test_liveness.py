"""Liveness under faults, not only after them (issue 19, point 4): the emulator as `seglog emulate --faults all
--rate 0.05 --seed 7` runs it, under a steady writer for minutes, keeps completing snapshots while the faults
fire.

Found by trying the README's own command: the stream poller's poller_restart decision was keyed on the batch's
first sequence number and its attempt, which restarts at 1 in the new process, so the restart fired again in
every new process — 17 restarts in 4 minutes on one 6-record batch, snapshots frozen. `seglog chaos` never saw
it, since it stops faults before it waits. Decisions keyed on process-local counters now also carry the
process's incarnation (``FaultSchedule.incarnation``).

Several minutes long, so not part of the default run: ``./dev test -m liveness`` (CI runs it after the suite).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from seglog_cli.emulator_commands import fault_plan
from seglog_client import SeglogClient, set_cell
from seglog_emulator.child import read_statuses
from seglog_emulator.faults.runtime import FaultRuntime, read_injected
from seglog_emulator.settings import ENV_VAR
from seglog_emulator.supervisor import STATE_FILE
from seglog_stack import local

from .test_supervisor import settings_for, wait_for

pytestmark = [pytest.mark.stack, pytest.mark.liveness]

#: How long faults fire under the writer, and the windows each of which must complete a snapshot.
RUN_SECONDS = 180.0
WINDOW_SECONDS = 45.0
#: The writer's pace: one cell every this many seconds (SnapshotEvery is 10 on the chaos stack).
WRITE_EVERY = 0.3


def test_snapshots_keep_completing_while_every_fault_kind_fires(chaos_deployment: local.LocalDeployment,
                                                                tmp_path: Path, lambda_artifact: Path) -> None:
    """The supervisor runs as `seglog emulate` runs it (its own process, restarting the children faults stop),
    with the plan `--faults all --rate 0.05 --seed 7` makes."""
    plan = fault_plan("all", None, 0.05, 7)
    assert plan is not None
    runtime = FaultRuntime(plan, tmp_path / "state" / "faults")
    runtime.start()
    settings = settings_for(chaos_deployment, tmp_path / "state", lambda_artifact)
    env = {**os.environ, **chaos_deployment.env(), ENV_VAR: settings.to_json(), **runtime.env()}
    backend = chaos_deployment.backend()
    stop = threading.Event()
    written: list[int] = []
    windows: list[dict[str, Any]] = []
    with (tmp_path / "emulator.log").open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "seglog_emulator.supervisor"], env=env,
                                stdout=sink, stderr=sink)
        try:
            wait_for(lambda: (tmp_path / "state" / STATE_FILE).is_file(), 60, "the supervisor to start")
            state = json.loads((tmp_path / "state" / STATE_FILE).read_text())
            wait_for(lambda: len(read_statuses(tmp_path / "state")) == len(state["children"]), 60,
                     "every child to run")
            api = SeglogClient(state["api_url"], credentials=settings.api_credentials[0])
            log_id = api.create().log_id

            def write() -> None:
                while not stop.is_set():
                    try:
                        api.append(log_id, set_cell(f"A{len(written) % 50 + 1}", len(written)))
                        written.append(1)
                    except Exception:  # a request the client gave up on: the next edit goes on
                        pass
                    stop.wait(WRITE_EVERY)

            threading.Thread(target=write, daemon=True).start()
            started = time.monotonic()
            completed_before = faults_before = 0
            while time.monotonic() - started < RUN_SECONDS:
                time.sleep(WINDOW_SECONDS)
                snaps = [e for e in backend.reader().all_entries(log_id) if e.type.value == "snap"]
                completed = sum(1 for e in snaps if e.snapshot_root)
                injected = len(read_injected(runtime.directory))
                windows.append({"entries": len(written), "snapshots": len(snaps), "completed": completed,
                                "new_completed": completed - completed_before, "faults": injected - faults_before})
                completed_before, faults_before = completed, injected
        finally:
            stop.set()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
    restarts = [f for f in read_injected(runtime.directory) if f["kind"] == "poller_restart"]
    shown = json.dumps({"windows": windows, "faults": runtime.counts()}, indent=1)
    assert all(w["faults"] > 0 for w in windows), f"faults must fire in every window:\n{shown}"
    assert all(w["new_completed"] > 0 for w in windows), f"a window completed no snapshot:\n{shown}"
    # No restart site repeats: a restarted poller draws new decisions.
    assert len({f["key"] for f in restarts}) == len(restarts), restarts
