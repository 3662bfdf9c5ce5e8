"""How AWS bills a request: the capacity a DynamoDB answer consumed, read or write, and S3's request tiers.

The emulator's request counts (a worker's :class:`seglog_emulator.usage.UsageCounter`) and the simulator's ledger
price calls with these rules; seglog's stores meter their own calls with :class:`seglog_aws.meter.Meter`, which
ships in the function's artifact and follows the same rules (a parity test in packages/aws_adapter/tests holds
the two together: the tool and the application stay apart, issue 36).
"""

from __future__ import annotations

from typing import Any, Final

#: DynamoDB operations whose consumed capacity is write capacity.
WRITE_OPERATIONS: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


def consumed_units(operation: str, consumed: Any) -> tuple[float, float]:
    """``(read, write)`` capacity units of one answer's ``ConsumedCapacity`` (a dict, a list of dicts, or None).

    With ``ReturnConsumedCapacity=TOTAL`` DynamoDB reports only ``CapacityUnits``; they are read or write units by
    the operation's kind (Amazon DynamoDB Developer Guide, "Read/write capacity mode").
    """
    items = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    read = write = 0.0
    for item in items:
        read += float(item.get("ReadCapacityUnits", 0.0))
        write += float(item.get("WriteCapacityUnits", 0.0))
        if "ReadCapacityUnits" not in item and "WriteCapacityUnits" not in item:
            total = float(item.get("CapacityUnits", 0.0))
            if operation in WRITE_OPERATIONS:
                write += total
            else:
                read += total
    return read, write


def s3_request_class(operation: str) -> str:
    """How S3 bills a request: "write" (PUT, COPY, POST, LIST), "free" (DELETE, abort), or "read" (GET and
    every other request), per the Amazon S3 pricing page's request tiers."""
    if operation.startswith(("Delete", "Abort")):
        return "free"
    if operation.startswith(("Put", "Copy", "Post", "List", "Create", "Upload", "Complete")):
        return "write"
    return "read"
