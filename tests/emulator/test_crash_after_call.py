"""crash_after_call on the local stack (issue 37, point 1): a queue-triggered function of an app that declares no
crash points and no invocation hook is killed (SIGKILL of its worker) as its first AWS call returns, so the call's
effect stands and the rest of the handler never runs; the event source mapping then does what Lambda does after a
runtime crash: nothing is deleted, and the message is delivered again after its visibility timeout (AWS Lambda
Developer Guide, "Understanding retry behavior in Lambda"; with-sqs)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from fidelity.conftest import running
from fidelity.drivers import wait_until
from seglog_awsmodel.config import QueueMapping
from seglog_emulator.faults import FaultPlan
from seglog_emulator.faults.call_crash import CRASH_AFTER_CALL_EVENT
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.invoker import FunctionSpec, LambdaInvoker
from seglog_emulator.pollers.queue import QueuePoller
from seglog_stack.clients import local_client

pytestmark = pytest.mark.stack

#: A plain handler: one AWS call (SendMessage to a second queue: a side effect), with a line before and after it.
HANDLER = '''
import json, os
import boto3

def handler(event, context):
    sqs = boto3.client("sqs")
    for record in event["Records"]:
        count = record["attributes"]["ApproximateReceiveCount"]
        with open(os.environ["TRACE"], "a") as trace:
            trace.write(json.dumps({"phase": "before", "count": count}) + "\\n")
        sqs.send_message(QueueUrl=os.environ["EFFECTS"], MessageBody=count)
        with open(os.environ["TRACE"], "a") as trace:
            trace.write(json.dumps({"phase": "after", "count": count}) + "\\n")
    return {}
'''


def test_a_function_with_no_crash_points_is_killed_after_its_first_call_and_its_message_comes_back(
        stacks: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = stacks.deployment("dynamodb-local")
    sqs = local_client("sqs", endpoint_url=deployment.endpoints["sqs"], region=deployment.region)
    name = f"cac-{uuid.uuid4().hex[:8]}"
    # Long enough for the redelivery's cold start on a loaded machine (1.5 s of Init and 0.5 s of run went past 2 s
    # with three test workers: the message came back a third time, and the test saw two completions).
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "6"})["QueueUrl"]
    effects = sqs.create_queue(QueueName=f"{name}-effects")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "plain.py").write_text(HANDLER)
    trace = tmp_path / "trace.jsonl"
    runtime = FaultRuntime(FaultPlan.from_mapping(
        {"seed": 11, "faults": {"crash_after_call": {"rate": 1.0, "call": [1, 1]}}}), tmp_path / "faults")
    for variable, value in runtime.env().items():  # the worker records the crash in the run's fault log
        monkeypatch.setenv(variable, value)
    # What the worker's SDK gets from the invoker's environment: the endpoint and (dummy) credentials.
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", deployment.endpoints["sqs"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    spec = FunctionSpec(logical_id="PlainFunction", Handler="plain.handler",
                        Environment={"TRACE": str(trace), "EFFECTS": effects})
    try:
        with (tmp_path / "worker.log").open("wb") as worker_log, \
                LambdaInvoker(spec, code=[tmp_path / "app"], stderr=worker_log) as invoker:
            assert () == invoker.crash_points and not invoker.hooked  # nothing declared: an ordinary app
            poller = QueuePoller(QueueMapping(function="PlainFunction", event="Jobs", queue="Jobs"), invoker, sqs,
                                 queue_url=url, queue_arn=arn, region=deployment.region,
                                 faults=runtime.schedule("poller"))
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"order": "o-1"}))
            with running(poller):
                wait_until(lambda: any(f["kind"] == "crash_after_call" for f in runtime.injected()),
                           "the first delivery's crash", timeout=30)
                runtime.stop()  # faults off: the next delivery runs to the end
                wait_until(lambda: '"after"' in (trace.read_text() if trace.exists() else ""),
                           "a delivery that completes", timeout=30)
                wait_until(lambda: ("0", "0") == tuple(sqs.get_queue_attributes(
                    QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                  "ApproximateNumberOfMessagesNotVisible"])["Attributes"].values()),
                           "the message to be deleted", timeout=30, holds=1.0)
        lines = [json.loads(line) for line in trace.read_text().splitlines()]
        crashes = [f for f in runtime.injected() if f["kind"] == "crash_after_call"]
        logged = [json.loads(line) for line in (tmp_path / "worker.log").read_text().splitlines()
                  if CRASH_AFTER_CALL_EVENT in line]
        effects_sent = sqs.receive_message(QueueUrl=effects, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    finally:
        sqs.delete_queue(QueueUrl=url)
        sqs.delete_queue(QueueUrl=effects)

    killed, completed = len(crashes), [line for line in lines if line["phase"] == "after"]
    assert killed >= 1 and all({"call": 1} == f["params"] for f in crashes)
    # Each killed delivery got as far as its call and no further; then the message came back, one receive higher.
    assert [{"phase": "before", "count": str(n)} for n in range(1, killed + 1)] == lines[:killed]
    assert [{"phase": "after", "count": str(killed + 1)}] == completed
    assert killed == len(logged) and {("sqs", "SendMessage", 1)} == {
        (line["service"], line["operation"], line["call"]) for line in logged}
    # The killing call's side effect stands: every delivery sent its message, the killed ones too.
    assert killed + 1 == len(effects_sent.get("Messages", []))
