"""FilterCriteria matching as Lambda event source mappings do it (DESIGN §9.5).

Every case cites the AWS page whose rule it reproduces:
- invocation-eventfiltering: https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
  ("Filter rule syntax" table and its note on exact matching; "Properly filtering Amazon SQS messages").
- eb-event-patterns / eb-create-pattern-operators: the EventBridge pages Lambda defers to for the semantics
  ("Lambda supports the same set of syntax and rules as Amazon EventBridge"): arrays, leaf-only exists.
- with-ddb-filtering / with-sqs-filtering: the per-source examples.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from seglog_aws.items import entry_to_item
from seglog_awsmodel.events.dynamodb_stream import stream_record
from seglog_awsmodel.filtering import (
    FilterPatternError,
    Matcher,
    compile_filter_criteria,
    compile_pattern,
    matches,
    select,
)
from seglog_awsmodel.template import load_template
from seglog_core.schema import Entry, EntryType

LAMBDA = "invocation-eventfiltering"
EB_PATTERNS = "eb-event-patterns"
EB_OPERATORS = "eb-create-pattern-operators"
DDB = "with-ddb-filtering"
SQS = "with-sqs-filtering / invocation-eventfiltering#filtering-sqs"

REPO_ROOT = Path(__file__).resolve().parents[3]

# (doc page, pattern, record, expected)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    # ---- Null / Empty
    (LAMBDA, {"UserID": [None]}, {"UserID": None}, True),
    (LAMBDA, {"UserID": [None]}, {"UserID": "u1"}, False),
    (EB_PATTERNS, {"UserID": [None]}, {}, False),  # null is a value; an absent field is not null
    (LAMBDA, {"LastName": [""]}, {"LastName": ""}, True),
    (LAMBDA, {"LastName": [""]}, {"LastName": "Doe"}, False),
    # ---- Equals: strings exactly, numbers by representation, booleans
    (LAMBDA, {"Name": ["Alice"]}, {"Name": "Alice"}, True),
    (LAMBDA, {"Name": ["Alice"]}, {"Name": "alice"}, False),  # "without case-folding"
    (LAMBDA, {"Price": [300]}, {"Price": 300}, True),
    (LAMBDA, {"Price": [300]}, {"Price": 300.0}, False),  # "300, 300.0, and 3.0e2 are not considered equal"
    (LAMBDA, {"Price": [300]}, {"Price": "300"}, False),
    (LAMBDA, {"Flag": [True]}, {"Flag": True}, True),
    (LAMBDA, {"Flag": [True]}, {"Flag": 1}, False),
    (LAMBDA, {"Flag": [False]}, {"Flag": "false"}, False),
    # ---- Equals (ignore case)
    (LAMBDA, {"Name": [{"equals-ignore-case": "alice"}]}, {"Name": "ALICE"}, True),
    (LAMBDA, {"Name": [{"equals-ignore-case": "alice"}]}, {"Name": "Bob"}, False),
    # ---- And / Or
    (LAMBDA, {"Location": ["New York"], "Day": ["Monday"]}, {"Location": "New York", "Day": "Monday"}, True),
    (LAMBDA, {"Location": ["New York"], "Day": ["Monday"]}, {"Location": "New York", "Day": "Friday"}, False),
    (LAMBDA, {"PaymentType": ["Credit", "Debit"]}, {"PaymentType": "Debit"}, True),
    (LAMBDA, {"PaymentType": ["Credit", "Debit"]}, {"PaymentType": "Cash"}, False),
    # ---- Not (anything-but): single value, list, number, prefix
    (LAMBDA, {"Weather": [{"anything-but": "Raining"}]}, {"Weather": "Sunny"}, True),
    (LAMBDA, {"Weather": [{"anything-but": "Raining"}]}, {"Weather": "Raining"}, False),
    (EB_OPERATORS, {"Weather": [{"anything-but": "Raining"}]}, {}, False),  # only exists:false matches absence
    (LAMBDA, {"Weather": [{"anything-but": ["Raining", "Snowing"]}]}, {"Weather": "Snowing"}, False),
    (LAMBDA, {"Weather": [{"anything-but": ["Raining", "Snowing"]}]}, {"Weather": "Sunny"}, True),
    (EB_OPERATORS, {"Code": [{"anything-but": [100, 200]}]}, {"Code": 200}, False),
    (EB_OPERATORS, {"Code": [{"anything-but": [100, 200]}]}, {"Code": 404}, True),
    (EB_OPERATORS, {"Region": [{"anything-but": {"prefix": "us-"}}]}, {"Region": "eu-west-1"}, True),
    (EB_OPERATORS, {"Region": [{"anything-but": {"prefix": "us-"}}]}, {"Region": "us-east-1"}, False),
    # ---- Numeric (equals, range, each operator); numbers only, compared by value
    (LAMBDA, {"Price": [{"numeric": ["=", 100]}]}, {"Price": 100}, True),
    (LAMBDA, {"Price": [{"numeric": ["=", 100]}]}, {"Price": 100.0}, True),
    (LAMBDA, {"Price": [{"numeric": ["=", 100]}]}, {"Price": 101}, False),
    (LAMBDA, {"Price": [{"numeric": ["=", 100]}]}, {"Price": "100"}, False),
    (LAMBDA, {"Price": [{"numeric": [">", 10, "<=", 20]}]}, {"Price": 10}, False),
    (LAMBDA, {"Price": [{"numeric": [">", 10, "<=", 20]}]}, {"Price": 10.5}, True),
    (LAMBDA, {"Price": [{"numeric": [">", 10, "<=", 20]}]}, {"Price": 20}, True),
    (LAMBDA, {"Price": [{"numeric": [">", 10, "<=", 20]}]}, {"Price": 21}, False),
    (EB_OPERATORS, {"Price": [{"numeric": ["<", 0]}]}, {"Price": -0.5}, True),
    (EB_OPERATORS, {"Price": [{"numeric": [">=", 5, "<", 6]}]}, {"Price": 5}, True),
    (EB_OPERATORS, {"Price": [{"numeric": [">=", 5, "<", 6]}]}, {"Price": 6}, False),
    (EB_OPERATORS, {"Price": [{"numeric": [">", 0]}]}, {"Price": True}, False),
    # ---- Exists / Does not exist (leaf values only)
    (LAMBDA, {"ProductName": [{"exists": True}]}, {"ProductName": "Widget"}, True),
    (LAMBDA, {"ProductName": [{"exists": True}]}, {"Other": 1}, False),
    (LAMBDA, {"ProductName": [{"exists": False}]}, {"Other": 1}, True),
    (LAMBDA, {"ProductName": [{"exists": False}]}, {"ProductName": "Widget"}, False),
    (EB_OPERATORS, {"ProductName": [{"exists": True}]}, {"ProductName": {"S": "Widget"}}, False),
    (EB_OPERATORS, {"ProductName": [{"exists": False}]}, {"ProductName": {"S": "Widget"}}, True),
    (EB_OPERATORS, {"a": {"b": [{"exists": False}]}}, {}, True),
    # ---- Begins with / Ends with
    (LAMBDA, {"Region": [{"prefix": "us-"}]}, {"Region": "us-east-1"}, True),
    (LAMBDA, {"Region": [{"prefix": "us-"}]}, {"Region": "eu-west-1"}, False),
    (LAMBDA, {"Region": [{"prefix": "1"}]}, {"Region": 12}, False),  # prefix applies to strings
    (LAMBDA, {"FileName": [{"suffix": ".png"}]}, {"FileName": "cat.png"}, True),
    (LAMBDA, {"FileName": [{"suffix": ".png"}]}, {"FileName": "cat.jpg"}, False),
    # ---- Nested objects; fields the pattern does not name are ignored
    (LAMBDA, {"data": {"City": ["Seattle"]}}, {"data": {"City": "Seattle", "State": "WA"}}, True),
    (LAMBDA, {"data": {"City": ["Seattle"]}}, {"data": {"City": "Portland"}}, False),
    (LAMBDA, {"data": {"City": ["Seattle"]}}, {"data": "Seattle"}, False),
    # ---- Arrays in the event: any element
    (EB_PATTERNS, {"tags": ["red"]}, {"tags": ["blue", "red"]}, True),
    (EB_PATTERNS, {"tags": ["red"]}, {"tags": ["blue"]}, False),
    (EB_PATTERNS, {"tags": [{"exists": False}]}, {"tags": []}, True),
    (EB_PATTERNS, {"items": {"sku": ["A"]}}, {"items": [{"sku": "B"}, {"sku": "A"}]}, True),
    (EB_PATTERNS, {"items": {"sku": ["A"], "qty": [1]}}, {"items": [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}]},
     False),  # fields below an array match within one element
    # ---- DynamoDB: the example of with-ddb-filtering, filtering on a key and on NewImage
    (DDB, {"dynamodb": {"Keys": {"CustomerName": {"S": ["AnyCompany Industries"]}}}},
     {"eventName": "INSERT", "dynamodb": {"Keys": {"CustomerName": {"S": "AnyCompany Industries"}},
                                          "NewImage": {"PaymentTerms": {"S": "60 days"}}}}, True),
    (DDB, {"dynamodb": {"NewImage": {"PaymentTerms": {"S": ["30 days"]}}}},
     {"eventName": "INSERT", "dynamodb": {"NewImage": {"PaymentTerms": {"S": "60 days"}}}}, False),
    # ---- SQS body: JSON against JSON, string against string; a mismatch is dropped
    (SQS, {"body": {"RequestCode": ["BBBB"]}}, {"messageId": "m", "body": '{"RequestCode": "BBBB"}'}, True),
    (SQS, {"body": {"RequestCode": ["BBBB"]}}, {"messageId": "m", "body": '{"RequestCode": "AAAA"}'}, False),
    (SQS, {"body": {"RecordNumber": [{"numeric": [">", 9999]}]}}, {"messageId": "m", "body": '{"RecordNumber": 10000}'},
     True),
    (SQS, {"body": {"RequestCode": [{"exists": False}]}}, {"messageId": "m", "body": "RequestCode BBBB"}, False),
    (SQS, {"body": [{"prefix": "Result: "}]}, {"messageId": "m", "body": "Result: ok"}, True),
    (SQS, {"body": [{"prefix": "{"}]}, {"messageId": "m", "body": '{"RequestCode": "BBBB"}'}, False),
    (SQS, {"body": ["[1, 2]"]}, {"messageId": "m", "body": "[1, 2]"}, True),  # JSON, but not an object
    (SQS, {"attributes": {"ApproximateReceiveCount": ["1"]}},
     {"messageId": "m", "body": "plain", "attributes": {"ApproximateReceiveCount": "1"}}, True),
]


@pytest.mark.parametrize(("doc", "pattern", "record", "expected"), CASES,
                         ids=[f"{i:02d}-{c[0].split()[0]}-{json.dumps(c[1])[:48]}" for i, c in enumerate(CASES)])
def test_filter_rule_matches_like_lambda(doc: str, pattern: dict[str, Any], record: dict[str, Any],
                                         expected: bool) -> None:
    """Each row reproduces a rule of the cited page; the pattern is given as the JSON string Lambda receives."""
    assert expected == compile_pattern(json.dumps(pattern)).matches(record), doc


def test_a_record_passes_if_any_filter_matches() -> None:
    """invocation-eventfiltering: "Your filters are logically ORed together"."""
    filters: list[Matcher | str] = [compile_pattern({"a": ["x"]}), '{"b": ["y"]}']
    assert [True, True, False] == [matches(filters, {"a": "x"}), matches(filters, {"b": "y"}),
                                   matches(filters, {"a": "y"})]


def test_a_mapping_without_filter_criteria_passes_every_record() -> None:
    """invocation-eventfiltering: filtering applies only when FilterCriteria is set."""
    assert matches([], {"anything": 1})
    assert () == compile_filter_criteria(None)


def test_select_keeps_passing_records_in_order() -> None:
    """invocation-eventfiltering: records that satisfy no filter are discarded, the rest keep their order."""
    filters = compile_filter_criteria({"Filters": [{"Pattern": '{"n": [{"numeric": [">", 1]}]}'}]})
    assert [{"n": 2}, {"n": 5}] == select(filters, [{"n": 1}, {"n": 2}, {"n": 0}, {"n": 5}])


def test_matchers_compare_by_pattern() -> None:
    """The compiled form is an implementation detail: two matchers of the same pattern are equal."""
    assert compile_pattern('{"a": ["x"]}') == compile_pattern({"a": ["x"]})
    assert isinstance(compile_pattern({}), Matcher)


# ------------------------------------------------------------------------------------------------ seglog's own


def _stream_router_filters() -> list[Matcher]:
    template = load_template(REPO_ROOT / "template.yaml")
    props = template.resources["StreamRouterFunction"]["Properties"]["Events"]["Entries"]["Properties"]
    return list(compile_filter_criteria(props["FilterCriteria"]))


def _stream_record(event_name: str, entry: Entry) -> dict[str, Any]:
    """A record exactly as Lambda would hand it over: item -> stream record (NEW_IMAGE) -> event form."""
    item = entry_to_item(entry)
    change: dict[str, Any] = {"Keys": {"G": item["G"], "N": item["N"]}, "SizeBytes": 64,
                              "SequenceNumber": "4421584500000000017450439091", "StreamViewType": "NEW_IMAGE"}
    if event_name != "REMOVE":
        change["NewImage"] = item
    raw = {"eventID": "c4ca4238a0b923820dcc509a6f75849b", "eventName": event_name, "eventVersion": "1.1",
           "eventSource": "aws:dynamodb", "dynamodb": change}
    return stream_record(raw, region="us-east-1",
                         event_source_arn="arn:aws:dynamodb:us-east-1:000000000000:table/Entries/stream/2024")


LOG = uuid.UUID("00000000-0000-4000-8000-000000000001")
SNAPSHOT = Entry(log_id=LOG, segment=0, num=1000, created=1_700_000_000, type=EntryType.SNAPSHOT)
COMPLETED_SNAPSHOT = Entry(log_id=LOG, segment=0, num=1000, created=1_700_000_000, type=EntryType.SNAPSHOT,
                           snapshot_root="snapshots/x/0/1000/root")
EXTERNAL_BODY = Entry(log_id=LOG, segment=0, num=7, created=1_700_000_000, type=EntryType.SET_CELL,
                      external=f"entries/{LOG}/{uuid.UUID(int=7)}")
SET_CELL = Entry(log_id=LOG, segment=0, num=8, created=1_700_000_000, type=EntryType.SET_CELL, body=b"\x92\xa2A1\x01")


@pytest.mark.parametrize(("event_name", "entry", "expected"), [
    ("INSERT", SNAPSHOT, True),                # a new Snapshot entry: queue a snapshot job
    ("INSERT", EXTERNAL_BODY, True),           # a large body in S3: untag it
    ("INSERT", SET_CELL, False),               # an ordinary entry: nothing for the router
    ("MODIFY", COMPLETED_SNAPSHOT, False),     # R set on completion (DESIGN §5 step 6): not a new snapshot
    ("MODIFY", EXTERNAL_BODY, False),
    ("REMOVE", SNAPSHOT, False),               # NEW_IMAGE: a REMOVE carries no NewImage
], ids=["snapshot-insert", "external-insert", "setcell-insert", "snapshot-modify", "external-modify",
        "snapshot-remove"])
def test_seglog_stream_router_filters_pass_snapshot_and_external_inserts_only(
        event_name: str, entry: Entry, expected: bool) -> None:
    """template.yaml's two FilterCriteria patterns (DESIGN §4) on real stream records (with-ddb-filtering,
    invocation-eventfiltering: filters ORed; exists on the leaf E.S)."""
    record = _stream_record(event_name, entry)
    assert expected == matches(_stream_router_filters(), record)


def test_seglog_external_filter_alone_ignores_snapshots_without_a_body_key() -> None:
    """with-ddb-filtering: exists must name the leaf (E.S); a Snapshot entry has no E, so only filter 1 passes it."""
    snapshot_filter, external_filter = _stream_router_filters()
    record = _stream_record("INSERT", SNAPSHOT)
    assert (True, False) == (snapshot_filter.matches(record), external_filter.matches(record))


# ------------------------------------------------------------------------------------------------ errors

BAD: list[tuple[str, Any, str, str]] = [
    # (doc, pattern, path named in the error, reason fragment)
    (LAMBDA, "{not json", "", "not valid JSON"),
    (LAMBDA, "[1, 2]", "", "a pattern is a JSON object"),
    (LAMBDA, {"a": "x"}, "a", "must be an object or an array"),
    (EB_OPERATORS, {"a": []}, "a", "empty arrays are not allowed"),
    (EB_OPERATORS, {"a": [["x"]]}, "a[0]", "a rule must be"),
    (EB_OPERATORS, {"a": [{"prefix": "x", "suffix": "y"}]}, "a[0]", "exactly one key"),
    (LAMBDA, {"a": [{"contains": "x"}]}, "a[0].contains", "unrecognized match type"),
    (LAMBDA, {"a": [{"wildcard": "*.png"}]}, "a[0].wildcard", "does not support"),
    (LAMBDA, {"a": [{"cidr": "10.0.0.0/24"}]}, "a[0].cidr", "does not support"),
    (LAMBDA, {"$or": [{"a": ["x"]}, {"b": ["y"]}]}, "$or", "its own entry in Filters"),
    (LAMBDA, {"a": [{"prefix": {"equals-ignore-case": "x"}}]}, "a[0].prefix", "EventBridge-only"),
    (LAMBDA, {"a": [{"suffix": 5}]}, "a[0].suffix", "takes a string"),
    (LAMBDA, {"a": [{"equals-ignore-case": 5}]}, "a[0].equals-ignore-case", "takes a string"),
    (LAMBDA, {"a": [{"anything-but": {"suffix": ".png"}}]}, "a[0].anything-but", "not supported by Lambda"),
    (EB_OPERATORS, {"a": [{"anything-but": [None]}]}, "a[0].anything-but[0]", "strings or numbers"),
    (EB_OPERATORS, {"a": [{"anything-but": []}]}, "a[0].anything-but", "at least one value"),
    (EB_OPERATORS, {"a": [{"anything-but": {"prefix": ""}}]}, "a[0].anything-but.prefix", "non-empty"),
    (LAMBDA, {"a": [{"numeric": [">", "ten"]}]}, "a[0].numeric[1]", "must be a number"),
    (LAMBDA, {"a": [{"numeric": ["!=", 5]}]}, "a[0].numeric[0]", "unrecognized numeric operator"),
    (LAMBDA, {"a": [{"numeric": [">", 5, "<"]}]}, "a[0].numeric", "needs a number after it"),
    (EB_OPERATORS, {"a": [{"numeric": ["<", 5, ">", 1]}]}, "a[0].numeric", "lower bound"),
    (EB_OPERATORS, {"a": [{"numeric": [">", 5, "<", 1]}]}, "a[0].numeric", "bottom must be less than its top"),
    (EB_OPERATORS, {"a": [{"numeric": [">", 1e10]}]}, "a[0].numeric[1]", "outside"),
    (LAMBDA, {"a": [{"exists": "yes"}]}, "a[0].exists", "true or false"),
    ("API_Filter (Pattern: maximum length of 4096)", json.dumps({"a": ["x" * 4100]}), "", "4096"),
]


@pytest.mark.parametrize(("doc", "pattern", "path", "reason"), BAD,
                         ids=[f"{i:02d}-{str(b[1])[:40]}" for i, b in enumerate(BAD)])
def test_patterns_lambda_refuses_are_refused_naming_the_part(doc: str, pattern: Any, path: str, reason: str) -> None:
    """Lambda refuses these at CreateEventSourceMapping; the error names where the pattern is wrong."""
    with pytest.raises(FilterPatternError, match="FilterCriteria pattern is not valid") as caught:
        compile_pattern(pattern)
    assert (path, True) == (caught.value.path, reason in caught.value.reason), (doc, caught.value.reason)


def test_a_bad_filter_in_filter_criteria_is_named_by_its_index() -> None:
    """invocation-eventfiltering: FilterCriteria is {"Filters": [{"Pattern": ...}]}; the error says which one."""
    criteria = {"Filters": [{"Pattern": '{"a": ["x"]}'}, {"Pattern": '{"a": {"b": "x"}}'}]}
    with pytest.raises(FilterPatternError) as caught:
        compile_filter_criteria(criteria)
    assert "Filters[1].Pattern.a.b" == caught.value.path
