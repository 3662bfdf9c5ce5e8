"""Fixtures: the same tests run on every backend — in memory, and the real local stack in both profiles.

The local stack is started by the test session itself (seglog_aws.local.up on test ports, its own run dir),
once per profile, and stopped at the end. Resource names are unique per session; log ids and keys are unique
per test. When the stack cannot start the tests that need it fail (with CI=true or not): they never skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog_aws import local
from seglog_aws.backend import Backend
from seglog_aws.stack import StackConfig, StackManager
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.ports import BlobStore, LogStore

#: Test stacks use their own ports so a developer's `seglog up` stack (4566/8000) is left alone.
TEST_PORTS = {"dynamodb-local": (4640, 8040), "localstack": (4650, 8050)}
PROFILES = tuple(p for p in TEST_PORTS if p in os.environ.get("SEGLOG_TEST_PROFILES", ",".join(TEST_PORTS)))
BACKENDS = ("memory", *PROFILES)


class _Stacks:
    """Starts each profile's stack the first time a test asks for it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.deployments: dict[str, local.LocalDeployment] = {}
        self.configs: dict[str, StackConfig] = {}

    def deployment(self, profile: str) -> local.LocalDeployment:
        if profile not in self.deployments:
            ls_port, ddb_port = TEST_PORTS[profile]
            config = StackConfig.resolve(profile=profile, localstack_port=ls_port, dynamodb_port=ddb_port,
                                         run_dir=self.root / profile)
            self.configs[profile] = config
            self.deployments[profile] = local.up(config, stack_name=f"t{uuid.uuid4().hex[:8]}")
        return self.deployments[profile]

    def close(self) -> None:
        for config in self.configs.values():
            StackManager(config).down()


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Stacks]:
    stacks = _Stacks(tmp_path_factory.mktemp("stacks"))
    yield stacks
    stacks.close()


@pytest.fixture(scope="session", params=PROFILES)
def deployment(request: pytest.FixtureRequest, stacks: _Stacks) -> local.LocalDeployment:
    """A provisioned local deployment, once per profile."""
    return stacks.deployment(request.param)


@pytest.fixture
def backend(deployment: local.LocalDeployment) -> Backend:
    """Fresh clients (and a fresh meter) on the session's deployment."""
    return deployment.backend()


def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [] if name == "memory" else [pytest.mark.stack]


@pytest.fixture(params=[pytest.param(b, marks=_marks(b)) for b in BACKENDS])
def stores(request: pytest.FixtureRequest, stacks: _Stacks) -> tuple[LogStore, BlobStore]:
    """A LogStore and a BlobStore of each backend."""
    if request.param == "memory":
        return InMemoryLogStore(), InMemoryBlobStore()
    backend = stacks.deployment(request.param).backend()
    return backend.store, backend.blobs


@pytest.fixture
def log_store(stores: tuple[LogStore, BlobStore]) -> LogStore:
    return stores[0]


@pytest.fixture
def blob_store(stores: tuple[LogStore, BlobStore]) -> BlobStore:
    return stores[1]
