"""One running emulator for the client's stack tests: template.yaml provisioned on the session's dynamodb-local
stack under its own name, and the supervisor `seglog emulate` runs (HTTP gateway, pollers, the handlers in worker
processes) serving the API on a free port."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from seglog_awsmodel.template import default_template_path
from seglog_client import Credentials, SeglogClient
from seglog_emulator.settings import LOCAL_CREDENTIALS, EmulatorSettings
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.resources import backend_of
from seglog_stack import local

#: A second key pair the emulator's gateway accepts: another caller of the same API.
SECOND_CALLER: Final = Credentials("AKIDSECONDCALLER", "second-caller-secret")


@dataclass(frozen=True)
class Emulated:
    url: str
    deployment: local.LocalDeployment
    #: A key pair the emulator's gateway accepts (its routes require IAM authorization).
    credentials: Credentials
    #: Another key pair it accepts (:data:`SECOND_CALLER`).
    second: Credentials = SECOND_CALLER

    def client(self, **options: Any) -> SeglogClient:
        """A client of the emulator's API, signing with :attr:`credentials`."""
        return SeglogClient(self.url, credentials=self.credentials, **options)

    def entry_ids(self, log_id: uuid.UUID) -> list[uuid.UUID | None]:
        """Every entry id in the sheet's log, read from the table (not through the API under test)."""
        return [e.entry_id for e in backend_of(self.deployment).reader().all_entries(log_id)]


@pytest.fixture(scope="package")
def emulator(stacks: Any, tmp_path_factory: pytest.TempPathFactory, lambda_artifact: Path) -> Iterator[Emulated]:
    base = stacks.deployment("dynamodb-local")
    stack = f"cl-{uuid.uuid4().hex[:6]}"
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack)
    try:
        supervisor = Supervisor(EmulatorSettings(deployment=deployment, template=default_template_path(), stack=stack,
                                                 state_dir=tmp_path_factory.mktemp("emulator"),
                                                 artifact=lambda_artifact,
                                                 api_credentials=(LOCAL_CREDENTIALS, SECOND_CALLER)))
        supervisor.start()
        try:
            supervisor.wait_ready()
            yield Emulated(url=supervisor.api_url, deployment=deployment,
                           credentials=supervisor.settings.api_credentials[0])
        finally:
            supervisor.stop()
    finally:
        local.deprovision(base.endpoints, region=base.region, stack_name=stack)
