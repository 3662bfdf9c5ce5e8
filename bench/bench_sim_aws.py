"""Measure the simulated SQS and S3 (seglog_sim.aws): calls per second, in process, one core.

Run: uv run --no-sync python -m bench.bench_sim_aws [N]

The simulator needs >= 1,000 worlds a minute, each making a few hundred calls into these models: a model call must
cost a few microseconds, not milliseconds. Prints one line per operation, through the boto3-shaped client (what
the adapters call) and, for the queue and the bucket, through seglog's own adapters (SqsJobQueue, S3BlobStore).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

from seglog_aws.s3_blob_store import S3BlobStore
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_core.schema import SnapshotJob
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.aws.sqs import SimSQS, SimSQSClient


def rate(label: str, n: int, run: Callable[[int], None]) -> float:
    """Best of three runs of ``run(n)``; prints and returns calls per second."""
    best = min(_timed(run, n) for _ in range(3))
    per_second = n / best
    print(f"{label:<44} {per_second:>12,.0f} calls/s   {best / n * 1e6:6.2f} µs/call")
    return per_second


def _timed(run: Callable[[int], None], n: int) -> float:
    start = time.perf_counter()
    run(n)
    return time.perf_counter() - start


def main(n: int = 20_000) -> None:
    clock = [0.0]
    sqs = SimSQS(clock=lambda: clock[0], rng=random.Random(1))
    url = sqs.create_queue("jobs")
    client = SimSQSClient.of(sqs)
    body = '{"log":"0f8e2f5c-5d1e-4a53-9b0b-6a2f1f0e9c11","segment":2,"entry":40}'
    queue = SqsJobQueue(client, queue_url=url)
    job = SnapshotJob(log="0f8e2f5c-5d1e-4a53-9b0b-6a2f1f0e9c11", segment=2, entry=40)

    def send(k: int) -> None:
        for _ in range(k):
            client.send_message(QueueUrl=url, MessageBody=body)

    def receive_delete(k: int) -> None:
        # A queue about as deep as a world's (tens of messages): receive one, delete it, send its successor.
        for _ in range(k):
            [m] = client.receive_message(QueueUrl=url, MaxNumberOfMessages=1,
                                         MessageSystemAttributeNames=["All"])["Messages"]
            client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            client.send_message(QueueUrl=url, MessageBody=body)

    def adapter_send(k: int) -> None:
        for _ in range(k):
            queue.send(job)

    rate("SQS SendMessage", n, send)
    client.purge_queue(QueueUrl=url)
    send(50)
    rate("SQS ReceiveMessage+DeleteMessage(+Send) x1", n, receive_delete)
    rate("SqsJobQueue.send", n, adapter_send)

    s3 = SimS3()
    s3.create_bucket("b")
    s3_client = SimS3Client.of(s3)
    blobs = S3BlobStore(s3_client, bucket="b")
    chunk = bytes(range(256)) * 16  # 4 KB, a snapshot chunk's order of size
    keys = [f"snapshots/log/0/{i % 200}" for i in range(n)]

    def put(k: int) -> None:
        for key in keys[:k]:
            s3_client.put_object(Bucket="b", Key=key, Body=chunk, Tagging="discardable=true")

    def get(k: int) -> None:
        for key in keys[:k]:
            s3_client.get_object(Bucket="b", Key=key)["Body"].read()

    def blob_round_trip(k: int) -> None:
        for key in keys[:k]:
            blobs.put(key, chunk)
            blobs.get(key)

    rate("S3 PutObject (4 KB, tagged)", n, put)
    rate("S3 GetObject (4 KB)", n, get)
    rate("S3BlobStore.put+get (4 KB) x1", n, blob_round_trip)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
