"""Error responses: every failure answers ``{"error": {"code", "message", ...}}``, never a traceback.

The status says whose move it is: 4xx the client's (fix the request), 503 nobody's (retry after a pause, with
the same entry id), 500 ours (the message says what an operator should do).
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from seglog_services.api.schemas import ENCODER

#: Seconds a client waits before retrying a 503 (sent as Retry-After).
RETRY_AFTER_SECONDS = 1


class ApiError(Exception):
    """A request the API refuses, with the status, a stable machine-readable code and a message for humans.

    ``details`` are extra members of the error object (e.g. the conflicting entry of a 409).
    """

    def __init__(self, status: HTTPStatus, code: str, message: str, **details: Any) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        super().__init__(message)


def json_response(status: int, data: Any, headers: Mapping[str, str] | None = None) -> Response[str]:
    """A JSON response (msgspec encodes UUIDs, floats and nested values as JSON)."""
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body=ENCODER.encode(data).decode(), headers=headers)


def error_response(status: HTTPStatus, code: str, message: str, *, headers: Mapping[str, str] | None = None,
                   **details: Any) -> Response[str]:
    if status is HTTPStatus.SERVICE_UNAVAILABLE:
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS), **(headers or {})}
    return json_response(status.value, {"error": {"code": code, "message": message, **details}}, headers)
