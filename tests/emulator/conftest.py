"""Fixtures of the emulator's end-to-end tests."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog_cli.console import probe
from seglog_core import logs
from seglog_emulator import logfeed
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_report.console import Console
from seglog_stack import local


@pytest.fixture(scope="module")
def chaos_deployment(stacks: object) -> Iterator[local.LocalDeployment]:
    """The template provisioned on the session's dynamodb-local stack under its own name, with the chaos
    parameters (snapshots every 10 entries, a 3 s worker timeout)."""
    base = stacks.deployment("dynamodb-local")  # type: ignore[attr-defined]
    stack = f"sup-{uuid.uuid4().hex[:6]}"
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack,
                                 parameters=dict(CHAOS_PARAMETERS))
    yield deployment
    local.deprovision(base.endpoints, region=base.region, stack_name=stack)


@pytest.fixture
def console(chaos_deployment: local.LocalDeployment, monkeypatch: pytest.MonkeyPatch,
            tmp_path: Path) -> Iterator[Console]:
    """A live console reading the deployment's queues, fed by every process started from here (this one's
    supervisor lines too, as under ``seglog emulate``)."""
    with (tmp_path / "supervisor.log").open("w") as own, Console(probe=probe(chaos_deployment)) as running:
        monkeypatch.setenv(logfeed.ENV_VAR, running.feed_address)
        logs.configure(json=True, level=logging.INFO, stream=own)
        logfeed.install("supervisor")
        yield running

