"""Template parameter values checked as CloudFormation checks them, before anything is sent to AWS.

LocalStack takes values CloudFormation refuses (``SnapshotEvery=5`` under its MinValue 10,
``RetentionSchedule=rate(banana)``), so a local deploy that succeeds proves nothing about them.
:func:`check_parameters` refuses them as AWS would, every bad value at once (:class:`ParameterValueError`), so
``seglog deploy`` fails the same way whatever its target, and the emulator can run the same check.

The rules, from the AWS CloudFormation User Guide, parameters-section-structure
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/parameters-section-structure.html):

* Type: ``String`` (a literal string), ``Number`` (an integer or float), ``List<Number>`` (integers or floats
  separated by commas), ``CommaDelimitedList`` (literal strings separated by commas, each member trimmed of
  spaces) and the CloudFormation-supplied types (``AWS::EC2::VPC::Id``, ``List<AWS::EC2::Subnet::Id>``,
  ``AWS::SSM::Parameter::Value<String>``, ...). CloudFormation looks the values of the supplied types up in the
  account; here they are taken as strings (``List<...>``: lists of strings) and the look-up is left to AWS.
* MinValue and MaxValue bound a ``Number``; MinLength and MaxLength the characters of a ``String``.
* AllowedValues: the value must be one of them.
* AllowedPattern: "When applied on a parameter of type String, the pattern must match the entire parameter value
  provided. When applied to a parameter of type CommaDelimitedList, the pattern must match each value in the
  list." The pattern is anchored, so it is checked with ``re.fullmatch`` whatever ``^`` and ``$`` it writes.
* ConstraintDescription explains a constraint when it is violated: where the template gives one it replaces the
  explanation here, as it replaces CloudFormation's own.
* A parameter the template does not declare is refused.
* NoEcho changes nothing that is checked; a NoEcho value is shown as ``****``, as CloudFormation shows it.

Where the page is silent the model chooses, once: a number is written in decimal (sign, fraction and exponent
allowed, no spaces); the AllowedValues of a number are compared as numbers; every member of a list is checked
alone (MinValue/MaxValue for ``List<Number>``, MinLength/MaxLength and AllowedPattern for the others,
AllowedValues for all); a parameter with no Default that is not passed is not checked (on a create
CloudFormation asks for it; on an update the stack keeps its previous value, which only AWS knows).

A parameter used as a schedule expression, ``!Ref`` as a SAM ``Schedule`` event's ``Schedule`` or an
``AWS::Events::Rule``'s ``ScheduleExpression``, is also read by
:func:`~seglog_awsmodel.schedule_expressions.parse_schedule_expression`, EventBridge's rule that CloudFormation
only applies once it creates the rule. ``ScheduleV2`` events and ``AWS::Scheduler::Schedule`` also take ``at()``
and time zones, which that reader refuses, so parameters used there are not read as schedules.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from seglog_awsmodel.config import FUNCTION_TYPE
from seglog_awsmodel.errors import ParameterValueError, ScheduleExpressionError
from seglog_awsmodel.schedule_expressions import parse_schedule_expression

_NUMBER: Final = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_NUMBER_TYPES: Final = frozenset({"Number", "List<Number>"})
_MASK: Final = "****"
_SCHEDULE_ADVICE: Final = "pass rate(value unit), e.g. rate(1 hour), or cron(Minutes Hours Day-of-month Month " \
                          "Day-of-week Year), e.g. cron(0 3 * * ? *)"


@dataclass(frozen=True)
class ParameterViolation:
    """One parameter value CloudFormation (or EventBridge, for a schedule expression) would refuse.

    Attributes:
        parameter: the parameter's name.
        value: the value as checked, ``****`` for a NoEcho parameter.
        constraint: the rule it breaks, as the template writes it: ``MinValue 10``, ``AllowedPattern ^...$``,
            ``Type Number``, ``Parameters`` (not declared), or where a schedule expression is used.
        reason: what is wrong with the value (the template's ConstraintDescription when it gives one).
        advice: what to pass instead.
    """

    parameter: str
    value: str
    constraint: str
    reason: str
    advice: str

    def __str__(self) -> str:
        return f"{self.parameter}={self.value!r} breaks {self.constraint}: {self.reason}; {self.advice}"


#: Makes one violation of the parameter being checked: constraint, reason, advice.
_Violation = Callable[[str, str, str], ParameterViolation]


def check_parameters(template: Mapping[str, Any], values: Mapping[str, object]) -> None:
    """Check every parameter's value (``values`` where given, else the Default) against the template's constraints.

    Args:
        template: the template's body (``Template.body``): its ``Parameters`` and, for schedule expressions, its
            ``Resources``.
        values: the overrides, by parameter name; numbers and booleans are read as the text CloudFormation gets.

    Raises:
        ParameterValueError: one value or more CloudFormation would refuse, or a name the template does not
            declare; all of them are listed.
    """
    declared: Mapping[str, Any] = template.get("Parameters") or {}
    schedules = schedule_parameters(template)
    violations: list[ParameterViolation] = []
    for name, spec in declared.items():
        raw = values[name] if name in values else spec.get("Default")
        if raw is None:
            continue
        found = _check_value(name, spec, _text(raw))
        if not found and name in schedules:
            found = _check_schedule(name, spec, _text(raw), where=schedules[name])
        violations += found
    violations += unknown_parameters(declared, values)
    if violations:
        raise ParameterValueError(violations)


def unknown_parameters(declared: Mapping[str, Any], values: Mapping[str, object]) -> list[ParameterViolation]:
    """The names in ``values`` the template does not declare (CloudFormation refuses them), each with the closest
    declared name. The emulator's provisioner refuses them too, though it takes values the constraints refuse."""
    found = []
    for name in sorted(set(values) - set(declared)):
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        found.append(ParameterViolation(
            parameter=name, value=_text(values[name]), constraint="Parameters",
            reason=f"the template declares no parameter {name}",
            advice=f"{hint}pass only the template's parameters: {', '.join(declared)}"))
    return found


def missing_parameters(declared: Mapping[str, Any], values: Mapping[str, object]) -> list[ParameterViolation]:
    """The declared parameters with no Default that ``values`` does not give: CloudFormation's create refuses
    them ("Parameters: [...] must have values"), and so does a local stack, which has nothing to keep from before.
    ``declared`` maps each name to its Default (None: none)."""
    return [ParameterViolation(parameter=name, value="", constraint="Default",
                               reason=f"{name} has no Default and no value was given",
                               advice=f"pass --parameter {name}=VALUE")
            for name in sorted(declared) if declared[name] is None and name not in values]


def schedule_parameters(template: Mapping[str, Any]) -> dict[str, str]:
    """The parameters used as EventBridge rules' schedule expressions, each with where it is used first."""
    declared: Mapping[str, Any] = template.get("Parameters") or {}
    found: dict[str, str] = {}
    for logical, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, Mapping):
            continue
        props: Mapping[str, Any] = resource.get("Properties") or {}
        uses: list[tuple[str, Any]] = []
        if resource.get("Type") == "AWS::Events::Rule":
            uses.append((f"{logical}.ScheduleExpression", props.get("ScheduleExpression")))
        elif resource.get("Type") == FUNCTION_TYPE:
            # sam-property-function-schedule: SAM makes an AWS::Events::Rule whose ScheduleExpression is Schedule.
            uses += [(f"{logical}.Events.{event}.Schedule", (body.get("Properties") or {}).get("Schedule"))
                     for event, body in (props.get("Events") or {}).items()
                     if isinstance(body, Mapping) and body.get("Type") == "Schedule"]
        for where, value in uses:
            if isinstance(value, Mapping) and set(value) == {"Ref"} and value["Ref"] in declared:
                found.setdefault(value["Ref"], where)
    return found


