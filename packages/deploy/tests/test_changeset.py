"""The change-set deployer's decisions, against a scripted CloudFormation (no server): which change set it makes,
what it does when there is nothing to change, when the stack is busy or a failed create is in the way, and what
it reports when a stack rolls back. The real service's behaviour is covered by tests/deploy on LocalStack."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from botocore.exceptions import ClientError

from seglog_deploy.changeset import ChangeSetDeployer, ChangeSetPlan
from seglog_deploy.errors import (
    ChangeSetDeclinedError,
    ChangeSetError,
    DeployError,
    FailedCreateError,
    StackFailedError,
)
from seglog_deploy.events import EventReader, StackEvent, causes
from seglog_deploy.target import Target

T0 = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)


def event(n: int, logical_id: str, status: str, reason: str | None = None,
          kind: str = "AWS::SQS::Queue") -> dict[str, Any]:
    found = {"EventId": f"e{n}", "Timestamp": T0 + dt.timedelta(seconds=n), "LogicalResourceId": logical_id,
             "PhysicalResourceId": logical_id.lower(), "ResourceType": kind, "ResourceStatus": status}
    if reason:
        found["ResourceStatusReason"] = reason
    return found


class FakeCloudFormation:
    """Answers like CloudFormation from a script: the stack's statuses in turn, a change set's outcome, events."""

    def __init__(self, *, stack: dict[str, Any] | None, statuses: list[str] | None = None,
                 change_set: tuple[str, str, int | list[dict[str, Any]]] = ("CREATE_COMPLETE", "", 1),
                 events: list[dict[str, Any]] | None = None) -> None:
        self.stack = stack
        self.statuses = list(statuses or [])
        self.change_set = change_set
        self.events = list(events or [])
        #: The stack's resources: logical id -> (type, DeletionPolicy, physical id, ResourceStatus).
        self.resources: dict[str, tuple[str, str | None, str, str]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def describe_stacks(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("describe_stacks", kwargs))
        if self.stack is None:
            raise ClientError({"Error": {"Code": "ValidationError", "Message": "Stack with id x does not exist"}},
                              "DescribeStacks")
        if self.statuses:
            self.stack["StackStatus"] = self.statuses.pop(0)
        return {"Stacks": [dict(self.stack)]}

    def create_change_set(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("create_change_set", kwargs))
        if self.stack is None:
            self.stack = {"StackId": "arn:stack/s/1", "StackName": kwargs["StackName"],
                          "StackStatus": "REVIEW_IN_PROGRESS"}
        return {"Id": "arn:changeSet/c", "StackId": self.stack["StackId"]}

    def describe_change_set(self, **kwargs: Any) -> dict[str, Any]:
        status, reason, changes = self.change_set
        listed = [change("Add", f"R{n}", "AWS::SQS::Queue") for n in range(changes)] if isinstance(changes, int) \
            else changes
        # Two pages when there are several, as DescribeChangeSet pages them (NextToken).
        page = 1 if kwargs.get("NextToken") else 0
        half = (len(listed) + 1) // 2
        found: dict[str, Any] = {"Status": status, "StatusReason": reason,
                                 "Changes": listed[half:] if page else listed[:half]}
        if not page and len(listed) > 1:
            found["NextToken"] = "2"
        return found

    def delete_change_set(self, **kwargs: Any) -> None:
        self.calls.append(("delete_change_set", kwargs))

    def execute_change_set(self, **kwargs: Any) -> None:
        self.calls.append(("execute_change_set", kwargs))

    def delete_stack(self, **kwargs: Any) -> None:
        self.calls.append(("delete_stack", kwargs))
        self.stack = None  # gone at once: DescribeStacks by name says it does not exist

    def get_template(self, **kwargs: Any) -> dict[str, Any]:
        return {"TemplateBody": {"Resources": {lid: {"Type": kind, **({"DeletionPolicy": policy} if policy else {})}
                                               for lid, (kind, policy, _, _) in self.resources.items()}}}

    def describe_stack_resources(self, **kwargs: Any) -> dict[str, Any]:
        return {"StackResources": [{"LogicalResourceId": lid, "ResourceType": kind, "PhysicalResourceId": physical,
                                    "ResourceStatus": status}
                                   for lid, (kind, _, physical, status) in self.resources.items()]}

    def describe_stack_events(self, **kwargs: Any) -> dict[str, Any]:
        return {"StackEvents": sorted(self.events, key=lambda e: e["Timestamp"], reverse=True)}

    def named(self, call: str) -> list[dict[str, Any]]:
        return [kwargs for name, kwargs in self.calls if name == call]


def change(action: str, logical_id: str, kind: str, replacement: str | None = None,
           policy_action: str | None = None) -> dict[str, Any]:
    """One entry of DescribeChangeSet's Changes (AWS CloudFormation API Reference, ResourceChange)."""
    found: dict[str, Any] = {"Action": action, "LogicalResourceId": logical_id, "ResourceType": kind}
    if replacement is not None:
        found["Replacement"] = replacement
    if policy_action is not None:
        found["PolicyAction"] = policy_action
    return {"Type": "Resource", "ResourceChange": found}


