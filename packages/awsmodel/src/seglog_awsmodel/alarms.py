"""The template's CloudWatch alarms, and how CloudWatch decides an alarm's state: one model, which the emulator
runs on the metrics it meters (``seglog emulate status``) and which tests hold the template to.

Reading (:func:`read_alarms`): every ``AWS::CloudWatch::Alarm`` of the template becomes an :class:`AlarmSpec`.
A single-metric alarm (Namespace, MetricName, Dimensions, Statistic, Period) has one :class:`MetricStat`; a
metric-math alarm (``Metrics``) has its MetricStats and the one expression whose ReturnData is true. A dimension
value that names a resource of the template (``!Ref Function``, ``!GetAtt Queue.QueueName``) stays a
:class:`Reference`, for the driver to map to the name its own resource has; parameters are substituted.

Evaluating (:func:`evaluate`), as the CloudWatch User Guide describes it (AlarmThatSendsEmail, "Evaluating an
alarm"; alarms-and-missing-data)::

    1. Each period of Period seconds, aligned to multiples of Period, has one value: the statistic (Sum, Maximum,
       Minimum, Average, SampleCount) of the datapoints in it, or none ("missing").
    2. The evaluation range is the last EvaluationPeriods complete periods. A present value breaches when
       ``value <op> Threshold`` holds (ComparisonOperator).
    3. Missing values are treated as TreatMissingData says: breaching, notBreaching, ignore (the state stays as
       it is), missing (the default: when every period of the range is missing the alarm is INSUFFICIENT_DATA,
       otherwise only the present ones count). Alarms on an AWS/DynamoDB metric always ignore missing data
       (PutMetricAlarm, TreatMissingData: "Alarms that evaluate metrics in the AWS/DynamoDB namespace always
       ignore missing data").
    4. ALARM when at least DatapointsToAlarm (default EvaluationPeriods) values of the range breach; OK otherwise.

What is simpler than CloudWatch: with ``missing``, CloudWatch may look further back than the range for enough
datapoints; here only the range counts. A metric-math expression may be a sum of metric ids and ``FILL(id,
number)`` terms, nothing else (the template's DynamoDB throttle alarms); another expression is refused when the
template is read, with what is supported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from seglog_awsmodel.config import TemplateConfigError
from seglog_awsmodel.template import Template

ALARM_TYPE: Final = "AWS::CloudWatch::Alarm"


class AlarmState(StrEnum):
    OK = "OK"
    ALARM = "ALARM"
    INSUFFICIENT_DATA = "INSUFFICIENT_DATA"


#: ComparisonOperator -> the test a value passes to breach (PutMetricAlarm; anomaly-band operators are refused).
COMPARISONS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}
_SYMBOLS: Final = {"GreaterThanThreshold": ">", "GreaterThanOrEqualToThreshold": ">=", "LessThanThreshold": "<",
                   "LessThanOrEqualToThreshold": "<="}
STATISTICS: Final[Mapping[str, Callable[[Sequence[float]], float]]] = {
    "Sum": math.fsum, "Maximum": max, "Minimum": min, "Average": lambda v: math.fsum(v) / len(v),
    "SampleCount": lambda v: float(len(v)),
}
TREAT_MISSING: Final = frozenset({"breaching", "notBreaching", "ignore", "missing"})


@dataclass(frozen=True)
class Reference:
    """A dimension value naming a template resource: ``!Ref Logical`` (attribute None) or ``!GetAtt
    Logical.Attribute``."""

    logical_id: str
    attribute: str | None = None

    def __str__(self) -> str:
        return self.logical_id if self.attribute is None else f"{self.logical_id}.{self.attribute}"


DimensionValue = str | Reference


@dataclass(frozen=True)
class MetricStat:
    """One metric of an alarm, with how its periods are aggregated."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, DimensionValue], ...]
    statistic: str
    #: Seconds.
    period: int
    #: The metric-math id (``m1``; the alarm's logical id for a single-metric alarm).
    id: str = "m"

    def label(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.dimensions)
        return f"{self.namespace} {self.name} ({dims}) {self.statistic}/{self.period}s"


@dataclass(frozen=True)
class Term:
    """One term of a sum expression: a metric id, with the value a missing period gets (None: stays missing)."""

    metric_id: str
    fill: float | None = None


@dataclass(frozen=True)
class AlarmSpec:
    logical_id: str
    description: str
    metrics: tuple[MetricStat, ...]
    #: The expression whose value is compared (None: the one metric's value).
    expression: tuple[Term, ...] | None
    #: Seconds of each period the alarm compares (the metrics' period).
    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing: str
    #: Whether the alarm has actions (AlarmActions or OKActions) once deployed.
    notifies: bool = False
    expression_text: str | None = field(default=None, compare=False)

    def condition(self) -> str:
        what = self.expression_text or self.metrics[0].label()
        return f"{what} {_SYMBOLS[self.comparison]} {self.threshold:g}"

    @property
    def ignores_missing(self) -> bool:
        """Alarms on one AWS/DynamoDB metric keep their state on missing data, whatever TreatMissingData says."""
        return self.expression is None and self.metrics[0].namespace == "AWS/DynamoDB"


