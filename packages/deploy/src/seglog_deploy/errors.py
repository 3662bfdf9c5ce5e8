"""Errors of the build and deploy commands, under one root; each says what went wrong and what to do."""

from __future__ import annotations

from seglog_core.errors import SeglogError


class DeployError(SeglogError):
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
