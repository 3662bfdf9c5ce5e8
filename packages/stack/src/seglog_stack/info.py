"""What a running (or stopped) local stack looks like to its users: endpoints, credentials, processes.

The environment variables are the AWS SDKs' own (AWS SDKs and Tools Reference Guide, "Service-specific
endpoints": ``AWS_ENDPOINT_URL_<SERVICE ID>``), so boto3 picks the stack up with no code of ours.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from seglog_stack.config import Profile

ACCESS_KEY_ID = "test"
SECRET_ACCESS_KEY = "test"

# boto3 service name -> the SDK's variable (the service id upper-cased, spaces to underscores).
ENDPOINT_ENV = {
    "dynamodb": "AWS_ENDPOINT_URL_DYNAMODB",
    "dynamodbstreams": "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
    "sqs": "AWS_ENDPOINT_URL_SQS",
    "s3": "AWS_ENDPOINT_URL_S3",
    "sns": "AWS_ENDPOINT_URL_SNS",
    "events": "AWS_ENDPOINT_URL_EVENTBRIDGE",
}


def stack_env(endpoints: Mapping[str, str], region: str) -> dict[str, str]:
    """The environment that points the AWS SDKs at the local stack, for in-process use (``os.environ``)."""
    env = {ENDPOINT_ENV[service]: url for service, url in endpoints.items() if service in ENDPOINT_ENV}
    env.update(
        {
            "AWS_DEFAULT_REGION": region,
            "AWS_REGION": region,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        }
    )
    return env


def export_lines(env: Mapping[str, str]) -> list[str]:
    """``export NAME=value`` lines a shell can ``eval``."""
    return [f"export {name}={shlex.quote(value)}" for name, value in env.items()]


class StackState(StrEnum):
    """RUNNING: every process of the profile is alive and healthy. STOPPED: none is alive.
    DEGRADED: anything in between (a process died, or is alive but not answering)."""

    RUNNING = "running"
    DEGRADED = "degraded"
    STOPPED = "stopped"


@dataclass(frozen=True, kw_only=True)
class ProcessInfo:
    """One process of the stack: ``localstack`` or ``dynamodb-local``."""

    name: str
    pid: int | None
    port: int
    log_path: str
    running: bool
    healthy: bool


@dataclass(frozen=True, kw_only=True)
class StackInfo:
    """A stack as ``up`` left it: where to reach each service and with what credentials."""

    profile: Profile
    region: str
    endpoints: dict[str, str]
    processes: tuple[ProcessInfo, ...]
    run_dir: str
    access_key_id: str = ACCESS_KEY_ID
    secret_access_key: str = SECRET_ACCESS_KEY

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as their values)."""
        data = asdict(self)
        data["profile"] = self.profile.value
        data["processes"] = [asdict(p) for p in self.processes]
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def env(self) -> dict[str, str]:
        return stack_env(self.endpoints, self.region)

    def env_exports(self) -> list[str]:
        return export_lines(self.env())

    def process(self, name: str) -> ProcessInfo:
        for process in self.processes:
            if process.name == name:
                return process
        raise KeyError(f"no process {name!r} in this stack: it has {[p.name for p in self.processes]}")


@dataclass(frozen=True, kw_only=True)
class StackStatus(StackInfo):
    """A stack as ``status`` found it: :class:`StackInfo` plus its overall state."""

    state: StackState

    @property
    def healthy(self) -> bool:
        return self.state is StackState.RUNNING

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["state"] = self.state.value
        return data
