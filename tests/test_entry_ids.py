"""An entry id names one entry, and an acknowledged entry never changes (DESIGN §3, issue 18).

On every backend (memory, the simulator's AWS, both local-stack profiles): the library refuses a reused entry id
with :class:`~seglog_core.errors.EntryIdReusedError`, and no try of an entry id, however it overlaps another, writes
over the S3 object of a landed large body. Through the API (local stack): 422 ``entry_id_reused``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from seglog_core import errors
from seglog_core.idempotence import Position, append_after
from seglog_core.log import EventLog
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, SetCell, SetRange, encode_body
from seglog_core.verify import verify_log
from seglog_services import runtime
from seglog_stack.local import LocalDeployment
from test_api import START, Api, assert_error, use_deployment

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)
START_POSITION = Position(segment=0, num=0)


def _log(stores: tuple[LogStore, BlobStore], store: LogStore | None = None) -> EventLog:
    return EventLog(store=store or stores[0], blobs=stores[1], retry=FAST, large_threshold=256)


def _large(fill: str) -> SetRange:
    return SetRange(row=1, col=1, values=[[fill * 64] * 8])


class _PausedPut:
    """A LogStore whose first put_entry first runs ``meanwhile``: another try's step, between a try's read and its
    write (the window an HTTP retry overlapping its first try falls into)."""

    def __init__(self, store: LogStore, meanwhile: Callable[[], object]) -> None:
        self._store = store
        self._meanwhile: Callable[[], object] | None = meanwhile

    def put_entry(self, entry: Entry) -> None:
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        self._store.put_entry(entry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# ----------------------------------------------------------------------------------------- the library


def test_the_library_refuses_an_entry_id_reused_with_another_body_and_names_the_stored_entry(
        stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    entry_id = uuid.uuid4()
    first = log.append(log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id).entry

    with pytest.raises(errors.EntryIdReusedError) as right_after:  # found by the append's own latest-entry read
        _log(stores).append(log_id, SetCell(row=1, col=1, value=2), entry_id=entry_id)
    log.append(log_id, SetCell(row=2, col=1, value=3))
    with pytest.raises(errors.EntryIdReusedError) as further_back:  # found by reading forward from since
        append_after(_log(stores), log_id, SetCell(row=1, col=1, value=2), entry_id=entry_id, since=START_POSITION)

    assert [(0, 1), (0, 1)] == [(c.value.segment, c.value.num) for c in (right_after, further_back)]
    assert "use a new entry id" in str(further_back.value)
    assert [first] == [e for e in stores[0].entries(log_id, 0, 0) if e.entry_id == entry_id]
    assert verify_log(stores[0], log_id, acknowledged=[entry_id]).ok


def test_the_identical_entry_is_still_deduplicated_and_another_type_or_version_is_not(
        stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    entry_id = uuid.uuid4()
    body = _large("a")
    first = log.append(log_id, body, entry_id=entry_id).entry

    again = append_after(_log(stores), log_id, body, entry_id=entry_id, since=START_POSITION)
    inline = append_after(EventLog(store=stores[0], blobs=stores[1], retry=FAST), log_id, body, entry_id=entry_id,
                          since=START_POSITION)  # the same bytes, below that client's threshold: inline

    assert (True, first, True, first) == (again.deduplicated, again.entry, inline.deduplicated, inline.entry)
    with pytest.raises(errors.EntryIdReusedError):
        append_after(_log(stores), log_id, SetCell(row=1, col=1, value="a"), entry_id=entry_id, since=START_POSITION)


def test_a_late_try_with_another_large_body_leaves_the_kept_body_as_it_was(
        stores: tuple[LogStore, BlobStore]) -> None:
    """After the router untagged the landed body, a try of the same id with another body is refused and neither
    overwrites the object nor puts the discardable tag back."""
    log_id = _log(stores).create()
    entry_id = uuid.uuid4()
    first = append_after(_log(stores), log_id, _large("a"), entry_id=entry_id, since=START_POSITION).entry
    assert first.external is not None
    stores[1].keep(first.external)  # what the stream router does on the entry's INSERT

    with pytest.raises(errors.EntryIdReusedError) as refused:
        append_after(_log(stores), log_id, _large("b"), entry_id=entry_id, since=START_POSITION)
    same = append_after(_log(stores), log_id, _large("a"), entry_id=entry_id, since=START_POSITION)

    assert (0, first.num) == (refused.value.segment, refused.value.num)
    assert (encode_body(_large("a")), False) == (stores[1].get(first.external),
                                                 stores[1].is_discardable(first.external))
    assert (True, first) == (same.deduplicated, same.entry)


def test_overlapping_tries_with_different_large_bodies_leave_the_acknowledged_body_intact(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Try B reads the log and, before its put, try A of the same entry id (another body) writes its body to the
    bucket; then B's entry lands and is acknowledged, and A reads on and finds it. B's body must be what B sent
    (before issue 18, A's write replaced the object under ``entries/{log}/{id}``) and A must be refused."""
    log_id = _log(stores).create()
    entry_id = uuid.uuid4()
    a = _log(stores)
    paused = _PausedPut(stores[0], lambda: a.prepare(log_id, _large("a"), entry_id))
    b = append_after(_log(stores, store=paused), log_id, _large("b"), entry_id=entry_id,  # type: ignore[arg-type]
                     since=START_POSITION).entry
    assert b.external is not None

    with pytest.raises(errors.EntryIdReusedError) as refused:
        append_after(a, log_id, _large("a"), entry_id=entry_id, since=START_POSITION)

    assert (b.segment, b.num) == (refused.value.segment, refused.value.num)
    assert encode_body(_large("b")) == stores[1].get(b.external)
    assert [b] == [e for e in stores[0].entries(log_id, 0, 0) if e.entry_id == entry_id]


