"""`seglog deploy` asks before it changes anything: it shows the change set (data at risk called out), executes
it on "y" at a terminal or with --yes, and without a terminal refuses, saying to pass --yes, rather than wait or go
ahead. `--print-policy` prints the deployer's IAM policy and deploys nothing. The deploy itself is replaced by a
stand-in that shows the command a change set (ChangeSetDeployer's side is tested in packages/deploy/tests)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from seglog_cli import deploy_commands
from seglog_cli.main import cli
from seglog_deploy import deploy as deploying
from seglog_deploy.changeset import ChangeSetPlan, ResourceChange, StackState
from seglog_deploy.errors import ChangeSetDeclinedError
from seglog_deploy.record import StackRecord
from seglog_deploy.target import Target

ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "eu-west-1",
       "AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
PLAN = ChangeSetPlan(stack_name="s", change_set_id="arn:changeSet/c", creating=False, changes=(
    ResourceChange(action="Modify", logical_id="ApiFunction", resource_type="AWS::Lambda::Function",
                   replacement="False"),
    ResourceChange(action="Modify", logical_id="EntriesTable", resource_type="AWS::DynamoDB::Table",
                   replacement="True", physical_id="s-EntriesTable-1"),
))

#: seglog's template: the deploy runs in an empty working directory, where no template is found by default.
TEMPLATE = str(Path(__file__).resolve().parents[3] / "template.yaml")


class StandIn:
    """deploying.deploy as the command sees it: the change set goes to ``confirm``; it runs only on yes."""

    def __init__(self) -> None:
        self.executed: list[str] = []

    def __call__(self, target: Target, *, stack_name: str, confirm: Callable[[ChangeSetPlan], bool] | None,
                 **_: Any) -> tuple[StackState, StackRecord]:
        assert confirm is not None, "the command must always pass a confirm"
        if not confirm(PLAN):
            raise ChangeSetDeclinedError(stack_name, "you did not confirm it")
        self.executed.append(stack_name)
        state = StackState(stack_id="arn:stack/s/1", stack_name=stack_name, status="UPDATE_COMPLETE", changed=True)
        return state, StackRecord(stack_name=stack_name, stack_id=state.stack_id, region="eu-west-1", outputs={})


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[StandIn]:
    fake = StandIn()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(deploying, "deploy", fake)
    monkeypatch.setattr(deploying, "built_artifacts", lambda template, progress=None: {})
    yield fake


def _deploy(*args: str, terminal: bool = False, answer: str | None = None,
            monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.setattr(deploy_commands, "_stdin_is_terminal", lambda: terminal)
    return CliRunner().invoke(cli, ["deploy", "--template", TEMPLATE, "--stack-name", "s", *args], env=ENV,
                              input=answer)


def test_without_a_terminal_or_yes_the_change_set_is_shown_then_refused_with_what_to_pass(
        stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _deploy(monkeypatch=monkeypatch)
    assert 1 == result.exit_code, result.output
    assert [] == stand_in.executed
    assert "0 to add, 1 to modify, 1 to replace, 0 to remove" in result.output
    assert "pass --yes" in result.output
    assert "execute?" not in result.output  # never a question nobody can answer


def test_yes_executes_without_asking_and_still_shows_the_change_set_and_the_data_at_risk(
        stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _deploy("--yes", monkeypatch=monkeypatch)
    assert 0 == result.exit_code, result.output
    assert ["s"] == stand_in.executed
    assert "execute?" not in result.output
    assert "WARNING: 1 resource(s) holding data" in result.output
    assert "EntriesTable (AWS::DynamoDB::Table, s-EntriesTable-1): REPLACED by a new, EMPTY one" in result.output


@pytest.mark.parametrize(("answer", "executed"), [("y\n", True), ("yes\n", True), ("\n", False), ("n\n", False)])
def test_at_a_terminal_only_a_yes_executes_and_the_default_is_no(
        answer: str, executed: bool, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _deploy(terminal=True, answer=answer, monkeypatch=monkeypatch)
    assert "execute? [y/N]" in result.output
    assert (["s"] if executed else []) == stand_in.executed
    assert (0 if executed else 1) == result.exit_code, result.output
    if not executed:
        assert "the change set was not executed (you did not confirm it); nothing changed" in result.output


def test_print_policy_prints_the_deployer_policy_of_the_stack_and_deploys_nothing(
        stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Target, "account_id", lambda self: "123456789012")
    result = _deploy("--print-policy", monkeypatch=monkeypatch)
    assert 0 == result.exit_code, result.output
    policy = json.loads(result.stdout)
    resources = [s["Resource"] for s in policy["Statement"]]
    assert ["arn:aws:cloudformation:eu-west-1:123456789012:stack/s/*"] == resources[0]  # the stack's own first
    assert ["arn:aws:s3:::seglog-artifacts-123456789012-eu-west-1"] in resources
    assert [] == stand_in.executed


def test_values_the_template_refuses_stop_the_deploy_before_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22, point 3: LocalStack took SnapshotEvery=5 (MinValue 10) and RetentionSchedule=rate(banana);
    CloudFormation and EventBridge would refuse both. The command refuses them first, naming each, and neither
    builds nor calls anything."""
    def no_build(*_: Any, **__: Any) -> Any:
        raise AssertionError("built before the parameters were checked")

    monkeypatch.setattr(deploying, "built_artifacts", no_build)
    monkeypatch.setattr(deploying, "deploy", no_build)
    result = CliRunner().invoke(cli, ["deploy", "--template", TEMPLATE, "--stack-name", "s", "--yes",
                                      "--parameter", "SnapshotEvery=5",
                                      "--parameter", "RetentionSchedule=rate(banana)"], env=ENV)
    assert result.exit_code != 0, result.output
    assert "SnapshotEvery='5' breaks MinValue 10" in result.output
    assert "RetentionSchedule" in result.output and "rate(banana)" in result.output


def test_a_name_cloudformation_refuses_stops_the_deploy_before_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by tests/deploy/test_readme_commands.py: LocalStack took `--stack-name s_`, failed half way and the
    deploy said it succeeded; AWS refuses the name at CreateChangeSet."""
    def no_build(*_: Any, **__: Any) -> Any:
        raise AssertionError("built before the stack name was checked")

    monkeypatch.setattr(deploying, "built_artifacts", no_build)
    monkeypatch.setattr(deploying, "deploy", no_build)
    result = CliRunner().invoke(cli, ["deploy", "--template", TEMPLATE, "--stack-name", "s_", "--yes"], env=ENV)
    assert 1 == result.exit_code, result.output
    assert "'s_' is not a CloudFormation stack name" in result.output
    assert "pass --stack-name with one, such as seglog" in result.output
