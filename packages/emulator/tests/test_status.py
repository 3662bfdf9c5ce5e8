"""`seglog emulate status` reads only the state directory: whether the supervisor and its children run, what
they last reported, the stream checkpoints and the faults so far. Real processes stand in for the children,
so "running", "dead" and "not reporting" come from the operating system, not from flags in a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog_emulator.checkpoints import CheckpointStore
from seglog_emulator.child import status_file
from seglog_emulator.faults.runtime import LOG_FILE
from seglog_emulator.status import STALE_SECONDS, read_status
from seglog_emulator.supervisor import STATE_FILE


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_state(state: Path, children: dict[str, int], *, pid: int | None = None) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / STATE_FILE).write_text(json.dumps({"pid": pid or os.getpid(), "api_url": "http://127.0.0.1:4599",
                                                "children": children, "seed": 7}))


def report(state: Path, name: str, pid: int, *, in_flight: int = 0, invocations: int = 0) -> Path:
    path = status_file(state, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"child": name, "pid": pid, "function": name.split(":")[1].split(".")[0],
                                "in_flight": in_flight, "invocations": invocations}))
    return path


def test_no_state_file_is_not_running_and_says_how_to_start(tmp_path: Path) -> None:
    found = read_status(tmp_path / "nothing")
    assert ("not running", False, []) == (found.state, found.healthy, found.children)
    assert "`seglog emulate` starts it" in found.render()


def test_running_children_report_what_they_do(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    write_state(tmp_path, {"gateway:ApiFunction": sleeper.pid, "queue:SnapshotWorkerFunction.Jobs": sleeper.pid})
    report(tmp_path, "gateway:ApiFunction", sleeper.pid, in_flight=2, invocations=40)
    report(tmp_path, "queue:SnapshotWorkerFunction.Jobs", sleeper.pid, invocations=3)
    found = read_status(tmp_path)
    assert ("running", True, "http://127.0.0.1:4599", 7) == (found.state, found.healthy, found.api_url, found.seed)
    gateway = found.children[0]
    assert ("gateway:ApiFunction", "ApiFunction", 2, 40, True) == (
        gateway.name, gateway.function, gateway.in_flight, gateway.invocations, gateway.running)
    text = found.render()
    assert "in flight  2" in text and "invocations     40" in text
    assert json.loads(json.dumps(found.to_dict()))["healthy"] is True


def test_a_dead_child_or_a_silent_one_is_unhealthy(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    gone = dead_pid()
    write_state(tmp_path, {"gateway:ApiFunction": sleeper.pid, "stream:StreamRouterFunction.Entries": gone})
    report(tmp_path, "gateway:ApiFunction", sleeper.pid)
    report(tmp_path, "stream:StreamRouterFunction.Entries", gone)
    found = read_status(tmp_path)
    assert (True, False) == (found.children[0].running, found.children[1].running)
    assert not found.healthy and "DEAD" in found.render()
    # alive, but its last report is old: it is stuck, which is as bad as dead for a user waiting on it
    report(tmp_path, "stream:StreamRouterFunction.Entries", sleeper.pid)
    write_state(tmp_path, {"gateway:ApiFunction": sleeper.pid, "stream:StreamRouterFunction.Entries": sleeper.pid})
    found = read_status(tmp_path, now=time.time() + STALE_SECONDS + 1)
    assert all(c.running for c in found.children) and not found.healthy
    assert "NOT REPORTING" in found.render()


def test_a_report_from_an_earlier_process_of_the_child_is_not_its_own(tmp_path: Path,
                                                                       sleeper: subprocess.Popen[bytes]) -> None:
    """A restarted child's old status file (another pid) must not pass for the new process's report."""
    write_state(tmp_path, {"gateway:ApiFunction": sleeper.pid})
    report(tmp_path, "gateway:ApiFunction", dead_pid(), invocations=99)
    child = read_status(tmp_path).children[0]
    assert (None, 0) == (child.reported_ago, child.invocations)


def test_a_killed_supervisor_is_dead_and_checkpoints_and_faults_are_shown(tmp_path: Path) -> None:
    write_state(tmp_path, {"gateway:ApiFunction": dead_pid()}, pid=dead_pid())
    store = CheckpointStore(tmp_path / "checkpoints" / "StreamRouterFunction.Entries.json")
    store.put("shardId-1", "100")
    store.put("shardId-2", "200")
    store.finish("shardId-1")
    (tmp_path / "faults").mkdir()
    lines = [{"kind": "worker_crash"}, {"kind": "worker_crash"}, {"kind": "reorder"}]
    (tmp_path / "faults" / LOG_FILE).write_text("".join(json.dumps(f) + "\n" for f in lines) + '{"kind": "re')
    found = read_status(tmp_path)
    assert ("dead", False) == (found.state, found.healthy)
    assert {"StreamRouterFunction.Entries": {"shardId-1": "finished", "shardId-2": "200"}} == found.checkpoints
    assert {"worker_crash": 2, "reorder": 1} == found.faults  # the line still being written is left out
    assert "2 shards (1 read to their end)" in found.render()


