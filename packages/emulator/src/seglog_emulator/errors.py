"""The emulator's errors, under one root (:class:`EmulatorError`); each says what went wrong and what to do
(STYLE "Errors"). They are also importable from the modules that raise them.

This module imports nothing a Lambda artifact lacks: the worker wrapper's fault plan raises these inside the
sandbox (:mod:`seglog_emulator.sandbox`), where the development-only packages are out of reach. The one error
that extends the template loader's, :class:`seglog_emulator.config.EmulatorConfigError`, lives with the reader."""

from __future__ import annotations

from collections.abc import Sequence

from seglog_core.errors import SeglogError


class EmulatorError(SeglogError):
    """The emulator cannot run as asked (a child that never got ready, a stack that is not up, ...)."""


class FilterPatternError(EmulatorError, ValueError):
    """A FilterCriteria pattern Lambda would refuse: malformed, or using a rule Lambda does not support.

    Attributes:
        path: where in the pattern the problem is, e.g. ``dynamodb.NewImage.E.S[0].exists``.
        reason: what is wrong there.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        where = f" at {path}" if path else ""
        super().__init__(
            f"FilterCriteria pattern is not valid{where}: {reason} "
            "(see AWS Lambda Developer Guide, invocation-eventfiltering, 'Filter rule syntax')"
        )


class ScheduleExpressionError(EmulatorError, ValueError):
    """A schedule expression EventBridge would refuse, or one the emulator does not run.

    Attributes:
        expression: the expression as written.
        reason: what is wrong with it, and what to write instead.
    """

    def __init__(self, expression: str, reason: str) -> None:
        self.expression = expression
        self.reason = reason
        super().__init__(f"schedule expression {expression!r}: {reason} (Amazon EventBridge User Guide, "
                         "eb-scheduled-rule-pattern)")


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
