"""The api function: each route through API Gateway HTTP API 2.0 events, against the local stack (both profiles).

Requests are built with :func:`seglog_awsmodel.events.http_api_event`, the event API Gateway sends ("Create AWS Lambda
proxy integrations for HTTP APIs in API Gateway", payload format 2.0), and answered by ``handler(event, context)``
with the deployment's environment, as the deployed function is.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from structlog.testing import capture_logs

from seglog_awsmodel.events import http_api_event
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, PendingSnapshot, SetRange
from seglog_plugin.resources import backend_of, local_env
from seglog_services import runtime
from seglog_services.api import app, handler, openapi, routes
from seglog_stack.local import LocalDeployment

stack = pytest.mark.stack


class Context:
    """The parts of the Lambda context the function reads."""

    function_name = "api"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 15_000


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    json: Any
    #: Bytes of the whole invocation response payload, the size Lambda limits to 6 MB.
    size: int = 0

    @property
    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = self.json["error"]
        return error


#: Leave a field of the retry protocol out of an append (to see it refused).
OMIT: Any = object()
START = {"segment": 0, "num": 0}


class Api:
    """Calls the handler as API Gateway would, and decodes its answer. Appends follow the retry protocol unless
    told otherwise: a fresh ``entry_id``, and as ``since`` the position of this client's last answer."""

    def __init__(self) -> None:
        self.positions: dict[str, dict[str, int]] = {}

    def call(self, method: str, path: str, body: Any = None, *, raw: str | bytes | None = None,
             query: dict[str, str] | None = None) -> Reply:
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        event = http_api_event(method, path, query=query, body=data, headers={"content-type": "application/json"})
        response = handler(event, Context())
        text = response.get("body") or ""
        assert "Traceback" not in text
        return Reply(response["statusCode"], dict(response.get("headers") or {}), json.loads(text) if text else None,
                     len(json.dumps(response).encode()))

    def create(self) -> str:
        reply = self.call("POST", "/sheets")
        assert 201 == reply.status, reply.json
        log_id: str = reply.json["log_id"]
        return log_id

    def append(self, log_id: str, entry: dict[str, Any], **fields: Any) -> Reply:
        body = {"entry": entry, "entry_id": str(uuid.uuid4()), **fields}
        if "since" not in body and "expected" not in body:
            body["since"] = self.positions.get(log_id, START)
        reply = self.call("POST", f"/sheets/{log_id}/entries", {k: v for k, v in body.items() if v is not OMIT})
        if reply.status == 200:
            self.positions[log_id] = reply.json["position"]
        return reply


