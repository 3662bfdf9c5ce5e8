"""seglog_client against the real API, through the HTTP gateway of a running emulator: concurrent copies of one
append are stored once among other writers (the issue's acceptance test), requests outside the retry protocol
are refused, every typed answer decodes what the API really sends, and the API's door is shut to requests not
signed with a key it accepts (DESIGN §10.3)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from client.conftest import Emulated
from seglog_client import (
    START,
    ApiError,
    Appended,
    Credentials,
    OutcomeUnknownError,
    Position,
    SeglogClient,
    insert_row,
    set_cell,
    set_range,
)
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_plugin.resources import backend_of
from signed_http import send

pytestmark = pytest.mark.stack

ROUNDS = 50
COPIES = 3
WRITERS = 2


def test_three_concurrent_copies_of_one_append_are_stored_once_among_other_writers(emulator: Emulated) -> None:
    """50 rounds: three clients send the same append (one entry id, one since) at the same moment while two
    other clients append their own entries. Each round, exactly one copy is stored and the other two answer
    ``deduplicated`` with its position; the log holds every entry id once. Without the consistent forward read
    and the conditional put, overlapping copies would both be written (a duplicate id in the log)."""
    coordinator = emulator.client()
    log_id = coordinator.create().log_id
    writers = [emulator.client() for _ in range(WRITERS)]
    copied: list[uuid.UUID] = []
    written: list[uuid.UUID] = []
    with ThreadPoolExecutor(COPIES + WRITERS) as pool:
        for n in range(ROUNDS):
            start = threading.Barrier(COPIES + WRITERS)
            entry_id, since = uuid.uuid4(), coordinator.position(log_id)

            def copy(n: int = n, entry_id: uuid.UUID = entry_id, since: Position | None = since,
                     start: threading.Barrier = start) -> Appended:
                client = emulator.client()
                start.wait()
                return client.append(log_id, set_cell("A1", n), entry_id=entry_id, since=since)

            def write(client: SeglogClient, n: int = n, start: threading.Barrier = start) -> Appended:
                start.wait()
                return client.append(log_id, insert_row(1, [n]))

            copies = [pool.submit(copy) for _ in range(COPIES)]
            others = [pool.submit(write, client) for client in writers]
            answers = [f.result() for f in copies]
            written += [f.result().entry_id for f in others]
            copied.append(entry_id)
            assert ([False] + [True] * (COPIES - 1), 1) == (
                sorted(a.deduplicated for a in answers), len({(a.segment, a.num) for a in answers})), f"round {n}"
            coordinator.note_position(log_id, max(a.position for a in answers))
    in_log = [i for i in emulator.entry_ids(log_id) if i is not None]  # Snapshot entries carry no id
    assert [] == [str(i) for i, count in Counter(in_log).items() if count > 1]
    assert sorted(copied + written) == sorted(in_log)


@pytest.mark.parametrize("missing, code", [("since", "missing_since"), ("entry_id", "missing_entry_id")])
def test_an_append_outside_the_retry_protocol_is_refused_naming_what_is_missing(emulator: Emulated, missing: str,
                                                                                code: str) -> None:
    """Without an entry id a retry cannot be recognised, without since the server does not know where to look:
    the API refuses (400) and says which field to send; nothing is written."""
    client = emulator.client()
    log_id = client.create().log_id
    body = {"entry": {"type": "set", "ref": "A1", "value": 1}, "entry_id": str(uuid.uuid4()),
            "since": {"segment": 0, "num": 0}}
    del body[missing]
    with pytest.raises(ApiError) as raised:
        client.request("POST", f"/sheets/{log_id}/entries", body)
    assert (400, code) == (raised.value.status, raised.value.code)
    assert f"{missing} is required" in raised.value.message
    assert [None] == emulator.entry_ids(log_id)


def test_every_typed_answer_reads_what_the_api_sends(emulator: Emulated) -> None:
    """Create, append, a conflict, load, sync, snapshots, an upload and the OpenAPI document, decoded into the
    client's types: a field renamed on either side would fail here, not in a user's hands."""
    client = emulator.client()
    created = client.create()
    log_id = created.log_id
    assert (True, START) == (created.created, created.position)
    assert (False, START) == (client.create(log_id).created, client.create(log_id).position)
    first = client.append(log_id, set_cell("B2", 5))
    assert (Position(segment=0, num=1), False, 1) == (first.position, first.deduplicated, first.attempts)
    with pytest.raises(ApiError) as conflict:
        client.append(log_id, set_cell("C3", 1), expected=Position(segment=0, num=1))
    assert (409, "version_conflict", 1) == (conflict.value.status, conflict.value.code,
                                            conflict.value.details["entry"]["num"])
    block = {"ref": "A4", "values": [["x", 1.5], [True, None, "z"]]}
    uploaded = client.upload(log_id, json.dumps(block).encode(), "application/json", "setrng")
    assert (Position(segment=0, num=2), True) == (uploaded.position, uploaded.external is not None)
    csv = b"name,qty\nbolts,3\n"
    imported = client.upload(log_id, csv, "text/csv", "imp")
    after_import = client.append(log_id, set_range("C1", [[7]]))
    sheet = client.load(log_id)
    assert ([["name", "qty", 7], ["bolts", 3]], after_import.position, 1) == (sheet.rows, sheet.position, sheet.pages)
    synced = client.sync(log_id, START)
    assert ([(0, n) for n in range(1, 5)], ["set", "setrng", "imp", "setrng"]) == (
        [(e.segment, e.num) for e in synced.entries], [e.type for e in synced.entries])
    assert ({"row": 2, "col": 2, "value": 5, "ref": "B2"}, imported.external) == (
        synced.entries[0].body, synced.entries[2].external)
    assert (START, [0]) == (client.snapshots(log_id).latest, [s.segment for s in client.snapshots(log_id).segments])
    assert "/sheets/{log_id}/entries" in client.openapi()["paths"]


def test_an_unsigned_post_is_refused_and_the_client_librarys_signed_one_succeeds(emulator: Emulated) -> None:
    """The template's HttpApi requires IAM authorization: the gateway answers an unsigned create as API Gateway
    does (403 {"message":"Forbidden"}) and writes nothing; the same create through the client library, signed
    with the key the emulator accepts, creates the sheet."""
    log_id = uuid.uuid4()
    refused = send("POST", f"{emulator.url}/sheets", json.dumps({"log_id": str(log_id)}).encode(),
                   {"content-type": "application/json"})
    assert (403, {"message": "Forbidden"}) == (refused.status, refused.json)
    assert [] == emulator.entry_ids(log_id)
    created = emulator.client().create(log_id)
    assert (True, [None]) == (created.created, emulator.entry_ids(log_id))


def test_a_key_the_emulator_does_not_accept_is_refused_with_api_gateways_message(emulator: Emulated) -> None:
    """A wrong secret: 403 InvalidSignatureException, never retried (it is the request's fault), the API's message
    and kind in the ApiError."""
    client = SeglogClient(emulator.url, credentials=Credentials(emulator.credentials.access_key_id, "wrong"))
    with pytest.raises(ApiError) as raised:
        client.create()
    assert (403, "InvalidSignatureException") == (raised.value.status, raised.value.code)
    assert raised.value.message.startswith("The request signature we calculated does not match")


def _next_segment(emulator: Emulated, log_id: uuid.UUID) -> None:
    """Close the current segment and start the next, once the pipeline has completed the current one's snapshot
    (a segment closes only then, DESIGN §3)."""
    backend = backend_of(emulator.deployment)
    deadline = time.monotonic() + 60
    while backend.store.latest_segments(log_id, 1, consistent=True)[0].last_snapshot is None:
        assert time.monotonic() < deadline, "the pipeline did not complete the segment's snapshot in 60 s"
        time.sleep(0.2)
    backend.event_log().start_segment(log_id)


def test_the_client_follows_a_retired_since_inside_the_horizon_and_never_resends_past_it(emulator: Emulated) -> None:
    """Issue 18 through the gateway: retention deletes the segments holding since. A first try whose since is
    that stale is answered 410 since_retired and the client resends it once from the answer's position; a retry
    of an entry that landed in the deleted history, a horizon after its first try, is not resent: the outcome is
    unknown, and the log never holds an entry twice. (Before: 409 unknown_position, and the advice to load and
    resend stored the entry a second time.)"""
    client = emulator.client()
    log_id = client.create().log_id
    landed = client.append(log_id, set_cell("A1", 1))  # at 0/1
    for _ in range(3):
        _next_segment(emulator, log_id)
    backend = backend_of(emulator.deployment)
    assert [0, 1] == apply_retention(backend.store, backend.blobs, log_id,
                                     RetentionPolicy(keep=2, min_age=0, archive=False))

    stale = emulator.client()
    fresh = stale.append(log_id, set_cell("A2", 2), since=START)
    again = emulator.client().append(log_id, set_cell("A2", 2), entry_id=fresh.entry_id, since=START)
    with pytest.raises(OutcomeUnknownError) as unknown:
        emulator.client().append(log_id, set_cell("A1", 1), entry_id=landed.entry_id, since=START,
                                 first_try=time.time() - 604800)

    assert (Position(segment=3, num=1), False) == (fresh.position, fresh.deduplicated)
    assert (fresh.position, True) == (again.position, again.deduplicated)
    assert 410 == unknown.value.refusal.status
    held = Counter(emulator.entry_ids(log_id))
    assert (1, 0) == (held[fresh.entry_id], held[landed.entry_id])