def deployer(fake: FakeCloudFormation) -> ChangeSetDeployer:
    target = Target.resolve(region="eu-west-1", endpoint_url="http://127.0.0.1:1", env={})
    target._clients["cloudformation"] = fake
    # A short timeout: a script that never settles fails the test instead of polling for an hour.
    return ChangeSetDeployer(target, sleep=lambda seconds: None, timeout=2.0)


def existing(status: str, **extra: Any) -> dict[str, Any]:
    return {"StackId": "arn:stack/s/1", "StackName": "s", "StackStatus": status, **extra}


DECLARED = {"SnapshotEvery": {"Type": "Number"}, "ApiTimeout": {"Type": "Number"}, "NewOne": {"Type": "String"}}
BODY = {"TemplateBody": "{}"}


def test_a_new_stack_gets_a_create_change_set_with_the_iam_and_transform_capabilities() -> None:
    fake = FakeCloudFormation(stack=None, statuses=["CREATE_IN_PROGRESS", "CREATE_COMPLETE"])
    state = deployer(fake).deploy("s", template=BODY, declared=DECLARED, parameters={"SnapshotEvery": "50"})
    (created,) = fake.named("create_change_set")
    assert "CREATE" == created["ChangeSetType"]
    assert ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"] == created["Capabilities"]
    assert [{"ParameterKey": "SnapshotEvery", "ParameterValue": "50"}] == created["Parameters"]
    assert 1 == len(fake.named("execute_change_set"))
    assert ("CREATE_COMPLETE", True) == (state.status, state.changed)


def test_an_update_keeps_the_previous_value_of_parameters_not_given() -> None:
    """As `aws cloudformation deploy`: an override given once is not reverted by the next deploy without it;
    a parameter the stack did not have yet takes the template's default."""
    stack = existing("UPDATE_COMPLETE", Parameters=[{"ParameterKey": "SnapshotEvery", "ParameterValue": "50"},
                                                    {"ParameterKey": "ApiTimeout", "ParameterValue": "15"}])
    fake = FakeCloudFormation(stack=stack, statuses=["UPDATE_COMPLETE", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"])
    deployer(fake).deploy("s", template=BODY, declared=DECLARED, parameters={"ApiTimeout": "20"})
    (created,) = fake.named("create_change_set")
    assert "UPDATE" == created["ChangeSetType"]
    assert [{"ParameterKey": "ApiTimeout", "ParameterValue": "20"},
            {"ParameterKey": "SnapshotEvery", "UsePreviousValue": True}] == created["Parameters"]


@pytest.mark.parametrize("reason", [
    "The submitted information didn't contain changes. Submit different information to create a change set.",
    "No updates are to be performed.",
])
def test_a_change_set_with_nothing_to_change_is_a_successful_deploy_that_executes_nothing(reason: str) -> None:
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), change_set=("FAILED", reason, 0))
    state = deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert (False, "UPDATE_COMPLETE") == (state.changed, state.status)
    assert [] == fake.named("execute_change_set")
    assert 1 == len(fake.named("delete_change_set"))


