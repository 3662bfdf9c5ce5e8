"""The routes of the API and how each failure becomes a response (Powertools' APIGatewayHttpResolver).

Every route decodes its input strictly, calls the core (EventLog, LogReader, SheetDocument) and answers JSON.
The core's errors are mapped to statuses in one place, the exception handlers at the end of this module.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import structlog
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from seglog_aws.backend import Backend
from seglog_core import errors
from seglog_core.document import SheetDocument
from seglog_core.idempotence import append_after
from seglog_core.log import Appended, EventLog
from seglog_core.reader import LogView
from seglog_core.schema import Body, Entry, EntryType
from seglog_core.sheet.validate import validate_body
from seglog_services import runtime
from seglog_services.api import openapi
from seglog_services.api.errors import ApiError, error_response, json_response
from seglog_services.api.inputs import log_id_of, query_int, request_body, upload_id_of
from seglog_services.api.inputs import retry_position as retry_position  # bench.bench_append reads it from here
from seglog_services.api.pages import MAX_PAGE_BYTES, LoadCursor, escaped_size, page_rows
from seglog_services.api.schemas import (
    APPEND_DECODER,
    COMPLETE_DECODER,
    CREATE_DECODER,
    UPLOAD_DECODER,
    CreateRequest,
    LogPosition,
    SheetCreated,
    entry_json,
    entry_ref,
    pending_json,
    position_json,
    segment_json,
    to_body,
)
from seglog_services.api.uploads import Uploads, default_entry_id, presign_client

log = structlog.get_logger("seglog.api")

app = APIGatewayHttpResolver()

#: The request a route answers. Not ``app.current_event``: Powertools keeps that on its router *class*, one for the
#: whole process, so two requests resolved at once (threads calling the handler; the simulator's tasks) read each
#: other's. Lambda runs one invocation per environment and never shows it; a test calling the handler from five
#: threads did, a copy of one append answering with another client's entry (CI,
#: test_retries_of_one_entry_id_racing_other_writers_store_it_once). A context variable is per thread and per task.
_request: contextvars.ContextVar[APIGatewayProxyEventV2] = contextvars.ContextVar("seglog_api_request")


@contextlib.contextmanager
def answering(event: dict[str, Any]) -> Iterator[None]:
    """Make ``event`` the request the routes read (:func:`current_request`) until the block ends."""
    token = _request.set(APIGatewayProxyEventV2(event))
    try:
        yield
    finally:
        _request.reset(token)


def current_request() -> APIGatewayProxyEventV2:
    """The request being answered: the handler's (:func:`answering`), else Powertools' own (a direct resolve)."""
    current = _request.get(None)
    return current if current is not None else app.current_event


@dataclass(kw_only=True)
class Services:
    """What the routes use, built once per container from the runtime's backend."""

    backend: Backend
    #: Appends of the API: no tail cache, so a repeated entry id right after its append is found by the
    #: append's own latest-entry read (containers share no cache; a cached tail would write a second copy).
    log: EventLog
    #: Appends of completed uploads: every body goes to S3 (``E``), whatever its size. Checked by :func:`fitting`
    #: as :attr:`log` is, so an uploaded range past XFD is 422 ``does_not_fit`` as a direct append is.
    external_log: EventLog
    document: SheetDocument
    uploads: Uploads
    #: The retry horizon retention keeps (RetentionMinAgeSeconds), named in a 410 ``since_retired``.
    horizon: float
    #: The most a load or sync page's body takes (escaped, as Lambda counts it); the simulator makes it small so
    #: that its loads and syncs take several pages while others write.
    page_bytes: int = MAX_PAGE_BYTES

    @classmethod
    def build(cls, backend: Backend) -> Services:
        every = int(os.environ.get("SEGLOG_SNAPSHOT_EVERY", "1000"))
        # The segment size policy (template parameter SegmentEntries): without it a log's one segment would grow
        # without bound and retention could never retire anything.
        size = int(os.environ.get("SEGLOG_SEGMENT_ENTRIES", "100000"))
        return cls(
            backend=backend,
            log=backend.event_log(snapshot_every=every, segment_entries=size, cache_tail=False, validate=fitting),
            external_log=backend.event_log(snapshot_every=every, segment_entries=size, cache_tail=False,
                                           large_threshold=0, validate=fitting),
            document=backend.document(),
            uploads=Uploads(s3=presign_client(), bucket=backend.resources.bucket, blobs=backend.blobs),
            horizon=float(os.environ.get("SEGLOG_RETENTION_MIN_AGE_SECONDS", "604800")),
        )


_services: Services | None = None
#: Services a host process installed in place of the container's (:func:`hosting`).
_hosted: Services | None = None


