"""The tool's errors. :class:`ToolError` is the root of every error the AWS model, the emulator, the local stack and
build and deploy raise, apart from seglog's own (:class:`seglog_core.errors.SeglogError`): the tool runs any SAM
application (issue 36), and the CLI reports either kind in one line. The model's own are under :class:`ModelError`:
a template, a filter pattern, a schedule expression or parameter values AWS would refuse. Each says what is wrong
and where to read AWS's rule (STYLE "Errors")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seglog_awsmodel.parameters import ParameterViolation


class ToolError(Exception):
    """The root of the tool's errors; each says what went wrong and what to do (STYLE "Errors")."""


class ModelError(ToolError):
    """Something the model of AWS refuses, as AWS would."""


class FilterPatternError(ModelError, ValueError):
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


class ScheduleExpressionError(ModelError, ValueError):
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


class ParameterValueError(ModelError, ValueError):
    """Template parameter values CloudFormation would refuse: every one found, checked before any AWS call.

    Attributes:
        violations: each bad value with its parameter, the constraint it breaks and what to pass instead.
    """

    def __init__(self, violations: Sequence[ParameterViolation]) -> None:
        self.violations = tuple(violations)
        listed = "\n  - ".join(str(v) for v in self.violations)
        super().__init__(f"{len(self.violations)} template parameter value(s) CloudFormation would refuse (AWS "
                         f"CloudFormation User Guide, parameters-section-structure); pass others with --parameter "
                         f"KEY=VALUE, or fix the template where it is at fault:\n  - {listed}")
