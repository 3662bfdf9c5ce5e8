"""What a deploy leaves behind for later commands: ``.seglog/stacks/<name>.json``, and the environment it means.

The record holds the stack's outputs, parameters, region and (for a local target) endpoint, so
``seglog env --stack S`` prints the variables that point the CLI (with seglog's resource names:
seglog_plugin.resources) and the client library (SEGLOG_API_URL) at the deployed stack,
and ``seglog smoke --stack S`` knows what to test and read.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seglog_deploy.errors import StackNotFoundError

API_URL_ENV = "SEGLOG_API_URL"
API_URL_OUTPUT = "ApiUrl"
#: Variables that would send the SDK somewhere else than the deployment (a local stack's `seglog env`).
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
                      "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_S3")


def stacks_dir(base: Path | None = None) -> Path:
    """``<cwd>/.seglog/stacks``: like the local stack's state, records belong to the clone they came from."""
    return (base or Path.cwd()) / ".seglog" / "stacks"


@dataclass(frozen=True, kw_only=True)
class StackRecord:
    """A deployed stack, as the last deploy from this clone saw it."""

    stack_name: str
    stack_id: str
    region: str
    outputs: dict[str, str]
    parameters: dict[str, str] = field(default_factory=dict)
    endpoint_url: str | None = None
    status: str = ""

    @property
    def api_url(self) -> str:
        return self.outputs.get(API_URL_OUTPUT, "")

    def env(self) -> dict[str, str]:
        """The variables for the client library and the SDK: the API's URL, the region and a local endpoint (an
        application adds its own: seglog's resource names are :func:`seglog_plugin.resources.record_env`)."""
        env: dict[str, str] = {API_URL_ENV: self.api_url} if self.api_url else {}
        env.update({"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region})
        if self.endpoint_url:
            env["AWS_ENDPOINT_URL"] = self.endpoint_url
        return env

    def shell_lines(self, env: Mapping[str, str] | None = None) -> list[str]:
        """``export`` lines for eval of ``env`` (:meth:`env` unless given), and ``unset`` for endpoint variables
        that would point elsewhere (a service variable outranks AWS_ENDPOINT_URL, so a local stack's would win over
        this deployment)."""
        env = self.env() if env is None else env
        unset = [name for name in ENDPOINT_VARIABLES if name not in env]
        lines = [f"unset {' '.join(unset)}"] if unset else []
        return lines + [f"export {name}={shlex.quote(value)}" for name, value in env.items()]

    def save(self, directory: Path | None = None) -> Path:
        directory = directory or stacks_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.stack_name}.json"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, stack_name: str, directory: Path | None = None) -> StackRecord:
        """The record of ``stack_name``.

        Raises:
            StackNotFoundError: this clone has not deployed it (or the record was removed by ``seglog destroy``).
        """
        path = (directory or stacks_dir()) / f"{stack_name}.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StackNotFoundError(stack_name, f"recorded in {path.parent}") from None
        return cls(**data)

    @staticmethod
    def forget(stack_name: str, directory: Path | None = None) -> None:
        ((directory or stacks_dir()) / f"{stack_name}.json").unlink(missing_ok=True)

