"""seglog's resources (its three tables, bucket and two queues, by role) in a deployment of any kind.

The local stack (:class:`seglog_stack.local.LocalDeployment`) and a deploy's record
(:class:`seglog_deploy.record.StackRecord`) know a template's resources by logical id only; this module reads seglog's
roles out of them (:meth:`seglog_aws.resources.Resources.of_template` for a local deployment, the stack's outputs for a
deployed one), and gives the environment and the stores seglog's commands use.
"""

from __future__ import annotations

import dataclasses

from seglog_aws.backend import Backend
from seglog_aws.clients import local_session
from seglog_aws.resources import Resources
from seglog_deploy.errors import DeployError
from seglog_deploy.record import StackRecord
from seglog_stack.errors import StackError
from seglog_stack.local import LocalDeployment

#: The template's outputs, by the Resources field each one fills.
OUTPUT_FIELDS = {
    "SegmentsTableName": "segments_table",
    "EntriesTableName": "entries_table",
    "PendingSnapshotsTableName": "pending_table",
    "SnapshotBucketName": "bucket",
    "SnapshotQueueUrl": "queue_url",
    "SnapshotDeadLetterQueueUrl": "dlq_url",
    "EntriesStreamArn": "entries_stream_arn",
}


def seglog_resources(deployment: LocalDeployment) -> Resources | None:
    """seglog's resources when the provisioned template is seglog's (it declares its tables and queues), else None."""
    return Resources.of_template(deployment.types, deployment.names, deployment.attributes)


def resources_of(deployment: LocalDeployment) -> Resources:
    """seglog's resources in a local deployment.

    Raises:
        StackError: the provisioned template is not seglog's (it has no Segments table, SnapshotQueue, ...), or the
            deployment was recorded by an older version (``seglog up`` again).
    """
    resources = seglog_resources(deployment)
    if resources is None:
        raise StackError("this deployment's template is not seglog's (it declares none of seglog's tables and "
                         f"queues; it has {', '.join(sorted(deployment.names)) or 'no resources'}): seglog's "
                         "commands need `seglog up` with seglog's template.yaml")
    return resources


def backend_of(deployment: LocalDeployment) -> Backend:
    """seglog's stores and clients on a local deployment."""
    return Backend.connect(resources_of(deployment), endpoints=deployment.endpoints,
                           session=local_session(deployment.region))


def local_env(deployment: LocalDeployment) -> dict[str, str]:
    """The SDK's variables for the local stack, and seglog's resource names when the template is seglog's (what
    ``seglog env`` prints)."""
    resources = seglog_resources(deployment)
    return {**deployment.env(), **(resources.env() if resources else {})}


def record_resources(record: StackRecord) -> Resources:
    """The physical names of a deployed stack's tables, bucket and queues, from its outputs.

    Raises:
        DeployError: an output seglog needs is missing (the stack came from another template).
    """
    values = {f: record.outputs[o] for o, f in OUTPUT_FIELDS.items() if record.outputs.get(o)}
    required = {f.name for f in dataclasses.fields(Resources) if f.default is dataclasses.MISSING}
    missing = [o for o, f in OUTPUT_FIELDS.items() if f not in values and f in required]
    if missing:
        raise DeployError(f"stack {record.stack_name} has no output {', '.join(missing)}: deploy seglog's "
                          "template.yaml (or a template with the same outputs)")
    return Resources(**values)


def record_env(record: StackRecord) -> dict[str, str]:
    """The variables for the CLI and the client library: the record's own (API URL, region, endpoint) and seglog's
    resource names."""
    return {**record.env(), **record_resources(record).env()}
