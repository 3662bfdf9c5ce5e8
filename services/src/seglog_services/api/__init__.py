"""api: the HTTP API of seglog behind an API Gateway HTTP API (payload format 2.0), DESIGN §1 item 2.

Routes (described in full at ``GET /openapi.json``)::

    POST /sheets                                        create a sheet               201 {"log_id"} | 200 existed
    POST /sheets/{log_id}/entries                       append                       200 Appended | 409 conflict
    GET  /sheets/{log_id}                               load (snapshot + tail)       200 {"snapshot","rows","position"}
    GET  /sheets/{log_id}/entries?segment=S&after=N     sync                         200 {"entries","position"} | reload
    GET  /sheets/{log_id}/snapshots                     snapshot status              200 {"segments","pending"}
    POST /sheets/{log_id}/uploads                       large entry 1: presigned PUT 201 {"upload_id","url",...}
    POST /sheets/{log_id}/uploads/{upload_id}/complete  large entry 3: append        200 Appended
    GET  /openapi.json                                  this API's OpenAPI 3.1 document

Request bodies are JSON sent as ``application/json`` (415 otherwise). Failures answer ``{"error": {"code",
"message"}}``: 4xx for bad requests, 503 (Retry-After) for storage.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import structlog

from seglog_core.errors import SeglogError
from seglog_services import runtime
from seglog_services.api.routes import answering, app, hosted

log = structlog.get_logger("seglog.api")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One HTTP request: route it, answer it, and log one line (method, path, status, log_id, duration)."""
    http = event.get("requestContext", {}).get("http", {})
    # The deadline bounds the stores' retries and EventLog's: an append that runs out of time answers 503
    # (repeat with the same entry id) instead of being killed mid-request.
    with runtime.invocation("api", context), answering(event):
        # Configures logging on a cold start; a misconfiguration surfaces again (as a JSON 500) in the route.
        if not hosted():
            with contextlib.suppress(SeglogError):
                runtime.backend()
        started = time.perf_counter()
        response = app.resolve(event, context)
        bound = structlog.contextvars.get_contextvars()
    log.info("request", method=http.get("method"), path=event.get("rawPath"), status=response.get("statusCode"),
             log_id=bound.get("log_id"), duration_ms=round((time.perf_counter() - started) * 1000, 1))
    return response


__all__ = ["app", "handler"]
