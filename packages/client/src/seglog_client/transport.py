"""One HTTP exchange (stdlib ``http.client``): a request out, the whole answer back — or no answer.

Every exchange uses a connection of its own, closed afterwards, so a try that lost its answer leaves nothing
behind that a retry could trip over. No answer (refused, reset, timed out, closed mid-answer) is
:class:`NoAnswer`: the request may or may not have been acted on, which is what the retry protocol is for.
"""

from __future__ import annotations

import http.client
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, kw_only=True)
class Response:
    """An answer: status, headers (names in lower case), the whole body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class NoAnswer(Exception):
    """The exchange ended without an answer; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def exchange(method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout: float) -> Response:
    """Send ``method url`` with ``body`` and exactly ``headers`` (plus Host and Content-Length, which http.client
    adds unless given), and read the whole answer.

    Raises:
        NoAnswer: the connection failed, timed out, or closed before a complete answer.
    """
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, parts.port, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    # The query goes out as given: a presigned URL's signature covers its exact encoding.
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers=dict(headers))
        answer = connection.getresponse()
        return Response(status=answer.status, headers={k.lower(): v for k, v in answer.getheaders()},
                        body=answer.read())
    except (OSError, http.client.HTTPException) as exc:
        raise NoAnswer(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc
    finally:
        connection.close()