def test_a_refused_change_set_says_why_and_leaves_the_stack_alone() -> None:
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"),
                              change_set=("FAILED", "Parameter 'ApiTimeout' must be a number.", 0))
    with pytest.raises(ChangeSetError, match="must be a number"):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert [] == fake.named("execute_change_set")


@pytest.mark.parametrize("status", ["UPDATE_IN_PROGRESS", "UPDATE_ROLLBACK_FAILED", "DELETE_FAILED"])
def test_a_busy_or_stuck_stack_is_not_touched(status: str) -> None:
    fake = FakeCloudFormation(stack=existing(status))
    with pytest.raises(DeployError, match=status):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert [] == fake.named("create_change_set")


#: What a failed first create leaves on AWS: the retained table DELETE_SKIPPED, the queue deleted, the function
#: never made (AWS CloudFormation User Guide, "Stack and resource status codes").
FAILED_CREATE = {"Kept": ("AWS::DynamoDB::Table", "Retain", "s-Kept-1", "DELETE_SKIPPED"),
                 "Gone": ("AWS::SQS::Queue", None, "https://sqs/s-Gone-1", "DELETE_COMPLETE"),
                 "Broken": ("AWS::Lambda::Function", None, "", "CREATE_FAILED")}


def test_a_failed_first_create_stops_the_deploy_and_lists_what_it_retained() -> None:
    """A stack in ROLLBACK_COMPLETE can only be deleted (AWS CloudFormation User Guide, "Stack and resource status
    codes"); deleting it would orphan the retained table unseen, so nothing is touched unless asked."""
    fake = FakeCloudFormation(stack=existing("ROLLBACK_COMPLETE"))
    fake.resources = dict(FAILED_CREATE)
    with pytest.raises(FailedCreateError) as raised:
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert [("Kept", "s-Kept-1")] == [(r.logical_id, r.physical_id) for r in raised.value.retained]
    assert "aws dynamodb delete-table --table-name s-Kept-1 --region eu-west-1" in str(raised.value)
    assert "--replace-failed-stack" in str(raised.value)
    assert ([], []) == (fake.named("delete_stack"), fake.named("create_change_set"))


def test_a_failed_first_create_is_replaced_when_asked_and_what_it_retained_is_returned() -> None:
    fake = FakeCloudFormation(stack=existing("ROLLBACK_COMPLETE"),
                              statuses=["ROLLBACK_COMPLETE", "ROLLBACK_COMPLETE", "CREATE_COMPLETE"])
    fake.resources = dict(FAILED_CREATE)
    chosen = deployer(fake)
    assert ["s-Kept-1"] == [r.physical_id for r in chosen.clear_failed_create("s", replace=True)]
    state = chosen.deploy("s", template=BODY, declared={}, parameters={}, replace_failed=True)
    assert 1 == len(fake.named("delete_stack"))
    assert "CREATE" == fake.named("create_change_set")[0]["ChangeSetType"]
    assert "CREATE_COMPLETE" == state.status


def test_a_rollback_raises_with_the_failed_resources_and_their_reasons() -> None:
    history = [event(0, "s", "UPDATE_COMPLETE", kind="AWS::CloudFormation::Stack")]
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), events=history,
                              statuses=["UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"])
    real = fake.execute_change_set

    def execute(**kwargs: Any) -> None:
        real(**kwargs)
        fake.events += [event(1, "Broken", "CREATE_FAILED", "S3 Error Code: NoSuchBucket", "AWS::Lambda::Function"),
                        event(2, "Other", "CREATE_FAILED", "Resource creation cancelled"),
                        event(3, "s", "UPDATE_ROLLBACK_COMPLETE", kind="AWS::CloudFormation::Stack")]

    fake.execute_change_set = execute  # type: ignore[method-assign]
    with pytest.raises(StackFailedError) as raised:
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert "UPDATE_ROLLBACK_COMPLETE" == raised.value.status
    assert ["Broken"] == [e.logical_id for e in raised.value.failures]
    assert "Broken (AWS::Lambda::Function): CREATE_FAILED: S3 Error Code: NoSuchBucket" in str(raised.value)


