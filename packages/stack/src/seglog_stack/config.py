"""What local stack to run and where: the profile, ports, run dir and seglog home.

Settings come from constructor arguments first, then environment variables, then defaults, so a test can
run a second stack beside a developer's (other ports, another run dir) while sharing the installs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

DEFAULT_REGION = "us-east-1"
DEFAULT_LOCALSTACK_PORT = 4566
DEFAULT_DYNAMODB_PORT = 8000
DEFAULT_STARTUP_TIMEOUT = 120.0

LOCALSTACK_PORT_ENV = "SEGLOG_LOCALSTACK_PORT"
DYNAMODB_PORT_ENV = "SEGLOG_DYNAMODB_PORT"
HOME_ENV = "SEGLOG_HOME"
PYTHON_ENV = "SEGLOG_PYTHON"

# AWS service names (as boto3 spells them) that the stack serves.
SERVICES = ("dynamodb", "dynamodbstreams", "sqs", "s3", "sns", "events")
#: What deploying template.yaml through CloudFormation touches, as LocalStack names its services: the SAM
#: transform's resources (roles, functions, mappings, the schedule rule, log groups) and the alarms and dashboard
#: besides the four above.
DEPLOY_SERVICES = (*SERVICES, "cloudformation", "iam", "sts", "lambda", "scheduler", "logs", "cloudwatch")
#: LocalStack's Lambda runtime executor that needs no Docker (seglog_stack/localstack-plugin).
LAMBDA_RUNTIME_EXECUTOR = "seglog"


class Profile(StrEnum):
    """Which programs serve which AWS services.

    DYNAMODB_LOCAL: DynamoDB and its Streams API from DynamoDB Local run directly (faster: no gateway hop),
        SQS and S3 from LocalStack.
    LOCALSTACK: all four services through LocalStack (its DynamoDB is DynamoDB Local behind its gateway).
    DEPLOY: a deploy target: LOCALSTACK plus CloudFormation, IAM, Lambda (functions created by our runtime
        executor, without Docker), EventBridge and Logs, for `seglog deploy` and its test. Slower to start
        and heavier, so the test profiles above do not load those services.
    """

    DYNAMODB_LOCAL = "dynamodb-local"
    LOCALSTACK = "localstack"
    DEPLOY = "deploy"

    @classmethod
    def parse(cls, value: str | Profile) -> Profile:
        """The profile named ``value`` (case and ``_``/``-`` insensitive); ValueError lists the choices."""
        if isinstance(value, Profile):
            return value
        normalized = value.strip().lower().replace("_", "-")
        for profile in cls:
            if profile.value == normalized:
                return profile
        choices = ", ".join(p.value for p in cls)
        raise ValueError(f"unknown stack profile {value!r}: choose one of {choices}")

    @property
    def localstack_services(self) -> tuple[str, ...]:
        """The LocalStack SERVICES list for this profile."""
        if self is Profile.LOCALSTACK:
            return SERVICES
        if self is Profile.DEPLOY:
            return DEPLOY_SERVICES
        return ("sqs", "s3", "sns", "events")

    @property
    def runs_dynamodb_local(self) -> bool:
        """Whether this profile starts DynamoDB Local as its own process."""
        return self is Profile.DYNAMODB_LOCAL


def seglog_home(env: Mapping[str, str] | None = None) -> Path:
    """Where installed things live (LocalStack's venv, DynamoDB Local, Java link), shared by all clones.

    ``$SEGLOG_HOME`` if set, else ``~/.cache/seglog`` (``$XDG_CACHE_HOME/seglog`` when that is set).
    """
    env = os.environ if env is None else env
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser().absolute()
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser().absolute() / "seglog"


def default_run_dir(profile: Profile) -> Path:
    """``<cwd>/.seglog/<profile>``: runtime state belongs to the clone it was started from."""
    return Path.cwd() / ".seglog" / profile.value


def _port_from_env(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a port number: set it to an integer in 1..65535") from None
    return _check_port(port, name)


def _check_port(port: int, name: str) -> int:
    if not 0 < port < 65536:
        raise ValueError(f"{name}: port {port} is out of range: choose one in 1..65535")
    return port


@dataclass(frozen=True, kw_only=True)
class StackConfig:
    """Resolved settings of one local stack.

    Build it with :meth:`resolve` to apply environment variables; the plain constructor takes values as given.
    """

    profile: Profile = Profile.DYNAMODB_LOCAL
    localstack_port: int = DEFAULT_LOCALSTACK_PORT
    dynamodb_port: int = DEFAULT_DYNAMODB_PORT
    # None means the default, <cwd>/.seglog/<profile>, filled in by __post_init__.
    run_dir: Path = field(default=None)  # type: ignore[assignment]
    home: Path = field(default_factory=seglog_home)
    region: str = DEFAULT_REGION
    host: str = "127.0.0.1"
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT

    def __post_init__(self) -> None:
        if self.run_dir is None:
            object.__setattr__(self, "run_dir", default_run_dir(self.profile))
        _check_port(self.localstack_port, "localstack_port")
        _check_port(self.dynamodb_port, "dynamodb_port")
        if self.profile.runs_dynamodb_local and self.localstack_port == self.dynamodb_port:
            raise ValueError(
                f"LocalStack and DynamoDB Local cannot share port {self.dynamodb_port}: "
                f"set {LOCALSTACK_PORT_ENV} or {DYNAMODB_PORT_ENV} to another port"
            )

    @classmethod
    def resolve(
        cls,
        profile: Profile | str | None = None,
        *,
        localstack_port: int | None = None,
        dynamodb_port: int | None = None,
        run_dir: Path | str | None = None,
        home: Path | str | None = None,
        region: str | None = None,
        startup_timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> StackConfig:
        """Settings from the arguments given, then ``SEGLOG_*`` environment variables, then defaults.

        Args:
            run_dir: runtime state (pid files, logs); default ``<cwd>/.seglog/<profile>``.
            home: installs; default :func:`seglog_home`.
        """
        env = os.environ if env is None else env
        resolved = Profile.parse(profile) if profile is not None else Profile.DYNAMODB_LOCAL
        return cls(
            profile=resolved,
            localstack_port=localstack_port
            if localstack_port is not None
            else _port_from_env(env, LOCALSTACK_PORT_ENV, DEFAULT_LOCALSTACK_PORT),
            dynamodb_port=dynamodb_port
            if dynamodb_port is not None
            else _port_from_env(env, DYNAMODB_PORT_ENV, DEFAULT_DYNAMODB_PORT),
            run_dir=Path(run_dir).absolute() if run_dir is not None else default_run_dir(resolved),
            home=Path(home).absolute() if home is not None else seglog_home(env),
            region=region or DEFAULT_REGION,
            startup_timeout=startup_timeout if startup_timeout is not None else DEFAULT_STARTUP_TIMEOUT,
        )

    def url(self, port: int) -> str:
        return f"http://{self.host}:{port}"

    @property
    def endpoints(self) -> dict[str, str]:
        """The endpoint URL of each service (keys: dynamodb, dynamodbstreams, sqs, s3, sns, events)."""
        localstack = self.url(self.localstack_port)
        dynamodb = self.url(self.dynamodb_port) if self.profile.runs_dynamodb_local else localstack
        return {"dynamodb": dynamodb, "dynamodbstreams": dynamodb, "sqs": localstack, "s3": localstack,
                "sns": localstack, "events": localstack}