def use_deployment(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """Point the function at the deployment, as the template's environment does, with fresh clients."""
    for key, value in {**local_env(deployment), "SEGLOG_SNAPSHOT_EVERY": "1000", **env}.items():
        monkeypatch.setenv(key, value)
    runtime.backend.cache_clear()


@pytest.fixture
def api(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    use_deployment(deployment, monkeypatch)
    yield Api()
    runtime.backend.cache_clear()


def assert_error(reply: Reply, status: int, code: str) -> None:
    """A refusal: the status, the code, and a message that says what to do (never a traceback)."""
    assert (status, code) == (reply.status, reply.error["code"]), reply.json
    assert reply.error["message"]


# ----------------------------------------------------------------------------------------- create, load


@stack
def test_a_new_sheet_loads_empty_at_its_creation_snapshot(api: Api) -> None:
    reply = api.call("POST", "/sheets")
    assert 201 == reply.status
    log_id = reply.json["log_id"]
    assert f"/sheets/{log_id}" == reply.headers["Location"]

    loaded = api.call("GET", f"/sheets/{log_id}")

    assert 200 == loaded.status
    assert {"snapshot": {"segment": 0, "num": 0, "root": EMPTY_SNAPSHOT_ROOT}, "rows": [], "row": 1, "col": 1,
            "next": None, "position": {"segment": 0, "num": 0}} == loaded.json
    assert START == reply.json["position"]


@stack
def test_every_entry_type_appends_in_order_and_load_folds_them(api: Api) -> None:
    log_id = api.create()
    entries = [
        {"type": "set", "ref": "A1", "value": 42},
        {"type": "setrng", "ref": "A2", "values": [["x", 1.5], [True, None, "z"]]},
        {"type": "insrow", "after": 0, "values": ["head"]},
        {"type": "delrow", "row": 3},
    ]

    replies = [api.append(log_id, entry) for entry in entries]

    assert [200] * 4 == [r.status for r in replies]
    assert [(0, n, False) for n in (1, 2, 3, 4)] == [
        (r.json["segment"], r.json["num"], r.json["deduplicated"]) for r in replies]
    assert all(r.json["attempts"] >= 1 and uuid.UUID(r.json["entry_id"]) for r in replies)
    loaded = api.call("GET", f"/sheets/{log_id}")
    assert [["head"], [42], [True, None, "z"]] == loaded.json["rows"]
    assert {"segment": 0, "num": 4} == loaded.json["position"]


def load_pages(api: Api, log_id: str, first: Reply | None = None) -> tuple[list[list[Any]], list[Reply]]:
    """Load a sheet page by page as a client does (from ``first`` if given): follow ``next``; a page whose ``col``
    is past 1 continues the previous page's last row."""
    rows: list[list[Any]] = []
    replies = [first or api.call("GET", f"/sheets/{log_id}")]
    while True:
        page = replies[-1].json
        assert 200 == replies[-1].status, page
        if page["col"] > 1:
            rows[-1].extend(page["rows"][0])
            rows.extend(page["rows"][1:])
        else:
            rows.extend(page["rows"])
        if page["next"] is None:
            return rows, replies
        replies.append(api.call("GET", f"/sheets/{log_id}", query={"cursor": page["next"]}))


@stack
def test_a_sheet_larger_than_a_lambda_response_loads_in_pages_of_one_state(
        api: Api, deployment: LocalDeployment) -> None:
    """About 9 MB of cells: every page stays under Lambda's 6 MB response limit, the pages join into the sheet,
    and an edit made between two pages does not show up in the later page (they read one state)."""
    log_id = api.create()
    lid = uuid.UUID(log_id)
    writer = backend_of(deployment).event_log()
    rows = [[f"r{r}c{c}:" + "x" * 80 for c in range(5)] for r in range(20_000)]
    for start in range(0, len(rows), 4000):
        writer.append(lid, SetRange(row=start + 1, col=1, values=rows[start:start + 4000]))

    first = api.call("GET", f"/sheets/{log_id}")
    writer.append(lid, SetRange(row=19_999, col=1, values=[["edited"]]))
    loaded, replies = load_pages(api, log_id, first)

    assert rows == loaded
    assert len(replies) >= 3
    assert all(r.size < 6 * 1024 * 1024 for r in replies), [r.size for r in replies]
    after_edit, _ = load_pages(api, log_id)
    assert ["edited"] == after_edit[19_998][:1]


# ----------------------------------------------------------------------------------------- sync


@stack
def test_sync_answers_in_pages_that_chain_by_position(api: Api) -> None:
    log_id = api.create()
    appended = [api.append(log_id, {"type": "set", "ref": f"A{n}", "value": n}).json["num"] for n in range(1, 6)]
    seen: list[int] = []
    position = START
    while True:
        page = api.call("GET", f"/sheets/{log_id}/entries",
                        query={"segment": str(position["segment"]), "after": str(position["num"]), "limit": "2"}).json
        seen += [e["num"] for e in page["entries"]]
        position = page["position"]
        if not page["more"]:
            break
        assert 2 == len(page["entries"])
    assert appended == seen


@stack
def test_sync_answers_the_entries_after_a_position_and_the_new_position(api: Api) -> None:
    log_id = api.create()
    api.append(log_id, {"type": "set", "ref": "B2", "value": "one"})
    second = api.append(log_id, {"type": "setrng", "ref": "C3", "values": [[1, 2]]}).json

    reply = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "1"})

    assert 200 == reply.status
    assert False is reply.json["reload"]
    assert {"segment": 0, "num": 2} == reply.json["position"]
    (entry,) = reply.json["entries"]
    assert isinstance(entry.pop("created"), int)
    assert {"segment": 0, "num": 2, "type": "setrng", "entry_id": second["entry_id"],
            "body": {"row": 3, "col": 3, "values": [[1, 2]], "ref": "C3"}} == entry
    everything = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "0"}).json
    assert [1, 2] == [e["num"] for e in everything["entries"]]
    caught_up = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "2"}).json
    assert {"reload": False, "entries": [], "position": {"segment": 0, "num": 2}, "more": False} == caught_up


