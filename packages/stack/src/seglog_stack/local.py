"""The local deployment: the stack processes plus the template's resources provisioned on them.

`seglog up` starts the stack (seglog_stack) and provisions template.yaml onto it, then records endpoints
and physical names in ``<run dir>/deployment.json`` so later commands (and other processes) find them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seglog_aws.backend import Backend
from seglog_aws.clients import local_session
from seglog_aws.resources import Resources
from seglog_awsmodel.template import load_template
from seglog_stack import StackConfig, StackManager
from seglog_stack.clients import local_client
from seglog_stack.provision import Provisioner

STATE_FILE = "deployment.json"
DEFAULT_STACK_NAME = "seglog"


@dataclass(frozen=True, kw_only=True)
class LocalDeployment:
    profile: str
    region: str
    endpoints: dict[str, str]
    resources: Resources

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "region": self.region, "endpoints": self.endpoints,
                "resources": self.resources.to_dict()}

    def env(self) -> dict[str, str]:
        """Environment for a process that should use this deployment (SDK endpoints + resource names)."""
        from seglog_stack.info import stack_env

        return {**stack_env(self.endpoints, self.region), **self.resources.env()}

    def backend(self) -> Backend:
        """Stores and clients for this deployment."""
        return Backend.connect(self.resources, endpoints=self.endpoints, session=local_session(self.region))


def up(config: StackConfig, *, template: Path | None = None, stack_name: str = DEFAULT_STACK_NAME,
       parameters: dict[str, Any] | None = None) -> LocalDeployment:
    """Start (or reuse) the local stack and provision the template's resources on it (idempotent), with
    template ``parameters`` overridden."""
    info = StackManager(config).up()
    deployment = provision(dict(info.endpoints), profile=str(config.profile), region=config.region,
                           template=template, stack_name=stack_name, parameters=parameters)
    path = config.run_dir / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(deployment.to_dict(), indent=2))
    return deployment


def provision(endpoints: dict[str, str], *, profile: str, region: str, template: Path | None = None,
              stack_name: str = DEFAULT_STACK_NAME, parameters: dict[str, Any] | None = None) -> LocalDeployment:
    """Provision the template's resources onto a running stack at ``endpoints`` (host processes or Docker),
    with template ``parameters`` overridden (as ``sam deploy --parameter-overrides`` would)."""
    provisioner = _provisioner(endpoints, region=region, template=template, stack_name=stack_name,
                               parameters=parameters)
    return LocalDeployment(profile=profile, region=region, endpoints=endpoints, resources=provisioner.provision())


def deprovision(endpoints: dict[str, str], *, region: str, stack_name: str, template: Path | None = None) -> None:
    """Delete the template's resources of ``stack_name`` from the running stack at ``endpoints``."""
    _provisioner(endpoints, region=region, template=template, stack_name=stack_name).delete()


def _provisioner(endpoints: dict[str, str], *, region: str, template: Path | None, stack_name: str,
                 parameters: dict[str, Any] | None = None) -> Provisioner:
    return Provisioner(
        load_template(template), stack=stack_name, region=region,
        dynamodb=local_client("dynamodb", endpoint_url=endpoints["dynamodb"], region=region),
        s3=local_client("s3", endpoint_url=endpoints["s3"], region=region),
        sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region), parameters=parameters,
    )


def current(config: StackConfig) -> LocalDeployment | None:
    """The deployment recorded by the last `up` in this run dir, or None."""
    path = config.run_dir / STATE_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return LocalDeployment(profile=data["profile"], region=data["region"], endpoints=data["endpoints"],
                           resources=Resources(**data["resources"]))


def forget(config: StackConfig) -> None:
    (config.run_dir / STATE_FILE).unlink(missing_ok=True)
