"""The physical names of seglog's resources, however they were created.

On AWS the functions receive them as environment variables from the template; locally `seglog up`
provisions them from the same template and records them. Code that needs a table asks a :class:`Resources`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from seglog_core.errors import SeglogError

#: Environment variable per field (what template.yaml gives each function).
ENV = {
    "segments_table": "SEGLOG_SEGMENTS_TABLE",
    "entries_table": "SEGLOG_ENTRIES_TABLE",
    "pending_table": "SEGLOG_PENDING_TABLE",
    "bucket": "SEGLOG_BUCKET",
    "queue_url": "SEGLOG_QUEUE_URL",
    "dlq_url": "SEGLOG_DLQ_URL",
    "entries_stream_arn": "SEGLOG_ENTRIES_STREAM_ARN",
}


#: The template's resources seglog's code addresses, by type and a word of their logical id (seglog's template.yaml
#: has exactly one of each). A template without them is not seglog's: the local stack provisions it all the same.
ROLES: dict[str, tuple[str, str]] = {
    "segments_table": ("AWS::DynamoDB::Table", "Segments"),
    "entries_table": ("AWS::DynamoDB::Table", "Entries"),
    "pending_table": ("AWS::DynamoDB::Table", "Pending"),
    "bucket": ("AWS::S3::Bucket", "Bucket"),
    "queue_url": ("AWS::SQS::Queue", "SnapshotQueue"),
    "dlq_url": ("AWS::SQS::Queue", "DeadLetter"),
}


@dataclass(frozen=True, kw_only=True)
class Resources:
    segments_table: str
    entries_table: str
    pending_table: str
    bucket: str
    queue_url: str = ""
    dlq_url: str = ""
    entries_stream_arn: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def env(self) -> dict[str, str]:
        """As environment variables, for a function or a child process."""
        return {ENV[k]: v for k, v in asdict(self).items() if v}

    @classmethod
    def of_template(cls, types: Mapping[str, str], names: Mapping[str, str], attributes: Mapping[str, str]
                    ) -> Resources | None:
        """seglog's resources among a provisioned template's: ``types`` and ``names`` by logical id (a queue's
        name is its URL), ``attributes`` as ``"Logical.StreamArn"``. None when the template is not seglog's
        (it lacks one of :data:`ROLES`, or has two candidates for one)."""
        found: dict[str, str] = {}
        for role, (type_, hint) in ROLES.items():
            candidates = [k for k, t in types.items() if t == type_ and hint.lower() in k.lower()]
            if len(candidates) != 1 or candidates[0] not in names:
                return None
            found[role] = candidates[0]
        return cls(**{role: names[logical] for role, logical in found.items()},
                   entries_stream_arn=attributes.get(f"{found['entries_table']}.StreamArn", ""))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Resources:
        environ = dict(os.environ) if environ is None else environ
        missing = [v for k, v in ENV.items() if k in _REQUIRED and not environ.get(v)]
        if missing:
            raise SeglogError(
                f"missing environment variables {missing}: run `eval \"$(seglog env)\"` locally, or deploy "
                "the template, which sets them on every function"
            )
        values: dict[str, Any] = {k: environ.get(v, "") for k, v in ENV.items()}
        return cls(**values)


_REQUIRED = ("segments_table", "entries_table", "pending_table", "bucket")
