"""Create, update and delete a CloudFormation stack through change sets, with progress and honest failures.

A deploy makes one change set (CREATE for a new stack, UPDATE otherwise), waits for CloudFormation to
compute it, and executes it; a change set with nothing to change ends FAILED with a reason saying so, which
is a successful "no changes" deploy (AWS CloudFormation User Guide, "Update CloudFormation stacks using change
sets"). While the stack moves, its new events are passed to ``on_event`` as they arrive; when it ends in a
failure state, the failed resources' events are raised in a :class:`StackFailedError`.

Parameters not given keep their previous value on an existing stack (UsePreviousValue), as
``aws cloudformation deploy`` does, so a one-off override does not silently revert on the next deploy.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from botocore.exceptions import ClientError

from seglog_deploy.errors import ChangeSetError, DeployError, FailedCreateError, StackFailedError, StackNotFoundError
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
SUCCEEDED = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "DELETE_COMPLETE"})


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
               parameters: Mapping[str, str], replace_failed: bool = False) -> StackState:
        """Create or update ``stack_name``.

        Args:
            template: ``{"TemplateBody": ...}`` or ``{"TemplateURL": ...}``.
            declared: the template's Parameters section (which parameters may keep a previous value).
            parameters: overrides, by parameter name.
            replace_failed: delete the stack first if its first create failed (see :meth:`clear_failed_create`).

        Raises:
            FailedCreateError: the stack's first create failed, and ``replace_failed`` is false.
            ChangeSetError: CloudFormation refused the template or the parameters; nothing changed.
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
        events = EventReader(self.cfn, stack_id)
        events.mark()
        self.cfn.execute_change_set(ChangeSetName=change_set)
        final, seen = self._wait_stack(stack_id, events)
        if final["StackStatus"] not in SUCCEEDED:
            raise StackFailedError(stack_name, final["StackStatus"], causes(seen))
        # A change set with no resource changes still runs: outputs or parameter values may change with it.
        # (AWS fails a change set that changes nothing at all; LocalStack completes it empty.)
        return StackState.from_api(final, changed=changes > 0 or creating)

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

    def _wait_change_set(self, change_set: str) -> tuple[str, str, int]:
        """The change set's final status, its reason, and how many resource changes it holds."""
        deadline = time.monotonic() + self.timeout
        while True:
            described = self.cfn.describe_change_set(ChangeSetName=change_set)
            status = described["Status"]
            if status not in ("CREATE_PENDING", "CREATE_IN_PROGRESS"):
                changes = len(described.get("Changes", []))
                token = described.get("NextToken")
                while token:
                    page = self.cfn.describe_change_set(ChangeSetName=change_set, NextToken=token)
                    changes += len(page.get("Changes", []))
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
