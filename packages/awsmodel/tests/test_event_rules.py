"""Reading a function's EventBridgeRule and CloudWatchEvent events (AWS SAM sam-property-function-eventbridgerule and
sam-property-function-cloudwatchevent: Pattern, EventBusName with the default bus when omitted, Input, InputPath,
RuleName, State), with what the emulator refuses and what it notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.config import EmulatorConfig, EventRule, TemplateConfigError
from seglog_awsmodel.template import Template

PATTERN = {"source": ["orders"], "detail": {"qty": [{"numeric": [">=", 10]}]}}


def read(events: dict[str, Any], **resources: Any) -> EmulatorConfig:
    body = {"Resources": {
        "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "orders"}},
        "Topic": {"Type": "AWS::SNS::Topic"},
        "Fn": {"Type": "AWS::Serverless::Function",
               "Properties": {"Handler": "app.handler", "Runtime": "python3.13", "Events": events}},
        **resources}}
    return EmulatorConfig.from_template(Template(path=Path("template.yaml"), body=body), lambda value: value)


def event(type_: str = "EventBridgeRule", **props: Any) -> dict[str, Any]:
    return {"E": {"Type": type_, "Properties": {"Pattern": PATTERN, **props}}}


def problems(events: dict[str, Any]) -> list[str]:
    with pytest.raises(TemplateConfigError) as caught:
        read(events)
    return list(caught.value.problems)


@pytest.mark.parametrize("type_", ["EventBridgeRule", "CloudWatchEvent"])
def test_a_rule_on_the_default_bus_with_its_pattern(type_: str) -> None:
    """CloudWatchEvent is the older name of the same event source; the bus defaults to the default one."""
    [rule] = read(event(type_)).event_rules
    assert EventRule(function="Fn", event="E", Pattern=json.dumps(PATTERN)) == rule
    assert ("default", None, True, "FnE") == (rule.EventBusName, rule.bus, rule.Enabled, rule.logical_id)


def test_a_custom_bus_input_path_rule_name_and_state_are_read() -> None:
    [rule] = read(event(EventBusName={"Ref": "Bus"}, InputPath="$.detail", RuleName="big-orders",
                        State="DISABLED")).event_rules
    assert ("Bus", "Bus", "$.detail", "big-orders", False) == (
        rule.bus, rule.EventBusName, rule.InputPath, rule.RuleName, rule.Enabled)
    # A pattern given as JSON text (CloudFormation's EventPattern accepts both) and a bus by literal name.
    [text] = read(event(Pattern=json.dumps(PATTERN), EventBusName="partner", Input='{"a": 1}')).event_rules
    assert (json.dumps(PATTERN), "partner", None, '{"a": 1}') == (text.Pattern, text.EventBusName, text.bus,
                                                                 text.Input)


def test_what_cannot_run_as_aws_runs_it_is_refused() -> None:
    found = problems({
        "NoPattern": {"Type": "EventBridgeRule", "Properties": {}},
        **{f"Both{k}": v for k, v in event(Input="{}", InputPath="$.detail").items()},
        **{f"Transformer{k}": v for k, v in event(InputTransformer={"InputTemplate": "<x>"}).items()},
        **{f"Topic{k}": v for k, v in event(EventBusName={"Ref": "Topic"}).items()},
        **{f"Input{k}": v for k, v in event(Input="not json").items()},
        **{f"State{k}": v for k, v in event(State="PAUSED").items()},
    })
    assert ["Fn.Events.NoPattern.Pattern", "Fn.Events.BothE", "Fn.Events.TransformerE.InputTransformer",
            "Fn.Events.TopicE.EventBusName", "Fn.Events.InputE.Input", "Fn.Events.StateE.State"] == [
        p.split(":")[0] for p in found], found


def test_delivery_settings_eventbridge_never_needs_locally_are_noted() -> None:
    """RetryPolicy and DeadLetterConfig cover EventBridge failing to invoke the function, which cannot happen
    locally; the function's own failures are Lambda's asynchronous retries."""
    config = read(event(RetryPolicy={"MaximumRetryAttempts": 3}, DeadLetterConfig={"Type": "SQS"}))
    assert 1 == len(config.event_rules)
    assert ["Fn.Events.E.DeadLetterConfig", "Fn.Events.E.RetryPolicy"] == [n.split(":")[0] for n in config.notes]
