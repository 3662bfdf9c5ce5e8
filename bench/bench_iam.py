"""What IAM enforcement costs per AWS call in the emulator's workers (no stack needed).

Run: uv run --no-sync python -m bench.bench_iam [calls]

Prints, for the ApiFunction's role from template.yaml (through the SAM transform):
* the decision alone (FunctionPermissions.decide) for an allowed and a denied request;
* a whole botocore call with and without the guard, against a stand-in service (a ``before-call`` handler that
  answers at once), so the difference is the guard's hooks: parameter capture, operation mapping, evaluation;
* how long the template takes to turn into permissions (once per emulator child).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config

from seglog_awsmodel.template import load_template
from seglog_emulator.iam.guard import IamGuard
from seglog_emulator.iam.roles import function_permissions

STACK, REGION = "bench", "us-east-1"
TABLE = f"{STACK}-EntriesTable"


def per_call(run: Callable[[], object], calls: int) -> float:
    """Microseconds per call, best of three rounds."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def service(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse("", 200, HTTPHeaders(), None), {"ResponseMetadata": {"HTTPStatusCode": 200}}


def ddb_client(guard: IamGuard | None) -> Any:
    made = boto3.client("dynamodb", region_name=REGION, endpoint_url="http://127.0.0.1:9", aws_access_key_id="x",
                        aws_secret_access_key="x", config=Config(retries={"max_attempts": 1}))
    if guard is not None:
        guard.attach(made)
    made.meta.events.register_last("before-call.*.*", service)
    return made


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    template = load_template()
    started = time.perf_counter()
    roles = function_permissions(template, stack=STACK, region=REGION)
    transform_ms = (time.perf_counter() - started) * 1000
    api = roles["ApiFunction"]
    table = f"arn:aws:dynamodb:{REGION}:000000000000:table/{TABLE}"
    decide_allowed = per_call(lambda: api.decide("dynamodb:PutItem", table), calls)
    decide_denied = per_call(lambda: api.decide("dynamodb:DeleteItem", table), calls)
    key = {"G": {"B": b"0123456789abcdef"}, "N": {"N": "1"}}
    plain, guarded = ddb_client(None), ddb_client(IamGuard(api))
    call_plain = per_call(lambda: plain.get_item(TableName=TABLE, Key=key), calls)
    call_guarded = per_call(lambda: guarded.get_item(TableName=TABLE, Key=key), calls)
    print(f"## IAM enforcement cost ({calls} calls per round, best of 3)")
    print(f"template -> permissions (SAM transform, 4 functions): {transform_ms:8.1f} ms once per child")
    print(f"decision, allowed PutItem:                           {decide_allowed:8.1f} µs")
    print(f"decision, denied DeleteItem (every statement read):  {decide_denied:8.1f} µs")
    print(f"botocore GetItem, no guard (stand-in service):       {call_plain:8.1f} µs")
    print(f"botocore GetItem, guarded:                           {call_guarded:8.1f} µs")
    print(f"overhead per call:                                   {call_guarded - call_plain:8.1f} µs "
          f"({(call_guarded - call_plain) / 4500 * 100:.1f}% of a ~4.5 ms DynamoDB Local call, DESIGN §8)")


if __name__ == "__main__":
    main()
