"""What a seed used, in the units AWS bills (:class:`seglog_report.model.Meter`), from the simulated services'
own counts: DynamoDB's consumed capacity per table, every S3 and SQS call that went through the door, and each
invocation's simulated duration at the memory the template gives its function.

Not counted here: the event source mappings' own polling (the simulated pollers read the stream and the queue
directly, not through the door), so SQS ReceiveMessage and DynamoDB Streams GetRecords are absent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from seglog_awsmodel.metering import s3_request_class
from seglog_report.model import FunctionUse, Meter

if TYPE_CHECKING:
    from seglog_sim.phases import Run

#: Task kinds that are invocations of a template function.
FUNCTION_KINDS = ("api", "router", "worker", "retention")


def meter_of(run: Run) -> Meter:
    rru = wru = 0.0
    for table in run.topology.tables:
        read, write = run.ddb.consumed(table)
        rru += read
        wru += write
    s3_write = s3_read = sqs = ddb = 0
    for key, count in run.cloud.operations.items():
        service, _, operation = key.partition(" ")
        if service == "dynamodb":
            ddb += count
        elif service == "sqs":
            sqs += count
        elif service == "s3":
            kind = s3_request_class(operation)
            s3_write += count if kind == "write" else 0
            s3_read += count if kind == "read" else 0
    specs = {kind: getattr(run.topology, kind) for kind in FUNCTION_KINDS}
    functions = {spec.logical_id: FunctionUse(memory_mb=spec.MemorySize) for spec in specs.values()}
    now = run.world.now
    for task in run.world.tasks:
        spec = specs.get(task.kind)
        if spec is None:
            continue
        use = functions[spec.logical_id]
        use.invocations += 1
        use.billed_ms += math.ceil(((task.ended if task.ended is not None else now) - task.started) * 1000)
    api_requests = functions[specs["api"].logical_id].invocations
    return Meter(dynamodb_read_units=round(rru, 3), dynamodb_write_units=round(wru, 3), dynamodb_requests=ddb,
                 s3_write_requests=s3_write, s3_read_requests=s3_read, sqs_requests=sqs, api_requests=api_requests,
                 functions=functions, appends=run.clients.ledger.appends)
