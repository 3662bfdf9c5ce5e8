"""Gateway: an HTTP server in front of the API function, speaking API Gateway HTTP API payload 2.0 (DESIGN §8).

Each request becomes the event API Gateway sends (:func:`seglog_aws.events.api_gateway.http_api_event`), with
the route key of the template's HttpApi event that matches; the handler's return value becomes the response
(:func:`~seglog_aws.events.api_gateway.http_api_response`), as API Gateway makes it. A function error or a
crash answers 500 ``{"message":"Internal Server Error"}`` and a timeout 503 ``{"message":"Service
Unavailable"}``, API Gateway's own answers (Amazon API Gateway Developer Guide, http-api-troubleshooting-lambda);
a path no route matches answers 404 ``{"message":"Not Found"}``. Clients use one base URL, locally and on AWS.

Fault (DESIGN §7): lost_response — the function ran (the write happened) but the connection is closed
without an answer, so the client sees an error and must retry safely (with its entry id).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import structlog

from seglog_aws.events.api_gateway import http_api_event, http_api_response
from seglog_emulator.config import HttpRoute
from seglog_emulator.faults.kinds import FaultKind
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import Outcome
from seglog_emulator.pollers.common import Invoker, site

log = structlog.get_logger("seglog.gateway")

#: Payloads larger than this are refused, as API Gateway refuses them (HTTP API quotas: 10 MB payload).
MAX_BODY_BYTES = 10 * 1024 * 1024

_ERRORS = {
    404: b'{"message":"Not Found"}',
    413: b'{"message":"Request Entity Too Large"}',
    500: b'{"message":"Internal Server Error"}',
    503: b'{"message":"Service Unavailable"}',
}


def route_key(routes: Sequence[HttpRoute], method: str, path: str) -> tuple[HttpRoute, str, dict[str, str]] | None:
    """The matching route, its routeKey and its path parameters (a greedy ``{proxy+}`` takes the rest)."""
    for route in routes:
        if route.Path == "$default":
            return route, "$default", {}
        if route.Method.upper() not in ("ANY", method.upper()):
            continue
        prefix, _, last = route.Path.rpartition("/")
        if last.startswith("{") and last.endswith("+}") and (path + "/").startswith(prefix + "/"):
            return route, f"{route.Method.upper()} {route.Path}", {last[1:-2]: path[len(prefix) + 1:]}
        if route.Path == path:
            return route, f"{route.Method.upper()} {route.Path}", {}
    return None


class Gateway:
    """Serves the routes of one function on ``host:port`` until :meth:`stop`.

    Args:
        routes: the function's HttpApi events.
        invoker: runs the function.
        faults: the seeded schedule, if faults are in play.
    """

    def __init__(self, routes: Sequence[HttpRoute], invoker: Invoker, *, host: str = "127.0.0.1", port: int = 0,
                 faults: FaultSchedule | None = None) -> None:
        self.routes = tuple(routes)
        self.invoker = invoker
        self.faults = faults
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), self._handler_class())
        self.server.daemon_threads = True
        self.requests = 0

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def serve(self) -> None:
        log.info("gateway listening", url=self.url, routes=[f"{r.Method} {r.Path}" for r in self.routes])
        self.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------------------------------ a request

    def answer(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
               ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        """The response to one request, or None to drop the connection (an injected lost response)."""
        with self._lock:
            self.requests += 1
        parts = urlsplit(target)
        path = parts.path or "/"
        matched = route_key(self.routes, method, path)
        if matched is None:
            return 404, [("content-type", "application/json")], _ERRORS[404]
        if len(body) > MAX_BODY_BYTES:
            return 413, [("content-type", "application/json")], _ERRORS[413]
        _, key, path_parameters = matched
        event = http_api_event(method, path, query=parts.query, headers=headers, body=body or None,
                               route_key=key, path_parameters=path_parameters or None)
        result = self.invoker.invoke(event, source="api", log_fields={"method": method, "path": path})
        if result.outcome is Outcome.TIMEOUT:
            return 503, [("content-type", "application/json")], _ERRORS[503]
        if not result.ok:
            return 500, [("content-type", "application/json")], _ERRORS[500]
        if self._lose(method, path, body):
            return None
        return http_api_response(result.payload)

    def _lose(self, method: str, path: str, body: bytes) -> bool:
        if self.faults is None or method.upper() in ("GET", "HEAD", "OPTIONS"):
            return False
        request = site(method.upper(), path, body.decode("utf-8", "replace"))
        with self._lock:
            self._seen[request] += 1
            n = self._seen[request]
        return self.faults.decide(FaultKind.LOST_RESPONSE, site("gateway", request, n)) is not None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    answer = gateway.answer(self.command, self.path, list(self.headers.items()), body)
                except Exception as exc:  # never leave a client hanging
                    log.error("gateway failed", error=str(exc), exc_info=True)
                    answer = 500, [("content-type", "application/json")], _ERRORS[500]
                if answer is None:
                    log.warning("response dropped (injected lost_response)", method=self.command, path=self.path)
                    self.close_connection = True
                    return
                status, headers, payload = answer
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return  # the invoker logs one line per request

        return Handler
