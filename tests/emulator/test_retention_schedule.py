"""Retention on its schedule, end to end on the local stack: template.yaml's RetentionFunction with its Schedule
event, run by the emulator on a scaled clock while a sheet edited through the HTTP API rolls segment after
segment (DESIGN §3 "New segment", "Retention")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.test_supervisor import wait_for
from seglog_awsmodel.template import default_template_path
from seglog_client import SeglogClient, set_cell
from seglog_core.retention import read_archive
from seglog_core.verify import verify_log
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.status import read_status
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack import local

pytestmark = pytest.mark.stack

#: Small segments (a new one every ~10 entries, once the last one's snapshot is built), retention keeping only
#: the two latest, whatever their age, every minute of a schedule clock running 60 times faster: once a second.
PARAMETERS: dict[str, Any] = {**CHAOS_PARAMETERS, "SnapshotEvery": 10, "SegmentEntries": 10, "RetentionKeep": 2,
                              "RetentionMinAgeSeconds": 0, "RetentionSchedule": "rate(1 minute)"}
SCALE = 60
SEGMENTS = 5


def own_stack(stacks: object, prefix: str, parameters: dict[str, Any]) -> Iterator[local.LocalDeployment]:
    """The template on the session's dynamodb-local stack under a name of its own, removed afterwards."""
    base = stacks.deployment("dynamodb-local")  # type: ignore[attr-defined]
    stack = f"{prefix}-{uuid.uuid4().hex[:6]}"
    yield local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack,
                          parameters=parameters)
    local.deprovision(base.endpoints, region=base.region, stack_name=stack)


def scaled(deployment: local.LocalDeployment, state: Path, parameters: dict[str, Any], scale: float,
           artifact: Path) -> EmulatorSettings:
    """The emulator on ``deployment`` with its schedules' clocks ``scale`` times faster."""
    stack = resources_of(deployment).entries_table.rsplit("-", 1)[0]
    return EmulatorSettings(deployment=deployment, template=default_template_path(), stack=stack, state_dir=state,
                            parameters=parameters, schedule_scale=scale, artifact=artifact)


@pytest.fixture(scope="module")
def retention_deployment(stacks: object) -> Iterator[local.LocalDeployment]:
    """Retention scans every log of its tables, so no other test's logs may be there."""
    yield from own_stack(stacks, "ret", PARAMETERS)


def append(api: SeglogClient, log_id: uuid.UUID, n: int) -> uuid.UUID:
    """Append cell A{n+1} = n (a fresh entry id; ``since`` the last position the API answered the client, a
    create's 0/0 first); returns the entry id."""
    return api.append(log_id, set_cell(f"A{n + 1}", n)).entry_id


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def test_scheduled_retention_archives_rolled_segments_and_a_load_reads_two_at_most(
        retention_deployment: local.LocalDeployment, tmp_path: Path, lambda_artifact: Path) -> None:
    """Edits roll segments; the schedule child invokes RetentionFunction once a (scaled) minute, which archives
    every segment but the two latest; nothing acknowledged is lost (live entries + archives hold each entry id
    once); GET /sheets/{id} still gives every cell and reads only the latest segment: its invocation made one
    Query for the segments and one for the one segment read (counted by the emulator's metering)."""
    deployment = retention_deployment
    state = tmp_path / "state"
    settings = scaled(deployment, state, PARAMETERS, SCALE, lambda_artifact)
    output = tmp_path / "emulator.log"
    backend = backend_of(deployment)
    with output.open("w") as sink:
        supervisor = Supervisor(settings, output=sink)
        supervisor.start()
        try:
            supervisor.wait_ready()
            assert "schedule:RetentionFunction.Retention" in [c.name for c in read_status(state).children]
            api = SeglogClient(supervisor.api_url, credentials=settings.api_credentials[0])
            log_id = api.create().log_id
            acknowledged, n = [], 0
            for _ in range(SEGMENTS - 1):
                # A segment closes at the first multiple of SnapshotEvery past SegmentEntries once it has a
                # completed snapshot (DESIGN §3): wait for the pipeline, then ten edits roll it.
                wait_for(lambda: backend.store.latest_segments(log_id, 1)[0].last_snapshot is not None, 60,
                         "the pipeline to complete the latest segment's first snapshot")
                for _ in range(10):
                    acknowledged.append(append(api, log_id, n))
                    n += 1
            assert SEGMENTS == len(list(backend.store.segments(log_id)))

            def archived() -> list[bool]:
                return [s.archive is not None for s in backend.store.segments(log_id)]

            wait_for(lambda: archived() == [True] * (len(archived()) - 2) + [False, False], 60,
                     "retention to archive every segment but the two latest")
            wait_for(lambda: backend.store.latest_segments(log_id, 1)[0].last_snapshot is not None, 60,
                     "the pipeline to complete the latest segment's first snapshot")
            loaded = api.load(log_id)
        finally:
            supervisor.stop()

    assert [[value] for value in range(n)] == loaded.rows
    segments = list(backend.store.segments(log_id))
    archives = [entry for s in segments if s.archive for entry in read_archive(backend.blobs, s.archive)]
    live = [entry for s in segments if not s.archive for entry in backend.store.entries(log_id, s.num)]
    stored = [e.entry_id for e in archives + live if e.entry_id is not None]
    assert sorted(acknowledged) == sorted(set(stored)) and len(stored) == len(set(stored))
    # I1 and I4 on what is left (verify skips archived segments, so it would call their snapshots' objects orphans).
    assert [] == verify_log(backend.store, log_id).violations

    lines = log_lines(output)
    runs = [line for line in lines if line.get("event") == "retention run"]
    assert sum(run["segments_archived"] for run in runs) == len(segments) - 2
    invocations = [line for line in lines if line.get("event") == "invocation"]
    scheduled = [line for line in invocations if line["source"] == "RetentionFunction.Retention"]
    assert scheduled and all(line["outcome"] == "success" for line in scheduled)
    (load,) = [line for line in invocations if line.get("method") == "GET" and line["path"] == f"/sheets/{log_id}"]
    # The latest segment has a completed snapshot: the load reads it alone, one Query for the two latest segments
    # and one for the entries from that snapshot on. Reading any older segment would add a Query per segment.
    assert (segments[-1].num, segments[-1].num) == (loaded.snapshot.segment, loaded.position.segment)
    assert 1 + 1 == load["usage"]["dynamodb"]["requests"]
