"""The emulator's errors, under one root (:class:`EmulatorError`); each says what went wrong and what to do
(STYLE "Errors"). They are also importable from the modules that raise them.

This module imports nothing a Lambda artifact lacks: the worker wrapper's fault plan raises these inside the
sandbox (:mod:`seglog_emulator.sandbox`), where the development-only packages are out of reach. The one error
that extends the template loader's, :class:`seglog_awsmodel.config.TemplateConfigError`, lives with the reader."""

from __future__ import annotations

from collections.abc import Sequence

from seglog_awsmodel.errors import ToolError


class EmulatorError(ToolError):
    """The emulator cannot run as asked (a child that never got ready, a stack that is not up, ...)."""


# ------------------------------------------------------------------------------------------------ rules


class FaultPlanError(EmulatorError, ValueError):
    """A fault plan that cannot be used; ``problems`` lists every one found."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        listed = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"bad fault plan ({source}); fix these and try again:\n{listed}")


class InvokerClosedError(EmulatorError):
    """``invoke`` was called after ``close``: build a new invoker to invoke the function again."""

    def __init__(self, function: str) -> None:
        self.function = function
        super().__init__(f"the invoker of {function!r} is closed: create a new LambdaInvoker to invoke it again")


# ------------------------------------------------------------------------------------------------ IAM


class IamPolicyError(EmulatorError, ValueError):
    """A policy the emulator cannot evaluate exactly as AWS would: malformed (AWS would refuse it), or using a
    feature the evaluator does not implement (a condition operator, a policy variable). Never a silent allow.

    Attributes:
        source: which policy (the role and policy name, or the managed policy's ARN).
        reason: what is wrong, and what to do.
    """

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"IAM policy {source}: {reason} (IAM User Guide, reference_policies_elements; run the "
                         "emulator with --no-iam to skip IAM enforcement)")


class IamTemplateError(EmulatorError):
    """The template's roles cannot be worked out: an external role, an unknown managed policy, an intrinsic the
    emulator does not resolve. ``problems`` lists every one found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        listed = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__("cannot work out the functions' permissions from the template (fix these, or run the "
                         f"emulator with --no-iam):\n{listed}")
