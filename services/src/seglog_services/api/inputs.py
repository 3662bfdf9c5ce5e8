"""What a request brings, read strictly: the ids in its path, its JSON body, its query numbers and the retry
protocol's fields. Each refusal is a 4xx :class:`~seglog_services.api.errors.ApiError` that says what to send."""

from __future__ import annotations

import base64
import binascii
import uuid
from http import HTTPStatus

import msgspec
import structlog
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from seglog_core.idempotence import Position
from seglog_core.schema import MAX_NUM
from seglog_services.api.errors import ApiError
from seglog_services.api.schemas import JsonDecoder, PositionIn
from seglog_services.api.uploads import media_type

#: Largest JSON request body; bigger entries take the upload flow (Lambda's own limit is 6 MB).
MAX_REQUEST_BYTES = 1024 * 1024
#: The media type of every request body (:func:`json_body_type`).
JSON_MEDIA_TYPE = "application/json"


def log_id_of(text: str) -> uuid.UUID:
    try:
        log_id = uuid.UUID(text)
    except ValueError:
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_log_id",
                       f"{text!r} is not a log id: use the log_id POST /sheets returned (a UUID)") from None
    structlog.contextvars.bind_contextvars(log_id=str(log_id))
    return log_id


def upload_id_of(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_upload_id",
                       f"{text!r} is not an upload id: use the upload_id POST .../uploads returned") from None


def request_body[T](event: BaseProxyEvent, decoder: JsonDecoder[T], *, empty: T | None = None) -> T:
    """The request's JSON body decoded strictly; ``empty`` stands for a missing body where one is optional."""
    text = event.body or ""
    try:
        raw = base64.b64decode(text, validate=True) if event.is_base64_encoded else text.encode()
    except binascii.Error:
        raise ApiError(HTTPStatus.BAD_REQUEST, "malformed_body", "the body is not valid base64") from None
    if len(raw) > MAX_REQUEST_BYTES:
        raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                       f"the request body is {len(raw)} bytes, the limit is {MAX_REQUEST_BYTES}: send large "
                       "entries with POST /sheets/{log_id}/uploads")
    if not raw.strip():
        if empty is not None:
            return empty
        raise ApiError(HTTPStatus.BAD_REQUEST, "missing_body", "the request needs a JSON body: see /openapi.json")
    json_body_type(event.headers.get("content-type"))
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_request",
                       f"{exc}: fix the request (the fields are in /openapi.json)") from None
    except msgspec.DecodeError as exc:
        raise ApiError(HTTPStatus.BAD_REQUEST, "malformed_json",
                       f"the body is not valid JSON ({exc}): send one JSON object") from None


def json_body_type(content_type: str | None) -> None:
    """Refuse (415) a JSON body sent under another Content-Type than ``application/json``, the one media type the
    OpenAPI document declares: parameters and case aside (``application/json; charset=utf-8`` is taken), nothing
    else is, not even ``application/*+json`` (its own format's semantics, merge-patch for one, are not this
    API's)."""
    if media_type(content_type or "") != JSON_MEDIA_TYPE:
        sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
        raise ApiError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                       f"the JSON body came with {sent}: send it with Content-Type: {JSON_MEDIA_TYPE}")


def query_int(event: BaseProxyEvent, name: str, default: int | None = None, *, minimum: int = 0,
              maximum: int = MAX_NUM) -> int:
    """A whole-number query parameter, bounded; ``default`` when it is absent (else 400)."""
    value = (event.query_string_parameters or {}).get(name)
    if value is None:
        if default is not None:
            return default
        raise ApiError(HTTPStatus.BAD_REQUEST, "missing_parameter",
                       f"query parameter {name!r} is required: pass the position the client last saw")
    if (not (value.isascii() and value.isdigit()) or len(value) > len(str(maximum))
            or not minimum <= int(value) <= maximum):
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_parameter",
                       f"query parameter {name!r} is {value[:40]!r}: give a whole number from {minimum} to {maximum}")
    return int(value)


#: Why a request without the retry protocol's fields is refused, and what to send (README "Appending exactly once").
_PROTOCOL = ("so that a retry is never stored twice (README, \"Appending exactly once\"): send the same entry_id and "
             "since on every try of this entry")


def retry_position(entry_id: uuid.UUID | None, since: PositionIn | int | None, expected: PositionIn | None
                   ) -> tuple[uuid.UUID, Position, bool]:
    """The entry id, the position to read forward from, and whether the entry must land right after it.

    Refuses (400) a request the retry protocol cannot make safe: no entry id, or no position to look from.
    """
    if entry_id is None:
        raise ApiError(HTTPStatus.BAD_REQUEST, "missing_entry_id",
                       f"entry_id is required: a UUID the client makes once for this entry, {_PROTOCOL}")
    if isinstance(since, int):
        raise ApiError(HTTPStatus.BAD_REQUEST, "position_required",
                       'since must be a position {"segment": s, "num": n} as the API answers it (`position`): a '
                       "bare num cannot say which segment")
    if since is not None and expected is not None:
        raise ApiError(HTTPStatus.BAD_REQUEST, "since_and_expected",
                       "send since (append after what you saw) or expected (the exact position), not both")
    if expected is not None:
        if expected.num == 0:
            raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_expected",
                           "num 0 of a segment is its Snapshot entry: expected must be a num of 1 or more")
        return entry_id, Position(segment=expected.segment, num=expected.num - 1), True
    if since is None:
        raise ApiError(HTTPStatus.BAD_REQUEST, "missing_since",
                       "since is required: the position ({segment, num}) of the last answer the client had before "
                       f"this entry's first try (a new sheet's is 0/0), {_PROTOCOL}")
    return entry_id, Position(segment=since.segment, num=since.num), False