@stack
def test_sync_asks_a_client_behind_both_latest_segments_to_reload(api: Api, deployment: LocalDeployment) -> None:
    log_id = api.create()
    lid = uuid.UUID(log_id)
    backend = backend_of(deployment)
    writer = backend.event_log()
    writer.start_segment(lid)
    # Nothing was appended, so the empty document is the true state at segment 1's snapshot entry.
    backend.store.complete_snapshot(lid, 1, 0, EMPTY_SNAPSHOT_ROOT)
    writer.start_segment(lid)

    behind = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "0"})
    current = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "1", "after": "0"})

    assert (200, {"reload": True}) == (behind.status, behind.json)
    # Entry 0 of a new segment is its Snapshot entry, which a client that follows the log already holds.
    assert [(1, 1, "end")] == [(e["segment"], e["num"], e["type"]) for e in current.json["entries"]]
    assert {"segment": 1, "num": 1} == current.json["position"]
    assert {"segment": 1, "num": 0, "root": EMPTY_SNAPSHOT_ROOT} == api.call("GET", f"/sheets/{log_id}").json[
        "snapshot"]


@stack
def test_sync_past_the_end_of_a_closed_segment_is_an_unknown_position(api: Api, deployment: LocalDeployment) -> None:
    """Segment 0 ends at its EndSegment 0/1 once segment 1 exists: a sync after 0/5 names a position the log never
    held (it used to answer segment 1's entries as if they followed it). After the EndSegment it goes on at 1/1."""
    log_id = api.create()
    backend_of(deployment).event_log().start_segment(uuid.UUID(log_id))
    api.append(log_id, {"type": "set", "ref": "A1", "value": 1})

    past = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "5"})
    at_end = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "1"})

    assert_error(past, 409, "unknown_position")
    assert [(1, 1)] == [(e["segment"], e["num"]) for e in at_end.json["entries"]]


# ----------------------------------------------------------------------------------------- idempotence, conflicts


@stack
def test_the_same_entry_id_twice_is_one_entry(api: Api) -> None:
    log_id = api.create()
    entry_id = str(uuid.uuid4())
    entry = {"type": "set", "ref": "A1", "value": 1}

    first = api.append(log_id, entry, entry_id=entry_id, since=START)
    again = api.append(log_id, entry, entry_id=entry_id, since=START)
    api.append(log_id, {"type": "set", "ref": "A2", "value": 2})
    late_retry = api.append(log_id, entry, entry_id=entry_id, since=START)

    assert (200, False, 1) == (first.status, first.json["deduplicated"], first.json["num"])
    for retry in (again, late_retry):
        assert (200, True, 1, entry_id) == (retry.status, retry.json["deduplicated"], retry.json["num"],
                                            retry.json["entry_id"])
    nums = [e["num"] for e in api.call("GET", f"/sheets/{log_id}/entries",
                                       query={"segment": "0", "after": "0"}).json["entries"]]
    assert [1, 2] == nums


