"""HTTP API route selection as API Gateway does it (Developer Guide, http-api-develop-routes, "Routing API
requests"): a full match of route and method, then a greedy path variable, then ``$default`` wherever it is listed;
404 when nothing matches. The example routes are the guide's; the rest follow the rule it states."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from seglog_awsmodel.events.api_gateway import match_route


@dataclass(frozen=True)
class R:
    Method: str
    Path: str


GUIDE = [R("ANY", "$default"), R("GET", "/pets/dog/{id}"), R("GET", "/pets/dog/1"), R("GET", "/pets/{proxy+}"),
         R("ANY", "/pets/{proxy+}")]


@pytest.mark.parametrize(("method", "path", "key", "params"), [
    ("GET", "/pets/dog/1", "GET /pets/dog/1", {}),  # a static route matches fully
    ("GET", "/pets/dog/2", "GET /pets/dog/{id}", {"id": "2"}),  # a path variable matches fully
    ("GET", "/pets/cat/1", "GET /pets/{proxy+}", {"proxy": "cat/1"}),  # no full match: the greedy GET route
    ("POST", "/pets/dog/1", "ANY /pets/{proxy+}", {"proxy": "dog/1"}),  # ANY takes what has no route of its own
    ("GET", "/owners/1", "$default", {}),  # nothing else: $default, listed first or not
])
def test_the_guides_examples(method: str, path: str, key: str, params: dict[str, str]) -> None:
    for routes in (GUIDE, GUIDE[1:] + GUIDE[:1]):
        matched = match_route(routes, method, path)
        assert matched is not None
        assert (key, params) == matched[1:]


def test_a_route_of_the_method_beats_any_and_a_literal_beats_a_variable() -> None:
    routes = [R("ANY", "/orders/{id}"), R("GET", "/orders/{id}"), R("ANY", "/orders/new")]
    assert "GET /orders/{id}" == _key(routes, "GET", "/orders/7")
    assert "ANY /orders/{id}" == _key(routes, "DELETE", "/orders/7")
    assert "ANY /orders/new" == _key(routes, "GET", "/orders/new")


def test_the_longest_greedy_prefix_wins() -> None:
    routes = [R("ANY", "/{proxy+}"), R("ANY", "/files/{path+}")]
    assert "ANY /files/{path+}" == _key(routes, "GET", "/files/a/b.txt")
    assert "ANY /{proxy+}" == _key(routes, "GET", "/other/a")


def test_no_match_is_none_and_a_greedy_variable_needs_a_segment() -> None:
    routes = [R("GET", "/pets/{proxy+}"), R("GET", "/pets/{id}/toys")]
    assert match_route(routes, "GET", "/pets") is None
    assert match_route(routes, "POST", "/pets/1") is None
    assert "GET /pets/{id}/toys" == _key(routes, "GET", "/pets/1/toys")


def test_path_parameters_come_decoded() -> None:
    matched = match_route([R("GET", "/orders/{id}")], "GET", "/orders/a%20b")
    assert matched is not None and {"id": "a b"} == matched[2]


def _key(routes: list[R], method: str, path: str) -> str:
    matched = match_route(routes, method, path)
    assert matched is not None, (method, path)
    return matched[1]
