"""The local deployment: the stack processes plus the template's resources provisioned on them.

`seglog up` starts the stack (seglog_stack) and provisions template.yaml onto it, then records endpoints
and physical names in ``<run dir>/deployment.json`` so later commands (and other processes) find them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog_aws.backend import Backend
from seglog_aws.clients import local_session
from seglog_aws.resources import Resources
from seglog_awsmodel.template import load_template
from seglog_stack import StackConfig, StackManager
from seglog_stack.clients import local_client
from seglog_stack.errors import StackError
from seglog_stack.provision import Provisioner

STATE_FILE = "deployment.json"
DEFAULT_STACK_NAME = "seglog"


@dataclass(frozen=True, kw_only=True)
class LocalDeployment:
    """A template provisioned on the local stack.

    Attributes:
        names: what was made, by logical id (a table's or bucket's name, a queue's URL), for any template.
        attributes: ``"Logical.Arn"``, ``"Logical.StreamArn"``: what ``!GetAtt`` reads.
        seglog: seglog's own resources when the template is seglog's (:meth:`Resources.of_template`), else None.
    """

    profile: str
    region: str
    endpoints: dict[str, str]
    names: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    seglog: Resources | None = None

    @property
    def resources(self) -> Resources:
        """seglog's resources.

        Raises:
            StackError: the provisioned template is not seglog's (it has no Segments table, SnapshotQueue, ...).
        """
        if self.seglog is None:
            raise StackError("this deployment's template is not seglog's (it declares none of seglog's tables and "
                             f"queues; it has {', '.join(sorted(self.names)) or 'no resources'}): seglog's commands "
                             "need `seglog up` with seglog's template.yaml")
        return self.seglog

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"profile": self.profile, "region": self.region, "endpoints": self.endpoints,
                                "names": self.names, "attributes": self.attributes}
        if self.seglog is not None:
            data["resources"] = self.seglog.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocalDeployment:
        """What :meth:`to_dict` wrote (a record of an older version has only ``resources``: seglog's)."""
        resources = data.get("resources")
        return cls(profile=data["profile"], region=data["region"], endpoints=data["endpoints"],
                   names=dict(data.get("names") or {}), attributes=dict(data.get("attributes") or {}),
                   seglog=Resources(**resources) if resources else None)

    def env(self) -> dict[str, str]:
        """Environment for a process that should use this deployment (SDK endpoints, and seglog's resource names
        when the template is seglog's)."""
        from seglog_stack.info import stack_env

        return {**stack_env(self.endpoints, self.region), **(self.seglog.env() if self.seglog else {})}

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
    made = provisioner.provision()
    types = {logical: str(resource.get("Type", "")) for logical, resource in provisioner.template.resources.items()}
    return LocalDeployment(profile=profile, region=region, endpoints=endpoints, names=made.names,
                           attributes=made.attributes, seglog=Resources.of_template(types, made.names, made.attributes))


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