def test_causes_leave_out_cancelled_resources_and_the_stack_summary_unless_nothing_else_failed() -> None:
    cancelled = StackEvent.from_api(event(1, "Other", "CREATE_FAILED", "Resource creation cancelled"))
    summary = StackEvent.from_api(event(2, "s", "UPDATE_FAILED", "boom", "AWS::CloudFormation::Stack"))
    broken = StackEvent.from_api(event(0, "Broken", "CREATE_FAILED", "NoSuchBucket"))
    assert [broken] == causes([broken, cancelled, summary])
    assert [cancelled] == causes([cancelled, summary])
    assert [summary] == causes([summary])


def test_the_event_reader_returns_each_new_event_once_oldest_first_across_pages() -> None:
    events = [event(n, f"R{n}", "CREATE_COMPLETE") for n in range(5)]

    class Paged:
        def describe_stack_events(self, StackName: str, NextToken: str | None = None) -> dict[str, Any]:
            newest_first = sorted(events, key=lambda e: e["Timestamp"], reverse=True)
            start = int(NextToken or 0)
            page: dict[str, Any] = {"StackEvents": newest_first[start:start + 2]}
            if start + 2 < len(newest_first):
                page["NextToken"] = str(start + 2)
            return page

    reader = EventReader(Paged(), "arn:stack/s/1")
    reader.mark()
    assert [] == reader.new()
    events.extend(event(n, f"R{n}", "CREATE_COMPLETE") for n in range(5, 8))
    assert ["R5", "R6", "R7"] == [e.logical_id for e in reader.new()]
    assert [] == reader.new()


# ------------------------------------------------------------------------------------ showing and confirming

UPDATE_CHANGES = [
    change("Add", "NewQueue", "AWS::SQS::Queue"),
    change("Modify", "ApiFunction", "AWS::Lambda::Function", "False"),
    change("Modify", "EntriesTable", "AWS::DynamoDB::Table", "True", "ReplaceAndRetain"),
    change("Modify", "SnapshotQueue", "AWS::SQS::Queue", "Conditional"),
    change("Modify", "ApiFunctionRole", "AWS::IAM::Role", "True"),
    change("Remove", "ApiAccessLogs", "AWS::Logs::LogGroup", policy_action="Delete"),
]


def test_confirm_is_shown_every_change_of_every_page_with_replacements_and_data_at_risk_apart() -> None:
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), change_set=("CREATE_COMPLETE", "", UPDATE_CHANGES),
                              statuses=["UPDATE_COMPLETE", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"])
    shown: list[ChangeSetPlan] = []
    deployer(fake).deploy("s", template=BODY, declared={}, parameters={},
                          confirm=lambda plan: shown.append(plan) or True)
    (plan,) = shown
    assert (["NewQueue"], ["ApiFunction"], ["ApiAccessLogs"]) == tuple(
        [c.logical_id for c in plan.of_kind(kind)] for kind in ("add", "modify", "remove"))
    assert ["EntriesTable", "SnapshotQueue", "ApiFunctionRole"] == [c.logical_id for c in plan.of_kind("replace")]
    # A role replaced holds no data: only tables, buckets, queues and log groups are called out.
    assert ["EntriesTable", "SnapshotQueue", "ApiAccessLogs"] == [c.logical_id for c in plan.endangered]
    assert "1 to add, 1 to modify, 3 to replace, 1 to remove" == plan.summary()
    table, queue, logs = plan.endangered
    assert "REPLACED by a new, EMPTY one" in table.danger() and "UpdateReplacePolicy Retain" in table.danger()
    assert "may be REPLACED" in queue.danger()
    assert "removed from the stack, and DELETED with its data" in logs.danger()
    assert 1 == len(fake.named("execute_change_set"))


def test_a_declined_update_deletes_its_change_set_and_executes_nothing() -> None:
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), change_set=("CREATE_COMPLETE", "", UPDATE_CHANGES))
    with pytest.raises(ChangeSetDeclinedError, match="not executed"):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={}, confirm=lambda plan: False)
    assert ([], 1, []) == (fake.named("execute_change_set"), len(fake.named("delete_change_set")),
                           fake.named("delete_stack"))


