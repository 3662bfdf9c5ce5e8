"""Fixtures of the emulator's end-to-end tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from seglog_emulator.chaos import CHAOS_PARAMETERS
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
