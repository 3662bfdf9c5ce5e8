"""The API answers as its OpenAPI document says, for what the fuzzer (tests/client/test_api_fuzz.py) reaches only by
chance: a create repeated under the client's ``log_id`` (200, declared with its ``created`` field), and a JSON body
under another Content-Type than the one the document declares (415, naming the type to send). Through the
handler on payload 2.0 events, against the local stack (both profiles), as tests/test_api.py calls it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from seglog_awsmodel.events import http_api_event
from seglog_services import runtime
from seglog_services.api import handler, openapi
from seglog_stack.local import LocalDeployment
from test_api import START, Api, Context, Reply, assert_error, use_deployment

pytestmark = pytest.mark.stack


@pytest.fixture
def api(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    use_deployment(deployment, monkeypatch)
    yield Api()
    runtime.backend.cache_clear()


def declared(path: str, method: str, status: int, answer: Any) -> None:
    """``answer`` is what the document declares for ``status`` of ``method path`` (the status is declared, and
    the body validates against its schema)."""
    document = openapi.document()
    responses = document["paths"][path][method]["responses"]
    assert str(status) in responses, f"{method.upper()} {path} answers {status}, which the document does not declare"
    schema = {**responses[str(status)]["content"]["application/json"]["schema"], "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(answer)


def test_a_repeated_create_under_the_clients_log_id_answers_as_declared(api: Api) -> None:
    """A create whose answer was lost is sent again with the same ``log_id``: 201 ``created: true`` the first time,
    200 ``created: false`` after; both statuses, and the field, are in the document."""
    log_id = str(uuid.uuid4())

    first = api.call("POST", "/sheets", {"log_id": log_id})
    again = api.call("POST", "/sheets", {"log_id": log_id})

    assert (201, True, 200, False) == (first.status, first.json["created"], again.status, again.json["created"])
    assert (log_id, START) == (again.json["log_id"], again.json["position"])
    declared("/sheets", "post", 201, first.json)
    declared("/sheets", "post", 200, again.json)
    properties = openapi.document()["components"]["schemas"]["SheetCreated"]["properties"]
    assert {"type": "boolean"} == {k: v for k, v in properties["created"].items() if k == "type"}


def call(method: str, path: str, body: bytes, content_type: str | None) -> Reply:
    """The handler's answer to ``body`` sent under ``content_type`` (no Content-Type header when None)."""
    headers = {} if content_type is None else {"content-type": content_type}
    response = handler(http_api_event(method, path, headers=headers, body=body), Context())
    return Reply(response["statusCode"], dict(response.get("headers") or {}), json.loads(response["body"]))


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "application/x-www-form-urlencoded", "application/merge-patch+json",
    "application/vnd.api+json", "application/jsonx", "multipart/form-data; boundary=x",
])
def test_a_json_body_under_another_content_type_is_refused_415_naming_the_type_to_send(
        api: Api, content_type: str | None) -> None:
    """The document declares application/json for every request body; a JSON body sent under anything else, a
    structured +json type included, is refused (415 unsupported_media_type) and nothing is written."""
    log_id = api.create()
    append = json.dumps({"entry": {"type": "set", "ref": "A1", "value": 1}, "entry_id": str(uuid.uuid4()),
                         "since": START}).encode()

    refused = [call("POST", f"/sheets/{log_id}/entries", append, content_type),
               call("POST", "/sheets", json.dumps({"log_id": str(uuid.uuid4())}).encode(), content_type)]

    for reply in refused:
        assert_error(reply, 415, "unsupported_media_type")
        assert "Content-Type: application/json" in reply.error["message"]
    assert START == api.call("GET", f"/sheets/{log_id}").json["position"]
    paths = openapi.document()["paths"]
    assert all("415" in paths[path]["post"]["responses"] for path in ("/sheets", "/sheets/{log_id}/entries"))


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON", "application/json; charset=utf-8",
                                          " application/json ;charset=UTF-8"])
def test_application_json_in_any_case_and_with_parameters_is_taken(api: Api, content_type: str) -> None:
    log_id = api.create()
    append = json.dumps({"entry": {"type": "set", "ref": "A1", "value": 1}, "entry_id": str(uuid.uuid4()),
                         "since": START}).encode()

    reply = call("POST", f"/sheets/{log_id}/entries", append, content_type)

    assert (200, {"segment": 0, "num": 1}) == (reply.status, reply.json["position"])


def test_a_bodyless_create_needs_no_content_type(api: Api) -> None:
    reply = call("POST", "/sheets", b"", None)
    assert (201, True) == (reply.status, reply.json["created"])
