"""Create, update and delete a CloudFormation stack through change sets, with progress and honest failures.

A deploy makes one change set (CREATE for a new stack, UPDATE otherwise), waits for CloudFormation to
compute it, shows it to ``confirm`` as a :class:`ChangeSetPlan` (what is added, modified, replaced and removed)
and executes it only if ``confirm`` says yes; a change set with nothing to change ends FAILED with a reason
saying so, which is a successful "no changes" deploy (AWS CloudFormation User Guide, "Update CloudFormation
stacks using change sets"). While the stack moves, its new events are passed to ``on_event`` as they arrive;
when it ends in a failure state, the failed resources' events are raised in a :class:`StackFailedError`.

Parameters not given keep their previous value on an existing stack (UsePreviousValue), as
``aws cloudformation deploy`` does, so a one-off override does not silently revert on the next deploy.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog
from botocore.exceptions import ClientError

from seglog_deploy.errors import (
    ChangeSetDeclinedError,
    ChangeSetError,
    DeployError,
    FailedCreateError,
    StackFailedError,
    StackNotFoundError,
)
from seglog_deploy.events import EventReader, StackEvent, causes
from seglog_deploy.leftovers import Leftover, leftovers
from seglog_deploy.target import Target

log = structlog.get_logger("seglog.deploy")

CAPABILITIES = ("CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND")
NO_CHANGES = ("didn't contain changes", "No updates are to be performed")
#: A stack in one of these cannot be updated, only deleted (AWS CloudFormation User Guide, "Stack and resource
#: status codes": ROLLBACK_COMPLETE exists only after a failed create). Deleting it orphans what the failed create
#: retained, so it is deleted only when the user asks (:meth:`ChangeSetDeployer.clear_failed_create`).
DELETE_FIRST = frozenset({"ROLLBACK_COMPLETE"})
#: These need a person (resources CloudFormation could not roll back or delete).
STUCK = frozenset({"ROLLBACK_FAILED", "DELETE_FAILED", "UPDATE_ROLLBACK_FAILED", "IMPORT_ROLLBACK_FAILED"})
#: How an executed change set succeeds (a stack gone after its create or update is a failure: LocalStack loses a
#: stack whose create failed under a name AWS refuses, and describes it by id as nothing).
SUCCEEDED = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE"})
#: Resources that hold data: replacing one makes a new, empty one (and deletes the old one unless its
#: UpdateReplacePolicy keeps it); removing one deletes its data unless its DeletionPolicy keeps it.
STATEFUL_TYPES = frozenset({"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::Logs::LogGroup"})


class ChangeAction(StrEnum):
    """ResourceChange.Action (AWS CloudFormation API Reference, ResourceChange:
    https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_ResourceChange.html)."""

    ADD = "Add"
    MODIFY = "Modify"
    REMOVE = "Remove"
    IMPORT = "Import"
    DYNAMIC = "Dynamic"


class Replacement(StrEnum):
    """ResourceChange.Replacement, for a Modify: whether CloudFormation makes a new resource and deletes the old
    one. Conditional: it depends on a value only known while the change runs (same page)."""

    TRUE = "True"
    FALSE = "False"
    CONDITIONAL = "Conditional"


@dataclass(frozen=True, kw_only=True)
class ResourceChange:
    """One resource of a change set, as DescribeChangeSet's ``Changes[].ResourceChange`` gives it (same page):
    Action, LogicalResourceId, PhysicalResourceId, ResourceType, Replacement and PolicyAction (Delete, Retain,
    ReplaceAndDelete, ReplaceAndRetain...: what happens to the old physical resource; not every CloudFormation
    sends it). Values stay AWS's strings, so one this code does not know yet is shown rather than refused."""

    action: str
    logical_id: str
    resource_type: str
    physical_id: str = ""
    replacement: str = ""
    policy_action: str = ""

    @classmethod
    def from_api(cls, change: Mapping[str, Any]) -> ResourceChange:
        rc = change.get("ResourceChange", {})
        return cls(action=rc.get("Action", ""), logical_id=rc.get("LogicalResourceId", ""),
                   resource_type=rc.get("ResourceType", ""), physical_id=rc.get("PhysicalResourceId", "") or "",
                   replacement=rc.get("Replacement", "") or "", policy_action=rc.get("PolicyAction", "") or "")

    @property
    def replaced(self) -> bool:
        """A Modify that makes a new resource, or may (Replacement True or Conditional)."""
        return self.action == ChangeAction.MODIFY and self.replacement in (Replacement.TRUE, Replacement.CONDITIONAL)

    @property
    def kind(self) -> str:
        """add, modify, replace, remove, or the action itself (import, dynamic) in lower case."""
        return "replace" if self.replaced else self.action.lower()

    @property
    def endangers_data(self) -> bool:
        """A resource that holds data is replaced (maybe) or removed."""
        return self.resource_type in STATEFUL_TYPES and (self.replaced or self.action == ChangeAction.REMOVE)

    def line(self) -> str:
        """One line of the change set: what happens, the type, the logical id and, for a replacement, AWS's
        Replacement value."""
        marks = {"add": "+", "modify": "~", "replace": "!", "remove": "-"}
        extra = f"  (Replacement: {self.replacement})" if self.replaced else ""
        return f"  {marks.get(self.kind, '?')} {self.kind:<8} {self.resource_type:<38} {self.logical_id}{extra}"

    def danger(self) -> str:
        """What a replacement or removal of this resource does to its data, in words (PolicyAction says what
        becomes of the old resource; without it, the template's DeletionPolicy or UpdateReplacePolicy decides)."""
        named = f"{self.logical_id} ({self.resource_type}{', ' + self.physical_id if self.physical_id else ''})"
        policy = "DeletionPolicy" if self.action == ChangeAction.REMOVE else "UpdateReplacePolicy"
        if "Retain" in self.policy_action:
            old = f"kept outside the stack ({policy} Retain)"
        elif "Snapshot" in self.policy_action:
            old = f"snapshotted, then DELETED ({policy} Snapshot)"
        elif "Delete" in self.policy_action:
            old = "DELETED with its data"
        else:
            old = f"DELETED with its data unless its {policy} keeps it"
        if self.action == ChangeAction.REMOVE:
            return f"{named}: removed from the stack, and {old}"
        maybe = "may be " if self.replacement == Replacement.CONDITIONAL else ""
        return (f"{named}: {maybe}REPLACED by a new, EMPTY one that the stack and its functions will use; the old "
                f"one is {old}")


