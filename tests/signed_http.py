"""Raw HTTP to a gateway, signed as the API requires (SigV4, execute-api) or deliberately not, for tests that need
exact bytes on the wire rather than the client library."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from seglog_aws.clients import DEFAULT_REGION, LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY
from seglog_client.sigv4 import Credentials, sign
from seglog_client.transport import exchange

#: The key pair the emulator's gateway accepts by default.
LOCAL = Credentials(LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def send(method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None) -> Reply:
    """``method url`` with exactly ``headers`` (plus Host and Content-Length), unsigned."""
    answer = exchange(method, url, body, dict(headers or {}), 30.0)
    return Reply(answer.status, answer.headers, answer.body)


def signed(method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None, *,
           credentials: Credentials = LOCAL, region: str = DEFAULT_REGION, now: datetime | None = None) -> Reply:
    """``method url`` signed with ``credentials`` for ``region``'s execute-api."""
    return send(method, url, body, sign(method, url, dict(headers or {}), body, credentials, region=region, now=now))


def call(method: str, url: str, payload: Any = None) -> tuple[int, Any]:
    """A signed request with a JSON body; the status and the decoded JSON answer."""
    data = None if payload is None else json.dumps(payload).encode()
    reply = signed(method, url, data, {"content-type": "application/json"})
    return reply.status, reply.json
