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
