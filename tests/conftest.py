"""Fixtures: the same tests run on every backend — in memory, and the real local stack in both profiles.

The local stack is started by the test session itself (seglog_stack.local.up on test ports, its own run dir),
once per profile, and stopped at the end. Resource names are unique per session; log ids and keys are unique
per test. When the stack cannot start the tests that need it fail (with CI=true or not): they never skip.
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import os
import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from queue_support import QueueUnderTest, sqs_receiver
from seglog_aws.backend import Backend
from seglog_aws.clients import client, local_session
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_awsmodel.template import load_template
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.ports import BlobStore, LogStore, PendingStore
from seglog_emulator.pytest_plugin import StackEndpoints
from seglog_plugin.resources import backend_of
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.aws.sqs import SimSQS, SimSQSClient
from seglog_stack import StackConfig, StackManager, docker_available, local

#: Test stacks use their own ports so a developer's `seglog up` stack (4566/8000) is left alone.
#: SEGLOG_TEST_PORT_BASE moves them, so two test sessions can run side by side.
_BASE = int(os.environ.get("SEGLOG_TEST_PORT_BASE", "4640"))
TEST_PORTS = {"dynamodb-local": (_BASE, _BASE + 3400), "localstack": (_BASE + 10, _BASE + 3410)}
PROFILES = tuple(p for p in TEST_PORTS if p in os.environ.get("SEGLOG_TEST_PROFILES", ",".join(TEST_PORTS)))
#: "sim": seglog's real adapters over the simulator's in-memory DynamoDB, S3 and SQS (seglog_sim.aws).
BACKENDS = ("memory", "sim", *PROFILES)
#: The simulator's models run in process, like the in-memory fakes.
IN_PROCESS = ("memory", "sim")
REPO = Path(__file__).resolve().parent.parent
#: Where a Docker daemon answers and LOCALSTACK_AUTH_TOKEN is set (LocalStack's images start only with one,
#: docker-compose.yml), the stack tests run on docker-compose.yml's containers through testcontainers;
#: SEGLOG_TEST_DOCKER=0 keeps them on host processes, =1 insists on Docker (and fails without a daemon or token).
USE_DOCKER = {"1": True, "0": False}.get(os.environ.get("SEGLOG_TEST_DOCKER", ""))
#: What docker-compose.yml requires of every profile.
LOCALSTACK_TOKEN_ENV = "LOCALSTACK_AUTH_TOKEN"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--api-url", default=None,
                     help="run the API fuzzer (tests/client/test_api_fuzz.py) against this deployed API instead of "
                          "the emulator; it signs with the AWS SDK's credentials for the URL's region")


class _Stacks:
    """Starts each profile's stack the first time a test asks for it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.deployments: dict[str, local.LocalDeployment] = {}
        self.configs: dict[str, StackConfig] = {}
        self.composes: list[Any] = []

    def deployment(self, profile: str) -> local.LocalDeployment:
        if profile not in self.deployments and (USE_DOCKER or (USE_DOCKER is None and os.environ.get(
                LOCALSTACK_TOKEN_ENV) and docker_available())):
            self.deployments[profile] = self._docker(profile)
        if profile not in self.deployments:
            ls_port, ddb_port = TEST_PORTS[profile]
            config = StackConfig.resolve(profile=profile, localstack_port=ls_port, dynamodb_port=ddb_port,
                                         run_dir=self.root / profile)
            self.configs[profile] = config
            self.deployments[profile] = local.up(config, stack_name=f"t{uuid.uuid4().hex[:8]}")
        return self.deployments[profile]

    def _docker(self, profile: str) -> local.LocalDeployment:
        """The same stack from docker-compose.yml's images, through testcontainers (Docker users)."""
        from testcontainers.compose import DockerCompose

        if not docker_available():
            raise RuntimeError("SEGLOG_TEST_DOCKER=1 but no Docker daemon answers `docker info`")
        if not os.environ.get(LOCALSTACK_TOKEN_ENV):
            raise RuntimeError(f"SEGLOG_TEST_DOCKER=1 but {LOCALSTACK_TOKEN_ENV} is not set: LocalStack's images start "
                               "only with an account's auth token (docker-compose.yml). Export it, or unset "
                               "SEGLOG_TEST_DOCKER to run the stack tests on host processes")
        ls_port, ddb_port = TEST_PORTS[profile]
        os.environ.update(SEGLOG_LOCALSTACK_PORT=str(ls_port), SEGLOG_DYNAMODB_PORT=str(ddb_port))
        compose = DockerCompose(context=str(REPO), compose_file_name="docker-compose.yml", profiles=[profile],
                                wait=True)
        compose.start()
        self.composes.append(compose)
        ls = f"http://127.0.0.1:{ls_port}"
        ddb = f"http://127.0.0.1:{ddb_port}" if profile == "dynamodb-local" else ls
        endpoints = {"dynamodb": ddb, "dynamodbstreams": ddb, "sqs": ls, "s3": ls, "sns": ls, "events": ls}
        return local.provision(endpoints, profile=profile, region="us-east-1",
                               stack_name=f"t{uuid.uuid4().hex[:8]}")

    def close(self) -> None:
        # The profiles' stacks are independent (own run dirs and ports) and LocalStack takes seconds to shut
        # down: stopping them side by side ends the session sooner.
        with ThreadPoolExecutor() as pool:
            stopping = [pool.submit(StackManager(config).down) for config in self.configs.values()]
        for compose in self.composes:
            compose.stop()
        for stopped in stopping:
            stopped.result()


