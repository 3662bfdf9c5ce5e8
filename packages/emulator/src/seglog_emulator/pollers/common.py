"""What both pollers share: the invoker they call, fault-site keys, and reading a partial batch response."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from seglog_emulator.faults.kinds import FaultKind
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import InvocationResult

log = structlog.get_logger("seglog.poller")

#: Exit status of a poller process that a poller_restart fault stopped (the supervisor starts it again).
RESTART_EXIT_STATUS = 75


class Invoker(Protocol):
    """The part of :class:`seglog_emulator.invoker.LambdaInvoker` a poller uses."""

    def invoke(self, event: Mapping[str, Any], *, attempt: int = 1, source: str = "",
               crash_points: Iterable[str] = (), timeout: float | None = None, clock_skew: float = 0.0,
               environment: Mapping[str, str] | None = None,
               log_fields: Mapping[str, Any] | None = None) -> InvocationResult: ...


def site(*parts: object) -> str:
    """A fault-decision key from stable parts (content, not ids the services make up at random)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def reported_failures(payload: Any, known: set[str]) -> set[str] | None:
    """The item identifiers a successful invocation's response ``payload`` reported as failed; None when the
    response fails the whole batch (the simulator's mappings use this too).

    "Lambda treats a batch as a complete failure if your function returns ... an empty string itemIdentifier,
    a null itemIdentifier, an itemIdentifier with a bad key name" (AWS Lambda Developer Guide,
    services-sqs-errorhandling and services-ddb-batchfailurereporting); an identifier not in the batch is
    treated the same way. An empty or null list, or no response at all, is complete success.
    """
    if not isinstance(payload, Mapping):
        return set()
    failures = payload.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    reported: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not isinstance(identifier, str) or not identifier or identifier not in known:
            return None
        reported.add(identifier)
    return reported


def maybe_restart(faults: FaultSchedule | None, name: str, key: str) -> None:
    """The poller_restart fault: this poller process exits here, its in-memory state lost (the supervisor
    starts it again). Called between an invocation and its checkpoint or deletes, the worst moment."""
    if faults is not None and faults.decide(FaultKind.POLLER_RESTART, site("poller", name, key)):
        log.warning("poller restart (injected fault): exiting", poller=name)
        os._exit(RESTART_EXIT_STATUS)