def services() -> Services:
    """The container's services, rebuilt when the runtime's backend changes (tests clear its cache); while a
    host installed its own (:func:`hosting`), those."""
    global _services
    if _hosted is not None:
        return _hosted
    backend = runtime.backend()
    if _services is None or _services.backend is not backend:
        _services = Services.build(backend)
    return _services


@contextlib.contextmanager
def hosting(svc: Services) -> Iterator[None]:
    """Answer every request with ``svc`` until the block ends: the simulator runs the handler in its world, on its
    simulated backend, with its scenario's sizes (nothing read from the environment)."""
    global _hosted
    before, _hosted = _hosted, svc
    try:
        yield
    finally:
        _hosted = before


def hosted() -> bool:
    """Whether a host installed the services (then the handler builds no backend of its own)."""
    return _hosted is not None


def appended_json(appended: Appended) -> dict[str, Any]:
    entry = appended.entry
    data: dict[str, Any] = {"segment": entry.segment, "num": entry.num, "entry_id": str(entry.entry_id),
                            "deduplicated": appended.deduplicated, "attempts": appended.attempts,
                            "position": position_json(entry)}
    if entry.external is not None:
        data["external"] = entry.external
    return data


# ----------------------------------------------------------------------------------------- routes


@app.post("/sheets")
def create_sheet() -> Response[str]:
    request = request_body(current_request(), CREATE_DECODER, empty=CreateRequest())
    try:
        log_id = services().log.create(request.log_id)
    except errors.TransactionCancelledError as exc:
        if request.log_id is None or not exc.condition_failed:
            raise
        # The client's id is taken: by its own earlier try whose answer it lost, so the sheet is there.
        structlog.contextvars.bind_contextvars(log_id=str(request.log_id))
        # A position that exists: the latest segment's Snapshot entry 0 (segment 0 may be retired by now).
        latest = services().backend.store.latest_segments(request.log_id, 1, consistent=True)
        start = LogPosition(segment=latest[0].num if latest else 0, num=0)
        return json_response(200, SheetCreated(log_id=request.log_id, created=False, position=start),
                             {"Location": f"/sheets/{request.log_id}"})
    structlog.contextvars.bind_contextvars(log_id=str(log_id))
    return json_response(201, SheetCreated(log_id=log_id, created=True, position=LogPosition(segment=0, num=0)),
                         {"Location": f"/sheets/{log_id}"})


@contextlib.contextmanager
def must_fit() -> Iterator[None]:
    """422 ``does_not_fit`` for what the OpenAPI document allows but the sheet cannot take (a range running past
    column XFD or row 1,048,576, a text over 32 KB of UTF-8), raised in the block as the core's errors. A 400 means
    the request does not match the document; a 422, that it does and still cannot be applied (issue 23)."""
    try:
        yield
    except errors.InvalidCellRefError as exc:
        raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "does_not_fit",
                       f"at {exc.ref} {exc.why}: make the range smaller or start it further up or left",
                       **_edit_of(exc)) from None
    except errors.BatchTooLargeError as exc:
        raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "batch_too_large", str(exc), limit=exc.limit,
                       unit=exc.unit, size=exc.size) from None
    except errors.ValueTooLargeError as exc:
        raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "does_not_fit", str(exc), limit=exc.limit,
                       unit=exc.unit, **_edit_of(exc)) from None


def _edit_of(exc: errors.InvalidInputError) -> dict[str, Any]:
    """``{"edit": index}`` when the error is about one edit of a batch (the whole batch was refused)."""
    return {} if exc.edit is None else {"edit": exc.edit}


def fitting(body: Body) -> None:
    """The API's appends check a body here (the EventLog's ``validate``, so once), inline and uploaded alike:
    :func:`must_fit`."""
    with must_fit():
        validate_body(body)


@app.post("/sheets/<log_id>/entries")
def append_entry(log_id: str) -> Response[str]:
    lid = log_id_of(log_id)
    request = request_body(current_request(), APPEND_DECODER)
    body = to_body(request.entry)
    entry_id, since, strict = retry_position(request.entry_id, request.since, request.expected)
    structlog.contextvars.bind_contextvars(entry_id=str(entry_id))
    svc = services()
    appended = append_after(svc.log, lid, body, entry_id=entry_id, since=since, strict=strict, horizon=svc.horizon)
    return json_response(200, appended_json(appended))


