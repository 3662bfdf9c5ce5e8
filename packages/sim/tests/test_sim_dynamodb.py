"""The simulated DynamoDB answers as DynamoDB does: items, errors, conditional writes, queries and paging,
transactions, batch writes, stale reads at ``as_of``. Each test names the API Reference page it follows.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError
from sim_ddb_support import Clock, entry, error_of, n, world

from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient

G = b"\x01" * 24
H = b"\x02" * 24


@pytest.fixture
def client() -> SimDynamoDBClient:
    return world()[1]


def nums(response: dict[str, Any]) -> list[int]:
    return [int(i["N"]["N"]) for i in response["Items"]]


# ----------------------------------------------------------------------------------------------- items

def test_items_are_copied_in_and_out(client: SimDynamoDBClient) -> None:
    item = entry(G, 1, T={"S": "set"}, L={"L": [{"S": "a"}]})
    client.put_item(TableName="Entries", Item=item)
    item["T"]["S"] = "changed by the caller"
    item["L"]["L"].append({"S": "b"})
    got = client.get_item(TableName="Entries", Key=entry(G, 1), ConsistentRead=True)["Item"]
    assert (got["T"], got["L"]) == ({"S": "set"}, {"L": [{"S": "a"}]})
    got["T"]["S"] = "changed again"
    assert client.get_item(TableName="Entries", Key=entry(G, 1), ConsistentRead=True)["Item"]["T"] == {"S": "set"}


def test_numbers_are_stored_without_leading_and_trailing_zeroes(client: SimDynamoDBClient) -> None:
    # DynamoDB Developer Guide, "Supported data types" (Number): leading and trailing zeroes are trimmed.
    client.put_item(TableName="Entries", Item=entry(G, 1, C={"N": "0012.500"}, D={"N": "-0.0"}))
    got = client.get_item(TableName="Entries", Key={"G": {"B": G}, "N": {"N": "1.0"}}, ConsistentRead=True)["Item"]
    assert (got["C"], got["D"]) == ({"N": "12.5"}, {"N": "0"})


@pytest.mark.parametrize(("operation", "params", "code", "message"), [
    ("GetItem", {"TableName": "Nope", "Key": {"K": {"S": "k"}}}, "ResourceNotFoundException",
     "Requested resource not found"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": G}}}, "ValidationException",
     "Missing the key N in the item"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": G}, "N": {"S": "1"}}}, "ValidationException",
     "Type mismatch for key N expected: N actual: S"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": b""}, "N": n(1)}}, "ValidationException",
     "cannot contain an empty binary value. Key: G"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": G}, "N": {"N": "one"}}}, "ValidationException",
     "cannot be converted into a number"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": G}, "N": n(1), "X": {"SS": []}}}, "ValidationException",
     "An string set  may not be empty"),
    ("PutItem", {"TableName": "Entries", "Item": {"G": {"B": G}, "N": n(1), "X": {"B": b"x" * 400 * 1024}}},
     "ValidationException", "Item size has exceeded the maximum allowed size"),
    ("GetItem", {"TableName": "Entries", "Key": {"G": {"B": G}}}, "ValidationException",
     "The provided key element does not match the schema"),
    ("GetItem", {"TableName": "Entries", "Key": {"G": {"B": G}, "N": n(1), "T": {"S": "x"}}}, "ValidationException",
     "The provided key element does not match the schema"),
    ("PutItem", {"TableName": "Entries", "Item": entry(G, 1), "ReturnValues": "ALL_NEW"}, "ValidationException",
     "ReturnValues can only be NONE or ALL_OLD"),
])
def test_bad_requests_are_refused_with_400(client: SimDynamoDBClient, operation: str, params: dict[str, Any],
                                           code: str, message: str) -> None:
    with pytest.raises(ClientError) as caught:
        getattr(client, {"GetItem": "get_item", "PutItem": "put_item"}[operation])(**params)
    got_code, got_message, status = error_of(caught)
    assert (got_code, status) == (code, 400)
    assert message in got_message


def test_unknown_and_missing_parameters_fail_as_botocore_fails_them(client: SimDynamoDBClient) -> None:
    with pytest.raises(ParamValidationError, match="Unknown parameter in input: \"Itme\""):
        client.put_item(TableName="Entries", Itme=entry(G, 1))
    with pytest.raises(ParamValidationError, match="Missing required parameter in input: \"Key\""):
        client.get_item(TableName="Entries")


# ----------------------------------------------------------------------------------------------- writes

def test_failed_condition_returns_the_item_with_all_old_and_changes_nothing(client: SimDynamoDBClient) -> None:
    # PutItem API Reference: ConditionalCheckFailedException; ReturnValuesOnConditionCheckFailure=ALL_OLD.
    first = entry(G, 1, K={"B": b"first"})
    client.put_item(TableName="Entries", Item=first)
    second = entry(G, 1, K={"B": b"second"})
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName="Entries", Item=second, ConditionExpression="attribute_not_exists(N)",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert error_of(caught) == ("ConditionalCheckFailedException", "The conditional request failed", 400)
    assert caught.value.response["Item"] == first  # type: ignore[typeddict-item]
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName="Entries", Item=second, ConditionExpression="attribute_not_exists(N)")
    assert "Item" not in caught.value.response
    assert client.get_item(TableName="Entries", Key=entry(G, 1), ConsistentRead=True)["Item"] == first


def test_put_and_delete_return_the_old_item(client: SimDynamoDBClient) -> None:
    assert "Attributes" not in client.put_item(TableName="Entries", Item=entry(G, 1, T={"S": "a"}),
                                               ReturnValues="ALL_OLD")
    old = client.put_item(TableName="Entries", Item=entry(G, 1, T={"S": "b"}), ReturnValues="ALL_OLD")
    assert old["Attributes"] == entry(G, 1, T={"S": "a"})
    with pytest.raises(ClientError):
        client.delete_item(TableName="Entries", Key=entry(G, 1), ConditionExpression="T = :t",
                           ExpressionAttributeValues={":t": {"S": "a"}})
    gone = client.delete_item(TableName="Entries", Key=entry(G, 1), ReturnValues="ALL_OLD")
    assert gone["Attributes"] == entry(G, 1, T={"S": "b"})
    assert "Attributes" not in client.delete_item(TableName="Entries", Key=entry(G, 1), ReturnValues="ALL_OLD")


def test_update_condition_is_checked_before_the_item_is_created(client: SimDynamoDBClient) -> None:
    with pytest.raises(ClientError):
        client.update_item(TableName="Entries", Key=entry(G, 1), UpdateExpression="SET R = :r",
                           ConditionExpression="T = :t", ExpressionAttributeValues={":r": {"S": "x"}, ":t": {"S": "s"}})
    assert "Item" not in client.get_item(TableName="Entries", Key=entry(G, 1), ConsistentRead=True)


# ----------------------------------------------------------------------------------------------- queries

@pytest.fixture
def entries(client: SimDynamoDBClient) -> SimDynamoDBClient:
    for num in (0, 1, 2, 10, 11, 20):
        client.put_item(TableName="Entries", Item=entry(G, num, T={"S": "snap" if num % 10 == 0 else "set"}))
    client.put_item(TableName="Entries", Item=entry(H, 99))
    return client


def query(client: SimDynamoDBClient, condition: str = "G = :g", **params: Any) -> dict[str, Any]:
    values = {":g": {"B": G}, **params.pop("values", {})} if ":g" in condition else params.pop("values")
    return client.query(TableName="Entries", KeyConditionExpression=condition, ExpressionAttributeValues=values,
                        ConsistentRead=True, **params)


def test_query_orders_by_sort_key_numerically_both_ways(entries: SimDynamoDBClient) -> None:
    # Query API Reference: ScanIndexForward; numbers order numerically (2 before 10).
    assert nums(query(entries)) == [0, 1, 2, 10, 11, 20]
    assert nums(query(entries, ScanIndexForward=False, Limit=1)) == [20]


@pytest.mark.parametrize(("condition", "values", "expected"), [
    ("G = :g AND N >= :s", {":s": n(2)}, [2, 10, 11, 20]),
    ("G = :g AND N > :s", {":s": n(2)}, [10, 11, 20]),
    ("G = :g AND N < :s", {":s": n(10)}, [0, 1, 2]),
    ("G = :g AND N <= :s", {":s": n(10)}, [0, 1, 2, 10]),
    ("G = :g AND N = :s", {":s": n(11)}, [11]),
    ("G = :g AND N BETWEEN :s AND :e", {":s": n(1), ":e": n(11)}, [1, 2, 10, 11]),
    ("N BETWEEN :s AND :e AND G = :g", {":s": n(1), ":e": n(1)}, [1]),
    ("(G = :g) AND (N > :s)", {":s": n(11)}, [20]),
])
def test_query_key_conditions(entries: SimDynamoDBClient, condition: str, values: dict[str, Any],
                              expected: list[int]) -> None:
    assert nums(query(entries, condition, values=values)) == expected


def test_query_pages_by_last_evaluated_key_and_limit_counts_items_evaluated(entries: SimDynamoDBClient) -> None:
    seen: list[int] = []
    params: dict[str, Any] = {"Limit": 2, "ScanIndexForward": False}
    pages = 0
    while True:
        page = query(entries, **params)
        pages += 1
        seen += nums(page)
        if "LastEvaluatedKey" not in page:
            break
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    assert seen == [20, 11, 10, 2, 1, 0]
    # stopped at the limit on the last item: a LastEvaluatedKey still comes back, and the next page is empty
    assert pages == 4
    filtered = query(entries, FilterExpression="T = :t", values={":t": {"S": "snap"}}, Limit=3)
    assert (nums(filtered), filtered["Count"], filtered["ScannedCount"]) == ([0], 1, 3)


def test_query_projection_and_count(entries: SimDynamoDBClient) -> None:
    assert query(entries, ProjectionExpression="N", Limit=1)["Items"] == [{"N": n(0)}]
    counted = query(entries, Select="COUNT")
    assert ("Items" in counted, counted["Count"]) == (False, 6)


@pytest.mark.parametrize(("condition", "values", "message"), [
    ("N = :n", {":n": n(1)}, "Query condition missed key schema element: G"),
    ("G = :g AND T = :t", {":t": {"S": "x"}}, "Query key condition not supported"),
    ("G = :g OR N = :n", {":n": n(1)}, "Invalid operator used in KeyConditionExpression: OR"),
    ("G = :g AND N = :n", {":n": {"S": "1"}}, "Condition parameter type does not match schema type"),
    ("G = :g AND begins_with(N, :n)", {":n": n(1)}, "operator or function: begins_with, operand type: N"),
])
def test_invalid_key_conditions(entries: SimDynamoDBClient, condition: str, values: dict[str, Any],
                                message: str) -> None:
    with pytest.raises(ClientError) as caught:
        query(entries, condition, values=values)
    code, text, _ = error_of(caught)
    assert code == "ValidationException"
    assert message in text


def test_begins_with_on_a_binary_sort_key(client: SimDynamoDBClient) -> None:
    for p in (b"\x00\x01a", b"\x00\x01b", b"\x00\x02a", b"\x01"):
        client.put_item(TableName="Pending", Item={"L": {"B": G}, "P": {"B": p}})
    got = client.query(TableName="Pending", KeyConditionExpression="L = :l AND begins_with(P, :p)",
                       ExpressionAttributeValues={":l": {"B": G}, ":p": {"B": b"\x00\x01"}}, ScanIndexForward=False)
    assert [i["P"]["B"] for i in got["Items"]] == [b"\x00\x01b", b"\x00\x01a"]


def test_scan_pages_over_every_item_once(entries: SimDynamoDBClient) -> None:
    seen: list[tuple[bytes, int]] = []
    params: dict[str, Any] = {"TableName": "Entries", "Limit": 3, "ProjectionExpression": "G, N"}
    while True:
        page = entries.scan(**params)
        seen += [(i["G"]["B"], int(i["N"]["N"])) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            break
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    assert seen == [(G, x) for x in (0, 1, 2, 10, 11, 20)] + [(H, 99)]


# ----------------------------------------------------------------------------------------------- transactions

def test_transaction_is_all_or_nothing_with_reasons_in_item_order(entries: SimDynamoDBClient) -> None:
    # TransactWriteItems API Reference: TransactionCanceledException, CancellationReasons in request order.
    items = [{"Put": {"TableName": "Entries", "Item": entry(G, 30), "ConditionExpression": "attribute_not_exists(N)"}},
             {"Put": {"TableName": "Entries", "Item": entry(G, 20), "ConditionExpression": "attribute_not_exists(N)",
                      "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
             {"Delete": {"TableName": "Entries", "Key": entry(G, 0)}}]
    with pytest.raises(ClientError) as caught:
        entries.transact_write_items(TransactItems=items)
    code, message, _ = error_of(caught)
    assert code == "TransactionCanceledException"
    assert message.endswith("[None, ConditionalCheckFailed, None]")
    reasons = caught.value.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed", "None"]
    assert reasons[1]["Item"] == entry(G, 20, T={"S": "snap"})
    assert nums(query(entries)) == [0, 1, 2, 10, 11, 20]  # nothing written, nothing deleted
    items[1] = {"Update": {"TableName": "Entries", "Key": entry(G, 20), "UpdateExpression": "SET R = :r",
                           "ConditionExpression": "T = :t",
                           "ExpressionAttributeValues": {":r": {"S": "root"}, ":t": {"S": "snap"}}}}
    entries.transact_write_items(TransactItems=items)
    assert nums(query(entries)) == [1, 2, 10, 11, 20, 30]
    assert query(entries, "G = :g AND N = :n", values={":n": n(20)})["Items"][0]["R"] == {"S": "root"}


def test_transaction_refuses_two_actions_on_one_item_and_unknown_tables(client: SimDynamoDBClient) -> None:
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=[{"Put": {"TableName": "Entries", "Item": entry(G, 1)}},
                                                   {"Delete": {"TableName": "Entries", "Key": entry(G, 1)}}])
    assert error_of(caught)[:2] == ("ValidationException",
                                    "Transaction request cannot include multiple operations on one item")
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=[{"Put": {"TableName": "Nope", "Item": entry(G, 1)}}])
    assert error_of(caught)[0] == "ResourceNotFoundException"


def test_condition_check_guards_a_transaction_without_writing(entries: SimDynamoDBClient) -> None:
    check = {"ConditionCheck": {"TableName": "Entries", "Key": entry(G, 1), "ConditionExpression": "T = :t",
                                "ExpressionAttributeValues": {":t": {"S": "snap"}}}}
    put = {"Put": {"TableName": "Entries", "Item": entry(G, 3)}}
    with pytest.raises(ClientError):
        entries.transact_write_items(TransactItems=[check, put])
    assert nums(query(entries, "G = :g AND N = :n", values={":n": n(3)})) == []


def test_batch_write_puts_and_deletes_and_leaves_nothing_unprocessed(entries: SimDynamoDBClient) -> None:
    response = entries.batch_write_item(RequestItems={"Entries": [
        {"DeleteRequest": {"Key": entry(G, 0)}}, {"PutRequest": {"Item": entry(G, 5)}}]})
    assert response["UnprocessedItems"] == {}
    assert nums(query(entries)) == [1, 2, 5, 10, 11, 20]
    with pytest.raises(ClientError, match="Too many items"):
        entries.batch_write_item(RequestItems={"Entries": [{"PutRequest": {"Item": entry(G, i)}} for i in range(26)]})
    with pytest.raises(ClientError, match="contains duplicates"):
        entries.batch_write_item(RequestItems={"Entries": [{"PutRequest": {"Item": entry(G, 7)}},
                                                           {"DeleteRequest": {"Key": entry(G, 7)}}]})


# ----------------------------------------------------------------------------------------------- as_of

def test_eventually_consistent_reads_see_the_table_as_it_was_at_as_of() -> None:
    sim, client, clock = world()
    put = {"TableName": "Entries"}
    clock.now = 100.0
    client.put_item(**put, Item=entry(G, 1, T={"S": "v1"}))
    client.put_item(**put, Item=entry(G, 2))
    clock.now = 105.0
    client.put_item(**put, Item=entry(G, 1, T={"S": "v2"}))
    client.put_item(**put, Item=entry(G, 3))  # created after 102
    client.delete_item(TableName="Entries", Key=entry(G, 2))  # deleted after 102

    def get(num: int, as_of: float | None, **params: Any) -> dict[str, Any] | None:
        found: dict[str, Any] | None = sim.call("GetItem", {"TableName": "Entries", "Key": entry(G, num), **params},
                                                as_of=as_of).get("Item")
        return found

    def tail(as_of: float, **params: Any) -> list[int]:
        return nums(sim.call("Query", {"TableName": "Entries", "KeyConditionExpression": "G = :g", "Limit": 1,
                                       "ScanIndexForward": False, "ExpressionAttributeValues": {":g": {"B": G}},
                                       **params}, as_of=as_of))

    assert get(1, 102.0)["T"] == {"S": "v1"}  # type: ignore[index]
    assert get(1, 105.0)["T"] == {"S": "v2"}  # type: ignore[index]
    assert get(1, 102.0, ConsistentRead=True)["T"] == {"S": "v2"}  # type: ignore[index]
    assert (get(3, 102.0), get(2, 102.0) is not None, get(2, None)) == (None, True, None)
    assert tail(102.0) == [2]  # the stale tail a reader must survive (DESIGN §3 append)
    assert tail(102.0, ConsistentRead=True) == [3]
    assert [e["N"] for e in sim.items("Entries")] == [n(1), n(3)]


def test_history_is_pruned_so_memory_stays_bounded() -> None:
    clock = Clock(0.0)
    sim, client, _ = world(clock, history=10.0)
    for second in range(1000):
        clock.now = float(second)
        client.put_item(TableName="Flat", Item={"K": {"S": "k"}, "v": n(second)})
        client.put_item(TableName="Flat", Item={"K": {"S": f"gone{second}"}})
        client.delete_item(TableName="Flat", Key={"K": {"S": f"gone{second}"}})
    assert sim.call("GetItem", {"TableName": "Flat", "Key": {"K": {"S": "k"}}}, as_of=995.5)["Item"]["v"] == n(995)
    flat = sim._tables["Flat"]  # the bound itself is internal: versions of the last 10 s, deletions forgotten
    versions = flat.partitions["k"].versions[0]
    assert len(versions) <= 12
    assert len(flat.partitions) <= 13


# ----------------------------------------------------------------------------------------------- capacity

def _consumed(response: dict[str, Any]) -> Any:
    return response["ConsumedCapacity"]


def test_consumed_capacity_follows_the_developer_guide_examples() -> None:
    # Developer Guide, read-write-operations (ProvisionedThroughput): reads in 4 KB units, halved when eventually
    # consistent; writes in 1 KB units of the larger of before and after; transactions twice; "if you put or delete
    # an item of 1.6 KB, DynamoDB rounds the item size up to 2 KB"; a 3.5 KB read costs as 4 KB, a 10 KB one as 12.
    sim, client, _ = world()
    total = {"ReturnConsumedCapacity": "TOTAL"}

    def flat(key: str, size: int) -> dict[str, Any]:
        return {"K": {"S": key}, "v": {"B": b"x" * (size - 2 - len(key))}}  # names K, v: 2 bytes

    assert _consumed(client.put_item(TableName="Flat", Item=flat("a", 1638), **total)) == {
        "TableName": "Flat", "CapacityUnits": 2.0}
    client.put_item(TableName="Flat", Item=flat("b", 3584))
    client.put_item(TableName="Flat", Item=flat("c", 10240))
    key = {"TableName": "Flat", **total}
    assert _consumed(client.get_item(Key={"K": {"S": "b"}}, ConsistentRead=True, **key))["CapacityUnits"] == 1.0
    assert _consumed(client.get_item(Key={"K": {"S": "c"}}, ConsistentRead=True, **key))["CapacityUnits"] == 3.0
    assert _consumed(client.get_item(Key={"K": {"S": "c"}}, **key))["CapacityUnits"] == 1.5
    assert _consumed(client.get_item(Key={"K": {"S": "none"}}, **key))["CapacityUnits"] == 0.5
    # UpdateItem: the larger of before (10 KB) and after (1 KB)
    assert _consumed(client.update_item(Key={"K": {"S": "c"}}, UpdateExpression="REMOVE v", **key))[
        "CapacityUnits"] == 10.0
    # "each transaction writes three 500-byte items ... you would need to provision six WCUs" (transactions)
    response = client.transact_write_items(ReturnConsumedCapacity="TOTAL", TransactItems=[
        {"Put": {"TableName": "Flat", "Item": flat(k, 500)}} for k in ("t1", "t2", "t3")])
    assert _consumed(response) == [{"TableName": "Flat", "CapacityUnits": 6.0}]
    # "BatchWriteItem writes a 500-byte item and a 3.5 KB item, DynamoDB calculates the size as 5 KB"
    response = client.batch_write_item(ReturnConsumedCapacity="TOTAL", RequestItems={"Flat": [
        {"PutRequest": {"Item": flat("w1", 500)}}, {"PutRequest": {"Item": flat("w2", 3584)}}]})
    assert _consumed(response) == [{"TableName": "Flat", "CapacityUnits": 5.0}]
    # a failed conditional write still consumes: 1 for an item that did not exist, the new item's size otherwise
    before = sim.consumed("Flat")[1]
    for item in (flat("new", 100), flat("b", 2048)):
        with pytest.raises(ClientError):
            client.put_item(TableName="Flat", Item=item, ConditionExpression="attribute_exists(K)"
                            if item["K"]["S"] == "new" else "attribute_not_exists(K)")
    assert sim.consumed("Flat")[1] - before == 3.0


def test_query_capacity_sums_the_items_then_rounds(client: SimDynamoDBClient) -> None:
    # "suppose your query returns 10 items whose combined size is 40.8 KB. DynamoDB rounds ... to 44 KB"
    for num in range(10):
        client.put_item(TableName="Entries", Item=entry(G, num, B={"B": b"x" * 4170}))  # 4178 bytes each
    response = query(client, ReturnConsumedCapacity="TOTAL")
    assert response["ConsumedCapacity"]["CapacityUnits"] == 11.0
    response = client.query(TableName="Entries", KeyConditionExpression="G = :g", ReturnConsumedCapacity="TOTAL",
                            ExpressionAttributeValues={":g": {"B": G}})
    assert response["ConsumedCapacity"]["CapacityUnits"] == 5.5


def test_item_size_counts_names_and_values() -> None:
    from seglog_sim.aws.dynamodb_values import item_size

    # Developer Guide, "Item sizes and formats": names + UTF-8 strings + raw binary; numbers 1 byte per two
    # significant digits plus 1; Boolean and null 1; lists and maps 3 plus 1 per element.
    assert item_size({"ab": {"S": "xyz"}, "c": {"B": b"12"}, "é": {"S": "é"}}) == 5 + 3 + 4
    assert item_size({"n": {"N": "12345"}, "m": {"N": "-0.0012"}, "z": {"N": "100"}}) == (1 + 4) + (1 + 2) + (1 + 2)
    assert item_size({"t": {"BOOL": True}, "l": {"L": [{"S": "ab"}, {"NULL": True}]}}) == 2 + (1 + 3 + 3 + 2)
    assert item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1


def test_sim_needs_a_table_for_each_name() -> None:
    with pytest.raises(ValueError, match="given twice"):
        SimDynamoDB([world()[0]._tables["Flat"].spec] * 2, clock=Clock())
