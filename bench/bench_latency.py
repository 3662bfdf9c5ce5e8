"""Append latency against raw PutItem latency on the same backend, in one run (target: ratio of medians <= 1.10).

Run: uv run --no-sync python -m bench.bench_latency [--profile dynamodb-local|localstack|both] [--quick]

raw     boto3 put_item of the item an append writes (same size and attributes, same attribute_not_exists(N)
        condition, ReturnValuesOnConditionCheckFailure and ReturnConsumedCapacity) on the same table and client,
        prebuilt, sequential, each at a fresh key of its own log
append  EventLog.append with a cached tail (one PutItem): validation, encoding, the item, the call, the meter

The two alternate in blocks (raw, append, append, raw, ...) after a warm-up, so drift in the machine or the
emulator falls on both alike. The ratio is what the library adds on top of the call it cannot avoid.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable

from bench.support import Headline, entry_item, median, percentile, sized_body, standalone
from seglog_aws.backend import Backend

BLOCK = 10
TARGET = 1.10


def _timed_ms(call: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - start) / 1e6


def run(backend: Backend, quick: bool) -> list[Headline]:
    samples = 100 if quick else 500
    warmup = 20 if quick else 50
    body = sized_body()
    ddb = backend.store._ddb
    table = backend.store.entries_table

    writer = backend.event_log(cache_tail=True, retry_horizon=math.inf)
    log_id = writer.create()
    raw_log = uuid.uuid4()
    raw_items = iter([entry_item(raw_log, num, body) for num in range(1, samples + warmup + 1)])

    def raw() -> object:
        return ddb.put_item(TableName=table, Item=next(raw_items), ConditionExpression="attribute_not_exists(N)",
                            ReturnValuesOnConditionCheckFailure="ALL_OLD", ReturnConsumedCapacity="TOTAL")

    def append() -> object:
        return writer.append(log_id, body)

    for _ in range(warmup):
        raw()
        append()
    timings: dict[str, list[float]] = {"raw": [], "append": []}
    for block in range(samples // BLOCK):
        order = (("raw", raw), ("append", append)) if block % 2 == 0 else (("append", append), ("raw", raw))
        for name, call in order:
            timings[name] += [_timed_ms(call) for _ in range(BLOCK)]

    print(f"\n## append latency vs raw PutItem ({samples} each, blocks of {BLOCK}, interleaved)")
    print(f"{'':<10}{'median ms':>11}{'p90 ms':>9}{'p99 ms':>9}{'mean ms':>9}")
    for name, values in timings.items():
        print(f"{name:<10}{median(values):>11.3f}{percentile(values, 90):>9.3f}{percentile(values, 99):>9.3f}"
              f"{sum(values) / len(values):>9.3f}")
    ratio = median(timings["append"]) / median(timings["raw"])
    p90_ratio = percentile(timings["append"], 90) / percentile(timings["raw"], 90)
    added_us = (median(timings["append"]) - median(timings["raw"])) * 1000
    print(f"ratio of medians {ratio:.3f} (p90 ratio {p90_ratio:.3f}; the library adds ~{added_us:.0f} us per append)")
    return [Headline(name="append latency / raw PutItem", figure=f"{ratio:.3f} (median {median(timings['append']):.2f}"
                     f" ms vs {median(timings['raw']):.2f} ms; p90 {percentile(timings['append'], 90):.2f} vs "
                     f"{percentile(timings['raw'], 90):.2f} ms)", target=f"<= {TARGET:.2f}", met=ratio <= TARGET)]


if __name__ == "__main__":
    standalone(__doc__.splitlines()[0], run)