@stack
@pytest.mark.parametrize("archive", [True, False], ids=["archived", "deleted"])
def test_a_retry_whose_since_retention_retired_is_answered_or_refused_never_stored_twice(
        api: Api, deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch, archive: bool) -> None:
    """Issue 18: since's segment retired between two tries. Archived: the retry reads the archive, exactly.
    Deleted: a try that landed in the retained log is answered; one that did not is refused 410 with the
    horizon and where to resend from, and the resend is stored once (a later retry with either since finds it)."""
    use_deployment(deployment, monkeypatch, SEGLOG_RETENTION_MIN_AGE_SECONDS="3600")
    log_id = api.create()
    lid = uuid.UUID(log_id)
    backend = backend_of(deployment)
    writer = backend.event_log()
    landed_id, lost_id = str(uuid.uuid4()), str(uuid.uuid4())
    landed_entry, lost_entry = {"type": "set", "ref": "A1", "value": 1}, {"type": "set", "ref": "A2", "value": 2}
    writer.start_segment(lid)
    assert 200 == api.append(log_id, landed_entry, entry_id=landed_id, since=START).status  # lands at 1/1
    for segment in (1, 2):
        backend.store.complete_snapshot(lid, segment, 0, EMPTY_SNAPSHOT_ROOT)
        writer.start_segment(lid)
    policy = RetentionPolicy(keep=3, min_age=0, archive=archive)
    assert [0] == apply_retention(backend.store, backend.blobs, lid, policy)

    landed = api.append(log_id, landed_entry, entry_id=landed_id, since=START)
    lost = api.append(log_id, lost_entry, entry_id=lost_id, since=START)

    assert (200, True, {"segment": 1, "num": 1}) == (landed.status, landed.json["deduplicated"],
                                                      landed.json["position"])
    if archive:
        assert (200, False, {"segment": 3, "num": 1}) == (lost.status, lost.json["deduplicated"],
                                                           lost.json["position"])
    else:
        assert_error(lost, 410, "since_retired")
        resend = lost.error["position"]
        assert ({"segment": 1, "num": 0}, 3600, lost_id) == (resend, lost.error["horizon_seconds"],
                                                             lost.error["entry_id"])
        assert "less than 3600 s" in lost.error["message"]
        stored = api.append(log_id, lost_entry, entry_id=lost_id, since=resend)
        assert (200, False, {"segment": 3, "num": 1}) == (stored.status, stored.json["deduplicated"],
                                                           stored.json["position"])
    for since in (START, {"segment": 1, "num": 0}):
        again = api.append(log_id, lost_entry, entry_id=lost_id, since=since)
        assert (200, True, {"segment": 3, "num": 1}) == (again.status, again.json["deduplicated"],
                                                          again.json["position"])


@stack
def test_retries_of_one_entry_id_racing_other_writers_store_it_once(api: Api) -> None:
    """Three copies of each append (same entry id, same since) sent at once while two other writers append: the
    retry protocol's consistent forward read and conditional put leave each entry id stored exactly once."""
    log_id = api.create()
    rounds, copies = 8, 3

    def send(entry_id: str, since: dict[str, int], value: int) -> Reply:
        return Api().append(log_id, {"type": "set", "ref": "A1", "value": value}, entry_id=entry_id, since=since)

    with ThreadPoolExecutor(max_workers=copies + 2) as pool:
        for n in range(rounds):
            since = api.positions.get(log_id, START)
            entry_id = str(uuid.uuid4())
            others = [pool.submit(send, str(uuid.uuid4()), since, -1) for _ in range(2)]
            replies = [f.result() for f in [pool.submit(send, entry_id, since, n) for _ in range(copies)]]
            assert [200] * copies == [r.status for r in replies], [r.json for r in replies]
            assert 1 == len({r.json["num"] for r in replies})
            assert copies - 1 == sum(r.json["deduplicated"] for r in replies)
            api.positions[log_id] = max((r.json["position"] for r in replies + [o.result() for o in others]),
                                        key=lambda p: (p["segment"], p["num"]))

    entries = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "0"}).json["entries"]
    ids = [e["entry_id"] for e in entries]
    assert 3 * rounds == len(ids)
    assert len(ids) == len(set(ids))