@app.get("/sheets/<log_id>")
def load_sheet(log_id: str) -> Response[str]:
    """Load, a page at a time: the first page reads the latest snapshot and the entries after it; ``next``
    (when not null) is the cursor of the following page, which reads the same state."""
    lid = log_id_of(log_id)
    svc = services()
    document = svc.document
    text = (current_request().query_string_parameters or {}).get("cursor")
    if text is None:
        sheet, view = document.load(lid)
        snapshot = view.snapshot
        cursor = LoadCursor(snapshot=(snapshot.segment, snapshot.num), upto=(view.segment, view.num))
        root = snapshot.snapshot_root
    else:
        cursor = LoadCursor.parse(text)
        sheet, root = document.load_at(lid, cursor.snapshot, cursor.upto), None
    page = page_rows(sheet.rows(), cursor.row, cursor.col, svc.page_bytes)
    following = None if page.next_row is None else LoadCursor(
        snapshot=cursor.snapshot, upto=cursor.upto, row=page.next_row, col=page.next_col)
    data: dict[str, Any] = {
        "snapshot": {"segment": cursor.snapshot[0], "num": cursor.snapshot[1], "root": root},
        "position": {"segment": cursor.upto[0], "num": cursor.upto[1]},
        "row": cursor.row, "col": cursor.col, "rows": page.rows,
        "next": None if following is None else str(following),
    }
    return json_response(200, data)


#: Entries a sync page reads at most (each is also counted against the page's bytes).
SYNC_LIMIT = 1000


@app.get("/sheets/<log_id>/entries")
def sync_entries(log_id: str) -> Response[str]:
    """The entries after a position, a page at a time: ``more`` says to ask again from ``position``."""
    lid = log_id_of(log_id)
    event = current_request()
    segment, after = query_int(event, "segment"), query_int(event, "after")
    limit = query_int(event, "limit", SYNC_LIMIT, minimum=1, maximum=SYNC_LIMIT)
    # The view stands for what the client holds; LogReader.update swaps its snapshot when it had to reload.
    held = Entry(log_id=lid, segment=segment, num=after, created=0, type=EntryType.SNAPSHOT)
    view = LogView(log_id=lid, snapshot=held, segment=segment, num=after)
    svc = services()
    new = svc.document.reader.update(view, limit=limit)
    if view.snapshot is not held:
        return json_response(200, {"reload": True})
    entries: list[dict[str, Any]] = []
    used, more = 0, len(new) == limit
    for entry in new:
        item = entry_json(entry, None if entry.external is not None else entry.decoded())
        used += escaped_size(item) + 1
        if entries and used > svc.page_bytes:
            more = True
            break
        entries.append(item)
    position = {"segment": entries[-1]["segment"], "num": entries[-1]["num"]} if entries else \
        {"segment": segment, "num": after}
    return json_response(200, {"reload": False, "entries": entries, "position": position, "more": more})


@app.get("/sheets/<log_id>/snapshots")
def snapshot_status(log_id: str) -> Response[str]:
    lid = log_id_of(log_id)
    backend = services().backend
    # Strong (about 1 RRU: a log keeps few segments): a lagging read could answer 404 for a log created a moment
    # ago, and a plain client takes its first append's position from ``latest``; the load and sync routes are
    # the ones read in volume, and they read eventually consistently (seglog_core.reader).
    segments = list(backend.store.segments(lid))
    if not segments:
        raise errors.LogNotFoundError(lid)
    completed = [s for s in segments if s.last_snapshot is not None]
    latest = {"segment": completed[-1].num, "num": completed[-1].last_snapshot} if completed else None
    return json_response(200, {
        "latest": latest,
        "segments": [segment_json(s) for s in segments],
        "pending": [pending_json(p) for p in backend.pending.for_log(lid)],
    })


@app.post("/sheets/<log_id>/uploads")
def start_upload(log_id: str) -> Response[str]:
    lid = log_id_of(log_id)
    request = request_body(current_request(), UPLOAD_DECODER)
    svc = services()
    if not svc.backend.store.latest_segments(lid, 1, consistent=True):
        raise errors.LogNotFoundError(lid)
    upload = svc.uploads.presign(lid, request)
    structlog.contextvars.bind_contextvars(upload_id=upload["upload_id"])
    return json_response(201, upload)


@app.post("/sheets/<log_id>/uploads/<upload_id>/complete")
def complete_upload(log_id: str, upload_id: str) -> Response[str]:
    lid, uid = log_id_of(log_id), upload_id_of(upload_id)
    structlog.contextvars.bind_contextvars(upload_id=str(uid))
    request = request_body(current_request(), COMPLETE_DECODER)
    entry_id, since, _ = retry_position(request.entry_id or default_entry_id(uid), request.since, None)
    svc = services()
    with must_fit():  # an imported file's cells are checked as it is read
        body = svc.uploads.read(lid, uid, request.type)
    appended = append_after(svc.external_log, lid, body, entry_id=entry_id, since=since, horizon=svc.horizon)
    return json_response(200, {**appended_json(appended), "upload_id": str(uid)})


@app.get("/openapi.json")
def openapi_document() -> Response[str]:
    return json_response(200, openapi.document())


# ----------------------------------------------------------------------------------------- failures


@app.not_found
def not_found(_: NotFoundError) -> Response[str]:
    event = current_request()
    path, method = event.path, event.http_method.upper()
    allowed = sorted({r.method for r in (*app._static_routes, *app._dynamic_routes) if r.rule.match(path)})
    if allowed:
        return error_response(HTTPStatus.METHOD_NOT_ALLOWED, "method_not_allowed",
                              f"{method} is not supported on {path}: use {' or '.join(allowed)}",
                              headers={"Allow": ", ".join(allowed)})
    return error_response(HTTPStatus.NOT_FOUND, "route_not_found",
                          f"no route {method} {path}: the routes are listed in /openapi.json")


def failure(exc: Exception) -> Response[str]:
    """The response to an exception a route raised: the core's errors mapped to statuses, in one place."""
    match exc:
        case ApiError():
            return error_response(exc.status, exc.code, exc.message, **exc.details)
        case errors.LogNotFoundError():
            return error_response(HTTPStatus.NOT_FOUND, "log_not_found", str(exc))
        case errors.UnknownPositionError():
            return error_response(HTTPStatus.CONFLICT, "unknown_position", str(exc),
                                  position={"segment": exc.segment, "num": exc.num})
        case errors.SinceRetiredError():
            # Not 409 "load again": resending after a load could store the entry twice (issue 18). The client
            # resends with ``position`` only if its first try was less than ``horizon_seconds`` ago.
            return error_response(HTTPStatus.GONE, "since_retired", str(exc),
                                  position={"segment": exc.resend[0], "num": exc.resend[1]},
                                  since={"segment": exc.since[0], "num": exc.since[1]},
                                  horizon_seconds=exc.horizon, entry_id=str(exc.entry_id))
        case errors.VersionConflictError():
            held = entry_ref(exc.existing) or {"segment": exc.segment, "num": exc.num}
            return error_response(HTTPStatus.CONFLICT, "version_conflict", str(exc), entry=held)
        case errors.EntryIdReusedError():
            # 422, not 409: repeating the request can never succeed, and reloading does not help either; the
            # client must give its new entry a new id. ``position`` names the entry the id already stands for.
            return error_response(HTTPStatus.UNPROCESSABLE_ENTITY, "entry_id_reused", str(exc),
                                  position={"segment": exc.segment, "num": exc.num}, entry_id=str(exc.entry_id))
        case errors.InvalidCellRefError():
            return error_response(HTTPStatus.BAD_REQUEST, "invalid_cell_ref", str(exc), **_edit_of(exc))
        case errors.ValueTooLargeError():
            return error_response(HTTPStatus.BAD_REQUEST, "value_too_large", str(exc), limit=exc.limit,
                                  unit=exc.unit)
        case errors.ImportFileError():
            # Only an upload's completion reads a file: the request matched the document, the file cannot be read.
            return error_response(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_import", str(exc))
        case errors.UnknownEntryTypeError() | errors.BodyVersionError():
            # Requests cannot name an unknown type (the decoder refuses it first): these come from reading a
            # log that newer code wrote. The server must be upgraded; the client can do nothing.
            log.error("log too new", error=str(exc))
            return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "log_too_new", str(exc))
        case errors.InvalidInputError():
            return error_response(HTTPStatus.BAD_REQUEST, "invalid_input", str(exc), **_edit_of(exc))
        case errors.AppendContentionError():
            return error_response(HTTPStatus.SERVICE_UNAVAILABLE, "contention", str(exc))
        case errors.StoreError():
            log.warning("storage error", error=type(exc).__name__, code=exc.code, detail=str(exc))
            return error_response(HTTPStatus.SERVICE_UNAVAILABLE, "storage_unavailable",
                                  "the storage did not answer as expected; retry in a moment (repeat an append "
                                  "as it was, with the same entry_id and since: it is stored once)",
                                  storage_code=exc.code)
        case errors.CorruptLogError():
            log.error("corrupt log", error=str(exc))
            return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "corrupt_log", str(exc))
        case errors.SeglogError():  # e.g. the function's environment lacks a resource name
            log.error("server error", error=str(exc))
            return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "server_error", str(exc))
    log.exception("unhandled error")
    return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error",
                          "the API failed unexpectedly; retry later, and report the request id if it persists")


app.exception_handler(Exception)(failure)
