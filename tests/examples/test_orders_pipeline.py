"""examples/orders-pipeline runs through the emulator on the real local stack with IAM enforced (issue 36): a new
order in the table reaches the stream function (its filter passes INSERTs only), the queue and the shipping
worker; an order the worker reports in batchItemFailures is delivered again and, after the queue's
maxReceiveCount of 2, lands in the dead-letter queue, while the good orders of the same batches ship once each.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from examples.support import client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def pipeline(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("orders-pipeline", stacks, tmp_path_factory.mktemp("pipeline-state")) as supervisor:
        yield supervisor


def test_good_orders_ship_once_and_the_bad_one_reaches_the_dead_letter_queue(pipeline: Supervisor) -> None:
    names = pipeline.settings.deployment.names
    ddb, sqs = client(pipeline, "dynamodb"), client(pipeline, "sqs")
    run = uuid.uuid4().hex[:6]
    good = [f"{run}-{n}" for n in range(6)]
    bad = f"{run}-bad"
    for order in [*good[:3], bad, *good[3:]]:
        ddb.put_item(TableName=names["OrdersTable"], Item={"id": {"S": order}, "item": {"S": "" if order == bad
                                                                                          else f"item {order}"}})
    ddb.update_item(TableName=names["OrdersTable"], Key={"id": {"S": good[0]}},  # a MODIFY: filtered out
                    UpdateExpression="SET #i = :i", ExpressionAttributeNames={"#i": "item"},
                    ExpressionAttributeValues={":i": {"S": "changed"}})

    def shipped() -> dict[str, str] | None:
        items = ddb.scan(TableName=names["ShipmentsTable"], ConsistentRead=True)["Items"]
        found = {i["id"]["S"]: i["item"]["S"] for i in items if i["id"]["S"].startswith(run)}
        return found if len(found) == len(good) else None

    assert {order: f"item {order}" for order in good} == wait_for(shipped, 60, "the good orders shipped")
    dlq = names["ShippingDeadLetterQueue"]  # a queue's name is its URL, as Ref gives it

    def dead() -> list[dict[str, object]]:
        answer = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                     AttributeNames=["ApproximateReceiveCount"])
        return answer.get("Messages", [])

    [message] = wait_for(dead, 60, "the bad order in the dead-letter queue")
    assert {"id": bad, "item": ""} == json.loads(str(message["Body"]))
    # Received twice by the worker's mapping (maxReceiveCount 2; the count moves with the message), and once here.
    assert "3" == message["Attributes"]["ApproximateReceiveCount"]  # type: ignore[index]
