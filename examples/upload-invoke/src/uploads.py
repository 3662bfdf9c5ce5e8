"""An S3 event handler that reads each new object and asks another function to count its words."""

import json
import os
from urllib.parse import unquote_plus

import boto3

s3 = boto3.client("s3")
lambdas = boto3.client("lambda")
counts = boto3.resource("dynamodb").Table(os.environ.get("COUNTS_TABLE", "unset"))


def on_upload(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = unquote_plus(record["s3"]["object"]["key"])  # S3 events carry the key URL-encoded
        text = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8", errors="replace")
        answer = lambdas.invoke(FunctionName=os.environ["COUNT_FUNCTION"], Payload=json.dumps({"text": text}))
        words = json.loads(answer["Payload"].read())["words"]
        counts.put_item(Item={"key": key, "words": words, "event": record["eventName"]})


def count_words(event, context):
    return {"words": len(event["text"].split())}
