"""The batcher (issue 35): the edits made within a window share one request; a backlog goes in batches of at most
100 edits; each caller's order is kept; no edit is lost or stored twice, whatever answers are lost.

The API here is a small in-process log (:class:`LogTransport`) that keeps the protocol's promise: an entry id is
stored once, a retry of it is answered ``deduplicated``; it can lose answers before or after storing.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_client import (
    ApiError,
    Backoff,
    Batcher,
    RetriesExhaustedError,
    SeglogClient,
    delete_row,
    insert_row,
    set_cell,
    set_range,
)
from seglog_client.batcher import BATCH_BYTES, MAX_EDITS, stored_size_bound
from seglog_client.entries import Edit
from seglog_client.transport import NoAnswer, Response

LOG = uuid.UUID("0b7f3c1a-2d4e-4f5a-8b6c-7d8e9f0a1b2c")


@dataclass
class LogTransport:
    """One sheet's log behind the API's append: entries are ``(entry_id, edits)``; ``lose`` decides, per try,
    whether the answer is lost before the entry is stored, after, or not at all."""

    entries: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lose: Any = None  # callable(try number) -> "before" | "after" | None
    refuse: Any = None  # callable(request) -> (status, code) | None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str],
                 timeout: float) -> Response:
        with self.lock:
            if method == "GET":  # the snapshots of a sheet this client has not seen
                return self._answer(200, {"latest": {"segment": 0, "num": 0}, "segments": [], "pending": []})
            request = json.loads(body or b"{}")
            self.requests.append(request)
            loss = self.lose(len(self.requests)) if self.lose else None
            if loss == "before":
                raise NoAnswer("lost before the server acted")
            refusal = self.refuse(request) if self.refuse else None
            if refusal is not None:
                return self._answer(refusal[0], {"error": {"code": refusal[1], "message": "refused"}})
            entry = request["entry"]
            edits = entry["edits"] if entry["type"] == "edits" else [entry]
            ids = [eid for eid, _ in self.entries]
            deduplicated = request["entry_id"] in ids
            if not deduplicated:
                self.entries.append((request["entry_id"], edits))
            else:
                assert edits == self.entries[ids.index(request["entry_id"])][1], "an entry id with another body"
            num = [eid for eid, _ in self.entries].index(request["entry_id"]) + 1
            if loss == "after":
                raise NoAnswer("lost after the server stored it")
            return self._answer(200, {"segment": 0, "num": num, "entry_id": request["entry_id"],
                                      "deduplicated": deduplicated, "attempts": 1,
                                      "position": {"segment": 0, "num": num}})

    @staticmethod
    def _answer(status: int, body: Any) -> Response:
        return Response(status=status, headers={"content-type": "application/json"}, body=json.dumps(body).encode())

    def edits(self) -> list[dict[str, Any]]:
        return [edit for _, edits in self.entries for edit in edits]


def client_of(transport: LogTransport, max_tries: int = 10) -> SeglogClient:
    return SeglogClient("http://api.test", sign=False, transport=transport, max_tries=max_tries,
                        sleep=lambda _: None, backoff=Backoff(base=0.0, cap=0.0))


def manual(client: SeglogClient, **options: Any) -> Batcher:
    return Batcher(client, LOG, timer=None, **options)


def cell(n: int) -> Edit:
    return set_cell(f"A{n + 1}", n)


def as_json(edit: Edit) -> dict[str, Any]:
    return json.loads(json.dumps({"entry": edit}, default=lambda s: {
        "type": type(s).__struct_config__.tag, **{f: getattr(s, f) for f in s.__struct_fields__}}))["entry"]


# ------------------------------------------------------------------------------------------ gathering


def test_edits_within_the_window_share_one_request_sent_once_the_window_passed() -> None:
    log, now = LogTransport(), [0.0]
    batcher = manual(client_of(log), window=0.05, monotonic=lambda: now[0])
    first = [batcher.add(cell(n)) for n in range(3)]
    now[0] = 0.04
    late = batcher.add(cell(3))
    assert ([], []) == (batcher.poll(), log.requests)  # within the window: nothing sent yet
    now[0] = 0.05
    assert [1] == [a.num for a in batcher.poll()]  # the window has passed: the four go together
    assert 1 == len(log.requests)
    assert [as_json(cell(n)) for n in range(4)] == log.edits()
    assert [(1, n) for n in range(4)] == [(t.wait(0).num, t.index) for t in [*first, late]]
    assert {first[0].entry_id} == {t.entry_id for t in [*first, late]}


def test_a_single_edit_goes_as_the_plain_entry_it_is() -> None:
    log = LogTransport()
    batcher = manual(client_of(log))
    batcher.add(set_cell("B2", 5))
    batcher.flush()
    assert [{"type": "set", "ref": "B2", "value": 5}] == [r["entry"] for r in log.requests]


def test_a_backlog_of_200_edits_goes_in_full_batches_in_order() -> None:
    """200 edits of about 12 bytes stored: 3 requests of as many edits as 900 bytes take, not 200."""
    log = LogTransport()
    batcher = manual(client_of(log), window=3600)
    edits = [delete_row(n + 1) for n in range(200)]
    for edit in edits:
        batcher.add(edit)
    answers = batcher.flush()
    assert [1, 2, 3] == [a.num for a in answers]
    assert [as_json(e) for e in edits] == log.edits()
    cuts = [len(r["entry"]["edits"]) for r in log.requests]
    first, second = edits[:cuts[0]], edits[cuts[0]:cuts[0] + cuts[1]]
    for batch, following in ((first, second[0]), (second, edits[cuts[0] + cuts[1]])):
        # Each batch is full: within the limit, and the next edit would have passed it.
        used = 8 + sum(map(stored_size_bound, batch))
        assert used <= BATCH_BYTES < used + stored_size_bound(following)


def test_a_batch_holds_at_most_max_edits() -> None:
    log = LogTransport()
    batcher = manual(client_of(log), window=3600, max_bytes=10**6)
    for _ in range(MAX_EDITS + 1):
        batcher.add(delete_row(1))
    batcher.flush()
    assert [MAX_EDITS, None] == [len(r["entry"]["edits"]) if "edits" in r["entry"] else None for r in log.requests]


def test_batches_stay_within_the_stored_byte_limit_and_a_large_edit_goes_alone() -> None:
    log = LogTransport()
    batcher = manual(client_of(log), window=3600)
    batcher.add(set_cell("A1", "x" * 2000))
    for n in range(30):
        batcher.add(set_cell(f"B{n + 1}", "y" * 60))
    batcher.flush()
    sizes = [len(r["entry"]["edits"]) if r["entry"]["type"] == "edits" else 1 for r in log.requests]
    # 60 characters and 13 bytes of frame each: 12 fit in 900 bytes (the bound is checked against the core's own
    # encoding in tests/test_batcher_limits.py).
    assert [1, 12, 12, 6] == sizes
    assert 73 == stored_size_bound(set_cell("B1", "y" * 60))


def test_the_background_timer_sends_within_the_window() -> None:
    log = LogTransport()
    with client_of(log).batcher(LOG, window=0.01) as batcher:
        tickets = [batcher.add(cell(n)) for n in range(5)]
        assert [1] * 5 == [t.wait(5).num for t in tickets]
    assert 1 == len(log.requests)


class FakeTimer:
    """The batcher's timer, fired by the test: records each schedule's delay."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[float, Any]] = []

    def __call__(self, delay: float, action: Any) -> FakeTimer:
        self.scheduled.append((delay, action))
        return self

    def cancel(self) -> None:
        pass

    def fire(self) -> None:
        _, action = self.scheduled.pop()
        action()


