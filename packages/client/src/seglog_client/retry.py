"""When the client tries again, and how long it waits first.

Retried: no answer at all (refused, reset, timed out), 5xx, and 429 — the transient failures the AWS SDKs retry
too ("socket-level failures where no HTTP response was received", 500/502/503/504, throttling: AWS SDKs and Tools
Reference Guide, "Retry behavior", https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html).
API Gateway answers 429 when it throttles, and the client "can resubmit the failed requests in a way that is
rate limiting" (API Gateway Developer Guide, "Throttling requests to your HTTP API",
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html). Any other 4xx is the
request's fault and is never retried.

Resending is safe because of what is resent: the identical request. An append names its entry id and the
position it looks from, so the server stores it once however many tries land, even overlapping ones
(the API's retry protocol, ``GET /openapi.json``); a create names the client's own log id; GETs change nothing.

The wait is exponential backoff with full jitter (uniform in [0, min(cap, base * 2**(n-1))] after try n: AWS
Architecture Blog, "Exponential Backoff And Jitter"), and at least what a ``Retry-After`` header asks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final

from seglog_client.transport import Response

#: 500s the server sends when retrying cannot help (a log written by newer code, a corrupt log): the message
#: says what an operator must do, so the client reports it at once instead of trying again and again.
FINAL_SERVER_CODES: Final = frozenset({"log_too_new", "corrupt_log"})
TOO_MANY_REQUESTS: Final = 429


def retryable(status: int) -> bool:
    """Whether an answer with ``status`` is tried again (before looking at its error code)."""
    return status >= 500 or status == TOO_MANY_REQUESTS


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Exponential backoff with full jitter, bounded by ``cap``; ``Retry-After`` honoured up to ``max_wait``.

    Attributes:
        base: the ceiling of the first wait, in seconds.
        cap: the largest ceiling.
        max_wait: the longest a ``Retry-After`` is honoured (a server asking for more gets this much).
        rng: the jitter's randomness (seed it to replay a run).
    """

    base: float = 0.1
    cap: float = 5.0
    max_wait: float = 60.0
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if not 0 <= self.base <= self.cap:
            raise ValueError(f"Backoff needs 0 <= base <= cap, got base={self.base} cap={self.cap}")

    def delay(self, tries: int, retry_after: float | None = None) -> float:
        """Seconds to wait after try number ``tries`` (from 1) failed; at least ``retry_after`` when given."""
        ceiling = min(self.cap, self.base * 2.0 ** min(tries - 1, 60))
        jittered = self.rng.uniform(0.0, ceiling)
        if retry_after is None:
            return jittered
        return max(jittered, min(retry_after, self.max_wait))


def retry_after(response: Response | None, now: datetime | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks for: a number of seconds or an HTTP date (RFC 9110 §10.2.3);
    None when there is none or it cannot be read."""
    if response is None:
        return None
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
