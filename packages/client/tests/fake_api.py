"""A scripted stand-in for the seglog API: a real HTTP server on 127.0.0.1 (stdlib ``http.server``) that answers
each request with the next scripted reply and records every request as it arrived, byte for byte.

It does not imitate the API's behaviour (no log, no dedup): each test scripts the answers it needs, so what is
checked is the client's side of the protocol — what it sends, when it sends it again, what it makes of answers.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from seglog_client import Credentials

#: What test clients sign with (AWS's documentation example key): the fake checks no signature.
KEYS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


@dataclass(frozen=True)
class Reply:
    """An answer: ``body`` is JSON-encoded unless it is bytes; ``delay`` seconds pass before it is sent."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


#: Read the request, then close the connection without an answer (the server acted; the answer was lost).
DROP = Reply(status=0)


@dataclass(frozen=True)
class Seen:
    method: str
    #: The request target as sent: path and query.
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeApi:
    """Serves scripted replies in order (then ``default``), recording each request in ``requests``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.default: Reply | None = None
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def sent(self, method: str | None = None) -> list[Seen]:
        return [r for r in self.requests if method is None or r.method == method]

    def start(self) -> FakeApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            if self.replies:
                return self.replies.popleft()
        if self.default is None:
            raise AssertionError(f"unscripted request {seen.method} {seen.target}")
        return self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                reply = fake._next(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                        body))
                time.sleep(reply.delay)
                if reply.status == 0:
                    self.close_connection = True
                    return
                payload = reply.body if isinstance(reply.body, bytes) else (
                    b"" if reply.body is None else json.dumps(reply.body).encode())
                try:
                    self.send_response(reply.status)
                    for name, value in {"content-type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client stopped waiting (its timeout): nothing to answer to
                    self.close_connection = True

            do_GET = do_POST = do_PUT = _serve

        return Handler


@pytest.fixture
def fake() -> Iterator[FakeApi]:
    api = FakeApi().start()
    yield api
    api.stop()


# ------------------------------------------------------------------------------------------ answers


def position(segment: int, num: int) -> dict[str, int]:
    return {"segment": segment, "num": num}


def appended(entry_id: str, segment: int, num: int, *, deduplicated: bool = False) -> dict[str, Any]:
    return {"segment": segment, "num": num, "entry_id": entry_id, "deduplicated": deduplicated, "attempts": 1,
            "position": position(segment, num)}


def created(log_id: str, *, new: bool = True) -> Reply:
    return Reply(201 if new else 200, {"log_id": log_id, "created": new, "position": position(0, 0)})


def error(status: int, code: str, message: str = "what to do", **details: Any) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message, **details}})
