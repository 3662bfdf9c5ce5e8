"""Parameter values checked against the template's constraints as CloudFormation checks them, before any AWS call
(issue 22: LocalStack took SnapshotEvery=5 and RetentionSchedule=rate(banana), which AWS refuses).

Pages cited: AWS CloudFormation User Guide, parameters-section-structure (Type, MinValue, MaxValue, MinLength,
MaxLength, AllowedValues, AllowedPattern "must match the entire parameter value provided", ConstraintDescription,
NoEcho); Amazon EventBridge User Guide, eb-scheduled-rule-pattern; SAM, sam-property-function-schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.errors import ParameterValueError
from seglog_awsmodel.parameters import ParameterViolation, check_parameters, schedule_parameters
from seglog_awsmodel.template import load_template

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def body() -> dict[str, Any]:
    return load_template(REPO_ROOT / "template.yaml").body


def refusals(template: Mapping[str, Any], values: Mapping[str, object]) -> tuple[ParameterViolation, ...]:
    """The violations check_parameters raises; empty when it accepts the values."""
    try:
        check_parameters(template, values)
    except ParameterValueError as exc:
        for violation in exc.violations:
            assert str(violation) in str(exc)  # the message lists each violation
        return exc.violations
    return ()


def declaring(**parameters: dict[str, Any]) -> dict[str, Any]:
    """A template declaring ``parameters`` and no resource."""
    return {"Parameters": parameters, "Resources": {}}


def where(violations: tuple[ParameterViolation, ...]) -> list[tuple[str, str]]:
    return [(v.parameter, v.constraint) for v in violations]


# ------------------------------------------------------------------------------------------------ template.yaml


def test_the_templates_own_defaults_pass_its_constraints(body: dict[str, Any]) -> None:
    """A Default that breaks its own parameter's constraints would fail every create that does not override it."""
    assert () == refusals(body, {})


def test_snapshot_every_below_its_min_value_is_refused(body: dict[str, Any]) -> None:
    """SnapshotEvery has MinValue 10: AWS refuses 5 (LocalStack took it)."""
    (violation,) = refusals(body, {"SnapshotEvery": "5"})
    assert ParameterViolation(parameter="SnapshotEvery", value="5", constraint="MinValue 10",
                              reason="the value is less than 10", advice="pass 10 or more (the default: 1000)") \
        == violation


def test_retention_schedule_that_is_no_schedule_expression_is_refused(body: dict[str, Any]) -> None:
    """rate(banana) passes the template's AllowedPattern ^(rate|cron)\\(.*\\)$ but EventBridge refuses it when
    CloudFormation creates the rule (eb-rate-expressions); LocalStack took it."""
    (violation,) = refusals(body, {"RetentionSchedule": "rate(banana)"})
    assert ("RetentionSchedule", "rate(banana)", "its use as RetentionFunction.Events.Retention.Schedule") == (
        violation.parameter, violation.value, violation.constraint)
    assert "schedule expression 'rate(banana)': a rate expression is rate(value unit)" in violation.reason
    assert "(the default: rate(1 hour))" in violation.advice


def test_the_templates_schedule_parameter_is_found(body: dict[str, Any]) -> None:
    """sam-property-function-schedule: a Schedule event's Schedule is an EventBridge rule's ScheduleExpression."""
    assert {"RetentionSchedule": "RetentionFunction.Events.Retention.Schedule"} == schedule_parameters(body)


def test_a_good_schedule_expression_is_accepted(body: dict[str, Any]) -> None:
    assert () == refusals(body, {"RetentionSchedule": "cron(0 3 * * ? *)", "SnapshotEvery": "10"})


def test_every_bad_value_is_listed_at_once_in_template_order(body: dict[str, Any]) -> None:
    """One deploy attempt reports every value to fix, the undeclared names last."""
    found = refusals(body, {"RetentionSchedule": "rate(banana)", "SnapshotEvery": "5", "ApiTimeout": "30",
                            "SnapshotEvry": "10"})
    assert [("ApiTimeout", "MaxValue 29"), ("SnapshotEvery", "MinValue 10"),
            ("RetentionSchedule", "its use as RetentionFunction.Events.Retention.Schedule"),
            ("SnapshotEvry", "Parameters")] == where(found)


