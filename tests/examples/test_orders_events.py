"""examples/orders-events runs through the emulator on the real local stack with IAM enforced: a function puts an
event on a custom bus (events:PutEvents allowed by its policy template, for that bus only), each rule whose pattern
matches invokes its function with the EventBridge event (or with the part its InputPath selects), a rule whose
pattern does not match leaves its function alone, and the default bus, which the policy does not name, is refused."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from examples.support import call, client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def orders(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("orders-events", stacks, tmp_path_factory.mktemp("events-state")) as supervisor:
        yield supervisor


def test_each_rule_whose_pattern_matches_invokes_its_function(orders: Supervisor) -> None:
    ddb = client(orders, "dynamodb")
    table = orders.settings.deployment.names["NoticesTable"]
    small, large = f"s-{uuid.uuid4().hex[:6]}", f"l-{uuid.uuid4().hex[:6]}"
    status, placed = call("POST", f"{orders.api_url}/orders/{small}", {"qty": 2})
    assert (202, small) == (status, placed["id"]), placed
    assert 202 == call("POST", f"{orders.api_url}/orders/{large}", {"qty": 12})[0]

    def notice(key: str) -> dict[str, object] | None:
        return ddb.get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True).get("Item")

    every = wait_for(lambda: notice(f"every#{small}"), 30, "the small order's notice")
    assert ({"S": placed["event"]}, {"S": "OrderPlaced"}, {"S": "orders"}, {"N": "2"}) == (
        every["event"], every["type"], every["source"], every["qty"]), every
    assert {"N": "12"} == wait_for(lambda: notice(f"large#{large}"), 30, "the large order's notice")["qty"]
    wait_for(lambda: notice(f"every#{large}"), 30, "the large order's every notice")
    # The large order's notices are in, and it was put after the small one: the numeric pattern kept the small one
    # from LargeOrderFunction.
    assert notice(f"large#{small}") is None


def test_a_bus_the_functions_policy_does_not_name_is_refused(orders: Supervisor) -> None:
    assert (403, {"error": "AccessDeniedException"}) == call(
        "POST", f"{orders.api_url}/orders/o-x?bus=default", {"qty": 1})


def test_the_schedule_runs_its_function_with_the_scheduled_time_in_its_input(orders: Supervisor) -> None:
    ddb = client(orders, "dynamodb")
    table = orders.settings.deployment.names["NoticesTable"]

    def digest() -> dict[str, Any] | None:
        return ddb.get_item(TableName=table, Key={"id": {"S": "digest"}}, ConsistentRead=True).get("Item")

    first = wait_for(digest, 30, "the first digest")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["latest"]["S"]), first
    later = wait_for(lambda: (item := digest()) and int(item["runs"]["N"]) > int(first["runs"]["N"]) and item, 30,
                     "the next digest")
    assert later["latest"]["S"] > first["latest"]["S"]  # an hour later on the schedule's clock