@dataclass(frozen=True)
class Evaluation:
    state: AlarmState
    #: Why, the way CloudWatch's StateReason says it.
    reason: str
    #: The range's values, oldest first (None: missing).
    values: tuple[float | None, ...]


#: The datapoints of ``metric`` recorded in ``[start, end)`` (Unix seconds): its raw values, in any order.
Source = Callable[[MetricStat, float, float], Sequence[float]]


def evaluate(alarm: AlarmSpec, source: Source, *, now: float, previous: AlarmState = AlarmState.INSUFFICIENT_DATA,
             time_scale: float = 1.0) -> Evaluation:
    """The state ``alarm`` has at ``now``, from ``source``'s datapoints (steps 1-4 of the module docstring).

    Args:
        previous: the state before this evaluation (what ``ignore`` keeps).
        time_scale: seconds of the caller's clock per second of the alarm's (an emulator running a 60 s period
            in 3 s passes 0.05).
    """
    length = alarm.period * time_scale
    end = math.floor(now / length) * length
    values = tuple(_value(alarm, source, end - (k + 1) * length, end - k * length)
                   for k in reversed(range(alarm.evaluation_periods)))
    missing = "ignore" if alarm.ignores_missing else alarm.treat_missing
    breaching = [v is not None and COMPARISONS[alarm.comparison](v, alarm.threshold) for v in values]
    absent = sum(v is None for v in values)
    breaches = sum(breaching) + (absent if missing == "breaching" else 0)
    shown = ", ".join("missing" if v is None else f"{v:g}" for v in values)
    of = f"{breaches} of the last {len(values)} datapoints [{shown}]"
    if absent == len(values) and missing in ("ignore", "missing"):
        if missing == "ignore":
            return Evaluation(previous, f"no datapoints in the last {len(values)} periods: state kept (ignore)",
                              values)
        return Evaluation(AlarmState.INSUFFICIENT_DATA,
                          f"no datapoints in the last {len(values)} periods (TreatMissingData missing)", values)
    needs = f"ALARM needs {alarm.datapoints_to_alarm}: {_SYMBOLS[alarm.comparison]} {alarm.threshold:g}"
    state = AlarmState.ALARM if breaches >= alarm.datapoints_to_alarm else AlarmState.OK
    return Evaluation(state, f"{of} crossed the threshold ({needs})", values)


def _value(alarm: AlarmSpec, source: Source, start: float, end: float) -> float | None:
    by_id = {m.id: _aggregate(m, source(m, start, end)) for m in alarm.metrics}
    if alarm.expression is None:
        return by_id[alarm.metrics[0].id]
    terms = [by_id[t.metric_id] if by_id[t.metric_id] is not None else t.fill for t in alarm.expression]
    if any(t is None for t in terms):  # a sum with a missing term has no value (metric math drops the point)
        return None
    return math.fsum(t for t in terms if t is not None)


def _aggregate(metric: MetricStat, points: Sequence[float]) -> float | None:
    return STATISTICS[metric.statistic](points) if points else None


# ------------------------------------------------------------------------------------------------- reading


def read_alarms(template: Template, parameters: Mapping[str, Any] | None = None) -> list[AlarmSpec]:
    """Every AWS::CloudWatch::Alarm of ``template``, with ``parameters`` over the template's defaults.

    Raises:
        TemplateConfigError: an alarm uses what this model does not evaluate (each problem named).
    """
    values = {**template.parameters, **(parameters or {})}
    problems: list[str] = []
    found = []
    for logical, resource in sorted(template.of_type(ALARM_TYPE).items()):
        try:
            found.append(_alarm(logical, resource.get("Properties") or {}, values, template))
        except _Unsupported as exc:
            problems.append(f"{logical}: {exc}")
    if problems:
        raise TemplateConfigError(template.path, problems)
    return found


class _Unsupported(Exception):
    pass


def _alarm(logical: str, props: Mapping[str, Any], values: Mapping[str, Any], template: Template) -> AlarmSpec:
    def value(raw: Any) -> Any:
        return _resolve(raw, values, template)

    comparison = str(value(props.get("ComparisonOperator")))
    if comparison not in COMPARISONS:
        raise _Unsupported(f"ComparisonOperator {comparison!r}: one of {', '.join(COMPARISONS)}")
    treat = str(value(props.get("TreatMissingData", "missing")))
    if treat not in TREAT_MISSING:
        raise _Unsupported(f"TreatMissingData {treat!r}: one of {', '.join(sorted(TREAT_MISSING))}")
    evaluation_periods = int(value(props.get("EvaluationPeriods", 0)))
    if evaluation_periods < 1:
        raise _Unsupported("EvaluationPeriods must be 1 or more")
    expression: tuple[Term, ...] | None = None
    text = None
    if "Metrics" in props:
        metrics, expression, text = _math(value(props["Metrics"]), values, template)
    else:
        statistic = str(value(props.get("Statistic")))
        if statistic not in STATISTICS:
            raise _Unsupported(f"Statistic {statistic!r}: one of {', '.join(STATISTICS)} (not ExtendedStatistic)")
        metrics = (MetricStat(namespace=str(value(props.get("Namespace"))), name=str(value(props.get("MetricName"))),
                              dimensions=_dimensions(props.get("Dimensions") or [], values, template),
                              statistic=statistic, period=int(value(props.get("Period", 60))), id=logical),)
    periods = {m.period for m in metrics}
    if len(periods) != 1:
        raise _Unsupported(f"every metric of the alarm must have one Period (found {sorted(periods)})")
    return AlarmSpec(
        logical_id=logical, description=" ".join(str(value(props.get("AlarmDescription", ""))).split()),
        metrics=metrics, expression=expression, expression_text=text, period=periods.pop(),
        evaluation_periods=evaluation_periods,
        datapoints_to_alarm=int(value(props.get("DatapointsToAlarm", evaluation_periods))),
        threshold=float(value(props.get("Threshold"))), comparison=comparison, treat_missing=treat,
        notifies=bool(value(props.get("AlarmActions")) or value(props.get("OKActions"))))