def test_an_entry_stored_under_the_old_key_layout_is_compared_by_its_bytes(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Entries written before issue 18 reference ``entries/{log}/{entry id}``: their retries are still
    deduplicated (and other bodies refused) by reading the object."""
    log = _log(stores)
    log_id = log.create()
    entry_id = uuid.uuid4()
    body = _large("a")
    legacy = f"entries/{log_id}/{entry_id}"
    stores[1].put(legacy, encode_body(body))
    stores[0].put_entry(Entry(log_id=log_id, segment=0, num=1, created=0, type=EntryType.SET_RANGE,
                              version=SetRange.VERSION, external=legacy, entry_id=entry_id))

    again = append_after(_log(stores), log_id, body, entry_id=entry_id, since=START_POSITION)

    assert (True, legacy) == (again.deduplicated, again.entry.external)
    with pytest.raises(errors.EntryIdReusedError):
        append_after(_log(stores), log_id, _large("b"), entry_id=entry_id, since=START_POSITION)


# ----------------------------------------------------------------------------------------- the API


@pytest.fixture
def api(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    use_deployment(deployment, monkeypatch)
    yield Api()
    runtime.backend.cache_clear()


def _range(fill: str, rows: int) -> dict[str, Any]:
    return {"type": "setrng", "ref": "A1", "values": [[fill * 40] for _ in range(rows)]}


@pytest.mark.stack
@pytest.mark.parametrize("rows", [1, 600], ids=["inline", "large"])  # 600 rows of 40 bytes: over 16 KB, in S3
def test_the_api_answers_422_entry_id_reused_naming_the_stored_position(api: Api, rows: int) -> None:
    log_id = api.create()
    entry_id = str(uuid.uuid4())
    first = api.append(log_id, _range("a", rows), entry_id=entry_id, since=START)
    assert 200 == first.status, first.json
    assert (rows > 1) == ("external" in first.json)
    loaded = api.call("GET", f"/sheets/{log_id}").json["rows"]

    reused = api.append(log_id, _range("b", rows), entry_id=entry_id, since=START)
    expected = api.append(log_id, _range("b", rows), entry_id=entry_id, expected={"segment": 0, "num": 1})
    retried = api.append(log_id, _range("a", rows), entry_id=entry_id, since=START)

    for reply in (reused, expected):
        assert_error(reply, 422, "entry_id_reused")
        assert first.json["position"] == reply.error["position"]
    assert (200, True, first.json["position"]) == (retried.status, retried.json["deduplicated"],
                                                   retried.json["position"])
    assert loaded == api.call("GET", f"/sheets/{log_id}").json["rows"]
