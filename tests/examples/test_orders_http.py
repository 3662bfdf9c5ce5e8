"""examples/orders-http, an ordinary SAM app (plain boto3 handlers, a SAM policy template per function, an HTTP
API with a path parameter), runs through the emulator on the real local stack with IAM enforced (issue 36): the
template's table is provisioned under the stack's name, each function is built from its plain CodeUri folder, and
what a client sees is what the handlers answer: an order stored, read back, a missing one 404, a bad body 400.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from examples.support import call, client, running
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def orders(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("orders-http", stacks, tmp_path_factory.mktemp("orders-state")) as supervisor:
        yield supervisor


def test_an_order_put_is_read_back_and_a_missing_one_is_404(orders: Supervisor) -> None:
    order = f"o-{uuid.uuid4().hex[:8]}"
    assert (201, {"id": order, "item": "tea"}) == call("PUT", f"{orders.api_url}/orders/{order}", {"item": "tea"})
    assert (200, {"id": order, "item": "tea"}) == call("GET", f"{orders.api_url}/orders/{order}")
    assert (404, {"message": "no order o-none"}) == call("GET", f"{orders.api_url}/orders/o-none")
    status, answer = call("PUT", f"{orders.api_url}/orders/{order}", {"item": 7})
    assert (400, "send {\"item\": \"<what was ordered>\"}") == (status, answer["message"])


def test_the_table_holds_what_the_api_stored(orders: Supervisor) -> None:
    order = f"o-{uuid.uuid4().hex[:8]}"
    call("PUT", f"{orders.api_url}/orders/{order}", {"item": "cake"})
    table = orders.settings.deployment.names["OrdersTable"]
    assert table.startswith(orders.settings.stack)
    assert {"id": {"S": order}, "item": {"S": "cake"}} == client(orders, "dynamodb").get_item(
        TableName=table, Key={"id": {"S": order}})["Item"]
