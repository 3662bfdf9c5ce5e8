"""The api's large-entry flow end to end (DESIGN §3): presigned PUT, the upload itself, then the entry.

The upload goes to LocalStack's S3 over HTTP with the URL and headers the API answered, as a browser would send
it ("Uploading objects with presigned URLs", Amazon S3 User Guide).
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import openpyxl
import pytest

from seglog_core.bodies import MAX_BODY
from seglog_plugin.resources import backend_of
from seglog_services import runtime
from seglog_stack.local import LocalDeployment
from test_api import OMIT, START, Api, Reply, assert_error, use_deployment

pytestmark = pytest.mark.stack

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
def api(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    use_deployment(deployment, monkeypatch)
    yield Api()
    runtime.backend.cache_clear()


def put(upload: dict[str, Any], data: bytes, headers: dict[str, str] | None = None) -> int:
    """PUT the bytes to the presigned URL with the headers step 1 gave (or ``headers`` instead)."""
    request = urllib.request.Request(upload["url"], data=data, method="PUT",
                                     headers=upload["headers"] if headers is None else headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def upload(api: Api, log_id: str, data: bytes, content_type: str) -> dict[str, Any]:
    reply = api.call("POST", f"/sheets/{log_id}/uploads", {"size": len(data), "content_type": content_type})
    assert 201 == reply.status, reply.json
    assert 200 == put(reply.json, data)
    result: dict[str, Any] = reply.json
    return result


def complete(api: Api, log_id: str, upload_id: str, entry_type: str, **fields: Any) -> Reply:
    """Step 3, with the retry protocol's ``since`` (a new sheet's start unless given)."""
    body = {"type": entry_type, "since": START, **fields}
    return api.call("POST", f"/sheets/{log_id}/uploads/{upload_id}/complete", {k: v for k, v in body.items()
                                                                               if v is not OMIT})


def test_step_1_answers_a_presigned_put_whose_object_carries_the_discardable_tag(
        api: Api, deployment: LocalDeployment) -> None:
    log_id = api.create()
    data = b"a,b\n1,2\n"

    reply = api.call("POST", f"/sheets/{log_id}/uploads", {"size": len(data), "content_type": "text/csv"})

    assert 201 == reply.status
    body = reply.json
    upload_id = uuid.UUID(body["upload_id"])
    assert f"uploads/{log_id}/{upload_id}" == body["key"]
    assert ("PUT", 900) == (body["method"], body["expires_in"])
    assert {"Content-Type": "text/csv", "Content-Length": str(len(data)), "x-amz-tagging": "discardable=true",
            "If-None-Match": "*"} == body["headers"]
    assert "X-Amz-Signature=" in body["url"]
    assert "content-length%3Bcontent-type%3Bhost%3Bif-none-match%3Bx-amz-tagging" in body["url"]  # X-Amz-SignedHeaders
    assert 200 == put(body, data)
    s3 = backend_of(deployment).blobs
    assert data == s3.get(body["key"])
    assert s3.is_discardable(body["key"])


def test_a_csv_upload_becomes_an_import_entry_with_its_body_in_s3(api: Api) -> None:
    log_id = api.create()
    api.append(log_id, {"type": "set", "ref": "Z9", "value": "replaced by the import"})
    uploaded = upload(api, log_id, b"name,qty\nbolt,12\nnut,true\n", "text/csv")

    reply = complete(api, log_id, uploaded["upload_id"], "imp")

    assert 200 == reply.status, reply.json
    appended = reply.json
    assert (0, 2, False, uploaded["upload_id"]) == (appended["segment"], appended["num"], appended["deduplicated"],
                                                    appended["upload_id"])
    assert appended["external"].startswith(f"entries/{log_id}/{appended['entry_id']}/")  # + the body's digest
    assert [["name", "qty"], ["bolt", 12], ["nut", True]] == api.call("GET", f"/sheets/{log_id}").json["rows"]
    (entry,) = api.call("GET", f"/sheets/{log_id}/entries", query={"segment": "0", "after": "1"}).json["entries"]
    assert ("imp", appended["external"]) == (entry["type"], entry["external"])
    assert "body" not in entry


def test_an_xlsx_upload_imports_its_first_worksheet(api: Api) -> None:
    log_id = api.create()
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["x", 1.5])
    sheet.append([None, "y"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    uploaded = upload(api, log_id, buffer.getvalue(), XLSX)

    reply = complete(api, log_id, uploaded["upload_id"], "imp")

    assert 200 == reply.status, reply.json
    assert [["x", 1.5], [None, "y"]] == api.call("GET", f"/sheets/{log_id}").json["rows"]


def test_a_json_upload_becomes_a_set_range_entry(api: Api) -> None:
    log_id = api.create()
    values = [[f"r{r}c{c}" for c in range(3)] for r in range(2000)]  # ~40 KB: beyond an inline request's taste
    data = json.dumps({"ref": "B2", "values": values}).encode()
    uploaded = upload(api, log_id, data, "application/json")

    reply = complete(api, log_id, uploaded["upload_id"], "setrng")

    assert 200 == reply.status, reply.json
    assert reply.json["external"].startswith(f"entries/{log_id}/")
    rows = api.call("GET", f"/sheets/{log_id}").json["rows"]
    assert [] == rows[0]
    assert [None, "r0c0", "r0c1", "r0c2"] == rows[1]
    assert 2001 == len(rows)


def test_a_presigned_url_writes_once_and_the_entry_is_made_of_the_first_upload(
        api: Api, deployment: LocalDeployment) -> None:
    """The URL signs If-None-Match: * (uploads module docstring; Amazon S3 User Guide, conditional-writes): a
    second PUT within its 15 minutes, before or after the completion, is refused 412 PreconditionFailed and the
    first upload stays, so an Import's source file cannot be swapped under its entry."""
    log_id = api.create()
    first = upload(api, log_id, b"name,qty\nbolt,12\n", "text/csv")

    assert 412 == put(first, b"name,qty\nnut,999\n")  # the same size, so only the condition can refuse it
    landed = complete(api, log_id, first["upload_id"], "imp")
    assert 412 == put(first, b"name,qty\nnut,999\n")

    assert 200 == landed.status, landed.json
    assert [["name", "qty"], ["bolt", 12]] == api.call("GET", f"/sheets/{log_id}").json["rows"]
    assert b"name,qty\nbolt,12\n" == backend_of(deployment).blobs.get(first["key"])