@stack
def test_two_requests_answered_at_once_in_one_process_each_read_their_own_body(api: Api,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Powertools keeps the request being resolved on its router class: a request routed, then held while another is
    answered in the same process, read the other's body and answered with its entry (the test above failed so in
    CI). The routes read the request the handler was given, whoever resolved since."""
    log_id = api.create()
    held, answered = threading.Event(), threading.Event()
    real = routes.log_id_of

    def hold_first(text: str) -> Any:  # append_entry's first call, after routing and before it reads the body
        if threading.current_thread().name == "first":
            held.set()
            assert answered.wait(30)
        return real(text)

    monkeypatch.setattr(routes, "log_id_of", hold_first)
    first_id, second_id = str(uuid.uuid4()), str(uuid.uuid4())
    replies: dict[str, Reply] = {}
    thread = threading.Thread(name="first", target=lambda: replies.setdefault("first", Api().append(
        log_id, {"type": "set", "ref": "A1", "value": 1}, entry_id=first_id, since=START)))
    thread.start()
    assert held.wait(30)
    second = Api().append(log_id, {"type": "set", "ref": "B1", "value": 2}, entry_id=second_id, since=START)
    answered.set()
    thread.join(30)

    first = replies["first"]
    assert (200, 200) == (first.status, second.status), (first.json, second.json)
    assert (first_id, False, second_id, False) == (first.json["entry_id"], first.json["deduplicated"],
                                                   second.json["entry_id"], second.json["deduplicated"])


@stack
def test_an_expected_version_conflict_answers_409_with_the_entry_that_holds_the_num(api: Api) -> None:
    log_id = api.create()
    winner = api.append(log_id, {"type": "set", "ref": "A1", "value": "mine"}, expected={"segment": 0, "num": 1})

    loser = api.append(log_id, {"type": "set", "ref": "A1", "value": "theirs"}, expected={"segment": 0, "num": 1})
    next_one = api.append(log_id, {"type": "set", "ref": "A2", "value": "next"}, expected={"segment": 0, "num": 2})

    assert (200, 1, 1) == (winner.status, winner.json["num"], winner.json["attempts"])
    assert_error(loser, 409, "version_conflict")
    assert {"segment": 0, "num": 1, "type": "set", "entry_id": winner.json["entry_id"]} == loser.error["entry"]
    assert (200, 2) == (next_one.status, next_one.json["num"])
    assert [["mine"], ["next"]] == api.call("GET", f"/sheets/{log_id}").json["rows"]


@stack
def test_a_conflict_with_its_own_entry_id_is_the_earlier_append(api: Api) -> None:
    log_id = api.create()
    entry_id = str(uuid.uuid4())
    at = {"segment": 0, "num": 1}
    api.append(log_id, {"type": "set", "ref": "A1", "value": 1}, entry_id=entry_id, expected=at)

    retry = api.append(log_id, {"type": "set", "ref": "A1", "value": 1}, entry_id=entry_id, expected=at)

    assert (200, True, 1) == (retry.status, retry.json["deduplicated"], retry.json["num"])


# ----------------------------------------------------------------------------------------- snapshots


@stack
def test_snapshot_status_lists_completed_snapshots_per_segment_and_pending_builds(
        api: Api, deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    use_deployment(deployment, monkeypatch, SEGLOG_SNAPSHOT_EVERY="2")
    log_id = api.create()
    lid = uuid.UUID(log_id)
    api.append(log_id, {"type": "set", "ref": "A1", "value": 1})
    api.append(log_id, {"type": "set", "ref": "A2", "value": 2})  # num 2: the policy appends Snapshot entry 3
    backend = backend_of(deployment)
    backend.pending.create(PendingSnapshot(log_id=lid, segment=0, entry=3, created=100, modified=100))

    reply = api.call("GET", f"/sheets/{log_id}/snapshots")

    assert 200 == reply.status
    assert {"segment": 0, "num": 0} == reply.json["latest"]
    (segment,) = reply.json["segments"]
    assert (0, 0, None) == (segment["segment"], segment["last_snapshot"], segment["archive"])
    assert [{"segment": 0, "entry": 3, "retries": 0, "active": False, "created": 100, "modified": 100}] == reply.json[
        "pending"]
    snap = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "2"}).json["entries"]
    assert [(3, "snap", None)] == [(e["num"], e["type"], e["entry_id"]) for e in snap]


# ----------------------------------------------------------------------------------------- refusals


def _set(value: Any, ref: str = "A1") -> dict[str, Any]:
    return {"entry": {"type": "set", "ref": ref, "value": value}, "entry_id": str(uuid.uuid4()), "since": START}


def _without(body: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in names}


BAD_APPENDS = [
    pytest.param("{", 400, "malformed_json", id="malformed-json"),
    pytest.param("[1, 2]", 400, "invalid_request", id="not-an-object"),
    pytest.param("", 400, "missing_body", id="no-body"),
    pytest.param({**_set(1), "colour": "red"}, 400, "invalid_request", id="unknown-field"),
    pytest.param({"entry": {"type": "set", "ref": "A1", "value": 1, "x": 0}}, 400, "invalid_request",
                 id="unknown-entry-field"),
    pytest.param({"entry": {"type": "paint", "ref": "A1"}}, 400, "invalid_request", id="unknown-type"),
    pytest.param({"entry": {"type": "snap"}}, 400, "invalid_request", id="log-level-type"),
    pytest.param({"entry": {"type": "set", "ref": "A1"}}, 400, "invalid_request", id="missing-value"),
    pytest.param({"entry": {"type": "set", "ref": "A1", "value": {"a": 1}}}, 400, "invalid_request",
                 id="value-of-wrong-type"),
    pytest.param(_set(1, ref="1A"), 400, "invalid_cell_ref", id="bad-ref"),
    pytest.param(_set(1, ref="XFE1"), 400, "invalid_cell_ref", id="ref-past-last-column"),
    # What /openapi.json allows and the sheet still cannot take is 422 does_not_fit; what it refuses, 400 (issue 23).
    pytest.param({**_set(0), "entry": {"type": "setrng", "ref": "XFD1", "values": [[1, 2]]}}, 422, "does_not_fit",
                 id="range-past-last-column"),
    pytest.param(_set("é" * (16 * 1024 + 1)), 422, "does_not_fit", id="text-too-large-in-bytes"),
    pytest.param({"entry": {"type": "delrow", "row": 0}}, 400, "invalid_request", id="row-zero"),
    pytest.param(_set("x" * (32 * 1024 + 1)), 400, "invalid_request", id="text-too-long"),
    pytest.param(_set(2**64), 400, "invalid_request", id="integer-too-large"),
    pytest.param({**_set(1), "entry_id": "not-a-uuid"}, 400, "invalid_request", id="bad-entry-id"),
    pytest.param({**_without(_set(1), "since"), "expected": -1}, 400, "invalid_request", id="negative-expected"),
    pytest.param(_without(_set(1), "entry_id"), 400, "missing_entry_id", id="no-entry-id"),
    pytest.param(_without(_set(1), "since"), 400, "missing_since", id="no-since"),
    pytest.param({**_set(1), "since": 0}, 400, "position_required", id="since-without-segment"),
    pytest.param({**_set(1), "expected": {"segment": 0, "num": 1}}, 400, "since_and_expected", id="both"),
    pytest.param({**_without(_set(1), "since"), "expected": START}, 400, "invalid_expected", id="expected-num-0"),
    pytest.param({**_set(1), "since": {"segment": 0, "num": 5}}, 409, "unknown_position", id="since-past-the-end"),
    pytest.param({**_set(1), "since": {"segment": 3, "num": 0}}, 409, "unknown_position", id="since-no-segment"),
    pytest.param({"entry": {"type": "setrng", "ref": "A1", "values": [["y" * 1000] * 1100]}}, 413,
                 "payload_too_large", id="request-too-large"),
]


@stack
@pytest.mark.parametrize(("body", "status", "code"), BAD_APPENDS)
def test_a_bad_append_is_refused_with_what_to_do_and_nothing_is_written(
        api: Api, body: Any, status: int, code: str) -> None:
    log_id = api.create()
    raw = body if isinstance(body, str) else None

    reply = api.call("POST", f"/sheets/{log_id}/entries", None if raw is not None else body, raw=raw)

    assert_error(reply, status, code)
    assert {"segment": 0, "num": 0} == api.call("GET", f"/sheets/{log_id}").json["position"]


@stack
def test_an_unknown_sheet_is_404_on_every_route(api: Api) -> None:
    missing = str(uuid.uuid4())
    calls = [
        api.call("GET", f"/sheets/{missing}"),
        api.append(missing, {"type": "set", "ref": "A1", "value": 1}),
        api.call("GET", f"/sheets/{missing}/entries", query={"segment": "0", "after": "0"}),
        api.call("GET", f"/sheets/{missing}/snapshots"),
        api.call("POST", f"/sheets/{missing}/uploads", {"size": 10, "content_type": "text/csv"}),
    ]
    for reply in calls:
        assert_error(reply, 404, "log_not_found")


@stack
def test_bad_ids_parameters_routes_and_methods_are_refused(api: Api) -> None:
    log_id = api.create()
    assert_error(api.call("GET", "/sheets/not-a-uuid"), 400, "invalid_log_id")
    assert_error(api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0"}), 400, "missing_parameter")
    assert_error(api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "-1"}), 400,
                 "invalid_parameter")
    assert_error(api.call("POST", "/sheets", {"name": "budget"}), 400, "invalid_request")
    assert_error(api.call("GET", "/spreadsheets"), 404, "route_not_found")
    wrong_method = api.call("DELETE", f"/sheets/{log_id}")
    assert_error(wrong_method, 405, "method_not_allowed")
    assert "GET" == wrong_method.headers["Allow"]


@stack
def test_a_storage_failure_is_503_with_retry_advice(deployment: LocalDeployment,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    use_deployment(deployment, monkeypatch, SEGLOG_SEGMENTS_TABLE=f"missing-{uuid.uuid4().hex[:8]}")
    try:
        reply = Api().call("GET", f"/sheets/{uuid.uuid4()}")
    finally:
        runtime.backend.cache_clear()

    assert_error(reply, 503, "storage_unavailable")
    assert "retry" in reply.error["message"]
    assert "1" == reply.headers["Retry-After"]


# ----------------------------------------------------------------------------------------- logs, OpenAPI


@stack
def test_each_request_logs_one_line_with_method_path_status_and_log_id(api: Api) -> None:
    log_id = api.create()
    with capture_logs() as logs:
        api.append(log_id, {"type": "set", "ref": "A1", "value": 1})
        api.call("GET", "/sheets/nope")

    requests = [line for line in logs if line["event"] == "request"]
    assert [("POST", f"/sheets/{log_id}/entries", 200, log_id), ("GET", "/sheets/nope", 400, None)] == [
        (r["method"], r["path"], r["status"], r["log_id"]) for r in requests]


def test_the_openapi_document_describes_every_route() -> None:
    reply = Api().call("GET", "/openapi.json")
    document = reply.json

    routes = {(route.openapi_path, route.method.lower()) for route in (*app._static_routes, *app._dynamic_routes)}
    described = {(path, method) for path, operations in document["paths"].items() for method in operations}
    assert 200 == reply.status
    assert "3.1.0" == document["openapi"]
    assert routes == described
    assert openapi.document() == document
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                schema = response["content"]["application/json"]["schema"]
                ref = schema.get("$ref", "")
                assert not ref or ref.removeprefix("#/components/schemas/") in document["components"]["schemas"], (
                    path, status)
