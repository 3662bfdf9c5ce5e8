"""Liveness under faults, not only after them: the emulator as the README's fault command runs it, under a writer
as fast as it is answered, keeps completing a busy sheet's snapshots while every fault kind fires (issue 34).

`seglog emulate --faults all --rate 0.05 --seed 7 --parameter SnapshotEvery=10`: the template's defaults otherwise,
so a job lost before its claim (a poller restarted holding it, a function timeout, a crash after the pending
upsert) comes back only after the queue's 360 s visibility timeout, as on AWS. Before issue 34 one such job froze
the sheet's snapshots for minutes (the latest completed one stayed at 0/31 from 2 min 32 s to the end of a 4
minute run): every later job only waited and deferred. Now a later snapshot's job builds the lost one itself
(seglog_core.pipeline.worker, step 3), so the latest completed snapshot moves in every 90-second window.
``bench.bench_stall`` prints the stall lengths of the same run.

Also found by trying the README's own command (issue 19): the stream poller's poller_restart decision was keyed on
the batch's first sequence number and its attempt, which restarts at 1 in the new process, so the restart fired
again in every new process and the snapshots froze. Decisions keyed on process-local counters now also carry the
process's incarnation (``FaultSchedule.incarnation``): no restart site repeats.

Several minutes long, so not part of the default run: ``./dev test -m liveness`` (CI runs it after the suite).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog_awsmodel.template import default_template_path
from seglog_cli.emulator_commands import fault_plan
from seglog_client import SeglogClient
from seglog_emulator.faults.runtime import FaultRuntime, read_injected
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor_process import SupervisorProcess
from seglog_plugin.chaos.progress import FastWriter, SnapshotProgress, stalls, still_windows
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack import local

pytestmark = [pytest.mark.stack, pytest.mark.liveness]

#: How long faults fire under the writer, and the windows each of which must see a snapshot complete.
RUN_SECONDS = 240.0
WINDOW_SECONDS = 90.0
#: The README's fault command's template parameters.
PARAMETERS = {"SnapshotEvery": 10}


@pytest.fixture(scope="module")
def readme_deployment(stacks: object) -> Iterator[local.LocalDeployment]:
    """template.yaml provisioned with the README command's parameters on the session's dynamodb-local stack."""
    base = stacks.deployment("dynamodb-local")  # type: ignore[attr-defined]
    stack = f"live-{uuid.uuid4().hex[:6]}"
    yield local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack,
                          parameters=dict(PARAMETERS))
    local.deprovision(base.endpoints, region=base.region, stack_name=stack)


def test_a_busy_sheets_snapshots_complete_in_every_window_while_every_fault_kind_fires(
        readme_deployment: local.LocalDeployment, tmp_path: Path, lambda_artifact: Path) -> None:
    plan = fault_plan("all", None, 0.05, 7)
    assert plan is not None
    runtime = FaultRuntime(plan, tmp_path / "state" / "faults")
    runtime.start()
    stack = resources_of(readme_deployment).entries_table.rsplit("-", 1)[0]
    settings = EmulatorSettings(deployment=readme_deployment, template=default_template_path(), stack=stack,
                                state_dir=tmp_path / "state", parameters=dict(PARAMETERS), artifact=lambda_artifact)
    try:
        with SupervisorProcess(settings, runtime, tmp_path / "emulator.log") as emulator:
            api = SeglogClient(emulator.api_url, credentials=settings.api_credentials[0])
            log_id = api.create().log_id
            writer = FastWriter(api, log_id).start()
            progress = SnapshotProgress(backend_of(readme_deployment).store, log_id).start()
            started, wall = time.monotonic(), time.time()
            try:
                time.sleep(RUN_SECONDS)
            finally:
                writer.stop()
                progress.stop()
                faults = read_injected(runtime.directory)
    finally:
        runtime.stop()
    span = time.monotonic() - started
    windows = int(span // WINDOW_SECONDS)
    fault_times = [f["at"] - wall for f in faults]
    shown = json.dumps({"appends": writer.acknowledged, "given_up": writer.given_up, "errors": writer.errors[:5],
                        "stalls": [round(s, 1) for s in stalls(progress.samples)],
                        "last": progress.samples[-1].position if progress.samples else None,
                        "faults": runtime.counts()}, indent=1)
    assert windows >= 2 and writer.acknowledged > 1_000, f"the writer must keep snapshots falling due:\n{shown}"
    assert all(any(w * WINDOW_SECONDS <= t < (w + 1) * WINDOW_SECONDS for t in fault_times)
               for w in range(windows)), f"faults must fire in every window:\n{shown}"
    assert [] == still_windows(progress.samples, WINDOW_SECONDS), f"a window completed no snapshot:\n{shown}"
    # No restart site repeats: a restarted poller draws new decisions.
    restarts = [f for f in faults if f["kind"] == "poller_restart"]
    assert len({f["key"] for f in restarts}) == len(restarts), restarts
