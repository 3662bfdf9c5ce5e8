"""The local stack manager against the real programs: LocalStack and DynamoDB Local, started without Docker.

These tests install into the shared seglog home (``$SEGLOG_HOME`` or ~/.cache/seglog) on first use and
start their own stacks on ports of their own (46xx/80xx), in a temporary run dir, so a developer's stack on
4566/8000 is left alone. They never skip: if the stack cannot start, they fail with its log.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import psutil
import pytest
from structlog.testing import capture_logs

from seglog_stack import (
    PortInUseError,
    Profile,
    StackConfig,
    StackConflictError,
    StackManager,
    StackStartError,
    StackState,
)

pytestmark = pytest.mark.stack

# Ports per profile, apart from the defaults and from each other, so a leftover of one test cannot make
# another pass or fail.
PORTS = {
    Profile.DYNAMODB_LOCAL: {"localstack_port": 4610, "dynamodb_port": 8010},
    Profile.LOCALSTACK: {"localstack_port": 4611, "dynamodb_port": 8011},
}


def make_manager(profile: Profile, run_dir: Path, **ports: int) -> StackManager:
    ports = {**PORTS[profile], **ports}
    return StackManager(StackConfig.resolve(profile, run_dir=run_dir, startup_timeout=120, **ports))


@pytest.fixture
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StackManager]:
    """A manager for the profile in ``request.param``; whatever it started is stopped after the test."""
    manager = make_manager(request.param, tmp_path / "run")
    try:
        yield manager
    finally:
        manager.down()


def client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def call_every_service(endpoints: dict[str, str]) -> None:
    """One real call per service: each endpoint answers as the AWS API it stands for."""
    assert isinstance(client("dynamodb", endpoints["dynamodb"]).list_tables()["TableNames"], list)
    assert isinstance(client("dynamodbstreams", endpoints["dynamodbstreams"]).list_streams()["Streams"], list)
    client("sqs", endpoints["sqs"]).list_queues()
    assert isinstance(client("s3", endpoints["s3"]).list_buckets()["Buckets"], list)


def s3_round_trip(endpoint: str) -> None:
    """S3 through LocalStack with boto3's default addressing (path style for an IP endpoint)."""
    s3 = client("s3", endpoint)
    s3.create_bucket(Bucket="seglog-stack-test")
    s3.put_object(Bucket="seglog-stack-test", Key="a/b.json", Body=b"{}")
    assert b"{}" == s3.get_object(Bucket="seglog-stack-test", Key="a/b.json")["Body"].read()


def pids(manager: StackManager) -> dict[str, int | None]:
    return {p.name: p.pid for p in manager.status().processes}


@pytest.mark.parametrize("stack", [Profile.DYNAMODB_LOCAL, Profile.LOCALSTACK], indirect=True)
def test_up_serves_all_four_services_is_reused_and_down_stops_everything(stack: StackManager) -> None:
    """up → healthy with all endpoints answering; a second up (new manager) reuses the same processes;
    down → every process gone, pid files removed, status stopped."""
    info = stack.up()

    status = stack.status()
    assert StackState.RUNNING == status.state
    assert all(p.healthy and p.running for p in status.processes)
    assert {"dynamodb", "dynamodbstreams", "sqs", "s3", "sns", "events"} == set(info.endpoints)
    call_every_service(info.endpoints)
    s3_round_trip(info.endpoints["s3"])
    assert stack.env() == info.env()

    with capture_logs() as logs:
        again = make_manager(stack.config.profile, stack.config.run_dir).up()
    assert [p.pid for p in info.processes] == [p.pid for p in again.processes]
    assert "stack.up.reused" in [entry["event"] for entry in logs]

    stack.down()
    status = stack.status()
    assert StackState.STOPPED == status.state
    assert not any(p.running or p.healthy or p.pid for p in status.processes)
    for process in info.processes:
        assert process.pid is not None
        assert not psutil.pid_exists(process.pid) or psutil.Process(process.pid).status() == psutil.STATUS_ZOMBIE
    assert [] == list(stack.config.run_dir.glob("*.pid"))


@pytest.mark.parametrize("stack", [Profile.DYNAMODB_LOCAL], indirect=True)
def test_a_dead_process_degrades_the_stack_and_up_restarts_only_it(stack: StackManager) -> None:
    """Killing DynamoDB Local makes status degraded; up starts it again and keeps LocalStack running.
    Running the other profile in the same run dir is refused until down."""
    first = stack.up()
    os.kill(first.process("dynamodb-local").pid or 0, signal.SIGKILL)
    psutil.Process(first.process("dynamodb-local").pid).wait(10)

    assert StackState.DEGRADED == stack.status().state

    second = stack.up()
    assert first.process("localstack").pid == second.process("localstack").pid
    assert first.process("dynamodb-local").pid != second.process("dynamodb-local").pid
    assert StackState.RUNNING == stack.status().state
    call_every_service(second.endpoints)

    other = StackManager(
        StackConfig.resolve(Profile.LOCALSTACK, run_dir=stack.config.run_dir, **PORTS[Profile.DYNAMODB_LOCAL])
    )
    with pytest.raises(StackConflictError, match="seglog down"):
        other.up()


@pytest.mark.parametrize("which", ["localstack_port", "dynamodb_port"])
def test_a_port_held_by_another_program_is_a_clear_error(which: str, tmp_path: Path) -> None:
    """A plain socket bound on a port the stack needs → PortInUseError naming the port and the variable to
    change; nothing is left running."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        manager = make_manager(Profile.DYNAMODB_LOCAL, tmp_path / "run", **{which: port})
        with pytest.raises(PortInUseError) as caught:
            manager.up()
    assert port == caught.value.port
    env_var = "SEGLOG_LOCALSTACK_PORT" if which == "localstack_port" else "SEGLOG_DYNAMODB_PORT"
    assert env_var in str(caught.value)
    assert str(port) in str(caught.value)
    assert StackState.STOPPED == manager.status().state
    assert [] == list(manager.config.run_dir.glob("*.pid"))


def test_a_stack_not_healthy_in_time_fails_with_its_log_and_leaves_nothing_running(tmp_path: Path) -> None:
    """A startup timeout too short for LocalStack → StackStartError naming the log file; the processes it
    started are stopped again."""
    config = StackConfig.resolve(
        Profile.DYNAMODB_LOCAL,
        run_dir=tmp_path / "run",
        startup_timeout=0.2,
        localstack_port=4612,
        dynamodb_port=8012,
    )
    manager = StackManager(config)
    with pytest.raises(StackStartError) as caught:
        manager.up()
    assert str(tmp_path / "run") in str(caught.value.log_path)
    assert "see its log" in str(caught.value)
    assert StackState.STOPPED == manager.status().state
    assert [] == list(config.run_dir.glob("*.pid"))


def test_down_without_a_stack_is_a_no_op(tmp_path: Path) -> None:
    """down on a run dir that never ran a stack succeeds and status says stopped."""
    manager = make_manager(Profile.LOCALSTACK, tmp_path / "never")
    manager.down()
    assert StackState.STOPPED == manager.status().state
