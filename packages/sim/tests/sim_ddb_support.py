"""Shared set-up for the simulated DynamoDB's tests: a world with a driven clock, and short-hands for items."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec


class Clock:
    """Simulated time the test moves by hand."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def world(clock: Clock | None = None, **kw: Any) -> tuple[SimDynamoDB, SimDynamoDBClient, Clock]:
    """Tables shaped like seglog's: Entries G (B) / N (N) with a stream, Pending L (B) / P (B), Flat K (S)."""
    clock = clock or Clock()
    sim = SimDynamoDB([TableSpec("Entries", "G", "N", stream=True, hash_type="B", range_type="N"),
                       TableSpec("Pending", "L", "P", hash_type="B", range_type="B"),
                       TableSpec("Flat", "K", None, hash_type="S")], clock=clock, **kw)
    return sim, SimDynamoDBClient.of(sim), clock


def n(value: int | str) -> dict[str, str]:
    return {"N": str(value)}


def entry(g: bytes, num: int, **attributes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"G": {"B": g}, "N": n(num), **attributes}


def error_of(caught: pytest.ExceptionInfo[ClientError]) -> tuple[str, str, int]:
    response: Any = caught.value.response
    return response["Error"]["Code"], response["Error"]["Message"], response["ResponseMetadata"]["HTTPStatusCode"]
