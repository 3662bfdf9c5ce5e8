"""Putting orders on an event bus, two rules' targets (one for every order, one for the large ones only) and a
scheduled digest."""

import base64
import json
import os

import boto3
from botocore.exceptions import ClientError

events = boto3.client("events")
table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def place(event, context):
    order_id = event["pathParameters"]["id"]
    qty = int(json.loads(_body(event)).get("qty", 1))
    # ?bus=default tries the default bus, which this function's policy does not name: refused.
    bus = (event.get("queryStringParameters") or {}).get("bus") or os.environ["BUS_NAME"]
    try:
        answer = events.put_events(Entries=[{"Source": "orders", "DetailType": "OrderPlaced", "EventBusName": bus,
                                             "Detail": json.dumps({"id": order_id, "qty": qty})}])
    except ClientError as error:
        return {"statusCode": 403, "body": json.dumps({"error": error.response["Error"]["Code"]})}
    return {"statusCode": 202, "body": json.dumps({"id": order_id, "event": answer["Entries"][0]["EventId"]})}


def record(event, context):
    # The whole EventBridge event: version, id, detail-type, source, account, time, region, resources, detail.
    table.put_item(Item={"id": f"every#{event['detail']['id']}", "event": event["id"],
                         "type": event["detail-type"], "source": event["source"], "qty": event["detail"]["qty"]})


def large(event, context):
    # InputPath $.detail: the event's detail only.
    table.put_item(Item={"id": f"large#{event['id']}", "qty": event["qty"]})


def digest(event, context):
    # The schedule's Input, <aws.scheduler.scheduled-time> replaced by the time it was due.
    table.update_item(Key={"id": event["kind"]}, UpdateExpression="SET latest = :at ADD runs :one",
                      ExpressionAttributeValues={":at": event["at"], ":one": 1})


def _body(event):
    """The request's body as text: an HTTP API hands a body whose content type is not text (curl -d sends
    application/x-www-form-urlencoded) base64-encoded, with isBase64Encoded true."""
    raw = event.get("body") or "{}"
    return base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw
