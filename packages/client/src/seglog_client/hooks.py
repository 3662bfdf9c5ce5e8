"""What a client reports as it works: every try of every request, and every acknowledged append.

A :class:`ClientHooks` given to :class:`~seglog_client.SeglogClient` is called from the thread that made the
request; :class:`Counters` is one that tallies (the chaos runner's client statistics build on it).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Final, Protocol

from seglog_client.models import Appended

#: The response header in which an HTTP API names the request it answered: the gateway's own request id, its
#: ``$context.requestId`` (what the function's event carries as ``requestContext.requestId``). API Gateway reserves
#: the ``apigw-*`` headers for itself (Amazon API Gateway Developer Guide, http-api-parameter-mapping, "Reserved
#: headers": https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-parameter-mapping.html; the
#: logging variable: http-api-logging-variables).
REQUEST_ID_HEADER: Final = "apigw-requestid"


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One try of one request: ``number`` 1 is the first try; ``status`` None means no answer came."""

    method: str
    path: str
    number: int
    status: int | None
    #: Why there was no answer (or the error code of a refusal); None on success.
    error: str | None
    seconds: float
    #: The gateway's request id of the answer (its :data:`REQUEST_ID_HEADER`); None when no answer came or it
    #: named none.
    request_id: str | None = None

    @property
    def outcome(self) -> str:
        """``"lost"`` when no answer came, else the status as text (``"200"``, ``"503"``)."""
        return "lost" if self.status is None else str(self.status)


class ClientHooks(Protocol):
    """Callbacks of a client; both must be quick and must not raise."""

    def tried(self, attempt: Attempt) -> None:
        """After every try, answered or not."""

    def appended(self, log_id: uuid.UUID, answer: Appended) -> None:
        """After an append (or an upload's completion) was acknowledged."""


class NoHooks:
    """Hooks that do nothing."""

    def tried(self, attempt: Attempt) -> None:
        pass

    def appended(self, log_id: uuid.UUID, answer: Appended) -> None:
        pass


@dataclass
class Counters:
    """Tallies of what clients did; one instance may serve many clients in many threads.

    Attributes:
        requests: tries sent (first tries and retries).
        retries: tries that were not a request's first.
        appends: appends acknowledged.
        deduplicated: acknowledged appends that an earlier try had already stored.
        statuses: tries per outcome (``"200"``, ``"503"``, ``"lost"``).
    """

    requests: int = 0
    retries: int = 0
    appends: int = 0
    deduplicated: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def tried(self, attempt: Attempt) -> None:
        with self._lock:
            self.requests += 1
            self.retries += int(attempt.number > 1)
            self.statuses[attempt.outcome] += 1

    def appended(self, log_id: uuid.UUID, answer: Appended) -> None:
        with self._lock:
            self.appends += 1
            self.deduplicated += int(answer.deduplicated)
