"""Batched edits through the api function (issue 35): one ``edits`` entry, one entry id, one position, the same
exactly-once protocol as a single edit; a bad edit refuses the whole batch and names it."""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema
import pytest

from seglog_core.schema import MAX_EDITS, MAX_EDITS_BYTES
from seglog_services.api import openapi
from test_api import START, Api, api, assert_error

__all__ = ["api"]  # the fixture, used by name

stack = pytest.mark.stack


def _batch(*edits: dict[str, Any]) -> dict[str, Any]:
    return {"type": "edits", "edits": list(edits)}


def _entries(api: Api, log_id: str) -> list[dict[str, Any]]:
    reply = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "0"})
    entries: list[dict[str, Any]] = reply.json["entries"]
    return entries


@stack
def test_a_batch_is_one_entry_at_one_position_applied_in_order(api: Api) -> None:
    log_id = api.create()
    batch = _batch({"type": "set", "ref": "A1", "value": "a"}, {"type": "insrow", "after": 0, "values": ["b"]},
                   {"type": "setrng", "ref": "B1", "values": [["c"], [1.5]]}, {"type": "delrow", "row": 5})

    reply = api.append(log_id, batch)
    single = api.append(log_id, {"type": "set", "ref": "C2", "value": True})

    assert (200, 1, {"segment": 0, "num": 1}, False) == (
        reply.status, reply.json["num"], reply.json["position"], reply.json["deduplicated"])
    assert (200, 2) == (single.status, single.json["num"])
    assert [["b", "c"], ["a", 1.5, True]] == api.call("GET", f"/sheets/{log_id}").json["rows"]
    stored = _entries(api, log_id)
    assert [("edits", reply.json["entry_id"]), ("set", single.json["entry_id"])] == [
        (e["type"], e["entry_id"]) for e in stored]
    assert [{"type": "set", "ref": "A1", "row": 1, "col": 1, "value": "a"},
            {"type": "insrow", "after": 0, "values": ["b"]},
            {"type": "setrng", "ref": "B1", "row": 1, "col": 2, "values": [["c"], [1.5]]},
            {"type": "delrow", "row": 5}] == stored[0]["body"]["edits"]


@stack
def test_a_retried_batch_is_stored_once_and_its_id_with_another_batch_is_refused(api: Api) -> None:
    log_id = api.create()
    entry_id = str(uuid.uuid4())
    batch = _batch({"type": "set", "ref": "A1", "value": 1}, {"type": "set", "ref": "A2", "value": 2})

    first = api.append(log_id, batch, entry_id=entry_id, since=START)
    api.append(log_id, {"type": "set", "ref": "B1", "value": 3})
    retry = api.append(log_id, batch, entry_id=entry_id, since=START)
    other = api.append(log_id, _batch({"type": "set", "ref": "A1", "value": 1}), entry_id=entry_id, since=START)

    assert (200, False, 1) == (first.status, first.json["deduplicated"], first.json["num"])
    assert (200, True, 1) == (retry.status, retry.json["deduplicated"], retry.json["num"])
    assert_error(other, 422, "entry_id_reused")
    assert [1, 2] == [e["num"] for e in _entries(api, log_id)]


BAD_BATCHES = [
    pytest.param(_batch({"type": "set", "ref": "A1", "value": 1}, {"type": "setrng", "ref": "XFD1",
                                                                   "values": [[1, 2]]}),
                 422, "does_not_fit", 1, id="edit-past-last-column"),
    pytest.param(_batch({"type": "set", "ref": "1A", "value": 1}), 400, "invalid_cell_ref", 0, id="bad-ref"),
    pytest.param(_batch({"type": "set", "ref": "A1", "value": "x" * 200},
                        *[{"type": "set", "ref": f"A{n}", "value": "y" * 200} for n in range(2, 6)]),
                 422, "batch_too_large", None, id="over-the-byte-limit"),
    pytest.param(_batch(*[{"type": "delrow", "row": 1}] * (MAX_EDITS + 1)), 400, "invalid_request", None,
                 id="over-the-edit-limit"),
    pytest.param(_batch(), 400, "invalid_request", None, id="empty"),
    pytest.param(_batch(_batch({"type": "set", "ref": "A1", "value": 1})), 400, "invalid_request", None,
                 id="nested"),
]


@stack
@pytest.mark.parametrize(("batch", "status", "code", "edit"), BAD_BATCHES)
def test_a_bad_batch_is_refused_whole_naming_the_edit_and_nothing_is_written(
        api: Api, batch: dict[str, Any], status: int, code: str, edit: int | None) -> None:
    log_id = api.create()

    reply = api.append(log_id, batch)

    assert_error(reply, status, code)
    assert edit == reply.error.get("edit")
    if code == "batch_too_large":
        assert ("bytes", MAX_EDITS_BYTES) == (reply.error["unit"], reply.error["limit"])
    assert [] == _entries(api, log_id)


# ----------------------------------------------------------------------------------------- the document


def _document_accepts(request: dict[str, Any]) -> bool:
    """Whether the OpenAPI document's AppendRequest schema takes ``request`` (JSON Schema 2020-12)."""
    document = openapi.document()
    schema = {"$ref": "#/components/schemas/AppendRequest", "components": document["components"]}
    return jsonschema.Draft202012Validator(schema).is_valid(request)


def test_the_document_describes_batches_as_the_api_decodes_them() -> None:
    def request(entry: dict[str, Any]) -> dict[str, Any]:
        return {"entry": entry, "entry_id": str(uuid.uuid4()), "since": START}

    one = {"type": "set", "ref": "A1", "value": 1}
    assert _document_accepts(request(_batch(one, {"type": "delrow", "row": 2})))
    assert _document_accepts(request(_batch(*[one] * MAX_EDITS)))
    refused = [_batch(), _batch(*[one] * (MAX_EDITS + 1)), _batch(_batch(one)), {**_batch(one), "extra": 1},
               _batch({"type": "imp", "source": "k", "format": "csv", "rows": []})]
    assert [False] * len(refused) == [_document_accepts(request(entry)) for entry in refused]
    assert "edits" in openapi.document()["components"]["schemas"]["Entry"]["properties"]["type"]["enum"]
