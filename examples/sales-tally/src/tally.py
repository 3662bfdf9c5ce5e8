"""Tally sales per product from SQS: ``{"sale": "s-1", "sku": "tea", "qty": 3}`` adds 3 to tea's units.

SQS delivers at least once: a batch comes again when a try fails (the whole batch: this function reports no partial
failures), when its visibility timeout runs out mid-try, or just because. With ``DEDUPE=true`` a sale is counted in
one transaction with a record of it, written only if absent; a sale already recorded is skipped. With
``DEDUPE=false`` the units are simply added: every extra delivery counts again (deliberately not idempotent).
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TOTALS, COUNTED = os.environ["TOTALS_TABLE"], os.environ["COUNTED_TABLE"]


def handler(event, context):
    for record in event["Records"]:
        sale = json.loads(record["body"])
        if os.environ.get("DEDUPE", "true") == "true":
            count_once(sale)
        else:
            count(sale)


def _add(sale):
    return {"TableName": TOTALS, "Key": {"sku": {"S": sale["sku"]}}, "UpdateExpression": "ADD units :q",
            "ExpressionAttributeValues": {":q": {"N": str(sale["qty"])}}}


def count(sale):
    ddb.update_item(**_add(sale))


def count_once(sale):
    record = {"TableName": COUNTED, "ConditionExpression": "attribute_not_exists(sale)",
              "Item": {"sale": {"S": sale["sale"]}, "sku": {"S": sale["sku"]}, "qty": {"N": str(sale["qty"])}}}
    try:
        ddb.transact_write_items(TransactItems=[{"Put": record}, {"Update": _add(sale)}])
    except ddb.exceptions.TransactionCanceledException as exc:
        reasons = exc.response.get("CancellationReasons") or [{}]
        if reasons[0].get("Code") == "ConditionalCheckFailed":
            return  # counted by an earlier delivery
        raise
