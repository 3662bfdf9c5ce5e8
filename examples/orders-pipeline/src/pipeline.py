"""A stream handler sending each new order to a queue, and a queue handler shipping them (partial batch failures)."""

import json
import logging
import os

import boto3

logger = logging.getLogger()
logger.setLevel(logging.INFO)
sqs = boto3.client("sqs")
shipments = boto3.resource("dynamodb").Table(os.environ.get("SHIPMENTS_TABLE", "unset"))


def new_orders(event, context):
    """DynamoDB stream records (INSERTs only, by the mapping's filter): one message per new order."""
    for record in event["Records"]:
        image = record["dynamodb"]["NewImage"]
        order = {"id": image["id"]["S"], "item": image.get("item", {}).get("S", "")}
        sqs.send_message(QueueUrl=os.environ["QUEUE_URL"], MessageBody=json.dumps(order))
        logger.info("order %s queued", order["id"])


def ship(event, context):
    """SQS messages: ship each order; an order of nothing cannot be shipped and is reported as failed, so SQS
    delivers it again and, after the queue's maxReceiveCount, moves it to the dead-letter queue."""
    failures = []
    for record in event["Records"]:
        order = json.loads(record["body"])
        if not order["item"]:
            logger.warning("order %s has no item: not shipped", order["id"])
            failures.append({"itemIdentifier": record["messageId"]})
            continue
        shipments.put_item(Item={"id": order["id"], "item": order["item"]})
    return {"batchItemFailures": failures}