@pytest.fixture
def readme_ports() -> Iterator[None]:
    """The README's fixed ports (the default local stack's, the emulator's 4599), held by one test at a time: the
    tests that type README commands as written run on either xdist worker, and would take each other's ports."""
    path = REPO / ".seglog" / "readme-ports.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes, or the process dies
        yield


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Stacks]:
    stacks = _Stacks(tmp_path_factory.mktemp("stacks"))
    yield stacks
    stacks.close()


@pytest.fixture(scope="session")
def seglog_stack(stacks: _Stacks) -> StackEndpoints:
    """seglog's pytest plugin's stack (its sam_app fixture) is the session's, on the test ports."""
    base = stacks.deployment("dynamodb-local")
    return StackEndpoints(base.endpoints, base.profile, base.region)


@pytest.fixture(scope="session", params=PROFILES)
def deployment(request: pytest.FixtureRequest, stacks: _Stacks) -> local.LocalDeployment:
    """A provisioned local deployment, once per profile."""
    return stacks.deployment(request.param)


@pytest.fixture
def backend(deployment: local.LocalDeployment) -> Backend:
    """Fresh clients (and a fresh meter) on the session's deployment."""
    return backend_of(deployment)


def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [] if name in IN_PROCESS else [pytest.mark.stack]


#: The simulated tables' physical names, by their logical ids in template.yaml.
SIM_TABLES = {"SegmentsTable": "Segments", "EntriesTable": "Entries", "PendingSnapshotsTable": "PendingSnapshots"}


@functools.cache
def sim_tables() -> tuple[TableSpec, ...]:
    """template.yaml's tables (keys, key types, stream) under SIM_TABLES' names."""
    resources = load_template(REPO / "template.yaml").resources
    return tuple(TableSpec.from_properties(name, resources[logical]["Properties"])
                 for logical, name in SIM_TABLES.items())


def sim_dynamodb() -> SimDynamoDBClient:
    """A client of a fresh simulated DynamoDB with template.yaml's tables, on a clock that ticks a second a read."""
    specs = sim_tables()
    clock = itertools.count(1_700_000_000)
    return SimDynamoDBClient.of(SimDynamoDB(specs, clock=lambda: float(next(clock))))


def _params(*backends: str) -> list[Any]:
    return [pytest.param(b, marks=_marks(b)) for b in backends]


@pytest.fixture(params=_params("memory", "sim", *PROFILES))
def stores(request: pytest.FixtureRequest, stacks: _Stacks) -> tuple[LogStore, BlobStore]:
    """A LogStore and a BlobStore of each backend (sim: the real adapters on the simulated DynamoDB and S3)."""
    if request.param == "memory":
        return InMemoryLogStore(), InMemoryBlobStore()
    if request.param == "sim":
        s3 = SimS3()
        s3.create_bucket("seglog-sim")
        return (DynamoDBLogStore(sim_dynamodb(), segments_table="Segments", entries_table="Entries"),
                S3BlobStore(SimS3Client.of(s3), bucket="seglog-sim"))
    backend = backend_of(stacks.deployment(request.param))
    return backend.store, backend.blobs


@pytest.fixture(params=_params(*BACKENDS))
def pending_store(request: pytest.FixtureRequest, stacks: _Stacks) -> PendingStore:
    """A PendingStore of each backend."""
    if request.param == "memory":
        return InMemoryPendingStore()
    if request.param == "sim":
        return DynamoDBPendingStore(sim_dynamodb(), table="PendingSnapshots")
    return backend_of(stacks.deployment(request.param)).pending


@pytest.fixture
def log_store(stores: tuple[LogStore, BlobStore]) -> LogStore:
    return stores[0]


@pytest.fixture
def blob_store(stores: tuple[LogStore, BlobStore]) -> BlobStore:
    return stores[1]


@pytest.fixture(params=_params("memory", "sim", *PROFILES))
def job_queue(request: pytest.FixtureRequest, stacks: _Stacks) -> Iterator[QueueUnderTest]:
    """A fresh snapshot queue of each backend: the in-memory fake, SqsJobQueue on the simulated SQS, and
    SqsJobQueue on the local stack's SQS (a queue of the test's own, deleted after it)."""
    if request.param == "memory":
        memory = InMemoryJobQueue(visibility_timeout=30)
        yield QueueUnderTest(queue=memory, receive=memory.receive, depth=memory.depth)
        return
    if request.param == "sim":
        sim = SimSQS(clock=lambda: 1_700_000_000.0, rng=random.Random(0))
        url = sim.create_queue("seglog-sim-jobs", visibility_timeout=30)
        sim_queue = SqsJobQueue(SimSQSClient.of(sim), queue_url=url)
        yield QueueUnderTest(queue=sim_queue, receive=sqs_receiver(SimSQSClient.of(sim), url, patience=0),
                             depth=sim_queue.depth)
        return
    deployment = stacks.deployment(request.param)
    sqs = client("sqs", session=local_session(deployment.region), endpoint_url=deployment.endpoints["sqs"])
    url = sqs.create_queue(QueueName=f"t-{uuid.uuid4().hex[:12]}", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    stack_queue = SqsJobQueue(sqs, queue_url=url)
    yield QueueUnderTest(queue=stack_queue, receive=sqs_receiver(sqs, url, patience=5.0), depth=stack_queue.depth)
    sqs.delete_queue(QueueUrl=url)
