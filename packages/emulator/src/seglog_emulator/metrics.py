"""The emulator's CloudWatch metrics: datapoints its processes record, for the alarms of the template to evaluate.

When :data:`ENV_VAR` names a directory (the supervisor sets ``<state_dir>/metrics`` for its children, and worker
processes inherit it as a wrapper variable), every emulator process appends datapoints to ``<pid>-<hour>.jsonl``
there (a file per process and hour of the Unix clock, so the reader can delete what it has read once the hour is
past: a long emulator session does not fill the disk), one JSON object a line: ``{"t": unix seconds, "ns":
namespace, "m": metric, "d": {dimension: value}, "v": value}``.
They come from what AWS would meter, read off the structured log lines the emulator already writes
(:class:`Recorder`, a structlog processor):

* ``invocation`` (the invoker's line per invocation): ``AWS/Lambda`` Invocations 1, Errors 1 or 0 (the handler
  raised, timed out or its worker died: AWS Lambda Developer Guide, monitoring-metrics-types, "Errors") and
  Duration, by FunctionName;
* ``poller usage`` of a stream poller: ``AWS/Lambda`` IteratorAge, the largest age of its shards in the period
  (:class:`seglog_emulator.pollers.usage.ShardAges`), by FunctionName;
* any line carrying an embedded-metric-format ``_aws`` member (the snapshot worker's SnapshotsBlocked and
  SnapshotsDeferredLong): each metric it names, with its dimensions' values from the line (CloudWatch User Guide,
  CloudWatch_Embedded_Metric_Format_Specification);
* :func:`put` directly: the DynamoDB throttles the fault injector answers (``AWS/DynamoDB`` Read/WriteThrottleEvents
  by TableName), and the queue depths the alarm watcher samples.

A function's FunctionName here is its logical id, the name the emulator runs it under (AWS_LAMBDA_FUNCTION_NAME).
Recording never raises and never blocks a run: a point that cannot be written is dropped. A line is one
``write`` of a file opened for appending, so lines of concurrent processes do not interleave.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, Final

from seglog_emulator import logfeed

#: The directory datapoints go to; unset (the default), nothing is recorded.
ENV_VAR: Final = "SEGLOG_METRICS_DIR"
#: Seconds each metrics file covers.
HOUR: Final = 3600
#: The invoker's Outcome.SUCCESS (not imported: worker processes load this module at start-up); every other
#: outcome counts as a Lambda Error (packages/emulator/tests/test_metrics.py holds the two equal).
_SUCCESS: Final = "success"

_directory: Path | None = None
#: Points that could not be written.
dropped = 0


def directory() -> Path | None:
    return _directory


def put(namespace: str, name: str, dimensions: Mapping[str, str], value: float, *, at: float | None = None) -> None:
    """Record one datapoint (nothing when metrics are off); never raises."""
    global dropped
    where = _directory
    if where is None:
        return
    now = time.time() if at is None else at
    line = json.dumps({"t": now, "ns": namespace, "m": name, "d": dict(dimensions), "v": float(value)},
                      separators=(",", ":")) + "\n"
    try:
        with open(where / f"{os.getpid()}-{int(now // HOUR)}.jsonl", "a", encoding="utf-8") as f:
            f.write(line)
    except (OSError, TypeError, ValueError):
        dropped += 1


def points_of(event: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str], float]]:
    """The datapoints one structured log line stands for (namespace, metric, dimensions, value)."""
    found: list[tuple[str, str, dict[str, str], float]] = []
    kind = event.get("event")
    if kind == "invocation" and event.get("function"):
        function = {"FunctionName": str(event["function"])}
        found.append(("AWS/Lambda", "Invocations", function, 1.0))
        found.append(("AWS/Lambda", "Errors", function, 0.0 if event.get("outcome") == _SUCCESS else 1.0))
        if isinstance(event.get("duration_ms"), int | float):
            found.append(("AWS/Lambda", "Duration", function, float(event["duration_ms"])))
    elif kind == "poller usage" and isinstance(event.get("shards"), dict) and event["shards"]:
        router = str(event.get("poller", "")).split(".", 1)[0]
        ages = [float(a) for a in event["shards"].values() if isinstance(a, int | float)]
        if router and ages:
            found.append(("AWS/Lambda", "IteratorAge", {"FunctionName": router}, max(ages)))
    directive = event.get("_aws")
    if isinstance(directive, dict):
        for block in directive.get("CloudWatchMetrics") or []:
            for names in block.get("Dimensions") or [[]]:
                dims = {str(n): str(event.get(n, "")) for n in names}
                for metric in block.get("Metrics") or []:
                    value = event.get(metric.get("Name"))
                    if isinstance(value, int | float):
                        found.append((str(block.get("Namespace")), str(metric["Name"]), dims, float(value)))
    return found


class Recorder(logfeed.Tap):
    """Records the datapoints of each line (:func:`points_of`)."""

    def see(self, event: MutableMapping[str, Any]) -> None:
        global dropped
        try:
            for namespace, name, dims, value in points_of(event):
                put(namespace, name, dims, value)
        except Exception:  # a line that is not what it seems: the log line matters more than its metric
            dropped += 1


def install() -> bool:
    """Record this process's datapoints in the directory :data:`ENV_VAR` names, if set; call it after
    :func:`seglog_core.logs.configure` (and read before a worker takes its wrapper variables out). Returns whether
    metrics are on."""
    global _directory
    raw = os.environ.get(ENV_VAR)
    if not raw:
        return False
    _directory = Path(raw)
    _directory.mkdir(parents=True, exist_ok=True)
    logfeed.install_tap(Recorder, first=True)  # first: it sees every line before anything drops it
    return True


class MetricFiles:
    """Reads the datapoints of a metrics directory as they are appended (each file from where it was left), and
    deletes a file read to its end once its hour is two hours past (no alarm looks that far back)."""

    def __init__(self, where: Path, clock: Callable[[], float] = time.time) -> None:
        self.where = where
        self.clock = clock
        self._offsets: dict[Path, int] = {}

    def new_points(self) -> Iterable[dict[str, Any]]:
        yield from self._read()
        self._forget_old()

    def _forget_old(self) -> None:
        current = int(self.clock() // HOUR)
        for path, offset in list(self._offsets.items()):
            hour = path.stem.rpartition("-")[2]
            if hour.isdigit() and int(hour) < current - 1 and offset >= _size(path):
                path.unlink(missing_ok=True)
                del self._offsets[path]

    def _read(self) -> Iterable[dict[str, Any]]:
        for path in sorted(self.where.glob("*.jsonl")):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except OSError:
                continue
            complete = data.rfind(b"\n") + 1  # a line being written is read next time
            self._offsets[path] = offset + complete
            for raw in data[:complete].splitlines():
                try:
                    yield json.loads(raw)
                except ValueError:
                    continue


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
