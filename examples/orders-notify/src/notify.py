"""Publishing orders to a topic, and two subscribers: one for every order, one for the large ones only."""

import base64
import json
import os

import boto3

sns = boto3.client("sns")
table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def publish(event, context):
    order_id = event["pathParameters"]["id"]
    qty = int(json.loads(_body(event)).get("qty", 1))
    size = "large" if qty >= 10 else "small"
    sns.publish(TopicArn=os.environ["TOPIC_ARN"], Subject="order", Message=json.dumps({"id": order_id, "qty": qty}),
                MessageAttributes={"size": {"DataType": "String", "StringValue": size}})
    return {"statusCode": 202, "body": json.dumps({"id": order_id, "size": size})}


def record(event, context):
    _note(event, "every")


def large(event, context):
    _note(event, "large")


def _note(event, kind):
    for record in event["Records"]:
        notice = record["Sns"]
        order = json.loads(notice["Message"])
        table.put_item(Item={"id": f"{kind}#{order['id']}", "subject": notice["Subject"],
                             "size": notice["MessageAttributes"]["size"]["Value"]})


def _body(event):
    """The request's body as text: an HTTP API hands a body whose content type is not text (curl -d sends
    application/x-www-form-urlencoded) base64-encoded, with isBase64Encoded true."""
    raw = event.get("body") or "{}"
    return base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw
