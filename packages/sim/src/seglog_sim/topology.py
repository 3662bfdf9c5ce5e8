"""What the simulation runs, read from template.yaml with the emulator's own reader (DESIGN §1.5: one topology).

Tables, bucket and queues are named by their logical ids; the functions' environments, timeouts, the two event
source mappings (their batch sizes, filters, retries, concurrency) and the queue's visibility timeout and
redrive policy are the template's, with the scenario's parameter overrides applied as ``--parameter-overrides``
would apply them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from seglog_awsmodel.config import EmulatorConfig, FunctionSpec, QueueMapping, QueueSpec, StreamMapping
from seglog_awsmodel.template import Template, load_template
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS

REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"
_PSEUDO: Final[dict[str, Any]] = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": "sim",
                                  "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": None}


def _resolve(value: Any) -> Any:
    """Resources by logical id (the simulated tables, bucket and queues are named so); ARNs made up alike."""
    if isinstance(value, Mapping) and "Ref" in value:
        name = value["Ref"]
        return _PSEUDO.get(name, name)
    if isinstance(value, Mapping) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        logical, attribute = target if isinstance(target, list) else str(target).split(".", 1)
        return f"arn:aws:sim:{REGION}:{ACCOUNT}:{logical}/{attribute}"
    return value


@dataclass(frozen=True, kw_only=True)
class Topology:
    """The functions and mappings the simulation drives, as the template declares them."""

    config: EmulatorConfig
    api: FunctionSpec
    router: FunctionSpec
    worker: FunctionSpec
    retention: FunctionSpec
    stream: StreamMapping
    jobs: QueueMapping
    queue: QueueSpec
    segments_table: str
    entries_table: str
    pending_table: str
    bucket: str
    #: The tables' Properties as the template declares them (key schema, attribute types, stream).
    tables: dict[str, dict[str, Any]]

    @property
    def dead_letter_queue(self) -> str | None:
        return self.queue.dead_letter_queue

    @property
    def takeover(self) -> int:
        """The snapshot worker's takeover timeout (SnapshotTakeoverSeconds, as its environment says)."""
        return int(self.worker.Environment.get("SEGLOG_TAKEOVER_SECONDS", DEFAULT_TAKEOVER_SECONDS))


def _function(config: EmulatorConfig, handler: str) -> FunctionSpec:
    for spec in config.functions.values():
        if spec.Handler == handler:
            return spec
    raise ValueError(f"the template has no function with handler {handler}")


@functools.cache
def _template(path: Path | None) -> Template:
    return load_template(path)


def load_topology(path: Path | None = None, parameters: tuple[tuple[str, Any], ...] = ()) -> Topology:
    """The template's topology (``path``: template.yaml by default) with ``parameters`` overridden."""
    return _topology(path, parameters)


@functools.cache
def _topology(path: Path | None, parameters: tuple[tuple[str, Any], ...]) -> Topology:
    config = EmulatorConfig.from_template(_template(path), _resolve, parameters=dict(parameters))
    api = _function(config, "seglog_services.api.handler")
    router = _function(config, "seglog_services.stream_router.handler")
    worker = _function(config, "seglog_services.snapshot_worker.handler")
    retention = _function(config, "seglog_services.retention.handler")
    stream = next(m for m in config.stream_mappings if m.function == router.logical_id)
    jobs = next(m for m in config.queue_mappings if m.function == worker.logical_id)
    env = worker.Environment
    resources = _template(path).resources
    tables = {env[v]: dict(resources[env[v]]["Properties"]) for v in
              ("SEGLOG_SEGMENTS_TABLE", "SEGLOG_ENTRIES_TABLE", "SEGLOG_PENDING_TABLE")}
    return Topology(config=config, api=api, router=router, worker=worker, retention=retention, stream=stream,
                    jobs=jobs,
                    queue=config.queues[jobs.queue], segments_table=env["SEGLOG_SEGMENTS_TABLE"],
                    entries_table=env["SEGLOG_ENTRIES_TABLE"], pending_table=env["SEGLOG_PENDING_TABLE"],
                    bucket=env["SEGLOG_BUCKET"], tables=tables)
