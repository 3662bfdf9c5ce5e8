"""The snapshot sweep on its schedule, end to end on the local stack: template.yaml's SnapshotSweepFunction with its
Schedule event, run by the emulator (IAM enforced from its policy: Scan on the pending table, SendMessage to the
queue) on a scaled clock. A pending item left idle past the longest hide — here a completed snapshot's, left by a
worker that died before deleting it — gets a new job, and the worker finishes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.test_retention_schedule import log_lines, own_stack, scaled
from emulator.test_supervisor import wait_for
from seglog_aws.clients import client, local_session
from seglog_aws.dynamodb_pending_store import pending_to_item
from seglog_core.schema import PendingSnapshot
from seglog_emulator.status import read_status
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack import local

pytestmark = pytest.mark.stack

PARAMETERS: dict[str, Any] = dict(CHAOS_PARAMETERS)
#: The sweep's rate(1 hour), 3600 times faster: once a second.
SCALE = 3600


@pytest.fixture(scope="module")
def sweep_deployment(stacks: object) -> Iterator[local.LocalDeployment]:
    """The sweep reads every pending item of its table, so no other test's items may be there."""
    yield from own_stack(stacks, "swp", PARAMETERS)


def test_the_scheduled_sweep_resends_an_idle_pending_item_and_the_worker_finishes_it(
        sweep_deployment: local.LocalDeployment, tmp_path: Path, lambda_artifact: Path) -> None:
    deployment = sweep_deployment
    backend = backend_of(deployment)
    log_id = backend.event_log().create()  # its Snapshot entry 0/0 is complete at birth
    # Put as the dying worker left it (create refuses an item for a completed snapshot).
    ddb = client("dynamodb", session=local_session(deployment.region), endpoint_url=deployment.endpoints["dynamodb"])
    ddb.put_item(TableName=resources_of(deployment).pending_table, Item=pending_to_item(PendingSnapshot(
        log_id=log_id, segment=0, entry=0, created=1, modified=1, claimer="parked")))
    state = tmp_path / "state"
    settings = scaled(deployment, state, PARAMETERS, SCALE, lambda_artifact)
    output = tmp_path / "emulator.log"
    with output.open("w") as sink:
        supervisor = Supervisor(settings, output=sink)
        supervisor.start()
        try:
            supervisor.wait_ready()
            assert "schedule:SnapshotSweepFunction.Sweep" in [c.name for c in read_status(state).children]
            wait_for(lambda: backend.pending.get(log_id, 0, 0) is None, 90,
                     "the sweep's job to reach the worker, which finds the snapshot done and deletes the item")
        finally:
            supervisor.stop()
    lines = log_lines(output)
    resent = [line for line in lines if line.get("event") == "snapshot job resent: its job was parked"]
    assert [(str(log_id), 0, 0)] == sorted({(line["log_id"], line["segment"], line["entry"]) for line in resent})
    sweeps = [line for line in lines if line.get("event") == "invocation"
              and line["source"] == "SnapshotSweepFunction.Sweep"]
    assert sweeps and all(line["outcome"] == "success" for line in sweeps)
    assert not [line for line in lines if "AccessDenied" in str(line)]
