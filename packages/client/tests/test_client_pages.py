"""Loads joined from pages, syncs that follow ``more``, and the three steps of an upload, against a scripted
HTTP server that records what the client sent."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fake_api import DROP, KEYS, FakeApi, Reply, appended, fake, position

from seglog_client import ApiError, Backoff, Position, ProtocolError, SeglogClient

__all__ = ["fake"]

LOG = "3f0c8a34-4b5e-4c1b-9d2a-1f6e0b7c9a01"
ENTRY = "7d9e1c2b-0a4f-4e3d-8c5b-6a7f8e9d0c12"
UPLOAD = "0b6f2c9e-1d3a-4f5b-8e7c-2a9d4b6c8e10"


def client_of(fake: FakeApi) -> SeglogClient:
    return SeglogClient(fake.url, sleep=lambda _: None, backoff=Backoff(base=0.0, cap=0.0, rng=random.Random(1)),
                        credentials=KEYS)


def page(rows: list[list[Any]], *, row: int = 1, col: int = 1, next: str | None = None,
         at: tuple[int, int] = (0, 7)) -> Reply:
    return Reply(200, {"snapshot": {"segment": 0, "num": 0, "root": "snapshots/x" if row == 1 else None},
                       "position": position(*at), "row": row, "col": col, "rows": rows, "next": next})


def test_load_follows_next_and_joins_a_row_cut_between_columns(fake: FakeApi) -> None:
    """Page 2 continues row 2 from column C (a row too large for one page): the joined rows are the sheet as
    one answer would have been, the cursor goes back as given, and the load's position becomes ``since``."""
    fake.script(page([[1, 2], ["a", "b"]], next="0.0.0.7.2.3"), page([["c"], [None, 5]], row=2, col=3, next="n 3"),
                page([[9]], row=4))
    client = client_of(fake)
    sheet = client.load(LOG)
    assert [[1, 2], ["a", "b", "c"], [None, 5], [9]] == sheet.rows
    assert [f"/sheets/{LOG}", f"/sheets/{LOG}?cursor=0.0.0.7.2.3", f"/sheets/{LOG}?cursor=n%203"] == [
        r.target for r in fake.requests]
    assert (Position(segment=0, num=7), 3, Position(segment=0, num=7)) == (
        sheet.position, sheet.pages, client.position(LOG))


@pytest.mark.parametrize("second", [page([[3]], row=4), page([[3]], row=1, col=2), page([[3]], row=2, at=(0, 8))])
def test_pages_that_do_not_continue_the_load_are_refused(fake: FakeApi, second: Reply) -> None:
    """A skipped row, a continuation of the wrong cell, or a page of another state would make a wrong sheet:
    the client refuses it rather than show it."""
    fake.script(page([[1], [2, 2]], next="c"), second)
    with pytest.raises(ProtocolError, match="load again"):
        client_of(fake).load(LOG)


def test_a_load_whose_state_was_retired_between_pages_starts_again(fake: FakeApi) -> None:
    """Retention retired the snapshot the first page pinned: the next page answers 409 unknown_position, and the
    client loads again from the first page (found by the simulator: a reader's load failed during retention)."""
    gone = Reply(409, {"error": {"code": "unknown_position", "message": "log has no entry 0/0",
                                 "position": {"segment": 0, "num": 0}}})
    fake.script(page([[1]], next="0.0.0.7.2.1"), gone, page([[5], [6]], at=(1, 3)))
    sheet = client_of(fake).load(LOG)
    assert ([[5], [6]], Position(segment=1, num=3)) == (sheet.rows, sheet.position)
    assert [f"/sheets/{LOG}", f"/sheets/{LOG}?cursor=0.0.0.7.2.1", f"/sheets/{LOG}"] == [
        r.target for r in fake.requests]


def test_an_unknown_log_is_not_loaded_again(fake: FakeApi) -> None:
    """Only a cursor page's 409 restarts a load: a first page's refusal is the answer."""
    fake.script(Reply(409, {"error": {"code": "unknown_position", "message": "no"}}))
    with pytest.raises(ApiError, match="unknown_position"):
        client_of(fake).load(LOG)
    assert len(fake.requests) == 1


