"""Counts the beats of a schedule: one atomic counter in a table, and the time of the latest beat."""

import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    # With Input set, the rule sends that JSON instead of the scheduled event (sam-property-function-schedule).
    answer = table.update_item(Key={"id": event.get("source", "unknown")},
                               UpdateExpression="ADD beats :one SET latest = :at",
                               ExpressionAttributeValues={":one": 1, ":at": context.aws_request_id},
                               ReturnValues="UPDATED_NEW")
    return {"beats": int(answer["Attributes"]["beats"])}
