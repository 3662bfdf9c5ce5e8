"""The client's errors, under one root: each says what happened and what to do next.

* :class:`ApiError` — the API (or S3, for an upload's PUT) refused the request with a 4xx, or a 5xx that
  retrying cannot cure: fix the request; the client never retries it.
* :class:`EntryIdReusedError` — an :class:`ApiError` (422 ``entry_id_reused``): the entry id already names another
  entry, at ``position``; give the new entry a new entry id.
* :class:`RetriesExhaustedError` — no good answer after every try (lost answers, timeouts, 5xx, 429); for an
  append it carries the ``entry_id`` and ``since`` to send again, which stores the entry once.
* :class:`ProtocolError` — a 2xx answer that is not what the API documents (a proxy, or a newer server).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from seglog_client.models import Position


class SeglogClientError(Exception):
    """Root of the client's errors."""


class ApiError(SeglogClientError):
    """A refusal: the HTTP status, the API's stable ``code`` and its message for humans.

    ``details`` are the error object's other members (a 409 ``version_conflict`` names the ``entry`` that holds
    the expected position; ``unknown_position`` the ``position`` the log does not hold).
    """

    def __init__(self, status: int, code: str, message: str, *, method: str = "", path: str = "",
                 details: Mapping[str, Any] | None = None) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.method = method
        self.path = path
        self.details = dict(details or {})
        where = f"{method} {path} -> " if method else ""
        super().__init__(f"{where}{status} {code}: {message}")


class EntryIdReusedError(ApiError):
    """422 ``entry_id_reused``: the entry id is already stored with another entry (type, version or body), at
    ``position``; nothing was written. Never retried (a retry sends the same entry again and is refused again): a
    new entry needs a new entry id."""

    #: The API's code for this refusal.
    CODE = "entry_id_reused"

    def __init__(self, status: int, code: str, message: str, *, method: str = "", path: str = "",
                 details: Mapping[str, Any] | None = None) -> None:
        super().__init__(status, code, message, method=method, path=path, details=details)
        where = self.details.get("position")
        #: Where the entry that holds the id is (None if the answer did not say).
        self.position = Position(segment=int(where["segment"]), num=int(where["num"])) if isinstance(
            where, dict) and {"segment", "num"} <= where.keys() else None


class RetriesExhaustedError(SeglogClientError):
    """Every try failed with a lost answer, a timeout, a 5xx or a 429.

    Attributes:
        tries: how many were sent.
        last_status: the last try's HTTP status, None when it got no answer.
        last_failure: what the last try got, in words.
        entry_id, since: for an append (or an upload's completion): send the same again, later, and the entry is
            stored once whether or not one of these tries landed.
    """

    def __init__(self, method: str, path: str, tries: int, last_status: int | None, last_failure: str, *,
                 entry_id: uuid.UUID | None = None, since: Position | None = None) -> None:
        self.method = method
        self.path = path
        self.tries = tries
        self.last_status = last_status
        self.last_failure = last_failure
        self.entry_id = entry_id
        self.since = since
        advice = "check that the API is up and reachable, then try again"
        if entry_id is not None:
            where = f" and since={since}" if since is not None else ""
            advice = (f"the entry may or may not be stored: send it again with entry_id={entry_id}{where} "
                      "(it is stored once)")
        super().__init__(f"{method} {path}: no good answer after {tries} tries (last: {last_failure}); {advice}")


class ProtocolError(SeglogClientError):
    """A successful answer the client cannot read as the API documents it."""
