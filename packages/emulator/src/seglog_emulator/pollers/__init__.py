"""Event source mapping pollers: what Lambda runs between an event source and a function (DESIGN §9).

* :class:`StreamPoller` — a DynamoDB stream: shards parent before child, one batch in flight per shard,
  checkpoints, partial batch failures, bisect, retries, record age, OnFailure.
* :class:`QueuePoller` — an SQS queue: concurrent batches, visibility, deletes, partial batch failures.

Both hand their batches to a :class:`seglog_emulator.invoker.LambdaInvoker` and take their settings, names
and defaults from the template (:mod:`seglog_awsmodel.config`).
"""

from seglog_emulator.pollers.queue import QueuePoller
from seglog_emulator.pollers.stream import StreamPoller

__all__ = ["QueuePoller", "StreamPoller"]
