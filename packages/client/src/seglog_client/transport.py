"""One HTTP exchange: a request out, the whole answer back — or no answer.

:func:`exchange` goes over the network (stdlib ``http.client``). Every exchange uses a connection of its own,
closed afterwards, so a try that lost its answer leaves nothing behind that a retry could trip over. No answer
(refused, reset, timed out, closed mid-answer) is :class:`NoAnswer`: the request may or may not have been acted
on, which is what the retry protocol is for.

:class:`InProcess` hands the same request, bytes and signed headers as they would go out, to a server in this
process (the simulator's gateway in front of the API handler), so that the client's own encoding, signing and
retry decisions run against the real handler without a socket.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
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


class Transport(Protocol):
    """How a client sends one try: :func:`exchange`'s signature."""

    def __call__(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str],
                 timeout: float) -> Response: ...


#: A server in this process: (method, target as sent — path and query —, header pairs, body, seconds the client
#: waits) -> (status, header pairs, body), or None when no answer comes (lost, or not within the timeout).
type Server = Callable[[str, str, list[tuple[str, str]], bytes, float], tuple[int, list[tuple[str, str]], bytes] | None]


@dataclass(frozen=True)
class InProcess:
    """A :class:`Transport` to ``server`` in this process: the request as :func:`exchange` would send it (the
    target as sent, the headers given plus Host), the answer as :func:`exchange` reads it (header names in lower
    case); no answer is :class:`NoAnswer`."""

    server: Server

    def __call__(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str],
                 timeout: float) -> Response:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        pairs = list(headers.items())
        if not any(name.lower() == "host" for name, _ in pairs):
            pairs.append(("host", parts.netloc))
        answer = self.server(method, target, pairs, body or b"", timeout)
        if answer is None:
            raise NoAnswer(f"no answer within {timeout:g} s (in-process)")
        status, answer_headers, payload = answer
        return Response(status=status, headers={k.lower(): v for k, v in answer_headers}, body=payload)
