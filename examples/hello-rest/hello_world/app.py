"""Handlers of a REST API's Lambda proxy integration (payload format 1.0)."""

import json


def lambda_handler(event, context):
    name = (event.get("pathParameters") or {}).get("name", "world")
    return {"statusCode": 200, "body": json.dumps({"message": f"hello {name}"})}


def echo(event, context):
    seen = {key: event[key] for key in ("resource", "path", "httpMethod", "pathParameters",
                                        "queryStringParameters", "body")}
    seen["stage"] = event["requestContext"]["stage"]
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(seen)}
