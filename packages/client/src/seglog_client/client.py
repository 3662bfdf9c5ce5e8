"""SeglogClient: the seglog HTTP API from Python, with the API's retry protocol built in.

The protocol (``GET /openapi.json``, ``AppendRequest``): an append carries an ``entry_id`` made once for the entry
and ``since``, the position of the last answer the client had before the entry's first try; on a lost answer, a
timeout, a 5xx or a 429 the client sends the identical request again — at once if it likes, even while the
first try may still be running: the server reads forward from ``since`` with consistent reads and writes with a
conditional put, so the entry id is stored once. This client

* remembers the latest position it has seen of each sheet (creates, appends, loads, syncs), so ``since`` is
  automatic; for a sheet it has not seen, it asks for the latest completed snapshot's position first;
* encodes each request once, with sorted keys, and sends those bytes on every try;
* never retries another 4xx: it raises :class:`~seglog_client.errors.ApiError` with the API's code;
* follows a 410 ``since_retired`` (``since`` was deleted by retention and the entry is not in the retained log):
  it times each entry's first try (monotonic clock) and resends with the answer's ``position`` only while that
  first try is younger than the answer's ``horizon_seconds`` minus ``horizon_margin`` — no earlier try can then
  be in the deleted history (seglog_core.idempotence, "Retired positions"); past it the entry's outcome cannot be
  known and it raises :class:`~seglog_client.errors.OutcomeUnknownError` without resending. An entry id this
  client has not sent counts as first tried now unless ``first_try`` says when;
* signs every try with AWS Signature Version 4 (the API requires IAM authorization, locally too): credentials
  from :mod:`seglog_client.credentials`, a fresh date each try.

A client is safe to share between threads; one per thread keeps each thread's ``since`` its own.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal
from urllib.parse import quote, urlencode

import msgspec
import structlog

from seglog_client import sigv4
from seglog_client.batcher import DEFAULT_WINDOW, Batcher
from seglog_client.credentials import CredentialsProvider, region_for, resolve
from seglog_client.entries import EntryBody
from seglog_client.errors import ApiError, EntryIdReusedError, OutcomeUnknownError, ProtocolError, RetriesExhaustedError
from seglog_client.hooks import REQUEST_ID_HEADER, Attempt, ClientHooks, NoHooks
from seglog_client.models import (
    ENCODER,
    START,
    Appended,
    AppendRequest,
    CompleteRequest,
    Created,
    CreateRequest,
    Position,
    Presigned,
    Sheet,
    SheetPage,
    Snapshots,
    Sync,
    SyncPage,
    UploadRequest,
)
from seglog_client.retry import FINAL_SERVER_CODES, Backoff, retry_after, retryable
from seglog_client.transport import NoAnswer, Response, Transport, exchange

log = structlog.get_logger("seglog.client")

JSON_HEADERS: Final = {"content-type": "application/json", "accept": "application/json"}
#: S3's answer to a second PUT of a presigned upload URL (its signed ``If-None-Match: *``).
PRECONDITION_FAILED: Final = 412
#: Times a load starts again from its first page when retention retired its state between two pages.
LOAD_RESTARTS: Final = 3
_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _decoder[T](kind: type[T]) -> msgspec.json.Decoder[T]:
    decoder = _DECODERS.get(kind)
    if decoder is None:
        decoder = _DECODERS[kind] = msgspec.json.Decoder(kind)
    return decoder


def as_uuid(value: uuid.UUID | str, what: str = "log id") -> uuid.UUID:
    """``value`` as a UUID; a clear ValueError for text that is not one."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a {what} (a UUID)") from None


class SeglogClient:
    """A client of one seglog API (``base_url``, e.g. ``http://127.0.0.1:4599`` or an API Gateway stage URL).

    Args:
        timeout: seconds a try waits for its answer (then it counts as lost, and is retried).
        max_tries: tries of a request before :class:`RetriesExhaustedError` (the first try counts).
        patience: seconds a request is retried for, from its first try (then :class:`RetriesExhaustedError`): a
            client that knows how long the API may be away (a restart) waits that long whatever its tries count;
            ``max_tries`` still bounds the tries. None: only ``max_tries``.
        sleep: how to wait between tries (tests pass a recorder).
        backoff: the waits between tries.
        hooks: told of every try and every acknowledged append (see :class:`~seglog_client.hooks.Counters`).
        headers: extra headers sent (and signed) with every API request (not with an upload's PUT to S3, which its
            presigned URL authorizes).
        credentials: what to sign with: credentials, or a callable returning them for each request (default:
            the environment, then botocore's chain if installed; see :mod:`seglog_client.credentials`). Looked
            up at the first request.
        profile: a named AWS profile to take credentials from (needs botocore).
        region: the region to sign for when the URL does not say it (a custom domain, the local emulator).
        sign: False sends requests unsigned (an API deployed without IAM authorization).
        clock: the signing time (tests skew it).
        horizon_margin: seconds kept short of the retry horizon before a 410 ``since_retired`` is followed: the
            resend's own time on the server (the API's timeout, 29 s at most) and clock differences between the
            functions that write segments and the one that retires them.
        monotonic: the clock that times each entry's first try (tests drive it).
        transport: how each try is sent: over HTTP by default; :class:`~seglog_client.transport.InProcess` hands
            it to a server in this process (the simulator's).
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0, max_tries: int = 10, patience: float | None = None,
                 sleep: Callable[[float], None] = time.sleep, backoff: Backoff | None = None,
                 hooks: ClientHooks | None = None, headers: Mapping[str, str] | None = None,
                 credentials: sigv4.Credentials | CredentialsProvider | None = None, profile: str | None = None,
                 region: str | None = None, sign: bool = True,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC), horizon_margin: float = 120.0,
                 monotonic: Callable[[], float] = time.monotonic, transport: Transport = exchange) -> None:
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_tries = max_tries
        self.patience = patience
        self.backoff = backoff or Backoff()
        self.hooks: ClientHooks = hooks or NoHooks()
        self.region = region_for(self.base_url, region)
        self.signs = sign
        self._sleep = sleep
        self._clock = clock
        self._transport = transport
        self._headers = {**JSON_HEADERS, **(headers or {})}
        self._credentials, self._profile = credentials, profile
        self._provider: CredentialsProvider | None = None
        self._positions: dict[uuid.UUID, Position] = {}
        self.horizon_margin = horizon_margin
        self._monotonic = monotonic
        #: When each entry id not yet acknowledged was first tried (``monotonic``): kept after a refusal or
        #: RetriesExhaustedError, so a later resend is timed from the first try, never from itself.
        self._first_tries: dict[uuid.UUID, float] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------- positions

    def position(self, log_id: uuid.UUID | str) -> Position | None:
        """The latest position of the sheet this client has seen (None: none yet)."""
        with self._lock:
            return self._positions.get(as_uuid(log_id))

    def note_position(self, log_id: uuid.UUID | str, position: Position) -> Position:
        """Record that ``position`` of the sheet exists (a client that knows more tells us); keeps the latest."""
        lid = as_uuid(log_id)
        with self._lock:
            held = self._positions.get(lid)
            if held is None or held < position:
                self._positions[lid] = held = position
            return held

    def _since(self, log_id: uuid.UUID) -> Position:
        """Where an append looks from: the latest position seen, else the latest completed snapshot's (one GET)."""
        known = self.position(log_id)
        if known is not None:
            return known
        return self.note_position(log_id, self.snapshots(log_id).latest or START)

    # ------------------------------------------------------------------------------------- operations

    def create(self, log_id: uuid.UUID | str | None = None) -> Created:
        """Create a sheet under ``log_id`` (a new UUID when None, so that a retried create is safe too)."""
        lid = uuid.uuid4() if log_id is None else as_uuid(log_id)
        answer = self._call(Created, "POST", "/sheets", CreateRequest(log_id=lid), log_id=lid)
        self.note_position(lid, answer.position)
        return answer

    def append(self, log_id: uuid.UUID | str, entry: EntryBody | Mapping[str, Any], *,
               entry_id: uuid.UUID | str | None = None, since: Position | None = None,
               expected: Position | None = None, first_try: float | None = None) -> Appended:
        """Append ``entry`` once, however often it must be tried.

        Args:
            entry: a body from :mod:`seglog_client.entries` (``set_cell("B2", 5)``) or the same as a dict.
            entry_id: the entry's id (new when None); to repeat an append that raised
                :class:`RetriesExhaustedError`, pass its ``entry_id`` and ``since``.
            since: the position to look from (default: the latest this client has seen).
            expected: instead of ``since``: the exact position the entry must take (409 ``version_conflict``
                with the holder when it is taken).
            first_try: when this entry was first tried (epoch s), for a resend of an entry another client tried
                (``RetriesExhaustedError.first_try``); this client remembers its own.

        Raises:
            ApiError: refused (400 bad entry, 404 no sheet, 409 conflict or unknown position, 413 too large).
            EntryIdReusedError: ``entry_id`` already names another entry (at its ``position``): never retried.
            RetriesExhaustedError: no good answer after ``max_tries``; carries ``entry_id``, ``since`` and
                ``first_try``.
            OutcomeUnknownError: ``since`` was retired and the first try is past the retry horizon: not resent.
        """
        if since is not None and expected is not None:
            raise ValueError("append takes since or expected, not both")
        lid = as_uuid(log_id)
        eid = uuid.uuid4() if entry_id is None else as_uuid(entry_id, "entry id")
        if expected is None and since is None:
            since = self._since(lid)
        return self._appending(lid, eid, since, first_try, lambda at: self._call(
            Appended, "POST", f"/sheets/{lid}/entries", AppendRequest(entry=entry, entry_id=eid, since=at,
                                                                     expected=expected),
            log_id=lid, entry_id=eid, since=at))

    def batcher(self, log_id: uuid.UUID | str, *, window: float = DEFAULT_WINDOW, **options: Any) -> Batcher:
        """A :class:`~seglog_client.batcher.Batcher` of the sheet: edits made within ``window`` seconds share one
        request (issue 35); ``options`` as the Batcher takes them."""
        return Batcher(self, log_id, window=window, **options)

    def load(self, log_id: uuid.UUID | str) -> Sheet:
        """The sheet: its latest snapshot folded with the entries after it, every page joined.

        A load whose state retention retired between two of its pages (the next page answers 409
        ``unknown_position``: the pinned snapshot's segment is gone) starts again from the first page, up to
        :data:`LOAD_RESTARTS` times; a load is a read, so starting again is always safe.

        Raises:
            ProtocolError: the pages do not fit together (each continues where the previous one stopped).
        """
        lid = as_uuid(log_id)
        for restart in range(LOAD_RESTARTS + 1):
            try:
                return self._load_once(lid)
            except ApiError as exc:
                if exc.code != "unknown_position" or "cursor=" not in exc.path or restart == LOAD_RESTARTS:
                    raise
                log.info("load restarted", log_id=str(lid), reason=exc.code, restart=restart + 1)
        raise AssertionError("unreachable")

    def _load_once(self, lid: uuid.UUID) -> Sheet:
        page = self._call(SheetPage, "GET", f"/sheets/{lid}", log_id=lid)
        first, pages = page, 1
        rows: list[list[Any]] = []
        while True:
            _join(rows, page, lid)
            if page.next is None:
                break
            page = self._call(SheetPage, "GET", f"/sheets/{lid}?cursor={quote(page.next, safe='')}", log_id=lid)
            pages += 1
            if (page.position, page.snapshot.segment, page.snapshot.num) != (
                    first.position, first.snapshot.segment, first.snapshot.num):
                raise ProtocolError(f"load of {lid}: page {pages} is of another state ({page.position}) than the "
                                    f"first ({first.position}); load again")
        self.note_position(lid, first.position)
        return Sheet(log_id=lid, rows=rows, position=first.position, snapshot=first.snapshot, pages=pages)

    def sync(self, log_id: uuid.UUID | str, position: Position, *, limit: int | None = None) -> Sync:
        """The entries after ``position``, following ``more`` to the end; ``reload`` when the client must load
        again (it fell behind the log's two latest segments)."""
        lid = as_uuid(log_id)
        entries, at = [], position
        while True:
            query = {"segment": at.segment, "after": at.num, **({"limit": limit} if limit else {})}
            page = self._call(SyncPage, "GET", f"/sheets/{lid}/entries?{urlencode(query)}", log_id=lid)
            if page.reload:
                return Sync(reload=True, entries=[], position=position)
            entries += page.entries
            at = page.position or at
            if not page.more:
                break
        self.note_position(lid, at)
        return Sync(reload=False, entries=entries, position=at)

    def upload(self, log_id: uuid.UUID | str, data: bytes, content_type: str,
               entry_type: Literal["imp", "setrng"], *, entry_id: uuid.UUID | str | None = None,
               since: Position | None = None, first_try: float | None = None) -> Appended:
        """Append a large entry in three steps: a presigned URL, the PUT of ``data``, the completion.

        ``content_type`` is ``text/csv`` or the XLSX type for ``imp`` (an import), ``application/json``
        (``{"ref", "values"}``) for ``setrng``. Each step is retry-safe: an unused presigned upload expires; the
        URL writes once (its signed ``If-None-Match: *``), so a retried PUT answered 412 PreconditionFailed found
        the bytes its earlier try stored (Amazon S3 User Guide, "How to prevent object overwrites with conditional
        writes", https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html): the URL is this
        call's alone; and the completion carries the entry id and ``since`` as an append does.
        """
        lid = as_uuid(log_id)
        eid = uuid.uuid4() if entry_id is None else as_uuid(entry_id, "entry id")
        since = since or self._since(lid)
        presigned = self._call(Presigned, "POST", f"/sheets/{lid}/uploads",
                               UploadRequest(size=len(data), content_type=content_type), log_id=lid)
        try:
            self._send(presigned.method, presigned.url, data, dict(presigned.headers), log_id=lid)
        except ApiError as refusal:
            if (refusal.status, refusal.code) != (PRECONDITION_FAILED, "PreconditionFailed"):
                raise
            log.info("upload already stored by an earlier try", log_id=str(lid), url=presigned.url.split("?")[0])
        return self._appending(lid, eid, since, first_try, lambda at: self._call(
            Appended, "POST", f"/sheets/{lid}/uploads/{presigned.upload_id}/complete",
            CompleteRequest(type=entry_type, entry_id=eid, since=at or since), log_id=lid, entry_id=eid, since=at))

    def _appending(self, log_id: uuid.UUID, entry_id: uuid.UUID, since: Position | None, first_try: float | None,
                   send: Callable[[Position | None], Appended]) -> Appended:
        """``send(since)`` (an append, or an upload's completion), following 410 ``since_retired`` within the
        retry horizon; the answer noted and told to the hooks."""
        with self._lock:
            if first_try is not None:
                given = self._monotonic() - max(0.0, time.time() - first_try)
                self._first_tries[entry_id] = min(given, self._first_tries.get(entry_id, given))
            started = self._first_tries.setdefault(entry_id, self._monotonic())
        for _ in range(self.max_tries):
            try:
                answer = send(since)
            except ApiError as refusal:
                if refusal.code != "since_retired":
                    raise
                since = self._resend_from(refusal, entry_id, since, self._monotonic() - started)
                continue
            except RetriesExhaustedError as exc:
                exc.first_try = time.time() - (self._monotonic() - started)
                raise
            with self._lock:
                self._first_tries.pop(entry_id, None)
            self.note_position(log_id, answer.position)
            self.hooks.appended(log_id, answer)
            return answer
        raise RetriesExhaustedError("POST", f"/sheets/{log_id}", self.max_tries, 410, "since retired at every try",
                                    entry_id=entry_id, since=since,
                                    first_try=time.time() - (self._monotonic() - started))

    def _resend_from(self, refusal: ApiError, entry_id: uuid.UUID, since: Position | None, age: float) -> Position:
        """The ``since`` to resend with after a 410 ``since_retired``, if the first try is inside the horizon."""
        horizon, at = refusal.details.get("horizon_seconds"), refusal.details.get("position")
        if (not isinstance(horizon, int | float) or not isinstance(at, dict)
                or age >= horizon - self.horizon_margin):
            log.warning("outcome unknown: not resent", entry_id=str(entry_id), since=str(since), age=round(age, 1),
                        horizon=horizon)
            raise OutcomeUnknownError(entry_id, since, age, horizon, refusal) from refusal
        resend = Position(segment=int(at["segment"]), num=int(at["num"]))
        log.info("since retired: resending within the retry horizon", entry_id=str(entry_id), since=str(since),
                 resend=str(resend), age=round(age, 1), horizon=horizon)
        return resend

    def snapshots(self, log_id: uuid.UUID | str) -> Snapshots:
        """The latest completed snapshot, each segment's, and the snapshot builds under way."""
        lid = as_uuid(log_id)
        return self._call(Snapshots, "GET", f"/sheets/{lid}/snapshots", log_id=lid)

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document."""
        return self._call(dict[str, Any], "GET", "/openapi.json")

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any request of the API, with the same retries (the same bytes on every try); the decoded JSON answer.
        The typed methods above are the way to use the API: this is for what they do not cover."""
        return self._call(Any, method, path, body)

    # ------------------------------------------------------------------------------------- HTTP

    def _signed(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str]) -> Mapping[str, str]:
        """``headers`` with a fresh SigV4 signature of the request (credentials looked up on first use)."""
        if self._provider is None:
            self._provider = resolve(self._credentials, profile=self._profile)
        return sigv4.sign(method, url, headers, data, self._provider(), region=self.region, now=self._clock())

    def _call[T](self, kind: type[T], method: str, path: str, body: Any = None, *,
                 log_id: uuid.UUID | None = None, entry_id: uuid.UUID | None = None,
                 since: Position | None = None) -> T:
        """One API request (encoded once, signed on every try), its answer decoded as ``kind``."""
        data = None if body is None else ENCODER.encode(body)
        # Spaces and non-ASCII characters percent-encoded (UTF-8), what is already encoded or reserved kept: the URL
        # signed is the URL sent.
        path = quote(path, safe="!#$%&'()*+,/:;=?@[]~")
        response = self._send(method, self.base_url + path, data, self._headers, log_id=log_id,
                              entry_id=entry_id, since=since, path=path, sign=self.signs)
        try:
            return _decoder(kind).decode(response.body)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"{method} {path} answered {response.status} with a body this client cannot "
                                f"read ({exc}): is {self.base_url} a seglog API of a compatible version?") from None

    def _send(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str], *,
              log_id: uuid.UUID | None = None, entry_id: uuid.UUID | None = None, since: Position | None = None,
              path: str | None = None, sign: bool = False) -> Response:
        """Try until an answer that is not retried; 2xx returned, 4xx (and final 5xx) raised as ApiError. With
        ``sign`` each try is signed anew: a retry after a long backoff must not carry a stale date."""
        path = path or url
        ids = {k: str(v) for k, v in (("log_id", log_id), ("entry_id", entry_id)) if v is not None}
        failure, status = "", None
        first = self._monotonic()
        number = 0
        for number in range(1, self.max_tries + 1):
            started = time.monotonic()
            sent = self._signed(method, url, data, headers) if sign else headers
            try:
                response: Response | None = self._transport(method, url, data, sent, self.timeout)
            except NoAnswer as exc:
                response, failure = None, f"no answer ({exc.reason})"
            status = None if response is None else response.status
            request_id = None if response is None else response.headers.get(REQUEST_ID_HEADER)
            refusal = None if response is None or response.status < 400 else _refusal(response, method, path)
            self.hooks.tried(Attempt(method=method, path=path, number=number, status=status,
                                     error=failure if response is None else None if refusal is None else refusal.code,
                                     seconds=time.monotonic() - started, request_id=request_id))
            if response is not None and refusal is None:
                return response
            if refusal is not None:
                if not retryable(refusal.status) or refusal.code in FINAL_SERVER_CODES:
                    log.info("request refused", method=method, path=path, status=refusal.status, code=refusal.code,
                             attempt=number, **ids)
                    raise refusal
                failure = f"HTTP {refusal.status} {refusal.code}: {refusal.message}"
            if number == self.max_tries:
                break
            pause = self.backoff.delay(number, retry_after(response))
            if self.patience is not None and self._monotonic() - first + pause > self.patience:
                break
            log.info("retrying", method=method, path=path, attempt=number, outcome=failure, delay=round(pause, 3),
                     **ids)
            self._sleep(pause)
        log.warning("giving up", method=method, path=path, tries=number, last=failure, **ids)
        raise RetriesExhaustedError(method, path, number, status, failure, entry_id=entry_id, since=since)


def _join(rows: list[list[Any]], page: SheetPage, log_id: uuid.UUID) -> None:
    """Add a load page's rows to ``rows``: a page with ``col > 1`` continues the last row from that column."""
    if page.col > 1:
        if page.row != len(rows) or not page.rows or len(rows[-1]) + 1 != page.col:
            raise ProtocolError(f"load of {log_id}: a page continues row {page.row} at column {page.col}, but "
                                f"{len(rows)} rows are held; load again")
        rows[-1] += page.rows[0]
        rows += page.rows[1:]
        return
    if page.row != len(rows) + 1:
        raise ProtocolError(f"load of {log_id}: a page starts at row {page.row}, {len(rows)} rows are held; "
                            "load again")
    rows += page.rows


def _refusal(response: Response, method: str, path: str) -> ApiError:
    """The ApiError of a 4xx/5xx answer: the API's ``{"error": {"code", "message", ...}}``, API Gateway's
    ``{"message"}``, or S3's XML ``<Code>``/``<Message>`` (an upload's PUT)."""
    code, message = f"http_{response.status}", ""
    details: dict[str, Any] = {}
    try:
        payload = msgspec.json.decode(response.body) if response.body else None
    except msgspec.DecodeError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        details = dict(payload["error"])
        code = str(details.pop("code", code))
        message = str(details.pop("message", ""))
    elif isinstance(payload, dict) and "message" in payload:
        # API Gateway's own answer; a refused signature names its kind in x-amzn-ErrorType
        # ("InvalidSignatureException", "ForbiddenException", ...).
        message = str(payload["message"])
        code = response.headers.get("x-amzn-errortype", "").partition(":")[0] or code
    else:
        text = response.body.decode("utf-8", "replace")
        code = _xml_member(text, "Code") or code
        message = _xml_member(text, "Message") or text[:300]
    kind = EntryIdReusedError if code == EntryIdReusedError.CODE else ApiError
    return kind(response.status, code, message or "(no message)", method=method, path=path, details=details)


def _xml_member(text: str, name: str) -> str | None:
    start = text.find(f"<{name}>")
    end = text.find(f"</{name}>", start)
    return text[start + len(name) + 2:end] if start >= 0 and end > start else None
