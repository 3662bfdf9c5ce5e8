"""The emulator's metrics: which datapoints a log line stands for, and files read as they grow."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from seglog_emulator import metrics
from seglog_emulator.faults.botocore_injector import throttled
from seglog_emulator.invoker import Outcome


def test_an_invocation_line_is_an_invocation_an_error_or_not_and_a_duration() -> None:
    ok = metrics.points_of({"event": "invocation", "function": "ApiFunction", "outcome": str(Outcome.SUCCESS),
                            "duration_ms": 12.5})
    assert [("AWS/Lambda", "Invocations", {"FunctionName": "ApiFunction"}, 1.0),
            ("AWS/Lambda", "Errors", {"FunctionName": "ApiFunction"}, 0.0),
            ("AWS/Lambda", "Duration", {"FunctionName": "ApiFunction"}, 12.5)] == ok
    for outcome in (str(o) for o in Outcome if o is not Outcome.SUCCESS):  # the invoker's every other outcome
        errors = [p for p in metrics.points_of({"event": "invocation", "function": "F", "outcome": outcome})
                  if p[1] == "Errors"]
        assert [("AWS/Lambda", "Errors", {"FunctionName": "F"}, 1.0)] == errors, outcome


def test_a_stream_pollers_usage_line_is_the_largest_iterator_age_of_its_shards() -> None:
    line = {"event": "poller usage", "poller": "StreamRouterFunction.Entries", "shards": {"a": 10, "b": 2500}}
    assert [("AWS/Lambda", "IteratorAge", {"FunctionName": "StreamRouterFunction"}, 2500.0)] == \
        metrics.points_of(line)
    assert [] == metrics.points_of({"event": "poller usage", "poller": "SnapshotWorkerFunction.Jobs"})


def test_an_embedded_metric_format_line_is_each_metric_it_names() -> None:
    """The snapshot worker's line (seglog_services.snapshot_worker.count)."""
    line = {"event": "snapshot metric", "FunctionName": "SnapshotWorkerFunction", "SnapshotsBlocked": 1,
            "_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "seglog", "Dimensions": [["FunctionName"]],
                                                            "Metrics": [{"Name": "SnapshotsBlocked",
                                                                         "Unit": "Count"}]}]}}
    assert [("seglog", "SnapshotsBlocked", {"FunctionName": "SnapshotWorkerFunction"}, 1.0)] == \
        metrics.points_of(line)


def test_points_are_appended_and_read_once_each_as_the_files_grow(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_directory", tmp_path)
    files = metrics.MetricFiles(tmp_path)
    metrics.put("n", "m", {"D": "x"}, 1, at=10.0)
    first = list(files.new_points())
    assert [("n", "m", {"D": "x"}, 1.0)] == [(p["ns"], p["m"], p["d"], p["v"]) for p in first]
    (tmp_path / "other.jsonl").write_text('{"t": 1, "ns": "n", "m": "m", "d": {}, "v": 2}\n{"t": 2, "ns"')
    assert [2.0] == [p["v"] for p in files.new_points()]  # the half-written line waits for its end
    assert [] == list(files.new_points())


def test_a_file_read_to_its_end_is_deleted_once_its_hour_is_two_hours_past(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_directory", tmp_path)
    now = [10 * metrics.HOUR + 5.0]
    files = metrics.MetricFiles(tmp_path, clock=lambda: now[0])
    metrics.put("n", "m", {}, 1, at=now[0])
    (old,) = tmp_path.iterdir()
    assert [1.0] == [p["v"] for p in files.new_points()]
    now[0] += metrics.HOUR  # the next hour: kept (an alarm may still look back into it)
    metrics.put("n", "m", {}, 2, at=now[0])
    assert [2.0] == [p["v"] for p in files.new_points()]
    assert old.exists()
    now[0] += metrics.HOUR
    assert [] == list(files.new_points())
    assert not old.exists() and 1 == len(list(tmp_path.iterdir()))


def test_nothing_is_recorded_when_metrics_are_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_directory", None)
    metrics.put("n", "m", {}, 1)
    assert [] == list(tmp_path.iterdir())


def test_an_injected_throttle_is_a_log_line_standing_for_its_tables_throttle_events() -> None:
    """The fault injector runs in worker processes, which write no metric files: it logs each throttle in embedded
    metric format, and the line stands for one Read- or WriteThrottleEvents per table the request touched."""
    with capture_logs() as lines:
        throttled("TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "entries"}},
                                                           {"Update": {"TableName": "segments"}}]})
        throttled("Query", {"TableName": "entries"})
    points = [point for line in lines for point in metrics.points_of(line)]
    assert [("AWS/DynamoDB", "WriteThrottleEvents", {"TableName": "entries"}, 1.0),
            ("AWS/DynamoDB", "WriteThrottleEvents", {"TableName": "segments"}, 1.0),
            ("AWS/DynamoDB", "ReadThrottleEvents", {"TableName": "entries"}, 1.0)] == points
