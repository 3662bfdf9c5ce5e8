"""examples/orders-notify runs through the emulator on the real local stack with IAM enforced (issue 36, point 3):
a function publishes to a topic (sns:Publish allowed by its policy template), every subscriber function gets
Lambda's SNS event (Records[].Sns with the subject, the message and its attributes), and a subscription's filter
policy passes only the messages it names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from examples.support import call, client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def notify(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("orders-notify", stacks, tmp_path_factory.mktemp("notify-state")) as supervisor:
        yield supervisor


def test_every_order_reaches_every_subscriber_its_filter_passes(notify: Supervisor) -> None:
    ddb = client(notify, "dynamodb")
    table = notify.settings.deployment.names["NoticesTable"]
    small, large = f"s-{uuid.uuid4().hex[:6]}", f"l-{uuid.uuid4().hex[:6]}"
    assert (202, {"id": small, "size": "small"}) == call("POST", f"{notify.api_url}/orders/{small}", {"qty": 2})
    assert (202, {"id": large, "size": "large"}) == call("POST", f"{notify.api_url}/orders/{large}", {"qty": 12})

    def notice(key: str) -> dict[str, object] | None:
        return ddb.get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True).get("Item")

    for key, size in ((f"every#{small}", "small"), (f"every#{large}", "large"), (f"large#{large}", "large")):
        item = wait_for(lambda key=key: notice(key), 30, f"the notice {key}")
        assert ({"S": "order"}, {"S": size}) == (item["subject"], item["size"]), item
    # The small order's notices are all in (the large one's came after it): the filter kept it from LargeOrder.
    assert notice(f"large#{small}") is None