@dataclass(frozen=True, kw_only=True)
class ChangeSetPlan:
    """A computed change set, before it runs: what ``confirm`` is shown."""

    stack_name: str
    change_set_id: str
    creating: bool
    changes: tuple[ResourceChange, ...]

    def of_kind(self, kind: str) -> list[ResourceChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def endangered(self) -> list[ResourceChange]:
        """Replacements and removals of resources that hold data (tables, buckets, queues, log groups)."""
        return [c for c in self.changes if c.endangers_data]

    def summary(self) -> str:
        """``2 to add, 1 to modify, 1 to replace, 0 to remove``."""
        return ", ".join(f"{len(self.of_kind(k))} to {k}" for k in ("add", "modify", "replace", "remove"))


@dataclass(frozen=True, kw_only=True)
class StackState:
    """A stack as DescribeStacks shows it after an operation."""

    stack_id: str
    stack_name: str
    status: str
    changed: bool
    outputs: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_api(cls, stack: dict[str, Any], *, changed: bool) -> StackState:
        return cls(stack_id=stack["StackId"], stack_name=stack["StackName"], status=stack["StackStatus"],
                   changed=changed,
                   outputs={o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])},
                   parameters={p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])})


class ChangeSetDeployer:
    """Deploys templates to one target's CloudFormation."""

    def __init__(self, target: Target, *, on_event: Callable[[StackEvent], None] | None = None,
                 poll_seconds: float = 1.0, timeout: float = 3600.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.target = target
        self.cfn = target.client("cloudformation")
        self.on_event = on_event or (lambda event: None)
        self.poll_seconds = poll_seconds
        self.timeout = timeout
        self._sleep = sleep

    def describe(self, stack: str) -> dict[str, Any] | None:
        """DescribeStacks of one stack (name or id), or None when there is none."""
        try:
            stacks = self.cfn.describe_stacks(StackName=stack)["Stacks"]
        except ClientError as exc:
            if "does not exist" in str(exc):
                return None
            raise
        return dict(stacks[0]) if stacks else None

    def clear_failed_create(self, stack_name: str, *, replace: bool) -> list[Leftover]:
        """Delete ``stack_name`` if its first create failed (ROLLBACK_COMPLETE) and ``replace`` says so; return
        what the failed create retained, which stays (nothing when the stack is anything else, or absent).

        Raises:
            FailedCreateError: the stack is ROLLBACK_COMPLETE and ``replace`` is false; it lists what the failed
                create retained, and nothing was touched.
            StackFailedError: the delete failed.
        """
        existing = self.describe(stack_name)
        if existing is None or existing["StackStatus"] not in DELETE_FIRST:
            return []
        return self._replace_failed(existing, replace=replace)

    def _replace_failed(self, existing: dict[str, Any], *, replace: bool) -> list[Leftover]:
        stack_name = existing["StackName"]
        retained = leftovers(self.target, existing["StackId"])
        if not replace:
            raise FailedCreateError(stack_name, existing["StackId"], retained)
        log.warning("deploy.stack.replace_failed_create", stack=stack_name, status=existing["StackStatus"],
                    retained=[r.physical_id for r in retained])
        self.delete(stack_name)
        return retained

    def deploy(self, stack_name: str, *, template: Mapping[str, str], declared: Mapping[str, Any],
               parameters: Mapping[str, str], replace_failed: bool = False,
               confirm: Callable[[ChangeSetPlan], bool] | None = None) -> StackState:
        """Create or update ``stack_name``.

        Args:
            template: ``{"TemplateBody": ...}`` or ``{"TemplateURL": ...}``.
            declared: the template's Parameters section (which parameters may keep a previous value).
            parameters: overrides, by parameter name.
            replace_failed: delete the stack first if its first create failed (see :meth:`clear_failed_create`).
            confirm: shown a change set that changes resources before it runs; it runs only if this returns
                True. None executes without asking (the library's callers decide for themselves). A change set
                without resource changes runs without asking: it touches no resource.

        Raises:
            FailedCreateError: the stack's first create failed, and ``replace_failed`` is false.
            ChangeSetError: CloudFormation refused the template or the parameters; nothing changed.
            ChangeSetDeclinedError: ``confirm`` said no (or raised it); the change set, and the empty stack a
                first create's change set makes, were deleted, and nothing changed.
            StackFailedError: the stack rolled back (or failed to); the events say which resources and why.
            DeployError: the stack is busy or stuck and needs waiting or a person.
        """
        existing = self.describe(stack_name)
        if existing is not None and existing["StackStatus"] in DELETE_FIRST:
            self._replace_failed(existing, replace=replace_failed)
            existing = None
        if existing is not None:
            self._check_ready(existing)
        creating = existing is None or existing["StackStatus"] == "REVIEW_IN_PROGRESS"
        previous = set() if creating or existing is None else \
            {p["ParameterKey"] for p in existing.get("Parameters", [])}
        params: list[dict[str, Any]] = [{"ParameterKey": k, "ParameterValue": str(v)} for k, v in parameters.items()]
        params += [{"ParameterKey": k, "UsePreviousValue": True} for k in declared
                   if k not in parameters and k in previous]
        name = f"seglog-{uuid.uuid4().hex[:12]}"
        try:
            created = self.cfn.create_change_set(
                StackName=stack_name, ChangeSetName=name, ChangeSetType="CREATE" if creating else "UPDATE",
                Parameters=params, Capabilities=list(CAPABILITIES), Description="seglog deploy", **template)
        except ClientError as exc:
            raise ChangeSetError(stack_name, str(exc)) from exc
        stack_id, change_set = created["StackId"], created["Id"]
        status, reason, changes = self._wait_change_set(change_set)
        if status == "FAILED":
            self.cfn.delete_change_set(ChangeSetName=change_set)
            if any(marker in reason for marker in NO_CHANGES):
                log.info("deploy.no_changes", stack=stack_name)
                current = self.describe(stack_id)
                assert current is not None
                return StackState.from_api(current, changed=False)
            raise ChangeSetError(stack_name, reason)
        if changes and confirm is not None:
            plan = ChangeSetPlan(stack_name=stack_name, change_set_id=change_set, creating=creating,
                                 changes=tuple(changes))
            self._confirm(plan, confirm, stack_id=stack_id, new_stack=creating)
        events = EventReader(self.cfn, stack_id)
        events.mark()
        self.cfn.execute_change_set(ChangeSetName=change_set)
        final, seen = self._wait_stack(stack_id, events)
        if final["StackStatus"] not in SUCCEEDED:
            raise StackFailedError(stack_name, final["StackStatus"], causes(seen))
        # A change set with no resource changes still runs: outputs or parameter values may change with it.
        # (AWS fails a change set that changes nothing at all; LocalStack completes it empty.)
        return StackState.from_api(final, changed=bool(changes) or creating)

    def _confirm(self, plan: ChangeSetPlan, confirm: Callable[[ChangeSetPlan], bool], *, stack_id: str,
                 new_stack: bool) -> None:
        """Ask; unless the answer is yes, delete the change set (and the REVIEW_IN_PROGRESS stack a first create's
        change set made, which would otherwise stay behind empty) and raise :class:`ChangeSetDeclinedError`. An
        exception from ``confirm`` (Ctrl-C at the prompt, a refusal to ask) cleans up the same way."""
        approved = False
        try:
            approved = confirm(plan)
        finally:
            if not approved:
                self.cfn.delete_change_set(ChangeSetName=plan.change_set_id)
                if new_stack:
                    self.cfn.delete_stack(StackName=stack_id)
                log.info("deploy.change_set.declined", stack=plan.stack_name, change_set=plan.change_set_id)
        if not approved:
            raise ChangeSetDeclinedError(plan.stack_name, "you did not confirm it")

    def delete(self, stack_name: str) -> StackState:
        """Delete the stack and wait until it is gone.

        Raises:
            StackNotFoundError: there is no such stack.
            StackFailedError: the delete failed; the events name the resources that stayed.
        """
        existing = self.describe(stack_name)
        if existing is None:
            raise StackNotFoundError(stack_name, "in this account and region")
        stack_id = existing["StackId"]
        events = EventReader(self.cfn, stack_id)
        events.mark()
        self.cfn.delete_stack(StackName=stack_id)
        final, seen = self._wait_stack(stack_id, events)
        if final["StackStatus"] != "DELETE_COMPLETE":
            raise StackFailedError(stack_name, final["StackStatus"], causes(seen))
        return StackState.from_api(final, changed=True)

    # -- waiting ---------------------------------------------------------------------------------------------

    def _check_ready(self, stack: dict[str, Any]) -> None:
        status = stack["StackStatus"]
        if status.endswith("_IN_PROGRESS") and status != "REVIEW_IN_PROGRESS":
            raise DeployError(f"stack {stack['StackName']} is busy ({status}): wait until it settles, then deploy")
        if status in STUCK:
            raise DeployError(
                f"stack {stack['StackName']} is {status}: CloudFormation could not undo a failed change. Fix or "
                "skip the resources its events name (console, or `aws cloudformation continue-update-rollback`), "
                "or `seglog destroy` it, then deploy again")

    def _wait_change_set(self, change_set: str) -> tuple[str, str, list[ResourceChange]]:
        """The change set's final status, its reason, and its resource changes (every page of them)."""
        deadline = time.monotonic() + self.timeout
        while True:
            described = self.cfn.describe_change_set(ChangeSetName=change_set)
            status = described["Status"]
            if status not in ("CREATE_PENDING", "CREATE_IN_PROGRESS"):
                changes = _resource_changes(described.get("Changes", []))
                token = described.get("NextToken")
                while token:
                    page = self.cfn.describe_change_set(ChangeSetName=change_set, NextToken=token)
                    changes += _resource_changes(page.get("Changes", []))
                    token = page.get("NextToken")
                return status, described.get("StatusReason", ""), changes
            if time.monotonic() > deadline:
                raise DeployError(f"change set {change_set} was still {status} after {self.timeout:.0f} s")
            self._sleep(self.poll_seconds)

    def _wait_stack(self, stack_id: str, events: EventReader) -> tuple[dict[str, Any], list[StackEvent]]:
        """Poll until the stack leaves *_IN_PROGRESS, passing new events on; the stack and every event seen."""
        deadline = time.monotonic() + self.timeout
        seen: list[StackEvent] = []
        while True:
            stack = self.describe(stack_id)
            fresh = events.new()
            for event in fresh:
                self.on_event(event)
            seen.extend(fresh)
            if stack is None:  # deleted, and this CloudFormation does not describe deleted stacks by id
                stack = {"StackId": stack_id, "StackName": stack_id, "StackStatus": "DELETE_COMPLETE"}
            if not stack["StackStatus"].endswith("_IN_PROGRESS"):
                return stack, seen
            if time.monotonic() > deadline:
                raise DeployError(f"stack {stack['StackName']} was still {stack['StackStatus']} after "
                                  f"{self.timeout:.0f} s: see its events in the console")
            self._sleep(self.poll_seconds)


def _resource_changes(changes: Sequence[Mapping[str, Any]]) -> list[ResourceChange]:
    """The entries of DescribeChangeSet's Changes that are resource changes (Type "Resource", the only type)."""
    return [ResourceChange.from_api(c) for c in changes if c.get("Type", "Resource") == "Resource"]