def test_numbers_from_the_emulators_parser_are_checked_as_their_text(body: dict[str, Any]) -> None:
    """`seglog emulate --parameter SnapshotEvery=5` passes the int 5; CloudFormation gets the text "5"."""
    assert [("SnapshotEvery", "MinValue 10")] == where(refusals(body, {"SnapshotEvery": 5}))
    assert () == refusals(body, {"SnapshotEvery": 10})


def test_an_undeclared_parameter_is_refused_with_the_closest_name(body: dict[str, Any]) -> None:
    """CloudFormation refuses a parameter the template does not declare."""
    (violation,) = refusals(body, {"SnapshotEvry": "10"})
    assert ("SnapshotEvry", "Parameters", "the template declares no parameter SnapshotEvry") == (
        violation.parameter, violation.constraint, violation.reason)
    assert violation.advice.startswith("did you mean SnapshotEvery? pass only the template's parameters: "
                                       "DiscardableExpirationDays, ArchiveNoncurrentVersionDays,")


# ------------------------------------------------------------------------------------------------ each constraint

NUMBER = {"Type": "Number", "MinValue": 10, "MaxValue": 900}
STRING = {"Type": "String", "MinLength": 2, "MaxLength": 4}
CHOICE = {"Type": "String", "AllowedValues": ["DEBUG", "INFO"]}
NUMBER_CHOICE = {"Type": "Number", "AllowedValues": [1, 2]}
#: No ^ or $: CloudFormation still requires the whole value to match.
PATTERN = {"Type": "String", "AllowedPattern": "[a-z]+"}
LIST = {"Type": "CommaDelimitedList", "AllowedPattern": "[a-z]+"}
NUMBERS = {"Type": "List<Number>", "MinValue": 1}
VPC = {"Type": "AWS::EC2::VPC::Id", "AllowedPattern": "vpc-[0-9a-f]+"}
SUBNETS = {"Type": "List<AWS::EC2::Subnet::Id>"}


@pytest.mark.parametrize(("spec", "value"), [
    (NUMBER, "10"), (NUMBER, "900"), (NUMBER, "10.5"), (NUMBER, "1e2"), ({"Type": "Number"}, "-3"),
    (STRING, "ab"), (STRING, "abcd"),
    (CHOICE, "INFO"), (NUMBER_CHOICE, "2"), (NUMBER_CHOICE, "2.0"),
    (PATTERN, "abc"),
    (LIST, "ab,cd"), (LIST, "ab, cd"),  # members are trimmed of spaces
    (NUMBERS, "1,2.5,30"),
    (VPC, "vpc-0a1b"), (SUBNETS, "subnet-1,subnet-2"), ({"Type": "AWS::SSM::Parameter::Value<String>"}, "/a/b"),
])
def test_a_value_that_meets_the_constraints_is_accepted(spec: dict[str, Any], value: str) -> None:
    assert () == refusals(declaring(P=spec), {"P": value})


