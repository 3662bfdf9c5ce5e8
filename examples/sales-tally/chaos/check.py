"""The chaos check: once the app is quiet, each product's units are the sum of its sales, counted once."""

from sales import sales


def check(app):
    expected = {}
    for sale in sales(app.seed):
        expected[sale["sku"]] = expected.get(sale["sku"], 0) + sale["qty"]
    items = app.client("dynamodb").scan(TableName=app.resource("TotalsTable"), ConsistentRead=True)["Items"]
    found = {item["sku"]["S"]: int(item["units"]["N"]) for item in items}
    return [f"{sku}: {found.get(sku, 0)} units tallied, {units} sold" for sku, units in sorted(expected.items())
            if found.get(sku, 0) != units]
