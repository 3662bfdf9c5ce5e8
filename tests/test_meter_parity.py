"""The store's meter (seglog_aws.meter, in the function's artifact) prices DynamoDB answers by the same rules as the
tool's model (seglog_awsmodel.metering, what the emulator's request counts use): neither imports the other, so this
holds them together (issue 36)."""

from __future__ import annotations

from typing import Any

import pytest

from seglog_aws.meter import WRITE_OPERATIONS, Meter
from seglog_awsmodel import metering

ANSWERS: list[tuple[str, Any]] = [
    ("PutItem", {"CapacityUnits": 1.0}),
    ("GetItem", {"CapacityUnits": 0.5}),
    ("Query", [{"CapacityUnits": 2.0}, {"CapacityUnits": 0.5}]),
    ("TransactWriteItems", [{"TableName": "a", "CapacityUnits": 4.0}, {"TableName": "b", "CapacityUnits": 2.0}]),
    ("TransactGetItems", [{"ReadCapacityUnits": 2.0, "CapacityUnits": 2.0}]),
    ("UpdateItem", {"WriteCapacityUnits": 3.0, "ReadCapacityUnits": 0.0, "CapacityUnits": 3.0}),
    ("BatchWriteItem", None),
    ("DeleteItem", {}),
]


@pytest.mark.parametrize(("operation", "consumed"), ANSWERS)
def test_the_meter_attributes_capacity_as_the_model_does(operation: str, consumed: Any) -> None:
    meter = Meter()
    meter.record(operation, consumed)
    figures = meter.snapshot()[operation]
    assert metering.consumed_units(operation, consumed) == (figures["rcu"], figures["wcu"])


def test_both_call_the_same_operations_writes() -> None:
    assert metering.WRITE_OPERATIONS == WRITE_OPERATIONS
