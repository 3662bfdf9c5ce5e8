"""The local stack: LocalStack and DynamoDB Local as host processes, installed on first use, no Docker.

    from seglog_stack import StackConfig, StackManager
    manager = StackManager(StackConfig.resolve("dynamodb-local"))
    info = manager.up()              # installs once per machine, then starts (or reuses) the stack
    os.environ.update(info.env())    # AWS_ENDPOINT_URL_DYNAMODB=..., AWS_REGION, test credentials
    manager.down()

See manager.py for the process model and installer.py for what is installed where.
"""

from __future__ import annotations

from seglog_stack.config import (
    DEFAULT_DYNAMODB_PORT,
    DEFAULT_LOCALSTACK_PORT,
    DYNAMODB_PORT_ENV,
    HOME_ENV,
    LOCALSTACK_PORT_ENV,
    SERVICES,
    Profile,
    StackConfig,
    seglog_home,
)
from seglog_stack.errors import (
    InstallError,
    JavaNotFoundError,
    PortInUseError,
    StackConflictError,
    StackError,
    StackStartError,
)
from seglog_stack.info import ProcessInfo, StackInfo, StackState, StackStatus, export_lines, stack_env
from seglog_stack.installer import Installation, StackInstaller
from seglog_stack.manager import StackManager
from seglog_stack.tools import docker_available

__all__ = [
    "DEFAULT_DYNAMODB_PORT",
    "DEFAULT_LOCALSTACK_PORT",
    "DYNAMODB_PORT_ENV",
    "HOME_ENV",
    "LOCALSTACK_PORT_ENV",
    "SERVICES",
    "InstallError",
    "Installation",
    "JavaNotFoundError",
    "PortInUseError",
    "ProcessInfo",
    "Profile",
    "StackConfig",
    "StackConflictError",
    "StackError",
    "StackInfo",
    "StackInstaller",
    "StackManager",
    "StackStartError",
    "StackState",
    "StackStatus",
    "docker_available",
    "export_lines",
    "seglog_home",
    "stack_env",
]