def test_the_timer_sends_again_a_batch_whose_answers_were_lost_without_a_new_add() -> None:
    log = LogTransport(lose=lambda n: "after" if n <= 4 else None)  # two flushes' tries lost, the answer too
    timer = FakeTimer()
    batcher = Batcher(client_of(log, max_tries=2), LOG, timer=timer, window=0.01)
    tickets = [batcher.add(cell(n)) for n in range(3)]
    timer.fire()  # the window passed: sent, answers lost twice; a retry is scheduled
    assert [1.0] == [delay for delay, _ in timer.scheduled] and 3 == batcher.pending
    timer.fire()  # lost twice again: the pause doubles
    assert [2.0] == [delay for delay, _ in timer.scheduled]
    timer.fire()  # answered: deduplicated, stored once
    assert [] == timer.scheduled and 0 == batcher.pending
    assert [1, 1, 1] == [t.wait(0).num for t in tickets]
    assert 1 == len({r["entry_id"] for r in log.requests}) and 1 == len(log.entries)


def test_after_a_refusal_the_timer_sends_the_batches_behind_it() -> None:
    log = LogTransport(refuse=lambda r: (422, "does_not_fit") if r["entry"].get("ref") == "XFE1" else None)
    timer = FakeTimer()
    batcher = Batcher(client_of(log), LOG, timer=timer, window=0.01, max_edits=1)
    bad, good = batcher.add(set_cell("XFE1", 1)), batcher.add(cell(2))
    timer.fire()
    assert isinstance(bad.error, ApiError) and 1 == good.wait(0).num
    assert [] == timer.scheduled and 0 == batcher.pending


