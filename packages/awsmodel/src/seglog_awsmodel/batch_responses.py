"""Reading a function's partial batch response, for both kinds of mapping (DESIGN §9.1, §9.7).

"Lambda treats a batch as a complete failure if your function returns ... an empty string itemIdentifier, a null
itemIdentifier, an itemIdentifier with a bad key name" (AWS Lambda Developer Guide, services-sqs-errorhandling
and services-ddb-batchfailurereporting). The docs do not say what an identifier that is not in the batch does;
the model treats it the same way (a complete failure), since it cannot name a record to resume from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def reported_failures(payload: Any, known: set[str]) -> set[str] | None:
    """The item identifiers a successful invocation's response ``payload`` reported as failed; None when the
    response fails the whole batch. An empty or null list, or no response at all, is complete success."""
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