def test_sync_follows_more_from_each_pages_position(fake: FakeApi) -> None:
    """``more`` means ask again from the page's ``position``: every entry once, in order, across a segment."""
    entry = {"type": "set", "entry_id": ENTRY, "created": 1, "body": {"row": 1, "col": 1, "value": 1, "ref": "A1"}}
    fake.script(Reply(200, {"reload": False, "entries": [{**entry, "segment": 0, "num": 4}], "position": position(0, 4),
                            "more": True}),
                Reply(200, {"reload": False, "entries": [{**entry, "segment": 1, "num": 1}], "position": position(1, 1),
                            "more": False}))
    client = client_of(fake)
    synced = client.sync(LOG, Position(segment=0, num=3), limit=1)
    assert [f"/sheets/{LOG}/entries?segment=0&after=3&limit=1", f"/sheets/{LOG}/entries?segment=0&after=4&limit=1"
            ] == [r.target for r in fake.requests]
    assert ([(0, 4), (1, 1)], Position(segment=1, num=1), False) == (
        [(e.segment, e.num) for e in synced.entries], synced.position, synced.reload)
    assert {"row": 1, "col": 1, "value": 1, "ref": "A1"} == synced.entries[0].body
    assert Position(segment=1, num=1) == client.position(LOG)


def test_sync_says_reload_when_the_client_fell_behind(fake: FakeApi) -> None:
    fake.script(Reply(200, {"reload": True}))
    synced = client_of(fake).sync(LOG, Position(segment=0, num=3))
    assert (True, [], Position(segment=0, num=3)) == (synced.reload, synced.entries, synced.position)


def presigned(fake: FakeApi) -> Reply:
    return Reply(201, {"upload_id": UPLOAD, "key": f"entries/{LOG}/{UPLOAD}", "method": "PUT", "expires_in": 900,
                       "url": f"{fake.url}/bucket/entries/{LOG}/{UPLOAD}?X-Amz-Signature=a%2Fb&X-Amz-Expires=900",
                       "headers": {"Content-Type": "text/csv", "Content-Length": "8",
                                   "x-amz-tagging": "discardable=true"}})


def test_upload_puts_the_bytes_with_exactly_the_signed_headers_and_completes_once(fake: FakeApi) -> None:
    """Step 1 asks for a URL of the data's size and type; the PUT goes to that URL as given (its signature covers
    the query's exact encoding) with the signed headers and nothing of the API's (S3 would refuse extra signed
    ones, and a JSON content type would not match); a lost PUT answer sends the same bytes again; the
    completion names the entry id and ``since`` like an append."""
    client = client_of(fake)
    client.note_position(LOG, Position(segment=0, num=2))
    fake.script(presigned(fake), DROP, Reply(200, b"", {"content-type": "application/xml"}),
                Reply(200, {**appended(ENTRY, 0, 3), "external": f"entries/{LOG}/{ENTRY}", "upload_id": UPLOAD}))
    answer = client.upload(LOG, b"a,b\n1,2\n", "text/csv", "imp", entry_id=ENTRY)
    step1, put1, put2, complete = fake.requests
    assert ("POST", f"/sheets/{LOG}/uploads", {"content_type": "text/csv", "size": 8}) == (
        step1.method, step1.target, step1.json())
    assert [("PUT", f"/bucket/entries/{LOG}/{UPLOAD}?X-Amz-Signature=a%2Fb&X-Amz-Expires=900", b"a,b\n1,2\n")] * 2 == [
        (p.method, p.target, p.body) for p in (put1, put2)]
    assert ("text/csv", "8", "discardable=true", None) == (
        put1.headers["content-type"], put1.headers["content-length"], put1.headers["x-amz-tagging"],
        put1.headers.get("accept"))
    assert (f"/sheets/{LOG}/uploads/{UPLOAD}/complete",
            {"entry_id": ENTRY, "since": position(0, 2), "type": "imp"}) == (complete.target, complete.json())
    assert (f"entries/{LOG}/{ENTRY}", Position(segment=0, num=3)) == (answer.external, client.position(LOG))


def test_an_s3_refusal_of_the_put_is_an_api_error_with_s3s_code(fake: FakeApi) -> None:
    """S3 answers XML: its Code (SignatureDoesNotMatch, AccessDenied when the URL expired) is the error's code."""
    client = client_of(fake)
    client.note_position(LOG, Position(segment=0, num=0))
    fake.script(presigned(fake), Reply(403, b"<?xml version='1.0'?><Error><Code>SignatureDoesNotMatch</Code>"
                                            b"<Message>The signature does not match</Message></Error>"))
    with pytest.raises(ApiError) as raised:
        client.upload(LOG, b"a,b\n1,2\n", "text/csv", "imp")
    assert (403, "SignatureDoesNotMatch", "The signature does not match", 2) == (
        raised.value.status, raised.value.code, raised.value.message, len(fake.requests))
