"""Errors of the build and deploy commands, under one root: the CLI prints one line and exits non-zero.

Each message says what happened and what to do next; the data travels as attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from seglog_awsmodel.errors import ToolError

if TYPE_CHECKING:
    from seglog_deploy.events import StackEvent
    from seglog_deploy.leftovers import Leftover


class DeployError(ToolError):
    """Root of what ``seglog build`` and ``seglog deploy`` raise on purpose."""


class BuildError(DeployError):
    """A Lambda artifact could not be built, or came out unfit to deploy (too large, wrong machine)."""


class ToolNotFoundError(BuildError):
    """A program the build runs (uv, a Python of the runtime's version) is not on this machine.

    Attributes:
        tool: what is missing.
    """

    def __init__(self, tool: str, message: str) -> None:
        self.tool = tool
        super().__init__(message)


class TargetError(DeployError):
    """No region, no credentials, or an account that cannot be read: nothing was deployed."""


class ArtifactsBucketError(DeployError):
    """The artifacts bucket cannot be created or used (its name is taken by another account, say).

    Attributes:
        bucket: the bucket's name.
        expected_owner: the account that must own it (the credentials' own, from STS GetCallerIdentity).
    """

    def __init__(self, message: str, *, bucket: str, expected_owner: str) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.expected_owner = expected_owner


class ChangeSetError(DeployError):
    """CloudFormation refused the change set (a template or parameter error): the stack was not touched."""

    def __init__(self, stack_name: str, reason: str) -> None:
        super().__init__(f"CloudFormation refused the change set for stack {stack_name}: {reason}")
        self.stack_name = stack_name
        self.reason = reason


class StackFailedError(DeployError):
    """A create, update or delete ended in a failure state; ``failures`` are the events that say why."""

    def __init__(self, stack_name: str, status: str, failures: Sequence[StackEvent]) -> None:
        lines = [f"  {e.logical_id} ({e.resource_type}): {e.status}: {e.reason or 'no reason given'}"
                 for e in failures]
        detail = "\n".join(lines) if lines else "  (no resource reported a failure; see the stack's events)"
        super().__init__(f"stack {stack_name} ended {status}; what failed:\n{detail}")
        self.stack_name = stack_name
        self.status = status
        self.failures = list(failures)


class StackNotFoundError(DeployError):
    """No stack of that name in the account and region (or no record of one in .seglog/stacks)."""

    def __init__(self, stack_name: str, where: str) -> None:
        super().__init__(f"no stack {stack_name} {where}: deploy it first with `seglog deploy --stack-name "
                         f"{stack_name}`, or check --region and --profile")
        self.stack_name = stack_name


class FailedCreateError(DeployError):
    """The stack is ROLLBACK_COMPLETE: its first create failed, and CloudFormation can only delete it.

    Deleting it (to create it anew) would orphan what the failed create kept; ``retained`` lists those, each with
    the command that removes it, and nothing was touched.
    """

    def __init__(self, stack_name: str, stack_id: str, retained: Sequence[Leftover]) -> None:
        kept = "".join(f"\n  {r.logical_id} ({r.resource_type}) {r.physical_id}\n    {r.removal}" for r in retained)
        what = (f"the failed create kept {len(retained)} resource(s) (DeletionPolicy Retain), which a new create "
                f"will not reuse:{kept}\nDelete them with the commands above, or import them into the new stack by "
                "hand (a change set of type IMPORT) once it exists; then" if retained else
                "the failed create kept no resource; to delete it and create the stack anew,")
        super().__init__(f"stack {stack_name} is ROLLBACK_COMPLETE: its first create failed and CloudFormation can "
                         f"only delete it. {what} deploy again with --replace-failed-stack (it deletes the failed "
                         "stack first)")
        self.stack_name = stack_name
        self.stack_id = stack_id
        self.retained = list(retained)


class ChangeSetDeclinedError(DeployError):
    """The change set was not executed (the person deploying said no, or could not be asked): it was deleted, and
    nothing changed."""

    def __init__(self, stack_name: str, reason: str) -> None:
        super().__init__(f"stack {stack_name}: the change set was not executed ({reason}); nothing changed")
        self.stack_name = stack_name
        self.reason = reason
