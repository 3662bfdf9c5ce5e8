"""The alarm model: how CloudWatch decides a state (seglog_awsmodel.alarms.evaluate), and the template's alarms
and dashboard read through it (issue 22, point 1)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest

from seglog_awsmodel.alarms import AlarmSpec, AlarmState, MetricStat, Reference, Term, evaluate, read_alarms
from seglog_awsmodel.config import TemplateConfigError
from seglog_awsmodel.template import Template, load_template

DEPTH = MetricStat(namespace="AWS/SQS", name="ApproximateNumberOfMessagesVisible",
                   dimensions=(("QueueName", "dlq"),), statistic="Maximum", period=60, id="m")


def alarm(**changes: object) -> AlarmSpec:
    spec = dict(logical_id="A", description="", metrics=(DEPTH,), expression=None, period=60, evaluation_periods=3,
                datapoints_to_alarm=2, threshold=0.0, comparison="GreaterThanThreshold", treat_missing="missing")
    spec.update(changes)
    return AlarmSpec(**spec)  # type: ignore[arg-type]


def periods(*values: float | None, period: int = 60) -> object:
    """A source whose k-th period (oldest first, ending at 600 s) holds ``values[k]`` (None: no datapoint)."""
    start = 600 - period * len(values)

    def source(_metric: MetricStat, begin: float, end: float) -> Sequence[float]:
        index = int((begin - start) // period)
        return [values[index]] if 0 <= index < len(values) and values[index] is not None else []  # type: ignore[list-item]
    return source


@pytest.mark.parametrize(("values", "treat", "expected"), [
    ((0, 1, 1), "missing", AlarmState.ALARM),          # 2 of the last 3 breach: DatapointsToAlarm 2
    ((1, 0, 0), "missing", AlarmState.OK),
    ((1, 0, 1), "missing", AlarmState.ALARM),          # M of N need not be consecutive
    ((None, None, None), "missing", AlarmState.INSUFFICIENT_DATA),
    ((None, None, 1), "missing", AlarmState.OK),       # only present values count: 1 breach of 2 needed
    ((None, None, 1), "breaching", AlarmState.ALARM),  # missing counts as breaching
    ((None, None, 1), "notBreaching", AlarmState.OK),
    ((None, None, None), "notBreaching", AlarmState.OK),
])
def test_m_of_n_with_each_treatment_of_missing_data(values: tuple[float | None, ...], treat: str,
                                                   expected: AlarmState) -> None:
    found = evaluate(alarm(treat_missing=treat), periods(*values), now=600.0)  # type: ignore[arg-type]
    assert expected is found.state, found.reason
    assert values == found.values


def test_ignore_keeps_the_state_when_every_period_is_missing_and_dynamodb_alarms_always_ignore() -> None:
    nothing = periods(None, None, None)
    assert AlarmState.ALARM is evaluate(alarm(treat_missing="ignore"), nothing, now=600.0,  # type: ignore[arg-type]
                                        previous=AlarmState.ALARM).state
    throttles = MetricStat(namespace="AWS/DynamoDB", name="WriteThrottleEvents", dimensions=(("TableName", "t"),),
                           statistic="Sum", period=60)
    dynamodb = alarm(metrics=(throttles,), treat_missing="notBreaching")
    assert dynamodb.ignores_missing
    assert AlarmState.ALARM is evaluate(dynamodb, nothing, now=600.0,  # type: ignore[arg-type]
                                        previous=AlarmState.ALARM).state


def test_only_complete_periods_count_and_the_time_scale_shrinks_them() -> None:
    """At 630 s the period 600-660 is not over: the range is 420-600. With time_scale 0.1 a 60 s period is 6 s."""
    seen: list[tuple[float, float]] = []

    def source(_metric: MetricStat, begin: float, end: float) -> Sequence[float]:
        seen.append((begin, end))
        return []
    evaluate(alarm(), source, now=630.0)
    assert [(420.0, 480.0), (480.0, 540.0), (540.0, 600.0)] == seen
    seen.clear()
    evaluate(alarm(), source, now=63.5, time_scale=0.1)
    assert [pytest.approx((42.0, 48.0)), pytest.approx((48.0, 54.0)), pytest.approx((54.0, 60.0))] == seen


def test_statistics_aggregate_a_periods_datapoints() -> None:
    def source(_metric: MetricStat, begin: float, end: float) -> Sequence[float]:
        return [1.0, 5.0, 3.0]
    for statistic, value in (("Sum", 9.0), ("Maximum", 5.0), ("Minimum", 1.0), ("Average", 3.0),
                             ("SampleCount", 3.0)):
        metric = MetricStat(namespace="n", name="m", dimensions=(), statistic=statistic, period=60)
        found = evaluate(alarm(metrics=(metric,), evaluation_periods=1, datapoints_to_alarm=1), source, now=600.0)
        assert (value,) == found.values, statistic


def test_a_fill_expression_gives_quiet_periods_a_zero() -> None:
    reads = MetricStat(namespace="AWS/DynamoDB", name="ReadThrottleEvents", dimensions=(), statistic="Sum",
                       period=60, id="r")
    writes = MetricStat(namespace="AWS/DynamoDB", name="WriteThrottleEvents", dimensions=(), statistic="Sum",
                        period=60, id="w")

    def source(metric: MetricStat, begin: float, end: float) -> Sequence[float]:
        return [2.0] if metric.id == "w" and begin == 540 else []
    spec = alarm(metrics=(reads, writes), expression=(Term("r", 0.0), Term("w", 0.0)), evaluation_periods=2,
                 datapoints_to_alarm=1)
    found = evaluate(spec, source, now=600.0)
    assert (0.0, 2.0) == found.values
    assert AlarmState.ALARM is found.state
    assert AlarmState.OK is evaluate(spec, source, now=720.0).state  # quiet periods are 0, not missing


# ------------------------------------------------------------------------------------------ the template


#: What each watched condition is, in the template (issue 22: DLQ depth, the stream's OnFailure queue, iterator
#: age, blocked snapshots, function errors and throttles, DynamoDB throttles).
FUNCTIONS = ("ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction", "RetentionFunction",
             "SnapshotSweepFunction")


def test_the_template_watches_every_condition_the_issue_names() -> None:
    template = load_template()
    alarms = {a.logical_id: a for a in read_alarms(template)}
    watched = {(m.namespace, m.name, tuple((k, str(v)) for k, v in m.dimensions))
               for a in alarms.values() for m in a.metrics}
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible",
            (("QueueName", "SnapshotDeadLetterQueue.QueueName"),)) in watched
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible",
            (("QueueName", "StreamFailureQueue.QueueName"),)) in watched
    # The queue the router's OnFailure names is the one watched.
    router = template.resources["StreamRouterFunction"]["Properties"]["Events"]["Entries"]["Properties"]
    assert {"Fn::GetAtt": ["StreamFailureQueue", "Arn"]} == router["DestinationConfig"]["OnFailure"]["Destination"]
    assert ("AWS/Lambda", "IteratorAge", (("FunctionName", "StreamRouterFunction"),)) in watched
    for metric in ("SnapshotsBlocked", "SnapshotsDeferredLong"):
        assert ("seglog", metric, (("FunctionName", "SnapshotWorkerFunction"),)) in watched
    for function in FUNCTIONS:
        for metric in ("Errors", "Throttles"):
            assert ("AWS/Lambda", metric, (("FunctionName", function),)) in watched
    for table in template.of_type("AWS::DynamoDB::Table"):
        for metric in ("ReadThrottleEvents", "WriteThrottleEvents"):
            assert ("AWS/DynamoDB", metric, (("TableName", table),)) in watched
    # Every alarm's threshold is exceeded by its first bad datapoint, except the iterator age's (a parameter).
    ages = alarms["StreamIteratorAgeAlarm"]
    assert 300000 == ages.threshold and 3 == ages.evaluation_periods
    assert {0.0} == {a.threshold for name, a in alarms.items() if name != "StreamIteratorAgeAlarm"}
    assert not any(a.notifies for a in alarms.values())


def test_alarms_notify_the_topic_parameter_when_it_is_set() -> None:
    topic = "arn:aws:sns:eu-west-1:123456789012:ops"
    alarms = read_alarms(load_template(), {"AlarmTopicArn": topic})
    assert all(a.notifies for a in alarms)
    raw = load_template().resources["SnapshotDeadLetterAlarm"]["Properties"]
    assert {"Fn::If": ["NotifyAlarms", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]} == raw["AlarmActions"]
    assert raw["AlarmActions"] == raw["OKActions"]


def test_the_dashboard_shows_every_alarm_and_every_alarmed_metric() -> None:
    template = load_template()
    (dashboard,) = template.of_type("AWS::CloudWatch::Dashboard").values()
    body_text = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    references = set(re.findall(r"\$\{([^}]+)\}", body_text))
    for ref in references:  # every ${...} is a parameter, a pseudo parameter or a resource (attribute)
        assert ref.startswith("AWS::") or ref in template.body["Parameters"] or \
            ref.split(".")[0] in template.resources, ref
    # A reference outside quotes is a number (the annotation's value): only a Number parameter may be one.
    bare = re.findall(r'(?<!")\$\{([^}]+)\}(?!")', body_text)
    assert ["StreamIteratorAgeAlarmMs"] == bare
    assert all(template.body["Parameters"][name]["Type"] == "Number" for name in bare)
    body = json.loads(re.sub(r'(?<!")\$\{([^}]+)\}(?!")', "0", body_text))
    shown_alarms = {a for w in body["widgets"] if w["type"] == "alarm" for a in w["properties"]["alarms"]}
    alarms = read_alarms(template)
    assert {f"${{{a.logical_id}.Arn}}" for a in alarms} == shown_alarms
    drawn = {(m[0], m[1], m[2], m[3]) for w in body["widgets"] if w["type"] == "metric"
             for m in w["properties"]["metrics"]}
    for a in alarms:
        for m in a.metrics:
            ((dimension, value),) = m.dimensions
            assert isinstance(value, Reference)
            assert (m.namespace, m.name, dimension, f"${{{value}}}") in drawn, (a.logical_id, m.label())


def test_an_expression_the_model_cannot_evaluate_is_refused_naming_the_alarm(tmp_path: object) -> None:
    body = {"Resources": {"Odd": {"Type": "AWS::CloudWatch::Alarm", "Properties": {
        "Metrics": [{"Id": "a", "ReturnData": False, "MetricStat": {"Metric": {"Namespace": "n", "MetricName": "m"},
                                                                    "Period": 60, "Stat": "Sum"}},
                    {"Id": "e", "Expression": "a * 2", "ReturnData": True}],
        "EvaluationPeriods": 1, "Threshold": 1, "ComparisonOperator": "GreaterThanThreshold"}}}}
    with pytest.raises(TemplateConfigError, match=r"Odd: Expression 'a \* 2'.*sums of metric ids and FILL"):
        read_alarms(Template(path=tmp_path, body=body))  # type: ignore[arg-type]
