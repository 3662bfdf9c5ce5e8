"""PUT and GET /orders/{id}: an HTTP API (payload format 2.0) over one DynamoDB table."""

import base64
import json
import logging
import os

import boto3

logger = logging.getLogger()
logger.setLevel(logging.INFO)
table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def put_order(event, context):
    order_id = event["pathParameters"]["id"]
    raw = event.get("body") or "{}"
    if event.get("isBase64Encoded"):  # API Gateway encodes a body whose content type is not text
        raw = base64.b64decode(raw)
    try:
        body = json.loads(raw)
    except ValueError:
        return _answer(400, {"message": "the body must be a JSON object, for example {\"item\": \"tea\"}"})
    if not isinstance(body, dict) or not isinstance(body.get("item"), str):
        return _answer(400, {"message": "send {\"item\": \"<what was ordered>\"}"})
    table.put_item(Item={"id": order_id, "item": body["item"]})
    logger.info("order %s stored", order_id)
    return _answer(201, {"id": order_id, "item": body["item"]})


def get_order(event, context):
    order_id = event["pathParameters"]["id"]
    found = table.get_item(Key={"id": order_id}).get("Item")
    if found is None:
        return _answer(404, {"message": f"no order {order_id}"})
    return _answer(200, found)


def _answer(status, body):
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}