def test_a_declined_first_create_also_deletes_the_empty_stack_its_change_set_made() -> None:
    """A CREATE change set makes the stack in REVIEW_IN_PROGRESS (AWS CloudFormation User Guide, "Stack and
    resource status codes"); left there, it would stay behind with nothing in it."""
    fake = FakeCloudFormation(stack=None, change_set=("CREATE_COMPLETE", "", 2))
    with pytest.raises(ChangeSetDeclinedError):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={}, confirm=lambda plan: False)
    assert [] == fake.named("execute_change_set")
    assert [{"StackName": "arn:stack/s/1"}] == fake.named("delete_stack")


def test_a_confirm_that_raises_cleans_up_like_a_no_and_its_error_reaches_the_caller() -> None:
    """A refusal to ask (no terminal) or Ctrl-C at the prompt leaves no change set behind."""
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), change_set=("CREATE_COMPLETE", "", 1))

    def refuse(plan: ChangeSetPlan) -> bool:
        raise ChangeSetDeclinedError(plan.stack_name, "pass --yes")

    with pytest.raises(ChangeSetDeclinedError, match="pass --yes"):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={}, confirm=refuse)
    assert ([], 1) == (fake.named("execute_change_set"), len(fake.named("delete_change_set")))


def test_a_change_set_without_resource_changes_runs_without_asking() -> None:
    """It touches no resource (LocalStack completes an unchanged deploy's change set empty; on AWS a parameter
    that feeds only outputs does the same), so there is nothing to confirm."""
    fake = FakeCloudFormation(stack=existing("UPDATE_COMPLETE"), change_set=("CREATE_COMPLETE", "", 0),
                              statuses=["UPDATE_COMPLETE", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"])
    asked: list[ChangeSetPlan] = []
    state = deployer(fake).deploy("s", template=BODY, declared={}, parameters={},
                                  confirm=lambda plan: asked.append(plan) or False)
    assert ([], 1, False) == (asked, len(fake.named("execute_change_set")), state.changed)


def test_a_stack_gone_after_its_create_is_a_failure_not_a_success() -> None:
    """Found by tests/deploy/test_readme_commands.py: LocalStack lost a stack whose create failed (under a name AWS
    refuses) and described it by id as nothing, which read as DELETE_COMPLETE, and the deploy said it succeeded."""
    fake = FakeCloudFormation(stack=None)
    real = fake.execute_change_set

    def execute(**kwargs: Any) -> None:
        real(**kwargs)
        fake.stack = None  # described by id: nothing

    fake.execute_change_set = execute  # type: ignore[method-assign]
    with pytest.raises(StackFailedError) as raised:
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
    assert "DELETE_COMPLETE" == raised.value.status


def test_a_stack_whose_template_cannot_be_read_is_a_clear_error_not_a_traceback() -> None:
    fake = FakeCloudFormation(stack=existing("ROLLBACK_COMPLETE"))

    def unreadable(**kwargs: Any) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": "ValidationError", "Message": "Stack with id s does not exist"}},
                          "GetTemplate")

    fake.get_template = unreadable  # type: ignore[method-assign]
    with pytest.raises(DeployError, match=r"cannot read what stack arn:stack/s/1 holds: Stack with id s does not "
                                          r"exist; delete it with `aws cloudformation delete-stack"):
        deployer(fake).deploy("s", template=BODY, declared={}, parameters={})
