"""The chaos workload: send the run's sales to the queue, ten per SendMessageBatch."""

import json

from sales import sales


def workload(app):
    sqs, queue = app.client("sqs"), app.resource("SalesQueue")
    batch = sales(app.seed)
    for start in range(0, len(batch), 10):
        entries = [{"Id": str(n), "MessageBody": json.dumps(sale)} for n, sale in enumerate(batch[start:start + 10])]
        answer = sqs.send_message_batch(QueueUrl=queue, Entries=entries)
        assert not answer.get("Failed"), answer["Failed"]
