"""Measure the simulated DynamoDB's per-call cost: calls per second for the three calls seglog's append and worker
paths make most (the simulation needs >= 1,000 worlds a minute, each a few hundred calls).

Run: uv run --no-sync python -m bench.bench_sim_dynamodb [N]

On an Entries table of ~1,000 items (10 segments of 100 entries) with its stream on: a conditional PutItem
(attribute_not_exists, ReturnValuesOnConditionCheckFailure=ALL_OLD, as put_entry sends it), a Query Limit 1
descending (latest_entry), and a conditional UpdateItem (the pending store's claim: SET, ADD, a condition).
Each through SimDynamoDBClient, with ReturnConsumedCapacity=TOTAL as DynamoDBCalls sends it.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable

from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec

SEGMENTS, PER_SEGMENT = 10, 100


def _segment(i: int) -> bytes:
    return b"L" * 16 + i.to_bytes(8, "big")


def _entry(segment: int, num: int) -> dict[str, dict[str, object]]:
    return {"G": {"B": _segment(segment)}, "N": {"N": str(num)}, "C": {"N": "1700000000"}, "T": {"S": "set"},
            "B": {"B": b"\x93\x01\x01\xa1x"}, "K": {"B": b"k" * 16}}


def world() -> tuple[SimDynamoDB, SimDynamoDBClient]:
    ticks = itertools.count(1_700_000_000)
    sim = SimDynamoDB([TableSpec("Entries", "G", "N", stream=True, hash_type="B", range_type="N"),
                       TableSpec("Pending", "L", "P", hash_type="B", range_type="B")],
                      clock=lambda: next(ticks) / 10)
    client = SimDynamoDBClient.of(sim)
    for s in range(SEGMENTS):
        for n in range(PER_SEGMENT):
            client.put_item(TableName="Entries", Item=_entry(s, n))
    return sim, client


def rate(name: str, n: int, run: Callable[[int], object]) -> float:
    start = time.perf_counter()
    for i in range(n):
        run(i)
    per_second = n / (time.perf_counter() - start)
    print(f"{name:<46} {per_second:>10,.0f} calls/s  ({1e6 / per_second:.1f} µs/call)")
    return per_second


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    _, client = world()
    print(f"## simulated DynamoDB, {SEGMENTS * PER_SEGMENT:,} items, {n:,} calls each")

    def put(i: int) -> None:
        client.put_item(TableName="Entries", Item=_entry(SEGMENTS + i // PER_SEGMENT, i % PER_SEGMENT),
                        ConditionExpression="attribute_not_exists(N)", ReturnValuesOnConditionCheckFailure="ALL_OLD",
                        ReturnConsumedCapacity="TOTAL")

    def latest(i: int) -> None:
        client.query(TableName="Entries", KeyConditionExpression="G = :g", Limit=1, ScanIndexForward=False,
                     ExpressionAttributeValues={":g": {"B": _segment(i % SEGMENTS)}}, ReturnConsumedCapacity="TOTAL")

    key = {"L": {"B": b"L" * 16}, "P": {"B": b"\0" * 16}}
    client.put_item(TableName="Pending", Item={**key, "A": {"BOOL": False}, "X": {"N": "0"}, "Q": {"S": "m1"},
                                               "M": {"N": "0"}})

    def claim(i: int) -> None:
        client.update_item(TableName="Pending", Key=key, UpdateExpression="SET A = :t, M = :m ADD X :one",
                           ConditionExpression="Q = :q AND (A = :f OR M < :stale)", ReturnValues="UPDATED_NEW",
                           ExpressionAttributeValues={":t": {"BOOL": False}, ":f": {"BOOL": False},
                                                      ":m": {"N": str(i)}, ":one": {"N": "1"}, ":q": {"S": "m1"},
                                                      ":stale": {"N": str(i - 30)}},
                           ReturnConsumedCapacity="TOTAL")

    rate("PutItem attribute_not_exists (new items)", n, put)
    rate("Query Limit 1 descending", n, latest)
    rate("UpdateItem SET/ADD with a condition", n, claim)


if __name__ == "__main__":
    main()