def _check_value(name: str, spec: Mapping[str, Any], text: str) -> list[ParameterViolation]:
    type_ = spec.get("Type")
    secret = _secret(spec)
    described = spec.get("ConstraintDescription")

    def violation(constraint: str, reason: str, advice: str) -> ParameterViolation:
        return ParameterViolation(parameter=name, value=_MASK if secret else text, constraint=constraint,
                                  reason=str(described) if described else reason,
                                  advice=advice + _default_hint(spec))

    if not isinstance(type_, str) or not (type_ in ("String", "Number", "CommaDelimitedList")
                                          or type_.startswith(("List<", "AWS::"))):
        return [violation(f"Type {type_}", "it is not a parameter type CloudFormation knows",
                          "declare Type as String, Number, List<Number>, CommaDelimitedList or a "
                          "CloudFormation-supplied type such as AWS::EC2::VPC::Id")]
    is_list = type_ == "CommaDelimitedList" or type_.startswith("List<")
    members = [member.strip() for member in text.split(",")] if is_list else [text]
    found: list[ParameterViolation] = []
    for member in members:
        what = f"member {member!r}" if is_list and not secret else "the value"
        if type_ in _NUMBER_TYPES:
            found += _check_number(spec, member, what, type_, violation)
        else:
            found += _check_string(spec, member, what, violation)
    return list(dict.fromkeys(found))  # with a ConstraintDescription, members that break one rule read alike


