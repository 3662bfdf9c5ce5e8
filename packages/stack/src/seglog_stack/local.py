"""The local deployment: the stack processes plus the template's resources provisioned on them.

`seglog up` starts the stack (seglog_stack) and provisions template.yaml onto it, then records endpoints
and physical names in ``<run dir>/deployment.json`` so later commands (and other processes) find them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog_awsmodel.template import load_template
from seglog_stack import StackConfig, StackManager
from seglog_stack.clients import local_client
from seglog_stack.provision import Provisioner

STATE_FILE = "deployment.json"
DEFAULT_STACK_NAME = "seglog"


@dataclass(frozen=True, kw_only=True)
class LocalDeployment:
    """A template provisioned on the local stack (any template: an application reads its own resources out of
    ``names``, ``types`` and ``attributes``, as seglog's does in :mod:`seglog_plugin.resources`).

    Attributes:
        names: what was made, by logical id (a table's or bucket's name, a queue's URL, a topic's ARN).
        types: each provisioned resource's type, by logical id.
        attributes: ``"Logical.Arn"``, ``"Logical.StreamArn"``: what ``!GetAtt`` reads.
    """

    profile: str
    region: str
    endpoints: dict[str, str]
    names: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "region": self.region, "endpoints": self.endpoints, "names": self.names,
                "types": self.types, "attributes": self.attributes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocalDeployment:
        """What :meth:`to_dict` wrote (a record of an older version has no ``types``: an application finds none of
        its resources in it until ``seglog up`` runs again)."""
        return cls(profile=data["profile"], region=data["region"], endpoints=data["endpoints"],
                   names=dict(data.get("names") or {}), types=dict(data.get("types") or {}),
                   attributes=dict(data.get("attributes") or {}))

    def env(self) -> dict[str, str]:
        """Environment for a process that should use this deployment: the SDK's endpoints, region and
        credentials."""
        from seglog_stack.info import stack_env

        return stack_env(self.endpoints, self.region)


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
    made = provisioner.provision()
    types = {logical: str(resource.get("Type", "")) for logical, resource in provisioner.template.resources.items()
             if logical in made.names}
    return LocalDeployment(profile=profile, region=region, endpoints=endpoints, names=made.names, types=types,
                           attributes=made.attributes)


def deprovision(endpoints: dict[str, str], *, region: str, stack_name: str, template: Path | None = None,
                parameters: dict[str, Any] | None = None) -> None:
    """Delete the template's resources of ``stack_name`` from the running stack at ``endpoints`` (``parameters``:
    the overrides it was provisioned with, where explicit names are made of parameters)."""
    _provisioner(endpoints, region=region, template=template, stack_name=stack_name, parameters=parameters).delete()


def _provisioner(endpoints: dict[str, str], *, region: str, template: Path | None, stack_name: str,
                 parameters: dict[str, Any] | None = None) -> Provisioner:
    return Provisioner(
        load_template(template), stack=stack_name, region=region,
        dynamodb=local_client("dynamodb", endpoint_url=endpoints["dynamodb"], region=region),
        s3=local_client("s3", endpoint_url=endpoints["s3"], region=region),
        sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region), parameters=parameters,
        sns=local_client("sns", endpoint_url=endpoints["sns"], region=region) if "sns" in endpoints else None,
    )


def current(config: StackConfig) -> LocalDeployment | None:
    """The deployment recorded by the last `up` in this run dir, or None."""
    path = config.run_dir / STATE_FILE
    if not path.is_file():
        return None
    return LocalDeployment.from_dict(json.loads(path.read_text()))


def forget(config: StackConfig) -> None:
    (config.run_dir / STATE_FILE).unlink(missing_ok=True)
