"""The emulator's gateway answers what no route declares as an HTTP API does (issue 23): the template routes GET
and POST ``/{proxy+}`` to the function, and any other method, known to HTTP or not, matches no route and gets
API Gateway's own 404 ``{"message":"Not Found"}`` as JSON (API Gateway Developer Guide, "Create routes for
HTTP APIs": only a ``$default`` route would catch it) — not the local HTTP server's 501 HTML page."""

from __future__ import annotations

import json

import pytest

from client.conftest import Emulated
from signed_http import signed

pytestmark = pytest.mark.stack


@pytest.mark.parametrize("method", ["TRACE", "PUT", "DELETE", "PATCH", "CONNECT", "QUERY", "FROBNICATE"])
def test_a_method_no_route_declares_is_answered_404_json(emulator: Emulated, method: str) -> None:
    reply = signed(method, f"{emulator.url}/sheets")
    assert reply.status == 404
    assert reply.headers.get("content-type", "").startswith("application/json")
    assert json.loads(reply.body) == {"message": "Not Found"}


def test_a_routed_method_on_an_unknown_path_reaches_the_function_and_names_the_routes(emulator: Emulated) -> None:
    reply = signed("GET", f"{emulator.url}/no/such/path")
    assert reply.status == 404
    assert json.loads(reply.body)["error"]["code"] == "route_not_found"


def _append(entry: str) -> bytes:
    return ('{"entry_id": "0b0e6a5c-5b56-4a4f-9d2e-6a3f0c1d2e3f", "since": {"segment": 0, "num": 0}, "entry": '
            + entry + "}").encode()


#: Requests an outside client could send by mistake or on purpose (issue 23's hand-made list): each is refused
#: with a JSON error that names what to fix, never a 5xx.
NASTY = {
    "truncated-json": b'{"entry": {"type": "set", "ref": "A1"',
    "deep-json": b"[" * 10_000 + b"]" * 10_000,
    "deep-value": _append('{"type": "set", "ref": "A1", "value": ' + "[" * 10_000 + "]" * 10_000 + "}"),
    "nan": _append('{"type": "set", "ref": "A1", "value": NaN}'),
    "infinity": _append('{"type": "set", "ref": "A1", "value": Infinity}'),
    "1e999": _append('{"type": "set", "ref": "A1", "value": 1e999}'),
    "huge-int": _append('{"type": "set", "ref": "A1", "value": ' + "9" * 5000 + "}"),
    "lone-surrogate": _append('{"type": "set", "ref": "A1", "value": "\\ud800"}'),
    "lone-surrogate-in-ref": _append('{"type": "set", "ref": "A\\udfff1", "value": 1}'),
    "nul-in-ref": _append('{"type": "set", "ref": "A1\\u0000", "value": 1}'),
    "huge-ref": _append('{"type": "set", "ref": "' + "A" * 10_000 + '1", "value": 1}'),
    "unknown-type": _append('{"type": "drop_table", "ref": "A1"}'),
    "segment-2-64": b'{"entry_id": "0b0e6a5c-5b56-4a4f-9d2e-6a3f0c1d2e3f", "since": {"segment": 18446744073709551616, '
                    b'"num": 0}, "entry": {"type": "set", "ref": "A1", "value": 1}}',
    "not-utf8": b'{"entry": "\xff\xfe"}',
    "seven-mb": _append('{"type": "set", "ref": "A1", "value": "' + "x" * (7 * 1024 * 1024) + '"}'),
}


@pytest.mark.parametrize("body", NASTY.values(), ids=NASTY.keys())
def test_a_malformed_append_is_refused_with_a_json_error_never_a_5xx(emulator: Emulated, body: bytes) -> None:
    log_id = emulator.client().create().log_id
    reply = signed("POST", f"{emulator.url}/sheets/{log_id}/entries", body, {"content-type": "application/json"})
    assert 400 <= reply.status < 500, (reply.status, reply.body[:300])
    answer = json.loads(reply.body)
    assert answer.get("error", {}).get("message") or answer.get("message"), answer
    assert emulator.entry_ids(log_id) == [None]  # nothing written: the log holds its Snapshot entry 0 only

