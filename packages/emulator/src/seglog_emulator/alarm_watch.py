"""The alarm watcher: evaluates the template's CloudWatch alarms as CloudWatch would, in a thread of the supervisor.

It runs while the emulator runs, when the template declares alarms. Each tick::

    1. read the datapoints the emulator's processes appended since the last tick (:mod:`seglog_emulator.metrics`);
    2. sample each queue an alarm watches (AWS/SQS ApproximateNumberOfMessagesVisible: GetQueueAttributes'
       ApproximateNumberOfMessages, which SQS publishes as that metric every minute);
    3. evaluate every alarm with :func:`seglog_awsmodel.alarms.evaluate` (the one model of how CloudWatch decides),
       its periods scaled by ``time_scale``;
    4. log each change of state (``alarm state changed``) and rewrite ``alarms.json`` in the state directory,
       which ``seglog emulate status`` reads.

A dimension that names a template resource is mapped to the name the emulator gives it: a function's logical id
(the name its handlers run under), a table's or queue's physical name on the local stack. Alarm actions are not
sent (there is no SNS here); the status says which alarm would notify.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import structlog

from seglog_awsmodel.alarms import AlarmSpec, AlarmState, DimensionValue, MetricStat, Reference, evaluate, read_alarms
from seglog_awsmodel.config import FUNCTION_TYPE
from seglog_awsmodel.template import Template
from seglog_emulator.metrics import MetricFiles
from seglog_stack.provision import resource_name

log = structlog.get_logger("seglog.emulator.alarms")

#: The watcher's output in the state directory.
ALARMS_FILE: Final = "alarms.json"
_QUEUE_DEPTH: Final = ("AWS/SQS", "ApproximateNumberOfMessagesVisible")

MetricKey = tuple[str, str, tuple[tuple[str, str], ...]]


def metrics_dir(state_dir: Path) -> Path:
    """Where the emulator's processes append their datapoints."""
    return state_dir / "metrics"


@dataclass(frozen=True, kw_only=True)
class AlarmStatus:
    """One alarm as last evaluated."""

    name: str
    state: str
    #: Unix time of the last change of state.
    since: float
    reason: str
    condition: str
    description: str
    #: Whether, deployed, it would notify the AlarmTopicArn.
    notifies: bool


class AlarmWatcher:
    """Evaluates ``template``'s alarms on the emulator's metrics (module docstring)."""

    def __init__(self, template: Template, *, stack: str, parameters: dict[str, Any], state_dir: Path, sqs: Any,
                 time_scale: float = 1.0, clock: Callable[[], float] = time.time) -> None:
        self.template = template
        self.stack = stack
        self.alarms: list[AlarmSpec] = read_alarms(template, parameters)
        self.state_dir = state_dir
        self.sqs = sqs
        self.time_scale = time_scale
        self.clock = clock
        self._files = MetricFiles(metrics_dir(state_dir))
        self._points: dict[MetricKey, list[tuple[float, float]]] = defaultdict(list)
        self._status: dict[str, AlarmStatus] = {}
        self._queue_urls: dict[str, str] = {}
        self._stop = threading.Event()
        shortest = min((a.period for a in self.alarms), default=60) * time_scale
        #: How often it evaluates: several times a period, at most every 5 s.
        self.interval = min(5.0, max(0.2, shortest / 6))
        longest = max((a.period * a.evaluation_periods for a in self.alarms), default=60)
        self._keep = longest * time_scale * 2

    # ------------------------------------------------------------------------------------------ running

    def run(self) -> None:
        log.info("alarm watcher started", alarms=len(self.alarms), time_scale=self.time_scale,
                 every_seconds=round(self.interval, 2))
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as exc:  # a local stack that does not answer this once: try again next tick
                log.warning("alarm evaluation failed", error=str(exc), error_type=type(exc).__name__)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()

    def tick(self) -> list[AlarmStatus]:
        now = self.clock()
        for point in self._files.new_points():
            self._add(point.get("ns"), point.get("m"), point.get("d") or {}, point.get("v"), point.get("t"))
        self._sample_queues(now)
        for alarm in self.alarms:
            self._evaluate(alarm, now)
        self._prune(now)
        self._write(now)
        return list(self._status.values())

    # ------------------------------------------------------------------------------------------ datapoints

    def _add(self, namespace: Any, name: Any, dims: dict[str, Any], value: Any, at: Any) -> None:
        if not isinstance(value, int | float) or not isinstance(at, int | float):
            return
        key = (str(namespace), str(name), tuple(sorted((str(k), str(v)) for k, v in dims.items())))
        self._points[key].append((float(at), float(value)))

    def _sample_queues(self, now: float) -> None:
        for metric in {m for a in self.alarms for m in a.metrics if (m.namespace, m.name) == _QUEUE_DEPTH}:
            dims = self._dimensions(metric)
            queue = dict(dims).get("QueueName")
            if queue is None:
                continue
            url = self._queue_urls.get(queue) or self.sqs.get_queue_url(QueueName=queue)["QueueUrl"]
            self._queue_urls[queue] = url
            attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            self._add(metric.namespace, metric.name, dict(dims),
                      int(attributes["Attributes"]["ApproximateNumberOfMessages"]), now)

    def _dimensions(self, metric: MetricStat) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((name, self._name_of(value)) for name, value in metric.dimensions))

    def _name_of(self, value: DimensionValue) -> str:
        if not isinstance(value, Reference):
            return str(value)
        type_ = str((self.template.resources.get(value.logical_id) or {}).get("Type", ""))
        if type_ == FUNCTION_TYPE:
            return value.logical_id  # the emulator runs a function under its logical id
        return resource_name(self.template.resources, self.stack, value.logical_id)

    def _source(self, metric: MetricStat, start: float, end: float) -> list[float]:
        key = (metric.namespace, metric.name, self._dimensions(metric))
        return [v for t, v in self._points.get(key, ()) if start <= t < end]

    def _prune(self, now: float) -> None:
        for key, points in self._points.items():
            self._points[key] = [(t, v) for t, v in points if t >= now - self._keep]

    # ------------------------------------------------------------------------------------------ states

    def _evaluate(self, alarm: AlarmSpec, now: float) -> None:
        before = self._status.get(alarm.logical_id)
        previous = AlarmState(before.state) if before else AlarmState.INSUFFICIENT_DATA
        result = evaluate(alarm, self._source, now=now, previous=previous, time_scale=self.time_scale)
        since = now
        if before is not None and result.state is previous:
            since = before.since
        elif before is not None:
            log.warning("alarm state changed", alarm=alarm.logical_id, previous=str(previous),
                        state=str(result.state), reason=result.reason)
        self._status[alarm.logical_id] = AlarmStatus(
            name=alarm.logical_id, state=str(result.state), since=since, reason=result.reason,
            condition=alarm.condition(), description=alarm.description, notifies=alarm.notifies)

    def _write(self, now: float) -> None:
        path = self.state_dir / ALARMS_FILE
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"evaluated_at": now, "time_scale": self.time_scale,
                                   "alarms": [asdict(s) for s in self._status.values()]}, indent=1))
        os.replace(tmp, path)


def read_alarm_states(state_dir: Path) -> tuple[float | None, list[AlarmStatus]]:
    """The alarms as the watcher last wrote them: (when, each alarm); (None, []) when it never ran here."""
    try:
        data = json.loads((state_dir / ALARMS_FILE).read_text())
    except (OSError, ValueError):
        return None, []
    return data.get("evaluated_at"), [AlarmStatus(**a) for a in data.get("alarms") or []]
