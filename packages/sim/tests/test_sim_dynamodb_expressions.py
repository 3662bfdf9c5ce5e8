"""Condition and update expressions of the simulated DynamoDB, each checked through the API as a caller sees it.

DynamoDB Developer Guide: "Comparison operator and function reference" (Expressions.OperatorsAndFunctions:
comparators, BETWEEN, IN, functions, precedence NOT > AND > OR) and "Update expressions"
(Expressions.UpdateExpressions: SET with + and if_not_exists, REMOVE, ADD, DELETE).
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError
from sim_ddb_support import error_of, n, world

from seglog_sim.aws.dynamodb import SimDynamoDBClient
from seglog_sim.aws.expressions import cached

ITEM: dict[str, Any] = {"K": {"S": "k"}, "a": n(5), "s": {"S": "abc"}, "b": {"B": b"\x01\x02"},
                        "t": {"BOOL": True}, "ss": {"SS": ["x", "y"]}, "l": {"L": [{"S": "x"}, n(1)]},
                        "upper": {"S": "Z"}, "dash name": {"S": "needs #"}}


@pytest.fixture
def client() -> SimDynamoDBClient:
    _, client, _ = world()
    client.put_item(TableName="Flat", Item=ITEM)
    return client


def holds(client: SimDynamoDBClient, condition: str, values: dict[str, Any] | None = None,
          names: dict[str, str] | None = None) -> bool:
    """Whether ``condition`` is true of ITEM (a PutItem of the same item: it changes nothing either way)."""
    params: dict[str, Any] = {"TableName": "Flat", "Item": ITEM, "ConditionExpression": condition}
    if values:
        params["ExpressionAttributeValues"] = values
    if names:
        params["ExpressionAttributeNames"] = names
    try:
        client.put_item(**params)
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


V = {":five": n(5), ":six": n(6), ":seven": n(7), ":ten": n(10), ":s5": {"S": "5"}, ":abc": {"S": "abc"},
     ":ab": {"S": "ab"}, ":a": {"S": "a"}, ":b02": {"B": b"\x02"}, ":b01": {"B": b"\x01"}, ":x": {"S": "x"},
     ":m": {"M": {}}, ":N": {"S": "N"}, ":SS": {"S": "SS"}, ":three": n(3), ":five0": {"N": "5.0"}}


@pytest.mark.parametrize(("condition", "expected"), [
    ("a = :five", True), ("a = :five0", True), ("a = :six", False),
    ("a <> :six", True), ("a <> :five", False),
    ("a < :ten", True),  # numerically: as strings "5" > "10"
    ("a <= :five", True), ("a > :five", False), ("a >= :five", True), ("a > :six", False),
    ("b < :b02", True), ("b > :b01", True),  # binary bytewise
    ("upper < :a", True),  # strings by code point: "Z" (90) < "a" (97)
    ("a = :s5", False), ("a <> :s5", True), ("a < :abc", False),  # different types never compare
    ("missing = :five", False), ("missing < :five", False), ("missing <> :five", True),
    ("a BETWEEN :five AND :seven", True), ("a BETWEEN :six AND :seven", False), ("a BETWEEN :three AND :five", True),
    ("a IN (:six, :five)", True), ("a IN (:six, :seven)", False),
    ("attribute_exists(a)", True), ("attribute_exists(missing)", False),
    ("attribute_not_exists(missing)", True), ("attribute_not_exists(a)", False),
    ("begins_with(s, :ab)", True), ("begins_with(s, :x)", False), ("begins_with(a, :ab)", False),
    ("contains(s, :ab)", True), ("contains(ss, :x)", True), ("contains(l, :x)", True), ("contains(ss, :a)", False),
    ("size(s) = :three", True), ("size(ss) < :three", True),
    ("attribute_type(a, :N)", True), ("attribute_type(ss, :SS)", True), ("attribute_type(a, :SS)", False),
])
def test_comparators_and_functions_follow_the_operator_reference(client: SimDynamoDBClient, condition: str,
                                                                 expected: bool) -> None:
    used = {k: V[k] for k in re.findall(r":\w+", condition)}
    assert holds(client, condition, used) is expected


@pytest.mark.parametrize(("condition", "expected"), [
    ("a = :five OR a = :six AND a = :seven", True),  # AND binds tighter: five OR (six AND seven)
    ("(a = :five OR a = :six) AND a = :seven", False),
    ("a = :six AND a = :seven OR a = :five", True),
    ("NOT a = :six", True), ("NOT (a = :five)", False), ("NOT a = :five OR a = :five", True),
    ("NOT (a = :five OR a = :six)", False),
])
def test_precedence_is_not_then_and_then_or(client: SimDynamoDBClient, condition: str, expected: bool) -> None:
    used = {k: V[k] for k in (":five", ":six", ":seven") if k in condition}
    assert holds(client, condition, used) is expected


def test_names_go_through_placeholders(client: SimDynamoDBClient) -> None:
    assert holds(client, "#d = :v", {":v": {"S": "needs #"}}, {"#d": "dash name"})
    assert not holds(client, "#d <> :v", {":v": {"S": "needs #"}}, {"#d": "dash name"})


@pytest.mark.parametrize(("condition", "values", "names", "message"), [
    ("a = ", {":five": n(5)}, None, "Syntax error"),
    ("a = :five AND", {":five": n(5)}, None, "Syntax error"),
    ("(a = :five", {":five": n(5)}, None, "Syntax error"),
    ("a == :five", {":five": n(5)}, None, "Syntax error"),
    ("a = :five b = :five", {":five": n(5)}, None, "Syntax error"),
    ("attribute_exists(a", None, None, "Syntax error"),
    ("a ! :five", {":five": n(5)}, None, "Syntax error"),
    ("   ", None, None, "can not be empty"),
    ("a.b = :five", {":five": n(5)}, None, "top-level attribute names only"),
    ("a = :nine", {":five": n(5)}, None, "unused in expressions: keys: {:five}"),
    ("a = :nine", None, None, "attribute value used in expression is not defined; attribute value: :nine"),
    ("#x = :five", {":five": n(5)}, None, "attribute name used in the document path is not defined"),
    ("a = :five", {":five": n(5)}, {"#x": "a"}, "ExpressionAttributeNames unused in expressions: keys: {#x}"),
    ("a < :m", {":m": {"M": {}}}, None, "Incorrect operand type for operator or function; operator or function: <"),
    ("a BETWEEN :seven AND :five", {":seven": n(7), ":five": n(5)}, None, "requires upper bound to be greater"),
    ("size(a) = :five AND attribute_exists(size)", {":five": n(5)}, None, None),  # valid: size is a name here
])
def test_malformed_expressions_are_validation_exceptions(client: SimDynamoDBClient, condition: str,
                                                         values: dict[str, Any] | None, names: dict[str, str] | None,
                                                         message: str | None) -> None:
    if message is None:
        assert not holds(client, condition, values, names)  # size(N) has no size: false, not an error
        return
    with pytest.raises(ClientError) as caught:
        holds(client, condition, values, names)
    code, text, status = error_of(caught)
    assert (code, status) == ("ValidationException", 400)
    assert message in text


def test_an_expression_is_parsed_once_per_text() -> None:
    assert cached("ConditionExpression", "x = :y", None) is cached("ConditionExpression", "x = :y", None)
    assert cached("ConditionExpression", "#n = :y", {"#n": "x"}) is not cached("ConditionExpression", "#n = :y",
                                                                                {"#n": "z"})


# ----------------------------------------------------------------------------------------------- updates

def update(client: SimDynamoDBClient, expression: str, values: dict[str, Any] | None = None,
           key: str = "k", **params: Any) -> dict[str, Any]:
    if values:
        params["ExpressionAttributeValues"] = values
    return client.update_item(TableName="Flat", Key={"K": {"S": key}}, UpdateExpression=expression,
                              ReturnValues=params.pop("ReturnValues", "ALL_NEW"), **params)


def test_set_with_arithmetic_and_if_not_exists(client: SimDynamoDBClient) -> None:
    got = update(client, "SET a = a + :two, c = if_not_exists(c, :one), s = if_not_exists(s, :x), d = a - :two",
                 {":two": n(2), ":one": n(1), ":x": {"S": "x"}})["Attributes"]
    # every right-hand side reads the item as it was: d is the old a minus two
    assert (got["a"], got["c"], got["s"], got["d"]) == (n(7), n(1), {"S": "abc"}, n(3))


def test_remove_add_and_delete_in_any_order(client: SimDynamoDBClient) -> None:
    got = update(client, "DELETE ss :y ADD a :one, counter :one, tags :tags REMOVE s, upper SET t = :f",
                 {":y": {"SS": ["y"]}, ":one": n(1), ":tags": {"SS": ["p"]}, ":f": {"BOOL": False}})["Attributes"]
    assert (got["a"], got["counter"], got["tags"], got["ss"], got["t"]) == (
        n(6), n(1), {"SS": ["p"]}, {"SS": ["x"]}, {"BOOL": False})
    assert "s" not in got and "upper" not in got
    got = update(client, "DELETE ss :x", {":x": {"SS": ["x"]}})["Attributes"]
    assert "ss" not in got  # a set cannot be empty: its last member gone, the attribute is gone


def test_update_return_values(client: SimDynamoDBClient) -> None:
    values = {":one": n(1), ":v": {"S": "new"}}
    assert update(client, "SET s = :v ADD a :one", values, ReturnValues="UPDATED_NEW")["Attributes"] == {
        "s": {"S": "new"}, "a": n(6)}
    assert update(client, "SET s = :v ADD a :one", values, ReturnValues="UPDATED_OLD")["Attributes"] == {
        "s": {"S": "new"}, "a": n(6)}
    assert update(client, "REMOVE s", ReturnValues="ALL_OLD")["Attributes"]["s"] == {"S": "new"}
    assert "Attributes" not in update(client, "REMOVE s", ReturnValues="NONE")


def test_update_creates_a_missing_item_but_a_remove_alone_does_not(client: SimDynamoDBClient) -> None:
    assert update(client, "ADD X :one", {":one": n(1)}, key="new")["Attributes"] == {"K": {"S": "new"}, "X": n(1)}
    assert "Attributes" not in update(client, "REMOVE X", key="absent")
    assert client.get_item(TableName="Flat", Key={"K": {"S": "absent"}}, ConsistentRead=True).get("Item") is None


@pytest.mark.parametrize(("expression", "values", "message"), [
    ("SET a = :one, a = :two", {":one": n(1), ":two": n(2)}, "Two document paths overlap"),
    ("SET a = :one REMOVE a", {":one": n(1)}, "Two document paths overlap"),
    ("SET a = :one SET b = :one", {":one": n(1)}, "The \"SET\" section can only be used once"),
    ("SET K = :one", {":one": n(1)}, "Cannot update attribute K. This attribute is part of the key"),
    ("SET a = missing + :one", {":one": n(1)}, "refers to an attribute that does not exist in the item"),
    ("SET a = s + :one", {":one": n(1)}, "incorrect data type"),
    ("ADD s :one", {":one": n(1)}, "incorrect data type"),
    ("ADD a :x", {":x": {"S": "x"}}, "operator: ADD, operand type: STRING"),
    ("SET a :one", {":one": n(1)}, "Syntax error"),
    ("SET a = nope(a, :one)", {":one": n(1)}, "Invalid function name"),
    ("UPSERT a = :one", {":one": n(1)}, "Syntax error"),
])
def test_invalid_updates_are_validation_exceptions_and_change_nothing(client: SimDynamoDBClient, expression: str,
                                                                      values: dict[str, Any], message: str) -> None:
    with pytest.raises(ClientError) as caught:
        update(client, expression, values)
    code, text, _ = error_of(caught)
    assert code == "ValidationException"
    assert message in text
    assert client.get_item(TableName="Flat", Key={"K": {"S": "k"}}, ConsistentRead=True)["Item"] == ITEM


def test_any_jumble_of_tokens_is_answered_never_a_python_error() -> None:
    """A malformed expression is a ValidationException, as from DynamoDB; a seeded jumble of expression tokens
    through conditions, updates and key conditions never raises anything else."""
    tokens = ["a", "b", "K", "#n", ":v", ":w", "=", "<>", "<", "<=", ">", ">=", "(", ")", ",", "AND", "OR", "NOT",
              "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE", "+", "-", "size", "attribute_exists", "begins_with",
              "if_not_exists", "list_append", "contains", "attribute_type", ".", "[", "0", "]", "!"]
    rng = random.Random(11)
    sim, _, _ = world()
    sim.call("PutItem", {"TableName": "Flat", "Item": {"K": {"S": "k"}, "a": n(1), "b": {"S": "x"}}})
    answered: dict[str, int] = {}
    for _ in range(1500):
        text = " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 9)))
        for operation, kind, extra in (("PutItem", "ConditionExpression", {"Item": {"K": {"S": "k"}, "a": n(1)}}),
                                       ("UpdateItem", "UpdateExpression", {"Key": {"K": {"S": "k"}}}),
                                       ("Query", "KeyConditionExpression", {})):
            params: dict[str, Any] = {"TableName": "Flat", kind: text, **extra}
            if "#n" in text:
                params["ExpressionAttributeNames"] = {"#n": "a"}
            values = {k: n(1) for k in (":v", ":w") if k in text}
            if values:
                params["ExpressionAttributeValues"] = values
            try:
                sim.call(operation, params)
                code = "ok"
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
            answered[code] = answered.get(code, 0) + 1
    assert set(answered) <= {"ok", "ValidationException", "ConditionalCheckFailedException"}
    assert answered["ValidationException"] > 1000
