"""examples/hello-rest runs through the emulator on the real local stack (issue 36, point 3): SAM's implicit REST
API answers each route by its function with payload format 1.0 (resource, path parameters, the greedy {proxy+},
query parameters, the Prod stage), with or without the stage in the path, a function of InlineCode, and 403
"Missing Authentication Token" for a path no resource matches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from examples.support import call, running
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def hello(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("hello-rest", stacks, tmp_path_factory.mktemp("hello-state")) as supervisor:
        yield supervisor


def test_each_route_is_answered_by_its_function(hello: Supervisor) -> None:
    url = hello.api_url
    assert (200, {"message": "hello world"}) == call("GET", f"{url}/hello")
    assert (200, {"message": "hello ann"}) == call("GET", f"{url}/hello/ann")
    assert (200, {"message": "hello bob"}) == call("GET", f"{url}/Prod/hello/bob")
    status, echoed = call("POST", f"{url}/a/b?x=1&x=2", b"hi")
    assert 200 == status
    assert {"resource": "/{proxy+}", "path": "/a/b", "httpMethod": "POST", "pathParameters": {"proxy": "a/b"},
            "queryStringParameters": {"x": "2"}, "body": "hi", "stage": "Prod"} == echoed


def test_a_function_of_inline_code_runs_from_its_index_file(hello: Supervisor) -> None:
    assert (200, {"pong": "PingFunction"}) == call("GET", f"{hello.api_url}/ping")


def test_a_path_no_resource_matches_is_a_403_missing_authentication_token(hello: Supervisor) -> None:
    # ANY /{proxy+} matches every path below the root; the root itself has no resource.
    assert (403, {"message": "Missing Authentication Token"}) == call("GET", f"{hello.api_url}/")
