"""The supervisor end to end, on the real local stack: the template's functions behind a gateway and pollers
in child processes, a crashed child restarted, a clean drain on SIGTERM (issue 4, point 1), and what
`seglog emulate status` shows of it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import signed_http
from seglog_awsmodel.template import default_template_path
from seglog_cli.main import cli
from seglog_client import SeglogClient, set_cell
from seglog_core.verify import verify_log
from seglog_emulator.child import read_statuses
from seglog_emulator.settings import ENV_VAR, EmulatorSettings
from seglog_emulator.supervisor import STATE_FILE, Supervisor
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.resources import backend_of, local_env, resources_of
from seglog_stack import local

pytestmark = pytest.mark.stack


def settings_for(deployment: local.LocalDeployment, state: Path, artifact: Path) -> EmulatorSettings:
    stack = resources_of(deployment).entries_table.rsplit("-", 1)[0]
    return EmulatorSettings(deployment=deployment, template=default_template_path(), stack=stack, state_dir=state,
                            parameters=dict(CHAOS_PARAMETERS), artifact=artifact)


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def edit_and_wait(supervisor: Supervisor, deployment: local.LocalDeployment,
                  edits: int) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """Create a sheet through the gateway, append ``edits`` cells, wait until every snapshot is complete."""
    api = SeglogClient(supervisor.api_url, credentials=supervisor.settings.api_credentials[0])
    created = api.create()
    assert created.created
    log_id = created.log_id
    ids = [api.append(log_id, set_cell(f"A{n + 1}", n)).entry_id for n in range(edits)]
    backend = backend_of(deployment)

    def snapshots_done() -> bool:
        snaps = [e for e in backend.reader().all_entries(log_id) if e.type.value == "snap"]
        return len(snaps) > 1 and all(e.snapshot_root for e in snaps) and not backend.pending.for_log(log_id)

    wait_for(snapshots_done, 60, "the pipeline to complete every snapshot")
    report = verify_log(backend.store, log_id, acknowledged=ids, blobs=backend.blobs, pending=backend.pending,
                        quiescent=True)
    assert report.ok, report.violations
    assert report.completed >= 2
    return log_id, ids


def test_supervisor_runs_the_template_functions_behind_one_gateway(chaos_deployment: local.LocalDeployment,
                                                                     tmp_path: Path, lambda_artifact: Path) -> None:
    """Gateway + stream poller + queue poller + the retention schedule, each its own process; a sheet edited
    through the API gets its snapshots built by the deployed handlers; one log line per invocation names
    function, source, outcome."""
    supervisor = Supervisor(settings_for(chaos_deployment, tmp_path / "state", lambda_artifact))
    assert sorted(supervisor.children) == ["gateway:HttpApi", "queue:SnapshotWorkerFunction.Jobs",
                                           "schedule:RetentionFunction.Retention",
                                           "schedule:SnapshotSweepFunction.Sweep",
                                           "stream:StreamRouterFunction.Entries"]
    supervisor.start()
    try:
        supervisor.wait_ready()
        pids = {c.proc.pid for c in supervisor.children.values() if c.proc}
        assert len(pids) == 5 and os.getpid() not in pids
        edit_and_wait(supervisor, chaos_deployment, 21)
        statuses = {s["function"]: s for s in read_statuses(tmp_path / "state")}
        assert statuses["SnapshotWorkerFunction"]["invocations"] >= 2
        assert statuses["StreamRouterFunction"]["invocations"] >= 1
        assert statuses["ApiFunction"]["invocations"] >= 22
    finally:
        supervisor.stop()
    assert not (tmp_path / "state" / STATE_FILE).exists()


def test_supervisor_restarts_a_crashed_child_and_the_stream_resumes_from_its_checkpoint(
        chaos_deployment: local.LocalDeployment, tmp_path: Path, lambda_artifact: Path) -> None:
    """kill -9 of the stream poller: the supervisor starts it again, and records written while it was down are
    routed from the persisted checkpoint (nothing skipped, DESIGN §9.1)."""
    supervisor = Supervisor(settings_for(chaos_deployment, tmp_path / "state", lambda_artifact))
    supervisor.start()
    try:
        supervisor.wait_ready()
        child = supervisor.children["stream:StreamRouterFunction.Entries"]
        assert child.proc is not None
        old = child.proc.pid
        supervisor.restart_child(child.name)

        def restarted() -> bool:
            supervisor.check()
            return child.proc is not None and child.proc.pid != old

        wait_for(restarted, 30, "the stream poller to be restarted")
        assert child.exits == [-signal.SIGKILL]
        supervisor.wait_ready()
        edit_and_wait(supervisor, chaos_deployment, 11)
        checkpoints = json.loads((tmp_path / "state" / "checkpoints" /
                                  "StreamRouterFunction.Entries.json").read_text())
        assert any(k != "__finished__" for k in checkpoints)
    finally:
        supervisor.stop()


def status_command(state: Path) -> Result:
    return CliRunner().invoke(cli, ["emulate", "status", "--json", "--state-dir", str(state)])


def test_supervisor_drains_on_sigterm_and_leaves_no_process(chaos_deployment: local.LocalDeployment,
                                                            tmp_path: Path, lambda_artifact: Path) -> None:
    """SIGTERM: every child finishes what is in flight and exits; the supervisor exits 0; no worker is left."""
    settings = settings_for(chaos_deployment, tmp_path / "state", lambda_artifact)
    env = {**os.environ, **local_env(chaos_deployment), ENV_VAR: settings.to_json()}
    proc = subprocess.Popen([sys.executable, "-m", "seglog_emulator.supervisor"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (tmp_path / "state" / STATE_FILE).is_file(), 30, "the supervisor to start")
        children = json.loads((tmp_path / "state" / STATE_FILE).read_text())["children"]
        wait_for(lambda: len(read_statuses(tmp_path / "state")) == len(children), 30, "every child to run")
        # `seglog emulate status` sees it up, with every child by its pid (exit 0 only when all report)
        shown = status_command(tmp_path / "state")
        assert (0, "running", children) == (
            shown.exit_code, json.loads(shown.output)["state"],
            {c["name"]: c["pid"] for c in json.loads(shown.output)["children"]}), shown.output
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    shown = status_command(tmp_path / "state")
    assert (1, "not running") == (shown.exit_code, json.loads(shown.output)["state"])
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    stopped = {line.get("child") for line in lines if line.get("event") == "child stopped"}
    assert stopped == set(children)
    for pid in children.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_artifact_missing_a_dependency_fails_behind_the_gateway_as_on_aws(
        chaos_deployment: local.LocalDeployment, tmp_path: Path, lambda_code: Path) -> None:
    """The emulator runs the artifact, not the source tree (DESIGN §10.1): given an unpacked artifact without
    aws_lambda_powertools (``--artifact DIR``), the API function's Init fails with Runtime.ImportModuleError and
    the gateway answers what API Gateway answers for a failed Lambda integration, 500 Internal Server Error,
    while the development virtualenv has the package all along."""
    broken = tmp_path / "task"
    shutil.copytree(lambda_code, broken)
    shutil.rmtree(broken / "aws_lambda_powertools")
    output = tmp_path / "emulator.log"
    with output.open("w") as sink:
        supervisor = Supervisor(settings_for(chaos_deployment, tmp_path / "state", broken), output=sink)
        supervisor.start()
        try:
            supervisor.wait_ready()
            failed = signed_http.signed("POST", f"{supervisor.api_url}/sheets", b"{}")
        finally:
            supervisor.stop()
    assert (500, b'{"message":"Internal Server Error"}') == (failed.status, failed.body)
    lines = [json.loads(line) for line in output.read_text().splitlines() if line.startswith("{")]
    reports = [line for line in lines if line.get("event") == "INIT_REPORT"]
    api = [r for r in reports if r["function"] == "ApiFunction"]
    assert api and {"Runtime.ImportModuleError"} == {r["error_type"] for r in reports}  # the pollers' too
    assert ("Unable to import module 'seglog_services.api': No module named 'aws_lambda_powertools'"
            == api[0]["error_message"])
