"""A stack's events as they arrive, and the ones that explain a failure.

DescribeStackEvents answers newest first, a page at a time (AWS CloudFormation API Reference,
DescribeStackEvents). :class:`EventReader` remembers what it has shown and returns only newer events, oldest
first, so progress reads like a log. Events are read by stack id, which keeps answering after the stack is
deleted (the name does not).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

#: Reasons CloudFormation gives resources it stopped because another one failed: not a cause.
CANCELLED_MARKERS = ("cancelled", "canceled")


@dataclass(frozen=True, kw_only=True)
class StackEvent:
    """One event, with CloudFormation's names (ResourceStatus, ResourceStatusReason...) made plain."""

    event_id: str
    timestamp: dt.datetime
    logical_id: str
    physical_id: str
    resource_type: str
    status: str
    reason: str | None = None

    @classmethod
    def from_api(cls, event: dict[str, Any]) -> StackEvent:
        return cls(event_id=event["EventId"], timestamp=event["Timestamp"],
                   logical_id=event.get("LogicalResourceId", ""), physical_id=event.get("PhysicalResourceId", ""),
                   resource_type=event.get("ResourceType", ""), status=event.get("ResourceStatus", ""),
                   reason=event.get("ResourceStatusReason") or None)

    @property
    def failed(self) -> bool:
        """CREATE_FAILED, UPDATE_FAILED, DELETE_FAILED, IMPORT_FAILED ... of a resource or the stack."""
        return self.status.endswith("_FAILED")

    def line(self) -> str:
        """One line of progress: time, status, type, logical id, and the reason when there is one."""
        reason = f"  {self.reason}" if self.reason else ""
        return f"{self.timestamp:%H:%M:%S}  {self.status:<26} {self.resource_type:<38} {self.logical_id}{reason}"


def causes(events: Iterable[StackEvent]) -> list[StackEvent]:
    """The failed resource events that explain a failure, oldest first: resources cancelled because another
    failed are left out when a real cause is there, and so is the stack's own summary event."""
    events = list(events)
    failed = [e for e in events if e.failed and e.resource_type != "AWS::CloudFormation::Stack"]
    real = [e for e in failed if not any(m in (e.reason or "").lower() for m in CANCELLED_MARKERS)]
    return real or failed or [e for e in events if e.failed]


class EventReader:
    """The events of one stack that this reader has not returned yet."""

    def __init__(self, cloudformation: Any, stack_id: str) -> None:
        self._cfn = cloudformation
        self.stack_id = stack_id
        self._seen: set[str] = set()

    def mark(self) -> None:
        """Count every event so far as seen (the history before this operation)."""
        self._read()

    def new(self) -> list[StackEvent]:
        """Events since the last call (or :meth:`mark`), oldest first."""
        return self._read()

    def _read(self) -> list[StackEvent]:
        fresh: list[StackEvent] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"StackName": self.stack_id}
            if token:
                kwargs["NextToken"] = token
            try:
                page = self._cfn.describe_stack_events(**kwargs)
            except ClientError as exc:
                if "does not exist" in str(exc):  # deleted, where a deleted stack's events are not kept
                    return []
                raise
            events = [StackEvent.from_api(e) for e in page.get("StackEvents", [])]
            unseen = [e for e in events if e.event_id not in self._seen]
            fresh.extend(unseen)
            token = page.get("NextToken")
            # Newest first: once a page holds an event already seen, the rest are older still.
            if not token or len(unseen) < len(events):
                break
        self._seen.update(e.event_id for e in fresh)
        # Oldest first; events with one timestamp keep CloudFormation's order (the page lists them newest first).
        return sorted(reversed(fresh), key=lambda e: e.timestamp)