# ------------------------------------------------------------------------------------------ exactly once


def test_a_batch_whose_answers_are_lost_is_resent_whole_with_its_entry_id_and_since() -> None:
    log = LogTransport(lose=lambda n: "after" if n <= 2 else None)
    batcher = manual(client_of(log, max_tries=2), window=3600)
    for n in range(4):
        batcher.add(cell(n))
    with pytest.raises(RetriesExhaustedError):
        batcher.flush()
    assert 4 == batcher.pending
    batcher.add(cell(4))
    batcher.flush()
    first, second, resend, after = log.requests
    assert first == second == resend
    assert 1 == len(after["entry"]["edits"]) if after["entry"]["type"] == "edits" else True
    assert [as_json(cell(n)) for n in range(5)] == log.edits()
    assert 0 == batcher.pending


def test_a_refused_batch_fails_its_tickets_and_the_rest_go_on() -> None:
    log = LogTransport(refuse=lambda r: (422, "does_not_fit") if r["entry"].get("edits", [{}])[0].get(
        "ref") == "XFE1" else None)
    batcher = manual(client_of(log), max_edits=2, window=3600)
    bad = [batcher.add(set_cell("XFE1", 1)), batcher.add(cell(1))]
    good = batcher.add(cell(2))
    with pytest.raises(ApiError):
        batcher.flush()
    assert ["does_not_fit", "does_not_fit"] == [t.error.code for t in bad if isinstance(t.error, ApiError)]
    batcher.flush()
    assert 1 == good.wait(0).num
    assert [as_json(cell(2))] == log.edits()


def test_a_batch_refused_as_too_large_is_split_and_sent_in_halves() -> None:
    log = LogTransport(refuse=lambda r: (422, "batch_too_large") if len(r["entry"].get("edits", [])) > 2 else None)
    batcher = manual(client_of(log), window=3600)
    for n in range(5):
        batcher.add(cell(n))
    batcher.flush()
    assert [as_json(cell(n)) for n in range(5)] == log.edits()
    assert 3 == len(log.entries)


EDITS = st.one_of(
    st.builds(lambda n, v: set_cell(f"A{n}", v), st.integers(1, 9), st.one_of(st.integers(), st.text(max_size=80))),
    st.builds(lambda n: insert_row(n, [n]), st.integers(0, 9)),
    st.builds(delete_row, st.integers(1, 9)),
    st.builds(lambda n: set_range(f"B{n}", [[1.5, None], ["z"]]), st.integers(1, 9)),
)


@settings(max_examples=60, deadline=None)
@given(callers=st.lists(st.lists(EDITS, max_size=40), min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1),
       flushes=st.lists(st.integers(0, 60), max_size=5))
def test_every_edit_is_stored_once_in_each_callers_order_whatever_answers_are_lost(
        callers: list[list[Edit]], seed: int, flushes: list[int]) -> None:
    rng = random.Random(seed)
    log = LogTransport(lose=lambda _: rng.choice(["before", "after", None, None]))
    batcher = manual(client_of(log, max_tries=3), window=3600)
    added: list[tuple[int, int]] = []  # (caller, index) in the order added: interleaved callers
    cursors = [0] * len(callers)
    step = 0
    while any(c < len(edits) for c, edits in zip(cursors, callers, strict=True)):
        who = rng.choice([i for i, edits in enumerate(callers) if cursors[i] < len(edits)])
        batcher.add(callers[who][cursors[who]])
        added.append((who, cursors[who]))
        cursors[who] += 1
        step += 1
        if step in flushes:
            with contextlib.suppress(RetriesExhaustedError):
                batcher.flush()
    for _ in range(50):
        try:
            batcher.flush()
            break
        except RetriesExhaustedError:
            continue
    assert 0 == batcher.pending
    assert [as_json(callers[who][i]) for who, i in added] == log.edits()
