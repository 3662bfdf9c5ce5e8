"""An HTTP API function that calls two others with lambda.invoke: one answering (RequestResponse), one not (Event)."""

import json
import os

import boto3

PRICES = {"tea": 250, "cake": 400}
lambdas = boto3.client("lambda")


def api(event, context):
    item = event["pathParameters"]["item"]
    if event["requestContext"]["http"]["method"] == "POST":
        lambdas.invoke(FunctionName=os.environ["AUDIT_FUNCTION"], InvocationType="Event",
                       Payload=json.dumps({"item": item}))
        return {"statusCode": 202, "body": json.dumps({"audit": item})}
    qty = int((event.get("queryStringParameters") or {}).get("qty", "1"))
    answer = lambdas.invoke(FunctionName=os.environ["PRICE_FUNCTION"], Payload=json.dumps({"item": item, "qty": qty}))
    payload = json.loads(answer["Payload"].read())
    if answer.get("FunctionError"):
        return {"statusCode": 404, "body": json.dumps({"message": payload["errorMessage"]})}
    return {"statusCode": 200, "body": json.dumps(payload)}


def price(event, context):
    if event["item"] not in PRICES:
        raise KeyError(f"no price for {event['item']}")
    return {"item": event["item"], "qty": event["qty"], "total_cents": PRICES[event["item"]] * event["qty"]}


def audit(event, context):
    if event["item"] == "boom":
        raise RuntimeError("the audit of boom always fails")
    boto3.resource("dynamodb").Table(os.environ["AUDIT_TABLE"]).put_item(Item={"item": event["item"]})