def test_an_uploaded_range_the_sheet_cannot_take_is_422_does_not_fit_as_an_append_is(api: Api) -> None:
    """What the OpenAPI document allows and the sheet cannot take — a range running past column XFD, a text over
    32 KB of UTF-8 — is 422 does_not_fit whether it comes inline or as an upload, a range or an imported file
    (before, an upload answered 400 invalid_cell_ref / value_too_large), and nothing is written."""
    log_id = api.create()
    past_xfd = {"ref": "XFD1", "values": [[1, 2]]}
    too_long = {"ref": "A1", "values": [["\u00e9" * (16 * 1024 + 1)]]}  # 16,385 characters, 32,770 bytes
    for values in (past_xfd, too_long):
        uploaded = upload(api, log_id, json.dumps(values).encode(), "application/json")

        assert_error(complete(api, log_id, uploaded["upload_id"], "setrng"), 422, "does_not_fit")
        assert_error(api.append(log_id, {"type": "setrng", **values}), 422, "does_not_fit")
    imported = upload(api, log_id, ("name\n" + "\u00e9" * (16 * 1024 + 1) + "\n").encode(), "text/csv")
    assert_error(complete(api, log_id, imported["upload_id"], "imp"), 422, "does_not_fit")
    assert {"segment": 0, "num": 0} == api.call("GET", f"/sheets/{log_id}").json["position"]


def test_completing_twice_appends_one_entry(api: Api) -> None:
    log_id = api.create()
    uploaded = upload(api, log_id, b"a\n", "text/csv")

    first = complete(api, log_id, uploaded["upload_id"], "imp", since=START)
    second = complete(api, log_id, uploaded["upload_id"], "imp", since=START)

    assert (200, False) == (first.status, first.json["deduplicated"])
    assert (200, True, first.json["num"], first.json["entry_id"]) == (
        second.status, second.json["deduplicated"], second.json["num"], second.json["entry_id"])


def test_a_range_upload_put_without_its_tag_is_tagged_when_completed(api: Api, deployment: LocalDeployment) -> None:
    # AWS refuses such a PUT (the tag is a signed header); LocalStack skips signature checks and accepts it.
    log_id = api.create()
    data = b'{"ref": "A1", "values": [[1]]}'
    step_1 = api.call("POST", f"/sheets/{log_id}/uploads", {"size": len(data), "content_type": "application/json"}
                      ).json
    assert 200 == put(step_1, data, {"Content-Type": "application/json"})
    blobs = backend_of(deployment).blobs
    if blobs.is_discardable(step_1["key"]):
        pytest.fail("the store applied a tag the PUT did not send")

    reply = complete(api, log_id, step_1["upload_id"], "setrng")

    assert 200 == reply.status
    assert blobs.is_discardable(step_1["key"])  # the entry's body is its own object: the upload is garbage


def test_an_imported_file_is_kept_however_often_its_completion_is_repeated(
        api: Api, deployment: LocalDeployment) -> None:
    """README: the imported file is kept in the bucket. It is the Import entry's source; before issue 18 every
    completion tagged it discardable again and nothing untagged it, so the lifecycle rule expired it."""
    log_id = api.create()
    uploaded = upload(api, log_id, b"name,qty\nbolt,12\n", "text/csv")
    blobs = backend_of(deployment).blobs
    assert blobs.is_discardable(uploaded["key"])  # as PUT: abandoned, it would expire

    first = complete(api, log_id, uploaded["upload_id"], "imp")
    again = complete(api, log_id, uploaded["upload_id"], "imp")

    assert (200, 200, True) == (first.status, again.status, again.json["deduplicated"])
    assert not blobs.is_discardable(uploaded["key"])
    assert b"name,qty\nbolt,12\n" == blobs.get(uploaded["key"])


def test_a_repeated_completion_keeps_the_body_the_router_already_kept(api: Api, deployment: LocalDeployment) -> None:
    log_id = api.create()
    uploaded = upload(api, log_id, b"a,b\n", "text/csv")
    first = complete(api, log_id, uploaded["upload_id"], "imp", since=START).json
    blobs = backend_of(deployment).blobs
    blobs.keep(first["external"])  # what the stream router does on the entry's INSERT

    again = complete(api, log_id, uploaded["upload_id"], "imp", since=START)

    assert (True, first["external"]) == (again.json["deduplicated"], again.json["external"])
    assert not blobs.is_discardable(first["external"])


@pytest.mark.parametrize(("request_body", "status", "code"), [
    pytest.param({"size": 0, "content_type": "text/csv"}, 400, "invalid_size", id="empty"),
    pytest.param({"size": MAX_BODY + 1, "content_type": "text/csv"}, 413, "payload_too_large", id="too-large"),
    pytest.param({"size": 10, "content_type": "image/png"}, 415, "unsupported_content_type", id="content-type"),
    pytest.param({"size": 10}, 400, "invalid_request", id="missing-field"),
    pytest.param({"size": "10", "content_type": "text/csv"}, 400, "invalid_request", id="size-as-text"),
    pytest.param({"size": 10, "content_type": "text/csv", "acl": "public-read"}, 400, "invalid_request",
                 id="unknown-field"),
])
def test_step_1_refuses_bad_sizes_and_types(api: Api, request_body: dict[str, Any], status: int, code: str) -> None:
    log_id = api.create()
    assert_error(api.call("POST", f"/sheets/{log_id}/uploads", request_body), status, code)


def test_completing_refuses_what_cannot_become_the_entry(api: Api) -> None:
    """A completion the document allows whose upload cannot become the entry is 422 (another type than ``type``
    needs, JSON that is not a range, a ref that is no cell, a file that does not parse), never 400: 400 is for a
    request the document refuses (README, "The contract"; found by the fuzzer once it PUT uploads)."""
    log_id = api.create()
    never_put = api.call("POST", f"/sheets/{log_id}/uploads", {"size": 3, "content_type": "text/csv"}).json
    json_upload = upload(api, log_id, b'{"ref": "A1", "values": [[1]]}', "application/json")
    not_utf8 = upload(api, log_id, b"\xff\xfe,\x00\n", "text/csv")
    not_a_range = upload(api, log_id, b'{"ref": "A1", "rows": [[1]]}', "application/json")
    bad_ref = upload(api, log_id, b'{"ref": "A0", "values": [[1]]}', "application/json")

    assert_error(complete(api, log_id, never_put["upload_id"], "imp"), 404, "upload_not_found")
    assert_error(complete(api, log_id, str(uuid.uuid4()), "setrng"), 404, "upload_not_found")
    assert_error(complete(api, log_id, "nope", "imp"), 400, "invalid_upload_id")
    assert_error(complete(api, log_id, json_upload["upload_id"], "imp"), 422, "content_type_mismatch")
    assert_error(complete(api, log_id, json_upload["upload_id"], "set"), 400, "invalid_request")
    assert_error(complete(api, log_id, not_utf8["upload_id"], "imp"), 422, "invalid_import")
    assert_error(complete(api, log_id, not_utf8["upload_id"], "imp", since=OMIT), 400, "missing_since")
    assert_error(complete(api, log_id, not_a_range["upload_id"], "setrng"), 422, "invalid_upload")
    assert_error(complete(api, log_id, bad_ref["upload_id"], "setrng"), 422, "invalid_upload")
    assert {"segment": 0, "num": 0} == api.call("GET", f"/sheets/{log_id}").json["position"]


def test_completing_another_upload_under_a_landed_entry_id_is_422_and_leaves_the_entry(api: Api) -> None:
    log_id = api.create()
    entry_id = str(uuid.uuid4())
    first = upload(api, log_id, b"a,b\n1,2\n", "text/csv")
    other = upload(api, log_id, b"a,b\n3,4\n", "text/csv")
    landed = complete(api, log_id, first["upload_id"], "imp", entry_id=entry_id)
    assert 200 == landed.status, landed.json

    reused = complete(api, log_id, other["upload_id"], "imp", entry_id=entry_id)

    assert_error(reused, 422, "entry_id_reused")
    assert landed.json["position"] == reused.error["position"]
    assert [["a", "b"], [1, 2]] == api.call("GET", f"/sheets/{log_id}").json["rows"]
