"""The template's alarms in the emulator, on the real local stack (issue 22, point 1): a condition provoked for
real puts its alarm in ALARM, `seglog emulate status` says so, and the alarm goes back to OK when the condition
ends — a job parked in the dead-letter queue, and a stream the router cannot get past.

The alarms' periods run twenty times faster than CloudWatch's (``alarm_scale`` 0.05: a 60 s period passes in 3 s;
the stream poller then logs its IteratorAge twice a period, seglog_emulator.pollers.usage.usage_seconds); the rules
are CloudWatch's (seglog_awsmodel.alarms), the datapoints the emulator's own (its processes' log lines and the
queues' real attributes)."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from emulator.test_supervisor import settings_for, wait_for
from seglog_awsmodel.faults import FaultKind
from seglog_cli.main import cli
from seglog_client import SeglogClient, set_cell
from seglog_emulator.alarm_watch import metrics_dir
from seglog_emulator.faults import FaultPlan
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.metrics import MetricFiles
from seglog_emulator.status import read_status
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack import local

pytestmark = pytest.mark.stack

#: Alarm periods twenty times faster than CloudWatch's: the test waits on whole periods, four times over.
SCALE = 0.05
#: The stream router's iterator age the test's StreamIteratorAgeAlarm fires above (ms).
AGE_THRESHOLD_MS = 1500


def state_of(state: Path, alarm: str) -> str | None:
    found = {a.name: a.state for a in read_status(state).alarms}
    return found.get(alarm)


def test_alarms_go_to_alarm_when_provoked_and_back_to_ok(chaos_deployment: local.LocalDeployment, tmp_path: Path,
                                                         lambda_artifact: Path) -> None:
    state = tmp_path / "state"
    faults = FaultRuntime(FaultPlan.from_flags(str(FaultKind.ROUTER_CRASH_AFTER_SEND), rate=1.0, seed=3),
                          tmp_path / "faults")
    faults.stop()  # armed later, for the stream part
    settings = settings_for(chaos_deployment, state, lambda_artifact)
    settings = dataclasses.replace(settings, alarm_scale=SCALE,
                                   parameters={**CHAOS_PARAMETERS, "StreamIteratorAgeAlarmMs": AGE_THRESHOLD_MS})
    supervisor = Supervisor(settings, faults=faults)
    assert 18 == len(supervisor.alarms.alarms)
    sqs = backend_of(chaos_deployment).sqs
    dlq = resources_of(chaos_deployment).dlq_url
    supervisor.start()
    try:
        supervisor.wait_ready()
        wait_for(lambda: state_of(state, "SnapshotDeadLetterAlarm") == "OK", 30, "the first evaluation: OK")
        assert {"OK"} == {a.state for a in read_status(state).alarms}, read_status(state).render()

        # 1. A job parked in the dead-letter queue.
        sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({"log": str(uuid.uuid4()), "segment": 0, "entry": 9}))
        wait_for(lambda: state_of(state, "SnapshotDeadLetterAlarm") == "ALARM", 30, "the DLQ alarm to fire")
        shown = CliRunner().invoke(cli, ["emulate", "status", "--state-dir", str(state)])
        assert "ALARM SnapshotDeadLetterAlarm" in shown.output, shown.output
        assert "ApproximateNumberOfMessagesVisible" in shown.output, shown.output
        as_json = CliRunner().invoke(cli, ["emulate", "status", "--json", "--state-dir", str(state)])
        assert ["SnapshotDeadLetterAlarm"] == json.loads(as_json.output)["in_alarm"], as_json.output
        for message in sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]:
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])
        wait_for(lambda: state_of(state, "SnapshotDeadLetterAlarm") == "OK", 30, "the DLQ alarm back to OK")

        # 2. A stalled stream: every router invocation dies after sending (a router that cannot get past a batch,
        # retried without end: MaximumRetryAttempts -1), so the shard's iterator age grows.
        faults.start()
        api = SeglogClient(supervisor.api_url, credentials=supervisor.settings.api_credentials[0])
        log_id = api.create().log_id
        for n in range(int(CHAOS_PARAMETERS["SnapshotEvery"]) + 2):  # past a Snapshot entry, which the router reads
            api.append(log_id, set_cell(f"A{n + 1}", n))
        wait_for(lambda: state_of(state, "StreamIteratorAgeAlarm") == "ALARM", 90, "the iterator age alarm to fire")
        # Each crash was metered as an error of the router (what its Errors alarm sums over 5 minutes).
        points = list(MetricFiles(metrics_dir(state)).new_points())
        router_errors = [p["v"] for p in points
                         if p["m"] == "Errors" and p["d"] == {"FunctionName": "StreamRouterFunction"}]
        assert router_errors.count(1.0) >= 2, router_errors  # the batch, and at least one retry of it
        faults.stop()
        wait_for(lambda: state_of(state, "StreamIteratorAgeAlarm") == "OK", 60, "the iterator age alarm back to OK")
    finally:
        supervisor.stop()