@pytest.mark.parametrize(("spec", "value", "constraint", "reason"), [
    (NUMBER, "ten", "Type Number", "the value is not a number"),
    (NUMBER, "", "Type Number", "the value is not a number"),
    (NUMBER, "9", "MinValue 10", "the value is less than 10"),
    (NUMBER, "9.99", "MinValue 10", "the value is less than 10"),
    (NUMBER, "901", "MaxValue 900", "the value is more than 900"),
    (STRING, "a", "MinLength 2", "the value has 1 characters, fewer than 2"),
    (STRING, "abcde", "MaxLength 4", "the value has 5 characters, more than 4"),
    (CHOICE, "info", "AllowedValues [DEBUG, INFO]", "the value is not one of them"),
    (NUMBER_CHOICE, "3", "AllowedValues [1, 2]", "the value is not one of them"),
    (PATTERN, "abc1", "AllowedPattern [a-z]+", "the whole of the value must match the pattern"),
    (PATTERN, "1abc", "AllowedPattern [a-z]+", "the whole of the value must match the pattern"),
    (LIST, "ab,c1", "AllowedPattern [a-z]+", "the whole of member 'c1' must match the pattern"),
    (NUMBERS, "1,x", "Type List<Number>", "member 'x' is not a number"),
    (NUMBERS, "1,0", "MinValue 1", "member '0' is less than 1"),
    (VPC, "sg-1", "AllowedPattern vpc-[0-9a-f]+", "the whole of the value must match the pattern"),
    ({"Type": "Integer"}, "1", "Type Integer", "it is not a parameter type CloudFormation knows"),
])
def test_a_value_that_breaks_a_constraint_is_refused_naming_parameter_and_constraint(
        spec: dict[str, Any], value: str, constraint: str, reason: str) -> None:
    try:
        check_parameters(declaring(Param=spec), {"Param": value})
    except ParameterValueError as exc:
        (violation,) = exc.violations
        assert ("Param", value, constraint, reason) == (violation.parameter, violation.value,
                                                         violation.constraint, violation.reason)
        assert f"Param={value!r} breaks {constraint}: {reason}; " in str(exc)
    else:
        pytest.fail(f"{value!r} was accepted against {spec}")


def test_the_advice_says_what_to_pass_instead() -> None:
    spec = {**NUMBER, "Default": 60}
    assert ["pass 10 to 900 (the default: 60)"] == [v.advice for v in refusals(declaring(P=spec), {"P": "5"})]
    assert ["pass one of DEBUG, INFO"] == [v.advice for v in refusals(declaring(P=CHOICE), {"P": "x"})]
    assert ["pass 4 characters or fewer"] == [
        v.advice for v in refusals(declaring(P={"Type": "String", "MaxLength": 4}), {"P": "abcde"})]


def test_a_value_breaking_two_constraints_is_refused_for_both() -> None:
    spec = {"Type": "String", "MaxLength": 2, "AllowedPattern": "[a-z]+"}
    assert [("P", "MaxLength 2"), ("P", "AllowedPattern [a-z]+")] == where(refusals(declaring(P=spec), {"P": "abc1"}))


def test_the_constraint_description_replaces_the_explanation() -> None:
    """ConstraintDescription: "A string that explains a constraint when the constraint is violated"."""
    spec = {**PATTERN, "ConstraintDescription": "lowercase letters only"}
    (violation,) = refusals(declaring(P=spec), {"P": "ABC"})
    assert ("AllowedPattern [a-z]+", "lowercase letters only") == (violation.constraint, violation.reason)


def test_a_no_echo_value_is_checked_but_never_shown() -> None:
    spec = {"Type": "String", "NoEcho": True, "MinLength": 8, "Default": "hunter2hunter2"}
    (violation,) = refusals(declaring(Secret=spec), {"Secret": "hunter2"})
    assert ("****", "MinLength 8", "pass 8 characters or more") == (
        violation.value, violation.constraint, violation.advice)


def test_a_default_that_breaks_its_own_constraint_is_refused_when_not_overridden() -> None:
    spec = {**NUMBER, "Default": 5}
    assert [("P", "MinValue 10")] == where(refusals(declaring(P=spec), {}))
    assert () == refusals(declaring(P=spec), {"P": "50"})


def test_a_parameter_without_default_or_value_is_left_to_aws() -> None:
    """On a create CloudFormation asks for it; on an update the stack keeps its previous value (UsePreviousValue)."""
    assert () == refusals(declaring(P=NUMBER), {})


def test_an_events_rules_schedule_expression_parameter_is_read_as_a_schedule() -> None:
    """AWS::Events::Rule ScheduleExpression: the same EventBridge rule as a SAM Schedule event's Schedule."""
    template = {"Parameters": {"Every": {"Type": "String", "Default": "rate(1 hour)"}},
                "Resources": {"Tick": {"Type": "AWS::Events::Rule",
                                       "Properties": {"ScheduleExpression": {"Ref": "Every"}}}}}
    assert [("Every", "its use as Tick.ScheduleExpression")] == where(refusals(template, {"Every": "rate(1 hours)"}))
    assert () == refusals(template, {"Every": "rate(2 hours)"})