_TERM: Final = re.compile(r"^\s*(?:FILL\(\s*(\w+)\s*,\s*(-?[0-9.]+)\s*\)|(\w+))\s*$")


def _math(queries: Any, values: Mapping[str, Any], template: Template
          ) -> tuple[tuple[MetricStat, ...], tuple[Term, ...], str]:
    metrics, returned = [], []
    for query in queries or []:
        if "MetricStat" in query:
            stat = query["MetricStat"]
            metric = stat["Metric"]
            statistic = str(stat.get("Stat"))
            if statistic not in STATISTICS:
                raise _Unsupported(f"Metrics {query.get('Id')}: Stat {statistic!r}: one of {', '.join(STATISTICS)}")
            metrics.append(MetricStat(namespace=str(metric["Namespace"]), name=str(metric["MetricName"]),
                                      dimensions=_dimensions(metric.get("Dimensions") or [], values, template),
                                      statistic=statistic, period=int(_resolve(stat["Period"], values, template)),
                                      id=str(query["Id"])))
        if query.get("ReturnData", True) is True or str(query.get("ReturnData")).lower() == "true":
            returned.append(query)
    if len(returned) != 1 or "Expression" not in returned[0]:
        raise _Unsupported("a metric-math alarm needs exactly one query with ReturnData true, an Expression")
    text = str(returned[0]["Expression"])
    terms = []
    for part in text.split("+"):
        match = _TERM.match(part)
        if match is None:
            raise _Unsupported(f"Expression {text!r}: the model evaluates sums of metric ids and FILL(id, number) "
                               "terms only")
        metric_id = match.group(1) or match.group(3)
        terms.append(Term(metric_id, float(match.group(2)) if match.group(2) is not None else None))
    known = {m.id for m in metrics}
    unknown = [t.metric_id for t in terms if t.metric_id not in known]
    if unknown:
        raise _Unsupported(f"Expression {text!r} names {', '.join(unknown)}, which no MetricStat query has as Id")
    return tuple(metrics), tuple(terms), text


def _dimensions(raw: Sequence[Mapping[str, Any]], values: Mapping[str, Any], template: Template
                ) -> tuple[tuple[str, DimensionValue], ...]:
    return tuple((str(d["Name"]), _resolve(d["Value"], values, template)) for d in raw)


def _resolve(raw: Any, values: Mapping[str, Any], template: Template) -> Any:
    """Parameters substituted, ``!Ref``/``!GetAtt`` of a resource kept as a :class:`Reference`, ``!If`` on a
    condition of the template decided, ``AWS::NoValue`` dropped."""
    if isinstance(raw, list):
        return [r for r in (_resolve(v, values, template) for v in raw) if r is not None]
    if not isinstance(raw, dict) or len(raw) != 1:
        return raw
    (key, arg), = raw.items()
    if key == "Ref":
        if arg == "AWS::NoValue":
            return None
        if arg in values:
            return values[arg]
        if arg in template.resources:
            return Reference(str(arg))
        raise _Unsupported(f"!Ref {arg}: no such parameter or resource")
    if key == "Fn::GetAtt":
        logical, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
        return Reference(str(logical), str(attribute))
    if key == "Fn::If":
        condition, then, otherwise = arg
        return _resolve(then if _condition(condition, values, template) else otherwise, values, template)
    raise _Unsupported(f"{key} is not read by the alarm model")


def _condition(name: str, values: Mapping[str, Any], template: Template) -> bool:
    conditions = template.body.get("Conditions") or {}
    return bool(_decide(conditions.get(name), values, template))


def _decide(raw: Any, values: Mapping[str, Any], template: Template) -> Any:
    if not isinstance(raw, dict):
        return raw
    (key, arg), = raw.items()
    if key == "Fn::Not":
        return not _decide(arg[0], values, template)
    if key == "Fn::Equals":
        left, right = (_decide(a, values, template) for a in arg)
        return str(left) == str(right)
    if key == "Ref":
        return values.get(arg)
    if key == "Condition":
        return _condition(arg, values, template)
    raise _Unsupported(f"condition {key} is not read by the alarm model")