def _check_number(spec: Mapping[str, Any], member: str, what: str, type_: str,
                  violation: _Violation) -> list[ParameterViolation]:
    if not _NUMBER.fullmatch(member):
        return [violation(f"Type {type_}", f"{what} is not a number",
                          "pass an integer or a decimal number, digits only, e.g. 10 or 2.5")]
    number = Decimal(member)
    low, high = spec.get("MinValue"), spec.get("MaxValue")
    found: list[ParameterViolation] = []
    if low is not None and number < Decimal(str(low)):
        found.append(violation(f"MinValue {low}", f"{what} is less than {low}", _range(low, high)))
    if high is not None and number > Decimal(str(high)):
        found.append(violation(f"MaxValue {high}", f"{what} is more than {high}", _range(low, high)))
    allowed = spec.get("AllowedValues")
    if allowed is not None and number not in {Decimal(_text(v)) for v in allowed if _NUMBER.fullmatch(_text(v))}:
        found.append(_not_allowed(allowed, what, violation))
    return found


def _check_string(spec: Mapping[str, Any], member: str, what: str,
                  violation: _Violation) -> list[ParameterViolation]:
    low, high = spec.get("MinLength"), spec.get("MaxLength")
    found: list[ParameterViolation] = []
    if low is not None and len(member) < int(low):
        found.append(violation(f"MinLength {low}", f"{what} has {len(member)} characters, fewer than {low}",
                               _range(low, high, unit=" characters")))
    if high is not None and len(member) > int(high):
        found.append(violation(f"MaxLength {high}", f"{what} has {len(member)} characters, more than {high}",
                               _range(low, high, unit=" characters")))
    allowed = spec.get("AllowedValues")
    if allowed is not None and member not in {_text(v) for v in allowed}:
        found.append(_not_allowed(allowed, what, violation))
    pattern = spec.get("AllowedPattern")
    if pattern is not None:
        # Anchored: "the pattern must match the entire parameter value provided" (parameters-section-structure).
        try:
            matched = re.fullmatch(str(pattern), member) is not None
        except re.error as exc:
            found.append(violation(f"AllowedPattern {pattern}", f"the template's pattern cannot be read: {exc}",
                                   "fix the pattern in the template (CloudFormation reads Java regular "
                                   "expressions; write it in the syntax Java and Python share)"))
        else:
            if not matched:
                found.append(violation(f"AllowedPattern {pattern}", f"the whole of {what} must match the pattern",
                                       f"pass a value that matches {pattern} from its first character to its last"))
    return found


def _check_schedule(name: str, spec: Mapping[str, Any], text: str, *, where: str) -> list[ParameterViolation]:
    try:
        parse_schedule_expression(text)
    except ScheduleExpressionError as exc:
        reason = f"not a schedule expression EventBridge takes ({exc.reason})" if _secret(spec) else str(exc)
        return [ParameterViolation(parameter=name, value=_MASK if _secret(spec) else text,
                                   constraint=f"its use as {where}", reason=reason,
                                   advice=_SCHEDULE_ADVICE + _default_hint(spec))]
    return []


def _not_allowed(allowed: Any, what: str, violation: _Violation) -> ParameterViolation:
    listed = ", ".join(_text(v) for v in allowed)
    return violation(f"AllowedValues [{listed}]", f"{what} is not one of them", f"pass one of {listed}")


def _range(low: Any, high: Any, *, unit: str = "") -> str:
    if low is not None and high is not None:
        return f"pass {low} to {high}{unit}"
    if low is not None:
        return f"pass {low}{unit} or more"
    return f"pass {high}{unit} or {'fewer' if unit else 'less'}"


def _default_hint(spec: Mapping[str, Any]) -> str:
    default = spec.get("Default")
    return "" if default is None or _secret(spec) else f" (the default: {_text(default)})"


def _secret(spec: Mapping[str, Any]) -> bool:
    return _text(spec.get("NoEcho", False)).lower() == "true"


def _text(value: object) -> str:
    """A value as the text CloudFormation gets: YAML's numbers and booleans as written, lists joined by commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    return str(value)
