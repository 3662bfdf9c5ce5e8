"""`seglog smoke` against a running deployment: the emulator's HTTP API on the local stack (the same handlers, built
artifact and pipeline a deployed stack runs), with the resource variables `seglog env` exports. It passes on a
healthy deployment, and fails with exit 1 when the log it wrote is not where the variables say."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from seglog_awsmodel.template import default_template_path
from seglog_cli.main import cli
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.resources import local_env
from seglog_stack import local

pytestmark = pytest.mark.stack

#: A snapshot every 10 entries, so a smoke run of a few dozen appends builds several.
PARAMETERS = {"SnapshotEvery": 10}


@dataclass(frozen=True)
class Emulated:
    url: str
    deployment: local.LocalDeployment
    other: local.LocalDeployment

    def smoke(self, *args: str, deployment: local.LocalDeployment | None = None) -> Result:
        env = {**local_env(deployment or self.deployment), "SEGLOG_API_URL": self.url}
        return CliRunner().invoke(cli, ["smoke", *args], env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def emulated(stacks: Any, tmp_path_factory: pytest.TempPathFactory, lambda_artifact: Path) -> Iterator[Emulated]:
    base = stacks.deployment("dynamodb-local")
    stack = f"sm-{uuid.uuid4().hex[:6]}"
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack,
                                 parameters=dict(PARAMETERS))
    try:
        supervisor = Supervisor(EmulatorSettings(deployment=deployment, template=default_template_path(), stack=stack,
                                                 state_dir=tmp_path_factory.mktemp("smoke"),
                                                 parameters=dict(PARAMETERS), artifact=lambda_artifact))
        supervisor.start()
        try:
            supervisor.wait_ready()
            yield Emulated(url=supervisor.api_url, deployment=deployment, other=base)
        finally:
            supervisor.stop()
    finally:
        local.deprovision(base.endpoints, region=base.region, stack_name=stack)


def test_smoke_passes_on_a_healthy_deployment_with_snapshots_built_and_checked(emulated: Emulated) -> None:
    result = emulated.smoke("--edits", "8", "--clients", "3", "--json")
    assert 0 == result.exit_code, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["ok"] is True
    assert 1 + 3 * 8 == report["appends"]  # the large block and every edit, each acknowledged
    verify = report["verify"]
    assert verify["completed_snapshots"] == verify["snapshots"] >= 3  # creation + one every 10 entries
    assert [] == verify["violations"] and [] == report["problems"]
    assert verify["objects"] > 0  # snapshot chunks were read back from the bucket (I3, I6)


def test_smoke_with_its_defaults_edits_until_a_snapshot_and_waits_for_it_to_complete(emulated: Emulated) -> None:
    """`smoke --api-url` alone (issue 22: with its old defaults, 10 edits, it never reached a snapshot): nothing says
    the deployment's SnapshotEvery, so the clients edit until the API has appended a Snapshot entry, then smoke
    waits for the pipeline to complete it, saying so on stderr."""
    result = emulated.smoke("--json")
    assert 0 == result.exit_code, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"] is True, report
    assert report["appends"] >= PARAMETERS["SnapshotEvery"]
    assert report["verify"]["completed_snapshots"] == report["verify"]["snapshots"] >= 2
    assert "smoke: SnapshotEvery unknown" in result.stderr
    assert "smoke: the API appended a Snapshot entry at 0/" in result.stderr


def test_smoke_fails_with_exit_1_when_the_stores_do_not_hold_what_the_api_acknowledged(emulated: Emulated) -> None:
    """The resource variables name another deployment's tables: the sheet the API wrote is not there, which
    verify reports (I1: no segments; I2: acknowledged entries missing), and smoke says FAIL."""
    result = emulated.smoke("--edits", "2", "--clients", "1", "--timeout", "5", deployment=emulated.other)
    assert 1 == result.exit_code, result.output
    assert result.stdout.startswith("FAIL")
    assert "I1" in result.output
